// Step 9 - single pass: what `variant="auto"` runs (GP_AUTO in the registry).
// Sources: grid-stride loops with 16-byte vector loads; the last block
// finishes, as threadFenceReduction in the CUDA samples.
//
// What changed from step 8:
//  * 16-byte vector loads (float4, int4, double2, longlong2): a quarter (or
//    half) of the load instructions, full 128-byte lines per warp request;
//  * a grid sized to fill the GPU once (BLOCKS_PER_SM blocks per SM), each
//    thread striding over the array with UNROLL vector loads issued before
//    their first use, so enough bytes are in flight to saturate HBM (inputs
//    of up to 128 MiB with evict-first loads: reduce.cuh says why);
//  * one launch: each block writes its partial, and the last block to finish
//    (an atomic ticket after a __threadfence) reduces the partials in block
//    order and writes the result.  The order of every operation depends only
//    on n, the pointer's alignment and the SM count, so results are bitwise
//    reproducible run to run on the same GPU; no floating-point atomics.
//  * the narrow dtypes (bool, int8/16, uint8..64, float16: GP_NARROW_COMBOS)
//    are read as they are, 16 bytes per load, and widened in registers to
//    NumPy's accumulator, instead of a conversion kernel first writing the
//    input out again 2 to 8 times larger; 1- and 2-byte integer sums add a
//    32-bit word at a time (fold_vec in single_pass.cuh).
// Why step 8 was slow: scalar loads, one grid block per 4096 elements (block
// launch and tree costs per few KiB of data), and a second launch for the
// partials.
// Assumes: the input aligned to its element size; a head of up to 15
// elements (16 bytes less one element) before the first 16-byte boundary and the tail after the last
// whole vector are read one element at a time.  The tunings are
// reduce::SinglePassTuning (reduce.cuh).
#include "single_pass.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_reduce_single_pass(gp_reduce_args *a) {
    return reduce::dispatch<SinglePassTuned, COMBOS_NARROW>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_single_pass_kernel, reduce_single_pass<float, Sum<float>, SinglePassTuning>)
GP_NAMESPACE_END
