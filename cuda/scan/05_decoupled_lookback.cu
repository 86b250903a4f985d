// Step 9 - decoupled look-back (Merrill & Garland 2016): what `auto` runs.
//
// What changed from step 8: one pass.  Each block takes the next tile
// (an atomic counter hands tiles out in launch order, so every tile a block
// waits on belongs to a block already running), scans it in registers as
// in step 8, and publishes the tile's total at once (status AGGREGATE).
// Its first warp then looks back over the WINDOWS x 32 preceding tiles in
// parallel, waiting for each to publish something, until the window holds
// a tile that published its INCLUSIVE prefix; the block's prefix is that
// value followed by the aggregates after it.  The block publishes its own
// inclusive prefix and writes its tile.  Input read once, output written
// once: the traffic of a copy.
//
// Bitwise reproducible: the prefix of tile t is always the left fold
// ((agg[0] op agg[1]) op agg[2]) ... op agg[t-1].  Look-back starts from
// the newest published inclusive prefix - itself that left fold - and adds
// the following aggregates in order, one at a time, so whichever tile it
// finds, the operations and their order are the same.
//
// Published values and their status flags live in separate arrays: the
// value is stored, __threadfence(), then the flag; readers read the flag,
// __threadfence(), then the value (bypassing L1).
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

// Tunables, in one place.  Evidence: bench/results/ (scan tables).
struct LookbackTuning {
    static constexpr int BLOCK = 256;   // threads per block
    static constexpr int ITEMS = 32;    // consecutive elements per thread
    static constexpr int WINDOWS = 8;   // look-back window: WINDOWS x 32 predecessors
};
constexpr int BLOCK = LookbackTuning::BLOCK, ITEMS = LookbackTuning::ITEMS, TILE = BLOCK * ITEMS;
constexpr int WINDOWS = LookbackTuning::WINDOWS;
enum : unsigned { EMPTY = 0, AGGREGATE = 1, INCLUSIVE = 2 };

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
scan_lookback(const In *in, typename Op::type *out, int64_t n, bool inclusive, bool vector_ok,
              unsigned *next_tile, unsigned *flags, typename Op::type *aggs,
              typename Op::type *incls) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_totals[BLOCK / WARP];
    __shared__ unsigned s_tile;
    __shared__ Acc s_prefix;
    if (threadIdx.x == 0) s_tile = atomicAdd(next_tile, 1u);
    __syncthreads();
    const int64_t tile = s_tile;
    const int64_t first = tile * TILE + threadIdx.x * ITEMS;

    Acc items[ITEMS], before;
    scan::load_items<ITEMS, Op>(in, first, n, vector_ok, items);
    const Acc total = scan::block_scan<BLOCK>(items, before, op, warp_totals);

    volatile unsigned *vflags = flags;
    if (threadIdx.x == 0) {  // publish the aggregate (tile 0: its inclusive prefix)
        (tile == 0 ? incls : aggs)[tile] = total;
        __threadfence();
        vflags[tile] = tile == 0 ? INCLUSIVE : AGGREGATE;
    }
    if (tile > 0 && threadIdx.x < WARP) {  // warp 0 looks back
        // Window w, lane l: tile t - 32*WINDOWS + 32*w + l (w = WINDOWS-1, lane
        // 31: the tile just before).  The prefix advances by up to a whole
        // window of WINDOWS x 32 tiles per round trip to memory.
        const int lane = threadIdx.x;
        Acc v[WINDOWS];
        int from_w = -1, from_l = 0;
        for (;;) {
#pragma unroll
            for (int w = 0; w < WINDOWS; ++w) {
                const int64_t j = tile - int64_t(WARP) * WINDOWS + w * WARP + lane;
                unsigned f = EMPTY;
                v[w] = Op::identity();
                if (j >= 0) {
                    do f = vflags[j]; while (f == EMPTY);
                    __threadfence();
                    v[w] = f == INCLUSIVE ? __ldcg(incls + j) : __ldcg(aggs + j);
                }
                const unsigned found = __ballot_sync(FULL_MASK, f == INCLUSIVE);
                if (found) {  // a newer window overrides an older one
                    from_w = w;
                    from_l = 31 - __clz(found);
                }
            }
            if (from_w >= 0) break;
        }
        // The left fold from the newest inclusive prefix through the
        // aggregates after it, one at a time, oldest first.
        Acc p = Op::identity();
#pragma unroll
        for (int w = 0; w < WINDOWS; ++w) {
            if (w < from_w) continue;  // uniform over the warp
            for (int k = w == from_w ? from_l : 0; k < WARP; ++k) {
                const Acc x = __shfl_sync(FULL_MASK, v[w], k);
                p = (w == from_w && k == from_l) ? x : op(p, x);
            }
        }
        if (lane == 0) {
            incls[tile] = op(p, total);
            __threadfence();
            vflags[tile] = INCLUSIVE;
            s_prefix = p;
        }
    }
    __syncthreads();
    Acc res[ITEMS];
    if (tile > 0) {
        const Acc p = s_prefix;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) res[k] = op(p, inclusive ? items[k] : (k == 0 ? before : items[k - 1]));
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) res[k] = inclusive ? items[k] : (k == 0 ? before : items[k - 1]);
    }
    scan::store_items(out, first, n, vector_ok, res);
}

template <class In, class Op>
struct Lookback {
    using Acc = typename Op::type;
    static size_t flag_bytes(int64_t tiles) { return align_up(size_t(tiles + 1) * sizeof(unsigned)); }
    static size_t scratch(int64_t n) {
        const int64_t tiles = ceil_div<int64_t>(n, TILE);
        return flag_bytes(tiles) + 2 * align_up(size_t(tiles) * sizeof(Acc));
    }
    static cudaError_t run(const gp_scan_args &a) {
        const int64_t tiles = ceil_div<int64_t>(a.n, TILE);
        if (tiles > int64_t(UINT32_MAX)) return cudaErrorInvalidValue;
        char *p = static_cast<char *>(a.scratch);
        unsigned *next_tile = reinterpret_cast<unsigned *>(p);
        unsigned *flags = next_tile + 1;
        Acc *aggs = reinterpret_cast<Acc *>(p + flag_bytes(tiles));
        Acc *incls = reinterpret_cast<Acc *>(p + flag_bytes(tiles) + align_up(size_t(tiles) * sizeof(Acc)));
        GP_TRY(cudaMemsetAsync(next_tile, 0, size_t(tiles + 1) * sizeof(unsigned), a.stream));
        const bool vec = scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
        GP_LAUNCH((scan_lookback<In, Op>), unsigned(tiles), BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), static_cast<Acc *>(a.out), a.n, a.inclusive != 0,
                  vec, next_tile, flags, aggs, incls);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_decoupled_lookback(gp_scan_args *a) {
    return scan::dispatch<Lookback>(a);
}

GP_NAMESPACE_END
