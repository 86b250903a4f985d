// Step 14 - several problems per warp: groups of 2, 4, 8 or 16 lanes.
//
// What changed from step 13: a problem gets W lanes, W the power of two
// that gives each lane SegTuning::GROUP_UNROLL = 2 of its (mean) length,
// between 2 and 16; a warp holds 32 / W problems side by side.  For rows of
// 8 elements a warp reads 8 rows = 64 neighbouring words in two loads, and
// two shuffle steps of width 4 (__shfl_down_sync(mask, v, offset, 4))
// combine each group.  Each group keeps several problems in flight per
// trip (SegTuning::ROUNDS), so even short problems leave several loads in
// flight per thread.  The kernel is reduce_groups<W> (segmented.cuh).
// Contiguous problems (segments, rows of a C array) are read in 16-byte
// vectors instead (reduce_groups_vec): W is then the power of two that
// gives each lane SegTuning::VEC_UNROLL = 1 vector of 4 floats, and a
// lane's problems' vectors are all in flight at once.  Measured before the
// vectors (H200, rows of 64, 16 lanes of 4 scalar loads): 2443 GB/s, 59%
// of the copy roof, with 4 problems x 2 loads x 4 bytes in flight per
// thread at 58 registers (half the SM's threads resident): too few bytes
// in flight.  A vector lane keeps 4 x 16 bytes in flight at 57 registers.
// Why step 13 was slow on short problems: 28 of the 32 lanes of a warp
// idle on a row of 4, and a warp load fetches 4 useful words.
// Why this is slow in turn: segments whose lengths differ a lot from the
// mean (the width is chosen from the mean, n / count) make the group loop
// over a long one while its warp's other groups wait; long problems want
// a warp or more (step 17 chooses).
// Assumes: nothing of the layout; W is chosen from the mean length.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct LanesPerProblem {
    static size_t scratch(const gp_reduce_args &, const Problems &) { return 0; }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        if (vec_ok<In>(P))  // contiguous: 16-byte loads, 2 of them a lane
            return launch_groups<In, Op, 2, 16, true>(a, P, vec_lanes<In>(P.len, 2, 16));
        return launch_groups<In, Op, 2, 16>(a, P, group_lanes(P.len, 2, 16));
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_subwarp(gp_reduce_args *a) {
    return reduce::seg::dispatch<LanesPerProblem>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_subwarp_kernel, reduce::seg::reduce_groups<4, float, Sum<float>>)
GP_NAMESPACE_END
