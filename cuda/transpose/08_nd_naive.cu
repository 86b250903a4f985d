// Step 8 - nd_naive: any rank, one thread per output element, the index
// taken apart by division.
// Source: the textbook index arithmetic of a strided array (the NumPy
// reference manual, "Internal memory layout of an ndarray"): element
// (i_0, ..., i_{r-1}) lives at sum_k i_k * stride_k.
//
// What changed from the 2-D steps: the input may have any number of axes
// and any strides (negative ones included), and the permutation is any
// permutation.  Thread o writes output element o: it takes o apart into
// output coordinates, slowest axis last (a division and a remainder per
// axis), and sums each coordinate times the input stride of that axis.
// Why it is slow: each element costs `rank` 64-bit divisions (tens of
// instructions each), and while the writes of a warp are consecutive, its
// reads land wherever the permutation sends them - one memory transaction
// per element when the output's fastest axis is not the input's.  The
// host's plan (size-1 axes dropped, axes that stay together fused) already
// makes the rank as small as it can be; the tiled step that follows reads
// and writes whole runs through shared memory and divides once per tile.
// Assumes: blocks of ND_NAIVE_BLOCK threads; any problem of gp_transpose_args.
#include "nd.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;
using transpose::ND_NAIVE_BLOCK;
using transpose::OutAxes;

template <class T>
__global__ void __launch_bounds__(ND_NAIVE_BLOCK)
transpose_nd_naive(const T *__restrict__ in, T *__restrict__ out, int64_t n, OutAxes ax) {
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t rest = o, off = 0;
        for (int j = ax.rank - 1; j >= 0; --j) {  // fastest output axis first
            off += rest % ax.dim[j] * ax.in_stride[j];
            rest /= ax.dim[j];
        }
        out[o] = in[off];
    }
}

template <class T>
struct NdNaive {
    static cudaError_t run(const gp_transpose_args &a) {
        const int64_t n = transpose::nd_size(a);
        const int64_t blocks = ceil_div<int64_t>(n, ND_NAIVE_BLOCK);
        GP_LAUNCH(transpose_nd_naive<T>, unsigned(blocks < (1 << 20) ? blocks : (1 << 20)), ND_NAIVE_BLOCK, 0,
                  a.stream, static_cast<const T *>(a.in), static_cast<T *>(a.out), n, transpose::out_axes(a));
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_nd_naive(const gp_transpose_args *a) {
    return transpose::dispatch_nd<NdNaive>(a);
}

// The kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_nd_naive_kernel, transpose_nd_naive<uint32_t>)
GP_NAMESPACE_END
