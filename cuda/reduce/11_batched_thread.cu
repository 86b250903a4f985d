// Step 11 - batched, a thread per problem: the first of the steps that
// reduce many problems at once (an axis of an N-D array, or ragged
// segments: the gp_batch layout in gpuprims.h).  The lesson of steps 11 to
// 17 is the mapping of work to threads.
//
// What changed from step 10 (the 1-D journey): there are now `count`
// independent problems (outer x inner of them, or one per segment), each
// writing one result.  The simplest mapping gives each problem to one
// thread, which folds its elements in a sequential loop (several loads
// issued before their adds: fold_strided in segmented.cuh).  The kernel is
// reduce_groups<1> (a "group" of one lane per problem; steps 13 and 14
// widen the group).
// Why it can be fast: where the problems are columns - a reduction over
// axis 0 of a C array, whose neighbouring problems are neighbouring
// addresses - thread t and thread t+1 read neighbouring words at every
// step of their loops: every warp load is coalesced, and with many columns
// this mapping is already at the memory roof.
// Why it can be slow: where the problems are rows (axis -1 of a C array,
// segments), neighbouring threads read addresses a whole row apart: each
// warp load touches 32 cache lines for 32 useful words, and a few long rows
// leave most of the GPU idle (one thread per row).  Steps 12 to 15 fix
// that for rows, step 16 for columns.
// Assumes: nothing of the layout; any strides, negative or 0.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct ThreadPerProblem {
    static size_t scratch(const gp_reduce_args &, const Problems &) { return 0; }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        return launch_groups<In, Op, 1, 1>(a, P, 1);
    }
};
}  // namespace

cudaError_t gp_reduce_batched_thread(gp_reduce_args *a) {
    return reduce::seg::dispatch<ThreadPerProblem>(a);
}

GP_KERNEL_OF(gp_reduce_batched_thread_kernel, reduce::seg::reduce_groups<1, float, Sum<float>>)
GP_NAMESPACE_END
