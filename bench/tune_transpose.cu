// tune_transpose.cu - the evidence for TransposeTuning
// (cuda/transpose/tiled_wide.cuh, step 5).
//
// Times tiled_wide's kernel, float32, for several WideTuning choices (tile
// side in vectors, threads, block-order group) and step 6's coarsened
// kernel, against a device-to-device copy and cublasSgeam in the same run:
// CUDA events around the launch only, L2 overwritten before every run,
// median of REPEAT runs.  Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_transpose.cu -lcublas -o /tmp/t && /tmp/t
// (a uint32_t matrix: the kernels move bits; cublasSgeam reads the same bytes as float)
#include <vector>

#include "tune_common.cuh"

#include <cublas_v2.h>

#include "../cuda/transpose/tiled_wide.cuh"

using namespace gp;  // the variant's kernel and tunables live in gp::

constexpr int REPEAT = 30;

#define GP_LAUNCH_CHECKED(kernel, grid, block, ...)                 \
    do {                                                            \
        kernel<<<(grid), (block)>>>(__VA_ARGS__);                   \
        CHECK(cudaGetLastError());                                  \
    } while (0)

struct Case {
    int64_t rows, cols;
    const uint32_t *in;
    uint32_t *out;
    void *flush;
    size_t fb;
    float copy_ms, cublas_ms;
};

template <class Tn>
void run_wide(const char *name, const Case &c) {
    constexpr int TILE = Tn::VECS * 4;
    const float ms = median_ms([&] {
        const unsigned blocks = unsigned(((c.cols + TILE - 1) / TILE) * ((c.rows + TILE - 1) / TILE));
        GP_LAUNCH_CHECKED((transpose_wide<uint32_t, Tn>), blocks, Tn::BLOCK, c.in, c.out, c.rows, c.cols);
    }, c.flush, c.fb, REPEAT);
    std::printf("| %-22s | %5lld x %5lld | %8.4f | %6.0f | %5.3f | %5.3f |\n", name, (long long)c.rows,
                (long long)c.cols, ms, 8.0 * c.rows * c.cols / ms / 1e6, c.copy_ms / ms, c.cublas_ms / ms);
}

template <int TILE, int BR, int PAD>
void run(const char *name, const Case &c) {
    gp_transpose_args a{};
    a.in = c.in; a.out = c.out; a.rows = c.rows; a.cols = c.cols; a.elem_size = 4; a.stream = 0;
    float ms = median_ms([&] { CHECK(gp::transpose::Tiled<TILE, BR, PAD>::template Impl<uint32_t>::run(a)); },
                         c.flush, c.fb, REPEAT);
    std::printf("| %-22s | %5lld x %5lld | %8.4f | %6.0f | %5.3f | %5.3f |\n", name, (long long)c.rows,
                (long long)c.cols, ms, 8.0 * c.rows * c.cols / ms / 1e6, c.copy_ms / ms, c.cublas_ms / ms);
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    Case c{};
    c.fb = size_t(p.l2CacheSize) * 4;
    CHECK(cudaMalloc(&c.flush, c.fb));
    const int64_t nmax = int64_t(16384) * 16384;
    std::vector<uint32_t> h(nmax);
    unsigned s = 777;
    for (auto &v : h) { s = s * 1664525u + 1013904223u; v = (s >> 9) | 0x3f800000u; }  // floats in [1, 2)
    uint32_t *in, *out;
    CHECK(cudaMalloc(&in, nmax * 4));
    CHECK(cudaMalloc(&out, nmax * 4));
    CHECK(cudaMemcpy(in, h.data(), nmax * 4, cudaMemcpyHostToDevice));
    c.in = in; c.out = out;
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
    std::printf("%s, %d SMs\n\n| config (tile, block rows, pad / wide) | shape | ms | GB/s | x vs copy | x vs cuBLAS |\n|---|---|---:|---:|---:|---:|\n",
                p.name, p.multiProcessorCount);
    const int64_t shapes[][2] = {{4000, 6000}, {8192, 8192}, {16384, 16384}};
    for (auto &sh : shapes) {
        c.rows = sh[0]; c.cols = sh[1];
        const size_t bytes = size_t(c.rows * c.cols * 4);
        c.copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); }, c.flush, c.fb, REPEAT);
        const float one = 1, zero = 0;
        const int m = int(c.rows), n = int(c.cols);
        c.cublas_ms = median_ms([&] {
            if (cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, reinterpret_cast<const float *>(in), n, &zero,
                            reinterpret_cast<float *>(out), m, reinterpret_cast<float *>(out), m) !=
                CUBLAS_STATUS_SUCCESS) std::exit(1);
        }, c.flush, c.fb, REPEAT);
        std::printf("| %-22s | %5lld x %5lld | %8.4f | %6.0f | %5.3f | %5.3f |\n", "copy", (long long)c.rows,
                    (long long)c.cols, c.copy_ms, 8.0 * c.rows * c.cols / c.copy_ms / 1e6, 1.0, c.cublas_ms / c.copy_ms);
        std::printf("| %-22s | %5lld x %5lld | %8.4f | %6.0f | %5.3f | %5.3f |\n", "cublasSgeam", (long long)c.rows,
                    (long long)c.cols, c.cublas_ms, 8.0 * c.rows * c.cols / c.cublas_ms / 1e6, c.copy_ms / c.cublas_ms, 1.0);
        run<32, 8, 1>("32, 8, 1 (coarsened)", c);
        run_wide<TransposeTuning<uint32_t>>("current", c);
        run_wide<WideTuning<8, 64, 2>>("32x32, 64 thr, g2", c);
        run_wide<WideTuning<16, 128, 1>>("64x64, 128 thr, g1", c);
        run_wide<WideTuning<16, 128, 2>>("64x64, 128 thr, g2", c);
        run_wide<WideTuning<16, 128, 4>>("64x64, 128 thr, g4", c);
        run_wide<WideTuning<16, 256, 2>>("64x64, 256 thr, g2", c);
        run_wide<WideTuning<16, 64, 2>>("64x64, 64 thr, g2", c);
    }
    return 0;
}
