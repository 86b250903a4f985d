// segmented_flat.cuh - the flat segmented reduction of step 21
// (21_segmented_flat.cu, which says why): its tile shape (FlatShape,
// FlatTuning), the bounds search, the tile kernel, the records' kernel and
// the launcher (FlatWith), for the step, the registry's block size and
// bench/tune_segflat.cu.
#pragma once

#include "../async_copy.cuh"
#include "segmented.cuh"

GP_NAMESPACE_BEGIN
namespace reduce {
namespace flat {
using namespace seg;

// ---------------------------------------------------------------- shapes
// A tile shape: BLOCK threads, VPT 16-byte vectors a thread (ITEMS = VPT x
// 16 / sizeof(In) elements: 32 floats for VPT 8), MIN_BLOCKS resident
// blocks an SM asked of the compiler (__launch_bounds__: BLOCK x MIN_BLOCKS
// threads share the registers), ASYNC: the tile lands in shared memory by
// cp.async (else through registers).  A tile is BLOCK x VPT x 16 bytes;
// shared memory a block: the tile plus one 16-byte pad each 128 bytes, the
// marks (a byte an element) or the staged results (up to half a tile's
// count of accumulators), 8 bytes of count a thread.
template <int BLOCK_, int VPT_, int MIN_BLOCKS_, bool ASYNC_ = true>
struct FlatShape {
    static constexpr int BLOCK = BLOCK_;
    static constexpr int VPT = VPT_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr bool ASYNC = ASYNC_;
};

// The library's shape: 128 threads x 8 vectors (16 KiB tiles, 4096 floats),
// 6 blocks an SM (80 registers a thread: no spills with ptxas of CUDA 13.0
// for sm_90, where 8 blocks, 64 registers, spill in the walk over 32
// elements; 27 KiB of shared memory a block for float32 sums).  On an H200
// (bench/results/tune-segflat-nvidia-h200-2026-11-23.md, float32 sums of
// 2^26, % of the copy roof for input + output + offsets) segments of mean
// 16, 64, 256, 1024, 65536 ran at 35.9, 37.6, 40.5, 42.7, 71.0% (128 x 4 at
// 8 blocks: 31.9-58.8%, 256 x 4: 33.0-55.8%, 256 x 8: 33.3-64.4%, the
// register path 33.9-62.2%); at mean 4 128 x 4 and 256 x 4 lead (27.8,
// 28.1% against 20.1), at 4096 128 x 4 (51.9 against 50.2).
using FlatTuning = FlatShape<128, 8, 6>;

// -------------------------------------------------------- the offsets
// Where the segments start, read (segments) or computed (rows of len).
// at(j): the offset of segment j (j <= count; at(count) is the end);
// bound(t): the first segment whose offset is at or past tile t's first
// element (count + 1 where none).  DISTINCT: no two offsets are equal.
struct ListedOffsets {
    const int64_t *offsets, *bounds;  // bounds: flat_bounds' (written by the launch before)
    static constexpr bool DISTINCT = false;
    __device__ int64_t at(int64_t j) const { return __ldg(offsets + j); }
    __device__ int64_t bound(int64_t t) const { return __ldcg(bounds + t); }
};

struct RowOffsets {
    int64_t len, count, tile;  // len > 0
    static constexpr bool DISTINCT = true;
    __device__ int64_t at(int64_t j) const { return j * len; }
    __device__ int64_t bound(int64_t t) const {
        const int64_t b = ceil_div<int64_t>(t * tile, len);
        return b < count + 1 ? b : count + 1;
    }
};

// ------------------------------------------------------------ bounds
// The first index in [0, count) with a[index] >= key (count where none),
// by the 32 lanes of a warp together: each round probes 32 evenly spaced
// places of the interval left and keeps the piece between the last probe
// below the key and the first at or above it, so 2^24 offsets take 5
// rounds of loads where a binary search takes 24.
__device__ inline int64_t warp_lower_bound(const int64_t *__restrict__ a, int64_t count, int64_t key,
                                           int lane) {
    int64_t lo = 0, hi = count;  // the answer is in [lo, hi]
    while (hi - lo > WARP) {     // uniform over the warp
        const int64_t s = ceil_div<int64_t>(hi - lo, WARP);
        const int64_t p = lo + (lane + 1) * s - 1;
        const int below = __popc(__ballot_sync(FULL_MASK, p < hi && __ldg(a + p) < key));
        const int64_t top = lo + (below + 1) * s - 1;
        lo += below * s;
        hi = top < hi ? top : hi;
    }
    const int64_t p = lo + lane;
    return lo + __popc(__ballot_sync(FULL_MASK, p < hi && __ldg(a + p) < key));
}

// bounds[t] for t = 0 ... tiles (a warp each), t x tile elements in.  Lets
// the next launch start at once (it waits for this grid before it reads
// bounds).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
flat_bounds(const int64_t *__restrict__ offsets, int64_t count, int64_t tile, int64_t tiles,
            int64_t *bounds) {
    allow_dependent_launch();
    const int lane = threadIdx.x % WARP;
    const int64_t warps = int64_t(gridDim.x) * (BLOCK / WARP);
    for (int64_t t = int64_t(blockIdx.x) * (BLOCK / WARP) + threadIdx.x / WARP; t <= tiles; t += warps) {
        const int64_t b = warp_lower_bound(offsets, count + 1, t * tile, lane);
        if (lane == 0) bounds[t] = b;
    }
}

// --------------------------------------------------------- the tiles
// The first index in (j, hi) whose offset is past pos (hi where none): the
// end of a run of equal offsets that starts at j (a binary search, so a
// run of any length costs its logarithm).
template <class Off>
__device__ inline int64_t past(const Off &off, int64_t j, int64_t hi, int64_t pos) {
    int64_t lo = j + 1, left = hi - lo;
    while (left > 0) {
        const int64_t half = left / 2;
        if (off.at(lo + half) <= pos) lo += half + 1, left -= half + 1;
        else left = half;
    }
    return lo;
}

// Tile `start` into shared memory: vector p = u*BLOCK + tid (u < VPT) of
// the tile, 16-byte aligned input (vec), at slot p + p/8 (a 16-byte pad
// every 128 bytes, so that the reads of step 3, a thread's VPT
// neighbouring vectors, hit 8 different bank groups per 8 threads); the
// elements past n are not loaded (the walk never reads them).  A
// misaligned input: element q = u*BLOCK + tid, the same slots, 4 or 8
// bytes a load (still coalesced).
template <class Shape, class In>
__device__ inline void load_tile(const In *__restrict__ in, int64_t n, int64_t start, bool vec,
                                 uint4 *data) {
    constexpr int BLOCK = Shape::BLOCK, VPT = Shape::VPT, V = int(16 / sizeof(In));
    const int tid = threadIdx.x;
    if (vec) {
        uint4 r[Shape::ASYNC ? 1 : VPT];
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
            const int p = u * BLOCK + tid;
            const int64_t g = start + int64_t(p) * V;
            if constexpr (!Shape::ASYNC) r[u] = uint4{0u, 0u, 0u, 0u};
            if (g + V <= n) {
                if constexpr (Shape::ASYNC) async_copy16(data + p + p / 8, in + g);
                else r[u] = ldg16(in + g);
            } else if (g < n) {  // the vector that holds the last element
                In v[V];
#pragma unroll
                for (int k = 0; k < V; ++k) v[k] = g + k < n ? in[g + k] : In();
                memcpy(data + p + p / 8, v, 16);
            }
        }
        if constexpr (Shape::ASYNC) {
            async_commit();
        } else {
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int p = u * BLOCK + tid;
                if (start + int64_t(p) * V + V <= n) data[p + p / 8] = r[u];
            }
        }
    } else {
        constexpr int ITEMS = VPT * V;
        In r[ITEMS];
#pragma unroll
        for (int u = 0; u < ITEMS; ++u) {
            const int64_t g = start + u * BLOCK + tid;
            r[u] = g < n ? in[g] : In();
        }
#pragma unroll
        for (int u = 0; u < ITEMS; ++u) {
            const int q = u * BLOCK + tid, p = q / V;
            if (start + q < n) reinterpret_cast<In *>(data + p + p / 8)[q % V] = r[u];
        }
    }
}

// Flagged values of the block scan: f = a segment starts in the run (only
// the part after its last start is in v), combined as Sengupta et al.'s
// segmented operator: (a, b) -> (a.f | b.f, b.f ? b.v : a.v op b.v).
template <class Acc>
struct Part {
    Acc v;
    unsigned f;
};

template <class Acc, class Op>
__device__ inline Part<Acc> then(Part<Acc> a, Part<Acc> b, Op op) {
    return {b.f ? b.v : op(a.v, b.v), a.f | b.f};
}

// A tile's crossing record: the segment that ends in the tile having begun
// in an earlier one (segment = bound(t) - 1, where the tile holds an offset
// and bound(t) > 0; else -1) and the tile where it began.
struct Crossing {
    int64_t segment, first_tile;
};

// One tile a block (tiles of n elements; `count` segments).  agg[t]: the
// tile's flagged total; head[t]: the part of the segment open at its first
// element, up to its end in the tile (where one ends in it); cross[t].
template <class Shape, class In, class Op, class Off>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
reduce_flat(const In *__restrict__ in, int64_t n, int64_t count, Off off, int64_t tiles, bool vec,
            typename Op::type *agg, typename Op::type *head, Crossing *cross, typename Op::type *out) {
    using Acc = typename Op::type;
    using P = Part<Acc>;
    constexpr int BLOCK = Shape::BLOCK, VPT = Shape::VPT, WARPS = BLOCK / WARP;
    constexpr int V = int(16 / sizeof(In)), ITEMS = VPT * V, TILE = BLOCK * ITEMS;
    constexpr int SLOTS = BLOCK * VPT, PADDED = SLOTS + SLOTS / 8;
    // The marks (a byte an element) and, once every thread has read its
    // own, the tile's results share MARKS x 16 bytes: up to STAGE results
    // (a segment of 2 elements on average, where the 48 KiB of static
    // shared memory allow; at most 16 a thread, so that the empties' bit
    // mask holds them).
    constexpr int OTHER = PADDED * 16 + BLOCK * 8 + WARPS * 32, ROOM = (48 * 1024 - OTHER) / 16 * 16;
    constexpr int WANT = TILE / 2 * int(sizeof(Acc)), RESULTS = WANT < ROOM ? WANT : ROOM;
    constexpr int MARKS = (TILE > RESULTS ? TILE : RESULTS) / 16, STAGE = RESULTS / int(sizeof(Acc));
    static_assert(V * sizeof(In) == 16 && ITEMS % 4 == 0 && ITEMS <= 32, "4 to 32 elements a thread");
    static_assert(BLOCK % WARP == 0 && TILE % 16 == 0 && TILE <= ROOM && STAGE <= 32 * BLOCK, "whole warps, 48 KiB");
    __shared__ uint4 data[PADDED];
    __shared__ uint4 mark_v[MARKS];
    __shared__ unsigned long long cnt[BLOCK];   // offsets in each thread's run
    __shared__ long long warp_count[WARPS];
    __shared__ Acc warp_value[WARPS];
    __shared__ unsigned warp_flag[WARPS];
    unsigned char *mark = reinterpret_cast<unsigned char *>(mark_v);
    Acc *res = reinterpret_cast<Acc *>(mark_v);
    const Op op;
    const int tid = threadIdx.x, lane = tid % WARP, warp = tid / WARP;
    allow_dependent_launch();
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {  // uniform over the block
        const int64_t start = t * TILE;
        load_tile<Shape>(in, n, start, vec, data);
        for (int i = tid; i < TILE / 16; i += BLOCK) mark_v[i] = uint4{0u, 0u, 0u, 0u};
        cnt[tid] = 0;
        grid_dependency_wait();  // bounds (and the first tiles' reads of `in` went on meanwhile)
        const int64_t lo = off.bound(t), hi = off.bound(t + 1);  // the tile's offsets
        // The tile writes segments lo ... hi-2 (those that start and end in
        // it): staged where they fit.
        const bool staged = hi - 1 - lo > 0 && hi - 1 - lo <= STAGE;
        __syncthreads();

        // 1. Mark the offsets of the tile: the last offset at each position
        // marks it, 1 (one offset there) or 2 (several: the ones before it
        // start empty segments, which get the identity here; bit m of
        // `empty`: offset lo + tid + m*BLOCK starts one, staged).
        unsigned empty = 0;
        if (tid == 0 && !(hi > lo && lo > 0)) cross[t] = Crossing{-1, 0};
        for (int64_t j0 = lo + tid; j0 < hi; j0 += 4 * BLOCK) {
            int64_t o[4], prev[4], next[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {  // every load in flight before the first use
                const int64_t j = j0 + u * BLOCK;
                o[u] = j < hi ? off.at(j) : 0;
                prev[u] = !Off::DISTINCT && j < hi && j > 0 ? off.at(j - 1) : -1;
                next[u] = !Off::DISTINCT && j < hi && j < count ? off.at(j + 1) : -1;
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int64_t j = j0 + u * BLOCK;
                if (j >= hi) break;
                const int e = int(o[u] - start);
                atomicAdd(&cnt[e / ITEMS], 1ull);
                if (j == lo && lo > 0)  // segment lo - 1 ends here: where it began (prev < start)
                    cross[t] = Crossing{lo - 1, (Off::DISTINCT ? off.at(lo - 1) : prev[u]) / TILE};
                if (next[u] != o[u]) {
                    mark[e] = prev[u] == o[u] ? 2 : 1;
                } else if (staged) {
                    empty |= 1u << int((j - lo) / BLOCK);
                } else {
                    out[j] = Op::identity();
                }
            }
        }
        if constexpr (Shape::ASYNC) async_wait_all();
        __syncthreads();

        // 2. The thread's run r0 ... r0 + ITEMS-1: its marks (bit k: a
        // segment starts at r0 + k), its count of offsets.
        const int64_t r0 = start + int64_t(tid) * ITEMS;
        unsigned heads = 0, runs = 0;  // bit k: a segment starts at r0 + k / several do
        {
            unsigned w[ITEMS / 4];  // the run's marks: 16-byte reads where they fill one
            if constexpr (ITEMS % 16 == 0) {
#pragma unroll
                for (int q = 0; q < ITEMS / 16; ++q) memcpy(w + 4 * q, mark_v + tid * (ITEMS / 16) + q, 16);
            } else {
#pragma unroll
                for (int q = 0; q < ITEMS / 4; ++q) memcpy(w + q, mark + tid * ITEMS + 4 * q, 4);
            }
#pragma unroll
            for (int q = 0; q < ITEMS / 4; ++q) {  // 4 bytes of 0/1 -> 4 bits: byte b's bit 0 to bit 24 + b
                heads |= ((((w[q] | w[q] >> 1) & 0x01010101u) * 0x01020408u) >> 24) << (4 * q);
                runs |= ((((w[q] >> 1) & 0x01010101u) * 0x01020408u) >> 24) << (4 * q);
            }
        }
        const int64_t c = int64_t(cnt[tid]);

        // 3. The first offset of the run: lo + the counts of the threads
        // before (a block scan).
        int64_t inc = c;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const int64_t y = __shfl_up_sync(FULL_MASK, inc, d);
            if (lane >= d) inc += y;
        }
        if (lane == WARP - 1) warp_count[warp] = inc;
        __syncthreads();  // and every thread has read its marks: their bytes take results now
        int64_t lo_i = lo + inc - c;
        for (int w = 0; w < warp; ++w) lo_i += warp_count[w];
        const int64_t hi_i = lo_i + c;
        for (unsigned e = empty; e != 0; e &= e - 1) res[tid + (__ffs(int(e)) - 1) * BLOCK] = Op::identity();
        const auto put = [&](int64_t s, Acc v) {
            if (staged) res[s - lo] = v;
            else out[s] = v;
        };
        // The walk: at each mark the segment open so far ends (the first:
        // the head part, segment lo_i - 1; then segment j - 1, opened at
        // the mark before) and the last segment of the offsets there
        // opens: j + 1, or past a run of equal offsets (empty segments,
        // marked 2) found by a search.
        const bool full = r0 + ITEMS <= n;
        Acc acc = Op::identity(), first = Op::identity();
        int64_t j = lo_i;
        if (heads == 0) {  // no segment starts here (the common case of long segments)
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                In v[V];
                const int p = tid * VPT + u;
                memcpy(v, &data[p + p / 8], 16);
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (full || r0 + u * V + k < n) acc = op(acc, Acc(v[k]));
            }
        } else {
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                In v[V];
                const int p = tid * VPT + u;
                memcpy(v, &data[p + p / 8], 16);
#pragma unroll
                for (int k = 0; k < V; ++k) {
                    const int e = u * V + k;
                    if ((heads >> e) & 1u) {
                        if (j == lo_i) first = acc;
                        else put(j - 1, acc);
                        j = (runs >> e) & 1u ? past(off, j, hi_i, r0 + e) : j + 1;
                        acc = Op::identity();
                    }
                    if (full || r0 + e < n) acc = op(acc, Acc(v[k]));
                }
            }
        }

        // 4. Segments across threads: a segmented scan of the runs' parts.
        P mine{acc, c > 0 ? 1u : 0u}, in_warp = mine;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const P y{__shfl_up_sync(FULL_MASK, in_warp.v, d), __shfl_up_sync(FULL_MASK, in_warp.f, d)};
            if (lane >= d) in_warp = then(y, in_warp, op);
        }
        P before{__shfl_up_sync(FULL_MASK, in_warp.v, 1), __shfl_up_sync(FULL_MASK, in_warp.f, 1)};
        if (lane == WARP - 1) warp_value[warp] = in_warp.v, warp_flag[warp] = in_warp.f;
        __syncthreads();
        P carry{Op::identity(), 0u};
        for (int w = 0; w < warp; ++w) carry = then(carry, P{warp_value[w], warp_flag[w]}, op);
        if (lane > 0) carry = then(carry, before, op);
        if (c > 0) {  // segment lo_i - 1 ends in this run
            const Acc v = op(carry.v, first);
            if (carry.f) put(lo_i - 1, v);  // it started in this tile
            else head[t] = v;               // the tile's first offset: the records finish it
        }
        if (tid == BLOCK - 1) agg[t] = then(carry, mine, op).v;

        // 5. The staged results, coalesced.
        if (staged) {
            __syncthreads();
            for (int64_t q = tid; q < hi - 1 - lo; q += BLOCK) out[lo + q] = res[q];
        }
        if (t + gridDim.x < tiles) __syncthreads();  // the next tile reuses the shared memory
    }
}

// ------------------------------------------------------------ records
// Each segment that began in an earlier tile, finished in tile t1 where it
// ends (cross[t1]: segment s, begun in tile t0): its value is agg[t0] op
// agg[t0+1] ... op agg[t1-1] op head[t1] (tiles t0+1 ... t1-1 hold no
// offset: agg is all of them).  A thread a tile t1; spans of more than
// NEAR tiles are read by the whole warp (lane-strided, then its tree), one
// after another.
template <int BLOCK, int NEAR, class Op>
__global__ void __launch_bounds__(BLOCK)
flat_fixup(int64_t tiles, const typename Op::type *__restrict__ agg, const typename Op::type *__restrict__ head,
           const Crossing *__restrict__ cross, typename Op::type *out) {
    using Acc = typename Op::type;
    const Op op;
    grid_dependency_wait();
    const int lane = threadIdx.x % WARP;
    const int64_t step = int64_t(gridDim.x) * BLOCK;
    for (int64_t base = int64_t(blockIdx.x) * BLOCK + threadIdx.x - lane; base < tiles; base += step) {
        const int64_t t1 = base + lane;  // the loop is uniform over the warp
        Crossing c{-1, 0};
        if (t1 < tiles) c = Crossing{__ldcg(&cross[t1].segment), __ldcg(&cross[t1].first_tile)};
        const int64_t s = c.segment, t0 = c.first_tile;
        const bool near = s >= 0 && t1 - t0 <= NEAR;
        if (near) {
            Acc v = __ldcg(agg + t0);
            for (int64_t k = t0 + 1; k < t1; ++k) v = op(v, __ldcg(agg + k));
            out[s] = op(v, __ldcg(head + t1));
        }
        for (unsigned far = __ballot_sync(FULL_MASK, s >= 0 && !near); far != 0; far &= far - 1) {
            const int l = __ffs(int(far)) - 1;
            const int64_t a = __shfl_sync(FULL_MASK, t0, l), b = __shfl_sync(FULL_MASK, t1, l),
                          sl = __shfl_sync(FULL_MASK, s, l);
            Acc v = Op::identity();
            for (int64_t k = a + lane; k < b; k += 4 * WARP) {
                Acc y[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) y[u] = k + u * WARP < b ? __ldcg(agg + k + u * WARP) : Op::identity();
#pragma unroll
                for (int u = 0; u < 4; ++u) v = op(v, y[u]);
            }
            v = warp_reduce(v, op);
            if (lane == 0) out[sl] = op(v, __ldcg(head + b));
        }
    }
}

// ----------------------------------------------------------- the launch
// Segments: flat_bounds, reduce_flat, flat_fixup (the last two launched
// early on sm_90+).  Rows of a C array: the last two.  Other layouts: step
// 15's blocks.  Scratch: bounds (segments), then the records (Records).
template <class Shape, class In, class Op>
struct FlatWith {
    using Acc = typename Op::type;
    static constexpr int64_t TILE = int64_t(Shape::BLOCK) * Shape::VPT * int64_t(16 / sizeof(In));
    static constexpr int BOUND_BLOCK = 256, FIX_BLOCK = 256, NEAR = 8;
    // Tiles of n elements: the last one holds position n (where the last
    // offsets may lie) even where TILE divides n.
    static int64_t tiles(int64_t n) { return n / TILE + 1; }
    // Rows back to back (a C array along its last axis; one row: a 1-D call).
    static bool rows(const Problems &P) {
        return P.offsets == nullptr && P.outer == 1 && P.s_n == 1 && P.len > 0 &&
               (P.count == 1 || P.s_inner == P.len);
    }
    static int64_t elements(const gp_reduce_args &a, const Problems &P) {
        return P.offsets != nullptr ? a.n : P.count * P.len;
    }
    // The scratch of nt tiles: bounds (segments), agg, head, cross.
    struct Records {
        int64_t *bounds;
        Acc *agg, *head;
        Crossing *cross;
        static size_t bytes(int64_t nt, bool segments) {
            return (segments ? align_up(size_t(nt + 1) * 8) : 0) + 2 * align_up(size_t(nt) * sizeof(Acc)) +
                   align_up(size_t(nt) * sizeof(Crossing));
        }
        Records(void *scratch, int64_t nt, bool segments) {
            char *p = static_cast<char *>(scratch);
            bounds = reinterpret_cast<int64_t *>(p);
            p += segments ? align_up(size_t(nt + 1) * 8) : 0;
            agg = reinterpret_cast<Acc *>(p);
            head = reinterpret_cast<Acc *>(p + align_up(size_t(nt) * sizeof(Acc)));
            cross = reinterpret_cast<Crossing *>(p + 2 * align_up(size_t(nt) * sizeof(Acc)));
        }
    };
    static size_t scratch(const gp_reduce_args &a, const Problems &P) {
        if (P.offsets == nullptr && !rows(P)) return partial_bytes<Op>(P, split_chunks(P.count, P.len, Seg::MIN_CHUNK));
        return Records::bytes(tiles(elements(a, P)), P.offsets != nullptr);
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        if (P.offsets == nullptr && !rows(P)) return launch_blocks<In, Op>(a, P, split_chunks(P.count, P.len, Seg::MIN_CHUNK));
        DeviceFacts d;
        GP_TRY(device_facts(d));
        const bool early = d.major >= 9;
        const int64_t n = elements(a, P), nt = tiles(n);
        const Records r(a.scratch, nt, P.offsets != nullptr);
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        const bool vec = reinterpret_cast<uintptr_t>(in) % 16 == 0;
        const unsigned grid = unsigned(grid_of(nt)), fix_grid = unsigned(grid_of(ceil_div<int64_t>(nt, FIX_BLOCK)));
        if (P.offsets != nullptr) {
            const ListedOffsets off{P.offsets, r.bounds};
            GP_LAUNCH(flat_bounds<BOUND_BLOCK>, unsigned(grid_of(ceil_div<int64_t>(nt + 1, BOUND_BLOCK / WARP))),
                      BOUND_BLOCK, 0, a.stream, P.offsets, P.count, TILE, nt, r.bounds);
            const auto tiles_kernel = reduce_flat<Shape, In, Op, ListedOffsets>;
            GP_LAUNCH_EARLY(early, tiles_kernel, grid, Shape::BLOCK, 0, a.stream, in, n, P.count, off, nt, vec, r.agg,
                            r.head, r.cross, out);
        } else {  // nothing before to wait for: an ordinary launch
            const RowOffsets off{P.len, P.count, TILE};
            const auto tiles_kernel = reduce_flat<Shape, In, Op, RowOffsets>;
            GP_LAUNCH(tiles_kernel, grid, Shape::BLOCK, 0, a.stream, in, n, P.count, off, nt, vec, r.agg, r.head,
                      r.cross, out);
        }
        const auto fix_kernel = flat_fixup<FIX_BLOCK, NEAR, Op>;
        GP_LAUNCH_EARLY(early, fix_kernel, fix_grid, FIX_BLOCK, 0, a.stream, nt, r.agg, r.head, r.cross, out);
        return cudaSuccess;
    }
};

}  // namespace flat
}  // namespace reduce
GP_NAMESPACE_END
