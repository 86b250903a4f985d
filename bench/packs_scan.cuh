// packs_scan.cuh - a prototype: the segmented scan by packs of segments, the
// mapping of cuda/reduce/segmented.cuh's reduce_packs carried over to the
// scan, for bench/tune_segscan.cu (`tune_segscan packs`) and its emulator
// test (tests/packs_scan_emu.cu).  Not in the library yet (its speed has
// not been measured on a GPU).
//
// A warp takes K neighbouring segments (reduce::seg::pack_segments) and
// streams their run of memory in trips of 32 x VPT 16-byte vectors: the
// trip lands in the warp's two-stage shared buffer by cp.async (the next
// trip's copies issued first), each segment's start is marked in the word
// of the lane that holds it, each lane folds the part of its run after its
// last start, a segmented warp scan of those parts (Sengupta et al.'s
// flagged operator) gives each lane what comes before its first element,
// and a walk of the run writes the scan back into the buffer, which the
// lanes store as they loaded it (16-byte stores; the run's first and last
// vectors element by element, as neighbouring packs own their other
// elements).  The part of the open segment carries into the next trip.
// Nothing crosses packs: no look-back.  Segments longer than the deferral
// length (16x the mean, at least 2 x ELEMS) are cut out of their packs and
// listed (reduce::seg::Deferred), then scanned in chunks of 8192 by three
// small kernels: each chunk's total, the exclusive scan of a segment's
// chunk totals, each chunk's scan from its prefix.  Same bits run to run
// (the trips and the chunks are fixed by the offsets).
#pragma once

#include <type_traits>

#include "../cuda/async_copy.cuh"
#include "../cuda/reduce/segmented.cuh"
#include "../cuda/scan/scan.cuh"

GP_NAMESPACE_BEGIN
namespace packs_scan {

using reduce::seg::PackGeometry;

// T: the element and accumulator type (16 % sizeof(T) == 0); in (n
// elements) and out 16-byte aligned.  offsets: count + 1 boundaries in
// [0, n], non-decreasing.
template <class Shape, class T, class Op>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
scan_packs(const T *__restrict__ in, int64_t n, const int64_t *__restrict__ offsets, int64_t count,
           int K, bool inclusive, reduce::seg::Deferred D, T *__restrict__ out) {
    using G = PackGeometry<Shape, T>;
    constexpr int V = G::V, VPT = G::VPT, ITEMS = G::ITEMS, SUB = G::SUB;
    constexpr int WARPS = Shape::BLOCK / WARP, STAGES = Shape::STAGES;
    static_assert(V * sizeof(T) == 16 && ITEMS <= 32, "an element size dividing 16, <= 32 a lane");
    __shared__ uint4 stage_all[WARPS][STAGES][G::SLOTS];
    __shared__ unsigned marks_all[WARPS][WARP];
    const Op op;
    const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    unsigned *marks = marks_all[w];
    const unsigned below = (1u << lane) - 1u;
    const int64_t packs = ceil_div<int64_t>(count, K), step = int64_t(gridDim.x) * WARPS;
    marks[lane] = 0;
    for (int64_t pk = int64_t(blockIdx.x) * WARPS + w; pk < packs; pk += step) {  // uniform
        const int64_t s = pk * K, p = s + lane;
        const int last = int(count - s < K ? count - s : K);  // segments in the pack
        const bool here = lane < last;
        const int64_t b = here ? __ldg(offsets + p) : 0, e = here ? __ldg(offsets + p + 1) : 0;
        const bool deferred = here && D.defers(e - b);
        const unsigned long_mask = __ballot_sync(FULL_MASK, deferred);
        const unsigned nonempty = __ballot_sync(FULL_MASK, here && !deferred && e > b);
        if (deferred) D.push(p, e - b);
        for (int r0 = 0; r0 < last;) {  // the runs between deferred segments (uniform)
            const unsigned ahead = long_mask >> r0;
            const int r1 =
                ahead != 0 ? r0 + __ffs(int(ahead)) - 1 : last;  // the run: r0 ... r1 - 1
            const unsigned span = r1 - r0 == WARP ? FULL_MASK : ((1u << (r1 - r0)) - 1u) << r0;
            const unsigned full = span & nonempty;
            const int64_t run_b = __shfl_sync(FULL_MASK, b, r0);
            const int64_t run_e = __shfl_sync(FULL_MASK, e, r1 > 0 ? r1 - 1 : 0);
            r0 = r1 + 1;
            if (full == 0) continue;  // only empty segments: nothing to write
            const int64_t first = run_b / V * V;
            const int trips = int(ceil_div<int64_t>(run_e - first, SUB));
            // The run from c0 on, in elements, within 0 ... SUB.
            const auto clamp = [&](int64_t x, int64_t c0) {
                return int(x - c0 < 0 ? 0 : x - c0 < SUB ? x - c0 : SUB);
            };
            // The trip's vectors that hold elements of the run; the one that
            // holds the input's last element (no whole 16 bytes) element by
            // element.
            const auto fetch = [&](int64_t c0, int buf) {
                const int rb = clamp(run_b, c0), re = clamp(run_e, c0), end = clamp(n, c0);
#pragma unroll
                for (int u = 0; u < VPT; ++u) {
                    const int q = u * WARP + lane, g = q * V;
                    uint4 *dst = &stage_all[w][buf][q + q / 8];
                    if (g < re && g + V > rb) {
                        if (g + V <= end) {
                            async_copy16(dst, in + c0 + g);
                        } else {
                            T v[V];
#pragma unroll
                            for (int k = 0; k < V; ++k) v[k] = g + k < end ? in[c0 + g + k] : T();
                            memcpy(dst, v, 16);
                        }
                    }
                }
                async_commit();
            };
#pragma unroll
            for (int t = 0; t + 1 < STAGES; ++t) {
                if (t < trips)
                    fetch(first + int64_t(t) * SUB, t);
                else
                    async_commit();
            }
            T carry = Op::identity();  // the open segment's part before the trip
            for (int t = 0; t < trips; ++t) {
                const int64_t c0 = first + int64_t(t) * SUB;
                uint4 *stage = stage_all[w][t % STAGES];
                if (t + STAGES - 1 < trips)
                    fetch(c0 + (STAGES - 1) * int64_t(SUB), (t + STAGES - 1) % STAGES);
                else
                    async_commit();
                async_wait_groups<STAGES - 1>();
                if ((full >> lane & 1u) && b >= c0 && b < c0 + SUB) {  // distinct bits: an or
                    const int o = int(b - c0);
                    atomicAdd(&marks[o / ITEMS], 1u << (o % ITEMS));
                }
                __syncwarp();
                const unsigned h = marks[lane];
                marks[lane] = 0;
                uint4 raw[VPT];
#pragma unroll
                for (int u = 0; u < VPT; ++u) {
                    const int q = lane * VPT + u;
                    raw[u] = stage[q + q / 8];
                }
                const int at = lane * ITEMS;
                const int rb = clamp(run_b, c0 + at) < ITEMS ? clamp(run_b, c0 + at) : ITEMS;
                const int re = clamp(run_e, c0 + at) < ITEMS ? clamp(run_e, c0 + at) : ITEMS;
                const bool inner = __all_sync(FULL_MASK, rb == 0 && re == ITEMS);
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
                T inc = inner ? fold(std::false_type{}) : fold(std::true_type{});
                const unsigned F = __ballot_sync(FULL_MASK, h != 0);
                const unsigned upto = F & (below | (1u << lane));
                const int restart = upto != 0 ? 31 - __clz(int(upto)) : -1;
#pragma unroll
                for (int d = 1; d < WARP; d <<= 1) {
                    const T y = __shfl_up_sync(FULL_MASK, inc, d);
                    if (lane >= d && lane - d >= restart) inc = op(y, inc);
                }
                const T prev = __shfl_up_sync(FULL_MASK, inc, 1);
                const T before = lane == 0 ? carry : (F & below) != 0 ? prev : op(carry, prev);
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
                // The stores, as the loads: vector l, l + 32, ... of the trip.
                {
                    const int rbt = clamp(run_b, c0), ret = clamp(run_e, c0);
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
                }
                __syncwarp();  // the stage and marks are read before they are rewritten
            }
        }
    }
}

// The deferred segments, in chunks of Deferred::CHUNK elements: chunk k
// (of ctl[1]) belongs to entry owner[k], the entry's chunks first ...
// first + chunks - 1 in order.  A block a chunk (persistent grids: the host
// does not know how many there are).
constexpr int CHUNK_BLOCK = 256, CHUNK_ITEMS = int(reduce::seg::Deferred::CHUNK) / CHUNK_BLOCK;

// The elements [lo, hi) of chunk k.
__device__ inline void chunk_of(const reduce::seg::Deferred &D, const int64_t *offsets, int64_t k,
                                int64_t &lo, int64_t &hi) {
    const reduce::seg::Entry E = D.list[D.owner[k]];
    const int64_t sb = offsets[E.p], se = offsets[E.p + 1];
    lo = sb + (k - E.first) * reduce::seg::Deferred::CHUNK;
    hi = lo + reduce::seg::Deferred::CHUNK < se ? lo + reduce::seg::Deferred::CHUNK : se;
}

// 1. Each chunk's total into partial[k].
template <class T, class Op>
__global__ void __launch_bounds__(CHUNK_BLOCK)
chunk_totals(const T *__restrict__ in, const int64_t *__restrict__ offsets,
             reduce::seg::Deferred D) {
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
chunk_prefixes(reduce::seg::Deferred D) {
    const Op op;
    T *partial = static_cast<T *>(D.partial);
    const int lane = threadIdx.x % WARP;
    const int64_t entries = int64_t(D.ctl[0]), warps = int64_t(gridDim.x) * (CHUNK_BLOCK / WARP);
    for (int64_t e = int64_t(blockIdx.x) * (CHUNK_BLOCK / WARP) + threadIdx.x / WARP; e < entries;
         e += warps) {
        const reduce::seg::Entry E = D.list[e];
        T carry = Op::identity();
        for (int64_t j = 0; j < E.chunks; j += WARP) {  // uniform over the warp
            const T x = j + lane < E.chunks ? partial[E.first + j + lane] : Op::identity();
            const T inc = scan::warp_inclusive_scan(x, op);
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
            reduce::seg::Deferred D, T *__restrict__ out) {
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
        scan::load_items<CHUNK_ITEMS, Op>(in, at, hi, vec, items);
        T before;
        scan::block_scan<CHUNK_BLOCK>(items, before, op, smem);
        const T pre = prefix[k];
        T res[CHUNK_ITEMS];
#pragma unroll
        for (int j = 0; j < CHUNK_ITEMS; ++j)
            res[j] = op(pre, inclusive ? items[j] : (j == 0 ? before : items[j - 1]));
        scan::store_items(out, at, hi, vec, res);
    }
}

// The launch: a warp a pack of pack_segments(mean) segments, then the
// deferred ones.  Scratch: scratch_bytes() (the Deferred list).
template <class Shape>
reduce::seg::DeferShape defer_of(int64_t n, int64_t count, const int64_t *offsets) {
    reduce::seg::Problems P{};
    P.offsets = offsets;
    const int64_t mean = count > 0 ? n / count : 1, least = 2 * int64_t(Shape::ELEMS);
    return reduce::seg::defer_shape(P, n, 16 * mean > least ? 16 * mean : least);
}

template <class Shape, class T, class Op>
size_t scratch_bytes(int64_t n, int64_t count, const int64_t *offsets) {
    return reduce::seg::defer_bytes<Op>(defer_of<Shape>(n, count, offsets));
}

template <class Shape, class T, class Op>
cudaError_t launch(const T *in, int64_t n, const int64_t *offsets, int64_t count, bool inclusive,
                   T *out, void *scratch, cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    const int64_t K = reduce::seg::pack_segments<Shape>(n / count);
    const int64_t warps = Shape::BLOCK / WARP;
    const int64_t grid =
        reduce::seg::grid_of(ceil_div<int64_t>(ceil_div<int64_t>(count, K), warps));
    reduce::seg::Deferred D;
    GP_TRY(reduce::seg::defer_in(scratch, defer_of<Shape>(n, count, offsets), stream, D));
    GP_LAUNCH((scan_packs<Shape, T, Op>), unsigned(grid), Shape::BLOCK, 0, stream, in, n, offsets,
              count, int(K), inclusive, D, out);
    if (D.ctl == nullptr) return cudaSuccess;
    const unsigned resident = unsigned(int64_t(reduce::seg::sms()) * (2048 / CHUNK_BLOCK));
    GP_LAUNCH((chunk_totals<T, Op>), resident, CHUNK_BLOCK, 0, stream, in, offsets, D);
    GP_LAUNCH((chunk_prefixes<T, Op>), resident, CHUNK_BLOCK, 0, stream, D);
    GP_LAUNCH((chunk_scans<T, Op>), resident, CHUNK_BLOCK, 0, stream, in, offsets, inclusive, D,
              out);
    return cudaSuccess;
}

}  // namespace packs_scan
GP_NAMESPACE_END
