// Step 15 - several blocks per long problem.
//
// What changed from step 12: a problem is cut into `chunks` equal pieces
// (chunk c of a problem of len elements: [c * ceil(len / chunks), ...)),
// each reduced by one block into a partial in scratch; a second, small
// kernel combines each problem's partials in chunk order (a thread per
// problem, or a block where there are few problems).  chunks is chosen so
// that the grid fills the GPU SegTuning::WAVES times over, with no piece
// shorter than SegTuning::MIN_CHUNK elements; 1 (a block per problem, one
// launch) when there are problems enough.
// Why step 12 was slow on few long problems: shape (4, 2^24) along its
// last axis is 4 blocks, on a GPU that holds over a thousand.
// Why not atomics: adding the partials with atomicAdd would make the order
// of the float additions, and so the bits of the result, change from run
// to run.  The partials are combined in a fixed order, so the same input
// gives the same bits (the order depends on the SM count: run-to-run, not
// GPU-to-GPU, determinism).
// Assumes: nothing of the layout; segments are cut by the mean length's
// chunk count, so very uneven segments give uneven pieces.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct SplitProblems {
    static int64_t chunks(const Problems &P) {
        return split_chunks(P.count, P.len, Seg::MIN_CHUNK);
    }
    static size_t scratch(const gp_reduce_args &, const Problems &P) {
        return partial_bytes<Op>(P, chunks(P));
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        return launch_blocks<In, Op>(a, P, chunks(P));
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_split(gp_reduce_args *a) {
    return reduce::seg::dispatch<SplitProblems>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_split_kernel, reduce::seg::reduce_blocks<float, Sum<float>>)
GP_NAMESPACE_END
