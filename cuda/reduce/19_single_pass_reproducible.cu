// Step 19 - single pass, reproducible: what determinism="gpu_to_gpu" runs
// for a float sum (GP_REPRODUCIBLE in the registry).
// Sources: Ahrens, Demmel and Nguyen, "Algorithms for Efficient Reproducible
// Floating Point Summation", ACM TOMS 46(3), 2020 (binned summation; the
// accumulator is ../rfa.cuh, whose header comment explains why float
// addition is not associative and how fixed exponent bins make it so).
//
// What changed from step 9 (single_pass): each thread sums into a
// reproducible accumulator - 3 integer counts of fixed exponent bins -
// instead of a float, and blocks merge those states (exact integer
// additions) instead of adding floats; the last block rounds the merged
// state once.  The grid-stride loop, its 16-byte loads and the ticket are
// step 9's.  Per batch of 4 vectors (16 floats, 8 doubles): one compare per
// element with the accumulator's limit, and where one fails (a new largest
// magnitude, Inf, NaN: rare after the first batches) one widening to the
// batch's largest finite value, Inf and NaN kept as flags (admit() in
// reproducible.cuh; every loop over a batch is unrolled, so the batch stays
// in registers: a loop indexing it at run time would make ptxas store it
// to local memory, as many bytes as the loads bring, every batch); then
// every element deposits without a branch: seven
// float operations (two are fused multiply-adds that apply the bins'
// scale) and three integer additions, which ptxas pairs into three-input
// adds (about 12 instructions per float32 element in all, sm_90).  While a
// batch deposits, the loads of the next one are in flight (RepTuning's
// PREFETCH): the deposits cost more time than the loads take to issue, and
// without it a thread would have no bytes in flight while it computes.
// 64 registers, hence 4 blocks per SM (RepTuning).
// Why: step 9's bits depend on the order of its additions, which depends
// on the SM count (the grid) and on the tuning; here the result is a
// function of the multiset of inputs alone: the same bits on every GPU, for
// every grid (GPUPRIMS_TEST_GRID overrides it in the tests), on the
// emulator, and for any chunking of the array (the states merge exactly).
// Also more accurate: |error| <= n 2^-42 max|x| + one rounding (float32).
// Integer sums, min and max are exact in any order and run step 9.
// Assumes: the input aligned to its element size (as step 9).
#include "reproducible.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_reduce_single_pass_reproducible(gp_reduce_args *a) {
    if (!reduce::rep::float_sum(*a)) return reduce::dispatch<SinglePassTuned>(a);
    return reduce::dispatch<reduce::rep::SinglePassRep>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_single_pass_reproducible_kernel,
             reduce::rep::reduce_rfa<float, float, reduce::rep::RepTuning>)
GP_NAMESPACE_END
