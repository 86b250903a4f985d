// Step 12 - a block per problem.
//
// What changed from step 11: each problem gets a whole block of 256
// threads.  Thread t reads elements t, t + 256, t + 512, ... of its problem
// (a block-stride loop, several loads in flight), then the block's tree
// (warp shuffles, one barrier: block_reduce in warp.cuh) gives the result.
// The kernel is reduce_blocks with one chunk per problem (segmented.cuh).
// Why step 11 was slow on rows: its neighbouring threads read addresses a
// row apart.  Here the 32 threads of a warp read 32 neighbouring words of
// one row at every step, and a long row is read by 256 threads at once.
// Why this is slow in turn: a block per problem is wasteful for short
// problems (a row of 4 elements keeps 252 of 256 threads idle and still
// pays the tree and its barrier), and a few long problems give a few
// blocks: (4, 2^24) runs 4 blocks on a GPU that holds over a thousand.
// Steps 13 and 14 fix the first, step 15 the second.  On columns it reads
// one word per row per block: step 11's mapping is the right one there.
// Assumes: nothing of the layout; the block size is SegTuning::BLOCK.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct BlockPerProblem {
    static size_t scratch(const gp_reduce_args &, const Problems &) { return 0; }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        return launch_blocks<In, Op>(a, P, 1);
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_block(gp_reduce_args *a) {
    return reduce::seg::dispatch<BlockPerProblem>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_block_kernel, reduce::seg::reduce_blocks<float, Sum<float>>)
GP_NAMESPACE_END
