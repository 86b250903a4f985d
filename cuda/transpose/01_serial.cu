// Step 1 - transpose_serial: one thread, <<<1, 1>>>.
// Source: Orchid, "GPU program optimization (2): matrix transpose" (2016).
//
// The CPU loop moved to the GPU as it is: a single thread walks every
// element.  It shows the GPU doing nothing in parallel - one thread of one
// SM, each load waiting on memory - and is orders of magnitude slower than
// the CPU.  Its max_n keeps a call under a second.
// Assumes: nothing (any rows x cols up to max_n elements).
//
// Fixed from the blog's kernel: its loop copied (out[j + i*N] = in[j + i*N])
// instead of transposing, and assumed a square N x N matrix.
#include "transpose.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class T>
__global__ void transpose_serial(const T *in, T *out, int64_t rows, int64_t cols) {
    for (int64_t j = 0; j < rows; j++)      // row of the input
        for (int64_t i = 0; i < cols; i++)  // column of the input
            out[j + i * rows] = in[i + j * cols];
}

template <class T>
struct Serial {
    static cudaError_t run(const gp_transpose_args &a) {
        GP_LAUNCH(transpose_serial<T>, 1, 1, 0, a.stream, static_cast<const T *>(a.in),
                  static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_serial(const gp_transpose_args *a) {
    return transpose::dispatch<Serial>(a);
}

// The kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_serial_kernel, transpose_serial<uint32_t>)
GP_NAMESPACE_END
