// Step 13 - a warp per problem.
//
// What changed from step 12: each problem gets one warp instead of a
// block, so a block of 256 threads works on 8 problems at once (and each
// warp on up to SegTuning::ROUNDS problems per trip through its loop).
// Lane l reads elements l, l + 32, l + 64, ... of its problem; five
// __shfl_down_sync steps combine the lanes.  No shared memory, no
// __syncthreads(): the warps of a block never wait for each other.  The
// kernel is reduce_groups<32> (segmented.cuh).
// Why step 12 was slow on short problems: a block per problem pays a
// block-wide tree and barrier per problem and leaves most threads idle
// when the problem has fewer elements than the block has threads.
// Why this is slow in turn: problems much shorter than 32 elements still
// idle most lanes (a row of 4: 28 of 32); long problems are better served
// by a block, and a few very long ones by several blocks (step 15).
// Assumes: nothing of the layout.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct WarpPerProblem {
    static size_t scratch(const gp_reduce_args &, const Problems &) { return 0; }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        return launch_groups<In, Op, WARP, WARP>(a, P, WARP);
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_warp(gp_reduce_args *a) {
    return reduce::seg::dispatch<WarpPerProblem>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_warp_kernel, reduce::seg::reduce_groups<32, float, Sum<float>>)
GP_NAMESPACE_END
