// Step 1 - reduceNeighbored: neighbouring pairs, in place.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (as in T. Tan's "CUDA Freshman" 3.4, avoiding branch divergence).
//
// Each block owns BLOCK consecutive elements (reduce::BLOCK threads).  At
// step `stride` the threads whose index is a multiple of 2*stride add the
// element `stride` away.
// Why it is slow: the condition `tid % (2*stride) == 0` keeps only every
// other, then every fourth ... thread busy, scattered across all warps, so
// every warp stays resident and diverged until the last step; the in-place
// tree also runs in global memory.
// Assumes: BLOCK a power of two; the grid covers n (tail padded below).
//
// Fixed from the book's kernel: it reduced the caller's array in place (here
// a scratch copy of the block's tile, `work`, is reduced instead); it
// returned early (`if (tid >= n) return;`) before __syncthreads(), and it
// read past the end when n is not a multiple of the block (here: identity
// padding).
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void reduce_neighbored(const In *in, typename Op::type *work,
                                  typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + tid;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;  // this block's tile
    idata[tid] = reduce::load_or_identity<Op>(in, idx, n);
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if ((tid % (2 * stride)) == 0) idata[tid] = op(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct Neighbored {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_neighbored<In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_neighbored(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<Neighbored>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_neighbored_kernel, reduce_neighbored<float, Sum<float>>)
GP_NAMESPACE_END
