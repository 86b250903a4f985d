// decoupled_lookback.cuh - the look-back scan's tile algorithm, its kernel
// and its launch: a warp's ring of tiles in shared memory (Ring,
// WarpRing), the scan and the write of a tile in registers, the kernel
// (scan_lookback) and the host side (LookbackWith, Lookback).  The
// algorithm is explained in 05_decoupled_lookback.cu, which instantiates
// it for the library; the tile-status protocol is in lookback.cuh, the
// tunings in lookback_tuning.cuh.  bench/tune_scan.cu and
// bench/profile_scan.cu include this header to time and profile other
// shapes, through the Probe hook below.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "../async_copy.cuh"
#include "lookback.cuh"
#include "lookback_tuning.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN
namespace lookback {

// ------------------------------------------------------------ the probe
// The one hook for the tuning programs: the kernel takes a Probe type and
// calls it at fixed points of a warp's loop.  The library's NoProbe does
// nothing and compiles to nothing.  bench/profile_scan.cu's probe reads
// clock64() at each mark (mark(k) ends part k of an iteration);
// bench/tune_scan.cu's sets LOOK_BACK = false to time the tile pass alone:
// no totals published, every tile without its prefix (wrong results).
enum ProbePart { START, LAND, PUBLISH, SCAN, TAKE, LOOKBACK, WRITE, PARTS };

struct NoProbe {
    static constexpr bool LOOK_BACK = true;
    __device__ void mark(ProbePart) {}  // the part of the iteration that ends here
    __device__ void iteration(int) {}   // an iteration ends (the lane calls)
    __device__ void end(int) {}         // the warp's loop ends (the lane calls)
};

// --------------------------------------------------------- a warp's tiles
// The layout of a tile in a stage of the ring.  `stage` is the lane's part
// of one stage: round v of the tile is the 16-byte vectors v * 32 + lane,
// so the lane's vector of round v lies v * WARP * 16 bytes on, and it
// holds elements first(t, v, lane) ... + VEC - 1 of tile t.  Each lane
// copies and reads its own vectors only: no barrier.
template <int VPT, class In>
struct Ring {
    static constexpr int VEC = 16 / sizeof(In), TILE = VPT * WARP * VEC, STAGE_BYTES = VPT * WARP * 16;
    __device__ static int64_t first(int64_t t, int v, int lane) {
        return t * TILE + (int64_t(v) * WARP + lane) * VEC;
    }
    // Start copying tile t into the stage: cp.async for whole vectors in
    // range (evict-first: async_copy16's), element by element at the end of
    // the input.
    __device__ static void fill(unsigned char *stage, const In *in, int64_t n, bool vector_ok, int64_t t, int lane,
                                bool evict_first = false) {
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const int64_t i0 = first(t, v, lane);
            unsigned char *dst = stage + v * WARP * 16;
            if (vector_ok && i0 + VEC <= n) {
                async_copy16(dst, in + i0, evict_first);
            } else {
                In *d = reinterpret_cast<In *>(dst);
#pragma unroll
                for (int k = 0; k < VEC; ++k)
                    if (i0 + k < n) d[k] = in[i0 + k];
            }
        }
    }
    // The lane's vector v (`stage`: the lane's part of the stage), the
    // identity past n (and, FROM, before `from`).
    template <class Op, bool FROM = false>
    __device__ static void read(const unsigned char *stage, int64_t t, int v, int64_t n, int lane,
                                typename Op::type (&e)[VEC], int64_t from = 0) {
        const int64_t i0 = first(t, v, lane);
        In raw[VEC];
        const uint4 w = *reinterpret_cast<const uint4 *>(stage + v * WARP * 16);  // one 16-byte load
        memcpy(raw, &w, 16);
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            e[k] = i0 + k < n && (!FROM || i0 + k >= from) ? typename Op::type(raw[k]) : Op::identity();
    }
    // Vector q of tile t (`stage`: the stage's start), as read's.  read
    // keeps its own body: written as read_at(stage - lane * 16, ..., v * 32
    // + lane) it compiled to other code for the 4-byte kernels.
    template <class Op>
    __device__ static void read_at(const unsigned char *stage, int64_t t, int q, int64_t n,
                                   typename Op::type (&e)[VEC]) {
        const int64_t i0 = t * TILE + int64_t(q) * VEC;
        In raw[VEC];
        const uint4 w = *reinterpret_cast<const uint4 *>(stage + q * 16);
        memcpy(raw, &w, 16);
#pragma unroll
        for (int k = 0; k < VEC; ++k) e[k] = i0 + k < n ? typename Op::type(raw[k]) : Op::identity();
    }
    // The tile's vector in the lane's place j of a tile read in runs of RUN
    // (LookbackShape::RUN): run s = j / RUN of the lane is vectors s * RUN *
    // 32 + lane * RUN ... + RUN - 1.
    template <int RUN>
    __device__ static int run_vector(int j, int lane) {
        return (j / RUN) * RUN * WARP + lane * RUN + j % RUN;
    }
    // The tile's total: pairwise within each vector, pairwise over the
    // lane's vectors, then a warp tree - deterministic, and no rounding
    // path longer than log2 of the tile.  The whole warp calls it.  FROM:
    // the total of the elements from `from` on (a segmented tile's total
    // after its last head).
    template <class Op, bool FROM = false>
    __device__ static typename Op::type total(const unsigned char *stage, int64_t t, int64_t n, Op op, int lane,
                                              int64_t from = 0) {
        using Acc = typename Op::type;
        Acc lane_sum[VPT];
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            Acc e[VEC];
            read<Op, FROM>(stage, t, v, n, lane, e, from);
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

// A warp's ring of STAGES tiles in flight: t[q] is the q-th oldest tile,
// in stage (s0 + q) % STAGES; bit s of `parity`: the phase of the fill now
// in stage s; bit q of `published`: t[q]'s total is out.  A tile index of
// `tiles` means none.  Each stage has a completion barrier that says,
// without waiting, whether its tile has landed.  t[] is the kernel's
// array, not a member: start() indexes it with a bound known only at run
// time, which puts it in local memory, and as a member it would take the
// whole ring there.  The whole warp calls every member.
template <class Shape, class In, bool BULK>
struct WarpRing {
    using R = Ring<Shape::VPT, In>;
    static constexpr int STAGES = Shape::STAGES, SB = R::STAGE_BYTES;

    const In *in;
    int64_t n;
    bool vector_ok;
    bool evict_first;  // the copies' lines leave the L2 first (async_copy.cuh)
    unsigned *next_tile;
    unsigned tiles;
    int lane;
    unsigned char *stages;  // the warp's stages: stage s at s * SB
    unsigned char *mine;    // the lane's part of stage 0
    unsigned long long *bar;
    unsigned (&t)[STAGES];
    unsigned parity = 0, published = 0;
    int s0 = 0;

    // `barriers`: the block's, STAGES a warp.
    __device__ WarpRing(const In *in_, int64_t n_, bool vector_ok_, unsigned *next_tile_, unsigned tiles_, int lane_,
                        int warp, unsigned long long *barriers, unsigned (&t_)[STAGES], bool evict_first_ = false)
        : in(in_), n(n_), vector_ok(vector_ok_), evict_first(evict_first_), next_tile(next_tile_), tiles(tiles_),
          lane(lane_),
          stages(dynamic_shared_memory() + warp * STAGES * SB), mine(stages + lane * 16),
          bar(barriers + warp * STAGES), t(t_) {
        if (lane == 0) {
            for (int s = 0; s < STAGES; ++s) async_barrier_init(bar + s, BULK ? 1 : WARP);
            fence_barrier_init();
        }
        __syncwarp();
    }

    // The next tile from the counter, in order (`tiles`: none left).  A tile
    // taken starts loading at once: the tiles after it may wait for its
    // total.
    __device__ unsigned take() const {
        unsigned got = 0;
        if (lane == 0) got = atomicAdd(next_tile, 1u);
        got = __shfl_sync(FULL_MASK, got, 0);
        return got < tiles ? got : tiles;
    }

    // Fill stage s with tile `tile`: one bulk copy for a whole aligned
    // tile, or each lane its own vectors (cp.async, or synchronously next
    // to bulk copies and at the end of the input); the stage's barrier
    // completes its phase when the tile has landed.
    __device__ void fill(unsigned tile, int s) const {
        if (tile >= tiles) return;
        if (BULK && vector_ok && (int64_t(tile) + 1) * R::TILE <= n) {
            __syncwarp();  // every lane is done with what the stage held
            if (lane == 0) {
                fence_proxy_async();
                bulk_copy(stages + s * SB, in + int64_t(tile) * R::TILE, SB, bar + s, evict_first);
            }
        } else if (BULK) {
            R::fill(mine + s * SB, in, n, false, tile, lane);
            fence_proxy_async();
            __syncwarp();
            if (lane == 0) barrier_arrive(bar + s);
        } else {
            R::fill(mine + s * SB, in, n, vector_ok, tile, lane, evict_first);
            async_arrive(bar + s);
        }
    }

    // The first fills.  Where there are no more tiles than warps, a warp
    // takes one (two would leave others idle), the one of its place in the
    // grid, as CUB does: blocks start in order, so a warp only waits for
    // warps that have started; it is known before the zeroing of the
    // counter and the slots is done (GP_LAUNCH_EARLY), so the warp loads it
    // first.  Otherwise tiles come from the counter.
    __device__ void start(int warp) {
        const bool few = tiles <= unsigned(gridDim.x) * Shape::WARPS;
        if (few) {
            const unsigned own = blockIdx.x * Shape::WARPS + warp;
            t[0] = own < tiles ? own : tiles;
            fill(t[0], 0);
        }
        grid_dependency_wait();
#pragma unroll
        for (int s = few ? 1 : 0; s < STAGES; ++s) {
            t[s] = few ? tiles : take();
            fill(t[s], s);
        }
    }

    __device__ int stage_of(int q) const { return s0 + q < STAGES ? s0 + q : s0 + q - STAGES; }
    __device__ bool landed(int q) const {
        const int s = stage_of(q);
        return __all_sync(FULL_MASK, async_landed(bar + s, (parity >> s) & 1u));
    }
    __device__ void wait_oldest() const {
        async_wait_landed(bar + s0, (parity >> s0) & 1u);
        __syncwarp();
    }
    // Wait for t[q] to land (where there is one).
    __device__ void wait_landed(int q) const {
        if (t[q] >= tiles) return;
        const int s = stage_of(q);
        async_wait_landed(bar + s, (parity >> s) & 1u);
        __syncwarp();
    }
    // The lane's vectors of tile `tile`, landed in stage s (the oldest's:
    // s0).
    template <class Op>
    __device__ void read_stage(int s, int64_t tile, typename Op::type (&x)[Shape::VPT][R::VEC]) const {
#pragma unroll
        for (int v = 0; v < Shape::VPT; ++v) R::template read<Op>(mine + s * SB, tile, v, n, lane, x[v]);
    }
    template <class Op>
    __device__ void read_oldest(typename Op::type (&x)[Shape::VPT][R::VEC]) const {
        read_stage<Op>(s0, t[0], x);
    }
    // The oldest tile's vectors in the lane's runs of RUN (Ring::run_vector).
    template <class Op, int RUN>
    __device__ void read_oldest_runs(typename Op::type (&x)[Shape::VPT][R::VEC]) const {
#pragma unroll
        for (int j = 0; j < Shape::VPT; ++j)
            R::template read_at<Op>(stages + s0 * SB, t[0], R::template run_vector<RUN>(j, lane), n, x[j]);
    }
    // The totals of the lane's vectors of the oldest tile, each summed in
    // the order of the vector's scan (its last element).
    template <class Op>
    __device__ void vector_totals(typename Op::type (&tot)[Shape::VPT]) const {
        const Op op;
#pragma unroll
        for (int v = 0; v < Shape::VPT; ++v) {
            typename Op::type e[R::VEC];
            R::template read<Op>(mine + s0 * SB, t[0], v, n, lane, e);
            tot[v] = e[0];
#pragma unroll
            for (int k = 1; k < R::VEC; ++k) tot[v] = op(tot[v], e[k]);
        }
    }

    // Call publish(q, stage) for each landed tile whose total is not out
    // (t[q], the lane's part of its stage), oldest first, up to the first
    // that has not landed (a younger one could need its total), and mark it
    // published.
    template <class Publish>
    __device__ void each_landed(Publish publish) {
#pragma unroll
        for (int q = 0; q < STAGES; ++q) {
            if ((published >> q) & 1u) continue;
            if (t[q] >= tiles || !landed(q)) break;
            publish(q, static_cast<const unsigned char *>(mine + stage_of(q) * SB));
            published |= 1u << q;
        }
    }
    // Publish the totals of the landed tiles (each_landed).
    template <class S, class Op>
    __device__ void publish_landed(const S &slots, const Levels &lv, const Rows &rows, Op op) {
        each_landed([&](int q, const unsigned char *stage) {
            publish_totals(rows.local(t[q]), R::total(stage, t[q], n, op, lane), rows.slots_of(slots, t[q]), lv, op,
                           lane);
        });
    }
    // Whether a tile of the ring still has its total to publish.
    __device__ bool pending() const {
        bool any = false;
#pragma unroll
        for (int q = 0; q < STAGES; ++q) any = any || (t[q] < tiles && !((published >> q) & 1u));
        return any;
    }

    // Drop the oldest tile from the ring (its stage's next fill is a new
    // phase) and return its stage; the youngest place is left to the caller
    // (EMPTY: set to none here).
    template <bool EMPTY = false>
    __device__ int drop_oldest() {
        const int s = s0;
#pragma unroll
        for (int q = 0; q + 1 < STAGES; ++q) t[q] = t[q + 1];
        if (EMPTY) t[STAGES - 1] = tiles;
        published >>= 1;
        parity ^= 1u << s;
        return s;
    }
    // The youngest place: the next tile from the counter, or none where the
    // tiles before it ran out.
    __device__ void claim_youngest() { t[STAGES - 1] = t[STAGES - 2] < tiles ? take() : tiles; }
    // The oldest tile is in registers: drop it from the ring, take the tile
    // that will refill its stage, and return that stage.
    __device__ int retire_oldest() {
        const int s = drop_oldest();
        claim_youngest();
        return s;
    }
    // retire_oldest for a warp that refills the stage only after its write
    // (rows_lookback.cuh): the youngest place stays empty until
    // claim_and_fill, so a tile's index is taken from the counter when its
    // copy starts - the tiles after it never wait for its total through
    // this warp's look-back and write.
    __device__ int retire_oldest_unclaimed() {
        const int s = drop_oldest<true>();
        advance(s);
        return s;
    }
    __device__ void claim_and_fill(int s) {
        claim_youngest();
        fill(t[STAGES - 1], s);
    }
    // Refill stage s (the oldest's) with the youngest tile, now (refill) or
    // after the old tile is read again (advance, then fill): the youngest
    // tile's stage has not completed its next phase until then, so the
    // tiles before it are published as usual.
    __device__ void advance(int s) { s0 = s + 1 < STAGES ? s + 1 : 0; }
    __device__ void refill(int s) {
        advance(s);
        fill(t[STAGES - 1], s);
    }
};

// ------------------------------------------------------ a tile in registers
// The tile's own scan, the lane's vectors in runs of RUN (Ring::run_vector;
// RUN 1: striped): each run x[s * RUN ...][] becomes the inclusive scan of
// its elements in order, base[s] what comes before the lane's run s within
// the tile (the tile's total, published earlier, comes from Ring::total).
// A warp scan a run.
template <int RUN, int VPT, int VEC, class Acc, class Op>
__device__ inline void scan_runs(Acc (&x)[VPT][VEC], Acc (&base)[VPT / RUN], Op op, int lane) {
    Acc carry = Op::identity();
#pragma unroll
    for (int s = 0; s < VPT / RUN; ++s) {
#pragma unroll
        for (int j = s * RUN; j < (s + 1) * RUN; ++j)
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                if (j > s * RUN || k > 0) x[j][k] = op(k > 0 ? x[j][k - 1] : x[j - 1][VEC - 1], x[j][k]);
        const Acc inc = scan::warp_inclusive_scan(x[(s + 1) * RUN - 1][VEC - 1], op);
        const Acc exc = __shfl_up_sync(FULL_MASK, inc, 1);
        base[s] = lane > 0 ? op(carry, exc) : carry;
        carry = op(carry, __shfl_sync(FULL_MASK, inc, WARP - 1));
    }
}
template <int VPT, int VEC, class Acc, class Op>
__device__ inline void scan_tile(Acc (&x)[VPT][VEC], Acc (&base)[VPT], Op op, int lane) {
    scan_runs<1>(x, base, op, lane);
}

// The base[] of scan_tile from the totals of the lane's vectors alone (the
// same values: HOLD shapes scan the vectors themselves when they write).
template <int VPT, class Acc, class Op>
__device__ inline void scan_totals(const Acc (&tot)[VPT], Acc (&base)[VPT], Op op, int lane) {
    Acc carry = Op::identity();
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
        const Acc inc = scan::warp_inclusive_scan(tot[v], op);
        const Acc exc = __shfl_up_sync(FULL_MASK, inc, 1);
        base[v] = lane > 0 ? op(carry, exc) : carry;
        carry = op(carry, __shfl_sync(FULL_MASK, inc, WARP - 1));
    }
}

// Write tile `tile`, scanned in runs of RUN (scan_runs): prefix p (where
// the tile has one), then what comes before the run, then the run's
// elements.  OUT (LookbackShape::OUT) 0: each lane stores its runs; 1 and
// 2, for a whole tile of aligned vectors: the lanes put their runs in the
// warp's buffer `buf` (the tile's bytes in order), then the warp stores it
// striped (1) or lane 0 by a bulk copy (2); other tiles as 0.  STREAM:
// evict-first stores.  The elements from n on are not written (nor, FROM,
// those before `from`; OUT 0 only).
template <bool STREAM, class R, int RUN, int OUT, bool FROM = false, int VPT, int VEC, class Acc, class Op>
__device__ inline void write_runs(Acc *out, int64_t n, bool inclusive, bool vector_ok, const Acc (&x)[VPT][VEC],
                                  const Acc (&base)[VPT / RUN], bool has_prefix, Acc p, Op op, int64_t tile,
                                  int lane, unsigned char *buf, int64_t from = 0) {
    static_assert(!FROM || OUT == 0, "a buffer holds whole tiles");
    constexpr int VB = VEC * sizeof(Acc), WORDS = VB / 16;  // a vector's results: bytes, 16-byte words
    const bool whole = OUT > 0 && vector_ok && (tile + 1) * R::TILE <= n;
    if (whole) {  // the buffer's last tile is read
        if (OUT == 2 && lane == 0) bulk_store_wait<true>();
        __syncwarp();
    }
#pragma unroll
    for (int s = 0; s < VPT / RUN; ++s) {
        const Acc b = has_prefix ? op(p, base[s]) : base[s];
#pragma unroll
        for (int j = s * RUN; j < (s + 1) * RUN; ++j) {
            Acc r[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                r[k] = inclusive               ? op(b, x[j][k])
                       : k > 0                 ? op(b, x[j][k - 1])
                       : j > s * RUN           ? op(b, x[j - 1][VEC - 1])
                                               : b;
            const int q = R::template run_vector<RUN>(j, lane);
            uint4 w[WORDS];
            memcpy(w, r, sizeof r);
            if (whole) {
#pragma unroll
                for (int c = 0; c < WORDS; ++c) reinterpret_cast<uint4 *>(buf + q * VB)[c] = w[c];
                continue;
            }
            const int64_t i0 = tile * R::TILE + int64_t(q) * VEC;
            if (vector_ok && i0 + VEC <= n && (!FROM || i0 >= from)) {
#pragma unroll
                for (int c = 0; c < WORDS; ++c) {
                    uint4 *dst = reinterpret_cast<uint4 *>(out + i0) + c;
                    if (STREAM) __stcs(dst, w[c]);
                    else *dst = w[c];
                }
            } else {
#pragma unroll
                for (int k = 0; k < VEC; ++k)
                    if (i0 + k < n && (!FROM || i0 + k >= from)) out[i0 + k] = r[k];
            }
        }
    }
    if (!whole) return;
    if (OUT == 2) {
        fence_proxy_async();
        __syncwarp();
        if (lane == 0) bulk_store(out + tile * R::TILE, buf, unsigned(R::TILE * sizeof(Acc)), STREAM);
        return;
    }
    __syncwarp();
    uint4 *dst = reinterpret_cast<uint4 *>(out + tile * R::TILE);
    const uint4 *src = reinterpret_cast<const uint4 *>(buf);
#pragma unroll
    for (int i = lane; i < VPT * WARP * WORDS; i += WARP) {
        if (STREAM) __stcs(dst + i, src[i]);
        else dst[i] = src[i];
    }
}
// write_runs of a striped tile (scan_tile's), stored from registers.
template <bool STREAM, class R, bool FROM = false, int VPT, int VEC, class Acc, class Op>
__device__ inline void write_tile(Acc *out, int64_t n, bool inclusive, bool vector_ok, const Acc (&x)[VPT][VEC],
                                  const Acc (&base)[VPT], bool has_prefix, Acc p, Op op, int64_t tile, int lane,
                                  int64_t from = 0) {
    write_runs<STREAM, R, 1, 0, FROM>(out, n, inclusive, vector_ok, x, base, has_prefix, p, op, tile, lane, nullptr,
                                      from);
}

// ------------------------------------------------------------- the kernel
// Persistent warps: each waits for its oldest tile to land, publishes the
// totals of what has landed, scans the tile in registers, refills the
// stage with the next tile, gathers the tile's prefix (publishing what
// lands meanwhile) and writes the tile.
//
// The slots of a shape's totals: 4-byte ones packed with their flag,
// 8-byte ones in paired words (or FENCED), wider ones fenced.
template <class Shape, class Acc>
using SlotsOf = std::conditional_t<sizeof(Acc) == 8 && !Shape::FENCED, PairedSlots<Acc>, Slots<Acc>>;

// Whether a shape's stages are filled by bulk copies: where it asks for
// them and the code being compiled has them (GP_BULK_COPIES).
template <class Shape>
__host__ __device__ constexpr bool bulk_copies() {
#ifdef GP_BULK_COPIES
    return Shape::BULK;
#else
    return false;
#endif
}

template <class Shape, class In, class Op, class Probe = NoProbe>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_lookback(const In *in, typename Op::type *out, int64_t n, bool inclusive, bool vector_ok, bool evict_first,
              unsigned *next_tile, SlotsOf<Shape, typename Op::type> slots, Levels lv, Rows rows, unsigned tiles) {
    using Acc = typename Op::type;
    using W = WarpRing<Shape, In, bulk_copies<Shape>()>;
    constexpr bool LOOK_BACK = Probe::LOOK_BACK;
    const Op op;
    Probe probe;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    constexpr int RUN = Shape::RUN;
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned t[W::STAGES];
    W ring(in, n, vector_ok, next_tile, tiles, lane, warp, barriers, t, evict_first);
    // The warp's output buffer (Shape::OUT > 0), after the rings.
    unsigned char *const buf =
        dynamic_shared_memory() + Shape::SMEM + warp * Shape::template out_bytes<In, Acc>();
    ring.start(warp);
    probe.mark(START);  // the first fills and the wait for the zeroing

    while (t[0] < tiles) {
        const unsigned t0 = t[0];
        const int64_t tile = t0;
        ring.wait_oldest();
        probe.mark(LAND);
        if (LOOK_BACK) ring.publish_landed(slots, lv, rows, op);  // the tile among them, if it was not out yet
        probe.mark(PUBLISH);
        Acc x[Shape::VPT][W::R::VEC], base[Shape::VPT / RUN];
        if constexpr (Shape::HOLD) {  // only the vectors' totals now: the tile stays in its stage
            Acc tot[Shape::VPT];
            ring.template vector_totals<Op>(tot);
            scan_totals(tot, base, op, lane);
        } else if constexpr (RUN > 1) {
            ring.template read_oldest_runs<Op, RUN>(x);
            scan_runs<RUN>(x, base, op, lane);
        } else {
            ring.template read_oldest<Op>(x);
            scan_tile(x, base, op, lane);
        }
        if (LOOK_BACK && Shape::MID_PUBLISH) ring.publish_landed(slots, lv, rows, op);
        probe.mark(SCAN);
        const int s = ring.retire_oldest();
        probe.mark(TAKE);
        if (Shape::HOLD) ring.advance(s);
        else ring.refill(s);
        // While it waits for the prefix, the warp publishes what lands in
        // its ring; with nothing left to publish it just polls.
        const bool pending = ring.pending();
        const auto publish_meanwhile = [&]() {
            if (pending) ring.publish_landed(slots, lv, rows, op);
        };
        const unsigned local = rows.local(t0);  // the tile's place in its row
        const Acc p = LOOK_BACK ? look_back(local, rows.slots_of(slots, t0), lv, op, lane, publish_meanwhile)
                                : Op::identity();
        probe.mark(LOOKBACK);
        if (Shape::HOLD) {  // the vectors' scans from the stage, as scan_tile makes them
            ring.template read_stage<Op>(s, tile, x);
#pragma unroll
            for (int v = 0; v < Shape::VPT; ++v)
#pragma unroll
                for (int k = 1; k < W::R::VEC; ++k) x[v][k] = op(x[v][k - 1], x[v][k]);
        }
        if constexpr (RUN > 1)
            write_runs<Shape::STREAM, typename W::R, RUN, Shape::OUT>(out, n, inclusive, vector_ok, x, base, local > 0,
                                                                      p, op, tile, lane, buf);
        else
            write_tile<Shape::STREAM, typename W::R>(out, n, inclusive, vector_ok, x, base, local > 0, p, op, tile,
                                                     lane);
        if (Shape::HOLD) ring.fill(ring.t[W::STAGES - 1], s);
        probe.mark(WRITE);
        probe.iteration(lane);
    }
    if (Shape::OUT == 2 && lane == 0) bulk_store_wait<false>();  // the last tile is out before the block exits
    probe.end(lane);
}

// Zero words [0, n) and let the next kernel in the stream start at once
// (GP_LAUNCH_EARLY).  A template, so that the header defines no kernel of
// its own.
template <class Word>
__global__ void zero_words(Word *p, int64_t n) {
    allow_dependent_launch();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        p[i] = 0;
}

// The grid of a prologue that loops over `work` items with a grid stride
// (zero_words, the flat look-back's): blocks of 256 threads, at most 1024.
inline unsigned prologue_grid(int64_t work) {
    return unsigned(std::min<int64_t>(ceil_div<int64_t>(work, 256), 1024));
}

// Enqueue zero_words over the 8-byte words [0, words) of p.  A template for
// the reason zero_words is one.
template <class Word = unsigned long long>
cudaError_t launch_zero_words(void *p, int64_t words, cudaStream_t stream) {
    GP_LAUNCH(zero_words<Word>, prologue_grid(words), 256, 0, stream, static_cast<Word *>(p), words);
    return cudaSuccess;
}

// ---------------------------------------------------------- the host side
// One shape: zero the counter and the slots, then launch the grid; on
// sm_90+ the scan starts while the zeroing runs, loads its first tiles and
// waits for it before it takes a tile from the counter or polls a slot.
// Given slots that outlive the call (a.cache) a small scan skips the
// zeroing: it publishes with the cache's next tag instead (lookback.cuh).
// The scratch: the counter (256 bytes), then the slots.  `rows` rows of
// a.n elements each lie end to end in a.in and a.out, each scanned alone
// (Rows); a.n a multiple of TILE where there are more than one.
template <class Shape_, class In, class Op, class Probe = NoProbe,
          int64_t EVICT_FIRST_UP_TO = lookback::evict_first_bytes<typename Op::type>()>
struct LookbackWith {
    using Shape = Shape_;
    using Acc = typename Op::type;
    using S = SlotsOf<Shape, Acc>;
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP * (16 / sizeof(In));
    // The levels of a row of n elements, and the slots of all the rows.
    static Levels levels(int64_t n, int64_t rows, int64_t &count) {
        int64_t per_row;
        const Levels lv = Levels::of(ceil_div<int64_t>(n, TILE), per_row);
        count = per_row * rows;
        return lv;
    }
    static size_t scratch(int64_t n, int64_t rows = 1) {
        int64_t count;
        levels(n, rows, count);
        return 256 + S::bytes(count);
    }
    static cudaError_t zero(const gp_scan_args &a, int64_t rows = 1) {
        int64_t count;
        levels(a.n, rows, count);
        return launch_zero_words(a.scratch, int64_t(256 + S::zeroed_bytes(count)) / 8, a.stream);
    }
    // The grid over the counter (scratch) and slots at `slot_memory` (NULL:
    // the scratch's, after the counter) tagged `tag`.  `early`: launched to
    // start while the zeroing before it runs (GP_LAUNCH_EARLY).  Only after
    // the zeroing: the warps load their first tiles before they wait on the
    // kernel before them, which must then not be one that writes the input.
    static cudaError_t launch(const gp_scan_args &a, const DeviceFacts &d, int64_t rows = 1,
                              char *slot_memory = nullptr, unsigned tag = 1, bool early = true) {
        const int64_t per_row = ceil_div<int64_t>(a.n, TILE), tiles = per_row * rows;
        if (tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // the counter overshoots by a few per warp
        if (rows > 1 && a.n % TILE != 0) return cudaErrorInvalidValue;  // a tile would straddle two rows
        int64_t count;
        const Levels lv = levels(a.n, rows, count);
        const Rows rw{unsigned(per_row), count / rows};
        char *p = static_cast<char *>(a.scratch);
        const S slots(slot_memory ? slot_memory : p + 256, count, tag);
        const int64_t blocks = persistent_blocks<Shape>(tiles, d);
        const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
        // the rings, beside the static barriers
        constexpr int SMEM = Shape::template smem<In, Acc>();
        GP_TRY(opt_in_shared(scan_lookback<Shape, In, Op, Probe>, SMEM, Shape::BARRIERS * 8));
        GP_LAUNCH_EARLY(early && d.major >= 9, (scan_lookback<Shape, In, Op, Probe>), unsigned(blocks),
                        Shape::WARPS * WARP, SMEM, a.stream, static_cast<const In *>(a.in),
                        static_cast<Acc *>(a.out), a.n * rows, a.inclusive != 0, vec,
                        a.n * rows * int64_t(sizeof(In)) <= EVICT_FIRST_UP_TO,
                        reinterpret_cast<unsigned *>(p), slots, lv, rw, unsigned(tiles));
        return cudaSuccess;
    }
    // Whether a scan of a.n elements runs on a.cache's slots: one row whose
    // tiles each get a warp of the first fills (the counter, which would
    // need zeroing, is then not used) and whose slots fit, in a form that
    // tags every word.
    static bool on_cache(const gp_scan_args &a, const DeviceFacts &d, int64_t rows) {
        if (!S::TAGGED_WORDS || a.cache == nullptr || rows != 1) return false;
        const int64_t tiles = ceil_div<int64_t>(a.n, TILE);
        int64_t count;
        levels(a.n, rows, count);
        return tiles <= resident_warps<Shape>(d) && S::bytes(count) <= a.cache->bytes;
    }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d, int64_t rows = 1) {
        if (on_cache(a, d, rows)) {
            gp_lookback_cache &c = *a.cache;
            const bool wrapped = ++c.tag == 0;  // every tag used since the memory was zeroed
            if (wrapped) {
                GP_TRY(launch_zero_words(c.slots, int64_t(c.bytes / 8), a.stream));
                c.tag = 1;
            }
            return launch(a, d, rows, static_cast<char *>(c.slots), c.tag, wrapped);
        }
        GP_TRY(zero(a, rows));
        return launch(a, d, rows);
    }
};

// The library's choice (TuningFor, lookback_tuning.cuh): a small shape
// where every tile gets a warp of its own, a large one beyond; for 4-byte
// accumulators (SmallTuning, Tuning), 8-byte inputs and accumulators
// (SmallWideTuning, WideTuning) and sums from 4 bytes into 8
// (SmallWideningTuning, WideningTuning).  The scratch covers either.
template <class In, class Op, int64_t EVICT_FIRST_UP_TO = lookback::evict_first_bytes<typename Op::type>()>
struct Lookback {
    using Small = LookbackWith<TuningFor<In, typename Op::type, true>, In, Op, NoProbe, EVICT_FIRST_UP_TO>;
    using Large = LookbackWith<TuningFor<In, typename Op::type, false>, In, Op, NoProbe, EVICT_FIRST_UP_TO>;
    static size_t scratch(int64_t n) { return std::max(Small::scratch(n), Large::scratch(n)); }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        return ceil_div<int64_t>(a.n, Small::TILE) <= resident_warps<typename Small::Shape>(d) ? Small::run(a, d)
                                                                                              : Large::run(a, d);
    }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return run(a, d);
    }
};

}  // namespace lookback
GP_NAMESPACE_END
