// Step 13 - segmented_lookback: fixed tiles over all the problems at once,
// a segmented operator, and a single-pass decoupled look-back across tiles.
// Sources: segmented scan with head flags (Sengupta, Harris, Zhang and
// Owens, "Scan primitives for GPU computing", Graphics Hardware 2007);
// decoupled look-back (Merrill and Garland, NVR-2016-002, 2016), with the
// deterministic tree of tile totals of step 9 (lookback.cuh).
//
// What changed from step 12: the work is no longer cut by problem.  The
// problems, laid end to end (a C array's rows, or the segments of a ragged
// array), are cut into fixed tiles of TILE elements, one block each, taken
// in order from a ticket: every block does the same work whatever the
// lengths, so 2^24 rows of 4 and 4 rows of 2^24 keep the same number of
// blocks busy.  Inside a tile an element may start a problem (a "head":
// k == 0 of a row; an offset of a segment, which the block finds with a
// 32-way search of the offsets by one warp and marks in shared memory), and
// the scan restarts there: each thread scans its ITEMS consecutive elements
// (16-byte loads where the data is contiguous), the thread totals - a
// value and "a head is in here" - are scanned across the warp and the
// block with the segmented operator (a run with a head in it discards what
// came before).  A tile whose first element continues a problem gets the
// running value from the tiles before through step 9's look-back: tiles
// publish their flagged totals, and a tile's prefix is always the same
// tree of them (so the bits are the same every run), in which a head
// discards everything earlier.  Input read once, output written once.
// Why step 12 was slow: a block per problem leaves the GPU idle when the
// problems are few (4 rows of 2^24: 4 blocks), and wastes warps when they
// are short; a block's problems are as long as they are, so ragged
// segments leave blocks waiting for their longest.
// Still slow here: along a non-last axis (columns), the elements of a
// problem are a row apart; step 14 reads those coalesced.  A tile starts
// with a search of the offsets (segments) and pays for the look-back's
// polls (every problem-continuing tile), and short segments add 8 bytes of
// offset per segment to the traffic.
// Assumes: any n, any strides (a layout other than contiguous rows or
// segments is read element by element: correct, not fast); fewer than
// 2^35 tiles.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256, WARPS = BLOCK / WARP;
constexpr int MARK = 4;  // offsets a thread loads at once to mark the heads of a tile

// Elements a thread: 16 4-byte accumulators (a tile of 4096), 8 wider ones;
// half as many where each element's address is computed (a layout other
// than contiguous rows: its addresses take the registers).  Chosen for the
// registers, not yet timed: no spills at 3 blocks an SM for contiguous
// 4-byte results (74-78 registers), 2 for the others (ptxas of CUDA 13.0,
// sm_90).
template <class Acc, bool CONTIGUOUS>
__host__ __device__ constexpr int items_of() { return (sizeof(Acc) > 4 ? 8 : 16) / (CONTIGUOUS ? 1 : 2); }

// The first index in [0, count) with a[index] >= key (count where none),
// a 32-way search by the whole warp: each lane probes one of 32 evenly
// spaced places, the ballot says between which two the answer lies.
__device__ inline int64_t warp_lower_bound(const int64_t *a, int64_t count, int64_t key, int lane) {
    int64_t lo = 0, cnt = count;  // the answer is in [lo, lo + cnt]
    while (cnt > 0) {
        const int64_t step = (cnt + WARP - 1) / WARP;
        const int64_t probe = lo + (lane + 1) * step - 1;
        const bool less = probe < lo + cnt && a[probe] < key;
        const int k = __popc(__ballot_sync(FULL_MASK, less));  // the lanes below the answer
        const int64_t next = lo + k * step;
        cnt = (lo + cnt < next + step - 1 ? lo + cnt : next + step - 1) - next;
        lo = next;
    }
    return lo;
}

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

// CONTIGUOUS: the problems lie end to end in memory (segments, a C array's
// rows): element e is in[e] and out[e].  Otherwise each element's address
// comes from the layout.
template <class In, class Op, bool CONTIGUOUS>
__global__ void __launch_bounds__(BLOCK, !CONTIGUOUS ? 2 : sizeof(typename Op::type) > 4 ? 2 : 3)
scan_flat(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive, bool vector_ok,
          unsigned long long *ticket, seg::FlaggedSlots<typename Op::type> slots, lookback::Levels lv) {
    using Acc = typename Op::type;
    using F = seg::Flagged<Acc>;
    constexpr int ITEMS = items_of<Acc, CONTIGUOUS>(), TILE = BLOCK * ITEMS;
    const Op op;
    const seg::SegOp<Op> sop;
    __shared__ unsigned char head_s[TILE];  // segments: 1 where a segment starts
    __shared__ F warp_total[WARPS];
    __shared__ F warp_before[WARPS];
    __shared__ F prefix_s;
    __shared__ int64_t tile_s, lo_s;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const bool segmented = lay.offsets != nullptr;
    const int64_t total = lay.elements();

    if (threadIdx.x == 0) tile_s = int64_t(atomicAdd(ticket, 1ull));
    if (segmented)
        for (int j = threadIdx.x; j < TILE; j += BLOCK) head_s[j] = 0;
    __syncthreads();
    const int64_t tile = tile_s, start = tile * TILE, end = start + TILE < total ? start + TILE : total;
    const int64_t first = start + int64_t(threadIdx.x) * ITEMS;

    // The thread's elements (issued before the search of the offsets).
    Acc x[ITEMS];
    unsigned heads = 0;  // bit j: element j starts a problem
    if constexpr (CONTIGUOUS) {
        scan::load_items<ITEMS, Op>(in, first, total, vector_ok, x);
    } else {
        Cursor c(lay, first < total ? first : 0);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            x[j] = first + j < total ? Acc(in[c.in(lay)]) : Op::identity();
            c.next(lay);
        }
    }
    if (segmented) {
        if (warp == 0) {
            const int64_t lo = warp_lower_bound(lay.offsets, lay.problems + 1, start, lane);
            if (lane == 0) lo_s = lo;
        }
        __syncthreads();
        // MARK offsets a thread loaded together, then marked (the offsets
        // are sorted: once the last of a group is past the tile, so is
        // every later one).  One offset at a time, a tile of segments of
        // mean 4 (1024 offsets) waited for 4 loads in a row a thread.
        for (int64_t s0 = lo_s + threadIdx.x;; s0 += MARK * BLOCK) {
            int64_t at[MARK];
#pragma unroll
            for (int u = 0; u < MARK; ++u) at[u] = s0 + u * BLOCK <= lay.problems ? lay.offsets[s0 + u * BLOCK] : end;
#pragma unroll
            for (int u = 0; u < MARK; ++u)
                if (at[u] < end) head_s[at[u] - start] = 1;
            if (at[MARK - 1] >= end) break;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ITEMS; ++j)
            if (first + j < end && head_s[threadIdx.x * ITEMS + j]) heads |= 1u << j;
    } else {
        int64_t k = first % lay.n;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            if (k == 0 && first + j < end) heads |= 1u << j;
            k = k + 1 == lay.n ? 0 : k + 1;
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
        const bool starts = segmented ? head_s[0] != 0 : start % lay.n == 0;
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
    if constexpr (CONTIGUOUS) {
        scan::store_items(out, first, total, vector_ok, x);
    } else {
        Cursor c(lay, first < total ? first : 0);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            if (first + j < total) out[c.out(lay)] = x[j];
            c.next(lay);
        }
    }
}

template <class In, class Op>
struct FlatLookback {
    using Acc = typename Op::type;
    using S = seg::FlaggedSlots<Acc>;
    // Contiguous problems: 16-byte loads straight from the input.
    static bool contiguous(const seg::Layout &lay) { return lay.offsets != nullptr || lay.contiguous_rows(); }
    static int64_t tile(const seg::Layout &lay) {
        return int64_t(BLOCK) * (contiguous(lay) ? items_of<Acc, true>() : items_of<Acc, false>());
    }
    static lookback::Levels levels(const seg::Layout &lay, int64_t &count) {
        return lookback::Levels::of(ceil_div<int64_t>(lay.elements(), tile(lay)), count);
    }
    static size_t scratch(const gp_scan_args &a) {
        int64_t count;
        levels(seg::Layout::of(a), count);
        return 256 + S::bytes(count);
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        const int64_t tiles = ceil_div<int64_t>(lay.elements(), tile(lay));
        if (tiles >= (int64_t(1) << 35) || tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
        int64_t count;
        const lookback::Levels lv = levels(lay, count);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(cudaMemsetAsync(p, 0, 256 + S::zeroed_bytes(count), a.stream));
        const In *in = static_cast<const In *>(a.in);
        unsigned long long *ticket = reinterpret_cast<unsigned long long *>(p);
        if (contiguous(lay)) {
            const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
            GP_LAUNCH((scan_flat<In, Op, true>), unsigned(tiles), BLOCK, 0, a.stream, in, static_cast<Acc *>(a.out),
                      lay, a.inclusive != 0, vec, ticket, S(p + 256, count), lv);
        } else {
            GP_LAUNCH((scan_flat<In, Op, false>), unsigned(tiles), BLOCK, 0, a.stream, in,
                      static_cast<Acc *>(a.out), lay, a.inclusive != 0, false, ticket, S(p + 256, count), lv);
        }
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_segmented_lookback(gp_scan_args *a) { return seg::dispatch<FlatLookback>(a); }

GP_KERNEL_OF(gp_scan_segmented_lookback_kernel, scan_flat<float, Sum<float>, true>)
GP_NAMESPACE_END
