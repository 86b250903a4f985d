// Step 17 - the adaptive choice: what variant="auto" runs for an axis or
// segments (GP_AUTO_BATCHED in the registry).
//
// What changed from steps 11 to 16: nothing in the kernels; this step
// chooses among their mappings by the layout and the (mean) problem length:
//
//   columns (neighbouring problems closer than neighbouring elements of a
//   problem: inner > 1 and |s_inner| < |s_n|)        -> step 16's tiles
//   otherwise, rows and segments, by length L (the mean for segments):
//     L <= 32                                       -> W lanes per problem,
//                                                      W = 1, 2, ..., 32 covering L
//                                                      (steps 11, 14, 13)
//     L <= SegTuning::WARP_MAX and the problems fill
//       the GPU with a warp each                     -> a warp per problem (13)
//     else                                          -> a block per problem,
//                                                      or several (12, 15)
//
// Why one fixed mapping is slow somewhere: a thread per problem reads rows
// uncoalesced (step 11); a block per problem idles on short rows (12); a
// warp per problem idles on rows of 4 (13) and leaves the GPU empty with
// few long rows (13, 12); the split is a second launch the many-row shapes
// do not need (15); the column tiles read rows one word per row (16).
// Assumes: for segments, lengths near their mean (the choice reads n /
// count; a few very long segments among short ones run their loop on the
// short ones' mapping - correct, slower).
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct Adaptive {
    enum Kind { GROUPS, BLOCKS, COLUMNS };
    struct Plan {
        Kind kind;
        int64_t lanes, chunks;
        ColumnShape columns;
    };
    static Plan plan(const Problems &P) {
        Plan p{GROUPS, 1, 1, {}};
        if (column_like(P)) {
            p.kind = COLUMNS;
            p.columns = column_shape(P);
        } else if (P.len <= WARP) {
            p.lanes = lanes_for(P.len, 1, WARP);
        } else if (P.len <= Seg::WARP_MAX &&
                   P.count >= int64_t(sms()) * Seg::BLOCKS_PER_SM * (Seg::BLOCK / WARP)) {
            p.lanes = WARP;
        } else {
            p.kind = BLOCKS;
            p.chunks = split_chunks(P.count, P.len, Seg::MIN_CHUNK);
        }
        return p;
    }
    static size_t scratch(const Problems &P) {
        const Plan p = plan(P);
        return partial_bytes<Op>(P, p.kind == COLUMNS ? p.columns.chunks : p.chunks);
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        const Plan p = plan(P);
        switch (p.kind) {
        case COLUMNS: return launch_columns<In, Op>(a, P, p.columns);
        case BLOCKS: return launch_blocks<In, Op>(a, P, p.chunks);
        default: return launch_groups<In, Op, 1, WARP>(a, P, p.lanes);
        }
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_adaptive(gp_reduce_args *a) {
    return reduce::seg::dispatch<Adaptive>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_adaptive_kernel, reduce::seg::reduce_groups<32, float, Sum<float>>)
GP_NAMESPACE_END
