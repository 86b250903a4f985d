// Step 15 - segmented_adaptive: the mapping chosen from the layout, what
// variant="auto" runs for an axis or segments.
// Source: CUB's dispatch layers (CCCL cub/device/dispatch/*: a policy
// chosen per call from the problem's shape); the mappings of steps 10-14.
//
// What changed from step 14: no new kernel - a choice.  Steps 10-14 each
// win somewhere and lose elsewhere, and which one wins is a question of
// which way the memory runs and of how many problems there are against
// how many threads the GPU holds (AdaptiveTuning below, with the
// measurements):
//   - across the problems (an axis with axes after it: a C array's axis 0;
//     an F array's last axis), neighbouring problems are neighbouring
//     addresses.  Where the problems alone fill the GPU, a thread per
//     problem (step 10) is already coalesced and reads each element once
//     with no look-back at all; fewer of them: the columns kernel (step
//     14), which also cuts the axis;
//   - along the problems (a C array's rows): many long rows, a warp per
//     row (step 11: no look-back, no barrier); a few very long rows, the
//     1-D pipelined look-back (step 9) once per row; else, and for
//     segments, the flat look-back (step 13), whose tiles make the work
//     per block independent of the lengths.
// The segment lengths live on the device, so the choice never reads them.
// The bits depend on the layout only (each kernel is deterministic, and
// the choice reads nothing but the shape and the strides).
// Assumes: what steps 9-14 assume.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_batched_thread(gp_scan_args *);
cudaError_t gp_scan_segmented_warp(gp_scan_args *);
cudaError_t gp_scan_segmented_lookback(gp_scan_args *);
cudaError_t gp_scan_batched_columns(gp_scan_args *);
cudaError_t gp_scan_decoupled_lookback(gp_scan_args *);

namespace {
// The thresholds of the choice.  Measured on an NVIDIA H200 (copy roof
// 4.1 TB/s; float32 inclusive cumsum, bench/bench_scan.py --batched,
// /work/gpu-data/bench-scan-batched.log; GB/s = bytes read + written over
// the time):
//   across, many problems: (4, 2^24) axis 0 - 2^24 problems of 4: a thread
//     a problem 3359 GB/s, the columns kernel 1122; (64, 2^20) axis 0:
//     3512 against 3196.  Few: (2^14, 2^14) axis 0, 2^14 problems: 820
//     against 1465 (2^14 threads: 64 blocks for 132 SMs).  So a thread a
//     problem from THREAD_PROBLEMS = 2^18 (about 132 SMs x 2048 threads:
//     the GPU full) on.  The columns figures are of step 14's general form
//     (any strides); its vector tiles, which contiguous float32 columns
//     take, against a thread a problem (bench/results/tune-colscan-nvidia-
//     h200-2026-11-23.md): (64, 2^20) axis 0 0.146 ms against 0.153, but
//     (4, 2^24) 1.11 ms against 0.159 - the problems alone do not say which
//     wins (the axis's length does too), so the threshold stays;
//   along, long rows: (2^14, 2^14) axis -1, a warp a row 3267 GB/s, the
//     flat look-back 1823; (2^20, 64): 1267 against 2481 (rows of 2 rounds
//     of a warp), (64, 2^20): 83 against 1627 (64 warps).  So a warp a row
//     from WARP_N = 2^12 elements and WARP_PROBLEMS = 2^13 rows (about the
//     warps the GPU holds) on;
//   along, few very long rows: (4, 2^24) axis -1, the flat look-back 2538
//     GB/s, the 1-D scan (step 9) once a row 2813; (64, 2^20): 2544 against
//     967 (bench/results/tune-segscan-nvidia-h200-2026-11-23-early.md, the
//     flat look-back publishing every tile as it lands): a row each from
//     ROW_N = 2^23 on (the crossover between the two, not measured).
struct AdaptiveTuning {
    static constexpr int64_t THREAD_PROBLEMS = int64_t(1) << 18;
    static constexpr int64_t WARP_N = int64_t(1) << 12, WARP_PROBLEMS = int64_t(1) << 13;
    static constexpr int64_t ROW_N = int64_t(1) << 23;
};

bool unit(int64_t s) { return s == 1 || s == -1; }

// Whether neighbouring problems are neighbouring addresses and the elements
// of one problem are not.
bool across_problems(const gp_scan_args &a) {
    const gp_batch &b = a.batch;
    if (b.offsets != nullptr) return false;
    if (b.inner > 1) return true;
    const bool along = a.n == 1 || unit(b.s_n);
    return !along && unit(b.s_outer);
}

// Whether a thread a problem reads a warp's 32 problems as 32 neighbouring
// addresses: consecutive problems are consecutive columns (inner of at
// least a warp) or consecutive rows of an F array.
bool thread_coalesced(const gp_scan_args &a) {
    const gp_batch &b = a.batch;
    return b.inner > 1 ? b.inner >= 32 && unit(b.s_inner) : unit(b.s_outer);
}

enum class Route { Thread, Columns, Warp, Rows, Flat };

Route route_of(const gp_scan_args &a) {
    using T = AdaptiveTuning;
    const seg::Layout lay = seg::Layout::of(a);
    if (across_problems(a))
        return lay.problems >= T::THREAD_PROBLEMS && thread_coalesced(a) ? Route::Thread : Route::Columns;
    if (lay.offsets == nullptr && lay.contiguous_rows()) {
        if (lay.n >= T::ROW_N) return Route::Rows;
        if (lay.n >= T::WARP_N && lay.problems >= T::WARP_PROBLEMS) return Route::Warp;
    }
    return Route::Flat;
}

// Few very long C rows: the 1-D scan once per row (one launch each, in
// stream order, sharing one scratch).
template <class In, class Op>
struct RowByRow {
    using Acc = typename Op::type;
    static gp_scan_args row(const gp_scan_args &a, int64_t r) {
        gp_scan_args x = a;
        x.in = static_cast<const In *>(a.in) + r * a.n;
        x.out = static_cast<Acc *>(a.out) + r * a.n;
        x.batch = gp_batch{1, 1, a.n, 1, 1, nullptr};
        return x;
    }
    static size_t scratch(const gp_scan_args &a) {
        gp_scan_args x = row(a, 0);
        x.scratch = nullptr;
        x.scratch_bytes = 0;
        gp_scan_decoupled_lookback(&x);  // the query: the same combinations as seg::dispatch's
        return x.scratch_bytes;
    }
    static cudaError_t run(const gp_scan_args &a) {
        for (int64_t r = 0; r < a.batch.outer; ++r) {
            gp_scan_args x = row(a, r);
            GP_TRY(gp_scan_decoupled_lookback(&x));
        }
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_segmented_adaptive(gp_scan_args *a) {
    switch (route_of(*a)) {
    case Route::Thread:
        return gp_scan_batched_thread(a);
    case Route::Columns:
        return gp_scan_batched_columns(a);
    case Route::Warp:
        return gp_scan_segmented_warp(a);
    case Route::Rows:
        return seg::dispatch<RowByRow>(a);
    case Route::Flat:
    default:
        return gp_scan_segmented_lookback(a);
    }
}

GP_NAMESPACE_END
