// tune_transpose.cu - the evidence for TransposeTuning
// (cuda/transpose/07_tiled_wide.cu).
//
// Times tiled.cuh's kernel, float32, for several (tile, block rows, pad)
// choices against a device-to-device copy and cublasSgeam in the same run:
// CUDA events around the launch only, L2 overwritten before every run,
// median of REPEAT runs.  Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_transpose.cu -lcublas -o /tmp/t && /tmp/t
// (a uint32_t matrix: the kernels move bits; cublasSgeam reads the same bytes as float)
#include <vector>

#include "tune_common.cuh"

#include <cublas_v2.h>

#include "../cuda/transpose/07_tiled_wide.cu"

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
    const float ms = median_ms([&] {
        const unsigned blocks = unsigned(((c.cols + 31) / 32) * ((c.rows + 32 * Tn::TILES - 1) / (32 * Tn::TILES)));
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
        run_wide<TransposeTuning>("current (g2, stcs)", c);
        run_wide<WideTuning<64, 1, 0>>("wide, rowmajor", c);
        run_wide<WideTuning<64, 1, 2>>("g2", c);
        run_wide<WideTuning<64, 1, 1, LOAD_LDG, STORE_STREAMING>>("g1, stcs", c);
        run_wide<WideTuning<64, 1, 2, LOAD_LDG, STORE_STREAMING>>("g2, stcs", c);
        run_wide<WideTuning<64, 1, 4, LOAD_LDG, STORE_STREAMING>>("g4, stcs", c);
        run_wide<WideTuning<64, 1, 8, LOAD_LDG, STORE_STREAMING>>("g8, stcs", c);
        run_wide<WideTuning<64, 2, 2, LOAD_LDG, STORE_STREAMING>>("2 tiles, g2, stcs", c);
    }
    return 0;
}
