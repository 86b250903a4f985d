// column_rows.cuh - the columns step's form for few columns (11_batched_
// columns.cu): a C array of C columns (a power of two, C <= 64) scanned
// along axis 0 as ONE 1-D scan whose elements are its rows - vectors of C
// values added elementwise.  The array is one contiguous run, so the 1-D
// look-back scan's machinery carries it unchanged: decoupled_lookback.cuh's
// persistent warps, each with its ring of tiles filled by bulk copies
// (WarpRing), read and write 16-byte vectors; only what a tile computes
// differs, and what it publishes: a C-vector of column totals instead of
// one total.  The publication is the columns kernels' per-column protocol
// (segmented.cuh: ColumnSlots, LookBackItems, the expressions of
// lane_publish_totals and lane_look_back), whose slots already hold a
// vector: slot s of column q is word s * C + q, so a tile's C totals are C
// neighbouring words, each with its own "ready" flag (4-byte values packed
// with theirs, 8-byte ones in PairedSlots) - what the 1-D protocol would
// need for a vector payload, without a third protocol.  The warp polls the
// words of all the items a prefix (or a level total) folds at once, all 32
// lanes over the items x columns, GATHER words a lane a round (one round
// for up to 8 float32 columns, up to C / 8 rounds beyond), and shuffles
// each column's items to the lanes that fold them in order - where the
// per-lane look-back (lane_look_back) polls a column's items 8 at a time.
//
// The tile: VPT rounds of the warp's 32 consecutive 16-byte vectors, as in
// the 1-D scan; row r of the array is elements r*C ... r*C + C-1 of the
// run.  Since C divides 32 * VEC (VEC = 16 / sizeof(element)), a lane's
// vectors hold the same columns in every round: with C < VEC a vector is
// VEC / C whole rows, element k column k % C (PE = C columns a vector);
// with C >= VEC a row is V = C / VEC vectors and lane l holds columns
// VEC * (l % V) ... + VEC-1 (PE = VEC).  A round is scanned as the 1-D
// scan's round is: within the vector (elements PE apart), across the warp
// with shuffles between lanes V apart (a row's vectors are V lanes apart),
// and from round to round by a carry - PE sums at once instead of one, so
// PE times the 1-D scan's shuffles a round less the levels the V lanes of
// a row skip (float32: 24 a round for 4 columns, 16 for 16, 8 for 64,
// against the 1-D scan's 7).
// Why this mapping and not lanes owning columns (lane j column j % C, a
// warp step 32 / C rows of 4-byte elements, each lane scanning down its
// column and combining with the lanes of its column across the step's
// rows, or each lane scanning a run of consecutive rows): every memory
// access here is the 1-D scan's - bulk copies into the ring's plain
// layout, conflict-free 16-byte reads of it, 16-byte evict-first stores -
// where 4-byte lanes read and write four times the instructions, and
// lanes scanning runs of consecutive rows read the plain layout with
// 8-way bank conflicts.  The price is the shuffles above
// (bench/tune_colscan.cu times the form against the 1-D scan).
//
// Deterministic: a tile's total is a fixed expression of its elements (the
// lane's rounds in order, its vector's elements of one column in order,
// then a tree over the lanes of a column group), a tile's prefix the fixed
// expression of segmented.cuh's look-back for every column, and every
// result is the same expression of those - the bits never change between
// runs.
// Assumes: a contiguous run of n = rows * C elements (a C array's axis 0,
// or a 1-D array for C = 1), C a power of two <= MAX_COLUMNS, no widening
// (sizeof(In) == sizeof(Acc)); fewer than 2^31 tiles.
#pragma once

#include <algorithm>
#include <cstring>

#include "decoupled_lookback.cuh"
#include "segmented.cuh"

GP_NAMESPACE_BEGIN
namespace colrows {

constexpr int MAX_COLUMNS = 64;            // what the kernel can take (two columns a lane, below)
constexpr int CPL = MAX_COLUMNS / WARP;    // columns a lane holds in the look-back's layout

// A warp's work on C-vectors.  Two layouts of a vector of the C columns:
//   the tile's: lane l holds PE values, its columns (element k of its
//     vectors: column k % PE where C < VEC, VEC * (l % V) + k otherwise);
//   the look-back's ("by lane"): column q on lane q % 32, value q / 32 of
//     it (C < 32: lane l holds column l % C, so every lane has one).
template <class Shape, int PE, class S, class In, class Op>
struct Rows {
    using Acc = typename Op::type;
    using R = lookback::Ring<Shape::VPT, In>;
    using CS = seg::ColumnSlots<S>;
    static constexpr int VEC = R::VEC, VPT = Shape::VPT;
    static constexpr int GATHER = seg::group_of<Acc>();  // words a lane polls at once: 8 of 4 bytes, 4 wider
    static_assert(sizeof(In) == sizeof(Acc) && PE <= VEC && VEC % PE == 0, "whole vectors, no widening");

    // ------------------------------------------------ the two layouts
    // The tile's values (valid on lane 0 where C <= VEC, on lanes < V
    // otherwise) by lane.  The whole warp calls it.
    __device__ static void to_lanes(const Acc (&t)[PE], int columns, int lane, Acc (&c)[CPL]) {
#pragma unroll
        for (int h = 0; h < CPL; ++h) {
            c[h] = Op::identity();
            if (h > 0 && columns <= WARP) break;  // uniform
            const int q = columns < WARP ? lane % columns : lane + h * WARP;
            const int src = PE < VEC ? 0 : q / VEC, k = PE < VEC ? q : q % VEC;
#pragma unroll
            for (int i = 0; i < PE; ++i) {
                const Acc got = __shfl_sync(FULL_MASK, t[i], src);
                if (i == k) c[h] = got;
            }
        }
    }
    // Values by lane into the tile's layout (every lane its columns).  The
    // whole warp calls it.
    __device__ static void from_lanes(const Acc (&c)[CPL], int columns, int v, int lane, Acc (&t)[PE]) {
#pragma unroll
        for (int k = 0; k < PE; ++k) {
            const int q = PE < VEC ? k : VEC * (lane % v) + k;
            Acc got = __shfl_sync(FULL_MASK, c[0], q % WARP);
#pragma unroll
            for (int h = 1; h < CPL; ++h)
                if (columns > WARP) {  // uniform
                    const Acc hi = __shfl_sync(FULL_MASK, c[h], q % WARP);
                    if (q / WARP == h) got = hi;
                }
            t[k] = got;
        }
    }

    // ------------------------------------------------ the look-back
    // Publish a vector by lane at slot words base + q.
    __device__ static void publish_lanes(const CS &cs, int64_t base, const Acc (&c)[CPL], int columns, int lane) {
        if (columns < WARP) {
            if (lane < columns) cs.slots.publish(base + lane, c[0]);
            return;
        }
#pragma unroll
        for (int h = 0; h < CPL; ++h)
            if (h * WARP < columns) cs.slots.publish(base + h * WARP + lane, c[h]);
    }

    // The left fold, item by item, of `count` (<= 32) items of every
    // column, each waited for; acc by lane.  Item i of column q is slot
    // word run + i * C + q - the items are neighbouring slots of one level
    // - except, where pre >= 0, item 0: word pre + q (a published prefix).
    // The pairs (item, column) are polled GATHER words a lane at a time,
    // word f = i * C + q by lane f % 32, so the warp reads runs of
    // neighbouring words.  With C >= 32 the lane that polls a word is the
    // lane of its column; with fewer, item i of column q sits on lane
    // (i % K) * C + q (K = 32 / C items a word of the warp) and is shuffled
    // to the lanes of column q in order.  A round of polls reads all its
    // words again until every one is ready, so that no value is held
    // across idle() (warp-uniform: the caller's, between two rounds).  The
    // whole warp calls it.
    template <class Idle>
    __device__ static void fold_items(const CS &cs, int columns, int count, int64_t pre, int64_t run, Op op,
                                      int lane, Acc (&acc)[CPL], Idle idle) {
        const int words = count * columns, regs = (words + WARP - 1) / WARP;
        const int K = columns < WARP ? WARP / columns : 1, per = columns > WARP ? columns / WARP : 1;
#pragma unroll
        for (int h = 0; h < CPL; ++h) acc[h] = Op::identity();
        for (int m0 = 0; m0 < regs; m0 += GATHER) {
            Acc got[GATHER];
            for (;;) {
                bool all = true;
#pragma unroll
                for (int g = 0; g < GATHER; ++g) {
                    const int f = (m0 + g) * WARP + lane;
                    got[g] = Op::identity();
                    if (f < words) all = cs.slots.try_get((pre >= 0 && f < columns ? pre : run) + f, got[g]) && all;
                }
                if (__all_sync(FULL_MASK, all)) break;
                idle();
            }
#pragma unroll
            for (int g = 0; g < GATHER; ++g) {
                const int m = m0 + g;
                if (m >= regs) break;  // uniform
                if (columns >= WARP) {
                    const int item = m / per, h = m - item * per;
#pragma unroll
                    for (int hh = 0; hh < CPL; ++hh)
                        if (hh == h) acc[hh] = item == 0 ? got[g] : op(acc[hh], got[g]);
                } else {
                    for (int k = 0; k < K; ++k) {
                        const int item = m * K + k;
                        if (item >= count) break;  // uniform
                        const Acc y = __shfl_sync(FULL_MASK, got[g], k * columns + lane % columns);
                        acc[0] = item == 0 ? y : op(acc[0], y);
                    }
                }
            }
        }
    }

    // Publish tile c's column totals (by lane), and the totals of the
    // aligned blocks of 32^(j+1) tiles it ends: seg::lane_publish_totals
    // for every column at once (the 31 other blocks folded left to right,
    // then its own).  The whole warp calls it.
    __device__ static void publish_totals(const CS &cs, int64_t c, Acc (&own)[CPL], int columns, Op op, int lane) {
        publish_lanes(cs, cs.total(0, c, 0), own, columns, lane);
        if (lookback::digit(c, 0) == 31) publish_levels(cs, c, own, columns, op, lane);
    }
    // The levels' part, one tile in 32: a call of its own, so that the
    // registers it needs are saved only when it runs.
    __device__ __noinline__ static void publish_levels(const CS &cs, int64_t c, Acc (&own)[CPL], int columns, Op op,
                                                      int lane) {
        for (int j = 0; j + 1 < lookback::LEVELS && lookback::digit(c, j) == 31; ++j) {
            const int64_t b0 = (c >> (5 * j)) - 31;
            Acc f[CPL];
            fold_items(cs, columns, 31, -1, cs.total(j, b0, 0), op, lane, f, [] { lookback::spin_pause<0>(); });
#pragma unroll
            for (int h = 0; h < CPL; ++h) own[h] = op(f[h], own[h]);
            publish_lanes(cs, cs.total(j + 1, c >> (5 * (j + 1)), 0), own, columns, lane);
        }
    }

    // The prefix of tile c > 0 by lane: seg::lane_look_back for every
    // column at once (the same items, the same fold); published where c is
    // a multiple of 32.  The whole warp calls it.
    template <class Idle>
    __device__ static void look_back(const CS &cs, int64_t c, int columns, Op op, int lane, Acc (&p)[CPL],
                                     Idle idle) {
        // seg::LookBackItems' items: the prefix of `up` where up > 0, then
        // the d level-j totals of blocks b0 ... b0 + d-1.
        const seg::LookBackItems items(c);
        const bool up = items.up > 0;
        const int64_t run = cs.total(items.j, items.b0, 0) - (up ? columns : 0);
        fold_items(cs, columns, items.count(), up ? cs.prefix(items.up, 0) : -1, run, op, lane, p, idle);
        if ((c & 31) == 0) publish_lanes(cs, cs.prefix(c, 0), p, columns, lane);
    }

    // ------------------------------------------------ a tile
    // The column totals of tile t, landed in the lane's part of a stage:
    // the lane's rounds in order, then its vector's elements of one column
    // in order, then a tree over the lanes of a column group (lane g < V
    // ends with group g's; lane 0 with all of them where C <= VEC).  The
    // whole warp calls it.
    __device__ static void tile_total(const unsigned char *stage, int64_t t, int64_t n, int v, Op op, int lane,
                                      Acc (&tot)[PE]) {
        Acc a[VEC];
#pragma unroll 4  // not all the rounds' loads at once: the look-back calls it with a tile in registers
        for (int r = 0; r < VPT; ++r) {
            Acc e[VEC];
            R::template read<Op>(stage, t, r, n, lane, e);
#pragma unroll
            for (int k = 0; k < VEC; ++k) a[k] = r == 0 ? e[k] : op(a[k], e[k]);
        }
#pragma unroll
        for (int i = 0; i < PE; ++i) {
            tot[i] = a[i];
#pragma unroll
            for (int k = i + PE; k < VEC; k += PE) tot[i] = op(tot[i], a[k]);
        }
        for (int off = WARP / 2; off >= v; off >>= 1)
#pragma unroll
            for (int i = 0; i < PE; ++i) tot[i] = op(tot[i], __shfl_down_sync(FULL_MASK, tot[i], off));
    }

    // The tile's own scan, in place: x[r][] becomes each element's result
    // within the tile (inclusive, or exclusive: the identity for a
    // column's first row of the tile).  Round by round as the 1-D scan's
    // scan_tile, PE columns at once: elements PE apart within the vector,
    // then lanes V apart across the warp (their last values: the vector's
    // last PE elements), the carry of the rounds before entering at the
    // round's first row (lanes < V).  One rotation by V lanes then gives
    // lanes >= V what comes before their vector and lanes < V the round's
    // last row: the next round's carry.
    __device__ static void scan_tile(Acc (&x)[VPT][VEC], bool inclusive, int v, Op op, int lane) {
        const int from = (lane - v) & (WARP - 1);
        Acc carry[PE];
#pragma unroll
        for (int i = 0; i < PE; ++i) carry[i] = Op::identity();
#pragma unroll
        for (int r = 0; r < VPT; ++r) {
#pragma unroll
            for (int k = PE; k < VEC; ++k) x[r][k] = op(x[r][k - PE], x[r][k]);
            Acc s[PE], b[PE];
#pragma unroll
            for (int i = 0; i < PE; ++i) s[i] = lane < v ? op(carry[i], x[r][VEC - PE + i]) : x[r][VEC - PE + i];
            for (int off = v; off < WARP; off <<= 1)
#pragma unroll
                for (int i = 0; i < PE; ++i) {
                    const Acc y = __shfl_up_sync(FULL_MASK, s[i], off);
                    if (lane >= off) s[i] = op(y, s[i]);
                }
#pragma unroll
            for (int i = 0; i < PE; ++i) {
                const Acc got = __shfl_sync(FULL_MASK, s[i], from);
                b[i] = lane >= v ? got : carry[i];
                if (lane < v) carry[i] = got;
            }
            Acc res[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k)
                res[k] = inclusive ? op(b[k % PE], x[r][k]) : (k >= PE ? op(b[k % PE], x[r][k - PE]) : b[k]);
#pragma unroll
            for (int k = 0; k < VEC; ++k) x[r][k] = res[k];
        }
    }

    // Write tile t: the prefix p (tile layout) before every result where
    // the tile has one.  STREAM: evict-first stores.
    template <bool STREAM>
    __device__ static void write_tile(Acc *out, int64_t n, bool vector_ok, const Acc (&x)[VPT][VEC], bool has_prefix,
                                      const Acc (&p)[PE], Op op, int64_t t, int lane) {
#pragma unroll
        for (int r = 0; r < VPT; ++r) {
            Acc res[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) res[k] = has_prefix ? op(p[k % PE], x[r][k]) : x[r][k];
            const int64_t i0 = R::first(t, r, lane);
            if (vector_ok && i0 + VEC <= n) {
                uint4 w;
                memcpy(&w, res, 16);
                uint4 *dst = reinterpret_cast<uint4 *>(out + i0);
                if (STREAM) __stcs(dst, w);
                else *dst = w;
            } else {
#pragma unroll
                for (int k = 0; k < VEC; ++k)
                    if (i0 + k < n) out[i0 + k] = res[k];
            }
        }
    }
};

// ------------------------------------------------------------- the kernel
// decoupled_lookback.cuh's scan_lookback with C-vectors: each warp waits
// for its oldest tile, publishes the column totals of what has landed,
// scans the tile in registers, refills the stage, gathers the tile's
// column prefixes (publishing what lands meanwhile) and writes the tile.
// Deadlock-free for the 1-D scan's reason: a tile only ever waits for
// smaller tiles, and the warp holding the smallest unpublished one
// publishes it as soon as it lands.  n: the elements of the run (rows * C).
template <class Shape, int PE, class S, class In, class Op>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_column_rows(const In *in, typename Op::type *out, int64_t n, int columns, bool inclusive, bool vector_ok,
                 unsigned *next_tile, seg::ColumnSlots<S> cs, unsigned tiles) {
    using Acc = typename Op::type;
    using T = Rows<Shape, PE, S, In, Op>;
#ifdef GP_BULK_COPIES
    constexpr bool BULK = Shape::BULK;
#else
    constexpr bool BULK = false;
#endif
    using W = lookback::WarpRing<Shape, In, BULK>;
    static_assert(!Shape::HOLD, "the tile waits for its prefix in registers");
    constexpr int VEC = T::VEC;
    const Op op;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int v = columns > VEC ? columns / VEC : 1;  // lanes a row spans
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned t[W::STAGES];
    W ring(in, n, vector_ok, next_tile, tiles, lane, warp, barriers, t);
    ring.start(warp);

    // Publish the column totals of the landed tiles, oldest first, up to
    // the first that has not landed (WarpRing::publish_landed's order).
    const auto publish_landed = [&]() {
#pragma unroll
        for (int q = 0; q < W::STAGES; ++q) {
            if ((ring.published >> q) & 1u) continue;
            if (t[q] >= tiles || !ring.landed(q)) break;
            Acc tot[PE], own[CPL];
            T::tile_total(ring.mine + ring.stage_of(q) * W::SB, t[q], n, v, op, lane, tot);
            T::to_lanes(tot, columns, lane, own);
            T::publish_totals(cs, t[q], own, columns, op, lane);
            ring.published |= 1u << q;
        }
    };

    while (t[0] < tiles) {
        const int64_t tile = t[0];
        ring.wait_oldest();
        publish_landed();  // the tile among them, if it was not out yet
        Acc x[Shape::VPT][VEC];
        ring.template read_oldest<Op>(x);
        T::scan_tile(x, inclusive, v, op, lane);
        if (Shape::MID_PUBLISH) publish_landed();
        ring.refill(ring.retire_oldest());
        Acc p[CPL], pt[PE];
#pragma unroll
        for (int k = 0; k < PE; ++k) pt[k] = Op::identity();
        if (tile > 0) {
            const bool pending = ring.pending();
            T::look_back(cs, tile, columns, op, lane, p, [&]() {
                if (pending) publish_landed();
            });
            T::from_lanes(p, columns, v, lane, pt);
        }
        T::template write_tile<Shape::STREAM>(out, n, vector_ok, x, tile > 0, pt, op, tile, lane);
    }
}

// ---------------------------------------------------------- the host side
// One shape: zero the counter and the slots, then launch the persistent
// grid (early on sm_90+, as the 1-D scan: it loads its first tiles while
// the zeroing runs).  The scratch: the counter (256 bytes), then the
// slots, C words of each.  S: the slots of a column's values
// (11_batched_columns.cu's ColumnSlotsOf).
template <class Shape_, class S, class In, class Op>
struct ColumnRowsWith {
    using Shape = Shape_;
    using Acc = typename Op::type;
    using CS = seg::ColumnSlots<S>;
    static constexpr int VEC = 16 / sizeof(In);
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP * VEC;
    static_assert(TILE % MAX_COLUMNS == 0, "tiles of whole rows");
    // Whether a layout is a run of rows it takes: one problem slab (outer
    // 1) of C contiguous columns, C a power of two up to MAX_COLUMNS, rows
    // one after the other; both pointers 16-byte aligned.
    static bool fits(const gp_scan_args &a, int64_t max_columns) {
        const gp_batch &b = a.batch;
        const int64_t c = b.inner;
        return sizeof(In) == sizeof(Acc) && b.offsets == nullptr && b.outer == 1 && c >= 1 &&
               c <= std::min<int64_t>(max_columns, MAX_COLUMNS) && (c & (c - 1)) == 0 && (c == 1 || b.s_inner == 1) &&
               (a.n == 1 || b.s_n == c) && scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
    }
    static int64_t slots(int64_t tiles, int64_t columns, int64_t &levels_count) {
        return CS::count(tiles, levels_count) * columns;
    }
    static size_t scratch(const gp_scan_args &a) {
        int64_t lc;
        return 256 + S::bytes(slots(ceil_div<int64_t>(a.n * a.batch.inner, TILE), a.batch.inner, lc));
    }
    template <int PE>
    static cudaError_t launch(const gp_scan_args &a, const DeviceFacts &d, unsigned blocks, const CS &cs,
                              unsigned tiles) {
        const int64_t n = a.n * a.batch.inner;
#ifndef GP_EMULATOR
        // The opt-in past the 48 KiB of shared memory a launch gets without
        // it, as LookbackWith's (the emulator stops at 48 KiB).
        if (Shape::SMEM + Shape::BARRIERS * 8 > 48 * 1024)
            GP_TRY(cudaFuncSetAttribute(scan_column_rows<Shape, PE, S, In, Op>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::SMEM));
#endif
        GP_LAUNCH_EARLY(d.major >= 9, (scan_column_rows<Shape, PE, S, In, Op>), blocks, Shape::WARPS * WARP,
                        Shape::SMEM, a.stream, static_cast<const In *>(a.in), static_cast<Acc *>(a.out), n,
                        int(a.batch.inner), a.inclusive != 0, true, static_cast<unsigned *>(a.scratch), cs, tiles);
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a, const DeviceFacts &d) {
        const int64_t columns = a.batch.inner, n = a.n * columns, tiles = ceil_div<int64_t>(n, TILE);
        if (tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // the counter overshoots by a few per warp
        int64_t lc;
        const int64_t count = slots(tiles, columns, lc);
        char *p = static_cast<char *>(a.scratch);
        const int64_t words = int64_t(256 + S::zeroed_bytes(count)) / 8;
        GP_LAUNCH(lookback::zero_words<unsigned long long>,
                  unsigned(std::min<int64_t>(ceil_div<int64_t>(words, 256), 1024)), 256, 0, a.stream,
                  reinterpret_cast<unsigned long long *>(p), words);
        const CS cs{S(p + 256, count), tiles, lc, columns};
        const unsigned blocks =
            unsigned(std::min<int64_t>(int64_t(d.sms) * Shape::BLOCKS, ceil_div<int64_t>(tiles, Shape::WARPS)));
        switch (std::min<int64_t>(columns, VEC)) {  // PE: the columns of a vector
        case 1:
            return launch<1>(a, d, blocks, cs, unsigned(tiles));
        case 2:
            return launch<2>(a, d, blocks, cs, unsigned(tiles));
        default:
            return launch<VEC>(a, d, blocks, cs, unsigned(tiles));
        }
    }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return run(a, d);
    }
};

}  // namespace colrows
GP_NAMESPACE_END
