// Step 5 - reduceUnrollWarp8: unroll 8, then unroll the last warp.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.5); Harris 2007, "unroll the last warp".
//
// What changed from step 4 (unroll8): the tree loop stops at stride 64; the
// last six steps (64 -> 1 values) run inside warp 0 without __syncthreads().
// Why step 4 was slow: every tree step, even those where one warp works,
// paid a block-wide barrier; here five barriers fewer, and the idle warps
// leave earlier.
// Assumes: BLOCK >= 64, a power of two.
//
// Fixed from the book's kernel: the volatile warp steps are separated by
// __syncwarp() (see last_warp_volatile in reduce.cuh for why they race on
// Volta and later), plus the fixes of step 4.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void reduce_unroll_warp8(const In *in, typename Op::type *work,
                                    typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;
    idata[tid] = reduce::unrolled_load<8, Op>(in, n);
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) idata[tid] = op(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid < 32) reduce::last_warp_volatile<Op>(idata, tid);
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct UnrollWarp8 {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK * 8;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_unroll_warp8<In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_unroll_warp8(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<UnrollWarp8>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_unroll_warp8_kernel, reduce_unroll_warp8<float, Sum<float>>)
GP_NAMESPACE_END
