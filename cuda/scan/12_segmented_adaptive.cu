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
//     addresses.  Where the problems alone fill the GPU and the axis is
//     short, a thread per problem (step 10) is already coalesced and reads
//     each element once with no look-back at all; fewer of them, or a long
//     axis of float sums: the columns kernel (step 14), which also cuts the
//     axis (and sums it in a tree);
//   - along the problems (a C array's rows): rows of whole tiles of the
//     1-D pipelined look-back (step 9), that scan over all of them at once
//     with a look-back tree a row; else many long rows, a warp per row
//     (step 11: no look-back, no barrier); a few very long rows, the 1-D
//     scan once per row; else, and for segments, the flat look-back (step
//     13), whose tiles make the work per block independent of the
//     lengths;
//   - segments of a mean length of 2 ... 8192 (aligned, an element that
//     is its own accumulator): packs of neighbouring segments a warp (up
//     to 512 of the shortest: wide packs), streamed as one run of memory
//     (packs.cuh), with no look-back and a restart paid only in the trips
//     where a segment starts; the long ones cut out and scanned apart in
//     chunks.  Longer means: step 13's 1-D scans on one grid of tiles, a
//     look-back tree a segment.
// The segment lengths live on the device, so the choice never reads them.
// The bits depend on the layout only (each kernel is deterministic, and
// the choice reads nothing but the shape and the strides).
// Assumes: what steps 9-14 assume.
#include <algorithm>

#include "decoupled_lookback.cuh"
#include "packs.cuh"
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

cudaError_t gp_scan_batched_thread(gp_scan_args *);
cudaError_t gp_scan_segmented_warp(gp_scan_args *);
cudaError_t gp_scan_segmented_lookback(gp_scan_args *);
cudaError_t gp_scan_batched_columns(gp_scan_args *);
cudaError_t gp_scan_decoupled_lookback(gp_scan_args *);

namespace {
// The thresholds of the choice.  Measured on an NVIDIA H200 (copy roof
// 4.1 TB/s; float32 inclusive cumsum, bench/bench_scan.py batched, in a
// run whose table was not kept in bench/results; GB/s = bytes read +
// written over the time):
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
//     wins: the axis's length does too.  With float32's tiles of 256 x 8
//     (bench/results/tune-colscan-axes-nvidia-h200-2026-11-24.md, 2^26
//     elements, % of the copy roof, a thread a column against the tiles):
//     n = 8 86.2 / 18.6, 16 88.0 / 35.1, 32 87.8 / 62.5, 64 84.3 / 86.6,
//     128 86.0 / 88.0, 512 77.4 / 80.4.  And a thread adds its column's
//     elements one after another, so the error of its float sums grows
//     with n towards scan_tolerance's 2 log2(n) + 32 (eps x the prefix's
//     sum |x|; python/gpuprims/_numerics.py), where the tiles' tree stays
//     near 1: values in (0, 1] 5.5 / 14.0 / 31.2 at n = 128 / 512 / 4096
//     (bounds 46 / 50 / 56), and past the bound, 83 at n = 512, for the
//     tune program's values (a generator's outputs a power of two apart
//     down a column: correlated).  So a thread a problem only along an
//     axis shorter than THREAD_N = 64, or where the result is exact
//     (integer sums, min, max) at any length;
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
//   along, rows of whole tiles of the 1-D scan (float32: multiples of
//     2048), the 1-D scan over all rows at once against the flat look-back
//     (bench/results/tune-segscan-rows-nvidia-h200-2026-11-23.md, 2^26
//     elements, % of the copy roof): (32768, 2048) 89.9 against 87.0,
//     (8192, 8192) 88.4 against 58.1, (64, 2^20) 80.9 against 61.3,
//     (4, 2^24) 79.5 against 61.4 (and the 1-D scan once a row: 66.4);
//     (2^14, 2^14) 91.7 against a warp a row's 76.8 (bench/results/scan-
//     axis-nvidia-h200-2026-11-23-run5.md).  So rows of whole tiles take it
//     from AT_ONCE_N = one tile on.
//   segments, by their mean length (n / count), packs of neighbouring
//     segments a warp (packs.cuh) against the flat look-back (bench/
//     results/tune-segscan-packs-nvidia-h200-2026-11-23.md run 2, 2^26
//     elements, % of the copy roof for input + output): mean 4 26.5
//     against 40.1, 8 48.3 against 43.6, 16 67.8 against 49.1, 64 76.2
//     against 52.7, 256 76.8 against 54.0, 1024 73.1 against 52.5, 4096
//     72.6 against 54.7, 8192 67.4 against 57.1, 16384 58.5 against 59.9,
//     65536 48.6 against 63.3.  With wide packs of up to 512 segments
//     (bench/results/tune-segscan-packs-nvidia-h200-2026-11-24.md run 4,
//     the offsets counted): means 1, 2, 4, 8: 50.6, 65.0, 74.0, 80.2
//     against 63.3, 55.3, 51.3, 50.2.  So packs from PACK_MIN = 2 to
//     PACK_MAX = 8192, where the element is its own accumulator and the
//     data 16-byte aligned.  Past it, step 13 runs its 1-D scans on one
//     grid of tiles (from a mean of 8192 on: at 8192 the packs read 72.3%
//     against its 70.6, at 16384 61.9 against 74.2; bench/results/tune-
//     segscan-long-nvidia-h200-2026-11-24.md run 3).
struct AdaptiveTuning {
    static constexpr int64_t THREAD_PROBLEMS = int64_t(1) << 18, THREAD_N = 64;
    static constexpr int64_t WARP_N = int64_t(1) << 12, WARP_PROBLEMS = int64_t(1) << 13;
    static constexpr int64_t ROW_N = int64_t(1) << 23;
    static constexpr int64_t AT_ONCE_N = int64_t(1) << 11;
    static constexpr int64_t PACK_MIN = 2, PACK_MAX = 8192;
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

// C rows whose length is a whole number of the 1-D scan's tiles: the 1-D
// scan over all of them in one grid, each row's tiles with a look-back
// tree of their own (lookback::Rows).  The same bits as the 1-D scan of
// each row alone (its large shape).
template <class In, class Op>
struct RowsAtOnce {
    using L = lookback::LookbackWith<lookback::TuningFor<In, typename Op::type, false>, In, Op>;
    static size_t scratch(const gp_scan_args &a) { return L::scratch(a.n, a.batch.outer); }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return L::run(a, d, a.batch.outer);
    }
};

// Whether rows of a.n are whole tiles of RowsAtOnce for the call's types.
bool whole_tiles(const gp_scan_args &a) {
    bool whole = false;
    with_combo(a.op, a.in_t, a.acc_t, [&](auto combo) -> cudaError_t {
        using L = typename RowsAtOnce<typename decltype(combo)::In, typename decltype(combo)::Op>::L;
        whole = a.n % L::TILE == 0;
        return cudaSuccess;
    });
    return whole;
}

// Segments in packs (packs.cuh) where the element is its own accumulator
// and both pointers are 16-byte aligned; the flat look-back otherwise.  The
// scratch covers either: it is asked for before the pointers are known.
template <class In, class Op>
struct Packs {
    using Acc = typename Op::type;
    using Shape = scan::packs::ScanPackTuning;
    static cudaError_t flat(const gp_scan_args &a) {
        gp_scan_args x = a;
        return gp_scan_segmented_lookback(&x);
    }
    static size_t scratch(const gp_scan_args &a) {
        gp_scan_args x = a;
        x.scratch = nullptr;
        x.scratch_bytes = 0;
        gp_scan_segmented_lookback(&x);  // the query
        size_t bytes = x.scratch_bytes;
        if constexpr (scan::packs::types_ok<In, Acc>())
            bytes = std::max(bytes, scan::packs::scratch_bytes<Shape, Acc, Op>(a.n, a.batch.outer,
                                                                               a.batch.offsets,
                                                                               a.batch.longest));
        return bytes;
    }
    static cudaError_t run(const gp_scan_args &a) {
        if constexpr (scan::packs::types_ok<In, Acc>())
            if (scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out))
                return scan::packs::launch<Shape, Acc, Op>(
                    static_cast<const Acc *>(a.in), a.n, a.batch.offsets, a.batch.outer,
                    a.batch.longest, a.inclusive != 0, static_cast<Acc *>(a.out), a.scratch, a.stream);
        return flat(a);
    }
};

enum class Route { Thread, Columns, AtOnce, Warp, Rows, Packs, Flat };

Route route_of(const gp_scan_args &a) {
    using T = AdaptiveTuning;
    const seg::Layout lay = seg::Layout::of(a);
    if (across_problems(a)) {
        const bool exact = a.op != GP_SUM || a.acc_t == GP_INT32 || a.acc_t == GP_INT64;
        return lay.problems >= T::THREAD_PROBLEMS && thread_coalesced(a) && (lay.n < T::THREAD_N || exact)
                   ? Route::Thread
                   : Route::Columns;
    }
    if (lay.offsets != nullptr) {
        const int64_t mean = lay.problems > 0 ? lay.n / lay.problems : 0;
        return mean >= T::PACK_MIN && mean <= T::PACK_MAX ? Route::Packs : Route::Flat;
    }
    if (lay.contiguous_rows()) {
        if (lay.n >= T::AT_ONCE_N && whole_tiles(a)) return Route::AtOnce;
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
        x.batch = gp_batch{1, 1, a.n, 1, 1, nullptr, 0};
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
    case Route::AtOnce:
        return seg::dispatch<RowsAtOnce>(a);
    case Route::Warp:
        return gp_scan_segmented_warp(a);
    case Route::Rows:
        return seg::dispatch<RowByRow>(a);
    case Route::Packs:
        return seg::dispatch<Packs>(a);
    case Route::Flat:
    default:
        return gp_scan_segmented_lookback(a);
    }
}

GP_NAMESPACE_END
