// Step 7 - tiled_wide: what `variant="auto"` runs (GP_AUTO in the registry).
// Source: the tile of Ruetsch and Micikevicius, "Optimizing Matrix Transpose
// in CUDA" (NVIDIA, 2009), with 16-byte accesses and a larger tile, tuned
// by bench/tune_transpose.cu (transpose::TransposeTuning in tiled.cuh).
//
// What changed from step 6: every global access is 16 bytes wide and the
// tile is larger.  A thread loads a 16-byte vector (VEC = 16 / sizeof(T)
// elements) of an input row, scatters it into the shared tile, and later
// gathers VEC elements of a tile column into one 16-byte store along an
// output row.  The tile is VECS vectors wide in both directions (TILE =
// VECS * VEC elements: 64 x 64 for float32), so:
//  * each input row segment and each output row segment is VECS * 16 bytes
//    long (256 bytes for float32): reads and writes come in runs of whole
//    128-byte lines, two at a time;
//  * a quarter of the global memory instructions of step 6, and each thread
//    keeps TILE * VECS / BLOCK loads of 16 bytes in flight (4 for float32);
//  * the tile is padded by one column against shared-memory bank conflicts;
//  * evict-first stores (the output is not read again), and blocks take their
//    tiles in groups of tile columns (block_tile below), so
//    the tiles in flight at once form a squarish region and both reads and
//    writes hit long runs of the same DRAM rows.
// Why step 6 was slow: 4-byte accesses (a warp moves 128 bytes of a row per
// instruction) and 32-element row segments, so the tiles in flight touch
// many DRAM rows for few bytes each.
// Assumes: vectors need 16-byte aligned rows: the base pointers aligned and
// both dimensions multiples of VEC.  Other shapes run step 6's kernel.
#include "tiled_wide.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *a) {
    return transpose::dispatch<Wide>(a);
}

// The kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_tiled_wide_kernel, transpose_wide<uint32_t, TransposeTuning<uint32_t>>)

GP_NAMESPACE_END
