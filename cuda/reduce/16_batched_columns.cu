// Step 16 - columns: threads across the problems, rows split over blocks.
//
// What changed from step 11 (the mapping that already reads columns
// coalesced): a block is a tile of TX neighbouring columns by TY = 256 / TX
// rows, TX the power of two that covers the number of columns (at most
// 256).  Thread (tx, ty) folds rows ty, ty + TY, ... of column tx, and the
// TY values of a column meet in a shared-memory tree.  The rows are cut
// into chunks over blocks when the columns alone cannot fill the GPU, the
// partials combined in chunk order by a second kernel, as in step 15.
// Why step 11 was slow on some columns: with few columns - axis 0 of shape
// (2^24, 4) is 4 problems - step 11 runs 4 threads, each looping over 2^24
// rows.  Here one warp reads 8 rows x 4 columns = 32 neighbouring words per
// load, and the 2^24 rows are spread over thousands of blocks.  With many
// columns and few rows - axis 0 of (4, 2^24) - both read 4 words per
// thread and are equal.
// Why it is the wrong mapping for rows: where a problem's own elements are
// the neighbours (axis -1 of a C array, segments), the tile reads one word
// per row per warp.  Segments are not taken; step 17 sends each layout to
// its mapping.
// Assumes: a batched layout (not segments); any strides.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

template <class In, class Op>
struct Columns {
    static size_t scratch(const gp_reduce_args &, const Problems &P) {
        return partial_bytes<Op>(P, column_shape(P).chunks);
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        if (P.offsets != nullptr) return cudaErrorInvalidValue;
        return launch_columns<In, Op>(a, P, column_shape(P));
    }
};
}  // namespace

cudaError_t gp_reduce_batched_columns(gp_reduce_args *a) {
    return reduce::seg::dispatch<Columns>(a);
}

GP_KERNEL_OF(gp_reduce_batched_columns_kernel, reduce::seg::reduce_columns<float, Sum<float>>)
GP_NAMESPACE_END
