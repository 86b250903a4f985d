// segmented.cuh - what the batched and segmented reductions share (steps 11
// to 17, cuda/reduce/11_*.cu ...): the problems of a gp_batch seen one way,
// the dispatch from dtype codes with the two-phase scratch protocol, and the
// kernels, one per mapping of work to threads:
//
//   reduce_groups    a group of W lanes per problem (W = 1: a thread, W = 32:
//                    a warp, 2..16: several problems per warp)
//   reduce_blocks    `chunks` blocks per problem (1: a block per problem),
//                    the partials combined by combine_* in a second launch
//   reduce_columns   threads across neighbouring problems (columns), a
//                    tile of rows per block, the rows split over blocks
//   reduce_deferred  the adaptive step's long segments, in chunks (Deferred)
//   reduce_packs     a warp per pack of neighbouring segments, read as one
//                    flat run (the adaptive step's segments, PackTuning)
//   reduce_rows_dense, reduce_rows_long, reduce_columns_flat
//                    the adaptive step's one-launch kernels for the layouts
//                    of an aligned C array: rows of 1..32 16-byte vectors,
//                    few long rows, few dense columns (DenseTuning)
//
// The steps' files say which mapping they teach and why; the kernels live
// here because the adaptive step (17) launches all of them.
//
// Every problem is reduced in an order fixed by its length and the launch
// shape (which the launcher computes from the layout and the SM count): no
// floating-point atomics (the adaptive step's integer atomics only decide
// which block reads which chunk, see Deferred), so the same input gives the
// same bits run to run on one GPU.
#pragma once

#include <type_traits>

#include "../async_copy.cuh"
#include "../segments.cuh"
#include "reduce.cuh"

GP_NAMESPACE_BEGIN
namespace reduce {
namespace seg {

// Launch shapes and the adaptive choice's thresholds, one home.  The
// thresholds of step 17 come from bench/bench_reduce.py "axis and segments"
// on an NVIDIA H200 (copy roof 4.1-4.3 TB/s; float32 sums; a run whose
// table was not kept in bench/results), kernels as of that run (before
// reduce_groups_vec):
//   THREAD_MAX = 8: rows of 4, (2^24, 4) axis -1: a thread per row 3589 GB/s
//     (86.7%), 2 lanes per row 2155 GB/s (52%); segments of mean 4: a thread
//     2922 GB/s (70.6%), 2 lanes 1815 GB/s (43.8%).  8 is interpolated: a
//     thread's row of 8 is one 32-byte sector.
//   LANE_ITEMS = 16: segments of mean 64, bench/tune_axis.cu on an H200
//     (bench/results/tune-axis-nvidia-h200-2026-11-23.md): scalar groups of
//     4 lanes (16 elements a lane) 0.1313 ms, 8 lanes 0.1409, 2 lanes
//     0.1467, 16 lanes (4 a lane) 0.1719, a warp 0.2504; mean 1024 (past
//     32 x 16: a warp) a warp 0.1059, 16 lanes 0.1317.  Aligned rows of 64
//     floats take reduce_rows_dense instead.
//   COLUMN_THREAD_MAX = 8: columns of 4 rows, (4, 2^24) axis 0: a thread
//     per column 3272 GB/s (79%), column tiles 1756 GB/s (42.4%: a block
//     reads 4 KB and exits); columns of 64 rows, (64, 2^20) axis 0: tiles
//     3593 GB/s (86.7%), a thread 3319 GB/s (80.1%).  8 is interpolated.
//   WARP_MAX = 4096: segments of mean 1024: a warp 2651 GB/s (64%), 16
//     lanes 2200 (53.1%), a block 1641 (39.6%); mean 65536: blocks (split)
//     3153 GB/s (76.1%), a warp 439 (10.6%).
//   SEGMENT_WARP_MAX = 1536: segments (bench/tune_segflat.cu, bench/
//     results/tune-segflat-nvidia-h200-2026-11-23.md, % of the roof for
//     input + output + offsets): mean 1024, a warp a segment 58.9%, CUB's
//     block a segment 48.4%; mean 2048, 51.6% against 69.3%; mean 4096,
//     30.1% against 83.1% (the library's block a segment: 60.4% at 2048,
//     79.5-80.0% at 4096).  The crossover, interpolated between 1024 and
//     2048, lies near 1400.  Rows
//     keep WARP_MAX (theirs were measured at 1024 and 16384 only).
//   PACK_MIN = 64, PACK_MAX = 4096: segments, packs of them a warp
//     (reduce_packs; bench/results/tune-packs-nvidia-h200-2026-11-23.md):
//     mean 16, packs 49.5% against lanes per segment 55.8% (run 7); against
//     the mappings before packs (run 1): mean 64 70.3 (run 7) against lanes
//     per segment 51.9; 1024, 73.5 against a warp a segment 56.6; 4096, 71.8
//     against blocks 55.3; mean 65536, 41.5 against blocks 74.8 (run 7: 987
//     segments, a warp each, cannot fill the GPU).  Between 16 and 64 and
//     between 4096 and 65536 unmeasured.
//   VEC_MIN_ROW = 16, and rows only: the H200 run after the vector lanes
//     went in (float32 sums, bench/results/reduce-axis-nvidia-h200-2026-11-23.md)
//     measured them at 63.6% of the copy roof for rows of 64 (scalar 16
//     lanes: 59%) but behind the scalar mappings for rows of 4 (75% vs a
//     thread per row 86.7%), segments of mean 64 (27.8% vs 16 scalar lanes
//     39.6%) and of mean 1024 (53.2% vs a scalar warp 64%).
//   reduce_columns_vec (16-byte loads across 4 short columns): (4, 2^24)
//     axis 0 at 3964 GB/s (95.5%) in that run, against 79% for a thread per
//     column with single loads.
struct SegTuning {
    static constexpr int BLOCK = 256;        // threads per block, every kernel here
    static constexpr int BLOCKS_PER_SM = 8;  // 2048 resident threads per SM / BLOCK
    static constexpr int UNROLL = 8;         // loads in flight per thread (block, column kernels)
    static constexpr int ROUNDS = 4;  // groups: problems in flight per group (8: ~128 registers)
    static constexpr int GROUP_UNROLL = 2;      // groups: loads per problem per lane per trip
    static constexpr int VEC_UNROLL = 1;  // groups_vec: 16-byte loads per problem per lane per trip
    static constexpr int WAVES = 2;             // splits: aim at WAVES x the resident blocks
    static constexpr int64_t MIN_CHUNK = 4096;  // splits: elements per block, at least (16/thread)
    static constexpr int64_t MIN_ROWS = 16;     // columns: rows per thread of a split, at least
    static constexpr int64_t THREAD_MAX = 8;    // adaptive: a thread per row up to this length
    static constexpr int64_t LANE_ITEMS = 16;   // adaptive: elements per lane of a sub-warp group
    static constexpr int64_t COLUMN_THREAD_MAX = 8;  // adaptive: a thread per column up to this
    static constexpr int64_t VEC_MIN_ROW = 16;   // adaptive: vector loads for rows from this length
    static constexpr int64_t WARP_MAX = 4096;   // adaptive: lanes per problem up to this length
    static constexpr int64_t SEGMENT_WARP_MAX = 1536;  // adaptive: the same for segments (mean length)
    static constexpr int64_t PACK_MIN = 64;     // adaptive: packs of segments (reduce_packs) for
    static constexpr int64_t PACK_MAX = 4096;   //   segments of a mean length in this range
    static constexpr int64_t MAX_GRID = 0x7fffffff;  // gridDim.x; kernels loop beyond
};
using Seg = SegTuning;

// ------------------------------------------------------------ the problems
// One problem's elements: base[k * stride] for 0 <= k < len, base an
// element offset from `in` (negative strides make it negative).
struct Span {
    int64_t base, len, stride;
};

// The `count` problems of a call, numbered p = o * inner + i (the output's
// order).  Batched: problem (o, i) starts at o*s_outer + i*s_inner, its
// elements s_n apart, len of them.  Segmented: problem o is
// offsets[o] .. offsets[o+1] - 1, contiguous.
struct Problems {
    int64_t count, outer, inner, len;
    int64_t s_outer, s_n, s_inner;
    const int64_t *offsets;

    __device__ Span span(int64_t p) const {
        if (offsets != nullptr) {
            const int64_t b = __ldg(offsets + p), e = __ldg(offsets + p + 1);
            return {b, e > b ? e - b : 0, 1};
        }
        const int64_t o = outer == 1 ? 0 : p / inner, i = p - o * inner;
        return {o * s_outer + i * s_inner, len, s_n};
    }
};

// The problems of a call in one normal form: an inner extent of 1 folds into
// it (problem o is then i = o), and outer folds into inner where the
// problems are evenly spaced across both (s_outer == inner * s_inner), so
// that `inner` counts the problems whose starts are s_inner apart.  A 1-D
// call (rows without the flags get those) is one problem of n elements.
inline Problems problems_of(const gp_reduce_args &a) {
    const gp_batch &b = a.batch;
    Problems P{};
    if (b.offsets != nullptr) {
        P.count = P.outer = b.outer;
        P.inner = 1;
        P.len = b.outer > 0 ? a.n / b.outer : 0;  // the mean length: what the choices read
        P.s_n = 1;
        P.offsets = b.offsets;
        return P;
    }
    P.outer = b.outer, P.inner = b.inner, P.len = a.n;
    P.s_outer = b.s_outer, P.s_n = b.s_n, P.s_inner = b.s_inner;
    if (P.inner == 1) P.inner = P.outer, P.s_inner = P.s_outer, P.outer = 1, P.s_outer = 0;
    if (P.outer > 1 && P.s_outer == P.inner * P.s_inner)
        P.inner *= P.outer, P.outer = 1, P.s_outer = 0;
    P.count = P.outer * P.inner;
    return P;
}

inline int64_t abs64(int64_t v) {
    return v < 0 ? -v : v;
}

// Columns: neighbouring problems sit closer in memory than neighbouring
// elements of one problem, so threads should run across problems.
inline bool column_like(const Problems &P) {
    return P.offsets == nullptr && P.inner > 1 && abs64(P.s_inner) < abs64(P.s_n);
}

inline int64_t grid_of(int64_t blocks) {
    return blocks < 1 ? 1 : blocks < Seg::MAX_GRID ? blocks : Seg::MAX_GRID;
}

inline int sms() {  // 1 where it cannot be read: a small grid, still right
    DeviceFacts d;
    return device_facts(d) == cudaSuccess && d.sms >= 1 ? d.sms : 1;
}

// How many blocks share each problem of length len in a split: enough
// blocks to fill the GPU WAVES times over, none with fewer than min_chunk
// elements.  1: a block per problem.
inline int64_t split_chunks(int64_t count, int64_t len, int64_t min_chunk) {
    if (count <= 0) return 1;
    const int64_t target = int64_t(sms()) * Seg::BLOCKS_PER_SM * Seg::WAVES;
    int64_t c = ceil_div<int64_t>(target, count);
    const int64_t most = ceil_div<int64_t>(len, min_chunk);
    if (c > most) c = most;
    return c < 1 ? 1 : c;
}

// ------------------------------------------------- long segments, apart
// The deferral of long segments (cuda/segments.cuh): reduce_deferred reads
// the listed ones in chunks of Deferred::CHUNK, a block each, and the last
// block to finish a segment combines its chunks in order.
using segs::Deferred;
using segs::Entry;

// ---------------------------------------------------- the device helpers
// acc op in[k*stride] for k = k0, k0 + step, ... < end, UNROLL loads issued
// before the first of their adds (each predicated: short problems and
// tails need no second loop).  The order of the adds depends only on
// (k0, step, end).
template <int UNROLL, class Op, class In>
__device__ inline typename Op::type fold_strided(typename Op::type acc, const In *in,
                                                 int64_t stride, int64_t k0, int64_t step,
                                                 int64_t end, Op op) {
    using Acc = typename Op::type;
    const In *p = in + k0 * stride;
    const int64_t jump = step * stride;  // elements between one thread's loads
    for (int64_t left = end - k0; left > 0; left -= UNROLL * step, p += UNROLL * jump) {
        Acc r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            r[u] = u * step < left ? Acc(__ldg(p + u * jump)) : Op::identity();
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc = op(acc, r[u]);
    }
    return acc;
}

// Reduce over each aligned group of W lanes; lane 0 of the group holds the
// result.  Every lane of the warp must call it.
template <int W, class V, class Op>
__device__ inline V group_reduce(V v, Op op) {
#pragma unroll
    for (int offset = W / 2; offset > 0; offset >>= 1)
        v = op(v, __shfl_down_sync(FULL_MASK, v, offset, W));
    return v;
}

// ---------------------------------------------------------------- kernels

// A group of W lanes per problem.  The grid sweeps the problems in rounds
// of gridDim.x * (BLOCK / W) * rounds: group g takes the `rounds` problems
// sweep + r * groups + g, so that for each r neighbouring groups hold
// neighbouring problems (neighbouring columns for W = 1; neighbouring rows
// for small W).  A lane loads elements sub, sub + W, ... of each of its
// problems, all `rounds` problems in the same trip (short problems still
// keep rounds * GROUP_UNROLL loads in flight), then each group combines its
// lanes by shuffles.  The sweep count is the same for every lane of a warp,
// so all lanes reach the shuffles.
template <int W, class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_groups(const In *__restrict__ in, Problems P, int rounds, Deferred D,
              typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int R = Seg::ROUNDS, U = Seg::GROUP_UNROLL;
    const Op op;
    const int sub = threadIdx.x % W;
    const int64_t groups = int64_t(gridDim.x) * (Seg::BLOCK / W);
    const int64_t g = int64_t(blockIdx.x) * (Seg::BLOCK / W) + threadIdx.x / W;
    const int64_t stride = P.offsets != nullptr ? 1 : P.s_n;  // the same for every problem
    const int64_t jump = W * stride;                          // between a lane's loads
    for (int64_t sweep = 0; sweep < P.count; sweep += groups * rounds) {
        const In *q[R];   // the lane's next element of each problem
        int64_t left[R];  // how many of the problem's elements from there on
        Acc acc[R];
        unsigned mine = 0, deferred = 0;  // bit r: in range and read here / deferred
        int64_t longest = 0;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t p = sweep + r * groups + g;
            Span s = r < rounds && p < P.count ? P.span(p) : Span{0, 0, 1};
            if (r < rounds && p < P.count) {
                if (D.defers(s.len)) deferred |= 1u << r, s.len = 0;
                else mine |= 1u << r;
            }
            q[r] = in + s.base + sub * stride;
            left[r] = s.len - sub;
            acc[r] = Op::identity();
            longest = left[r] > longest ? left[r] : longest;
        }
        for (int64_t done = 0; done < longest; done += U * W) {
            Acc x[R][U];
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < U; ++u)
                    x[r][u] = done + u * W < left[r] ? Acc(__ldg(q[r] + u * jump)) : Op::identity();
#pragma unroll
            for (int r = 0; r < R; ++r) {
                q[r] += U * jump;
#pragma unroll
                for (int u = 0; u < U; ++u) acc[r] = op(acc[r], x[r][u]);
            }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t p = sweep + r * groups + g;
            const Acc v = group_reduce<W>(acc[r], op);
            if (sub == 0 && (mine >> r & 1u)) out[p] = v;
            if (sub == 0 && (deferred >> r & 1u)) D.push(p, P.span(p).len);  // rare: after the hot loop
        }
    }
}

// The same mapping for contiguous problems (segments; rows with s_n == 1),
// read in 16-byte vectors: V = 16 / sizeof(In) elements a load (4 floats),
// so each load of a lane carries 4x the bytes of reduce_groups' and a warp
// load of groups of W lanes covers 32 / W runs of 16 W neighbouring bytes.
// A problem's elements before its first 16-byte boundary (the head, < V)
// and after its last (the tail, < V) are scalar loads of lanes 0.. of the
// group, issued with the problems' first trip.  The order of the adds
// depends on the problem's length and the alignment of its start, both
// fixed by the input: the same bits run to run.
template <class In>
__device__ inline uint4 ldg16(const In *p) {
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

template <int W, class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_groups_vec(const In *__restrict__ in, Problems P, int rounds, Deferred D,
                  typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int R = Seg::ROUNDS, U = Seg::VEC_UNROLL, V = int(16 / sizeof(In));
    constexpr int EDGE = (V - 1 + W - 1) / W;  // head or tail elements per lane, at most
    static_assert(V * sizeof(In) == 16, "an element size that divides 16");
    const Op op;
    const int sub = threadIdx.x % W;
    const int64_t groups = int64_t(gridDim.x) * (Seg::BLOCK / W);
    const int64_t g = int64_t(blockIdx.x) * (Seg::BLOCK / W) + threadIdx.x / W;
    for (int64_t sweep = 0; sweep < P.count; sweep += groups * rounds) {
        const In *q[R];   // the lane's next vector of each problem
        int64_t left[R];  // how many of the problem's vectors from there on
        Acc acc[R];
        unsigned mine = 0, deferred = 0;  // bit r: in range and read here / deferred
        int64_t longest = 0;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t p = sweep + r * groups + g;
            Span s = r < rounds && p < P.count ? P.span(p) : Span{0, 0, 1};
            if (r < rounds && p < P.count) {
                if (D.defers(s.len)) deferred |= 1u << r, s.len = 0;
                else mine |= 1u << r;
            }
            const In *row = in + s.base;
            const int mis = int(reinterpret_cast<uintptr_t>(row) % 16) / int(sizeof(In));
            const int64_t head = (V - mis) % V < s.len ? (V - mis) % V : s.len;
            const int64_t nvec = (s.len - head) / V;
            const In *rest = row + head + nvec * V;  // the tail
            const int64_t tail = s.len - head - nvec * V;
            Acc e[EDGE][2];
#pragma unroll
            for (int t = 0; t < EDGE; ++t) {
                const int j = sub + t * W;
                e[t][0] = j < head ? Acc(__ldg(row + j)) : Op::identity();
                e[t][1] = j < tail ? Acc(__ldg(rest + j)) : Op::identity();
            }
            acc[r] = Op::identity();
#pragma unroll
            for (int t = 0; t < EDGE; ++t) acc[r] = op(op(acc[r], e[t][0]), e[t][1]);
            q[r] = row + head + sub * V;
            left[r] = nvec - sub;
            longest = left[r] > longest ? left[r] : longest;
        }
        for (int64_t done = 0; done < longest; done += U * W) {
            uint4 x[R][U];
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < U; ++u)
                    x[r][u] = done + u * W < left[r] ? ldg16(q[r] + u * W * V) : uint4{0, 0, 0, 0};
#pragma unroll
            for (int r = 0; r < R; ++r) {
                q[r] += U * W * V;
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (done + u * W < left[r]) {
                        In v[V];
                        memcpy(v, &x[r][u], 16);
#pragma unroll
                        for (int k = 0; k < V; ++k) acc[r] = op(acc[r], Acc(v[k]));
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t p = sweep + r * groups + g;
            const Acc v = group_reduce<W>(acc[r], op);
            if (sub == 0 && (mine >> r & 1u)) out[p] = v;
            if (sub == 0 && (deferred >> r & 1u)) D.push(p, P.span(p).len);  // rare: after the hot loop
        }
    }
}

// `chunks` blocks per problem: block w takes chunk c = w % chunks of problem
// p = w / chunks (a block-stride loop over it, UNROLL loads in flight per
// thread, then the block's tree) and writes dst[c * count + p]: the result
// itself when chunks == 1 (dst = out), else a partial for combine_*.
template <class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_blocks(const In *__restrict__ in, Problems P, int64_t chunks, Deferred D,
              typename Op::type *dst) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_results[Seg::BLOCK / WARP];
    const int64_t items = P.count * chunks;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {  // uniform over the block
        const int64_t p = w / chunks, c = w - p * chunks;
        const Span s = P.span(p);
        if (D.defers(s.len)) {  // uniform over the block
            if (threadIdx.x == 0) {
                if (c == 0) D.push(p, s.len);
                dst[c * P.count + p] = Op::identity();  // reduce_deferred writes the result
            }
            continue;
        }
        const int64_t piece = ceil_div<int64_t>(s.len, chunks);
        const int64_t k0 = c * piece, k1 = k0 + piece < s.len ? k0 + piece : s.len;
        Acc v = fold_strided<Seg::UNROLL>(Op::identity(), in + s.base, s.stride, k0 + threadIdx.x,
                                          Seg::BLOCK, k1, op);
        v = block_reduce<Seg::BLOCK>(v, op, warp_results);
        if (threadIdx.x == 0) dst[c * P.count + p] = v;
        __syncthreads();  // warp_results is read before the next problem writes it
    }
}

// Threads across neighbouring problems: a block is TX = 2^tx_log2 problems
// (columns i of one o) by TY = BLOCK / TX rows.  Thread (tx, ty) folds rows
// k0 + ty, k0 + ty + TY, ... of column tile * TX + tx: each warp reads
// 32 / TX rows of TX neighbouring columns, the closest addresses the layout
// has.  Rows are split into `chunks` pieces over blocks (work item w = (o,
// tile, c)); the TY values of a column meet in a shared-memory tree (fixed
// order) and row 0 writes dst[c * count + p].
template <class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_columns(const In *__restrict__ in, Problems P, int tx_log2, int64_t tiles,
               int64_t chunks, int64_t piece, typename Op::type *dst) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc cell[Seg::BLOCK];
    const int TX = 1 << tx_log2, TY = Seg::BLOCK >> tx_log2;
    const int tx = threadIdx.x & (TX - 1), ty = threadIdx.x >> tx_log2;
    const int64_t items = P.outer * tiles * chunks;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {  // uniform over the block
        const int64_t rest = w / chunks, c = w - rest * chunks;
        const int64_t o = rest / tiles, i = (rest - o * tiles) * TX + tx;
        const int64_t k0 = c * piece, k1 = k0 + piece < P.len ? k0 + piece : P.len;
        Acc v = Op::identity();
        if (i < P.inner)
            v = fold_strided<Seg::UNROLL>(v, in + o * P.s_outer + i * P.s_inner, P.s_n, k0 + ty, TY,
                                          k1, op);
        cell[threadIdx.x] = v;
        __syncthreads();
        for (int half = TY / 2; half > 0; half >>= 1) {
            if (ty < half) cell[threadIdx.x] = op(cell[threadIdx.x], cell[threadIdx.x + half * TX]);
            __syncthreads();
        }
        // Row 0 reads its own cell; no thread writes another's cell before
        // the next iteration's barrier.
        if (ty == 0 && i < P.inner) dst[c * P.count + o * P.inner + i] = cell[threadIdx.x];
    }
}

// Short columns, many of them (axis 0 of (4, 2^24)): a thread per V = 16 /
// sizeof(In) neighbouring columns, one 16-byte load a row, all of a short
// column's rows in flight at once (UNROLL of them a trip).  A thread per
// column (reduce_groups<1>) reads the same bytes coalesced, but 4 bytes a
// load: 2 rows of 4 columns a trip, 2 trips for 4 rows.  The rows of each
// column are added in row order, as a thread per column adds them.
// Assumes (columns_vec_ok): outer == 1, s_inner == 1, every row's start
// 16-byte aligned; the last thread's columns past a multiple of V are
// scalar.
template <class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_columns_vec(const In *__restrict__ in, Problems P, typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int V = int(16 / sizeof(In)), U = Seg::UNROLL;
    const Op op;
    const int64_t quads = ceil_div<int64_t>(P.inner, V);
    const int64_t step = int64_t(gridDim.x) * Seg::BLOCK;
    for (int64_t t = int64_t(blockIdx.x) * Seg::BLOCK + threadIdx.x; t < quads; t += step) {
        const int64_t i0 = t * V;
        const In *col = in + i0;
        if (i0 + V > P.inner) {  // the last columns, fewer than V
            for (int64_t i = i0; i < P.inner; ++i)
                out[i] = fold_strided<U>(Op::identity(), in + i, P.s_n, 0, 1, P.len, op);
            continue;
        }
        Acc acc[V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = Op::identity();
        for (int64_t k0 = 0; k0 < P.len; k0 += U) {
            uint4 x[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                x[u] = k0 + u < P.len ? ldg16(col + (k0 + u) * P.s_n) : uint4{0, 0, 0, 0};
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (k0 + u < P.len) {
                    In v[V];
                    memcpy(v, &x[u], 16);
#pragma unroll
                    for (int j = 0; j < V; ++j) acc[j] = op(acc[j], Acc(v[j]));
                }
            }
        }
#pragma unroll
        for (int j = 0; j < V; ++j) out[i0 + j] = acc[j];
    }
}

// ------------------------------------------------ dense layouts, one pass
// Three kernels for the layouts of a C array (every problem's start 16-byte
// aligned), each reading only 16-byte vectors and launching once.

// Rows of exactly W vectors of V = 16 / sizeof(In) elements (W a power of
// two up to a warp: rows of 4, 8, ..., 128 floats): W lanes per row, one
// vector a lane, U rows per group in flight, their U loads issued before
// the first add.  For U = 1 a warp load covers 32 / W whole rows, 512
// neighbouring bytes of a C array.  Unlike reduce_groups_vec nothing of a
// row is scalar (no head, no tail, no span): the loop is loads, V adds a
// load and the log2 W shuffle steps of group_reduce.  Each row is reduced
// in one order (a lane's V elements, then the group's tree): the bits are
// the same run to run and on every GPU.
template <int W, int U, class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_rows_dense(const In *__restrict__ in, int64_t count, int64_t s_row,
                  typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int V = int(16 / sizeof(In));
    const Op op;
    const int sub = threadIdx.x % W;
    const int64_t groups = int64_t(gridDim.x) * (Seg::BLOCK / W);
    const int64_t g = int64_t(blockIdx.x) * (Seg::BLOCK / W) + threadIdx.x / W;
    for (int64_t sweep = 0; sweep < count; sweep += groups * U) {  // the same trips for a warp
        uint4 x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t p = sweep + u * groups + g;
            x[u] = p < count ? ldg16(in + p * s_row + sub * V) : uint4{0, 0, 0, 0};
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t p = sweep + u * groups + g;
            In v[V];
            memcpy(v, &x[u], 16);
            Acc a = Acc(v[0]);
#pragma unroll
            for (int k = 1; k < V; ++k) a = op(a, Acc(v[k]));
            a = group_reduce<W>(a, op);
            if (sub == 0 && p < count) out[p] = a;
        }
    }
}

// The last block's fold of the long-row kernels: row r of `count` takes
// partials c = first ... end - 1 (range(r, first, end)), read by part(r, c),
// `most` of them a row at most.  A group of wf lanes a row (wf a power of
// two up to a warp: 8 partials a lane at most where it can), every group
// of the block at once: lane j folds the row's partials first + j,
// first + j + wf, ... in order, 8 loads in flight, then the group's tree.
// The order of the adds is fixed by the ranges and `most`.
template <int BLOCK, class Acc, class Range, class Part, class Op>
__device__ inline void fold_partials(int64_t count, int64_t most, Range range, Part part, Acc *out, Op op) {
    int wf = 1;
    while (wf < WARP && int64_t(wf) * 8 < most) wf *= 2;
    const int lane = threadIdx.x % wf;
    for (int64_t base = 0; base < count; base += BLOCK / wf) {  // uniform over the block
        const int64_t r = base + threadIdx.x / wf;
        int64_t first = 0, end = 0;
        if (r < count) range(r, first, end);
        Acc v = Op::identity();
        for (int64_t c = first + lane; c < end; c += 8 * wf) {  // 8 loads in flight
            Acc y[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) y[u] = c + u * wf < end ? part(r, c + u * wf) : Op::identity();
#pragma unroll
            for (int u = 0; u < 8; ++u) v = op(v, y[u]);
        }
        for (int offset = wf / 2; offset > 0; offset >>= 1)  // the same steps for the warp
            v = op(v, __shfl_down_sync(FULL_MASK, v, offset, wf));
        if (lane == 0 && r < count) out[r] = v;
    }
}

// Few long rows (axis -1 of (4, 2^24) or (64, 2^20)): the rows' nv vectors
// seen as one flat range cut evenly over the grid, as the 1-D single-pass
// kernel (step 9) cuts a vector: block b reads vectors [start(b),
// start(b+1)), start(b) = floor(b nv / G).  Rows are at least that long
// (rows_long_ok), so a block's range touches at most two rows: it writes
// one partial per row touched (partial[2b], partial[2b + 1]), a
// block-strided loop with U loads in flight per thread and the block tree
// each.  The last block to finish (a ticket after a __threadfence, as in
// step 9) combines each row's partials, wf lanes per row.
// One launch; every block reads the same number of bytes (give or take a
// vector); the order of the adds is fixed by the shape and the grid size.
template <int BLOCK, int U, class In, class Op>
__global__ void __launch_bounds__(BLOCK)
reduce_rows_long(const In *__restrict__ in, int64_t count, int64_t rv, int64_t s_row,
                 typename Op::type *partial, unsigned *ticket, typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int V = int(16 / sizeof(In));
    const Op op;
    __shared__ Acc warp_results[BLOCK / WARP];
    __shared__ bool last;
    const int64_t nv = count * rv, G = gridDim.x, q = nv / G, rem = nv % G;
    const auto start = [=](int64_t b) { return b * q + b * rem / G; };
    const int64_t b = blockIdx.x, v0 = start(b), v1 = start(b + 1), r0 = v0 / rv;
#pragma unroll 1
    for (int s = 0; s < 2; ++s) {
        const int64_t r = r0 + s;
        const int64_t lo = v0 > r * rv ? v0 : r * rv, hi = v1 < (r + 1) * rv ? v1 : (r + 1) * rv;
        Acc acc = Op::identity();
        if (r < count && lo < hi) {  // uniform over the block
            const In *row = in + r * s_row;
            for (int64_t k = lo - r * rv + threadIdx.x; k < hi - r * rv; k += U * BLOCK) {
                uint4 x[U];
#pragma unroll
                for (int u = 0; u < U; ++u)
                    x[u] = k + u * BLOCK < hi - r * rv ? ldg16(row + (k + u * BLOCK) * V)
                                                       : uint4{0, 0, 0, 0};
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    if (k + u * BLOCK < hi - r * rv) {
                        In v[V];
                        memcpy(v, &x[u], 16);
#pragma unroll
                        for (int j = 0; j < V; ++j) acc = op(acc, Acc(v[j]));
                    }
                }
            }
        }
        acc = block_reduce<BLOCK>(acc, op, warp_results);
        if (threadIdx.x == 0) partial[2 * b + s] = acc;
        __syncthreads();  // warp_results is read before the second row writes it
    }
    if (threadIdx.x == 0) {
        __threadfence();  // the partials are visible before the ticket is taken
        last = atomicAdd(ticket, 1u) == unsigned(G - 1);
    }
    __syncthreads();
    if (!last) return;  // uniform over the block
    // The block holding vector v: the last b with start(b) <= v.  Row r's
    // partials: those of blocks block_of(r rv) ... block_of((r+1) rv - 1),
    // each block's first or second.
    const auto block_of = [=](int64_t v) { return ((v + 1) * G - 1) / nv; };
    fold_partials<BLOCK>(
        count, ceil_div<int64_t>(rv * G, nv) + 1,
        [=](int64_t r, int64_t &first, int64_t &end) { first = block_of(r * rv), end = block_of((r + 1) * rv - 1) + 1; },
        [=](int64_t r, int64_t c) { return __ldcg(partial + 2 * c + (start(c) / rv == r ? 0 : 1)); }, out, op);
    if (threadIdx.x == 0) *ticket = 0;  // ready for the next launch on this stream
}

// Few long rows, each row its own single-pass grid (the alternative to
// reduce_rows_long's contiguous block ranges; DenseTuning::LONG_PER_ROW
// picks): B blocks per row, block b = r B + j reads vectors j BLOCK + t,
// + B BLOCK, ... of row r, U loads in flight and then the last trips one
// at a time, exactly the loop of the 1-D single-pass kernel (step 9) with
// a grid of B blocks on a vector of rv.  So at any moment the blocks of a
// row read one window of it, as step 9's grid reads one window of its
// vector, where reduce_rows_long's blocks each stream their own range.
// Then the block tree, one partial per block (partial[b]: a row's B
// partials side by side), and the last block (ticket) folds each row's
// partials in block order, wf lanes a row (8 loads in flight a lane),
// the group's tree.  The order of the adds is fixed by rv and B.
template <int BLOCK, int U, class In, class Op>
__global__ void __launch_bounds__(BLOCK)
reduce_rows_split(const In *__restrict__ in, int64_t count, int64_t rv, int64_t s_row, int B,
                  typename Op::type *partial, unsigned *ticket, typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int V = int(16 / sizeof(In));
    const Op op;
    __shared__ Acc warp_results[BLOCK / WARP];
    __shared__ bool last;
    const int64_t r = blockIdx.x / B, j = blockIdx.x - r * B, stride = int64_t(B) * BLOCK;
    const In *row = in + r * s_row;
    Acc acc = Op::identity();
    const auto add = [&](const uint4 &x) {
        In v[V];
        memcpy(v, &x, 16);
#pragma unroll
        for (int k = 0; k < V; ++k) acc = op(acc, Acc(v[k]));
    };
    int64_t i = j * BLOCK + threadIdx.x;
    for (; i + (U - 1) * stride < rv; i += U * stride) {
        uint4 x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) x[u] = ldg16(row + (i + u * stride) * V);
#pragma unroll
        for (int u = 0; u < U; ++u) add(x[u]);
    }
    for (; i < rv; i += stride) add(ldg16(row + i * V));
    acc = block_reduce<BLOCK>(acc, op, warp_results);
    if (gridDim.x == 1) {  // one row, one block: no ticket
        if (threadIdx.x == 0) *out = acc;
        return;
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();  // the partial is visible before the ticket is taken
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;  // uniform over the block
    fold_partials<BLOCK>(
        count, B, [=](int64_t, int64_t &first, int64_t &end) { first = 0, end = B; },
        [=](int64_t rr, int64_t c) { return __ldcg(partial + rr * B + c); }, out, op);
    if (threadIdx.x == 0) *ticket = 0;  // ready for the next launch on this stream
}

// The end of a dense-columns pass: thread t of the block holds acc[m], m <
// M, partials of column (t mod Q) M + m (Q a power of two, inner = Q M), so
// threads t and t + Q, t + 2Q, ... hold partials of the same columns.
// First within each warp by shuffles (lanes l and l + off for off = 16, 8,
// ..., Q: lane l < min(Q, 32) then holds the warp's share), then each live
// lane writes its M values to cell[c inner + column] (copy c: the warp, or
// t / Q where Q > 32), and after one barrier thread j < inner folds the
// copies of column j in copy order.  Returns column j's value in thread j
// (identity elsewhere).  Two barriers in all, whatever inner is, where a
// shared-memory tree would take log2(BLOCK / Q) a column.  cell holds
// BLOCK / max(Q, 32) x inner <= BLOCK x V values.
template <int BLOCK, int V, class Acc, class Op>
__device__ inline Acc combine_copies(Acc (&acc)[V], int M, int Q, Acc *cell, Op op) {
    const int t = threadIdx.x, lane = t % WARP, inner = Q * M;
#pragma unroll
    for (int off = WARP / 2; off >= 1; off >>= 1)
        if (off >= Q) {  // uniform
#pragma unroll
            for (int m = 0; m < V; ++m)
                if (m < M) acc[m] = op(acc[m], __shfl_down_sync(FULL_MASK, acc[m], off));
        }
    const int live = Q < WARP ? Q : WARP, copies = BLOCK / (Q > WARP ? Q : WARP);
    if (lane < live) {
        const int c = Q <= WARP ? t / WARP : t / Q, g = t % Q;
#pragma unroll
        for (int m = 0; m < V; ++m)
            if (m < M) cell[c * inner + g * M + m] = acc[m];
    }
    __syncthreads();
    Acc v = Op::identity();
    if (t < inner)
        for (int c = 0; c < copies; ++c) v = op(v, cell[c * inner + t]);
    __syncthreads();  // cell is read before anyone writes it again
    return v;
}

// Dense columns (axis 0 of a C array (rows, inner), inner a power of two up
// to BLOCK, columns_flat_ok): the whole array is one flat vector of
// n = rows x inner elements, read as the 1-D single-pass kernel reads it:
// thread i of the grid loads vectors i, i + stride, ... (U in flight, then
// the last trips one at a time), stride = gridDim.x x BLOCK.  Each vector
// is V neighbouring elements of one row: columns (i mod Q) V .. + V - 1
// for inner = Q V >= V, or V / inner rows of columns 0 .. inner - 1 for
// inner < V.  Q divides the stride, so a thread meets the same columns in
// every vector and keeps one accumulator per element of its vectors: no
// index arithmetic in the loop.  Then: the accumulators of one column
// folded within the thread (inner < V), the block's copies of each column
// combined (combine_copies: shuffles, then one pass over shared memory),
// one partial per column per block, and the last block (ticket) folds
// each column's partials in block order the same way.  The order of the
// adds is fixed by the shape and the grid size.
template <int BLOCK, int U, class In, class Op>
__global__ void __launch_bounds__(BLOCK)
reduce_columns_flat(const In *__restrict__ in, int64_t n, int inner, typename Op::type *partial,
                    unsigned *ticket, typename Op::type *out) {
    using Acc = typename Op::type;
    constexpr int V = int(16 / sizeof(In));
    const Op op;
    __shared__ Acc cell[BLOCK * V];
    __shared__ bool last;
    const int Q = inner >= V ? inner / V : 1, M = inner < V ? inner : V;
    const int t = threadIdx.x;
    const int64_t nvec = n / V, stride = int64_t(gridDim.x) * BLOCK;
    Acc acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = Op::identity();
    const auto add = [&](const uint4 &x) {
        In v[V];
        memcpy(v, &x, 16);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = op(acc[j], Acc(v[j]));
    };
    int64_t i = int64_t(blockIdx.x) * BLOCK + t;
    for (; i + (U - 1) * stride < nvec; i += U * stride) {  // as step 9: no predicate
        uint4 x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) x[u] = ldg16(in + (i + u * stride) * V);
#pragma unroll
        for (int u = 0; u < U; ++u) add(x[u]);
    }
    for (; i < nvec; i += stride) add(ldg16(in + i * V));
    // The last n mod V elements (inner < V only): element nvec V + j is
    // column j mod inner, the column of accumulator j.
    if (blockIdx.x == 0) {
#pragma unroll
        for (int j = 0; j < V; ++j)
            if (j == t && nvec * V + j < n) acc[j] = op(acc[j], Acc(in[nvec * V + j]));
    }
    // Accumulators j and j + h hold the same column where inner divides h.
#pragma unroll
    for (int h = V / 2; h >= 1; h /= 2)
        if (h >= M) {
#pragma unroll
            for (int j = 0; j < h; ++j) acc[j] = op(acc[j], acc[j + h]);
        }
    const Acc mine = combine_copies<BLOCK>(acc, M, Q, cell, op);  // column t, t < inner
    if (gridDim.x == 1) {  // uniform: one block writes the results
        if (t < inner) out[t] = mine;
        return;
    }
    if (t < inner) {
        partial[blockIdx.x * int64_t(inner) + t] = mine;
        __threadfence();  // this thread's partial is visible before the ticket
    }
    __syncthreads();
    if (t == 0) last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;  // uniform over the block
    // Thread t folds column t mod inner over blocks t / inner, + BLOCK /
    // inner, ... (U loads in flight), then the threads of a column meet as
    // above (one accumulator a thread: M = 1, Q = inner).
    const int c = t % inner, step = BLOCK / inner;
    Acc v[V];
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = Op::identity();
    for (int64_t k = t / inner; k < gridDim.x; k += int64_t(U) * step) {
        Acc y[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            y[u] = k + u * step < gridDim.x ? __ldcg(partial + (k + u * step) * inner + c)
                                            : Op::identity();
#pragma unroll
        for (int u = 0; u < U; ++u) v[0] = op(v[0], y[u]);
    }
    const Acc total = combine_copies<BLOCK>(v, 1, inner, cell, op);
    if (t < inner) out[t] = total;
    if (t == 0) *ticket = 0;  // ready for the next launch on this stream
}

// The deferred segments (Deferred): chunk k of the list's ctl[1] is chunk
// j = k - first of entry e = owner[k]; a block folds its CHUNK elements,
// writes the partial, and the last block of the entry (an atomic ticket
// after a __threadfence, as in step 9) folds the entry's partials in chunk
// order.  A persistent grid: the host does not know how many there are.
template <class In, class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
reduce_deferred(const In *__restrict__ in, Problems P, Deferred D, typename Op::type *out) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_results[Seg::BLOCK / WARP];
    __shared__ bool last;
    Acc *partial = static_cast<Acc *>(D.partial);
    grid_dependency_wait();  // the kernel before has filled the list (launched early on sm_90+)
    const int64_t chunks = int64_t(D.ctl[1]);
    for (int64_t k = blockIdx.x; k < chunks; k += gridDim.x) {  // uniform over the block
        const int64_t e = D.owner[k];
        const Entry E = D.list[e];
        const Span s = P.span(E.p);
        const int64_t k0 = (k - E.first) * Deferred::CHUNK;
        const int64_t k1 = k0 + Deferred::CHUNK < s.len ? k0 + Deferred::CHUNK : s.len;
        Acc v = fold_strided<Seg::UNROLL>(Op::identity(), in + s.base, s.stride, k0 + threadIdx.x,
                                          Seg::BLOCK, k1, op);
        v = block_reduce<Seg::BLOCK>(v, op, warp_results);
        if (threadIdx.x == 0) {
            partial[k] = v;
            __threadfence();  // the partial is visible before the ticket is taken
            last = atomicAdd(D.ticket + e, 1u) == unsigned(E.chunks - 1);
        }
        __syncthreads();
        if (last) {  // uniform: every chunk of the entry is written
            Acc w = Op::identity();
            for (int64_t j = threadIdx.x; j < E.chunks; j += Seg::BLOCK)
                w = op(w, __ldcg(partial + E.first + j));
            w = block_reduce<Seg::BLOCK>(w, op, warp_results);
            if (threadIdx.x == 0) out[E.p] = w;
        }
        __syncthreads();  // `last` and warp_results are read before the next chunk writes them
    }
}

// The partials of a split, partial[c * count + p] for c < chunks, combined
// in c order: a thread per problem (many problems) ...
template <class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
combine_threads(const typename Op::type *__restrict__ partial, int64_t count, int64_t chunks,
                typename Op::type *out) {
    const Op op;
    const int64_t step = int64_t(gridDim.x) * Seg::BLOCK;
    for (int64_t p = int64_t(blockIdx.x) * Seg::BLOCK + threadIdx.x; p < count; p += step)
        out[p] = fold_strided<Seg::UNROLL>(Op::identity(), partial + p, count, 0, 1, chunks, op);
}

// ... or a block per problem (few problems with many partials each).
template <class Op>
__global__ void __launch_bounds__(Seg::BLOCK)
combine_blocks(const typename Op::type *__restrict__ partial, int64_t count, int64_t chunks,
               typename Op::type *out) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_results[Seg::BLOCK / WARP];
    for (int64_t p = blockIdx.x; p < count; p += gridDim.x) {
        Acc v = fold_strided<Seg::UNROLL>(Op::identity(), partial + p, count, threadIdx.x,
                                          Seg::BLOCK, chunks, op);
        v = block_reduce<Seg::BLOCK>(v, op, warp_results);
        if (threadIdx.x == 0) out[p] = v;
        __syncthreads();
    }
}

// ------------------------------------------------- packs of segments
// A warp per pack of K neighbouring segments, read as one flat run of
// memory (segs::Pack, segs::PackTrips in cuda/segments.cuh: the trips of
// 32 x VPT 16-byte vectors through the warp's shared stage, each
// segment's start marked in the word of the lane that holds it).  Each
// trip:
//   - where no segment starts in it, the warp's sum of it goes on the open
//     segment;
//   - else each lane walks its run once: a warp scan of the starts gives
//     their ranks (the k-th start of the pack closes the segment of the
//     (k-1)-th), each start after the lane's first closes a segment begun
//     in the lane, staged by rank at once, and the part before the lane's
//     first start waits for the lanes before it: a segmented scan of the
//     parts after each lane's last start (Sengupta et al.'s flagged
//     operator, the restart lane from the marks' ballot);
// the open segment carries into the next trip; after the last, lane j
// reads segment s + j's value by its rank and writes it: the pack's
// results in one coalesced store.  Nothing crosses packs, so no second
// launch combines anything.  Every element lands in a fixed place of a
// fixed trip, so the order of the adds depends only on the offsets: the
// same bits run to run.
using segs::PackGeometry;
using segs::PackShape;
using segs::PackTuning;

template <class Shape, class In, class Op>
__global__ void __launch_bounds__(Shape::BLOCK, Shape::MIN_BLOCKS)
reduce_packs(const In *__restrict__ in, int64_t n, const int64_t *__restrict__ offsets,
             int64_t count, int K, Deferred D, typename Op::type *out) {
    using Acc = typename Op::type;
    using Trips = segs::PackTrips<Shape, In>;
    constexpr int V = Trips::V, ITEMS = Trips::ITEMS;
    constexpr int WARPS = Shape::BLOCK / WARP;
    __shared__ uint4 stage_all[WARPS][Shape::STAGES][PackGeometry<Shape, In>::SLOTS];
    __shared__ unsigned marks_all[WARPS][WARP];
    __shared__ Acc res_all[WARPS][WARP];
    const Op op;
    const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
    const Trips trips{stage_all[w], marks_all[w], lane};
    Acc *res = res_all[w];
    const unsigned below = (1u << lane) - 1u;
    const int64_t packs = ceil_div<int64_t>(count, K), step = int64_t(gridDim.x) * WARPS;
    allow_dependent_launch();  // reduce_deferred may be scheduled; it waits for this grid
    marks_all[w][lane] = 0;
    // The loop is uniform over the warp.
    for (int64_t pk = int64_t(blockIdx.x) * WARPS + w; pk < packs; pk += step) {
        const segs::Pack pack(offsets, count, K, pk, D, lane);
        if (pack.here && !pack.deferred && pack.e <= pack.b) out[pack.p] = Op::identity();
        pack.runs([&](unsigned run, int64_t run_b, int64_t run_e) {
            Acc carry = Op::identity();  // the open segment's part before the trip
            int open = -1;               // its rank in the run (-1: before the first start)
            trips.stream(in, n, run_b, run_e, run >> lane & 1u, pack.b,
                         [&](int64_t, const uint4 *, unsigned h, const uint4 (&raw)[Trips::VPT],
                             int rb, int re, bool inner) {
                // Element k, masked (std::true_type) or not (false_type: the
                // inner trips, compiled without the compares).
                const auto element = [&](int k, auto masked) {
                    In v[V];
                    memcpy(v, &raw[k / V], 16);
                    if constexpr (decltype(masked)::value)
                        return k >= rb && k < re ? Acc(v[k % V]) : Op::identity();
                    else
                        return Acc(v[k % V]);
                };
                const unsigned F = __ballot_sync(FULL_MASK, h != 0);
                if (F == 0) {  // uniform: no segment starts in the trip, the open one goes on
                    const auto fold = [&](auto masked) {
                        Acc all = Op::identity();
#pragma unroll
                        for (int k = 0; k < ITEMS; ++k) all = op(all, element(k, masked));
                        return all;
                    };
                    const Acc all = inner ? fold(std::false_type{}) : fold(std::true_type{});
                    carry = op(carry, __shfl_sync(FULL_MASK, warp_reduce(all, op), 0));
                    return;
                }
                // The ranks: the segment open at the lane's first element
                // is `lead_rank` (open + the starts in the lanes before).
                int heads = __popc(h);
#pragma unroll
                for (int d = 1; d < WARP; d <<= 1) {
                    const int c = __shfl_up_sync(FULL_MASK, heads, d);
                    if (lane >= d) heads += c;
                }
                const int lead_rank = open + heads - __popc(h);
                // One walk: at the lane's first start the open segment's
                // part in the lane is kept (its value needs the lanes
                // before); each later start closes a segment that began in
                // this lane, staged at once; `acc` ends as the part after
                // the last start.
                Acc acc = Op::identity(), lead = Op::identity();
                const auto walk = [&](auto masked) {
                    int rank = lead_rank;  // the segment open at element k
#pragma unroll
                    for (int k = 0; k < ITEMS; ++k) {
                        if (h >> k & 1u) {
                            if (rank == lead_rank) lead = acc;
                            else res[rank] = acc;
                            ++rank;
                            acc = Op::identity();
                        }
                        acc = op(acc, element(k, masked));
                    }
                };
                if (inner) walk(std::false_type{});
                else walk(std::true_type{});
                // The parts after each lane's last start, scanned across
                // the warp (a lane with a start restarts it): what comes
                // before each lane's first element.
                Acc inc;
                const Acc before = segs::warp_before(acc, carry, F, lane, op, inc);
                if (h != 0 && lead_rank >= 0) res[lead_rank] = op(before, lead);
                // F != 0: the carry is the part of the trip's last segment.
                carry = __shfl_sync(FULL_MASK, inc, WARP - 1);
                open += __shfl_sync(FULL_MASK, heads, WARP - 1);
            });
            if (lane == 0) res[open] = carry;
            __syncwarp();
            if (run >> lane & 1u) out[pack.p] = res[__popc(run & below)];
            __syncwarp();  // res is read before the next run writes it
        });
        if (pack.deferred) D.push(pack.p, pack.e - pack.b);  // rare: after the pack
    }
}

// --------------------------------------------------------------- launchers

// A group of W lanes per problem; rounds from the fill: enough problems in
// flight per group that short problems keep loads in flight, but not so
// many that the grid no longer fills the GPU.
// VEC: reduce_groups_vec (contiguous problems only, see vec_ok).
template <class In, class Op, int W, bool VEC = false>
cudaError_t launch_groups_w(const gp_reduce_args &a, const Problems &P, const Deferred &D) {
    const int64_t per_block = Seg::BLOCK / W;
    const int64_t fill =
        int64_t(sms()) * Seg::BLOCKS_PER_SM * per_block;  // groups resident at once
    int64_t rounds = P.count / fill;
    rounds = rounds < 1 ? 1 : rounds > Seg::ROUNDS ? Seg::ROUNDS : rounds;
    const int64_t grid = grid_of(ceil_div<int64_t>(P.count, per_block * rounds));
    if constexpr (VEC)
        GP_LAUNCH((reduce_groups_vec<W, In, Op>), unsigned(grid), Seg::BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), P, int(rounds), D,
                  static_cast<typename Op::type *>(a.out));
    else
        GP_LAUNCH((reduce_groups<W, In, Op>), unsigned(grid), Seg::BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), P, int(rounds), D,
                  static_cast<typename Op::type *>(a.out));
    return cudaSuccess;
}

// W lanes per problem for the W given at run time, one of LO, 2 LO, ..., HI
// (a step instantiates only the widths it can choose).
template <class In, class Op, int LO, int HI, bool VEC = false>
cudaError_t launch_groups(const gp_reduce_args &a, const Problems &P, int64_t lanes,
                          const Deferred &D = Deferred{}) {
    if (lanes == LO) return launch_groups_w<In, Op, LO, VEC>(a, P, D);
    if constexpr (LO < HI) return launch_groups<In, Op, 2 * LO, HI, VEC>(a, P, lanes, D);
    return cudaErrorInvalidValue;
}

// The lanes a group gives a problem of (mean) length len: enough that each
// lane has GROUP_UNROLL elements, its loads all in one trip (a row of 4:
// 2 lanes of 2 elements; a row of 64: a warp), between lo and hi.
inline int64_t group_lanes(int64_t len, int64_t lo, int64_t hi) {
    return pow2_between(ceil_div<int64_t>(len, Seg::GROUP_UNROLL), lo, hi);
}

// reduce_groups_vec applies: every problem contiguous, and an element size
// that divides 16 (every dtype of GP_COMBOS).
template <class In>
inline bool vec_ok(const Problems &P) {
    return 16 % sizeof(In) == 0 && (P.offsets != nullptr || P.s_n == 1);
}

// The lanes of reduce_groups_vec for a (mean) length len: enough that each
// lane has VEC_UNROLL vectors, all in one trip, between lo and hi (a row
// of 4 floats: a thread; of 64: 16 lanes; 128 and more: a warp).
template <class In>
inline int64_t vec_lanes(int64_t len, int64_t lo, int64_t hi) {
    return pow2_between(ceil_div<int64_t>(len, Seg::VEC_UNROLL * int64_t(16 / sizeof(In))), lo, hi);
}

// Scratch of a combine after `chunks` partials per problem.
template <class Op>
size_t partial_bytes(const Problems &P, int64_t chunks) {
    return chunks > 1 ? align_up(size_t(P.count) * size_t(chunks) * sizeof(typename Op::type)) : 0;
}

template <class Op>
cudaError_t launch_combine(const gp_reduce_args &a, const Problems &P, int64_t chunks) {
    using Acc = typename Op::type;
    const Acc *partial = static_cast<const Acc *>(a.scratch);
    Acc *out = static_cast<Acc *>(a.out);
    if (P.count < int64_t(sms()) * Seg::BLOCKS_PER_SM)  // too few for a thread each to fill the GPU
        GP_LAUNCH((combine_blocks<Op>), unsigned(grid_of(P.count)), Seg::BLOCK, 0, a.stream,
                  partial, P.count, chunks, out);
    else
        GP_LAUNCH((combine_threads<Op>), unsigned(grid_of(ceil_div<int64_t>(P.count, Seg::BLOCK))),
                  Seg::BLOCK, 0, a.stream, partial, P.count, chunks, out);
    return cudaSuccess;
}

// `chunks` blocks per problem, then the combine where chunks > 1.
template <class In, class Op>
cudaError_t launch_blocks(const gp_reduce_args &a, const Problems &P, int64_t chunks,
                          const Deferred &D = Deferred{}) {
    using Acc = typename Op::type;
    Acc *dst = chunks > 1 ? static_cast<Acc *>(a.scratch) : static_cast<Acc *>(a.out);
    GP_LAUNCH((reduce_blocks<In, Op>), unsigned(grid_of(P.count * chunks)), Seg::BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), P, chunks, D, dst);
    return chunks > 1 ? launch_combine<Op>(a, P, chunks) : cudaSuccess;
}

// The deferral of segments longer than long_len (segs::DeferShape).
using segs::DeferShape;
using segs::defer_bytes;
using segs::defer_in;

inline DeferShape defer_shape(const Problems &P, const gp_reduce_args &a, int64_t long_len) {
    return segs::defer_shape(P.offsets, a.n, long_len, a.batch.longest);
}

template <class In, class Op>
cudaError_t launch_deferred(const gp_reduce_args &a, const Problems &P, const Deferred &D) {
    if (D.ctl == nullptr) return cudaSuccess;
    DeviceFacts d;
    GP_TRY(device_facts(d));
    GP_LAUNCH_EARLY(d.major >= 9, (reduce_deferred<In, Op>),
                    unsigned(int64_t(sms()) * Seg::BLOCKS_PER_SM), Seg::BLOCK, 0, a.stream,
                    static_cast<const In *>(a.in), P, D, static_cast<typename Op::type *>(a.out));
    return cudaSuccess;
}

// reduce_packs applies: listed segments (whose elements vec_ok reads in
// 16-byte vectors) of an aligned input.
template <class In>
inline bool packs_ok(const gp_reduce_args &a, const Problems &P) {
    return P.offsets != nullptr && vec_ok<In>(P) && reinterpret_cast<uintptr_t>(a.in) % 16 == 0;
}

using segs::pack_segments;

// A warp per pack of K segments, one launch (the deferred ones after it).
template <class In, class Op, class Shape = PackTuning>
cudaError_t launch_packs(const gp_reduce_args &a, const Problems &P, int64_t K, const Deferred &D) {
    const int64_t warps = Shape::BLOCK / WARP;
    const int64_t grid = grid_of(ceil_div<int64_t>(ceil_div<int64_t>(P.count, K), warps));
    GP_LAUNCH((reduce_packs<Shape, In, Op>), unsigned(grid), Shape::BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), a.n, P.offsets, P.count, int(K), D,
              static_cast<typename Op::type *>(a.out));
    return cudaSuccess;
}

// The columns kernel's shape: TX = the power of two covering inner (at most
// the block), TY the rest of the block; rows split over enough blocks to
// fill the GPU, MIN_ROWS rows per thread at least.
struct ColumnShape {
    int tx_log2;
    int64_t tiles, chunks, piece;
};

inline ColumnShape column_shape(const Problems &P) {
    ColumnShape c{};
    const int64_t tx = pow2_between(P.inner, 2, Seg::BLOCK);
    while ((int64_t(1) << c.tx_log2) < tx) ++c.tx_log2;
    c.tiles = ceil_div<int64_t>(P.inner, tx);
    c.chunks = split_chunks(P.outer * c.tiles, P.len, (Seg::BLOCK / tx) * Seg::MIN_ROWS);
    c.piece = ceil_div<int64_t>(P.len, c.chunks);
    return c;
}

template <class In, class Op>
cudaError_t launch_columns(const gp_reduce_args &a, const Problems &P, const ColumnShape &c) {
    using Acc = typename Op::type;
    Acc *dst = c.chunks > 1 ? static_cast<Acc *>(a.scratch) : static_cast<Acc *>(a.out);
    GP_LAUNCH((reduce_columns<In, Op>), unsigned(grid_of(P.outer * c.tiles * c.chunks)), Seg::BLOCK,
              0, a.stream, static_cast<const In *>(a.in), P, c.tx_log2, c.tiles, c.chunks, c.piece,
              dst);
    return c.chunks > 1 ? launch_combine<Op>(a, P, c.chunks) : cudaSuccess;
}

// reduce_columns_vec applies: one run of neighbouring columns (outer == 1,
// s_inner == 1) whose rows all start 16-byte aligned.
template <class In>
inline bool columns_vec_ok(const gp_reduce_args &a, const Problems &P) {
    return 16 % sizeof(In) == 0 && P.offsets == nullptr && P.outer == 1 && P.s_inner == 1 &&
           reinterpret_cast<uintptr_t>(a.in) % 16 == 0 && (P.s_n * int64_t(sizeof(In))) % 16 == 0;
}

template <class In, class Op>
cudaError_t launch_columns_vec(const gp_reduce_args &a, const Problems &P) {
    const int64_t quads = ceil_div<int64_t>(P.inner, int64_t(16 / sizeof(In)));
    GP_LAUNCH((reduce_columns_vec<In, Op>), unsigned(grid_of(ceil_div<int64_t>(quads, Seg::BLOCK))),
              Seg::BLOCK, 0, a.stream, static_cast<const In *>(a.in), P,
              static_cast<typename Op::type *>(a.out));
    return cudaSuccess;
}

// ---------------------------------------- the dense layouts' launchers
// Tunables of the dense kernels (bench/tune_axis.cu times the choices).
struct DenseTuning {
    static constexpr int ROWS_U = 4;        // rows_dense: rows per group in flight
    static constexpr int LONG_BLOCK = 256;  // rows_long, rows_split: threads per block
    static constexpr int LONG_U = 4;        // rows_long, rows_split: 16-byte loads in flight per thread
    // Few long rows: each row its own interleaved single-pass grid
    // (reduce_rows_split, true) or one flat range cut into contiguous block
    // ranges (reduce_rows_long, false).  The split keeps step 9's access
    // pattern (a window a row instead of a stream a block).  H200, 2^26
    // float32 sums (bench/results/tune-axis-nvidia-h200-2026-11-23-run2.md,
    // % of the copy roof for the bytes read): (64, 2^20) along axis -1 0.0742
    // ms (87.2%) split against 0.0786 (82.4%) in contiguous ranges, (4,
    // 2^24) 0.0746 (86.7%) against 0.0804 (80.5%); step 9 reads the same
    // 2^26 floats as one vector in 0.0740 ms (87.4%).
    static constexpr bool LONG_PER_ROW = true;
    // A few dense columns read as one flat vector: 1024 threads, one block
    // an SM, 4 loads in flight a thread.  Same run: (2^24, 4) along axis 0
    // 0.0752 ms (86.1%; 8 loads 0.0763, 2 blocks an SM 0.0754), (2^20, 64)
    // 0.0757 ms (85.5%; 8 loads 0.0767, 256 threads x 8 blocks 0.0973).
    static constexpr int COL_BLOCK = 1024;  // columns_flat: threads per block
    static constexpr int COL_PER_SM = 1;    // columns_flat: blocks per SM (fewer partials)
    static constexpr int COL_U = 4;         // columns_flat: 16-byte loads in flight per thread
    // The core lends each thread 64 KiB of preallocated device scratch
    // (csrc/glue.h); a plan whose scratch fits it allocates nothing.
    static constexpr size_t SMALL_SCRATCH = 48 << 10;
};

// Every problem contiguous, its start 16-byte aligned, evenly spaced.
template <class In>
inline bool rows_aligned(const gp_reduce_args &a, const Problems &P) {
    return 16 % sizeof(In) == 0 && P.offsets == nullptr && P.outer == 1 && P.s_n == 1 &&
           reinterpret_cast<uintptr_t>(a.in) % 16 == 0 &&
           (P.s_inner * int64_t(sizeof(In))) % 16 == 0 && P.len % int64_t(16 / sizeof(In)) == 0;
}

// reduce_rows_dense applies: aligned rows of W vectors, W a power of two
// up to a warp.  Returns W, or 0.
template <class In>
inline int64_t rows_dense_lanes(const gp_reduce_args &a, const Problems &P) {
    if (!rows_aligned<In>(a, P)) return 0;
    const int64_t w = P.len / int64_t(16 / sizeof(In));
    return w >= 1 && w <= WARP && (w & (w - 1)) == 0 ? w : 0;
}

template <class In, class Op, int W, int U = DenseTuning::ROWS_U>
cudaError_t launch_rows_dense_w(const gp_reduce_args &a, const Problems &P) {
    const int64_t grid = grid_of(ceil_div<int64_t>(P.count, int64_t(Seg::BLOCK / W) * U));
    GP_LAUNCH((reduce_rows_dense<W, U, In, Op>), unsigned(grid), Seg::BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), P.count, P.s_inner,
              static_cast<typename Op::type *>(a.out));
    return cudaSuccess;
}

template <class In, class Op, int W = 1>
cudaError_t launch_rows_dense(const gp_reduce_args &a, const Problems &P, int64_t lanes) {
    if (lanes == W) return launch_rows_dense_w<In, Op, W>(a, P);
    if constexpr (W < WARP) return launch_rows_dense<In, Op, 2 * W>(a, P, lanes);
    return cudaErrorInvalidValue;
}

// The grid of the one-pass kernels: every resident block, no more than
// the vectors need.
template <int BLOCK, int U, int PER_SM = 2048 / BLOCK>
inline int64_t resident_grid(int64_t nvec) {
    const int64_t want = ceil_div<int64_t>(nvec, int64_t(BLOCK) * U);
    const int64_t cap = int64_t(sms()) * PER_SM;
    return want < 1 ? 1 : want < cap ? want : cap;
}

// The ticket word of a one-pass kernel: the caller's counter (0 before
// and after), or the word after `bytes` of scratch, zeroed on the stream.
inline cudaError_t ticket_of(const gp_reduce_args &a, size_t bytes, unsigned *&ticket) {
    ticket = a.counter;
    if (ticket != nullptr) return cudaSuccess;
    ticket = reinterpret_cast<unsigned *>(static_cast<char *>(a.scratch) + bytes);
    return cudaMemsetAsync(ticket, 0, sizeof(unsigned), a.stream);
}

// reduce_rows_long applies: aligned rows, each at least a block's share of
// the vectors long (a block's range then touches two rows at most).
template <class In, int BLOCK = DenseTuning::LONG_BLOCK, int U = DenseTuning::LONG_U>
inline bool rows_long_ok(const gp_reduce_args &a, const Problems &P) {
    if (!rows_aligned<In>(a, P) || P.len == 0) return false;
    const int64_t rv = P.len / int64_t(16 / sizeof(In)), nv = rv * P.count;
    return rv >= ceil_div<int64_t>(nv, resident_grid<BLOCK, U>(nv));
}

// reduce_rows_split's blocks per row: the resident blocks shared evenly
// among the rows (count <= the resident blocks: rows_long_ok), no more
// than a row's vectors need at U loads a thread.
template <int BLOCK, int U>
inline int64_t split_blocks(int64_t count, int64_t rv) {
    const int64_t cap = int64_t(sms()) * (2048 / BLOCK);
    const int64_t b = count < cap ? cap / count : 1, want = ceil_div<int64_t>(rv, int64_t(BLOCK) * U);
    return b < want ? b : want < 1 ? 1 : want;
}

template <class In, class Op, int BLOCK = DenseTuning::LONG_BLOCK, int U = DenseTuning::LONG_U>
size_t rows_split_bytes(const Problems &P) {
    const int64_t rv = P.len / int64_t(16 / sizeof(In));
    return align_up(size_t(P.count * split_blocks<BLOCK, U>(P.count, rv)) *
                    sizeof(typename Op::type)) +
           sizeof(unsigned);
}

template <class In, class Op, int BLOCK = DenseTuning::LONG_BLOCK, int U = DenseTuning::LONG_U>
cudaError_t launch_rows_split(const gp_reduce_args &a, const Problems &P) {
    using Acc = typename Op::type;
    const int64_t rv = P.len / int64_t(16 / sizeof(In)), B = split_blocks<BLOCK, U>(P.count, rv);
    const int64_t grid = P.count * B;
    unsigned *ticket = nullptr;
    if (grid > 1) GP_TRY(ticket_of(a, align_up(size_t(grid) * sizeof(Acc)), ticket));
    GP_LAUNCH((reduce_rows_split<BLOCK, U, In, Op>), unsigned(grid), BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), P.count, rv, P.s_inner, int(B),
              static_cast<Acc *>(a.scratch), ticket, static_cast<Acc *>(a.out));
    return cudaSuccess;
}

template <class In, class Op, int BLOCK = DenseTuning::LONG_BLOCK, int U = DenseTuning::LONG_U>
size_t rows_long_bytes(const Problems &P) {
    const int64_t nv = P.len / int64_t(16 / sizeof(In)) * P.count;
    return align_up(size_t(2 * resident_grid<BLOCK, U>(nv)) * sizeof(typename Op::type)) +
           sizeof(unsigned);
}

template <class In, class Op, int BLOCK = DenseTuning::LONG_BLOCK, int U = DenseTuning::LONG_U>
cudaError_t launch_rows_long(const gp_reduce_args &a, const Problems &P) {
    using Acc = typename Op::type;
    const int64_t rv = P.len / int64_t(16 / sizeof(In)), grid = resident_grid<BLOCK, U>(rv * P.count);
    unsigned *ticket;
    GP_TRY(ticket_of(a, align_up(size_t(2 * grid) * sizeof(Acc)), ticket));
    GP_LAUNCH((reduce_rows_long<BLOCK, U, In, Op>), unsigned(grid), BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), P.count, rv, P.s_inner, static_cast<Acc *>(a.scratch),
              ticket, static_cast<Acc *>(a.out));
    return cudaSuccess;
}

// reduce_columns_flat's scratch: a partial per column per block, the
// ticket word.
template <class In, class Op, int BLOCK = DenseTuning::COL_BLOCK, int U = DenseTuning::COL_U,
          int PER_SM = DenseTuning::COL_PER_SM>
size_t columns_flat_bytes(const Problems &P) {
    const int64_t nvec = P.len * P.inner / int64_t(16 / sizeof(In));
    return align_up(size_t(resident_grid<BLOCK, U, PER_SM>(nvec) * P.inner) *
                    sizeof(typename Op::type)) +
           sizeof(unsigned);
}

// reduce_columns_flat applies: one run of neighbouring columns of a dense
// C array (rows back to back), aligned, inner a power of two up to BLOCK,
// the partials within SMALL_SCRATCH (wider arrays: the column tiles).
template <class In, class Op, int BLOCK = DenseTuning::COL_BLOCK, int U = DenseTuning::COL_U,
          int PER_SM = DenseTuning::COL_PER_SM>
inline bool columns_flat_ok(const gp_reduce_args &a, const Problems &P) {
    return 16 % sizeof(In) == 0 && P.offsets == nullptr && P.outer == 1 && P.s_inner == 1 &&
           P.s_n == P.inner && P.inner >= 2 && P.inner <= BLOCK && (P.inner & (P.inner - 1)) == 0 &&
           reinterpret_cast<uintptr_t>(a.in) % 16 == 0 &&
           columns_flat_bytes<In, Op, BLOCK, U, PER_SM>(P) <= DenseTuning::SMALL_SCRATCH;
}

template <class In, class Op, int BLOCK = DenseTuning::COL_BLOCK, int U = DenseTuning::COL_U,
          int PER_SM = DenseTuning::COL_PER_SM>
cudaError_t launch_columns_flat(const gp_reduce_args &a, const Problems &P) {
    using Acc = typename Op::type;
    const int64_t n = P.len * P.inner,
                  grid = resident_grid<BLOCK, U, PER_SM>(n / int64_t(16 / sizeof(In)));
    unsigned *ticket = nullptr;
    if (grid > 1) GP_TRY(ticket_of(a, align_up(size_t(grid * P.inner) * sizeof(Acc)), ticket));
    GP_LAUNCH((reduce_columns_flat<BLOCK, U, In, Op>), unsigned(grid), BLOCK, 0, a.stream,
              static_cast<const In *>(a.in), n, int(P.inner), static_cast<Acc *>(a.scratch),
              ticket, static_cast<Acc *>(a.out));
    return cudaSuccess;
}

// --------------------------------------------------------------- dispatch
// Impl<In, Op> provides
//   static size_t scratch(const gp_reduce_args &, const Problems &); bytes of scratch
//   static cudaError_t run(const gp_reduce_args &, const Problems &); enqueue (count >= 1)
// dispatch() adds the dtype codes, the two-phase protocol and zero problems.
template <template <class, class> class Impl>
cudaError_t dispatch(gp_reduce_args *a) {
    const Problems P = problems_of(*a);
    if (P.count < 0 || P.len < 0) return cudaErrorInvalidValue;
    return with_combo(a->op, a->in_t, a->acc_t, [a, &P](auto combo) -> cudaError_t {
        using In = typename decltype(combo)::In;
        using Op = typename decltype(combo)::Op;
        if (a->scratch == nullptr) {
            a->scratch_bytes = P.count > 0 ? Impl<In, Op>::scratch(*a, P) : 0;
            return cudaSuccess;
        }
        return P.count > 0 ? Impl<In, Op>::run(*a, P) : cudaSuccess;
    });
}

}  // namespace seg
}  // namespace reduce
GP_NAMESPACE_END
