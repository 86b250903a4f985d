// lookback_tuning.cuh - the shapes of the look-back scan and the three
// tunings the library runs, each with the measurement that chose it.  The
// measurements come from bench/tune_scan.cu (float32 inclusive sum, CUDA
// events, L2 overwritten before each run, median of 30, against
// cub::DeviceScan::InclusiveSum and a device-to-device copy of the same
// bytes in the same run); the tables are in bench/results/tune-scan-*.md.
#pragma once

#include <algorithm>
#include <type_traits>

#include "../common.cuh"

GP_NAMESPACE_BEGIN
namespace lookback {

// WARPS warps a block, each with its own ring of STAGES tiles of VPT
// 16-byte vectors a lane; BLOCKS blocks a streaming multiprocessor (the
// grid: persistent warps, and the register budget asked of the compiler);
// BULK: a stage is filled by one bulk copy (sm_90+; before, and on the
// emulator, every lane copies its own vectors); STREAM: evict-first stores
// (the output is not read again); MID_PUBLISH: the warp also publishes the
// totals of what has landed right after it scans a tile (not only before,
// and while it waits for a prefix); HOLD: the tile waits for its prefix in
// shared memory, not in registers (its stage is refilled after the write:
// one tile fewer in flight, the registers of the tile free); FENCED:
// 8-byte totals behind a flag and a __threadfence() (Slots<Acc, false>)
// instead of the fence-free paired words (PairedSlots; lookback.cuh).
// RUN: the lane reads the tile in runs of RUN consecutive vectors (1: the
// tile's vector v * 32 + lane, striped; an odd RUN reads shared memory
// without bank conflicts), so that a warp scans VPT / RUN times a tile, not
// VPT.  OUT (RUN > 1): where the results go - 0 straight from registers to
// global memory (a store instruction then spans RUN times the bytes of a
// striped one), 1 through a tile's buffer of shared memory a warp that the
// warp then stores striped, 2 through that buffer by a bulk copy.
template <int WARPS_, int VPT_, int STAGES_, int BLOCKS_, bool BULK_ = true, bool STREAM_ = true,
          bool MID_PUBLISH_ = true, bool HOLD_ = false, bool FENCED_ = false, int RUN_ = 1, int OUT_ = 0>
struct LookbackShape {
    static constexpr int WARPS = WARPS_, VPT = VPT_, STAGES = STAGES_, BLOCKS = BLOCKS_, RUN = RUN_, OUT = OUT_;
    static constexpr bool BULK = BULK_, STREAM = STREAM_, MID_PUBLISH = MID_PUBLISH_, HOLD = HOLD_, FENCED = FENCED_;
    static constexpr int STAGE_BYTES = VPT * WARP * 16;
    static constexpr int SMEM = WARPS * STAGES * STAGE_BYTES;  // dynamic: the rings
    static constexpr int BARRIERS = WARPS * STAGES;             // static: one a stage
    static_assert(STAGES >= 2 && STAGES <= 8, "a ring of 2 to 8 stages");
    static_assert(VPT % RUN == 0 && (RUN == 1 || !HOLD), "whole runs, read from a tile in registers");
    static_assert(OUT >= 0 && OUT <= 2 && (OUT == 0 || RUN > 1), "an output buffer for runs");
    // A warp's output buffer where the results are Acc (a tile's results;
    // none for OUT 0), and the dynamic shared memory: the rings, then the
    // warps' output buffers.
    template <class In, class Acc>
    __host__ __device__ static constexpr int out_bytes() {
        return OUT > 0 ? VPT * WARP * int(16 / sizeof(In) * sizeof(Acc)) : 0;
    }
    template <class In, class Acc>
    static constexpr int smem() {
        return SMEM + WARPS * out_bytes<In, Acc>();
    }
};

// The warps of a shape's grid resident at once on the device: as many
// tiles as that get a warp each from the first fills (a small scan).
template <class Shape>
inline int64_t resident_warps(const DeviceFacts &d) {
    return int64_t(d.sms) * Shape::BLOCKS * Shape::WARPS;
}
// A shape's persistent grid over `tiles` tiles: BLOCKS an SM, no more
// blocks than the tiles need.
template <class Shape>
inline int64_t persistent_blocks(int64_t tiles, const DeviceFacts &d) {
    return std::min<int64_t>(int64_t(d.sms) * Shape::BLOCKS, ceil_div<int64_t>(tiles, Shape::WARPS));
}

// Large inputs, 4-byte accumulators: 2 warps x 16 vectors a lane (8 KiB
// tiles), two stages filled by bulk copies (32 KiB of shared memory a
// block), 6 blocks an SM (12 warps), evict-first stores, a publication
// point after the scan.  2^28 float32: 0.610 ms on an H200 (0.83 of a
// copy, 1.12x cub::DeviceScan::InclusiveSum) and 0.775 ms on an H100 (0.92
// of a copy, 1.13x); the publication after the scan is worth 3% there
// (0.627 and 0.800 ms without it).  bench/profile_scan.cu splits a warp's
// time at 2^28: about a third waiting for prefixes, a quarter publishing,
// an eighth each scanning, taking a tile and writing.
using Tuning = LookbackShape<2, 16, 2, 6>;

// Inputs whose tiles are few enough for a warp each, 4-byte accumulators:
// 2 x 12 vectors (6 KiB tiles) copied by cp.async (a bulk copy a tile costs
// 5-8% here), 5 blocks an SM, no publication after the scan (the warp has
// no other tile).  2^20 float32: 10.2 us on an H200 and 10.9 us on an
// H100, against CUB's 11.6 and 12.5 us in the same runs.
using SmallTuning = LookbackShape<2, 12, 2, 5, false, true, false>;

// The register budget of the shapes below.  __launch_bounds__(64, BLOCKS)
// caps a thread's registers by the warps a quarter of the SM (a scheduler's
// register file, 16K) must hold: 4 blocks (8 warps, 2 a quarter) give 255
// registers, 5 or 6 blocks (10 or 12 warps, 3 a quarter) 168.  A tile is
// held in registers as VPT x VEC accumulators a lane, VEC = 16 / sizeof(In):
// 8-byte accumulators need twice the registers of 4-byte ones, and a sum
// that widens (4-byte input, 8-byte accumulator) four times.  Registers and
// local memory per thread below: ptxas of CUDA 13.0 for sm_90 (-Xptxas -v,
// "N bytes spill stores"); the 8- or 16-byte stack frame they all have is
// the ring's tile indices (WarpRing), not a spill.
//
// 8-byte totals go through PairedSlots (lookback.cuh): no __threadfence()
// on the look-back's path.  A fence waits for the thread's earlier stores
// - the tile it has just written - so with flag-and-fence slots every
// publication and every total read waited for a tile's stores to drain.
// The shapes are those of the 4-byte tunings' structure (8 KiB tiles: the
// same bytes a tile, so the same number of tiles a byte; two or three
// stages).  bench/tune_scan8.cu times them against the same shapes with
// fenced slots, against shapes of 12 warps an SM (HOLD: the tile waits in
// shared memory, which frees its registers), and against CUB.

// 8-byte inputs and accumulators (float64, int64), large inputs: 2 x 12
// vectors (768 elements, 6 KiB tiles), two stages filled by bulk copies,
// 6 blocks an SM, no publication after the scan; each lane reads the tile
// in runs of 3 vectors (4 warp scans a tile, not 12), and the results go
// out through a warp's 6 KiB buffer by one bulk copy (36 KiB of shared
// memory a block).  2^28 on an H200 (bench/results/tune-scan8-runs-nvidia-
// h200-2026-11-25.md): float64 1.232-1.235 ms (0.82 of a copy, 1.05x
// cub::DeviceScan::InclusiveSum), int64 1.224-1.227 ms (1.05x); the same
// shape striped took 1.325-1.332 and 1.279-1.282.  Runs stored from
// registers took 1.49 ms (a store instruction then spans 1.5 KiB), through
// the buffer by the warp 1.255, by a bulk copy without the evict-first
// hint 1.283; 2 x 9 vectors at 7 or 8 blocks 1.32-1.33.  Before the runs
// (bench/results/tune-scan8-nvidia-h200-2026-11-23-run2.md) the striped
// shape with cp.async copies took 1.382 ms, three stages at 5 blocks
// 1.539, 2 x 16 vectors in three stages at 4 blocks (8 KiB tiles, 240
// registers for float64) 1.419, plain stores instead of evict-first
// 1.362, 4 warps a block at 3 blocks 1.384.
using WideTuning = LookbackShape<2, 12, 2, 6, true, true, false, false, false, 3, 2>;

// 4-byte inputs, 8-byte accumulators (int32 -> int64, float32 -> float64),
// large inputs: 2 x 6 vectors (768 elements, 3 KiB of input a tile), two
// stages filled by bulk copies, 6 blocks an SM, no publication after the
// scan.  2^28 on an H200 (tune-scan8-nvidia-h200-2026-11-23-run2): int32
// -> int64 1.026 ms (0.74 of a copy of its bytes, 1.31x CUB's
// InclusiveScan, 1.12x its run_to_run scan), float32 -> float64 1.046 ms
// (1.31x, 1.13x); 2^24: 1.26x CUB.  2 x 8 vectors in four stages at 4
// blocks (1024 elements, 189 and 225 registers) took 1.158 and 1.180 ms;
// this shape with cp.async copies 1.083 and 1.130; in runs of 3 through a
// bulk copy 0.994 against 0.999 (tune-scan8-runs).
using WideningTuning = LookbackShape<2, 6, 2, 6, true, true, false>;

// Small inputs (every tile a warp of its own), 8-byte accumulators: as
// SmallTuning, tiles of 6 KiB of input copied by cp.async, no publication
// after the scan, 6 blocks an SM so that 2^20 elements are few enough
// tiles (768 elements a tile for 8-byte inputs, 1366 tiles, 1584 warps on
// 132 SMs); 8-byte inputs in runs of 3 out through a bulk copy, as
// WideTuning.  2^20 on an H200 (tune-scan8-runs, tagged slots): float64
// 12.4 us against 12.9 striped (CUB 12.4), int64 12.4 against 12.5-12.6
// (CUB 12.2); tiles of 1152 or 1344 elements (fewer than 1024 tiles) no
// faster.  ptxas: 154 registers for int64, 168 for float64, no spills.
using SmallWideTuning = LookbackShape<2, 12, 2, 6, false, true, false, false, false, 3, 2>;
// The same for 4-byte inputs into 8-byte sums: 2 x 6 vectors (768
// elements, 3 KiB of input a tile): 149 registers for int32 -> int64, 161
// for float32 -> float64, no spills.  Striped, as WideningTuning: runs of
// 3 through a bulk copy were level (tune-scan8-runs: 2^20 11.3 us both).
using SmallWideningTuning = LookbackShape<2, 6, 2, 6, false, true, false>;

// The tuning of an input type and accumulator: Small (every tile a warp of
// its own) or large inputs, for 4-byte accumulators, 8-byte ones of 8-byte
// inputs, and 8-byte ones of 4-byte inputs.
template <class In, class Acc, bool SMALL>
using TuningFor = std::conditional_t<
    sizeof(Acc) == 4, std::conditional_t<SMALL, SmallTuning, Tuning>,
    std::conditional_t<sizeof(In) == sizeof(Acc), std::conditional_t<SMALL, SmallWideTuning, WideTuning>,
                       std::conditional_t<SMALL, SmallWideningTuning, WideningTuning>>>;

// The bytes of input up to which the look-back scan's copies mark their
// lines evict-first in the L2 (async_copy.cuh; LookbackWith's
// EVICT_FIRST_UP_TO): every size for 8-byte accumulators, none for 4-byte
// ones (not measured).  On an H200 (bench/results/tune-scan8-evict-nvidia-
// h200-2026-11-24.md, two alternations each) int64 sums took 3-5% less
// time at 2^22 to 2^26 and 1.3% less at 2^28, int32 -> int64 sums 3-5% less
// at 2^24 to 2^28, float64 1.3% less at 2^28; the same at 2^20.
template <class Acc>
constexpr int64_t evict_first_bytes() {
    return sizeof(Acc) == 8 ? INT64_MAX : 0;
}

}  // namespace lookback
GP_NAMESPACE_END
