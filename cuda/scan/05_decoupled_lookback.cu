// Step 9 - single-pass scan with decoupled look-back (Merrill and Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVIDIA
// NVR-2016-002, 2016; the algorithm of CUB's DeviceScan), made
// deterministic with a fixed tree of tile totals, and pipelined: what
// `auto` runs.
//
// What changed from step 8: one pass, and the tile is a warp's.  A warp
// scans its tile in registers, publishes the tile's total, looks back at
// what its predecessors published for the prefix of the tile, and writes
// the tile.  Input read once, output written once: the traffic of a copy,
// where step 8 read the input twice.  No block barrier: a warp waiting on a
// predecessor stalls only itself.
//
// The wait is what costs: a warp that holds its tile in registers while it
// waits for its predecessors' totals has no loads in flight.  So the warps
// are persistent and pipelined: each keeps a ring of tiles in shared memory
// that fills while it scans (one bulk copy a tile on sm_90, else cp.async by
// every lane: the loads need no registers while they fly), waits on and
// writes the oldest, and takes its tiles one by one, in order, from an
// atomic counter - so every tile a warp waits on was taken by a warp that
// is running or done.  A warp publishes the total of every landed tile of
// its ring as soon as it can: before it scans a tile, right after, and
// while it waits for a prefix.  A total published only when its warp got
// to the tile would wait for that warp's previous look-back, and chain the
// warps.  Deadlock-free: the smallest unpublished tile has landed or is
// landing, and its warp only ever waits for smaller, published ones.
//
// The tile scan: the tile is VPT rounds of 32 x VEC consecutive elements;
// in round v lane l holds the 16-byte vector v * 32 + l (the warp's loads
// are coalesced; each lane copies its own vectors into shared memory and
// reads them back, so no barrier), scans its VEC elements, and the 32 lane
// totals are scanned with __shfl_up_sync; a carry takes the round totals
// from round to round.  8-byte elements are read in runs instead: a
// 16-byte vector holds two, so the warp would run 12 such scans a tile of
// 8-byte values (two shuffles a step).  Each lane reads 3 consecutive
// vectors from shared memory (a run of odd length: the lanes' reads fall in
// different banks) and scans their 6 elements in order, and the warp scans
// once a run - 4 times a tile.  A lane's results are then not one vector a
// round, and a store instruction would span 1.5 KiB, so they go through a
// tile buffer in shared memory, from which one bulk copy writes the tile.
//
// Deterministic: CUB's look-back adds whatever its predecessors have
// published when it looks (totals, or inclusive prefixes where ready), so
// the order of the additions - and for floats the bits - changes from run
// to run.  Here a tile's prefix is always the same tree of totals, built
// from the base-32 digits of the tile's index (lookback.cuh).
//
// Small inputs, where every tile gets a warp of its own: a warp's tile is
// the one of its place in the grid (blocks start in order, as CUB
// assumes), so no counter is needed - and no zeroing either: the core
// keeps look-back slots per host thread that outlive the call, and each
// scan publishes its totals tagged with the next tag, so whatever earlier
// scans left there reads as not yet published (lookback.cuh).  Otherwise
// the counter and the slots are zeroed first, and the scan is launched to
// start while the zeroing runs (programmatic dependent launch, sm_90+): a
// warp that knows its tile loads it before it waits for the zeroing.
//
// The code: lookback.cuh (the tile-status protocol: publishing and
// gathering totals), decoupled_lookback.cuh (a warp's ring, the tile scan,
// the kernel and its launch), lookback_tuning.cuh (the shapes, with their
// measurements).  This file instantiates them for the library.
#include "decoupled_lookback.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_decoupled_lookback(gp_scan_args *a) {
    return scan::dispatch<lookback::Lookback>(a);
}

// The main kernel (float32 sum) for gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_decoupled_lookback_kernel, lookback::scan_lookback<lookback::Tuning, float, Sum<float>>)
size_t gp_scan_decoupled_lookback_smem(int) { return lookback::Tuning::SMEM; }
GP_NAMESPACE_END
