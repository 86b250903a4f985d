// Step 6 - reduceCompleteUnrollWarp8: no loop left.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.5); Harris 2007, "completely unrolled".
//
// What changed from step 5: the tree loop is written out, one guarded step
// per power of two from 1024 down to 64, each followed by a barrier; the
// guards test blockDim.x at run time, so one kernel serves any block of
// 64..1024 threads.  Then the last warp as in step 5.
// Why step 5 was slow: the loop's counter, compare and branch ran on every
// step, a visible share of a kernel doing one add per step.
// Assumes: blockDim.x a power of two, 64..1024.
//
// Fixed from the book's kernel: as in step 5.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void reduce_complete_unroll_warp8(const In *in, typename Op::type *work,
                                             typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;
    idata[tid] = reduce::unrolled_load<8, Op>(in, n);
    __syncthreads();
    if (blockDim.x >= 1024 && tid < 512) idata[tid] = op(idata[tid], idata[tid + 512]);
    __syncthreads();
    if (blockDim.x >= 512 && tid < 256) idata[tid] = op(idata[tid], idata[tid + 256]);
    __syncthreads();
    if (blockDim.x >= 256 && tid < 128) idata[tid] = op(idata[tid], idata[tid + 128]);
    __syncthreads();
    if (blockDim.x >= 128 && tid < 64) idata[tid] = op(idata[tid], idata[tid + 64]);
    __syncthreads();
    if (tid < 32) reduce::last_warp_volatile<Op>(idata, tid);
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct CompleteUnrollWarp8 {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK * 8;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_complete_unroll_warp8<In, Op>), unsigned(grid), BLOCK, 0, s, in, work,
                  partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_complete_unroll_warp8(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<CompleteUnrollWarp8>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_complete_unroll_warp8_kernel,
             reduce_complete_unroll_warp8<float, Sum<float>>)
GP_NAMESPACE_END
