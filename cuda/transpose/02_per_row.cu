// Step 2 - transpose_parallel_per_row: one thread per output row.
// Source: Orchid, "GPU program optimization (2): matrix transpose" (2016).
//
// What changed from step 1: thread i writes row i of the output (column i
// of the input), looping over the input rows, so `cols` threads work at
// once instead of one.
// Why step 1 was slow: one thread, one memory access in flight.
// Still slow here: across a warp the reads in[i + j*cols] are consecutive
// (coalesced), but the writes out[j + i*rows] are `rows` elements apart (one
// memory transaction per thread); and the loop length is the number of input
// rows, so a tall, thin matrix leaves this variant nearly serial.
// Assumes: blocks of transpose::PER_ROW_BLOCK threads; any shape up to max_n.
//
// Fixed from the blog's kernel: it read in[j + j*N] (the diagonal) instead
// of in[i + j*N], and ran as one block of N threads (N <= 1024); here any
// number of blocks, and i < cols is checked.
#include "transpose.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class T>
__global__ void transpose_per_row(const T *in, T *out, int64_t rows, int64_t cols) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // output row
    if (i >= cols) return;  // no barrier in this kernel: an early return is safe
    for (int64_t j = 0; j < rows; j++) out[j + i * rows] = in[i + j * cols];
}

template <class T>
struct PerRow {
    static constexpr int BLOCK = transpose::PER_ROW_BLOCK;
    static cudaError_t run(const gp_transpose_args &a) {
        GP_LAUNCH(transpose_per_row<T>, unsigned(ceil_div<int64_t>(a.cols, BLOCK)), BLOCK, 0,
                  a.stream, static_cast<const T *>(a.in), static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_per_row(const gp_transpose_args *a) {
    return transpose::dispatch<PerRow>(a);
}

// The kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_per_row_kernel, transpose_per_row<uint32_t>)
GP_NAMESPACE_END
