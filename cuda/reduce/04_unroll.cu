// Step 4 - reduceUnroll2 / 4 / 8: several blocks of data per block.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.5, loop unrolling).
//
// What changed from step 3: before the tree, each thread combines UNROLL
// elements BLOCK apart (a vector add of UNROLL blocks), so the grid has
// UNROLL times fewer blocks, each tree step serves UNROLL times more data,
// and the UNROLL independent loads per thread hide memory latency.
// Why step 3 was slow: one load per thread, then half the threads idle at
// the first tree step; too few bytes in flight to fill the memory system.
// Assumes: BLOCK a power of two; any n (the last block's tail is checked).
//
// Fixed from the book's kernel: scratch tile instead of writing into the
// input, no early return before a barrier, and the tail of the last block is
// summed element by element (the book's kernel skipped the whole group when
// its last element was out of range).
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <int UNROLL, class In, class Op>
__global__ void reduce_unroll(const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;
    idata[tid] = reduce::unrolled_load<UNROLL, Op>(in, n);
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) idata[tid] = op(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

template <int UNROLL>
struct Unroll {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK * UNROLL;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_unroll<UNROLL, In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_unroll2(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<Unroll<2>>::type>(a);
}
cudaError_t gp_reduce_unroll4(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<Unroll<4>>::type>(a);
}
cudaError_t gp_reduce_unroll8(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<Unroll<8>>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_unroll2_kernel, reduce_unroll<2, float, Sum<float>>)
GP_KERNEL_OF(gp_reduce_unroll4_kernel, reduce_unroll<4, float, Sum<float>>)
GP_KERNEL_OF(gp_reduce_unroll8_kernel, reduce_unroll<8, float, Sum<float>>)
GP_NAMESPACE_END
