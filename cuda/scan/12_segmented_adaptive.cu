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
//     addresses.  Where a row is 2 or 4 columns of 4 bytes or 2 of 8 (a C
//     array of such rows along axis 0, or a stack of them along axis 1)
//     and the input's dtype is the result's, the rows are the elements of
//     the 1-D pipelined look-back (step 9), 16- or 8-byte tuples combined
//     column by column (vector_scan.cuh): one scan of R rows, one total a
//     tile for all the columns in one slot, one look-back tree, where the
//     columns kernel runs a look-back a column and scans its tiles in
//     shared memory between block barriers.  On an H200 the columns
//     kernel reached 37.5% of the copy roof on a (2^24, 4) float32 array
//     along axis 0 and the 1-D scan of the same bytes 81.0% (bench/results/
//     tune-colscan-rows-nvidia-h200-2026-11-23.md).  The tuple route is
//     not yet timed; a rows form timed there, with a look-back a column,
//     ran at 29%, its likely limit the shuffles that moved each column's
//     values - a tuple's warp scan also shuffles each of its values (4x
//     the 1-D scan's shuffles for 4 float32 columns).
//     A stack takes it where each array's rows are whole tiles (all the
//     arrays at once, a look-back tree each, as the rows below), and the
//     input and output must be aligned to a row (the tuples are read and
//     written whole).  Else, where the problems alone fill the GPU, a
//     thread per problem (step 10) is already coalesced and reads each
//     element once with no look-back at all; fewer of them: the columns
//     kernel (step 14), which also cuts the axis;
//   - along the problems (a C array's rows): rows of whole tiles of the
//     1-D pipelined look-back (step 9), that scan over all of them at once
//     with a look-back tree a row; else many long rows, a warp per row
//     (step 11: no look-back, no barrier); a few very long rows, the 1-D
//     scan once per row; else, and for segments, the flat look-back (step
//     13), whose tiles make the work per block independent of the
//     lengths.
// The segment lengths live on the device, so the choice never reads them.
// The bits depend on the layout only (each kernel is deterministic, and
// the choice reads nothing but the shape and the strides) - and, for rows
// of 2 or 4 columns, on whether the input and output are aligned to a row
// (else the columns kernel, whose float sums round differently).
// Assumes: what steps 9-14 assume.
#include <algorithm>
#include <type_traits>

#include "decoupled_lookback.cuh"
#include "segmented.cuh"
#include "vector_scan.cuh"

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
//   along, rows of whole tiles of the 1-D scan (float32: multiples of
//     2048), the 1-D scan over all rows at once against the flat look-back
//     (bench/results/tune-segscan-rows-nvidia-h200-2026-11-23.md, 2^26
//     elements, % of the copy roof): (32768, 2048) 89.9 against 87.0,
//     (8192, 8192) 88.4 against 58.1, (64, 2^20) 80.9 against 61.3,
//     (4, 2^24) 79.5 against 61.4 (and the 1-D scan once a row: 66.4); a
//     warp a row (2^14, 2^14) ran at 79% (above).  So rows of whole tiles
//     take it from AT_ONCE_N = one tile on.
struct AdaptiveTuning {
    static constexpr int64_t THREAD_PROBLEMS = int64_t(1) << 18;
    static constexpr int64_t WARP_N = int64_t(1) << 12, WARP_PROBLEMS = int64_t(1) << 13;
    static constexpr int64_t ROW_N = int64_t(1) << 23;
    static constexpr int64_t AT_ONCE_N = int64_t(1) << 11;
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

// The columns of a C array whose rows are tuples of 2 or 4 columns
// (vector_scan.cuh): the rows are the elements of one 1-D look-back scan,
// the columns combined elementwise; a stack of such arrays (outer > 1,
// each array's rows whole tiles) is scanned at once, a look-back tree an
// array (lookback::Rows).  a.n is the rows of one array.
template <class In, class Op, int C>
struct TupleColumns {
    using V = vec::Tuple<In, C>;
    using VOp = vec::Elementwise<Op, C>;
    using One = lookback::Lookback<V, VOp, lookback::TupleTuningFor>;
    using Stack = lookback::LookbackWith<lookback::TupleTuningFor<V, V, false>, V, VOp>;
    static bool fits(const gp_scan_args &a) { return a.batch.outer == 1 || a.n % Stack::TILE == 0; }
    static bool aligned(const gp_scan_args &a) {
        return reinterpret_cast<uintptr_t>(a.in) % sizeof(V) == 0 && reinterpret_cast<uintptr_t>(a.out) % sizeof(V) == 0;
    }
    static size_t scratch(const gp_scan_args &a) {
        return a.batch.outer == 1 ? One::scratch(a.n) : Stack::scratch(a.n, a.batch.outer);
    }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return a.batch.outer == 1 ? One::run(a, d) : Stack::run(a, d, a.batch.outer);
    }
};

// f(TupleColumns<In, Op, C>{}) for the call's types and C = inner, where a
// row of inner elements is a tuple: the input's type is the accumulator's
// (a sum that widens, int32 into int64, keeps the other routes) and the row
// 2 or 4 4-byte elements or 2 8-byte ones.  False (f not called) where not.
template <class F>
bool with_tuple(const gp_scan_args &a, F &&f) {
    bool found = false;
    with_combo(a.op, a.in_t, a.acc_t, [&](auto combo) -> cudaError_t {
        using In = typename decltype(combo)::In;
        using Op = typename decltype(combo)::Op;
        if constexpr (std::is_same_v<In, typename Op::type>) {
            if (a.batch.inner == 2) found = true, f(TupleColumns<In, Op, 2>{});
            if constexpr (sizeof(In) == 4)
                if (a.batch.inner == 4) found = true, f(TupleColumns<In, Op, 4>{});
        }
        return cudaSuccess;
    });
    return found;
}

// Whether the call is the columns of C arrays of 2 or 4 columns whose rows
// are tuples the 1-D scan takes (with_tuple, TupleColumns::fits): rows
// contiguous (s_inner = 1, s_n = inner), the arrays end to end.  The
// pointers aside (TupleColumns::aligned).
bool tuple_rows(const gp_scan_args &a) {
    const gp_batch &b = a.batch;
    if (b.offsets != nullptr || (b.inner != 2 && b.inner != 4) || b.outer < 1 || a.n < 1) return false;
    if (b.s_inner != 1 || (b.s_n != b.inner && a.n != 1) || (b.outer > 1 && b.s_outer != a.n * b.inner))
        return false;
    bool fits = false;
    with_tuple(a, [&](auto t) { fits = decltype(t)::fits(a); });
    return fits;
}

enum class Route { Tuple, Thread, Columns, AtOnce, Warp, Rows, Flat };

// The route of the call's layout and types (TUPLES: the tuple route
// allowed); the pointers aside.
Route route_of(const gp_scan_args &a, bool tuples = true) {
    using T = AdaptiveTuning;
    const seg::Layout lay = seg::Layout::of(a);
    if (across_problems(a)) {
        if (tuples && tuple_rows(a)) return Route::Tuple;
        return lay.problems >= T::THREAD_PROBLEMS && thread_coalesced(a) ? Route::Thread : Route::Columns;
    }
    if (lay.offsets == nullptr && lay.contiguous_rows()) {
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

cudaError_t run_route(Route r, gp_scan_args *a) {
    switch (r) {
    case Route::Tuple: {
        cudaError_t err = cudaSuccess;
        with_tuple(*a, [&](auto t) {
            using T = decltype(t);
            if (a->scratch == nullptr) a->scratch_bytes = T::scratch(*a);
            else err = T::run(*a);
        });
        return err;
    }
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
    case Route::Flat:
    default:
        return gp_scan_segmented_lookback(a);
    }
}

// Whether the tuple route may read the call's input and write its output
// as tuples: both aligned to a tuple's bytes.
bool tuple_aligned(const gp_scan_args &a) {
    bool aligned = false;
    with_tuple(a, [&](auto t) { aligned = decltype(t)::aligned(a); });
    return aligned;
}
}  // namespace

// The tuple route reads and writes whole tuples, so it runs only where the
// input and the output are aligned to one, else the route the layout gets
// without it; the scratch, asked for before the run's pointers are known,
// covers both.
cudaError_t gp_scan_segmented_adaptive(gp_scan_args *a) {
    const Route r = route_of(*a);
    if (r != Route::Tuple) return run_route(r, a);
    const Route other = route_of(*a, false);
    if (a->scratch == nullptr) {
        GP_TRY(run_route(other, a));
        const size_t theirs = a->scratch_bytes;
        GP_TRY(run_route(Route::Tuple, a));
        a->scratch_bytes = std::max(a->scratch_bytes, theirs);
        return cudaSuccess;
    }
    return run_route(tuple_aligned(*a) ? Route::Tuple : other, a);
}

GP_NAMESPACE_END
