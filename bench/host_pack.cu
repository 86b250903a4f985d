// host_pack.cu - how fast host threads move a pageable array into pinned
// staging memory and back: the host half of the NumPy pipeline
// (csrc/pipeline.c).  For each thread count, plain memcpy against a copy
// with non-temporal (streaming) stores, which write the destination without
// reading its cache lines first; pack = pageable -> pinned, unpack = pinned
// -> pageable (pages already touched, as an output array the caller owns).
// Also the pinned host->device copy, alone and while the pack runs (the
// pipeline overlaps them), since both draw on the host's memory.
//   nvcc -O3 -std=c++17 -Xcompiler -pthread bench/host_pack.cu -o /tmp/host_pack && /tmp/host_pack
#include <cuda_runtime.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "host_copy.h"

struct Task { char *dst; const char *src; size_t bytes; bool nt; };
static void *run_task(void *p)
{
    Task *t = (Task *)p;
    if (t->nt) copy_nt(t->dst, t->src, t->bytes); else memcpy(t->dst, t->src, t->bytes);
    return nullptr;
}

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// One parallel copy of `bytes` on `n` threads (the caller does the first part).
static double par_copy(char *dst, const char *src, size_t bytes, int n, bool nt)
{
    std::vector<Task> t(n);
    std::vector<pthread_t> th(n);
    size_t per = (bytes / n + 63) & ~size_t(63);
    double t0 = now();
    for (int k = 0; k < n; k++) {
        size_t at = std::min(bytes, per * k), cnt = std::min(bytes - at, per);
        t[k] = {dst + at, src + at, cnt, nt};
        if (k) pthread_create(&th[k], nullptr, run_task, &t[k]);
    }
    run_task(&t[0]);
    for (int k = 1; k < n; k++) pthread_join(th[k], nullptr);
    return now() - t0;
}

int main()
{
    const size_t total = size_t(1) << 30, slot = size_t(64) << 20;  // 1 GiB through 64 MiB slots
    char *pageable = (char *)aligned_alloc(4096, total), *back = (char *)aligned_alloc(4096, total);
    for (size_t i = 0; i < total; i += 4096) pageable[i] = char(i * 7), back[i] = 1;
    memset(pageable, 3, total);
    memset(back, 5, total);
    char *pinned, *dev;
    cudaHostAlloc((void **)&pinned, 4 * slot, cudaHostAllocDefault);
    cudaMalloc((void **)&dev, 4 * slot);
    memset(pinned, 1, 4 * slot);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("host_pack: %s, %ld CPUs online; 1 GiB in 64 MiB slots (4 pinned slots, reused)\n\n", prop.name,
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("| threads | pack memcpy GB/s | pack NT GB/s | unpack memcpy GB/s | unpack NT GB/s |\n|---:|---:|---:|---:|---:|\n");
    for (int n : {1, 2, 4, 8, 12, 16, 24, 32}) {
        if (n > sysconf(_SC_NPROCESSORS_ONLN)) break;
        double r[4];
        for (int mode = 0; mode < 4; mode++) {
            std::vector<double> ts;
            for (int rep = 0; rep < 3; rep++) {
                double t = 0;
                for (size_t at = 0, s = 0; at < total; at += slot, s = (s + 1) % 4) {
                    char *pin = pinned + s * slot;
                    t += mode < 2 ? par_copy(pin, pageable + at, slot, n, mode == 1)
                                  : par_copy(back + at, pin, slot, n, mode == 3);
                }
                ts.push_back(t);
            }
            std::sort(ts.begin(), ts.end());
            r[mode] = total / ts[1] / 1e9;
        }
        printf("| %d | %.1f | %.1f | %.1f | %.1f |\n", n, r[0], r[1], r[2], r[3]);
    }
    // unpack into pages never touched (a new output array): the kernel
    // zeroes each page at its first write; with and without transparent huge
    // pages asked for (madvise), on 16 threads with streaming stores
    {
        FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        char thp[128] = "?";
        if (f) { if (!fgets(thp, sizeof thp, f)) thp[0] = 0; fclose(f); }
        printf("\ntransparent huge pages: %s", thp);
        for (int huge = 0; huge < 2; huge++)
            for (int n : {8, 16}) {
                std::vector<double> ts;
                for (int rep = 0; rep < 3; rep++) {
                    char *fresh = (char *)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    if (huge) madvise(fresh, total, MADV_HUGEPAGE);
                    double t = 0;
                    for (size_t at = 0, s = 0; at < total; at += slot, s = (s + 1) % 4)
                        t += par_copy(fresh + at, pinned + s * slot, slot, n, true);
                    munmap(fresh, total);
                    ts.push_back(t);
                }
                std::sort(ts.begin(), ts.end());
                printf("unpack NT into untouched pages, %2d threads, %s: %.1f GB/s\n", n,
                       huge ? "MADV_HUGEPAGE" : "no madvise  ", total / ts[1] / 1e9);
            }
    }
    // the H2D copy alone, and while 8 threads pack with NT stores (separate buffers)
    cudaStream_t st;
    cudaStreamCreate(&st);
    auto h2d = [&]() {
        double t0 = now();
        for (int k = 0; k < 16; k++) cudaMemcpyAsync(dev + (k % 4) * slot, pinned + (k % 4) * slot, slot, cudaMemcpyHostToDevice, st);
        cudaStreamSynchronize(st);
        return 16 * slot / (now() - t0) / 1e9;
    };
    h2d();
    printf("\npinned H2D alone: %.1f GB/s\n", h2d());
    for (int n : {4, 8, 16}) {
        double t0 = now();
        for (int k = 0; k < 16; k++) cudaMemcpyAsync(dev + (k % 4) * slot, pinned + (k % 2) * slot, slot, cudaMemcpyHostToDevice, st);
        double tp = 0;
        for (size_t at = 0; at < total; at += slot) tp += par_copy(pinned + 2 * slot + (at / slot % 2) * slot, pageable + at, slot, n, true);
        cudaStreamSynchronize(st);
        double t = now() - t0;
        printf("H2D of 1 GiB while %d threads pack 1 GiB (NT): both done in %.1f ms (pack alone would take %.1f ms)\n", n,
               t * 1e3, tp * 1e3);
    }
    return 0;
}
