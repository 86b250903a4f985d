// Steps 4-6 - the shared-memory tile.
// Source: Ruetsch and Micikevicius, "Optimizing Matrix Transpose in CUDA"
// (NVIDIA, 2009); the coarsening is the next step announced by Orchid's
// "GPU program optimization (2): matrix transpose" (2016).
//
// tiled (step 4): 32 x 32 threads, one element each, tile[32][32].  What
//   changed from step 3: the block stages its tile in shared memory, so both
//   the reads and the writes of a warp are consecutive addresses.
//   Why step 3 was slow: every element written was its own memory
//   transaction.  The cost moved into shared memory: reading a tile column
//   is a 32-way bank conflict.
// tiled_padded (step 5): tile[32][33]; the conflict is gone.
// tiled_coarsened (step 6): 32 x 8 threads, each moving 4 elements
//   ("granularity coarsening"): a quarter of the threads, 4 independent loads
//   in flight per thread, index arithmetic shared.
// The kernel is tiled.cuh's, with the knobs set as above (TiledPlain,
// TiledPadded, TiledCoarsened there).  Assumes: any shape.
#include "tiled.cuh"

GP_NAMESPACE_BEGIN

using namespace gp::transpose;

cudaError_t gp_transpose_tiled(const gp_transpose_args *a) {
    return dispatch<TiledPlain::Impl>(a);
}
cudaError_t gp_transpose_tiled_padded(const gp_transpose_args *a) {
    return dispatch<TiledPadded::Impl>(a);
}
cudaError_t gp_transpose_tiled_coarsened(const gp_transpose_args *a) {
    return dispatch<TiledCoarsened::Impl>(a);
}

// The kernels as they run for 4-byte elements (float32), for gpuprims.occupancy.
const void *gp_transpose_tiled_kernel(void) { return TiledPlain::kernel<uint32_t>(); }
const void *gp_transpose_tiled_padded_kernel(void) { return TiledPadded::kernel<uint32_t>(); }
const void *gp_transpose_tiled_coarsened_kernel(void) { return TiledCoarsened::kernel<uint32_t>(); }
GP_NAMESPACE_END
