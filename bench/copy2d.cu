// copy2d.cu - pitched copies between page-locked host memory and the device
// (cudaMemcpy2DAsync) by row width: what the host pipeline's transpose pays
// when it copies tiles of a page-locked array in place.  1 GiB a copy in
// rows of W bytes, the host rows `pitch` = 16 W apart (a column strip of a
// wider array), against the same bytes in one run.
//   nvcc -O3 -std=c++17 bench/copy2d.cu -o /tmp/copy2d && /tmp/copy2d
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <string>
#include <cstdio>
#include <vector>

#include "tune_common.cuh"  // CHECK


int main()
{
    const size_t total = size_t(1) << 30;
    char *host, *dev;
    CHECK(cudaMallocHost(&host, 2 * total + (size_t(8) << 20)));  // rows 16 W apart: 2 GiB and a row's offset
    CHECK(cudaMalloc(&dev, total));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    printf("| row bytes | host pitch | H2D GB/s | D2H GB/s |\n|---:|---:|---:|---:|\n");
    for (size_t w : {size_t(0), size_t(1) << 10, size_t(4) << 10, size_t(16) << 10, size_t(64) << 10, size_t(256) << 10}) {
        // rows of w bytes at pitch 16 w: 128 MiB a copy (2 GiB of host rows), 8 copies
        const size_t bytes = total / 8, pitch = w ? 16 * w : 0, rows = w ? bytes / w : 1;
        double gbs[2];
        for (int dir = 0; dir < 2; dir++) {
            std::vector<double> t;
            for (int rep = 0; rep < 7; rep++) {
                auto t0 = std::chrono::steady_clock::now();
                for (size_t k = 0; k < 8; k++) {
                    char *h = host + (w ? (k % 16) * w : k * bytes), *d = dev + k * bytes;
                    if (w == 0)
                        CHECK(dir == 0 ? cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s)
                                    : cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
                    else
                        CHECK(dir == 0 ? cudaMemcpy2DAsync(d, w, h, pitch, w, rows, cudaMemcpyHostToDevice, s)
                                    : cudaMemcpy2DAsync(h, pitch, d, w, w, rows, cudaMemcpyDeviceToHost, s));
                }
                CHECK(cudaStreamSynchronize(s));
                t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            std::sort(t.begin(), t.end());
            gbs[dir] = total / t[3] / 1e9;
        }
        printf("| %s | %zu | %.1f | %.1f |\n", w ? std::to_string(w).c_str() : "one run", pitch, gbs[0], gbs[1]);
        fflush(stdout);
    }
    return 0;
}
