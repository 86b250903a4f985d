// host_register_threads.cu - whether page-locking the caller's own buffer
// (cudaHostRegister) can feed the bus at the pinned rate, which packing
// into a pinned ring cannot where the host's memory is the limit (every
// byte packed is read and written by a CPU, then read again by the copy
// engine; a registered buffer is read once, by the copy engine).
//
// Part 1: registering and unregistering 1 GiB cut into T slices, one
// thread a slice, all at once: does page-locking scale with threads?
// Part 2: the whole buffer copied host->device chunk by chunk, each chunk
// registered (T threads), copied from in place, and unregistered after its
// copy, the next chunk's registration overlapping the copy; against a
// pinned buffer's copy (the roof) and the pack-then-copy ring (T threads
// with streaming stores, 4 pinned slots of the chunk's size).
//   nvcc -O3 -std=c++17 -Xcompiler -pthread bench/host_register_threads.cu -o /tmp/hrt
//   /tmp/hrt [GiB] [tag]     (run one per GPU at once to see two GPUs share the host)
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tune_common.cuh"  // CHECK

#include "host_copy.h"


static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// f(k) for k in [0, n) on n threads (the caller runs k = 0).
static void par(int n, const std::function<void(int)> &f)
{
    std::vector<std::thread> th;
    for (int k = 1; k < n; k++) th.emplace_back(f, k);
    f(0);
    for (auto &t : th) t.join();
}

static void slices(char *p, size_t bytes, int n, const std::function<void(char *, size_t)> &f)
{
    const size_t page = 4096, per = ((bytes / n) + page - 1) / page * page;
    par(n, [&](int k) {
        size_t a = std::min(bytes, k * per), b = std::min(bytes, a + per);
        if (b > a) f(p + a, b - a);
    });
}

static void reg(char *p, size_t bytes, int n)
{
    slices(p, bytes, n, [](char *q, size_t b) { CHECK(cudaHostRegister(q, b, cudaHostRegisterDefault)); });
}
static void unreg(char *p, size_t bytes, int n)
{
    slices(p, bytes, n, [](char *q, size_t) { CHECK(cudaHostUnregister(q)); });
}

static double wall() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char **argv)
{
    const size_t gib = size_t(1) << 30, total = (argc > 1 ? atoi(argv[1]) : 4) * gib;
    const char *tag = argc > 2 ? argv[2] : "";
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    char *host = (char *)aligned_alloc(2 << 20, total);
    madvise(host, total, MADV_HUGEPAGE);  // as NumPy does for large arrays
    for (size_t i = 0; i < total; i += 8) *(double *)(host + i) = double(i);
    char *d = nullptr;
    CHECK(cudaMalloc(&d, gib));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("%s GPU %s, %zu GiB host buffer, %u CPUs\n", tag, bus, total / gib, std::thread::hardware_concurrency());

    // Part 1.
    printf("%s | threads | register 1 GiB ms | GB/s | unregister ms | GB/s |\n%s |---:|---:|---:|---:|---:|\n", tag, tag);
    for (int n : {1, 2, 4, 8, 16}) {
        std::vector<double> r, u;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now(); reg(host, gib, n); double t1 = now(); unreg(host, gib, n); double t2 = now();
            r.push_back(t1 - t0); u.push_back(t2 - t1);
        }
        printf("%s | %d | %.2f | %.1f | %.2f | %.1f |\n", tag, n, median(r) * 1e3, gib / median(r) / 1e9,
               median(u) * 1e3, gib / median(u) / 1e9);
        fflush(stdout);
    }

    // The roof: one pinned buffer of 1 GiB copied in.
    char *pin = nullptr;
    CHECK(cudaMallocHost(&pin, gib));
    memset(pin, 1, gib);
    std::vector<double> rr;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now(); CHECK(cudaMemcpyAsync(d, pin, gib, cudaMemcpyHostToDevice, s)); CHECK(cudaStreamSynchronize(s));
        rr.push_back(now() - t0);
    }
    printf("%s pinned roof: %.1f GB/s\n", tag, gib / median(rr) / 1e9);

    // Part 2: lanes over the chunks of the whole buffer.  A "register"
    // lane page-locks each of its chunks (one cudaHostRegister a chunk:
    // the driver takes one call at a time, part 1), copies from it in
    // place and unlocks it after its copy, the next chunk's locking
    // overlapping the copy; a "pack" lane packs its chunks on n threads
    // (streaming stores) into 4 pinned slots and copies from them.  Both
    // lanes at once, each on its own stream, split the chunks between them
    // (every k-th chunk registered), as a pipeline could.
    printf("%s | chunk MiB | chunks registered | pack threads | GB/s | ended at (wall s mod 1000) |\n%s |---:|---|---:|---:|---:|\n", tag, tag);
    for (size_t chunk_mib : {16, 64}) {
        const size_t chunk = chunk_mib << 20, nch = total / chunk;
        struct Lane { cudaStream_t s; std::vector<cudaEvent_t> ev; };
        Lane L[2];
        for (auto &l : L) {
            CHECK(cudaStreamCreateWithFlags(&l.s, cudaStreamNonBlocking));
            l.ev.resize(nch);
            for (auto &e : l.ev) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        }
        char *dr = d, *dp = d + gib / 2;  // the lanes' device halves
        auto reg_lane = [&](int every) {
            Lane &l = L[0];
            std::vector<size_t> mine;
            for (size_t i = 0; i < nch; i++) if (every > 0 && i % every == 0) mine.push_back(i);
            for (size_t q = 0; q < mine.size(); q++) {
                char *src = host + mine[q] * chunk;
                CHECK(cudaHostRegister(src, chunk, cudaHostRegisterDefault));
                CHECK(cudaMemcpyAsync(dr + (q * chunk) % (gib / 2), src, chunk, cudaMemcpyHostToDevice, l.s));
                CHECK(cudaEventRecord(l.ev[q], l.s));
                if (q > 0) { CHECK(cudaEventSynchronize(l.ev[q - 1])); CHECK(cudaHostUnregister(host + mine[q - 1] * chunk)); }
            }
            if (!mine.empty()) { CHECK(cudaEventSynchronize(l.ev[mine.size() - 1])); CHECK(cudaHostUnregister(host + mine.back() * chunk)); }
        };
        auto pack_lane = [&](int every, int n) {
            Lane &l = L[1];
            std::vector<size_t> mine;
            for (size_t i = 0; i < nch; i++) if (!(every > 0 && i % every == 0)) mine.push_back(i);
            for (size_t q = 0; q < mine.size(); q++) {
                char *slot = pin + (q % 4) * chunk;
                if (q >= 4) CHECK(cudaEventSynchronize(l.ev[q - 4]));
                const char *src = host + mine[q] * chunk;
                const size_t per = chunk / n;
                par(n, [&](int k) { copy_nt(slot + k * per, src + k * per, per); });
                CHECK(cudaMemcpyAsync(dp + (q * chunk) % (gib / 2), slot, chunk, cudaMemcpyHostToDevice, l.s));
                CHECK(cudaEventRecord(l.ev[q], l.s));
            }
            CHECK(cudaStreamSynchronize(l.s));
        };
        struct Case { int every, n; const char *name; };
        for (Case c : {Case{1, 0, "all"}, Case{0, 8, "none"}, Case{0, 16, "none"}, Case{2, 8, "1 in 2"},
                       Case{2, 16, "1 in 2"}, Case{3, 8, "1 in 3"}, Case{3, 16, "1 in 3"}, Case{4, 16, "1 in 4"}}) {
            std::vector<double> ts;
            for (int rep = 0; rep < 3; rep++) {
                double t0 = now();
                std::thread tr([&] { if (c.every > 0) reg_lane(c.every); });
                if (c.every != 1) pack_lane(c.every, c.n);
                tr.join();
                ts.push_back(now() - t0);
            }
            printf("%s | %zu | %s | %d | %.1f | %.1f |\n", tag, chunk_mib, c.name, c.n, total / median(ts) / 1e9, fmod(wall(), 1000.0));
            fflush(stdout);
        }
    }
    return 0;
}
