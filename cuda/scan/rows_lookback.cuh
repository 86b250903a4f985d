// rows_lookback.cuh - the scan along axis 0 of an array whose rows are
// one 16-byte vector each (a C-ordered (n, 4) float32 or (n, 2) float64
// array): a 1-D look-back scan whose elements are the rows, combined
// column by column.  The column scan (11_batched_columns.cu) runs it for
// those layouts; bench/tune_colscan.cu times its shapes.
//
// A row is one element of a 1-D scan under the operator applied to each
// column (RowOp), so the 1-D kernel's machinery serves unchanged: each warp
// a ring of tiles copied in ahead (WarpRing), the totals of landed tiles
// published while the warp waits, the fixed tree of totals for a tile's
// prefix (lookback.cuh) - with 16-byte totals, four 32-bit quarters each
// beside its own flag (RowSlots).  What differs is the tile's own scan.
// The 1-D kernel gives lane l the vectors l, l + 32, ... of a tile and
// scans every round across the warp; with a row as the element that is a
// warp scan of four values a round, and the shuffles bound the kernel.
// Here lane l takes the RPT consecutive rows l*RPT ... of the tile: it
// folds them alone, one warp scan of the lanes' totals gives each lane
// what comes before its rows, and the shuffles are a tile's, not a round's.
// A lane reads its rows from the stage RPT * 16 bytes apart: RPT odd puts
// the eight lanes of a shared-memory phase on eight different 16-byte
// banks.  The results go back into the same slots of the stage and leave
// in the copy's order (lane l stores vectors l, l + 32, ...: whole lines),
// so the stage is refilled only after the write (the 1-D kernel's HOLD),
// and the tile that refills it is taken from the counter only then; the
// warp waits for that tile to land and publishes its total before it looks
// back for the one it holds.
//
// Every result is the same expression of the same inputs for a given n:
// the prefix from the fixed tree of published totals, the lanes before
// from the warp scan, the rows before in the lane in order.
#pragma once

#include <cstring>

#include "decoupled_lookback.cuh"

GP_NAMESPACE_BEGIN
namespace lookback {

// A row: VEC values of T in 16 bytes.
template <class T>
struct alignas(16) Row {
    static constexpr int VEC = 16 / sizeof(T);
    T v[VEC];
    Row() = default;
    // From a row of another element type of the same size (a uint64 input
    // into int64 sums): each value widened.
    template <class U>
    __host__ __device__ explicit Row(const Row<U> &o) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[k] = widen<T>(o.v[k]);
    }
};

// Op on each column of two rows.
template <class Op>
struct RowOp {
    using Acc = typename Op::type;
    using type = Row<Acc>;
    __host__ __device__ static type identity() {
        type r;
#pragma unroll
        for (int k = 0; k < type::VEC; ++k) r.v[k] = Op::identity();
        return r;
    }
    __host__ __device__ type operator()(const type &a, const type &b) const {
        const Op op;
        type r;
#pragma unroll
        for (int k = 0; k < type::VEC; ++k) r.v[k] = op(a.v[k], b.v[k]);
        return r;
    }
};

// The warp shuffles of a row, each column moved alone; found by
// argument-dependent lookup from the collectives (warp_reduce,
// warp_inclusive_scan, broadcast0).
template <class T, class F>
__device__ __forceinline__ Row<T> each_column(Row<T> x, F f) {
#pragma unroll
    for (int k = 0; k < Row<T>::VEC; ++k) x.v[k] = f(x.v[k]);
    return x;
}
template <class T>
__device__ __forceinline__ Row<T> __shfl_sync(unsigned mask, Row<T> x, int src, int width = 32) {
    return each_column(x, [&](T v) { return ::__shfl_sync(mask, v, src, width); });
}
template <class T>
__device__ __forceinline__ Row<T> __shfl_up_sync(unsigned mask, Row<T> x, unsigned d, int width = 32) {
    return each_column(x, [&](T v) { return ::__shfl_up_sync(mask, v, d, width); });
}
template <class T>
__device__ __forceinline__ Row<T> __shfl_down_sync(unsigned mask, Row<T> x, unsigned d, int width = 32) {
    return each_column(x, [&](T v) { return ::__shfl_down_sync(mask, v, d, width); });
}

// 16-byte totals without a fence: a slot is four 64-bit words, each a
// "ready" flag (high half) beside a quarter of the value's bits (low
// half), written by two 16-byte stores and read by two 16-byte loads.  A
// reader that sees the four flags has the four quarters, whatever order
// the words arrive in (PairedSlots' argument, twice as wide).
template <class V>
struct RowSlots {
    static_assert(sizeof(V) == 16, "RowSlots holds 16-byte values");
    unsigned long long *word;  // four a slot
    static size_t bytes(int64_t count) { return size_t(count) * 32; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit RowSlots(char *p, int64_t) : word(reinterpret_cast<unsigned long long *>(p)) {}
    __host__ __device__ RowSlots shifted(int64_t by) const {
        RowSlots s = *this;
        s.word += 4 * by;
        return s;
    }
    __device__ void publish(int64_t i, const V &v) const {
        unsigned bits[4];
        memcpy(bits, &v, 16);
        unsigned long long q[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) q[k] = (1ull << 32) | bits[k];
        unsigned long long *w = word + 4 * i;
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
        asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(q[0]), "l"(q[1]) : "memory");
        asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(w + 2), "l"(q[2]), "l"(q[3]) : "memory");
#else
#pragma unroll
        for (int k = 0; k < 4; ++k) reinterpret_cast<volatile unsigned long long *>(w)[k] = q[k];
#endif
    }
    __device__ bool try_get(int64_t i, V &v) const {  // one poll
        const unsigned long long *w = word + 4 * i;
        unsigned long long q[4];
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(q[0]), "=l"(q[1]) : "l"(w) : "memory");
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(q[2]), "=l"(q[3]) : "l"(w + 2) : "memory");
#else
#pragma unroll
        for (int k = 0; k < 4; ++k) q[k] = reinterpret_cast<const volatile unsigned long long *>(w)[k];
#endif
        unsigned bits[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) bits[k] = unsigned(q[k]);
        memcpy(&v, bits, 16);
        return ((q[0] & q[1] & q[2] & q[3]) >> 32) != 0;
    }
};

// The levels of the look-back's tree a tile polls: 32^5 tiles, 2^25 tiles
// of some 500 rows (RowsWith::fits).  Each level polled holds a row in
// registers through the wait.
constexpr int ROW_LEVELS = 5;

// The kernel: `rows` rows of In in[0 .. rows), their scan under Op column
// by column into out.  Shape is a LookbackShape whose VPT is the rows a
// lane (odd), HOLD (the tile waits for its prefix in its stage); MID_PUBLISH
// and STREAM as there.  Probe::LOOK_BACK =
// false (bench/tune_colscan.cu): no totals published, every tile without
// its prefix - a wrong result, to time the tile pass alone.
template <class Shape, class In, class Op, class Probe = NoProbe>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
scan_rows(const Row<In> *in, Row<typename Op::type> *out, int64_t rows, bool inclusive, unsigned *next_tile,
          RowSlots<Row<typename Op::type>> slots, Levels lv, unsigned tiles) {
    using Acc = typename Op::type;
    using RIn = Row<In>;
    using RAcc = Row<Acc>;
    using ROp = RowOp<Op>;
    static_assert(sizeof(In) == sizeof(Acc), "results written over their inputs in the stage");
    using W = WarpRing<Shape, RIn, bulk_copies<Shape>()>;
    constexpr int RPT = Shape::VPT;
    static_assert(RPT % 2 == 1, "an odd number of rows a lane: no bank conflicts");
    static_assert(Shape::HOLD, "the results leave through the stage");
    const ROp op;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned t[W::STAGES];
    W ring(in, rows, true, next_tile, tiles, lane, warp, barriers, t);
    ring.start(warp);
    const Rows one{tiles, 0};

    while (t[0] < tiles) {
        const int64_t tile = t[0];
        ring.wait_oldest();
        if (Probe::LOOK_BACK) ring.publish_landed(slots, lv, one, op);  // the tile among them, if it was not out yet
        const int s = ring.s0;
        unsigned char *stage = ring.stages + s * W::SB;
        const int64_t first = tile * W::R::TILE + int64_t(lane) * RPT;  // the lane's first row
        RIn *mine = reinterpret_cast<RIn *>(stage) + lane * RPT;
        const auto row = [&](int k) { return first + k < rows ? RAcc(mine[k]) : ROp::identity(); };
        // The lane's rows folded in order, then the warp's scan of them.
        RAcc tot = row(0);
#pragma unroll
        for (int k = 1; k < RPT; ++k) tot = op(tot, row(k));
        const RAcc inc = scan::warp_inclusive_scan(tot, op);
        const RAcc exc = __shfl_up_sync(FULL_MASK, inc, 1);
        // The next tile's total out before this tile's look-back: wait for
        // it to land (its copy started at the last write), so that no
        // tile's total waits for its warp's look-back and write.
        if (Probe::LOOK_BACK) ring.wait_landed(1);
        if (Probe::LOOK_BACK && Shape::MID_PUBLISH) ring.publish_landed(slots, lv, one, op);
        ring.retire_oldest_unclaimed();
        const bool pending = ring.pending();
        const RAcc p = !Probe::LOOK_BACK ? ROp::identity() : look_back<ROW_LEVELS>(tile, slots, lv, op, lane, [&]() {
            if (pending) ring.publish_landed(slots, lv, one, op);
        });
        // What comes before the lane's first row: the tiles before, the
        // lanes before.
        const bool have = tile > 0 || lane > 0;
        __syncwarp();  // every lane is done reading the stage (publish_landed) before the results go in
        const RAcc carry = tile > 0 ? (lane > 0 ? op(p, exc) : p) : exc;
        RAcc run = row(0);
#pragma unroll
        for (int k = 0; k < RPT; ++k) {
            RAcc r;
            if (inclusive) {
                if (k > 0) run = op(run, row(k));
                r = have ? op(carry, run) : run;
            } else {
                r = k == 0 ? (have ? carry : ROp::identity()) : (have ? op(carry, run) : run);
                if (k > 0 && k + 1 < RPT) run = op(run, row(k));
            }
            memcpy(static_cast<void *>(mine + k), &r, 16);
        }
        __syncwarp();
        // Out in the copy's order: vector v * 32 + lane of the tile.
        const uint4 *res = reinterpret_cast<const uint4 *>(stage);
#pragma unroll
        for (int v = 0; v < RPT; ++v) {
            const int64_t i = tile * W::R::TILE + int64_t(v) * WARP + lane;
            if (i < rows) {
                uint4 *dst = reinterpret_cast<uint4 *>(out + i);
                if (Shape::STREAM) __stcs(dst, res[v * WARP + lane]);
                else *dst = res[v * WARP + lane];
            }
        }
        ring.claim_and_fill(s);  // after the stores read the stage (fill waits for the warp)
    }
}

// The host side: zero the counter and the slots, then launch the grid (on
// sm_90+ the scan starts while the zeroing runs, as LookbackWith's).  The
// scratch: the counter (256 bytes), then the slots.
template <class Shape_, class In, class Op, class Probe = NoProbe>
struct RowsWith {
    using Shape = Shape_;
    using Acc = typename Op::type;
    using S = RowSlots<Row<Acc>>;
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP;  // rows a tile
    static Levels levels(int64_t rows, int64_t &count) { return Levels::of(ceil_div<int64_t>(rows, TILE), count); }
    // Whether `rows` rows are few enough tiles for ROW_LEVELS.
    static bool fits(int64_t rows) { return ceil_div<int64_t>(rows, TILE) <= (int64_t(1) << (5 * ROW_LEVELS)); }
    static size_t scratch(int64_t rows) {
        int64_t count;
        levels(rows, count);
        return 256 + S::bytes(count);
    }
    // a.in / a.out: `rows` aligned rows of 16 bytes.
    static cudaError_t run(const gp_scan_args &a, int64_t rows, const DeviceFacts &d) {
        const int64_t tiles = ceil_div<int64_t>(rows, TILE);
        if (!fits(rows)) return cudaErrorInvalidValue;
        int64_t count;
        const Levels lv = levels(rows, count);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(launch_zero_words(p, int64_t(256 + S::zeroed_bytes(count)) / 8, a.stream));
        const int64_t blocks = persistent_blocks<Shape>(tiles, d);
        GP_TRY(opt_in_shared(scan_rows<Shape, In, Op, Probe>, Shape::SMEM, Shape::BARRIERS * 8));
        GP_LAUNCH_EARLY(d.major >= 9, (scan_rows<Shape, In, Op, Probe>), unsigned(blocks), Shape::WARPS * WARP, Shape::SMEM,
                        a.stream, static_cast<const Row<In> *>(a.in), static_cast<Row<Acc> *>(a.out), rows,
                        a.inclusive != 0, reinterpret_cast<unsigned *>(p), S(p + 256, count), lv, unsigned(tiles));
        return cudaSuccess;
    }
};

}  // namespace lookback
GP_NAMESPACE_END
