// Step 3 - transpose_parallel_per_element: one thread per element.
// Source: Orchid, "GPU program optimization (2): matrix transpose" (2016).
//
// What changed from step 2: K x K blocks of threads, one element each, so
// the whole GPU works whatever the shape.
// Why step 2 was slow: one thread per output row, each looping over a whole
// row: few threads, long serial loops.
// Still slow here: threadIdx.x runs along the input row, so reads are
// coalesced, but the writes of a warp land `rows` elements apart - every
// element written costs its own memory transaction.  That is what the
// shared-memory tile of the next step fixes.
// Assumes: K x K = transpose::PER_ELEMENT_K^2 threads per block; any shape.
//
// Fixed from the blog's kernel: any shape (it assumed N a multiple of K and
// a square matrix), and rows beyond 65535 tiles through a loop.
#include "transpose.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int K = transpose::PER_ELEMENT_K;  // K x K threads, one element each

template <class T>
__global__ void transpose_per_element(const T *in, T *out, int64_t rows, int64_t cols) {
    const int64_t i = int64_t(blockIdx.x) * K + threadIdx.x;  // column
    for (int64_t j0 = int64_t(blockIdx.y) * K; j0 < rows; j0 += int64_t(gridDim.y) * K) {
        const int64_t j = j0 + threadIdx.y;  // row
        if (i < cols && j < rows) out[j + i * rows] = in[i + j * cols];
    }
}

template <class T>
struct PerElement {
    static cudaError_t run(const gp_transpose_args &a) {
        GP_LAUNCH(transpose_per_element<T>, transpose::tile_grid(a.rows, a.cols, K, K), dim3(K, K),
                  0, a.stream, static_cast<const T *>(a.in), static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_per_element(const gp_transpose_args *a) {
    return transpose::dispatch<PerElement>(a);
}

// The kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_per_element_kernel, transpose_per_element<uint32_t>)
GP_NAMESPACE_END
