// Step 20 - axes and segments, reproducible: what determinism="gpu_to_gpu"
// runs for a float sum over an axis or over segments.
// Sources: the accumulator of step 19 (../rfa.cuh, after Ahrens, Demmel and
// Nguyen, ACM TOMS 2020); the mappings of steps 11 and 13 (a thread per
// problem for columns and short rows, a warp per problem) and 12 (a block
// per problem for long rows).
//
// What changed from step 17 (segmented_adaptive): each group of lanes sums
// its problem into reproducible accumulators and merges their states
// (exact), so the mapping - a thread, a warp or a block per problem - and
// the grid no longer change the bits: every problem's result is the same as
// a 1-D gpu_to_gpu sum of its elements (step 19), whatever the layout, the
// order of the segments or the GPU.  Simpler than step 17: no split of long
// problems over several blocks and no column tiles (the price: a few long
// rows use only a few blocks).
// Integer sums, min and max are exact in any order and run step 17.
// Assumes: nothing of the layout (reads gp_batch as steps 11-17 do).
#include "reproducible.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_reduce_segmented_adaptive(gp_reduce_args *);

cudaError_t gp_reduce_segmented_reproducible(gp_reduce_args *a) {
    if (!reduce::rep::float_sum(*a)) return gp_reduce_segmented_adaptive(a);
    return reduce::seg::dispatch<reduce::rep::GroupsRep>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_reproducible_kernel,
             reduce::rep::reduce_rfa_groups<32, float, float>)
GP_NAMESPACE_END
