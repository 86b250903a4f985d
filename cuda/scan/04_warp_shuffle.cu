// Step 8 - warp_shuffle: block scans from __shfl_up_sync, reduce-then-scan.
// Sources: __shfl_up_sync (CUDA C++ Programming Guide, warp shuffle
// functions); reduce-then-scan as in Merrill and Grimshaw, "Parallel scan
// for stream architectures" (2009).
//
// What changed from step 7: the block scan lives in registers.  Each
// thread holds ITEMS consecutive elements (read with 16-byte loads) and
// scans them in order; the thread totals are scanned across each warp with
// five __shfl_up_sync steps, the warp totals once more by warp 0 (block_scan
// in scan.cuh): two barriers per tile instead of two per tree level.  Across
// blocks, reduce-then-scan: pass 1 reduces every tile to its total, pass 2
// scans the totals (the same method, recursively), pass 3 scans every tile
// again starting from its prefix.
// Why step 7 was slow: one element per thread at a time through shared
// memory, a barrier per tree level, scalar loads, and scan-then-fan writes
// the output twice (scan, then fan): 4n memory traffic.
// Still slow here: the input is read twice, 3n memory traffic where a copy
// moves 2n (step 9 reads it once).
// Assumes: 16-byte loads where the pointers are aligned and the tile whole,
// element by element otherwise; any n.
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = scan::SHUFFLE_BLOCK, ITEMS = scan::SHUFFLE_ITEMS, TILE = BLOCK * ITEMS;

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
tile_totals(const In *in, int64_t n, bool vector_ok, typename Op::type *totals) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_results[BLOCK / WARP];
    Acc items[ITEMS];
    scan::load_items<ITEMS, Op>(in, int64_t(blockIdx.x) * TILE + threadIdx.x * ITEMS, n, vector_ok, items);
    Acc v = items[0];
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v = op(v, items[k]);
    v = block_reduce<BLOCK>(v, op, warp_results);
    if (threadIdx.x == 0) totals[blockIdx.x] = v;
}

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
tile_scan(const In *in, typename Op::type *out, int64_t n, bool inclusive, bool vector_ok,
          const typename Op::type *prefix) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_totals[BLOCK / WARP];
    const int64_t first = int64_t(blockIdx.x) * TILE + threadIdx.x * ITEMS;
    Acc items[ITEMS], before;
    scan::load_items<ITEMS, Op>(in, first, n, vector_ok, items);
    scan::block_scan<BLOCK>(items, before, op, warp_totals);
    const Acc p = prefix != nullptr ? prefix[blockIdx.x] : Op::identity();
    Acc res[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) res[k] = op(p, inclusive ? items[k] : (k == 0 ? before : items[k - 1]));
    scan::store_items(out, first, n, vector_ok, res);
}

template <class In, class Op>
struct ReduceThenScan {
    using Acc = typename Op::type;
    static size_t scratch(int64_t n) {
        size_t bytes = 256;
        for (int64_t m = ceil_div<int64_t>(n, TILE); m > 1; m = ceil_div<int64_t>(m, TILE))
            bytes += 2 * align_up(size_t(m) * sizeof(Acc));
        return bytes;
    }
    template <class I>
    static cudaError_t level(const I *in, Acc *out, int64_t n, bool inclusive, char *work,
                             cudaStream_t s) {
        const int64_t tiles = ceil_div<int64_t>(n, TILE);
        const bool vec = scan::aligned16<I>(in) && scan::aligned16<Acc>(out);
        if (tiles == 1) {
            GP_LAUNCH((tile_scan<I, Op>), 1, BLOCK, 0, s, in, out, n, inclusive, vec, nullptr);
            return cudaSuccess;
        }
        Acc *totals = reinterpret_cast<Acc *>(work);
        Acc *prefix = reinterpret_cast<Acc *>(work + align_up(size_t(tiles) * sizeof(Acc)));
        char *rest = work + 2 * align_up(size_t(tiles) * sizeof(Acc));
        GP_LAUNCH((tile_totals<I, Op>), unsigned(tiles), BLOCK, 0, s, in, n, scan::aligned16<I>(in), totals);
        GP_TRY(level<Acc>(totals, prefix, tiles, false, rest, s));
        GP_LAUNCH((tile_scan<I, Op>), unsigned(tiles), BLOCK, 0, s, in, out, n, inclusive, vec, prefix);
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a) {
        return level<In>(static_cast<const In *>(a.in), static_cast<Acc *>(a.out), a.n,
                         a.inclusive != 0, static_cast<char *>(a.scratch), a.stream);
    }
};
}  // namespace

cudaError_t gp_scan_warp_shuffle(gp_scan_args *a) {
    return scan::dispatch<ReduceThenScan>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_warp_shuffle_kernel, tile_scan<float, Sum<float>>)
GP_NAMESPACE_END
