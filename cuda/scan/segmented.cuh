// segmented.cuh - what the batched and segmented scans share (steps 10 on,
// 07_batched_thread.cu ...): the problems of a call (Layout, Problem), the
// dispatch from dtype codes with the scratch sized from the whole layout,
// the segmented operator and its published slots (Flagged, SegOp,
// FlaggedSlots) for the flat look-back, and a look-back run by each lane
// for a column of its own (lane_publish_totals, lane_look_back, and
// LevelItems for a block that gathers many columns' at once) for the
// columns kernel.
//
// The layout is gp_batch's (cuda/gpuprims.h).  Batched: problem p = o *
// inner + i reads in[o*s_outer + k*s_n + i*s_inner] and writes
// out[(o*n + k)*inner + i] for k < n; consecutive p are consecutive i, so
// consecutive problems are consecutive addresses where the axis is not the
// last (s_inner == 1).  Segmented: problem p is in[offsets[p] ..
// offsets[p+1]) of a contiguous input, written in place in out.
#pragma once

#include <algorithm>
#include <cstring>

#include "lookback.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN
namespace seg {

// ------------------------------------------------------------ the problems
// Where problem p lies: element k is in[in0 + k*in_step], its result
// out[out0 + k*out_step], for k < len.
struct Problem {
    int64_t in0, in_step, out0, out_step, len;
};

struct Layout {
    int64_t problems;  // outer*inner (batched) or outer (segmented)
    int64_t n;         // batched: each problem's length; segmented: all the elements
    int64_t inner, s_outer, s_n, s_inner;
    const int64_t *offsets;  // NULL: batched

    static Layout of(const gp_scan_args &a) {
        const gp_batch &b = a.batch;
        return {b.offsets ? b.outer : b.outer * b.inner, a.n, b.inner, b.s_outer, b.s_n, b.s_inner, b.offsets};
    }
    // Every element of the call (inputs and outputs alike).
    __host__ __device__ int64_t elements() const { return offsets ? n : problems * n; }
    __device__ Problem problem(int64_t p) const {
        if (offsets != nullptr) {
            const int64_t b = offsets[p];
            return {b, 1, b, 1, offsets[p + 1] - b};
        }
        const int64_t o = p / inner, i = p - o * inner;
        return {o * s_outer + i * s_inner, s_n, o * n * inner + i, inner, n};
    }
    // The rows of a C-contiguous array along its last axis: problem p is
    // elements p*n ... p*n + n-1 of a contiguous input (and output).
    __host__ __device__ bool contiguous_rows() const {
        return offsets == nullptr && (inner == 1 && (s_n == 1 || n == 1) && (s_outer == n || problems == 1));
    }
};

// Impl<In, Op> provides
//   static size_t scratch(const gp_scan_args&);   bytes of device scratch
//   static cudaError_t run(const gp_scan_args&);  enqueue the work
// Neither is called for a call without elements (nothing to write).
template <template <class, class> class Impl>
cudaError_t dispatch(gp_scan_args *a) {
    const bool empty = Layout::of(*a).elements() == 0;
    return with_combo(a->op, a->in_t, a->acc_t, [a, empty](auto combo) -> cudaError_t {
        using In = typename decltype(combo)::In;
        using Op = typename decltype(combo)::Op;
        if (a->scratch == nullptr) {
            a->scratch_bytes = empty ? 0 : Impl<In, Op>::scratch(*a);
            return cudaSuccess;
        }
        return empty ? cudaSuccess : Impl<In, Op>::run(*a);
    });
}

// A grid of `want` blocks for a loop over work items, capped (the kernels
// loop with a grid stride, so a grid never passes gridDim.x's limit nor
// needs y or z).
inline unsigned grid_for(int64_t want, int64_t cap = int64_t(1) << 20) {
    return unsigned(std::max<int64_t>(1, std::min(want, cap)));
}

// -------------------------------------------------- the segmented operator
// A value with a flag "a segment starts in here" (Sengupta, Harris, Zhang
// and Owens, "Scan primitives for GPU computing", 2007): combining a run
// with a later run that holds a segment start gives the later run alone,
// so a scan of flagged values restarts at every head, and the operator is
// associative: the look-back's fixed tree combines flagged tile totals as
// it combines plain ones.
template <class T>
struct Flagged {
    T value;
    unsigned head;
};

// The warp shuffles of a Flagged value, found by argument-dependent lookup
// from warp.cuh's and lookback.cuh's collectives: the two members move
// apart (a shuffle moves one built-in value).
template <class T>
__device__ __forceinline__ Flagged<T> __shfl_sync(unsigned mask, Flagged<T> v, int src, int width = 32) {
    return {::__shfl_sync(mask, v.value, src, width), ::__shfl_sync(mask, v.head, src, width)};
}
template <class T>
__device__ __forceinline__ Flagged<T> __shfl_up_sync(unsigned mask, Flagged<T> v, unsigned delta, int width = 32) {
    return {::__shfl_up_sync(mask, v.value, delta, width), ::__shfl_up_sync(mask, v.head, delta, width)};
}
template <class T>
__device__ __forceinline__ Flagged<T> __shfl_down_sync(unsigned mask, Flagged<T> v, unsigned delta, int width = 32) {
    return {::__shfl_down_sync(mask, v.value, delta, width), ::__shfl_down_sync(mask, v.head, delta, width)};
}

template <class Op>
struct SegOp {
    using T = typename Op::type;
    using type = Flagged<T>;
    __host__ __device__ static constexpr type identity() { return {Op::identity(), 0u}; }
    __device__ type operator()(type a, type b) const {
        return b.head ? b : type{Op()(a.value, b.value), a.head};
    }
};

// The published tile totals of the flat look-back (the slots of
// lookback.cuh's protocol, for Flagged values): for 4-byte values, value,
// head and "ready" in one 64-bit word; for 8-byte values a status word
// (bit 0 ready, bit 1 head) written after the value and a fence.
template <class T, bool PACKED = sizeof(T) == 4>
struct FlaggedSlots;

template <class T>
struct FlaggedSlots<T, true> {
    unsigned long long *word;
    static size_t bytes(int64_t count) { return size_t(count) * 8; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit FlaggedSlots(char *p, int64_t) : word(reinterpret_cast<unsigned long long *>(p)) {}
    __device__ void publish(int64_t i, Flagged<T> v) const {
        unsigned bits;
        memcpy(&bits, &v.value, 4);
        reinterpret_cast<volatile unsigned long long *>(word)[i] =
            (static_cast<unsigned long long>(1u | (v.head ? 2u : 0u)) << 32) | bits;
    }
    __device__ bool try_get(int64_t i, Flagged<T> &v) const {
        const unsigned long long w = reinterpret_cast<volatile unsigned long long *>(word)[i];
        const unsigned bits = unsigned(w);
        memcpy(&v.value, &bits, 4);
        v.head = unsigned(w >> 33) & 1u;
        return ((w >> 32) & 1u) != 0;
    }
};

template <class T>
struct FlaggedSlots<T, false> {
    unsigned *status;
    T *value;
    static size_t zeroed_bytes(int64_t count) { return align_up(size_t(count) * sizeof(unsigned)); }
    static size_t bytes(int64_t count) { return zeroed_bytes(count) + size_t(count) * sizeof(T); }
    explicit FlaggedSlots(char *p, int64_t count)
        : status(reinterpret_cast<unsigned *>(p)), value(reinterpret_cast<T *>(p + zeroed_bytes(count))) {}
    __device__ void publish(int64_t i, Flagged<T> v) const {
        __stcg(value + i, v.value);
        __threadfence();
        reinterpret_cast<volatile unsigned *>(status)[i] = 1u | (v.head ? 2u : 0u);
    }
    __device__ bool try_get(int64_t i, Flagged<T> &v) const {
        const unsigned s = reinterpret_cast<volatile unsigned *>(status)[i];
        if (s == 0u) return false;
        __threadfence();
        v.value = __ldcg(value + i);
        v.head = (s >> 1) & 1u;
        return true;
    }
};

// lookback.cuh's publish_totals and look_back for the segmented operator,
// which is not commutative: the same tree of the same totals, but a warp's
// values are combined in lane order (an inclusive scan, read at lane 31),
// where lookback.cuh's warp_reduce pairs lanes 16 apart first.
template <class T, class Op>
__device__ __forceinline__ T ordered_reduce(T v, Op op) {
    return __shfl_sync(FULL_MASK, scan::warp_inclusive_scan(v, op), WARP - 1);
}

template <class S, class Op>
__device__ __forceinline__ void publish_totals(int64_t tile, typename Op::type total, const S &slots, const lookback::Levels &lv,
                                      Op op, int lane) {
    using Acc = typename Op::type;
    if (lane == 0) slots.publish(lv.slot(0, tile), total);
    Acc own = total;
#pragma unroll
    for (int j = 0; j + 1 < lookback::LEVELS; ++j) {  // unrolled: lv's levels indexed by constants
        if (lookback::digit(tile, j) != 31) break;
        const int64_t b0 = (tile >> (5 * j)) - 31;
        Acc v = Op::identity();
        bool ok = lane >= 31;
        while (!__all_sync(FULL_MASK, ok = ok || slots.try_get(lv.slot(j, b0 + lane), v))) lookback::spin_pause<0>();
        own = ordered_reduce(lane < 31 ? v : own, op);
        if (lane == 0) slots.publish(lv.slot(j + 1, tile >> (5 * (j + 1))), own);
    }
}

// idle(): what the warp does between two rounds of polls (warp-uniform).
template <class S, class Op, class Idle>
__device__ __forceinline__ typename Op::type look_back(int64_t tile, const S &slots, const lookback::Levels &lv, Op op,
                                              int lane, Idle idle) {
    using Acc = typename Op::type;
    // The levels' values, and their flags as bits (ok: fetched or not
    // needed; head): bits in one register, where an array of flags would
    // take a register each.
    decltype(Acc::value) got[lookback::LEVELS];
    unsigned ok = 0, head = 0;
#pragma unroll
    for (int k = 0; k < lookback::LEVELS; ++k) ok |= unsigned(lane >= lookback::digit(tile, k)) << k;
    for (;;) {
#pragma unroll
        for (int k = 0; k < lookback::LEVELS; ++k) {
            Acc g;
            if (!((ok >> k) & 1u) && slots.try_get(lv.slot(k, (tile >> (5 * k)) - lookback::digit(tile, k) + lane), g))
                got[k] = g.value, ok |= 1u << k, head |= (g.head ? 1u : 0u) << k;
        }
        if (__all_sync(FULL_MASK, ok == (1u << lookback::LEVELS) - 1u)) break;
        idle();
    }
    Acc p = Op::identity();
    bool seen = false;
#pragma unroll
    for (int k = lookback::LEVELS - 1; k >= 0; --k) {
        const int d = lookback::digit(tile, k);
        if (d == 0) continue;
        const Acc part = ordered_reduce(lane < d ? Acc{got[k], (head >> k) & 1u} : Op::identity(), op);
        p = seen ? op(p, part) : part;
        seen = true;
    }
    return p;
}

template <class S, class Op>
__device__ __forceinline__ typename Op::type look_back(int64_t tile, const S &slots, const lookback::Levels &lv, Op op,
                                              int lane) {
    return seg::look_back(tile, slots, lv, op, lane, [] { lookback::spin_pause<32>(); });
}

// ---------------------------------------------- a look-back for each lane
// lookback.cuh's deterministic tree, run by every lane alone for a column of
// its own (the columns kernel's lanes each scan a different column, so each
// has its own chain of tiles down the axis), with one shortcut that keeps
// the bits: a tile's prefix is the fold, from the largest blocks down, of
// the blocks of the base-32 digits of its index c.  Let j be c's lowest
// non-zero digit and c' = c with that digit cleared: the blocks above
// level j are those of c', so prefix(c) = prefix(c') op (the digit's
// blocks) - the same expression.  Tiles whose index is a multiple of 32
// publish their prefix, so a tile reads one prefix and at most 31 totals
// (rather than up to 31 at every level); it waits for a tile at most 31
// chunks up, which waited the same way.
//
// The slots of one column q: the level totals (lookback::Levels of the
// chunks), then the prefixes of the chunks c = 32m (slot m); slot s of
// column q at s * columns + q, so the lanes of a warp (neighbouring
// columns) read and write neighbouring words.
// Slots a lane polls at once: 8 4-byte values, 4 wider ones (registers).
template <class Acc>
__host__ __device__ constexpr int group_of() { return sizeof(Acc) > 4 ? 4 : 8; }

template <class S>
struct ColumnSlots {
    S slots;
    int64_t chunks;
    int64_t levels_count;  // slots of the level totals, per column
    int64_t columns;
    // Level j's first slot (lookback::Levels::of, computed: a table indexed
    // at run time would sit in local memory).
    __device__ int64_t level_start(int j) const {
        int64_t start = 0;
        for (int i = 0; i < j; ++i) start += (chunks >> (5 * i)) + 1;
        return start;
    }
    __device__ int64_t total(int j, int64_t block, int64_t q) const { return (level_start(j) + block) * columns + q; }
    __device__ int64_t prefix(int64_t chunk, int64_t q) const { return (levels_count + (chunk >> 5)) * columns + q; }
    // Slots of `chunks` chunks, per column.
    static int64_t count(int64_t chunks, int64_t &levels_count) {
        lookback::Levels::of(chunks, levels_count);
        return levels_count + (chunks >> 5) + 1;
    }
};

// The fold, left to right, of `count` slots of column q: item i is the
// prefix of chunk `pre` where i == 0 and pre >= 0, else the level-j total of
// block b0 + i (- 1 after a prefix); each waited for.
template <class CS, class Op>
__device__ __forceinline__ typename Op::type lane_fold(const CS &cs, int64_t pre, int j, int64_t b0, int count,
                                                       int64_t q, Op op) {
    using Acc = typename Op::type;
    constexpr int GROUP = group_of<Acc>();
    const int shift = pre >= 0 ? 1 : 0;
    Acc acc = Op::identity();
    for (int g = 0; g < count; g += GROUP) {
        Acc got[GROUP];
        bool ok[GROUP];
#pragma unroll
        for (int i = 0; i < GROUP; ++i) ok[i] = g + i >= count;
        for (;;) {
            bool all = true;
#pragma unroll
            for (int i = 0; i < GROUP; ++i) {
                if (!ok[i]) {
                    const int item = g + i;
                    const int64_t slot = item < shift ? cs.prefix(pre, q) : cs.total(j, b0 + item - shift, q);
                    ok[i] = cs.slots.try_get(slot, got[i]);
                }
                all = all && ok[i];
            }
            if (all) break;
            lookback::spin_pause<32>();
        }
#pragma unroll
        for (int i = 0; i < GROUP; ++i)
            if (g + i < count) acc = (g + i == 0) ? got[i] : op(acc, got[i]);
    }
    return acc;
}

// Publish chunk c's total for column q, and the totals of the aligned
// blocks of 32^(j+1) chunks it ends (their 31 other blocks folded left to
// right, then its own).
template <class CS, class Op>
__device__ __forceinline__ void lane_publish_totals(const CS &cs, int64_t c, typename Op::type total, int64_t q,
                                                    Op op) {
    cs.slots.publish(cs.total(0, c, q), total);
    typename Op::type own = total;
    for (int j = 0; j + 1 < lookback::LEVELS && lookback::digit(c, j) == 31; ++j) {
        own = op(lane_fold(cs, -1, j, (c >> (5 * j)) - 31, 31, q, op), own);
        cs.slots.publish(cs.total(j + 1, c >> (5 * (j + 1)), q), own);
    }
}

// The items of chunk c's prefix from level totals alone, in the order
// lane_look_back folds them: for each base-32 digit d_k of c, the largest
// blocks first, the d_k level-k totals of blocks (c >> 5k) - d_k ...
// (c >> 5k) - 1, left to right.  lane_look_back folds the same totals,
// some of them through a prefix published at a multiple of 32 (the fold
// of the items before), so both give the same bits; these wait only for
// totals, never for another chunk's look-back.
struct LevelItems {
    int digits[lookback::LEVELS];
    int64_t first[lookback::LEVELS];  // the slot row of level k's first item
    int count = 0;
    template <class CS>
    __device__ LevelItems(const CS &cs, int64_t c) {
#pragma unroll
        for (int k = 0; k < lookback::LEVELS; ++k) {
            count += digits[k] = lookback::digit(c, k);
            first[k] = cs.level_start(k) + (c >> (5 * k)) - digits[k];
        }
    }
    // Item i's slot in column q of `columns`.
    __device__ int64_t slot(int64_t columns, int i, int64_t q) const {
#pragma unroll
        for (int k = lookback::LEVELS - 1; k > 0; --k) {
            if (i < digits[k]) return (first[k] + i) * columns + q;
            i -= digits[k];
        }
        return (first[0] + i) * columns + q;
    }
};

// The prefix of chunk c > 0 in column q; published where c is a multiple
// of 32.
template <class CS, class Op>
__device__ __forceinline__ typename Op::type lane_look_back(const CS &cs, int64_t c, int64_t q, Op op) {
    int j = 0;
    while (lookback::digit(c, j) == 0) ++j;
    const int d = lookback::digit(c, j);
    const int64_t up = c - (int64_t(d) << (5 * j));  // c with digit j cleared: a multiple of 32
    const auto p = lane_fold(cs, up > 0 ? up : -1, j, (c >> (5 * j)) - d, d + (up > 0), q, op);
    if ((c & 31) == 0) cs.slots.publish(cs.prefix(c, q), p);
    return p;
}

}  // namespace seg
GP_NAMESPACE_END
