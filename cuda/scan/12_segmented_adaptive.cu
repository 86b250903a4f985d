// Step 15 - segmented_adaptive: the mapping chosen from the layout, what
// variant="auto" runs for an axis or segments.
// Source: CUB's dispatch layers (CCCL cub/device/dispatch/*: a policy
// chosen per call from the problem's shape); the mappings of steps 13-14.
//
// What changed from step 14: no new kernel - a choice.  Steps 10-14 each
// win somewhere and lose elsewhere: a thread, a warp or a block per problem
// is as good as the problems are even and numerous; the flat look-back
// (step 13) does the same work per block whatever the lengths, reading
// along the problems; the columns kernel (step 14) reads across them.  So
// the question is only which way the memory runs:
//   - segments, or one problem per row (inner == 1) whose elements are
//     neighbours (|s_n| == 1: a C array's last axis, reversed or not) or
//     whose rows are not neighbours either: the flat look-back, whose
//     tiles follow the elements (16-byte loads where the data is
//     contiguous);
//   - an axis with axes after it (inner > 1: a C array's axis 0 or a
//     middle axis, where neighbouring problems are neighbours in memory),
//     or problems that are neighbours while their elements are not (an F
//     array's last axis: |s_outer| == 1): the columns kernel, whose lanes
//     follow the problems.
// The segment lengths live on the device, so the choice never reads them:
// the flat tiles make the work per block independent of them, which is what
// a choice by length would be for (and the bits do not depend on any
// launch-time decision, only on the layout).
// Assumes: what steps 13 and 14 assume.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_segmented_lookback(gp_scan_args *);
cudaError_t gp_scan_batched_columns(gp_scan_args *);

namespace {
// Whether the columns kernel reads this layout coalesced and the flat one
// does not.
bool across_problems(const gp_scan_args &a) {
    const gp_batch &b = a.batch;
    if (b.offsets != nullptr) return false;
    if (b.inner > 1) return true;
    const bool along = a.n == 1 || b.s_n == 1 || b.s_n == -1;
    return !along && (b.s_outer == 1 || b.s_outer == -1);
}
}  // namespace

cudaError_t gp_scan_segmented_adaptive(gp_scan_args *a) {
    return across_problems(*a) ? gp_scan_batched_columns(a) : gp_scan_segmented_lookback(a);
}

GP_NAMESPACE_END
