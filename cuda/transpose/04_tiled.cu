// Steps 4-6 - the shared-memory tile (the journey after seed 002).
//
// tiled (step 4): 32 x 32 threads, one element each, tile[32][32].  What
//   changed from step 3: the block stages its tile in shared memory, so both
//   the reads and the writes of a warp are consecutive addresses.  The cost
//   moved into shared memory: reading a tile column is a 32-way bank
//   conflict.
// tiled_padded (step 5): tile[32][33]; the conflict is gone.
// tiled_coarsened (step 6): 32 x 8 threads, each moving 4 elements (the
//   "granularity coarsening" the seed announces): a quarter of the threads,
//   4 independent loads in flight per thread, index arithmetic shared.
// The kernel is tiled.cuh's, with the knobs set as above.
#include "tiled.cuh"

GP_NAMESPACE_BEGIN

using gp::transpose::Tiled;

cudaError_t gp_transpose_tiled(const gp_transpose_args *a) {
    return gp::transpose::dispatch<Tiled<32, 32, 0>::Impl>(a);
}
cudaError_t gp_transpose_tiled_padded(const gp_transpose_args *a) {
    return gp::transpose::dispatch<Tiled<32, 32, 1>::Impl>(a);
}
cudaError_t gp_transpose_tiled_coarsened(const gp_transpose_args *a) {
    return gp::transpose::dispatch<Tiled<32, 8, 1>::Impl>(a);
}

// The main kernel (float32 sum) for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_tiled_kernel, gp::transpose::tiled<32, 32, 0, float>)
GP_KERNEL_OF(gp_transpose_tiled_padded_kernel, gp::transpose::tiled<32, 32, 1, float>)
GP_KERNEL_OF(gp_transpose_tiled_coarsened_kernel, gp::transpose::tiled<32, 8, 1, float>)
GP_NAMESPACE_END
