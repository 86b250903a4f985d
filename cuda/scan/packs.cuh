// packs.cuh - the segmented scan by packs of segments, the route of the
// adaptive step (12_segmented_adaptive.cu) for listed segments of a mean
// length of PACK_MIN ... PACK_MAX on aligned data.
//
// A warp takes K neighbouring segments (segs::pack_segments: about 1024
// elements a pack, up to 32 segments; the wide packs of the shortest
// segments: about 2048 elements, up to 32 x WIDE_M) and streams their run
// of memory in trips of 32 x VPT 16-byte vectors (segs::Pack,
// segs::PackTrips in cuda/segments.cuh, shared with the reduction's
// reduce_packs): each trip lands in the warp's shared stage by cp.async,
// each segment's start marked in the word of the lane that holds it.  Then
// each lane folds the part of its run after its last start, a segmented
// warp scan of those parts (Sengupta et al.'s flagged operator) gives each
// lane what comes before its first element, and a walk of the lane's run
// writes the scan back into the stage, which the lanes store as they
// loaded it (16-byte stores; the run's first and last vectors element by
// element, as neighbouring packs own their other elements).  The part of
// the open segment carries into the next trip.  Nothing crosses packs: no
// look-back, no tile status.  Where the flat look-back (step 13) gives
// every tile a look-back and every element a flagged add, a pack's warp
// pays for a segment start only in the trips that hold one.
//
// Segments longer than the deferral length (segs::pack_long_length: 16x
// the mean, at least two packs' worth) are cut out of their packs and
// listed (segs::Deferred), then scanned in chunks of 8192 by three small
// kernels: each chunk's total, the exclusive scan of a segment's chunk
// totals, each chunk's scan from its prefix.  Same bits run to run: the
// trips and the chunks are fixed by the offsets.
#pragma once

#include <algorithm>
#include <climits>
#include <type_traits>

#include "../segments.cuh"
#include "../warp.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN
namespace scan {
namespace packs {

// The calling warp's PackTrips: its stages and marks (cleared) in the
// block's shared memory, for kernels of Shape::BLOCK threads.
template <class Shape, class T>
__device__ __forceinline__ segs::PackTrips<Shape, T> warp_trips() {
    constexpr int WARPS = Shape::BLOCK / WARP;
    __shared__ uint4 stage_all[WARPS][Shape::STAGES][segs::PackGeometry<Shape, T>::SLOTS];
    __shared__ unsigned marks_all[WARPS][WARP];
    const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    marks_all[w][lane] = 0;
    return {stage_all[w], marks_all[w], lane};
}

// The scan of one run [run_b, run_e) of a pack by its warp (every lane
// calls it): the trips of trips.stream_marked, each start marked by
// mark(c0) for the trip at c0, the scan stored into out.  T: the element
// and accumulator type (16 % sizeof(T) == 0); in (n elements) and out
// 16-byte aligned.
template <class Trips, class T, class Op, class Mark>
__device__ __forceinline__ void scan_run(const Trips &trips, const T *__restrict__ in, int64_t n,
                                         int64_t run_b, int64_t run_e, Mark mark, bool inclusive,
                                         T *__restrict__ out) {
    constexpr int V = Trips::V, VPT = Trips::VPT, ITEMS = Trips::ITEMS, SUB = Trips::SUB;
    const Op op;
    const int lane = trips.lane;
    T carry = Op::identity();  // the open segment's part before the trip
    trips.stream_marked(
        in, n, run_b, run_e, mark,
        [&](int64_t c0, uint4 *stage, unsigned h, const uint4 (&raw)[VPT], int rb, int re, bool inner) {
            // Element k, masked (std::true_type) or not (false_type: the
            // inner trips, compiled without the compares).
            const auto element = [&](int k, auto masked) {
                T v[V];
                memcpy(v, &raw[k / V], 16);
                if constexpr (decltype(masked)::value)
                    return k >= rb && k < re ? v[k % V] : Op::identity();
                else
                    return v[k % V];
            };
            // The lane's part after its last start, then the warp's scan
            // of the parts (a lane with a start restarts it).
            const auto fold = [&](auto masked) {
                T acc = Op::identity();
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) {
                    if (h >> k & 1u) acc = Op::identity();
                    acc = op(acc, element(k, masked));
                }
                return acc;
            };
            const T part = inner ? fold(std::false_type{}) : fold(std::true_type{});
            const unsigned F = __ballot_sync(FULL_MASK, h != 0);
            T inc;
            const T before = segs::warp_before(part, carry, F, lane, op, inc);
            const T end = __shfl_sync(FULL_MASK, inc, WARP - 1);
            carry = F != 0 ? end : op(carry, end);
            // The walk: the scan of the lane's run, back into its slots.
            const auto walk = [&](auto masked) {
                T acc = before;
#pragma unroll
                for (int u = 0; u < VPT; ++u) {
                    T r[V];
#pragma unroll
                    for (int j = 0; j < V; ++j) {
                        const int k = u * V + j;
                        if (h >> k & 1u) acc = Op::identity();
                        const T x = element(k, masked);
                        r[j] = inclusive ? op(acc, x) : acc;
                        acc = op(acc, x);
                    }
                    const int q = lane * VPT + u;
                    memcpy(&stage[q + q / 8], r, 16);
                }
            };
            if (inner)
                walk(std::false_type{});
            else
                walk(std::true_type{});
            __syncwarp();
            // The stores, as the loads: vector l, l + 32, ... of the trip;
            // [rbt, ret) the run's part of the trip.
            const int rbt = int(run_b - c0 > 0 ? run_b - c0 : 0);
            const int ret = int(run_e - c0 < SUB ? run_e - c0 : SUB);
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int q = u * WARP + lane, g = q * V;
                const uint4 r = stage[q + q / 8];
                if (g >= rbt && g + V <= ret) {
                    *reinterpret_cast<uint4 *>(out + c0 + g) = r;
                } else if (g < ret && g + V > rbt) {
                    T v[V];
                    memcpy(v, &r, 16);
#pragma unroll
                    for (int j = 0; j < V; ++j)
                        if (g + j >= rbt && g + j < ret) out[c0 + g + j] = v[j];
                }
            }
        });
}

// Pack pk of K <= 32 segments: its runs between deferred segments, each
// lane marking its own segment's start; then its deferred segments listed.
template <class Trips, class T, class Op>
__device__ __forceinline__ void scan_pack(const Trips &trips, const T *__restrict__ in, int64_t n,
                                          const int64_t *__restrict__ offsets, int64_t count, int K,
                                          int64_t pk, bool inclusive, const segs::Deferred &D,
                                          T *__restrict__ out) {
    const segs::Pack pack(offsets, count, K, pk, D, trips.lane);
    pack.runs([&](unsigned run, int64_t run_b, int64_t run_e) {
        const bool starts = run >> trips.lane & 1u;
        scan_run<Trips, T, Op>(
            trips, in, n, run_b, run_e,
            [&](int64_t c0) {
                if (starts && pack.b >= c0 && pack.b < c0 + Trips::SUB) trips.mark(int(pack.b - c0));
            },
            inclusive, out);
    });
    if (pack.deferred) D.push(pack.p, pack.e - pack.b);  // rare: after the pack
}

// offsets: count + 1 boundaries in [0, n], non-decreasing.  A warp a pack
// of K <= 32 segments.
template <class Shape, class T, class Op>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
scan_packs(const T *__restrict__ in, int64_t n, const int64_t *__restrict__ offsets, int64_t count,
           int K, bool inclusive, segs::Deferred D, T *__restrict__ out) {
    using Trips = segs::PackTrips<Shape, T>;
    constexpr int WARPS = Shape::BLOCK / WARP;
    const Trips trips = warp_trips<Shape, T>();
    const int64_t packs = ceil_div<int64_t>(count, K), step = int64_t(gridDim.x) * WARPS;
    // The loop is uniform over the warp.
    for (int64_t pk = int64_t(blockIdx.x) * WARPS + threadIdx.x / WARP; pk < packs; pk += step)
        scan_pack<Trips, T, Op>(trips, in, n, offsets, count, K, pk, inclusive, D, out);
}

// Wide packs: 32 x M segments a warp (M = 2 ... WIDE_M, a power of two),
// for segments so short that 32 of them do not fill a warp's trip of 512
// float32.  Lane j reads the starts of segments s + j, s + 32 + j, ...
// (coalesced), keeps them in shared memory (in registers they would spill:
// a lane's list is walked with a cursor) and marks those that fall in each
// trip; the warp streams the pack's whole run [offsets[s], offsets[s +
// 32 M]) as one.  An empty segment's start is marked too: it is the next
// segment's, or the run's end, past which nothing is stored.  A pack with
// a deferred segment (a ballot after the offsets are read; rare) is
// listed instead, and scan_listed_packs takes it as M packs of 32 after
// this kernel.  A run is at most 32 M deferral lengths (a longer segment
// is deferred; with no deferral, n is within one), so its starts fit
// 32-bit offsets from its first vector.
constexpr int WIDE_M = 16, WIDE_ELEMS = 2048;

template <class Shape, class T, class Op>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
scan_wide_packs(const T *__restrict__ in, int64_t n, const int64_t *__restrict__ offsets,
                int64_t count, int M, bool inclusive, segs::Deferred D, int64_t *__restrict__ listed,
                T *__restrict__ out) {
    using Trips = segs::PackTrips<Shape, T>;
    constexpr int V = Trips::V, SUB = Trips::SUB;
    constexpr int WARPS = Shape::BLOCK / WARP;
    __shared__ int starts_all[WARPS][WIDE_M][WARP];  // [m][j]: segment s + 32 m + j's start
    const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    const Trips trips = warp_trips<Shape, T>();
    int(*starts)[WARP] = starts_all[w];  // lane j reads and writes column j alone
    const int64_t K = int64_t(WARP) * M;
    const int64_t packs = ceil_div<int64_t>(count, K), step = int64_t(gridDim.x) * WARPS;
    allow_dependent_launch();  // scan_listed_packs may be scheduled; it waits for this grid
    // The loop is uniform over the warp.
    for (int64_t pk = int64_t(blockIdx.x) * WARPS + w; pk < packs; pk += step) {
        const int64_t s = pk * K;
        const int last = int(count - s < K ? count - s : K);  // segments in the pack
        const int64_t run_b = __ldg(offsets + s), run_e = __ldg(offsets + s + last);
        const int64_t first = run_b / V * V;  // the run's first vector, as stream_marked counts
        bool defer = false;
#pragma unroll 4
        for (int m = 0; m < M; ++m) {  // uniform; unrolled so that the loads overlap
            const int j = m * WARP + lane;
            const int64_t b = j <= last ? __ldg(offsets + s + j) : 0;
            int64_t e = __shfl_down_sync(FULL_MASK, b, 1);  // the next segment's start
            if (lane == WARP - 1) e = j + 1 <= last ? __ldg(offsets + s + j + 1) : 0;
            defer |= j < last && D.defers(e - b);
            starts[m][lane] = j < last ? int(b - first) : INT_MAX;
        }
        if (__any_sync(FULL_MASK, defer)) {  // rare: listed for scan_listed_packs
            if (lane == 0) listed[atomicAdd(D.ctl + 2, 1ull)] = pk;
            continue;
        }
        if (run_e == run_b) continue;
        int next = 0;  // the lane's first start not yet marked
        scan_run<Trips, T, Op>(
            trips, in, n, run_b, run_e,
            [&](int64_t c0) {
                const int base = int(c0 - first);
                for (; next < M && starts[next][lane] < base + SUB; ++next)
                    trips.mark(starts[next][lane] - base);
            },
            inclusive, out);
    }
}

// The wide packs that hold a deferred segment (scan_wide_packs lists them:
// D.ctl[2] of them), each as M packs of 32 segments, a warp a wide pack.
// Apart from scan_wide_packs, whose loop a second copy of the trips' code
// made spill and slowed by a fifth (59.8 against 74.0% of the roof at mean
// 4 in bench/results/tune-segscan-packs-nvidia-h200-2026-11-24.md run 4).
template <class Shape, class T, class Op>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
scan_listed_packs(const T *__restrict__ in, int64_t n, const int64_t *__restrict__ offsets,
                  int64_t count, int M, bool inclusive, segs::Deferred D,
                  const int64_t *__restrict__ listed, T *__restrict__ out) {
    using Trips = segs::PackTrips<Shape, T>;
    constexpr int WARPS = Shape::BLOCK / WARP;
    const Trips trips = warp_trips<Shape, T>();
    grid_dependency_wait();  // scan_wide_packs' list is complete
    const int64_t total = int64_t(D.ctl[2]), step = int64_t(gridDim.x) * WARPS;
    // The loop is uniform over the warp.
    for (int64_t i = int64_t(blockIdx.x) * WARPS + threadIdx.x / WARP; i < total; i += step) {
        const int64_t pk = listed[i];
        for (int g = 0; g < M && (pk * M + g) * WARP < count; ++g)
            scan_pack<Trips, T, Op>(trips, in, n, offsets, count, WARP, pk * M + g, inclusive, D, out);
    }
}

// The scan's packs: 128 threads, 4 vectors a lane a trip (512 float32 a
// warp), packs of about 1024 elements (wide packs: WIDE_ELEMS), 8 blocks
// an SM, two stages.  On an H200, inclusive float32 cumsum of 2^26
// elements, % of the copy roof with the offsets counted (bench/results/
// tune-segscan-packs-nvidia-h200-2026-11-24.md): packs of about 1024
// elements against 2048 at means 64 / 256 / 1024: 81.4 / 81.1 / 77.5
// against 78.2 / 77.4 / 73.3 (512: 70.0 / 70.5 / 80.8; run 2); within 0.5
// at 4096 to 65536.  Wide packs (as scan_wide_packs is now: run 4's
// candidate without the fallback) against packs of at most 32 segments,
// means 2 / 4 / 8: 65.0 / 74.0 / 80.2 against 21.2 / 33.8 / 55.4; at mean
// 16, where 32 segments fill a trip, 64.3 against 72.1 (run 2) - so wide
// packs only where 32 segments fill less than 3/4 of a trip (launch).
using ScanPackTuning = segs::PackShape<128, 4, 1024, 8>;

// The deferred segments, in chunks of Deferred::CHUNK elements: chunk k
// (of ctl[1]) belongs to entry owner[k], the entry's chunks first ...
// first + chunks - 1 in order.  A block a chunk (resident grids: the host
// does not know how many there are).
constexpr int CHUNK_BLOCK = 256, CHUNK_ITEMS = int(segs::Deferred::CHUNK) / CHUNK_BLOCK;

// The elements [lo, hi) of chunk k.
__device__ inline void chunk_of(const segs::Deferred &D, const int64_t *offsets, int64_t k,
                                int64_t &lo, int64_t &hi) {
    const segs::Entry E = D.list[D.owner[k]];
    const int64_t sb = offsets[E.p], se = offsets[E.p + 1];
    lo = sb + (k - E.first) * segs::Deferred::CHUNK;
    hi = lo + segs::Deferred::CHUNK < se ? lo + segs::Deferred::CHUNK : se;
}

// 1. Each chunk's total into partial[k].
template <class T, class Op>
__global__ void __launch_bounds__(CHUNK_BLOCK)
chunk_totals(const T *__restrict__ in, const int64_t *__restrict__ offsets, segs::Deferred D) {
    __shared__ T warp_results[CHUNK_BLOCK / WARP];
    const Op op;
    T *partial = static_cast<T *>(D.partial);
    const int64_t chunks = int64_t(D.ctl[1]);
    for (int64_t k = blockIdx.x; k < chunks; k += gridDim.x) {  // uniform over the block
        int64_t lo, hi;
        chunk_of(D, offsets, k, lo, hi);
        T v = Op::identity();
        for (int64_t i = lo + threadIdx.x; i < hi; i += CHUNK_BLOCK) v = op(v, in[i]);
        v = block_reduce<CHUNK_BLOCK>(v, op, warp_results);
        if (threadIdx.x == 0) partial[k] = v;
        __syncthreads();
    }
}

// 2. Each entry's chunk totals, scanned exclusively in place (a warp an
// entry, 32 totals a round).
template <class T, class Op>
__global__ void __launch_bounds__(CHUNK_BLOCK)
chunk_prefixes(segs::Deferred D) {
    const Op op;
    T *partial = static_cast<T *>(D.partial);
    const int lane = threadIdx.x % WARP;
    const int64_t entries = int64_t(D.ctl[0]), warps = int64_t(gridDim.x) * (CHUNK_BLOCK / WARP);
    for (int64_t e = int64_t(blockIdx.x) * (CHUNK_BLOCK / WARP) + threadIdx.x / WARP; e < entries;
         e += warps) {
        const segs::Entry E = D.list[e];
        T carry = Op::identity();
        for (int64_t j = 0; j < E.chunks; j += WARP) {  // uniform over the warp
            const T x = j + lane < E.chunks ? partial[E.first + j + lane] : Op::identity();
            const T inc = warp_inclusive_scan(x, op);
            const T exc = __shfl_up_sync(FULL_MASK, inc, 1);
            if (j + lane < E.chunks)
                partial[E.first + j + lane] = lane == 0 ? carry : op(carry, exc);
            carry = op(carry, __shfl_sync(FULL_MASK, inc, WARP - 1));
        }
    }
}

// 3. Each chunk's scan from its prefix.
template <class T, class Op>
__global__ void __launch_bounds__(CHUNK_BLOCK)
chunk_scans(const T *__restrict__ in, const int64_t *__restrict__ offsets, bool inclusive,
            segs::Deferred D, T *__restrict__ out) {
    __shared__ T smem[CHUNK_BLOCK / WARP];
    const Op op;
    const T *prefix = static_cast<const T *>(D.partial);
    const int64_t chunks = int64_t(D.ctl[1]);
    for (int64_t k = blockIdx.x; k < chunks; k += gridDim.x) {  // uniform over the block
        int64_t lo, hi;
        chunk_of(D, offsets, k, lo, hi);
        const int64_t at = lo + int64_t(threadIdx.x) * CHUNK_ITEMS;
        const bool vec = reinterpret_cast<uintptr_t>(in + lo) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(out + lo) % 16 == 0;
        T items[CHUNK_ITEMS];
        load_items<CHUNK_ITEMS, Op>(in, at, hi, vec, items);
        T before;
        block_scan<CHUNK_BLOCK>(items, before, op, smem);
        const T pre = prefix[k];
        T res[CHUNK_ITEMS];
#pragma unroll
        for (int j = 0; j < CHUNK_ITEMS; ++j)
            res[j] = op(pre, inclusive ? items[j] : (j == 0 ? before : items[j - 1]));
        store_items(out, at, hi, vec, res);
    }
}

// Where the packs apply: an element that is its own accumulator, its size
// dividing 16 (and both pointers 16-byte aligned: scan::aligned16).
template <class In, class Acc>
constexpr bool types_ok() {
    return std::is_same<In, Acc>::value && 16 % sizeof(Acc) == 0;
}

// The deferral for `count` segments over n elements, none longer than
// `longest` (0: not known).
template <class Shape>
segs::DeferShape defer_of(int64_t n, int64_t count, const int64_t *offsets, int64_t longest) {
    return segs::defer_shape(offsets, n, segs::pack_long_length<Shape>(count > 0 ? n / count : 1),
                             longest);
}

// Scratch: the Deferred list, then the list of wide packs that hold a
// deferred segment (at most one a deferred segment).
template <class Shape, class T, class Op>
size_t scratch_bytes(int64_t n, int64_t count, const int64_t *offsets, int64_t longest) {
    const segs::DeferShape d = defer_of<Shape>(n, count, offsets, longest);
    return segs::defer_bytes<Op>(d) + align_up(size_t(d.entries) * sizeof(int64_t));
}

// A warp a pack of K segments (K: the power of two covering ELEMS / mean,
// at most k_most; scan_wide_packs past 32), then the deferred ones.
template <class Shape, class T, class Op>
cudaError_t launch(const T *in, int64_t n, const int64_t *offsets, int64_t count, int64_t longest,
                   bool inclusive, T *out, void *scratch, cudaStream_t stream,
                   int64_t k_most = WARP * WIDE_M) {
    if (count == 0) return cudaSuccess;
    // Wide packs (of about WIDE_ELEMS elements) only where 32 segments
    // fill less than 3/4 of a trip.
    const int64_t mean = n / count;
    const bool wide = k_most > WARP && 4 * mean * WARP < 3 * segs::PackGeometry<Shape, T>::SUB;
    const int64_t K = wide ? pow2_between(ceil_div<int64_t>(WIDE_ELEMS, mean < 1 ? 1 : mean), WARP,
                                          std::min<int64_t>(k_most, WARP * WIDE_M))
                           : segs::pack_segments<Shape>(mean);
    const int64_t warps = Shape::BLOCK / WARP, packs = ceil_div<int64_t>(count, K);
    const int64_t grid = std::min<int64_t>(ceil_div<int64_t>(packs, warps), INT32_MAX);
    segs::Deferred D;
    const segs::DeferShape shape = defer_of<Shape>(n, count, offsets, longest);
    GP_TRY(segs::defer_in(scratch, shape, stream, D));
    int64_t *listed =
        reinterpret_cast<int64_t *>(static_cast<char *>(scratch) + segs::defer_bytes<Op>(shape));
    if (K > WARP)
        GP_LAUNCH((scan_wide_packs<Shape, T, Op>), unsigned(grid), Shape::BLOCK, 0, stream, in, n,
                  offsets, count, int(K / WARP), inclusive, D, listed, out);
    else
        GP_LAUNCH((scan_packs<Shape, T, Op>), unsigned(grid), Shape::BLOCK, 0, stream, in, n, offsets,
                  count, int(K), inclusive, D, out);
    if (D.ctl == nullptr) return cudaSuccess;
    DeviceFacts d;
    GP_TRY(device_facts(d));
    if (K > WARP)
        GP_LAUNCH_EARLY(d.major >= 9, (scan_listed_packs<Shape, T, Op>),
                        unsigned((d.sms >= 1 ? d.sms : 1) * Shape::MIN_BLOCKS), Shape::BLOCK, 0, stream,
                        in, n, offsets, count, int(K / WARP), inclusive, D,
                        static_cast<const int64_t *>(listed), out);
    const unsigned resident = unsigned((d.sms >= 1 ? d.sms : 1) * (2048 / CHUNK_BLOCK));
    GP_LAUNCH((chunk_totals<T, Op>), resident, CHUNK_BLOCK, 0, stream, in, offsets, D);
    GP_LAUNCH((chunk_prefixes<T, Op>), resident, CHUNK_BLOCK, 0, stream, D);
    GP_LAUNCH((chunk_scans<T, Op>), resident, CHUNK_BLOCK, 0, stream, in, offsets, inclusive, D,
              out);
    return cudaSuccess;
}

}  // namespace packs
}  // namespace scan
GP_NAMESPACE_END
