// Step 13 - decoupled look-back, reproducible: what determinism="gpu_to_gpu"
// runs for a float cumsum.
// Sources: Merrill and Garland, "Single-pass Parallel Prefix Scan with
// Decoupled Look-back", NVIDIA NVR-2016-002, 2016 (the look-back); Ahrens,
// Demmel and Nguyen, "Algorithms for Efficient Reproducible Floating Point
// Summation", ACM TOMS 46(3), 2020 (the binned accumulator, ../rfa.cuh,
// whose header comment explains why float addition is not associative and
// how fixed exponent bins make it so).
//
// What changed from step 5 (decoupled_lookback): the values scanned are
// accumulator states (3 integer counts of fixed exponent bins, an index and
// flags: 32 bytes) under their exact merge, not floats, and each element is
// its prefix's state rounded once.  A tile's aggregate and inclusive prefix
// are states; the look-back publishes them with a status word written after
// the state (a __threadfence() between), as step 5 does for 8-byte values.
// Step 5's look-back already combines the same totals in the same tree
// every run, but its bits depend on the tile size, the tuning and so on the
// GPU; here element i is bitwise gpuprims.sum(x[:i+1], determinism=
// "gpu_to_gpu") - the same on every GPU, grid (GPUPRIMS_TEST_GRID), chunking
// of a host array (the pipeline carries the state, gp_scan_args.carry_in)
// and on the emulator.  The price: two passes over the data (the deposits
// into bins for a state; then, per element, its exact value as one 128-bit
// integer and one correctly rounded conversion), and a look-back of 32-byte
// states.  What keeps it cheap: the bins are exact integers, so where the
// prefix already holds a step's largest magnitude (all steps but the few
// that raise it), every element's state is the prefix's count plus integer
// counts of the elements at one bin index - no per-element state, no
// renormalization; and large inputs go in chunks of 16 tiles (mid sizes:
// of 8 or 4): a block sums its chunk (pass A), looks back once for the
// chunk's prefix, and each warp then scans its own slice of the chunk with
// a running count (pass B, reading the chunk again; float32 in 64-bit
// integers where the counts fit), with no barrier between the warps
// (reproducible.cuh, scan_rfa_warps; small inputs tile by tile, scan_rfa).
// Integer sums, min and max are exact in any order and run step 5.
// Assumes: the input aligned to its element size.
#include "reproducible.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_decoupled_lookback(gp_scan_args *);

cudaError_t gp_scan_decoupled_lookback_reproducible(gp_scan_args *a) {
    if (!scanrep::float_sum(*a)) return gp_scan_decoupled_lookback(a);
    return scan::dispatch<scanrep::ScanRep>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_decoupled_lookback_reproducible_kernel, scanrep::scan_rfa<scanrep::Shape, float, float>)
GP_NAMESPACE_END
