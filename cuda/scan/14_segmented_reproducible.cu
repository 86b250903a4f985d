// Step 14 - axes and segments, reproducible: what determinism="gpu_to_gpu"
// runs for a float cumsum over an axis or segments (and for a complex one:
// its real and imaginary parts are two problems).
// Sources: the accumulator of step 13 (../rfa.cuh, after Ahrens, Demmel and
// Nguyen, ACM TOMS 2020); the mappings of steps 7 and 8 (a thread per
// problem, a warp per problem).
//
// What changed from step 12 (segmented_adaptive): each problem is scanned
// with a running accumulator state - a thread walks its problem element by
// element, or a warp takes 32 elements a round, scans the lanes' states
// (exact merges) and merges the running state in front - and each element
// is its prefix's state rounded once, so every problem gets the bits of
// the 1-D reproducible scan of its elements (step 13), whatever the
// mapping, the grid, the order of the segments or the GPU.  Simpler than
// step 12: no look-back across blocks within a problem (the price: a few
// very long rows use only a few warps).
// Integer sums, min and max are exact in any order and run step 12.
// Assumes: nothing of the layout (reads gp_batch as steps 7-12 do).
#include "reproducible.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_segmented_adaptive(gp_scan_args *);

cudaError_t gp_scan_segmented_reproducible(gp_scan_args *a) {
    if (!scanrep::float_sum(*a)) return gp_scan_segmented_adaptive(a);
    return seg::dispatch<scanrep::GroupsRep>(a);
}

GP_KERNEL_OF(gp_scan_segmented_reproducible_kernel, scanrep::scan_rfa_groups<32, float, float>)
GP_NAMESPACE_END
