// Step 2 - reduceNeighboredLess: the same pairs, fewer divergent warps.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.4).
//
// What changed from step 1: thread tid now works on element 2*stride*tid, so
// the busy threads are the first ones of the block - whole warps either work
// or idle, and the idle warps retire early.
// Why step 1 was slow: its busy threads were scattered over every warp.
// Still slow here: the pairing in memory is neighbouring, so the accesses of
// a warp spread over 2*stride*32 elements.
// Assumes: as step 1.
//
// Fixed from the book's kernel: as in step 1 (scratch tile, no early return
// before a barrier, identity padding); its `if (idx > n)` was also off by one.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void reduce_neighbored_less(const In *in, typename Op::type *work,
                                       typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + tid;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;
    idata[tid] = reduce::load_or_identity<Op>(in, idx, n);
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        const unsigned index = 2 * stride * tid;  // the key line
        if (index < blockDim.x) idata[index] = op(idata[index], idata[index + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct NeighboredLess {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_neighbored_less<In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_neighbored_less(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<NeighboredLess>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_neighbored_less_kernel, reduce_neighbored_less<float, Sum<float>>)
GP_NAMESPACE_END
