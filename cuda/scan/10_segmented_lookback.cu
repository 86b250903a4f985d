// Step 13 - segmented_lookback: fixed tiles over all the problems at once,
// a segmented operator, and a single-pass decoupled look-back across tiles.
// Sources: segmented scan with head flags (Sengupta, Harris, Zhang and
// Owens, "Scan primitives for GPU computing", Graphics Hardware 2007);
// decoupled look-back (Merrill and Garland, NVR-2016-002, 2016), with the
// deterministic tree of tile totals and the warp-owned tiles of step 9
// (lookback.cuh, decoupled_lookback.cuh).
//
// What changed from step 12: the work is no longer cut by problem.  The
// problems, laid end to end (a C array's rows, or the segments of a ragged
// array), are scanned as one 1-D array by step 9's machinery - persistent
// warps, each scanning fixed tiles taken in order from a counter, the next
// tiles landing in a ring in shared memory meanwhile - so every warp does
// the same work whatever the lengths: 2^24 rows of 4 and 4 rows of 2^24
// keep the same number of warps busy.  Inside a tile an element may start a
// problem (a "head": k % n == 0 for rows of n, computed; an offset of a
// segment, marked from the offsets that fall in the tile), and the scan
// restarts there: with the segmented operator (a run with a head in it
// discards what came before) the lanes' vectors are scanned across the
// warp.  A tile whose first element continues a problem gets the running
// value from the tiles before through the look-back: tiles publish their
// flagged totals, and a tile's prefix is always the same tree of them (so
// the bits are the same every run), in which a head discards everything
// earlier.  Where the rows divide the tile, no tile continues one: nothing
// is published, nothing waited for.  Input read once, output written once.
// Why step 12 was slow: a block per problem leaves the GPU idle when the
// problems are few (4 rows of 2^24: 4 blocks), and wastes warps when they
// are short; a block's problems are as long as they are, so ragged
// segments leave blocks waiting for their longest.
// Segments of a long mean (LONG_MEAN, 8192) leave the heads behind: each
// is a 1-D scan with a look-back tree of its own, all on one grid of tiles
// over the data (scan_long below), so a tile inside a segment is exactly
// the 1-D scan's tile, and only a tile where segments meet is scanned more
// than once (a pass for each segment's part of it).
// Still slow here: along a non-last axis (columns), the elements of a
// problem are a row apart (read element by element below; step 14 reads
// them coalesced).  Segments read their offsets besides the data (8 bytes
// a segment: as much again as the data for segments of 2), and a tile
// waits for them before it scans.
// Assumes: any n, any strides (a layout other than contiguous rows or
// segments is read element by element: correct, not fast); fewer than 2^31
// tiles.
#include "decoupled_lookback.cuh"
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

// ------------------------------------------------- any other layout
// A layout whose problems do not lie end to end (a strided axis, an F
// array's rows) is read element by element: blocks of BLOCK threads, ITEMS
// consecutive elements of the flat order of the problems a thread, each
// element's address computed (correct, not fast: step 14 reads columns
// coalesced).  The thread's run restarts at its heads; the flagged thread
// totals are scanned across the warp and the block, and a tile gets its
// prefix from the tiles before through seg::look_back.
constexpr int BLOCK = 256, WARPS = BLOCK / WARP;

// Elements a thread: 8 4-byte accumulators, 4 wider ones (the addresses
// take the registers): no spills at 2 blocks an SM (ptxas of CUDA 13.0,
// sm_90).
template <class Acc>
__host__ __device__ constexpr int items_of() { return sizeof(Acc) > 4 ? 4 : 8; }

// Where element e of the flat order of the problems lies, for a layout
// read element by element: problem p = o*inner + i, element k.
struct Cursor {
    int64_t o, i, k;
    __device__ Cursor(const seg::Layout &lay, int64_t e) {
        const int64_t p = e / lay.n;
        k = e - p * lay.n;
        o = p / lay.inner;
        i = p - o * lay.inner;
    }
    __device__ int64_t in(const seg::Layout &lay) const { return o * lay.s_outer + k * lay.s_n + i * lay.s_inner; }
    __device__ int64_t out(const seg::Layout &lay) const { return (o * lay.n + k) * lay.inner + i; }
    __device__ void next(const seg::Layout &lay) {
        if (++k == lay.n) {
            k = 0;
            if (++i == lay.inner) i = 0, ++o;
        }
    }
};

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK, 2)
scan_flat(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive, unsigned long long *ticket,
          seg::FlaggedSlots<typename Op::type> slots, lookback::Levels lv) {
    using Acc = typename Op::type;
    using F = seg::Flagged<Acc>;
    constexpr int ITEMS = items_of<Acc>(), TILE = BLOCK * ITEMS;
    const Op op;
    const seg::SegOp<Op> sop;
    __shared__ F warp_total[WARPS];
    __shared__ F warp_before[WARPS];
    __shared__ F prefix_s;
    __shared__ int64_t tile_s;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int64_t total = lay.elements();

    if (threadIdx.x == 0) tile_s = int64_t(atomicAdd(ticket, 1ull));
    __syncthreads();
    const int64_t tile = tile_s, start = tile * TILE, end = start + TILE < total ? start + TILE : total;
    const int64_t first = start + int64_t(threadIdx.x) * ITEMS;

    Acc x[ITEMS];
    unsigned heads = 0;  // bit j: element j starts a problem
    {
        Cursor c(lay, first < total ? first : 0);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            x[j] = first + j < total ? Acc(in[c.in(lay)]) : Op::identity();
            if (c.k == 0 && first + j < end) heads |= 1u << j;
            c.next(lay);
        }
    }

    // The thread's run, restarting at its heads; its flagged total across
    // the warp, then the warps' across the block.
#pragma unroll
    for (int j = 1; j < ITEMS; ++j)
        if (!((heads >> j) & 1u)) x[j] = op(x[j - 1], x[j]);
    const F inc = scan::warp_inclusive_scan(F{x[ITEMS - 1], heads != 0}, sop);
    F before = __shfl_up_sync(FULL_MASK, inc, 1);  // the lanes before, in the warp
    if (lane == WARP - 1) warp_total[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        const F w = scan::warp_inclusive_scan(lane < WARPS ? warp_total[lane] : seg::SegOp<Op>::identity(), sop);
        const F w_before = __shfl_up_sync(FULL_MASK, w, 1);
        if (lane < WARPS) warp_before[lane] = w_before;
        const F tile_total = __shfl_sync(FULL_MASK, w, WARPS - 1);
        // Publish the tile's total, then (unless the tile starts a problem)
        // gather its prefix from the tiles before.
        seg::publish_totals(tile, tile_total, slots, lv, sop, lane);
        const bool starts = start % lay.n == 0;
        F p = seg::SegOp<Op>::identity();
        if (tile > 0 && !starts) p = seg::look_back(tile, slots, lv, sop, lane);
        if (lane == 0) prefix_s = p;
    }
    __syncthreads();

    // What comes before the thread's first element: the tiles before, the
    // warps before, the lanes before (each discarded by a later head).
    const bool need_tile = tile > 0, need_warp = warp > 0, need_lane = lane > 0;
    F carry = prefix_s;
    bool have = need_tile;
    if (need_warp) carry = have ? sop(carry, warp_before[warp]) : warp_before[warp], have = true;
    if (need_lane) carry = have ? sop(carry, before) : before, have = true;
    // Inclusive: the elements before the thread's first head add the carry.
    // Exclusive: each element's value is the one before it (the identity at
    // a head).
    const int first_head = heads ? __ffs(int(heads)) - 1 : ITEMS;
#pragma unroll
    for (int j = ITEMS - 1; j >= 0; --j) {  // downwards, in place: x[j - 1] is still the run's
        const Acc inc_j = (j < first_head && have) ? op(carry.value, x[j]) : x[j];
        if (inclusive) {
            x[j] = inc_j;
        } else {
            const Acc prev = j == 0 ? carry.value : ((j - 1 < first_head && have) ? op(carry.value, x[j - 1]) : x[j - 1]);
            x[j] = ((heads >> j) & 1u) ? Op::identity() : prev;
        }
    }
    Cursor c(lay, first < total ? first : 0);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        if (first + j < total) out[c.out(lay)] = x[j];
        c.next(lay);
    }
}

// ------------------------------------------------ contiguous problems
// The problems lie end to end in memory (segments; a C array's rows), so
// the elements are read and written as one 1-D array, with the 1-D scan's
// machinery (decoupled_lookback.cuh): persistent warps, each with a ring
// of STAGES tiles in shared memory filled by bulk (sm_90+) or cp.async
// copies, so that the next tiles load while a warp scans one and waits for
// its prefix; evict-first stores.  A tile is a warp's: VPT rounds of a
// 16-byte vector a lane (lane l's vector of round v holds the elements
// (v*32 + l)*VEC ... + VEC-1 of the tile), no block barrier anywhere.
//
// The heads of a tile: for rows of n, element e starts a row where e % n
// == 0 - one division a lane a tile, then a running remainder; for
// segments, the offsets that fall in the tile, offsets[bounds[t] ..
// bounds[t+1]) (bounds: each tile's first offset, found once for all tiles
// by a binary search before the scan), marked as bytes in the warp's part
// of shared memory and read back as bits, VEC a vector.
//
// The scan of a round: each lane scans its vector, restarting at its heads;
// the vectors' flagged totals are scanned across the warp by Hillis and
// Steele's doubling, where lane i takes in the lanes d before it only if
// no head lies in the lanes it holds, (i-d, i] - one ballot of "a head in
// my vector" a round says which (no shuffle of the flags); rounds chain by
// a flagged carry.  The prefix is gathered where the tile's first element
// continues a problem (seg::look_back: always the same tree of totals, so
// the same bits every run).
//
// Where rows of n divide the tile (n = 4, 64, ...) every tile starts a
// row: no tile needs a prefix, and none publishes a total.  Otherwise each
// tile publishes its flagged total: with EARLY as soon as it lands, by the
// warp that holds it, before its scan (the 1-D scan's way) - the pairwise
// total of the stage (Ring::total) from the tile's last head on, flagged,
// or of the whole tile where it holds no head.  The last head is computed
// for rows (the last multiple of n in the tile) and found before the scan
// for segments (flat_prologue, from the bounds).  So no total waits for a
// scan: the tiles after it wait less, and a warp waiting for a prefix never
// holds back a total that another warp waits for.  Without EARLY (a shape
// bench/tune_segscan.cu times) a tile publishes the carry of its scan, and
// with persistent warps the chain of tiles then waits one scan and one
// look-back every round of the grid.  Either way each tile's total is
// always the same function of its elements: the same bits every run.
//
// FlatShape: the 1-D scan's shape (lookback::LookbackShape: WARPS warps a
// block, VPT vectors a lane, STAGES stages a ring, BLOCKS blocks an SM,
// BULK copies, STREAM stores; its other flags are not used here), EARLY,
// MEANWHILE and PLAIN (EARLY: a tile without a head takes the 1-D scan's
// scan_tile and write_tile).
template <int WARPS_, int VPT_, int STAGES_, int BLOCKS_, bool EARLY_ = true, bool MEANWHILE_ = false,
          bool BULK_ = true, bool STREAM_ = true, bool PLAIN_ = false>
struct FlatShape : lookback::LookbackShape<WARPS_, VPT_, STAGES_, BLOCKS_, BULK_, STREAM_> {
    static constexpr bool EARLY = EARLY_, MEANWHILE = EARLY_ && MEANWHILE_, PLAIN = EARLY_ && PLAIN_;
};

// The shapes of chained tiles (segments, and rows that do not divide the
// tile).  4-byte results: 2 warps a block, 8 vectors a lane, 2 stages, 8
// blocks an SM, PLAIN - PLAIN took (1, 2^26) from 62.3 to 67.7% of the
// copy roof, rows of 3 * 2^20 + 7 from 62.1 to 67.6 and segments of mean
// 65536 from 60.4 to 63.7, the shorter segments within a point (bench/
// results/tune-segscan-chain-nvidia-h200-2026-11-23.md, where no sleep,
// a second publication after the scan and MEANWHILE lose 0-20 points); on
// an H200 (bench/results/tune-segscan-nvidia-h200-2026-11-23-early.md,
// float32 inclusive cumsum of 2^26 elements, % of a copy of the bytes read
// + written) segments of mean 4, 64, 1024, 65536 ran
// at 40.1, 51.6, 53.4, 59.5% and rows of 2^20 at 61.2%, against 29.2-47.4%
// and 56.6% with the 3-stage, 4-block shape below, 37.7-60.0% with 2 x 12
// vectors at 6 blocks, 32.0-50.4% with 3 stages at 6.  8-byte results
// (not timed on chained tiles): 2 warps a block, 16 vectors a lane (a
// tile of 8 KiB of 4-byte input), 3 stages, 4 blocks an SM: the shape of
// the 1-D scan's 8-byte tuning (lookback_tuning.cuh); the 1-D scan's
// 4-byte shape (2 stages, 6 blocks an SM: 168 registers a thread) spills
// here, where the head flags and the flagged look-back take registers of
// their own; 4 blocks allow 255.  4-byte inputs summed into 8 bytes: 2 x 8
// vectors, 4 stages (the 1-D's WideningTuning).
template <class In, class Acc>
using FlatTuning = std::conditional_t<sizeof(Acc) == 4, FlatShape<2, 8, 2, 8, true, false, true, true, true>,
                                      std::conditional_t<sizeof(In) == sizeof(Acc), FlatShape<2, 16, 3, 4>,
                                                         FlatShape<2, 8, 4, 4>>>;
// Float32 sums of rows of a C array that divide the tile (no tile needs a
// prefix) take the 1-D scan's own 4-byte shape (2 stages, 6 blocks an SM)
// even though it spills 4 bytes a thread there: on an H200 (bench/results/
// tune-segscan-nvidia-h200-2026-11-23.md, float32 inclusive cumsum, % of a
// copy of the bytes read + written) (2^24, 4) and (2^20, 64) along axis -1
// took 0.1448 and 0.1447 ms (88.5%) against 0.1599 and 0.1594 ms
// (80.1-80.4%) with 3 stages at 4 blocks.  The other ops and types spill
// more with it (20-56 bytes; ptxas of CUDA 13.0, sm_90) and were not timed:
// they keep FlatTuning, as chained rows and segments do.
template <class In, class Op>
using RowTuning = std::conditional_t<std::is_same<In, float>::value && std::is_same<Op, Sum<float>>::value,
                                     FlatShape<2, 16, 2, 6>, FlatTuning<In, typename Op::type>>;

// a % n for a >= 0, n > 0: a 32-bit remainder where both fit in 32 bits
// (a 64-bit one is a long sequence of its own).
__device__ __forceinline__ int64_t rem(int64_t a, int64_t n) {
    return ((a | n) >> 32) == 0 ? int64_t(unsigned(a) % unsigned(n)) : a % n;
}

// The first index in [0, count) with a[index] >= key (count where none).
__device__ inline int64_t lower_bound(const int64_t *a, int64_t count, int64_t key) {
    int64_t lo = 0;
    while (count > 0) {
        const int64_t half = count / 2;
        if (a[lo + half] < key) lo += half + 1, count -= half + 1;
        else count = half;
    }
    return lo;
}

// Before the scan (which may start meanwhile, GP_LAUNCH_EARLY, and waits
// for this grid before it takes a tile): zero words [0, words) (the tile
// counter and the slots) and, for segments, bounds[t] = the first offset
// at or past tile t's first element, t = 0 ... tiles, and (where `last`
// is given) last[t] = the place in tile t of its last head (the offset
// before bounds[t + 1], where it falls in the tile), -1 where it holds
// none.
template <class Word>
__global__ void flat_prologue(Word *zero, int64_t words, const int64_t *offsets, int64_t problems, int64_t tile,
                              int64_t *bounds, int *last, int64_t tiles) {
    allow_dependent_launch();
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) zero[i] = 0;
    if (offsets != nullptr)
        for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t <= tiles; t += stride) {
            const int64_t b = lower_bound(offsets, problems + 1, t * tile);
            bounds[t] = b;
            if (t > 0 && last != nullptr) {
                const int64_t e = b > 0 ? offsets[b - 1] : -1;  // below t * tile
                last[t - 1] = e >= (t - 1) * tile ? int(e - (t - 1) * tile) : -1;
            }
        }
}

// Rows of n (SEGMENTS false; round_step = (WARP*VEC) % n, pattern: the
// heads of a vector whose first element starts a row) or segments
// (offsets, bounds), `total` elements in all; `chained`: some tile needs
// a prefix (else no tile publishes a total).
// Probe: decoupled_lookback.cuh's hook (bench/profile_scan.cu reads the
// cycles of each part of a warp's loop through it); NoProbe compiles to
// nothing.
template <class Shape, class In, class Op, bool SEGMENTS, class Probe = lookback::NoProbe>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_tiles(const In *in, typename Op::type *out, int64_t total, int64_t n, int64_t round_step, unsigned pattern,
           const int64_t *offsets, const int64_t *bounds, const int *last, bool chained, bool inclusive, bool vector_ok,
           unsigned *next_tile, seg::FlaggedSlots<typename Op::type> slots, lookback::Levels lv, unsigned tiles) {
    using Acc = typename Op::type;
    using F = seg::Flagged<Acc>;
    using W = lookback::WarpRing<Shape, In, lookback::bulk_copies<Shape>()>;
    constexpr int VPT = Shape::VPT, VEC = W::R::VEC, TILE = W::R::TILE;
    static_assert(VEC <= 4 && VPT * VEC <= 64 && VPT <= 32, "a vector's head bytes read as one word; the heads in 64 bits");
    constexpr unsigned VMASK = (1u << VEC) - 1u;
    const Op op;
    const seg::SegOp<Op> sop;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    __shared__ uint4 head_s[SEGMENTS ? Shape::WARPS : 1][SEGMENTS ? TILE / 16 : 1];  // a byte an element
    unsigned t[W::STAGES];
    W ring(in, total, vector_ok, next_tile, tiles, lane, warp, barriers, t);
    Probe probe;
    ring.start(warp);
    // Segments: the offsets of tile t[0] are [lo, hi), of t[1] [lo2, hi2);
    // pre[]: t[0]'s first PRE x 32 of them (those below hi) - each fetched
    // while the warp still works on the tile before.
    constexpr int PRE = 2;
    int64_t lo = 0, hi = 0, lo2 = 0, hi2 = 0, pre[SEGMENTS ? PRE : 1];
    // The place of the last head in tile tt = t[q], -1 where it holds none:
    // segments, found before the scan (flat_prologue), read only where the
    // tile holds an offset (t[0] and t[1]: their bounds are at hand; most
    // tiles of long segments hold none); rows of n, the last multiple of n
    // in the tile.
    const auto last_head = [&](unsigned tt, int q) -> int {
        const int64_t first = int64_t(tt) * TILE;
        if constexpr (SEGMENTS) {
            if (q < 2 && (q == 0 ? hi == lo : hi2 == lo2)) return -1;
            return __ldg(last + tt);
        } else {
            const int64_t end = (first + TILE < total ? first + TILE : total) - 1;
            const int64_t e = end - rem(end, n);
            return e >= first ? int(e - first) : -1;
        }
    };
    // EARLY: publish the flagged totals of the landed tiles of the ring,
    // oldest first, up to the first that has not landed: a tile's total
    // from its last head on, flagged, or its plain total where it holds no
    // head (or its head is its first element).  No publication waits for a
    // scan, so a warp that waits for a prefix never holds back a total that
    // another warp's look-back (or level total) waits for.
    const auto publish_landed = [&]() {
        if constexpr (Shape::EARLY) {
            ring.each_landed([&](int q, const unsigned char *stage) {
                const int h = last_head(t[q], q);
                const Acc sum = h <= 0 ? W::R::total(stage, t[q], total, op, lane)
                                       : W::R::template total<Op, true>(stage, t[q], total, op, lane,
                                                                        int64_t(t[q]) * TILE + h);
                seg::publish_totals(int64_t(t[q]), F{sum, h < 0 ? 0u : 1u}, slots, lv, sop, lane);
            });
        }
    };
    const auto prefetch = [&]() {
        if constexpr (SEGMENTS) {
            if (t[1] < tiles) lo2 = __ldg(bounds + t[1]), hi2 = __ldg(bounds + t[1] + 1);
#pragma unroll
            for (int i = 0; i < PRE; ++i) {
                const int64_t j = lo + lane + i * WARP;
                pre[i] = j < hi ? __ldg(offsets + j) : total;
            }
        }
    };
    if (SEGMENTS && t[0] < tiles) lo = __ldg(bounds + t[0]), hi = __ldg(bounds + t[0] + 1);
    prefetch();

    probe.mark(lookback::START);  // the first fills and the wait for the prologue
    while (t[0] < tiles) {
        const int64_t tile = t[0], start = tile * TILE;
        // The heads (bit v*VEC + k: element k of the lane's vector v),
        // found while the tile lands.
        unsigned long long heads = 0;
        if constexpr (SEGMENTS) {
            // No offset in the tile (uniform; most tiles of long segments):
            // no heads, nothing to mark.
            if (hi > lo) {
                unsigned char *hs = reinterpret_cast<unsigned char *>(head_s[warp]);
                __syncwarp();  // every lane has read the last tile's heads
                for (int i = lane; i < TILE / 16; i += WARP) head_s[warp][i] = uint4{0u, 0u, 0u, 0u};
                __syncwarp();
#pragma unroll
                for (int i = 0; i < PRE; ++i)
                    if (pre[i] < total) hs[pre[i] - start] = 1;
#pragma unroll 4
                for (int64_t j = lo + lane + PRE * WARP; j < hi; j += WARP) {
                    const int64_t e = __ldg(offsets + j);
                    if (e < total) hs[e - start] = 1;
                }
                __syncwarp();
#pragma unroll
                for (int v = 0; v < VPT; ++v) {
                    unsigned w = 0;
                    memcpy(&w, hs + (v * WARP + lane) * VEC, VEC);
                    unsigned long long b = 0;
#pragma unroll
                    for (int k = 0; k < VEC; ++k) b |= ((w >> (8 * k)) & 1ull) << k;
                    heads |= b << (v * VEC);
                }
            }
        } else {
            // r: the vector's first element's place in its row; the row's
            // next head is k0 elements on, then every n (`pattern`: bit j*n
            // for each j*n < VEC).
            int64_t r = rem(start + int64_t(lane) * VEC, n);
#pragma unroll
            for (int v = 0; v < VPT; ++v) {
                const int64_t k0 = r == 0 ? 0 : n - r;
                if (k0 < VEC) heads |= (static_cast<unsigned long long>(pattern << int(k0)) & VMASK) << (v * VEC);
                r += round_step;
                if (r >= n) r -= n;
            }
        }
        // The tile's first element starts a problem: no prefix to gather.
        const bool starts = __shfl_sync(FULL_MASK, unsigned(heads & 1u), 0) != 0;

        ring.wait_oldest();
        probe.mark(lookback::LAND);  // the heads, then the wait for the tile
        if (chained) publish_landed();
        probe.mark(lookback::PUBLISH);
        Acc x[VPT][VEC];
        ring.template read_oldest<Op>(x);
        // base[v]: what comes before the lane's vector v in the tile; bit v
        // of base_head: a head is among it (for the tile's first vector:
        // nothing comes before).
        Acc base[VPT];
        unsigned base_head = 0;
        F carry = seg::SegOp<Op>::identity();
        // PLAIN: a tile without a head is scanned and written by the 1-D
        // scan's own code (fewer instructions an element; its total is
        // already out, EARLY).
        const bool plain = Shape::PLAIN && !__any_sync(FULL_MASK, heads != 0);
        if (plain) lookback::scan_tile(x, base, op, lane);
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            if (plain) break;
            const unsigned hv = unsigned(heads >> (v * VEC)) & VMASK;
#pragma unroll
            for (int k = 1; k < VEC; ++k)
                if (!((hv >> k) & 1u)) x[v][k] = op(x[v][k - 1], x[v][k]);
            const unsigned mask = __ballot_sync(FULL_MASK, hv != 0);
            const unsigned upto = mask & ((2u << lane) - 1u);  // lanes 0 ... lane (lane 31: all)
            const int from = upto ? 31 - __clz(int(upto)) : 0;  // the last head at or before the lane
            Acc val = x[v][VEC - 1];
#pragma unroll
            for (int d = 1; d < WARP; d <<= 1) {
                const Acc y = __shfl_up_sync(FULL_MASK, val, d);
                if (lane - d >= from) val = op(y, val);
            }
            const Acc exc = __shfl_up_sync(FULL_MASK, val, 1);
            const Acc round_total = __shfl_sync(FULL_MASK, val, WARP - 1);
            const bool head_before = (mask & ((1u << lane) - 1u)) != 0;
            const bool bh = lane == 0 ? carry.head != 0 : (head_before || (v > 0 && carry.head));
            base[v] = lane == 0 ? carry.value : (v == 0 || head_before) ? exc : op(carry.value, exc);
            base_head |= unsigned(bh) << v;
            if (v == 0 || mask != 0) carry = F{round_total, mask != 0 ? 1u : 0u};
            else carry = F{op(carry.value, round_total), carry.head};
        }
        if (chained && !(ring.published & 1u)) seg::publish_totals(tile, carry, slots, lv, sop, lane);
        probe.mark(lookback::SCAN);
        const int s = ring.retire_oldest();
        ring.refill(s);
        lo = lo2, hi = hi2;
        prefetch();
        probe.mark(lookback::TAKE);
        const bool has_prefix = chained && tile > 0 && !starts;
        Acc p = Op::identity();
        if (has_prefix) {
            // While it waits, the warp publishes what lands in its ring.
            const bool pending = Shape::MEANWHILE && ring.pending();
            p = seg::look_back(tile, slots, lv, sop, lane, [&]() {
                    if (pending) publish_landed();
                    else lookback::spin_pause<32>();
                }).value;
        }
        probe.mark(lookback::LOOKBACK);

        if (plain) {
            lookback::write_tile<Shape::STREAM, typename W::R>(out, total, inclusive, vector_ok, x, base, has_prefix, p,
                                                                op, tile, lane);
            probe.mark(lookback::WRITE);
            probe.iteration(lane);
            continue;
        }
        // Write: the elements before the vector's first head take what
        // comes before the vector in their problem.
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const unsigned hv = unsigned(heads >> (v * VEC)) & VMASK;
            const int first_head = hv ? __ffs(int(hv)) - 1 : VEC;
            bool use = true;
            Acc b = base[v];
            if (v == 0 && lane == 0) use = has_prefix, b = p;
            else if (has_prefix && !((base_head >> v) & 1u)) b = op(p, b);
            Acc r[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const Acc inc = (k < first_head && use) ? op(b, x[v][k]) : x[v][k];
                if (inclusive) {
                    r[k] = inc;
                } else if ((hv >> k) & 1u) {
                    r[k] = Op::identity();
                } else {
                    r[k] = k == 0 ? (use ? b : Op::identity()) : ((k - 1 < first_head && use) ? op(b, x[v][k - 1]) : x[v][k - 1]);
                }
            }
            const int64_t i0 = W::R::first(tile, v, lane);
            if (vector_ok && i0 + VEC <= total) {
                uint4 w[VEC * sizeof(Acc) / 16];
                memcpy(w, r, sizeof r);
#pragma unroll
                for (int q = 0; q < int(VEC * sizeof(Acc) / 16); ++q) {
                    uint4 *dst = reinterpret_cast<uint4 *>(out + i0) + q;
                    if (Shape::STREAM) __stcs(dst, w[q]);
                    else *dst = w[q];
                }
            } else {
#pragma unroll
                for (int k = 0; k < VEC; ++k)
                    if (i0 + k < total) out[i0 + k] = r[k];
            }
        }
        probe.mark(lookback::WRITE);
        probe.iteration(lane);
    }
    probe.end(lane);
}

// The launch of scan_tiles with a shape (Probe: scan_tiles').  The scratch: the tile counter
// (256 bytes), the slots, then (segments) the tiles' bounds.
template <class Shape, class In, class Op, class Probe = lookback::NoProbe>
struct TilesWith {
    using Acc = typename Op::type;
    using S = seg::FlaggedSlots<Acc>;
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP * (16 / sizeof(In));
    static int64_t tiles(const seg::Layout &lay) { return ceil_div<int64_t>(lay.elements(), TILE); }
    static size_t scratch(const seg::Layout &lay) {
        int64_t count;
        lookback::Levels::of(tiles(lay), count);
        return 256 + align_up(S::bytes(count)) + align_up(size_t(tiles(lay) + 1) * 8) + size_t(tiles(lay)) * 4;
    }
    // SEGMENTS: the layout's problems are segments (else rows of a C
    // array); the caller knows which, so a shape compiles only the kernels
    // it runs.
    template <bool SEGMENTS>
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        const seg::Layout lay = seg::Layout::of(a);
        const int64_t total = lay.elements(), nt = tiles(lay);
        if (nt > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // the counter overshoots by a few per warp
        int64_t count;
        const lookback::Levels lv = lookback::Levels::of(nt, count);
        char *p = static_cast<char *>(a.scratch);
        const S slots(p + 256, count);
        int64_t *bounds = reinterpret_cast<int64_t *>(p + 256 + align_up(S::bytes(count)));
        int *last = reinterpret_cast<int *>(bounds + align_up(size_t(nt + 1) * 8) / 8);
        const int64_t words = int64_t(256 + S::zeroed_bytes(count)) / 8;
        const int64_t work = std::max(words, SEGMENTS ? nt + 1 : 0);
        GP_LAUNCH(flat_prologue<unsigned long long>, lookback::prologue_grid(work), 256, 0, a.stream,
                  reinterpret_cast<unsigned long long *>(p), words, lay.offsets, lay.problems, TILE, bounds, last, nt);
        const int64_t blocks = lookback::persistent_blocks<Shape>(nt, d);
        const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
        const int64_t n = SEGMENTS ? total : lay.n;  // rows: the row length (total: one row)
        constexpr int VEC = 16 / sizeof(In);
        const int64_t round_step = (int64_t(WARP) * VEC) % n;
        const bool chained = SEGMENTS || TILE % n != 0;
        unsigned pattern = 0;  // bit j*n for each j*n < VEC: the heads after one at 0 in a vector
        for (int64_t k = 0; k < VEC; k += n) pattern |= 1u << k;
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        unsigned *ticket = reinterpret_cast<unsigned *>(p);
        const auto go = [&](auto kernel) -> cudaError_t {
            // the rings, beside the static barriers and tiles
            GP_TRY(opt_in_shared(kernel, Shape::SMEM, Shape::BARRIERS * 8 + Shape::WARPS * TILE));
            GP_LAUNCH_EARLY(d.major >= 9, kernel, unsigned(blocks), Shape::WARPS * WARP, Shape::SMEM, a.stream, in,
                            out, total, n, round_step, pattern, lay.offsets, bounds, last, chained, a.inclusive != 0, vec, ticket,
                            slots, lv,
                            unsigned(nt));
            return cudaSuccess;
        };
        return go(scan_tiles<Shape, In, Op, SEGMENTS, Probe>);
    }
};

// -------------------------------------------------------- long segments
// Segments of a mean length of LONG_MEAN or more: each segment is a 1-D
// scan, all of them on one grid of tiles laid over the flat data (the 1-D
// scan's ring, tile scan and protocol; LongTuning's shapes).  Tile t covers
// elements t*TILE ... as in the 1-D scan; the tiles a segment's elements
// touch are its tiles, local tile i of segment s being flat tile
// offsets[s] / TILE + i, and each segment has a look-back tree of its own
// (SegmentLevels): a tile publishes the total of the segment it ends in,
// where that segment goes on past it, and gathers the prefix of the segment
// it begins in from that segment's tree - the 1-D scan's protocol with
// plain totals, no heads, no flags.  A tile inside a segment (most tiles,
// at these lengths) is read, scanned and written by the 1-D scan's own
// code; a tile where segments meet is scanned once for each segment's part
// of it, each part masked (Ring::read's and write_tile's bounds).  The
// parts are at most the tiles plus the segments, so the mean bounds the
// work whatever the lengths; short segments next to long ones cost a pass
// each.  Input read once, output written once; the same bits every run
// (every result is the same tree of the same totals for a given layout).

// Where the totals of a segment's tiles lie: level j of segment s (first
// flat tile ft) at j * width + (ft >> 5j) + 2s + block.  Segment s + 1
// starts at a flat tile no earlier than s's last, so its blocks at level j
// start past s's (the 2s leaves room for the block s shares with it), and
// each level holds width = tiles + 2 * segments + 2 slots.
struct SegmentLevels {
    int64_t width, ft, s;
    __device__ int64_t slot(int j, int64_t block) const { return j * width + (ft >> (5 * j)) + 2 * s + block; }
};

template <class Shape, class In, class Op>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_long(const In *in, typename Op::type *out, int64_t total, int64_t problems, const int64_t *offsets,
          const int64_t *bounds, bool inclusive, bool vector_ok, bool evict_first, unsigned *next_tile,
          lookback::SlotsOf<Shape, typename Op::type> slots, int64_t width, unsigned tiles) {
    using Acc = typename Op::type;
    using W = lookback::WarpRing<Shape, In, lookback::bulk_copies<Shape>()>;
    using R = typename W::R;
    constexpr int TILE = R::TILE;
    static_assert(!Shape::HOLD, "the tile waits for its prefix in registers");
    const Op op;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned t[W::STAGES];
    W ring(in, total, vector_ok, next_tile, tiles, lane, warp, barriers, t, evict_first);
    ring.start(warp);
    const auto levels = [&](int64_t s) { return SegmentLevels{width, __ldg(offsets + s) / TILE, s}; };
    // Publish the totals of the landed tiles, oldest first, up to the first
    // that has not landed: a tile's total from where its last segment
    // begins (or the tile's start), where that segment goes on past it.
    const auto publish_landed = [&]() {
        ring.each_landed([&](int q, const unsigned char *stage) {
            const int64_t tile = t[q], start = tile * TILE, b = __ldg(bounds + tile + 1);
            if (b >= 1 && b <= problems && __ldg(offsets + b) > start + TILE) {
                const SegmentLevels lv = levels(b - 1);
                const int64_t from = __ldg(offsets + b - 1);
                const Acc sum = from > start ? R::template total<Op, true>(stage, tile, total, op, lane, from)
                                             : R::total(stage, tile, total, op, lane);
                lookback::publish_totals(tile - lv.ft, sum, slots, lv, op, lane);
            }
        });
    };

    while (t[0] < tiles) {
        const int64_t tile = t[0], start = tile * TILE, end = start + TILE < total ? start + TILE : total;
        // The offsets in the tile: [b0, b1).
        const int64_t b0 = __ldg(bounds + tile), b1 = __ldg(bounds + tile + 1);
        const int64_t h0 = b0 <= problems ? __ldg(offsets + b0) : total;  // the first at or past the start
        ring.wait_oldest();
        publish_landed();  // the tile among them, if it was not out yet
        const unsigned char *stage = ring.mine + ring.s0 * W::SB;
        Acc x[Shape::VPT][R::VEC], base[Shape::VPT];
        // The segments that begin in the tile: no prefix; the stage is read
        // again for each.
        for (int64_t j = b0; j < b1 && j < problems; ++j) {
            const int64_t lo = __ldg(offsets + j), next = __ldg(offsets + j + 1), hi = next < end ? next : end;
            if (lo >= hi) continue;
#pragma unroll
            for (int v = 0; v < Shape::VPT; ++v) R::template read<Op, true>(stage, tile, v, hi, lane, x[v], lo);
            lookback::scan_tile(x, base, op, lane);
            lookback::write_tile<Shape::STREAM, R, true>(out, hi, inclusive, vector_ok, x, base, false,
                                                         Op::identity(), op, tile, lane, lo);
        }
        // The part from the tile's start: the rest of segment b0 - 1, which
        // began in an earlier tile (so it has a prefix).  Elements past the
        // last offset are in no segment (a caller that breaks gpuprims.h's
        // promise of offsets from 0 to n leaves them unwritten: no tile
        // waits for a total that none publishes).
        const bool first = b0 >= 1 && b0 <= problems && h0 > start;
        const int64_t hi0 = h0 < end ? h0 : end;
        if (first) {
#pragma unroll
            for (int v = 0; v < Shape::VPT; ++v) R::template read<Op>(stage, tile, v, hi0, lane, x[v]);
            lookback::scan_tile(x, base, op, lane);
        }
        if (Shape::MID_PUBLISH) publish_landed();
        const int s = ring.retire_oldest();
        ring.refill(s);
        if (!first) continue;
        const bool pending = ring.pending();
        const SegmentLevels lv = levels(b0 - 1);
        const Acc p = lookback::look_back(tile - lv.ft, slots, lv, op, lane, [&]() {
            if (pending) publish_landed();
        });
        lookback::write_tile<Shape::STREAM, R>(out, hi0, inclusive, vector_ok, x, base, true, p, op, tile, lane);
    }
}

// The shapes of scan_long (lookback::LookbackShape), two stages filled by
// bulk copies marked evict-first in the L2 (LongWith's EVICT_FIRST_UP_TO:
// every size), no publication after the scan.  4-byte results: 2 warps x
// 8 vectors a lane (1024 elements), 8 blocks an SM.  Float32 inclusive
// cumsum of 2^26 elements, segments of random lengths, % of a copy of the
// bytes read + written, at means 8192 / 16384 / 65536 / 2^18 / 2^20
// (bench/results/tune-segscan-long-*-2026-11-24.md): on an H200 (run 3)
// 70.6 / 74.2 / 75.1 / 74.6 / 74.5 against the flat look-back of heads'
// 59.3 / 63.9 / 68.3 / 68.1 / 69.8 (the packs at 8192: 72.3); with the
// publication after the scan 67.7 / 72.6 / 74.3 / 73.9 / 74.2, and without
// the hint as well 65.9 / 71.1 / 70.7 / 70.3 / 70.6 (run 2, both without
// the hint: 68.8 / 72.9 / 71.9 / 70.6 / 70.5 against 65.4 / 70.8 / 70.3 /
// 69.9 / 70.2).  2 x 12 vectors at 6 blocks 52-76 (its tiles lose on the
// parts where segments are short), 4 x 8 at 4 blocks 65-73, 2 x 8 in 3
// stages at 6 blocks 55-60, 2 x 10 at 7 54-60, the 1-D scan's own 2 x 16
// at 6 (284 bytes of spills a thread here) 43-57.  On an H100 (the
// publication after the scan, no hint) 80.9 / 83.8 / 82.1 / 81.7 / 81.2,
// the flat look-back 74.5-80.1.  8-byte results (not timed): 2 x 8
// vectors (512 elements) at 6 blocks; 4-byte inputs summed into 8 bytes 2
// x 4 (512): the largest of the 1-D structure with no spills (ptxas of
// CUDA 13.0, sm_90; 4-byte sums spill 16-24 bytes a thread).
template <class In, class Acc>
using LongTuning = std::conditional_t<
    sizeof(Acc) == 4, lookback::LookbackShape<2, 8, 2, 8, true, true, false>,
    std::conditional_t<sizeof(In) == sizeof(Acc), lookback::LookbackShape<2, 8, 2, 6, true, true, false>,
                       lookback::LookbackShape<2, 4, 2, 6, true, true, false>>>;

// The host side of scan_long: the prologue (flat_prologue: the counter
// and the slots zeroed, each tile's bounds), then the grid, which starts
// at once on sm_90+.  The scratch: the counter (256 bytes), the slots, the
// bounds.
template <class Shape_, class In, class Op, int64_t EVICT_FIRST_UP_TO = INT64_MAX>
struct LongWith {
    using Shape = Shape_;
    using Acc = typename Op::type;
    using S = lookback::SlotsOf<Shape, Acc>;
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP * (16 / sizeof(In));
    // The mean length from which segments take scan_long (8 of float32's
    // tiles; the tune program's smallest mean, where it beats the flat
    // look-back by 6 points on an H100 and 11 on an H200).
    static constexpr int64_t LONG_MEAN = 8192;
    static bool takes(const seg::Layout &lay) {
        return lay.offsets != nullptr && lay.problems > 0 && lay.n / lay.problems >= LONG_MEAN;
    }
    static int64_t tiles(const seg::Layout &lay) { return ceil_div<int64_t>(lay.elements(), TILE); }
    // The slots: `levels` levels of width slots (the levels the longest
    // segment's tiles need: tile 32^j - 1 of a segment publishes level j).
    static int64_t slot_count(const seg::Layout &lay, int64_t longest, int64_t &width) {
        const int64_t nt = tiles(lay);
        width = nt + 2 * lay.problems + 2;
        const int64_t most = longest > 0 ? std::min(nt, longest / TILE + 2) : nt;  // a segment's tiles
        int levels = 1;
        while (levels < lookback::LEVELS && (most >> (5 * levels)) > 0) ++levels;
        return levels * width;
    }
    static size_t scratch(const seg::Layout &lay, int64_t longest) {
        int64_t width;
        const int64_t count = slot_count(lay, longest, width);
        return 256 + align_up(S::bytes(count)) + size_t(tiles(lay) + 1) * 8;
    }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        const seg::Layout lay = seg::Layout::of(a);
        const int64_t total = lay.elements(), nt = tiles(lay);
        if (nt > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // the counter overshoots by a few per warp
        int64_t width;
        const int64_t count = slot_count(lay, a.batch.longest, width);
        char *p = static_cast<char *>(a.scratch);
        int64_t *bounds = reinterpret_cast<int64_t *>(p + 256 + align_up(S::bytes(count)));
        const int64_t words = int64_t(256 + S::zeroed_bytes(count)) / 8;
        GP_LAUNCH(flat_prologue<unsigned long long>, lookback::prologue_grid(std::max(words, nt + 1)), 256, 0,
                  a.stream, reinterpret_cast<unsigned long long *>(p), words, lay.offsets, lay.problems, TILE,
                  bounds, static_cast<int *>(nullptr), nt);
        const int64_t blocks = lookback::persistent_blocks<Shape>(nt, d);
        const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
        const auto kernel = scan_long<Shape, In, Op>;
        GP_TRY(opt_in_shared(kernel, Shape::SMEM, Shape::BARRIERS * 8));
        GP_LAUNCH_EARLY(d.major >= 9, kernel, unsigned(blocks), Shape::WARPS * WARP, Shape::SMEM, a.stream,
                        static_cast<const In *>(a.in), static_cast<Acc *>(a.out), total, lay.problems, lay.offsets,
                        bounds, a.inclusive != 0, vec,
                        total * int64_t(sizeof(In)) <= EVICT_FIRST_UP_TO,
                        reinterpret_cast<unsigned *>(p), S(p + 256, count), width, unsigned(nt));
        return cudaSuccess;
    }
};

template <class In, class Op>
struct FlatLookback {
    using Acc = typename Op::type;
    using S = seg::FlaggedSlots<Acc>;
    using Tiles = TilesWith<FlatTuning<In, Acc>, In, Op>;     // segments, rows that do not divide RowTiles' tile
    using RowTiles = TilesWith<RowTuning<In, Op>, In, Op>;   // rows of a C array that divide it
    static bool rows_divide(const seg::Layout &lay) { return lay.offsets == nullptr && RowTiles::TILE % lay.n == 0; }
    // Contiguous problems: scan_tiles; any other layout: scan_flat.
    static bool contiguous(const seg::Layout &lay) { return lay.offsets != nullptr || lay.contiguous_rows(); }
    static int64_t strided_tiles(const seg::Layout &lay) {
        return ceil_div<int64_t>(lay.elements(), int64_t(BLOCK) * items_of<Acc>());
    }
    using Long = LongWith<LongTuning<In, Acc>, In, Op>;  // segments of a long mean
    static size_t scratch(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        if (Long::takes(lay)) return Long::scratch(lay, a.batch.longest);
        if (contiguous(lay)) return rows_divide(lay) ? RowTiles::scratch(lay) : Tiles::scratch(lay);
        int64_t count;
        lookback::Levels::of(strided_tiles(lay), count);
        return 256 + S::bytes(count);
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        if (contiguous(lay)) {
            DeviceFacts d;
            GP_TRY(device_facts(d));
            if (Long::takes(lay)) return Long::run(a, d);
            if (lay.offsets != nullptr) return Tiles::template run<true>(a, d);
            return rows_divide(lay) ? RowTiles::template run<false>(a, d) : Tiles::template run<false>(a, d);
        }
        const int64_t tiles = strided_tiles(lay);
        if (tiles >= (int64_t(1) << 35) || tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
        int64_t count;
        const lookback::Levels lv = lookback::Levels::of(tiles, count);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(cudaMemsetAsync(p, 0, 256 + S::zeroed_bytes(count), a.stream));
        unsigned long long *ticket = reinterpret_cast<unsigned long long *>(p);
        GP_LAUNCH((scan_flat<In, Op>), unsigned(tiles), BLOCK, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), lay, a.inclusive != 0, ticket, S(p + 256, count), lv);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_segmented_lookback(gp_scan_args *a) { return seg::dispatch<FlatLookback>(a); }

GP_KERNEL_OF(gp_scan_segmented_lookback_kernel, scan_tiles<RowTuning<float, Sum<float>>, float, Sum<float>, false>)
// The dynamic shared memory of that kernel (its rings), after its opt-in to
// more than 48 KiB as run() makes it: an occupancy query sees it as launched.
size_t gp_scan_segmented_lookback_smem(int) {
    using Shape = RowTuning<float, Sum<float>>;
#ifndef GP_EMULATOR
    cudaFuncSetAttribute(scan_tiles<Shape, float, Sum<float>, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         Shape::SMEM);
#endif
    return Shape::SMEM;
}
GP_NAMESPACE_END
