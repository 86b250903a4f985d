// Step 9 - decoupled look-back (Merrill & Garland 2016), made
// deterministic with a fixed tree of tile totals, and pipelined: what
// `auto` runs.  Evidence for every choice below: bench/results/tune-scan-*.
//
// What changed from step 8: one pass, and the tile is a warp's.  A warp
// scans its tile in registers, publishes the tile's total, looks back at
// what its predecessors published for the prefix of the tile, and writes
// the tile.  Input read once, output written once: the traffic of a copy,
// where step 8 read the input twice.  No block barrier: a warp waiting on a
// predecessor stalls only itself.
//
// The wait is what costs.  The same tile pass without the look-back runs at
// 0.94-0.98 of a copy; a warp that holds its tile in registers while it
// waits for its predecessors' totals has no loads in flight, and with one
// tile a warp that cost 30-40% of the copy's throughput.  So the warps are
// persistent and pipelined: each keeps a ring of STAGES tiles in shared
// memory that fills while it scans (one bulk copy a tile on sm_90, else
// cp.async by every lane: the loads need no registers while they fly),
// waits on and writes the oldest, and takes its tiles one by one, in order,
// from an atomic counter - so every tile a warp waits on was taken by a
// warp that is running or done.  Each stage has a completion barrier
// (mbarrier) that says, without waiting, whether its tile has landed: a
// warp publishes the total of every landed tile of its ring at once, also
// while it waits for a prefix and right after it scans a tile
// (MID_PUBLISH: 3% at 2^28; bench/profile_scan.cu shows where a warp's
// time goes).  A total published only when its warp got to
// the tile would wait for that warp's previous look-back and chain the warps
// (tried: 400 times slower); published one tile ahead of the look-back, as
// in session 3's kernel, every stage past two cost a whole iteration (three
// stages 2.8x slower).  Deadlock-free: the smallest unpublished tile has
// landed or is landing, and its warp only ever waits for smaller, published
// ones.  A tile taken must start loading at once: asking the counter a
// refill ahead, to hide the atomic's round trip, made the scan 2.3x slower.
//
// Small inputs: where every tile gets a warp of its own, a warp's tile is
// the one of its place in the grid (blocks start in order, as CUB assumes),
// known before the counter and the slots are zeroed - so the zeroing kernel
// lets the scan start at once (programmatic dependent launch, sm_90+), and
// the scan loads its tile before it waits for the zeroing: 1.3-1.9 us off
// 2^20 elements (bench/results/tune-scan-*).
//
// The warp's scan: the tile is VPT rounds of 32 x VEC consecutive elements;
// in round v lane l holds the 16-byte vector v * 32 + l (the warp's loads
// are coalesced; each lane copies its own vectors into shared memory and
// reads them back, so no barrier), scans its VEC elements, and the 32 lane
// totals are scanned with __shfl_up_sync; a carry takes the round totals
// from round to round.
//
// What is published, and why it is reproducible.  CUB's look-back adds up
// whatever its predecessors happen to have published when it looks (their
// totals, or an inclusive prefix where one is ready), so the order of the
// additions - and for floats the bits of the result - changes from run to
// run.  Here the prefix of tile t is always the same expression: write t
// in base 32 and split [0, t) by its digits into aligned blocks of 32^j
// tiles (t = 70 = 2 * 32 + 6: tiles [0,32), [32,64), then [64,65) ...
// [69,70)).  The blocks of one digit are combined in a fixed tree (a warp
// reduction: lane i holds the i-th block), the digits from the largest
// blocks down.  The total of an aligned block of 32^(j+1) tiles is always
// the same tree over its 32 blocks of 32^j; the tile that ends the block
// publishes it after its own total.  So a tile waits only for totals
// (never for a chain of prefixes: that would chain every tile to the one
// before it), the lanes fetch a digit's blocks at once, and the result is
// the same bits every run.  With base 32 a tile waits about two hops (a
// store seen by another SM's poll) after its predecessors' totals; with
// base 2 the chain of publications before a tile was log2(tiles in flight)
// hops long (bench/results/tune-scan-*).
//
// Publishing: for 4-byte values, value and "ready" flag travel together in
// one 64-bit word (one load sees both or neither); for 8-byte values the
// value is stored, __threadfence(), then the flag, and readers read the
// flag, __threadfence(), then the value, bypassing L1.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "../async_copy.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

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

// Published values, one per slot: level j holds the totals of the aligned
// blocks of 32^j tiles (level 0: the tiles themselves), one level after
// the other; Levels says where each starts.
template <class Acc, bool PACKED = sizeof(Acc) == 4>
struct Slots;

template <class Acc>
struct Slots<Acc, true> {  // value and flag in one 64-bit word
    using value_type = Acc;
    unsigned long long *word;
    static size_t bytes(int64_t count) { return size_t(count) * 8; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit Slots(char *p, int64_t) : word(reinterpret_cast<unsigned long long *>(p)) {}
    __device__ void publish(int64_t i, Acc v) const {
        unsigned bits;
        memcpy(&bits, &v, 4);
        reinterpret_cast<volatile unsigned long long *>(word)[i] = (1ull << 32) | bits;
    }
    __device__ bool try_get(int64_t i, Acc &v) const {  // one poll
        const unsigned long long w = reinterpret_cast<volatile unsigned long long *>(word)[i];
        const unsigned bits = unsigned(w);
        memcpy(&v, &bits, 4);
        return (w >> 32) != 0;
    }
};

template <class Acc>
struct Slots<Acc, false> {  // flags, then the values after them
    using value_type = Acc;
    unsigned *flag;
    Acc *value;
    static size_t zeroed_bytes(int64_t count) { return align_up(size_t(count) * sizeof(unsigned)); }
    static size_t bytes(int64_t count) { return zeroed_bytes(count) + size_t(count) * sizeof(Acc); }
    explicit Slots(char *p, int64_t count)
        : flag(reinterpret_cast<unsigned *>(p)), value(reinterpret_cast<Acc *>(p + zeroed_bytes(count))) {}
    __device__ void publish(int64_t i, Acc v) const {
        __stcg(value + i, v);
        __threadfence();
        reinterpret_cast<volatile unsigned *>(flag)[i] = 1u;
    }
    __device__ bool try_get(int64_t i, Acc &v) const {  // one poll
        if (reinterpret_cast<volatile unsigned *>(flag)[i] == 0u) return false;
        __threadfence();
        v = __ldcg(value + i);
        return true;
    }
};

constexpr int LEVELS = 7;  // base-32 digits of a tile index (< 2^32)

__device__ inline int digit(int64_t tile, int j) { return int(tile >> (5 * j)) & 31; }

template <class T>
__device__ inline T broadcast0(T v) { return __shfl_sync(FULL_MASK, v, 0); }

struct Levels {
    int64_t start[LEVELS];  // first slot of each level
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

// The tile's own scan, in registers: x[v][] becomes the vector's inclusive
// scan, base[v] what comes before vector v within the tile (the tile's
// total, published earlier, comes from Ring::total).
template <int VPT, int VEC, class Acc, class Op>
__device__ inline void scan_tile(Acc (&x)[VPT][VEC], Acc (&base)[VPT], Op op, int lane) {
    Acc carry = Op::identity();
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
#pragma unroll
        for (int k = 1; k < VEC; ++k) x[v][k] = op(x[v][k - 1], x[v][k]);
        const Acc inc = scan::warp_inclusive_scan(x[v][VEC - 1], op);
        const Acc exc = __shfl_up_sync(FULL_MASK, inc, 1);
        base[v] = lane > 0 ? op(carry, exc) : carry;
        carry = op(carry, __shfl_sync(FULL_MASK, inc, WARP - 1));
    }
}

// Publish the tile's total, and the totals of the blocks it ends.  Digit j
// of the tile index in base 32 says how many aligned blocks of 32^j tiles
// lie between the start of the tile's block of 32^(j+1) and the tile's own
// block of 32^j.  Where the low digits are 31, those blocks with the
// tile's own make whole blocks of 32^(j+1) that this tile ends: it
// publishes their totals too, from the 31 blocks before its own (lane i
// fetches the i-th, lane 31 holds the tile's own block) reduced in a fixed
// tree - so what a tile publishes waits only for totals, never for a
// prefix.  The warp polls them together (spin_pause<0>: at once on the GPU
// - sleeps of 100-400 ns made no difference - and a switch to the other
// threads on the emulator).  Publishing these later, at the warp's next
// publication point, instead of waiting here, was slower (0.74 of a copy
// against 0.80 at 2^28 on an H200, bench/results/tune-scan-*): the readers
// then wait longer for them.  The whole warp calls it.
template <class S, class Op>
__device__ inline void publish(int64_t tile, typename Op::type total, const S &slots, const Levels &lv, Op op,
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
// caller publishes what has landed meanwhile) between rounds.
// Tried and dropped (bench/results/tune-scan-*): summing the last block of
// a digit from its 32 parts instead of waiting for its total (the same
// bits, one hop sooner) made no difference; publishing that sum as well,
// for later readers, made the scan three times slower (many warps writing
// one slot).
template <class S, class Op, class Idle>
__device__ inline typename Op::type prefix(int64_t tile, const S &slots, const Levels &lv, Op op, int lane, Idle idle) {
    using Acc = typename Op::type;
    Acc got[LEVELS];
    bool ok[LEVELS];
#pragma unroll
    for (int k = 0; k < LEVELS; ++k) ok[k] = lane >= digit(tile, k);
    for (;;) {
        bool all = true;
#pragma unroll
        for (int k = 0; k < LEVELS; ++k) {
            if (!ok[k]) ok[k] = slots.try_get(lv.slot(k, (tile >> (5 * k)) - digit(tile, k) + lane), got[k]);
            all = all && ok[k];
        }
        if (__all_sync(FULL_MASK, all)) break;
        idle();
    }
    Acc p = Op::identity();
    bool seen = false;
#pragma unroll
    for (int k = LEVELS - 1; k >= 0; --k) {
        const int d = digit(tile, k);
        if (d == 0) continue;
        const Acc part = broadcast0(warp_reduce(lane < d ? got[k] : Op::identity(), op));
        p = seen ? op(p, part) : part;
        seen = true;
    }
    return p;
}

// Write the tile: prefix p (where the tile has one), then what comes
// before the vector, then the vector; lane's vector v starts at element
// first(v).  STREAM: evict-first stores (the output is not read again).
template <bool STREAM, int VPT, int VEC, class Acc, class Op, class First>
__device__ inline void write_tile(Acc *out, int64_t n, bool inclusive, bool vector_ok, const Acc (&x)[VPT][VEC],
                                  const Acc (&base)[VPT], bool has_prefix, Acc p, Op op, First first) {
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
        const Acc b = has_prefix ? op(p, base[v]) : base[v];
        Acc r[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) r[k] = inclusive ? op(b, x[v][k]) : (k == 0 ? b : op(b, x[v][k - 1]));
        const int64_t i0 = first(v);
        if (vector_ok && i0 + VEC <= n) {
            uint4 w[VEC * sizeof(Acc) / 16];
            memcpy(w, r, sizeof r);
#pragma unroll
            for (int q = 0; q < int(VEC * sizeof(Acc) / 16); ++q) {
                uint4 *dst = reinterpret_cast<uint4 *>(out + i0) + q;
                if (STREAM) __stcs(dst, w[q]);
                else *dst = w[q];
            }
        } else {
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                if (i0 + k < n) out[i0 + k] = r[k];
        }
    }
}

// A warp's ring of tiles in shared memory.  `stage` is the lane's part of
// one stage: round v of the tile is the 16-byte vectors v * 32 + lane, so
// the lane's vector of round v lies v * WARP * 16 bytes on, and it holds
// elements first(t, v, lane) ... + VEC - 1 of tile t.  Each lane copies and
// reads its own vectors only: no barrier.
template <int VPT, class In>
struct Ring {
    static constexpr int VEC = 16 / sizeof(In), TILE = VPT * WARP * VEC, STAGE_BYTES = VPT * WARP * 16;
    __device__ static int64_t first(int64_t t, int v, int lane) {
        return t * TILE + (int64_t(v) * WARP + lane) * VEC;
    }
    // Start copying tile t into the stage: cp.async for whole vectors in
    // range, element by element at the end of the input.
    __device__ static void fill(unsigned char *stage, const In *in, int64_t n, bool vector_ok, int64_t t, int lane) {
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const int64_t i0 = first(t, v, lane);
            unsigned char *dst = stage + v * WARP * 16;
            if (vector_ok && i0 + VEC <= n) {
                async_copy16(dst, in + i0);
            } else {
                In *d = reinterpret_cast<In *>(dst);
#pragma unroll
                for (int k = 0; k < VEC; ++k)
                    if (i0 + k < n) d[k] = in[i0 + k];
            }
        }
    }
    // The lane's vector v, the identity past n.
    template <class Op>
    __device__ static void read(const unsigned char *stage, int64_t t, int v, int64_t n, int lane,
                                typename Op::type (&e)[VEC]) {
        const int64_t i0 = first(t, v, lane);
        In raw[VEC];
        memcpy(raw, stage + v * WARP * 16, 16);
#pragma unroll
        for (int k = 0; k < VEC; ++k) e[k] = i0 + k < n ? typename Op::type(raw[k]) : Op::identity();
    }
    // The tile's total: pairwise within each vector, pairwise over the
    // lane's vectors, then a warp tree - deterministic, and no rounding
    // path longer than log2 of the tile.  The whole warp calls it.
    template <class Op>
    __device__ static typename Op::type total(const unsigned char *stage, int64_t t, int64_t n, Op op, int lane) {
        using Acc = typename Op::type;
        Acc lane_sum[VPT];
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            Acc e[VEC];
            read<Op>(stage, t, v, n, lane, e);
#pragma unroll
            for (int w = 1; w < VEC; w *= 2)
#pragma unroll
                for (int k = 0; k + w < VEC; k += 2 * w) e[k] = op(e[k], e[k + w]);
            lane_sum[v] = e[0];
        }
#pragma unroll
        for (int w = 1; w < VPT; w *= 2)
#pragma unroll
            for (int v = 0; v + w < VPT; v += 2 * w) lane_sum[v] = op(lane_sum[v], lane_sum[v + w]);
        return broadcast0(warp_reduce(lane_sum[0], op));
    }
};

// The shape: WARPS warps a block, each with its own ring of STAGES tiles
// of VPT 16-byte vectors a lane; BLOCKS blocks a streaming multiprocessor
// (the grid: persistent warps, and the register budget asked of the
// compiler); BULK: a stage is filled by one bulk copy (sm_90+; before, and
// on the emulator, every lane copies its own vectors); STREAM: evict-first
// stores.  Evidence: bench/results/tune-scan-*.md (bench/tune_scan.cu).
// MID_PUBLISH: the warp also publishes what has landed right after it
// scans a tile (not only before, and while it waits for a prefix).
// TIMING_ONLY (bench/tune_scan.cu alone): no look-back, every tile without
// its prefix - wrong results, the time of the tile pass alone.
template <int WARPS_, int VPT_, int STAGES_, int BLOCKS_, bool BULK_ = true, bool STREAM_ = true,
          bool TIMING_ONLY_ = false, bool MID_PUBLISH_ = true>
struct LookbackShape {
    static constexpr int WARPS = WARPS_, VPT = VPT_, STAGES = STAGES_, BLOCKS = BLOCKS_;
    static constexpr bool BULK = BULK_, STREAM = STREAM_, TIMING_ONLY = TIMING_ONLY_, MID_PUBLISH = MID_PUBLISH_;
    static constexpr int STAGE_BYTES = VPT * WARP * 16;
    static constexpr int SMEM = WARPS * STAGES * STAGE_BYTES;  // dynamic: the rings
    static constexpr int BARRIERS = WARPS * STAGES;             // static: one a stage
    static_assert(STAGES >= 2 && STAGES <= 8, "a ring of 2 to 8 stages");
};

// bench/profile_scan.cu defines GP_SCAN_PROFILE: clock64() around each
// part of a warp's loop (PROF(k) ends part k), summed over the warps into
// gp_prof[0..6], the iterations into gp_prof[7].  Nothing otherwise.
#ifdef GP_SCAN_PROFILE
__device__ unsigned long long gp_prof[8];
#define PROF_T0 long long prof_t = clock64(); long long prof_acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#define PROF(k) do { const long long now_ = clock64(); prof_acc[k] += now_ - prof_t; prof_t = now_; } while (0)
#define PROF_COUNT if (lane == 0) prof_acc[7] += 1;
#define PROF_END if (lane == 0) for (int k_ = 0; k_ < 8; ++k_) atomicAdd(&gp_prof[k_], (unsigned long long)prof_acc[k_]);
#else
#define PROF_T0
#define PROF(k)
#define PROF_COUNT
#define PROF_END
#endif

template <class Shape, class In, class Op>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_lookback(const In *in, typename Op::type *out, int64_t n, bool inclusive, bool vector_ok,
              unsigned *next_tile, Slots<typename Op::type> slots, Levels lv, unsigned tiles) {
    using Acc = typename Op::type;
    using R = Ring<Shape::VPT, In>;
    constexpr int VPT = Shape::VPT, VEC = R::VEC, STAGES = Shape::STAGES, SB = R::STAGE_BYTES;
#ifdef GP_BULK_COPIES
    constexpr bool BULK = Shape::BULK;
#else
    constexpr bool BULK = false;
#endif
    const Op op;
    PROF_T0
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    unsigned char *const stages = dynamic_shared_memory() + warp * STAGES * SB;  // stage s at s * SB
    unsigned char *const ring = stages + lane * 16;                              // the lane's part
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned long long *const bar = barriers + warp * STAGES;
    if (lane == 0) {
        for (int s = 0; s < STAGES; ++s) async_barrier_init(bar + s, BULK ? 1 : WARP);
        fence_barrier_init();
    }
    __syncwarp();

    // Tiles in order from the counter (`tiles`: none left).  Asking for the
    // next one a refill ahead, to hide the atomic's round trip, made the
    // scan 2.3x slower: a tile taken must be loading at once, or the tiles
    // after it wait for it while its warp waits for its own look-back
    // (bench/results/tune-scan-*).
    const auto take = [&]() -> unsigned {
        unsigned t = 0;
        if (lane == 0) t = atomicAdd(next_tile, 1u);
        t = __shfl_sync(FULL_MASK, t, 0);
        return t < tiles ? t : tiles;
    };
    // Fill stage s with tile t: one bulk copy for a whole aligned tile, or
    // each lane its own vectors (cp.async, or synchronously next to bulk
    // copies and at the end of the input); the stage's barrier completes
    // its phase when the tile has landed.
    const auto issue = [&](unsigned t, int s) {
        if (t >= tiles) return;
        if (BULK && vector_ok && (int64_t(t) + 1) * R::TILE <= n) {
            __syncwarp();  // every lane is done with what the stage held
            if (lane == 0) {
                fence_proxy_async();
                bulk_copy(stages + s * SB, in + int64_t(t) * R::TILE, SB, bar + s);
            }
        } else if (BULK) {
            R::fill(ring + s * SB, in, n, false, t, lane);
            fence_proxy_async();
            __syncwarp();
            if (lane == 0) barrier_arrive(bar + s);
        } else {
            R::fill(ring + s * SB, in, n, vector_ok, t, lane);
            async_arrive(bar + s);
        }
    };
    const auto stage_total = [&](unsigned t, int s) { return R::total(ring + s * SB, t, n, op, lane); };

    // The ring: t[q] is the q-th oldest tile, in stage (s0 + q) % STAGES;
    // bit s of `parity`: the phase of the fill now in stage s; bit q of
    // `published`: t[q]'s total is out.  Where there are no more tiles than
    // warps, a warp takes one (two would leave others idle), the one of its
    // place in the grid, as CUB does: blocks start in order, so a warp only
    // waits for warps that have started; it is known before the zeroing of
    // the counter and the slots is done (GP_LAUNCH_EARLY), so the warp
    // loads it first.  Otherwise tiles come from the counter.
    const bool few = tiles <= unsigned(gridDim.x) * Shape::WARPS;
    unsigned t[STAGES], parity = 0, published = 0;
    int s0 = 0;
    if (few) {
        const unsigned mine = blockIdx.x * Shape::WARPS + warp;
        t[0] = mine < tiles ? mine : tiles;
        issue(t[0], 0);
    }
    grid_dependency_wait();
#pragma unroll
    for (int s = few ? 1 : 0; s < STAGES; ++s) {
        t[s] = few ? tiles : take();
        issue(t[s], s);
    }
    PROF(0);  // 0: start, the first fills and the zeroing's wait
    const auto stage_of = [&](int q) { return s0 + q < STAGES ? s0 + q : s0 + q - STAGES; };
    const auto landed = [&](int q) {
        const int s = stage_of(q);
        return __all_sync(FULL_MASK, async_landed(bar + s, (parity >> s) & 1u));
    };
    // Publish the landed tiles of the ring, oldest first, up to the first
    // that has not landed (a younger one could need its total).
    const auto publish_landed = [&]() {
        if (Shape::TIMING_ONLY) return;
#pragma unroll
        for (int q = 0; q < STAGES; ++q) {
            if ((published >> q) & 1u) continue;
            if (t[q] >= tiles || !landed(q)) break;
            publish(t[q], stage_total(t[q], stage_of(q)), slots, lv, op, lane);
            published |= 1u << q;
        }
    };

    while (t[0] < tiles) {
        const int64_t tile = t[0];
        async_wait_landed(bar + s0, (parity >> s0) & 1u);
        __syncwarp();
        PROF(1);  // 1: waiting for the tile to land
        publish_landed();  // t[0] among them, if it was not out yet
        PROF(2);  // 2: publishing at the top
        Acc x[VPT][VEC], base[VPT];
#pragma unroll
        for (int v = 0; v < VPT; ++v) R::template read<Op>(ring + s0 * SB, tile, v, n, lane, x[v]);
        scan_tile(x, base, op, lane);
        if (Shape::MID_PUBLISH) publish_landed();
        PROF(3);  // 3: reading and scanning the tile (and publishing after)
        // Stage s0 is in registers now: refill it with the tile STAGES ahead.
        const int s = s0;
#pragma unroll
        for (int q = 0; q + 1 < STAGES; ++q) t[q] = t[q + 1];
        published >>= 1;
        parity ^= 1u << s;
        t[STAGES - 1] = t[STAGES - 2] < tiles ? take() : tiles;
        PROF(4);  // 4: taking a tile from the counter
        s0 = s + 1 < STAGES ? s + 1 : 0;
        issue(t[STAGES - 1], s);
        // While it waits for the prefix, the warp publishes what lands in
        // its ring; with nothing left to publish it just polls.
        bool pending = false;
#pragma unroll
        for (int q = 0; q < STAGES; ++q) pending = pending || (t[q] < tiles && !((published >> q) & 1u));
        const Acc p = Shape::TIMING_ONLY ? Op::identity() : prefix(tile, slots, lv, op, lane, [&]() {
            if (pending) publish_landed();
        });
        PROF(5);  // 5: issuing the refill and the look-back (publishing meanwhile)
        write_tile<Shape::STREAM>(out, n, inclusive, vector_ok, x, base, tile > 0, p, op,
                                  [tile, lane](int v) { return R::first(tile, v, lane); });
        PROF(6);  // 6: writing
        PROF_COUNT
    }
    PROF_END
}

// Zero words [0, n) and let the next kernel in the stream start at once
// (GP_LAUNCH_EARLY).
__global__ void zero_words(unsigned long long *p, int64_t n) {
    allow_dependent_launch();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        p[i] = 0;
}

// The host side: zero the counter and the slots, then launch the grid; on
// sm_90+ (EARLY) the scan starts while the zeroing runs, loads its first
// tiles and waits for it before it takes a tile from the counter or polls
// a slot.
template <class Shape_, class In, class Op, bool EARLY = true>
struct LookbackWith {
    using Shape = Shape_;
    using Acc = typename Op::type;
    using S = Slots<Acc>;
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP * (16 / sizeof(In));
    // The slots of n elements' tiles, and where each level starts.
    static Levels levels(int64_t n, int64_t &count) { return Levels::of(ceil_div<int64_t>(n, TILE), count); }
    static size_t scratch(int64_t n) {
        int64_t count;
        levels(n, count);
        return 256 + S::bytes(count);
    }
    static cudaError_t zero(const gp_scan_args &a) {
        int64_t count;
        levels(a.n, count);
        const int64_t words = int64_t(256 + S::zeroed_bytes(count)) / 8;
        GP_LAUNCH(zero_words, unsigned(std::min<int64_t>(ceil_div<int64_t>(words, 256), 1024)), 256, 0, a.stream,
                  static_cast<unsigned long long *>(a.scratch), words);
        return cudaSuccess;
    }
    static cudaError_t launch(const gp_scan_args &a, const DeviceFacts &d) {
        const int64_t tiles = ceil_div<int64_t>(a.n, TILE);
        if (tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // the counter overshoots by a few per warp
        int64_t count;
        const Levels lv = levels(a.n, count);
        char *p = static_cast<char *>(a.scratch);
        const S slots(p + 256, count);
        const int64_t blocks =
            std::min<int64_t>(int64_t(d.sms) * Shape::BLOCKS, ceil_div<int64_t>(tiles, Shape::WARPS));
        const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
#ifndef GP_EMULATOR
        // The opt-in: the dynamic and the static shared memory (the
        // barriers) together pass the 48 KiB a launch gets without it.  The
        // emulator counts the dynamic alone, and stops at 48 KiB.
        if (Shape::SMEM + Shape::BARRIERS * 8 > 48 * 1024)
            GP_TRY(cudaFuncSetAttribute(scan_lookback<Shape, In, Op>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Shape::SMEM));
#endif
        GP_LAUNCH_EARLY(EARLY && d.major >= 9, (scan_lookback<Shape, In, Op>), unsigned(blocks), Shape::WARPS * WARP,
                        Shape::SMEM, a.stream, static_cast<const In *>(a.in), static_cast<Acc *>(a.out), a.n,
                        a.inclusive != 0, vec, reinterpret_cast<unsigned *>(p), slots, lv, unsigned(tiles));
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        GP_TRY(zero(a));
        return launch(a, d);
    }
};

// 2 warps x 16 vectors a lane (8 KiB tiles), two stages filled by bulk
// copies (32 KiB of shared memory a block), 6 blocks an SM (12 warps),
// evict-first stores, a publication point after the scan: 2^28 float32 in
// 0.610 ms on an H200 (0.83 of a copy, 1.12x cub::DeviceScan::InclusiveSum;
// 0.627 without the mid publication) and 0.775 ms on an H100 (0.92 of a
// copy, 1.13x; 0.800 without).  4 or 6 KiB tiles, 3-4 stages, 8, 10 or 20
// warps an SM: slower.  bench/profile_scan.cu splits a warp's time at 2^28:
// about a third waiting for prefixes, a quarter publishing, an eighth each
// scanning, taking a tile and writing.
using Tuning = LookbackShape<2, 16, 2, 6>;

// Where the tiles are few enough for a warp each: 2 x 12 vectors (6 KiB
// tiles) copied by cp.async (bulk copies: 5-8% slower here), 5 blocks an SM,
// no mid publication (the warp has no other tile) - 2^20 float32 in 10.2 us
// on an H200 and 10.9 us on an H100, against CUB's 11.6 / 12.5 us in the
// same runs (session 4's 2x12 s3 b5 with bulk copies: 11.6 / 12.3 us).
using SmallTuning = LookbackShape<2, 12, 2, 5, false, true, false, false>;

// 8-byte accumulators: the shapes above spill registers (up to 716 bytes
// for int32 -> int64 sums); 2 x 16 vectors, three stages, 4 blocks an SM
// (255 registers a thread) spills only in the widening sums (152 bytes for
// float32 -> float64, 284 for int32 -> int64).  Not tuned for speed.
using WideTuning = LookbackShape<2, 16, 3, 4>;

template <class In, class Op>
struct Lookback {
    static constexpr bool WIDE = sizeof(typename Op::type) > 4;
    using Small = LookbackWith<std::conditional_t<WIDE, WideTuning, SmallTuning>, In, Op>;
    using Large = LookbackWith<std::conditional_t<WIDE, WideTuning, Tuning>, In, Op>;
    static size_t scratch(int64_t n) { return std::max(Small::scratch(n), Large::scratch(n)); }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        const int64_t small_warps = int64_t(d.sms) * Small::Shape::BLOCKS * Small::Shape::WARPS;
        return ceil_div<int64_t>(a.n, Small::TILE) <= small_warps ? Small::run(a, d) : Large::run(a, d);
    }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return run(a, d);
    }
};
}  // namespace

cudaError_t gp_scan_decoupled_lookback(gp_scan_args *a) {
    return scan::dispatch<Lookback>(a);
}

// The main kernel (float32 sum) for gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_decoupled_lookback_kernel, scan_lookback<Tuning, float, Sum<float>>)
size_t gp_scan_decoupled_lookback_smem(int) { return Tuning::SMEM; }
GP_NAMESPACE_END
