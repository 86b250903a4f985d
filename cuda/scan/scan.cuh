// scan.cuh - what the scan variants share: the dispatch from dtype codes to
// template instances, block-wide scans, and the scan-then-fan driver that
// turns a per-tile scan into a scan of any length.
#pragma once

#include <cstring>

#include "../common.cuh"

GP_NAMESPACE_BEGIN
namespace scan {

// Launch shapes of the journey's kernels, one home for the kernels and the
// registry (registry.cu).
constexpr int NAIVE_BLOCK = 256;   // 01_naive.cu: threads per block, one output each
constexpr int HS_TILE = 1024;      // 02_hillis_steele.cu: one element per thread, 1024 threads
constexpr int BL_TILE = 2048;      // 03_blelloch.cu: two elements per thread, BL_TILE / 2 threads
constexpr int SHUFFLE_BLOCK = 256; // 04_warp_shuffle.cu: threads per block ...
constexpr int SHUFFLE_ITEMS = 16;  // ... and consecutive elements per thread

// A scan launcher: two_phase (common.cuh) around Impl<In, Op> (scratch(n),
// run(const gp_scan_args &)); n == 0 has nothing to write.
template <template <class, class> class Impl>
cudaError_t dispatch(gp_scan_args *a) {
    return two_phase<Impl>(a, [](auto) -> cudaError_t { return cudaSuccess; });
}

// Dynamic shared memory as an array of T (16-byte aligned).
template <class T>
__device__ inline T *shared_array() {
    return reinterpret_cast<T *>(dynamic_shared_memory());
}

// Inclusive scan over a warp with __shfl_up_sync (Hillis-Steele in
// registers): lane i ends with x[0] op ... op x[i].
template <class T, class Op>
__device__ inline T warp_inclusive_scan(T x, Op op) {
    const int lane = threadIdx.x % WARP;
#pragma unroll
    for (int offset = 1; offset < WARP; offset <<= 1) {
        const T y = __shfl_up_sync(FULL_MASK, x, offset);
        if (lane >= offset) x = op(y, x);
    }
    return x;
}

// Block-wide scan of ITEMS consecutive items per thread (thread t holds
// items t*ITEMS ... t*ITEMS + ITEMS-1 of the tile).  Each thread scans its
// items in order, the thread totals are scanned with warp shuffles, the warp
// totals through `smem` (BLOCK/32 values).  Afterwards items[] hold the
// block-inclusive scan, `before` the block-exclusive prefix of the thread's
// first item, and the block total is returned to every thread.  Every
// thread must call it; it ends with the block synchronized.
template <int BLOCK, int ITEMS, class T, class Op>
__device__ inline T block_scan(T (&items)[ITEMS], T &before, Op op, T *smem) {
    constexpr int WARPS = BLOCK / WARP;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) items[k] = op(items[k - 1], items[k]);
    const T inc = warp_inclusive_scan(items[ITEMS - 1], op);
    T exc = __shfl_up_sync(FULL_MASK, inc, 1);
    if (lane == WARP - 1) smem[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        T w = lane < WARPS ? smem[lane] : Op::identity();
        w = warp_inclusive_scan(w, op);
        if (lane < WARPS) smem[lane] = w;
    }
    __syncthreads();
    T prefix = warp > 0 ? smem[warp - 1] : Op::identity();
    if (lane > 0) prefix = op(prefix, exc);
    before = prefix;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) items[k] = op(prefix, items[k]);
    const T total = smem[WARPS - 1];
    __syncthreads();  // smem may be reused by the caller
    return total;
}

// A tile of ITEMS items per thread, thread t holding TILE-consecutive items
// t*ITEMS ...: loaded with 16-byte vectors where the tile is whole and the
// pointer aligned, element by element (identity past n) otherwise.
// EVICT_FIRST: the vectors are their data's last read (__ldcs instead of
// __ldg), so their L2 lines go first; store_items' EVICT_FIRST: the output
// is not read again (__stcs).
template <int ITEMS, class Op, bool EVICT_FIRST = false, class In>
__device__ inline void load_items(const In *in, int64_t first, int64_t n, bool vector_ok,
                                  typename Op::type (&items)[ITEMS]) {
    using Acc = typename Op::type;
    if (vector_ok && first + ITEMS <= n) {
        static_assert(ITEMS * sizeof(In) % 16 == 0, "whole vectors");
        In raw[ITEMS];
        const uint4 *src = reinterpret_cast<const uint4 *>(in + first);
#pragma unroll
        for (int v = 0; v < int(ITEMS * sizeof(In) / 16); ++v) {
            const uint4 x = EVICT_FIRST ? __ldcs(src + v) : __ldg(src + v);
            memcpy(reinterpret_cast<char *>(raw) + 16 * v, &x, 16);
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) items[k] = Acc(raw[k]);
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) items[k] = first + k < n ? Acc(in[first + k]) : Op::identity();
    }
}

template <int ITEMS, class Acc, bool EVICT_FIRST = false>
__device__ inline void store_items(Acc *out, int64_t first, int64_t n, bool vector_ok,
                                   const Acc (&items)[ITEMS]) {
    if (vector_ok && first + ITEMS <= n) {
        static_assert(ITEMS * sizeof(Acc) % 16 == 0, "whole vectors");
        uint4 *dst = reinterpret_cast<uint4 *>(out + first);
#pragma unroll
        for (int v = 0; v < int(ITEMS * sizeof(Acc) / 16); ++v) {
            uint4 x;
            memcpy(&x, reinterpret_cast<const char *>(items) + 16 * v, 16);
            if (EVICT_FIRST) __stcs(dst + v, x);
            else dst[v] = x;
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (first + k < n) out[first + k] = items[k];
    }
}

template <class T>
inline bool aligned16(const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// out[i] = prefix[tile of i] op out[i] for every tile but the first: the
// "fan" of scan-then-fan.
template <class Acc, class Op>
__global__ void add_tile_prefix(Acc *out, const Acc *prefix, int64_t n, int64_t tile) {
    const Op op;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = tile + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = op(prefix[i / tile], out[i]);
}

// Scan-then-fan over tiles of V::TILE elements, for any n: V's kernel
// scans each tile (inclusive or exclusive, as asked) and writes the tile's
// total; the totals are scanned exclusively by the same method, recursively;
// the fan adds each tile's prefix to its elements.  V provides:
//   TILE  elements per tile (one block each), and
//   launch<In, Op>(grid, in, out, n, inclusive, totals, stream)
// (Harris, Sengupta and Owens, GPU Gems 3, ch. 39.3, scans of arbitrary
// length.)
template <class V, class In, class Op>
struct ScanThenFan {
    using Acc = typename Op::type;

    static size_t level_bytes(int64_t n) {  // totals and their scan, all levels
        size_t bytes = 0;
        for (int64_t m = ceil_div<int64_t>(n, V::TILE); m > 1; m = ceil_div<int64_t>(m, V::TILE))
            bytes += 2 * align_up(size_t(m) * sizeof(Acc));
        return bytes;
    }
    static size_t scratch(int64_t n) { return level_bytes(n) + 256; }

    // Scan `n` elements of `in` (type I) into `out`; `work` is scratch.
    template <class I>
    static cudaError_t level(const I *in, Acc *out, int64_t n, bool inclusive, char *work,
                             cudaStream_t s) {
        const int64_t tiles = ceil_div<int64_t>(n, V::TILE);
        if (tiles == 1) return V::template launch<I, Op>(1, in, out, n, inclusive, nullptr, s);
        Acc *totals = reinterpret_cast<Acc *>(work);
        Acc *prefix = reinterpret_cast<Acc *>(work + align_up(size_t(tiles) * sizeof(Acc)));
        char *rest = work + 2 * align_up(size_t(tiles) * sizeof(Acc));
        GP_TRY(V::template launch<I, Op>(tiles, in, out, n, inclusive, totals, s));
        GP_TRY(level<Acc>(totals, prefix, tiles, false, rest, s));
        const int64_t want = ceil_div<int64_t>(n - V::TILE, 256);
        GP_LAUNCH((add_tile_prefix<Acc, Op>), unsigned(want < 65535 ? want : 65535), 256, 0, s, out,
                  prefix, n, int64_t(V::TILE));
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a) {
        return level<In>(static_cast<const In *>(a.in), static_cast<Acc *>(a.out), a.n,
                         a.inclusive != 0, static_cast<char *>(a.scratch), a.stream);
    }
};

template <class V>
struct ScanThenFanOf {
    template <class In, class Op> using type = ScanThenFan<V, In, Op>;
};

// A single-tile variant: V's kernel on one block; n <= V::TILE is checked
// by the caller (the registry's max_n).
template <class V, class In, class Op>
struct SingleTile {
    static size_t scratch(int64_t) { return 0; }
    static cudaError_t run(const gp_scan_args &a) {
        if (a.n > V::TILE) return cudaErrorInvalidValue;
        return V::template launch<In, Op>(1, static_cast<const In *>(a.in),
                                          static_cast<typename Op::type *>(a.out), a.n,
                                          a.inclusive != 0, nullptr, a.stream);
    }
};

template <class V>
struct SingleTileOf {
    template <class In, class Op> using type = SingleTile<V, In, Op>;
};

}  // namespace scan
GP_NAMESPACE_END
