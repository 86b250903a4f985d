// copy2d_streams.cu - pitched copies between page-locked host memory and the
// device with the rows of the array the host pipeline transposes (16384
// float32 a row: rows 64 KiB apart): one cudaMemcpy2DAsync against the same
// rows split among 2 or 4 streams, and the pitch against one that is not a
// power of two (64 KiB + 512 B), each direction alone and both at once.
// 1 GiB each way, tiles of 4096 x 4096 float32 (rows of 16 KiB).
//   nvcc -O3 -std=c++17 bench/copy2d_streams.cu -o /tmp/c2s && /tmp/c2s
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tune_common.cuh"  // CHECK


int main()
{
    const size_t side = 16384, tile = 4096, e = 4;
    const size_t pitches[2] = {side * e, side * e + 512};
    char *hin, *hout, *din, *dout;
    CHECK(cudaMallocHost(&hin, (side * e + 512) * side));
    CHECK(cudaMallocHost(&hout, (side * e + 512) * side));
    CHECK(cudaMalloc(&din, side * side * e));
    CHECK(cudaMalloc(&dout, side * side * e));
    cudaStream_t st[8];
    for (auto &s : st) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("| host pitch | streams a direction | H2D alone GB/s | D2H alone GB/s | both at once GB/s each way |\n|---:|---:|---:|---:|---:|\n");
    for (size_t pitch : pitches) {
        for (int ns : {1, 2, 4}) {
            double gbs[3];
            for (int mode = 0; mode < 3; mode++) {  // 0: H2D, 1: D2H, 2: both
                std::vector<double> t;
                for (int rep = 0; rep < 5; rep++) {
                    CHECK(cudaDeviceSynchronize());
                    auto t0 = std::chrono::steady_clock::now();
                    for (size_t ti = 0; ti < side / tile; ti++)
                        for (size_t tj = 0; tj < side / tile; tj++) {
                            const size_t part = tile / ns;
                            for (int k = 0; k < ns; k++) {
                                const size_t r0 = ti * tile + k * part;
                                char *h_in = hin + r0 * pitch + tj * tile * e, *h_out = hout + r0 * pitch + tj * tile * e;
                                char *d = din + ((ti * (side / tile) + tj) * tile + k * part) * tile * e;
                                char *d2 = dout + ((ti * (side / tile) + tj) * tile + k * part) * tile * e;
                                if (mode != 1)
                                    CHECK(cudaMemcpy2DAsync(d, tile * e, h_in, pitch, tile * e, part, cudaMemcpyHostToDevice, st[k]));
                                if (mode != 0)
                                    CHECK(cudaMemcpy2DAsync(h_out, pitch, d2, tile * e, tile * e, part, cudaMemcpyDeviceToHost, st[4 + k]));
                            }
                        }
                    CHECK(cudaDeviceSynchronize());
                    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
                }
                std::sort(t.begin(), t.end());
                gbs[mode] = side * side * e / t[2] / 1e9;
            }
            printf("| %zu | %d | %.1f | %.1f | %.1f |\n", pitch, ns, gbs[0], gbs[1], gbs[2]);
            fflush(stdout);
        }
    }
    return 0;
}
