// Step 17 - the adaptive choice: what variant="auto" runs for an axis or
// segments (GP_AUTO_BATCHED in the registry).
//
// What changed from steps 11 to 16: nothing in the kernels; this step
// chooses among their mappings by the layout and the (mean) problem length
// L (thresholds and their H200 measurements: SegTuning in segmented.cuh):
//
//   columns (neighbouring problems closer than neighbouring elements of a
//   problem: inner > 1 and |s_inner| < |s_n|):
//     a dense C array, inner a power of two up to 1024, its partials in
//     the core's small scratch                      -> the array as one flat
//                                                      vector, 16-byte loads, a
//                                                      partial per column per
//                                                      block, the last block
//                                                      finishes (reduce_columns_flat)
//     L <= COLUMN_THREAD_MAX (8) and a thread per column fills the GPU
//                                                   -> a thread per column (11),
//                                                      per 4 columns with 16-byte
//                                                      loads where aligned
//     else                                          -> step 16's tiles
//   aligned rows (16-byte starts) of exactly W vectors, W = 1, 2, ..., 32
//   (rows of 4, 8, ..., 128 floats)                -> W lanes a row, one vector
//                                                      a lane, nothing scalar
//                                                      (reduce_rows_dense)
//   contiguous problems (rows with s_n == 1; segments of mean >= 16),
//   L <= WARP_MAX (4096)                            -> W lanes per problem, one
//                                                      16-byte vector a lane
//                                                      (reduce_groups_vec: a row of
//                                                      4 floats a thread, of 64
//                                                      16 lanes, 128+ a warp; the
//                                                      warp only where the problems
//                                                      fill the GPU)
//   segments of mean PACK_MIN (64) ... PACK_MAX (4096), a 16-byte aligned
//   input                                            -> a warp per pack of
//                                                      2048 / L (rounded up to a
//                                                      power of two, at most 32)
//                                                      neighbouring segments, read
//                                                      as one flat run (reduce_packs)
//   otherwise, by L:
//     L <= THREAD_MAX (8)                           -> a thread per problem (11)
//     L <= 32 x LANE_ITEMS (512)                    -> L / 16 lanes (14, 13)
//     L <= WARP_MAX (segments: SEGMENT_WARP_MAX)
//       and the problems fill the GPU                -> a warp per problem (13)
//     aligned rows at least a block's share long   -> the resident blocks shared
//                                                      evenly among the rows, each
//                                                      row read as step 9 reads a
//                                                      vector, the last block
//                                                      combines (reduce_rows_split;
//                                                      or one flat range cut evenly,
//                                                      reduce_rows_long: DenseTuning)
//     else                                          -> a block per problem,
//                                                      or several (12, 15)
//
// The one-launch kernels (segmented.cuh, DenseTuning) read only 16-byte
// vectors and never launch a combine: where the layout is a plain aligned
// C array, the problems are just a flat run of memory cut at known
// places, and the kernel that reads a flat run fastest (step 9's: even
// shares of the grid, several 16-byte loads in flight per thread, a
// last-block finish) needs only to know where the cuts fall.
// Why one fixed mapping is slow somewhere: a thread per problem reads rows
// uncoalesced (step 11); a block per problem idles on short rows (12); a
// warp per problem idles on rows of 4 (13) and leaves the GPU empty with
// few long rows (13, 12), and a group per segment makes a trip per segment
// where a pack's warp streams the segments' run (packs); the split is a
// second launch the many-row shapes do not need (15); the column tiles read
// rows one word per row (16).
// Segments are binned by length, as CUB's small/medium/large policies do:
// the mapping is chosen from the mean length (n / count), and every segment
// longer than 16 x the mean (and than a few trips of the mapping) is
// deferred by it to a list, which a second kernel reads in chunks of 8192
// elements, a block each, the last block of a segment combining its chunks
// in order (Deferred in segmented.cuh).  So one segment of 2^26 elements
// among millions of 4 costs what its bytes cost, not a group's sequential
// loop.  Deterministic: a segment's arithmetic depends on its length only.
// Assumes: nothing of the layout.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct Adaptive {
    enum Kind { GROUPS, BLOCKS, COLUMNS, COLUMNS_VEC, COLUMNS_FLAT, ROWS_DENSE, ROWS_LONG, PACKS };
    struct Plan {
        Kind kind;
        int64_t lanes, chunks;
        bool vec;  // GROUPS: reduce_groups_vec
        ColumnShape columns;
        DeferShape defer;
    };
    static Plan plan(const gp_reduce_args &a, const Problems &P) {
        Plan p{GROUPS, 1, 1, false, {}, {}};
        const int64_t threads = int64_t(sms()) * Seg::BLOCKS_PER_SM * Seg::BLOCK;  // resident
        // Segments longer than long_len are deferred: 16x the mean, and at
        // least what the mapping reads in a few trips (segs::long_length).
        int64_t long_len;
        if (column_like(P)) {
            // Few dense columns (inner a power of two up to a block): the
            // array read as one flat vector, one launch.
            if (columns_flat_ok<In, Op>(a, P)) {
                p.kind = COLUMNS_FLAT;
                return p;
            }
            // Short columns, enough of them to fill the GPU: a thread per
            // column reads them coalesced and holds 4 columns in flight;
            // the tiles' blocks would each read a few KB and exit.
            if (P.len <= Seg::COLUMN_THREAD_MAX && P.count >= threads) {
                if (columns_vec_ok<In>(a, P)) p.kind = COLUMNS_VEC;  // 16 bytes a load
                return p;
            }
            p.kind = COLUMNS;
            p.columns = column_shape(P);
            return p;
        }
        const int64_t V = int64_t(16 / sizeof(In));
        if (const int64_t w = rows_dense_lanes<In>(a, P)) {  // aligned rows of 1..32 vectors
            p.kind = ROWS_DENSE;
            p.lanes = w;
            return p;
        }
        if (packs_ok<In>(a, P) && P.len >= Seg::PACK_MIN && P.len <= Seg::PACK_MAX) {
            p.kind = PACKS;
            p.lanes = pack_segments(P.len);  // segments a pack
            long_len = segs::pack_long_length(P.len);
        } else if (vec_ok<In>(P) && P.offsets == nullptr && P.len >= Seg::VEC_MIN_ROW &&
            P.len <= Seg::WARP_MAX &&
            (P.len <= WARP * Seg::VEC_UNROLL * V ||
             P.count >= threads / WARP)) {  // a warp per problem only where they fill the GPU
            p.vec = true;
            p.lanes = vec_lanes<In>(P.len, 1, WARP);
            long_len = segs::long_length(P.len, 32 * Seg::VEC_UNROLL * V * p.lanes);
        } else if (P.len <= Seg::THREAD_MAX) {
            long_len = segs::long_length(P.len, 32 * Seg::GROUP_UNROLL);
        } else if (P.len <= WARP * Seg::LANE_ITEMS) {
            p.lanes = pow2_between(ceil_div<int64_t>(P.len, Seg::LANE_ITEMS), 2, WARP);
            long_len = segs::long_length(P.len, 32 * Seg::LANE_ITEMS * p.lanes);
        } else if (P.len <= (P.offsets != nullptr ? Seg::SEGMENT_WARP_MAX : Seg::WARP_MAX) &&
                   P.count >= threads / WARP) {
            p.lanes = WARP;
            long_len = segs::long_length(P.len, 32 * Seg::GROUP_UNROLL * WARP);
        } else if (rows_long_ok<In>(a, P)) {  // few long aligned rows: one pass
            p.kind = ROWS_LONG;
            return p;
        } else {
            p.kind = BLOCKS;
            p.chunks = split_chunks(P.count, P.len, Seg::MIN_CHUNK);
            long_len = segs::long_length(P.len, 4 * Deferred::CHUNK);
        }
        p.defer = defer_shape(P, a, long_len);
        return p;
    }
    static size_t scratch(const gp_reduce_args &a, const Problems &P) {
        const Plan p = plan(a, P);
        if (p.kind == COLUMNS_FLAT) return columns_flat_bytes<In, Op>(P);
        if (p.kind == ROWS_LONG)
            return DenseTuning::LONG_PER_ROW ? rows_split_bytes<In, Op>(P) : rows_long_bytes<In, Op>(P);
        return partial_bytes<Op>(P, p.kind == COLUMNS ? p.columns.chunks : p.chunks) +
               defer_bytes<Op>(p.defer);
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        const Plan p = plan(a, P);
        Deferred D;
        GP_TRY(defer_in(static_cast<char *>(a.scratch) + partial_bytes<Op>(P, p.chunks), p.defer,
                        a.stream, D));
        switch (p.kind) {
            case COLUMNS:
                return launch_columns<In, Op>(a, P, p.columns);
            case COLUMNS_VEC:
                return launch_columns_vec<In, Op>(a, P);
            case COLUMNS_FLAT:
                return launch_columns_flat<In, Op>(a, P);
            case ROWS_DENSE:
                return launch_rows_dense<In, Op>(a, P, p.lanes);
            case ROWS_LONG:
                return DenseTuning::LONG_PER_ROW ? launch_rows_split<In, Op>(a, P)
                                                 : launch_rows_long<In, Op>(a, P);
            case BLOCKS:
                GP_TRY((launch_blocks<In, Op>(a, P, p.chunks, D)));
                break;
            case PACKS:
                GP_TRY((launch_packs<In, Op>(a, P, p.lanes, D)));
                break;
            default:
                if (p.vec)
                    GP_TRY((launch_groups<In, Op, 1, WARP, true>(a, P, p.lanes, D)));
                else
                    GP_TRY((launch_groups<In, Op, 1, WARP>(a, P, p.lanes, D)));
                break;
        }
        return launch_deferred<In, Op>(a, P, D);
    }
};
}  // namespace

cudaError_t gp_reduce_segmented_adaptive(gp_reduce_args *a) {
    return reduce::seg::dispatch<Adaptive>(a);
}

GP_KERNEL_OF(gp_reduce_segmented_adaptive_kernel, reduce::seg::reduce_groups<32, float, Sum<float>>)
GP_NAMESPACE_END
