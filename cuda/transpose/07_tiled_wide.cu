// Step 7 - tiled_wide: what `variant="auto"` runs.
//
// What changed from step 6: a larger tile and more work per thread, so that
// enough bytes are in flight to keep HBM busy: TransposeTuning below (its
// evidence: bench/tune_transpose.cu, results in bench/results/).
#include "tiled.cuh"

namespace {
// Tunables, in one place.
struct TransposeTuning {
    static constexpr int TILE = 64;        // tile of TILE x TILE elements
    static constexpr int BLOCK_ROWS = 8;   // TILE x BLOCK_ROWS threads: 8 elements each
};
}  // namespace

extern "C" cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *a) {
    using T = TransposeTuning;
    return gp::transpose::dispatch<gp::transpose::Tiled<T::TILE, T::BLOCK_ROWS, 1>::Impl>(a);
}
