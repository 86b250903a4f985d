// lookback.cuh - the tile-status protocol of the look-back scan: where the
// tile totals are published (Slots, Levels), how a tile publishes its own
// total and the totals of the aligned blocks of tiles it ends
// (publish_totals), and how a tile gathers its prefix from its
// predecessors' totals (look_back).  The part of Merrill and Garland's
// decoupled look-back ("Single-pass Parallel Prefix Scan with Decoupled
// Look-back", NVIDIA NVR-2016-002, 2016) that CUB keeps in
// agent/single_pass_scan_operators.cuh; the tile algorithm that uses it is
// in decoupled_lookback.cuh.
//
// A tile's prefix is always the same expression of the same totals, so the
// result has the same bits every run: write the tile index t in base 32 and
// split [0, t) by its digits into aligned blocks of 32^j tiles (t = 70 =
// 2 * 32 + 6: tiles [0,32), [32,64), then [64,65) ... [69,70)).  The
// blocks of one digit are combined in a fixed tree (a warp reduction: lane
// i holds the i-th block), the digits from the largest blocks down.  The
// total of an aligned block of 32^(j+1) tiles is always the same tree over
// its 32 blocks of 32^j, published by the tile that ends the block, after
// its own total.  So a tile waits only for totals, never for a chain of
// prefixes (which would chain every tile to the one before it), and the
// lanes of a warp fetch a digit's blocks at once: a tile waits about two
// hops (a store seen by another SM's poll) after its predecessors' totals.
#pragma once

#include <cstring>

#include "../common.cuh"

GP_NAMESPACE_BEGIN
namespace lookback {

// What a thread does between two polls of a value another thread will
// store: on the GPU sleep NS nanoseconds (0: poll again at once); on the
// emulator let the other threads of the block run (blocks run one after
// another, so the thread that stores is in the same block or done).
template <int NS>
__device__ inline void spin_pause() {
#ifdef GP_EMULATOR
    __nanosleep(NS);
#else
    if (NS > 0) __nanosleep(NS);
#endif
}

template <class T>
__device__ inline T broadcast0(T v) { return __shfl_sync(FULL_MASK, v, 0); }

// Published values, one per slot: level j holds the totals of the aligned
// blocks of 32^j tiles (level 0: the tiles themselves), one level after
// the other; Levels says where each starts.  For 4-byte values, value and
// "ready" flag travel together in one 64-bit word (one load sees both or
// neither); for wider values (Slots<Acc, false>) the value is stored,
// __threadfence(), then the flag, and readers read the flag,
// __threadfence(), then the value, bypassing L1.  8-byte values have a
// fence-free form too (PairedSlots, below).  A poll is try_get, or its two
// halves apart - peek (the load) and decode (whether it was ready, and the
// value) - for a reader that has other work while the load is in flight.
//
// The flag is the slots' `tag`, not just nonzero: a slot is ready when its
// flag equals the tag of this scan.  A scan on fresh slots clears the
// zeroed part (zeroed_bytes) and uses tag 1.  Slots that outlive a call
// (gp_lookback_cache, gpuprims.h) are not cleared: each call on them takes
// the next tag, so whatever earlier calls left there carries an older tag
// and reads as not yet published - one launch fewer per call.  Only the
// forms with TAGGED_WORDS go there: every 64-bit word they write has its
// flag in its high half, so a slot of one of them left where the other
// now lies still reads as an older tag (the fenced form's untagged values
// could read as a flag).
template <class Acc, bool PACKED = sizeof(Acc) == 4>
struct Slots;

template <class Acc>
struct Slots<Acc, true> {  // value and flag in one 64-bit word
    unsigned long long *word;
    unsigned tag = 1;
    static constexpr bool TAGGED_WORDS = true;  // every word written: flag high, value low
    static size_t bytes(int64_t count) { return size_t(count) * 8; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit Slots(char *p, int64_t, unsigned t = 1) : word(reinterpret_cast<unsigned long long *>(p)), tag(t) {}
    // The slots from slot `by` on (a row's own: Rows::slots_of below).
    __host__ __device__ Slots shifted(int64_t by) const {
        Slots s = *this;
        s.word += by;
        return s;
    }
    __device__ void publish(int64_t i, Acc v) const {
        unsigned bits;
        memcpy(&bits, &v, 4);
        reinterpret_cast<volatile unsigned long long *>(word)[i] = ((unsigned long long)tag << 32) | bits;
    }
    using Raw = unsigned long long;
    __device__ Raw peek(int64_t i) const { return reinterpret_cast<volatile unsigned long long *>(word)[i]; }
    __device__ bool decode(Raw w, int64_t, Acc &v) const {
        const unsigned bits = unsigned(w);
        memcpy(&v, &bits, 4);
        return unsigned(w >> 32) == tag;
    }
    __device__ bool try_get(int64_t i, Acc &v) const { return decode(peek(i), i, v); }  // one poll
};

template <class Acc>
struct Slots<Acc, false> {  // flags, then the values after them
    unsigned *flag;
    Acc *value;
    unsigned tag = 1;
    static constexpr bool TAGGED_WORDS = false;  // its values lie untagged where flags may later lie
    static size_t zeroed_bytes(int64_t count) { return align_up(size_t(count) * sizeof(unsigned)); }
    static size_t bytes(int64_t count) { return zeroed_bytes(count) + size_t(count) * sizeof(Acc); }
    explicit Slots(char *p, int64_t count, unsigned t = 1)
        : flag(reinterpret_cast<unsigned *>(p)), value(reinterpret_cast<Acc *>(p + zeroed_bytes(count))), tag(t) {}
    __host__ __device__ Slots shifted(int64_t by) const {
        Slots s = *this;
        s.flag += by, s.value += by;
        return s;
    }
    __device__ void publish(int64_t i, Acc v) const {
        __stcg(value + i, v);
        __threadfence();
        reinterpret_cast<volatile unsigned *>(flag)[i] = tag;
    }
    using Raw = unsigned;
    __device__ Raw peek(int64_t i) const { return reinterpret_cast<volatile unsigned *>(flag)[i]; }
    __device__ bool decode(Raw f, int64_t i, Acc &v) const {  // the value read only once the flag is seen
        if (f != tag) return false;
        __threadfence();
        v = __ldcg(value + i);
        return true;
    }
    __device__ bool try_get(int64_t i, Acc &v) const { return decode(peek(i), i, v); }  // one poll
};

// 8-byte values without a fence: a slot is two 64-bit words, each a
// "ready" flag (high half) beside half of the value's bits (low half),
// written by one 16-byte store and read by one 16-byte load.  A 64-bit
// word is seen whole or not at all, and a slot is written once a scan (a
// tag), so a reader that sees both flags carry its tag has both halves of
// the value - whatever order the two words arrive in.  CUB's ScanTileState
// does without a fence the same way, with one flag beside the value in a
// 16-byte word (agent/single_pass_scan_operators.cuh), which leans on the
// 16-byte access being seen whole; here each half carries its own flag.
// A __threadfence() orders the thread's earlier stores too (the tile just
// written): in the fenced form each publication and each value read waits
// for them.
template <class Acc>
struct PairedSlots {
    static_assert(sizeof(Acc) == 8, "PairedSlots holds 8-byte values");
    unsigned long long *word;  // two a slot
    unsigned tag = 1;
    static constexpr bool TAGGED_WORDS = true;
    static size_t bytes(int64_t count) { return size_t(count) * 16; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit PairedSlots(char *p, int64_t, unsigned t = 1) : word(reinterpret_cast<unsigned long long *>(p)), tag(t) {}
    __host__ __device__ PairedSlots shifted(int64_t by) const {
        PairedSlots s = *this;
        s.word += 2 * by;
        return s;
    }
    __device__ void publish(int64_t i, Acc v) const {
        unsigned long long bits;
        memcpy(&bits, &v, 8);
        const unsigned long long flag = (unsigned long long)tag << 32;
        const unsigned long long lo = flag | (bits & 0xffffffffull), hi = flag | (bits >> 32);
        unsigned long long *w = word + 2 * i;
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
        asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(lo), "l"(hi) : "memory");
#else
        reinterpret_cast<volatile unsigned long long *>(w)[0] = lo;
        reinterpret_cast<volatile unsigned long long *>(w)[1] = hi;
#endif
    }
    struct Raw {
        unsigned long long lo, hi;
    };
    __device__ Raw peek(int64_t i) const {
        const unsigned long long *w = word + 2 * i;
        Raw r;
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(r.lo), "=l"(r.hi) : "l"(w) : "memory");
#else
        r.lo = reinterpret_cast<const volatile unsigned long long *>(w)[0];
        r.hi = reinterpret_cast<const volatile unsigned long long *>(w)[1];
#endif
        return r;
    }
    __device__ bool decode(Raw r, int64_t, Acc &v) const {
        const unsigned long long bits = (r.hi << 32) | (r.lo & 0xffffffffull);
        memcpy(&v, &bits, 8);
        return unsigned(r.lo >> 32) == tag && unsigned(r.hi >> 32) == tag;
    }
    __device__ bool try_get(int64_t i, Acc &v) const { return decode(peek(i), i, v); }  // one poll
};

constexpr int LEVELS = 7;  // base-32 digits of a tile index (< 2^32)

__device__ inline int digit(int64_t tile, int j) { return int(tile >> (5 * j)) & 31; }

struct Levels {
    int64_t start[LEVELS];  // first slot of each level
    // The levels of `tiles` tiles; `count`: the slots of all of them.
    static Levels of(int64_t tiles, int64_t &count) {
        Levels l{};
        count = 0;
        for (int j = 0; j < LEVELS; ++j) {
            l.start[j] = count;
            count += (tiles >> (5 * j)) + 1;
        }
        return l;
    }
    __device__ int64_t slot(int j, int64_t block) const { return start[j] + block; }
};

// Rows of equal length laid end to end, each a whole number of tiles,
// scanned in one grid as independent 1-D scans: tile t is tile `local` of
// row t / per_row, whose totals have slots of their own (`slots` of them a
// row, the levels of per_row tiles, one row after the other), so a row's
// look-back never reaches into the row before and each row's prefixes are
// the same tree as a 1-D scan of that row alone.  A 1-D scan is one row
// (per_row = all the tiles).
struct Rows {
    unsigned per_row;  // tiles a row
    int64_t slots;     // slots a row
    __device__ unsigned row(unsigned t) const { return t / per_row; }
    __device__ unsigned local(unsigned t) const { return t - row(t) * per_row; }
    template <class S>
    __device__ S slots_of(const S &all, unsigned t) const { return all.shifted(int64_t(row(t)) * slots); }
};

// Publish the tile's total, and the totals of the blocks it ends.  Digit j
// of the tile index in base 32 says how many aligned blocks of 32^j tiles
// lie between the start of the tile's block of 32^(j+1) and the tile's own
// block of 32^j.  Where the low digits are 31, those blocks with the
// tile's own make whole blocks of 32^(j+1) that this tile ends: it
// publishes their totals too, from the 31 blocks before its own (lane i
// fetches the i-th, lane 31 holds the tile's own block) reduced in a fixed
// tree - so what a tile publishes waits only for totals, never for a
// prefix.  It waits for them here, polling at once (spin_pause<0>), since
// the readers of a block's total wait for it.  The whole warp calls it.
// LV: where the slots of each level lie (Levels, or any type with the same
// slot(j, block)).
template <class S, class Op, class LV>
__device__ inline void publish_totals(int64_t tile, typename Op::type total, const S &slots, const LV &lv, Op op,
                                      int lane) {
    using Acc = typename Op::type;
    if (lane == 0) slots.publish(lv.slot(0, tile), total);
    Acc own = total;  // the block of 32^j this tile ends
    for (int j = 0; j < LEVELS && digit(tile, j) == 31; ++j) {  // uniform over the warp
        const int64_t b0 = (tile >> (5 * j)) - 31;
        Acc v = Op::identity();
        bool ok = lane >= 31;
        while (!__all_sync(FULL_MASK, ok = ok || slots.try_get(lv.slot(j, b0 + lane), v))) spin_pause<0>();
        own = broadcast0(warp_reduce(lane < 31 ? v : own, op));
        if (lane == 0) slots.publish(lv.slot(j + 1, tile >> (5 * (j + 1))), own);
    }
}

// The prefix of the tile (the identity for tile 0): for each digit, lane i
// < digit fetches the i-th block of that digit, the warp reduces them in a
// fixed tree, and the digits' parts are combined from the largest blocks
// down - always the same expression of the same totals.  The whole warp
// polls every block it needs at once, and calls idle() (warp-uniform: the
// caller's prefix callback, which publishes what has landed meanwhile)
// between rounds.  The whole warp calls it.  L: the levels polled, for
// callers whose tiles are known to be fewer than 32^L (the tile's digits
// from L on are 0).
template <int L = LEVELS, class S, class LV, class Op, class Idle>
__device__ inline typename Op::type look_back(int64_t tile, const S &slots, const LV &lv, Op op, int lane,
                                              Idle idle) {
    static_assert(L >= 1 && L <= LEVELS, "levels polled");
    using Acc = typename Op::type;
    Acc got[L];
    bool ok[L];
#pragma unroll
    for (int k = 0; k < L; ++k) ok[k] = lane >= digit(tile, k);
    for (;;) {
        bool all = true;
#pragma unroll
        for (int k = 0; k < L; ++k) {
            if (!ok[k]) ok[k] = slots.try_get(lv.slot(k, (tile >> (5 * k)) - digit(tile, k) + lane), got[k]);
            all = all && ok[k];
        }
        if (__all_sync(FULL_MASK, all)) break;
        idle();
    }
    Acc p = Op::identity();
    bool seen = false;
#pragma unroll
    for (int k = L - 1; k >= 0; --k) {
        const int d = digit(tile, k);
        if (d == 0) continue;
        const Acc part = broadcast0(warp_reduce(lane < d ? got[k] : Op::identity(), op));
        p = seen ? op(p, part) : part;
        seen = true;
    }
    return p;
}

}  // namespace lookback
GP_NAMESPACE_END
