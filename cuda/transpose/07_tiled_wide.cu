// Step 7 - tiled_wide: what `variant="auto"` runs.
//
// What changed from step 6: every global access is 16 bytes wide.  A thread
// loads a 16-byte vector (VEC = 16 / sizeof(T) elements) of an input row,
// scatters it into the shared tile, and later gathers VEC elements of a tile
// column into one 16-byte store along an output row.  The tile is 8 vectors
// wide in both directions (TILE = 8 * VEC elements: 32 x 32 for float32),
// and 8 consecutive lanes cover one 128-byte row segment, so:
//  * each warp instruction moves 4 full 128-byte segments (reads and writes);
//  * with the tile padded by one column, the 32 lanes of a warp hit 32
//    different banks on both shared-memory phases (for 4-byte elements:
//    bank = row + 4 * vector + element, all distinct);
//  * a quarter of the global memory instructions of step 6, and each thread
//    keeps TILE / (BLOCK / 8) loads of 16 bytes in flight;
//  * evict-first stores (the output is not read again), and blocks take their
//    tiles in groups of tile columns (block_tile below), so
//    the tiles in flight at once form a squarish region and both reads and
//    writes hit long runs of the same DRAM rows;
//  * optionally a block moves several tiles down a tile column, issuing the
//    next tile's loads before writing the current one (TILES > 1).
// Vectors need 16-byte aligned rows: the base pointers aligned and both
// dimensions multiples of VEC.  Other shapes run step 6's kernel.
#include <cstring>

#include "tiled.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

// Tunables, in one place.  Evidence: bench/tune_transpose.cu; its table for
// each GPU measured is kept in bench/results/.
enum { LOAD_LDG = 0, LOAD_STREAMING = 1, LOAD_PREFETCH_256B = 2 };
enum { STORE_PLAIN = 0, STORE_STREAMING = 1 };
template <int BLOCK_, int TILES_, int GROUP_, int LOAD_ = LOAD_LDG, int STORE_ = STORE_PLAIN>
struct WideTuning {
    static constexpr int BLOCK = BLOCK_;  // threads: 8 lanes per row segment
    static constexpr int TILES = TILES_;  // tiles per block, one after another down the rows
    static constexpr int GROUP = GROUP_;  // tile columns per group of the block order (0: none)
    static constexpr int LOAD = LOAD_;    // read-only path, evict-first, or 256-byte L2 prefetch
    static constexpr int STORE = STORE_;  // plain or evict-first (__stcs) stores
};
using TransposeTuning = WideTuning<64, 1, 2, LOAD_LDG, STORE_STREAMING>;

// Which tile a block moves.  Blocks start roughly in index order, so the
// order decides which part of the matrix is in flight at once.  Row-major
// order (GROUP = 0) has the running blocks cover whole input rows (long
// read runs) but only a few tiles down (short write runs, since an output
// row is an input column).  Grouping GROUP tile columns and walking down
// them makes the running blocks cover a squarer region: both the reads and
// the writes come in runs of many 128-byte segments of the same rows.
template <int GROUP>
__device__ inline void block_tile(int64_t nx, int64_t ny, int64_t &bx, int64_t &by) {
    const int64_t id = blockIdx.x;
    if (GROUP == 0) {
        bx = id % nx;
        by = id / nx;
        return;
    }
    const int64_t per_group = int64_t(GROUP) * ny;
    const int64_t group = id / per_group, rem = id % per_group;
    const int64_t width = nx - group * GROUP < GROUP ? nx - group * GROUP : GROUP;
    bx = group * GROUP + rem % width;
    by = rem / width;
}

template <int KIND>
__device__ inline uint4 load_vec(const void *p) {
    if constexpr (KIND == LOAD_STREAMING) {
        return __ldcs(static_cast<const uint4 *>(p));
    } else if constexpr (KIND == LOAD_PREFETCH_256B) {
        return load_nc_no_l1_prefetch_256b(p);
    } else {
        return __ldg(static_cast<const uint4 *>(p));
    }
}
template <int KIND>
__device__ inline void store_vec(void *p, uint4 v) {
    if constexpr (KIND == STORE_STREAMING) __stcs(static_cast<uint4 *>(p), v);
    else *static_cast<uint4 *>(p) = v;
}

// A block moves TILES tiles of one tile column, top to bottom.  Software
// pipelining: the loads of the next tile are issued before the current
// tile is written out, so memory reads stay in flight across the barrier.
template <class T, class Tn>
__global__ void __launch_bounds__(Tn::BLOCK)
transpose_wide(const T *__restrict__ in, T *__restrict__ out, int64_t rows, int64_t cols) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int TILE = 8 * VEC;
    constexpr int ROWS_PER_PASS = Tn::BLOCK / 8;
    constexpr int PASSES = TILE / ROWS_PER_PASS;
    static_assert(Tn::BLOCK % 32 == 0 && TILE % ROWS_PER_PASS == 0, "whole warps, whole passes");
    __shared__ T tile[TILE][TILE + 1];

    const int lane8 = threadIdx.x % 8;  // which 16-byte vector of the row segment
    const int row = threadIdx.x / 8;    // which row of the pass
    const int64_t span = int64_t(Tn::TILES) * TILE;  // rows one block covers
    int64_t bx, by;
    block_tile<Tn::GROUP>(ceil_div<int64_t>(cols, TILE), ceil_div<int64_t>(rows, span), bx, by);
    const int64_t c0 = bx * TILE;
    const int64_t c = c0 + lane8 * VEC;
    uint4 v[PASSES];

    auto load_tile = [&](int64_t r0) {
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {
            const int64_t r = r0 + row + k * ROWS_PER_PASS;
            if (r < rows && c < cols) v[k] = load_vec<Tn::LOAD>(in + r * cols + c);
        }
    };

    {
        const int64_t b0 = by * span;
        const int64_t end = b0 + span < rows ? b0 + span : rows;
        load_tile(b0);
        for (int64_t r0 = b0; r0 < end; r0 += TILE) {
#pragma unroll
            for (int k = 0; k < PASSES; ++k) {  // registers -> tile
                const int64_t r = r0 + row + k * ROWS_PER_PASS;
                if (r < rows && c < cols) {
                    T e[VEC];
                    memcpy(e, &v[k], 16);
#pragma unroll
                    for (int q = 0; q < VEC; ++q) tile[row + k * ROWS_PER_PASS][lane8 * VEC + q] = e[q];
                }
            }
            __syncthreads();
            if (r0 + TILE < end) load_tile(r0 + TILE);  // next tile's reads in flight
#pragma unroll
            for (int k = 0; k < PASSES; ++k) {  // tile column -> output row
                const int j = row + k * ROWS_PER_PASS;
                const int64_t orow = c0 + j, ocol = r0 + lane8 * VEC;
                if (orow < cols && ocol < rows) {
                    T e[VEC];
#pragma unroll
                    for (int q = 0; q < VEC; ++q) e[q] = tile[lane8 * VEC + q][j];
                    uint4 w;
                    memcpy(&w, e, 16);
                    store_vec<Tn::STORE>(out + orow * rows + ocol, w);
                }
            }
            __syncthreads();  // the tile is read before it is overwritten
        }
    }
}

template <class T>
struct Wide {
    static cudaError_t run(const gp_transpose_args &a) {
        constexpr int VEC = 16 / sizeof(T), TILE = 8 * VEC;
        const bool aligned = reinterpret_cast<uintptr_t>(a.in) % 16 == 0 &&
                             reinterpret_cast<uintptr_t>(a.out) % 16 == 0 && a.cols % VEC == 0 &&
                             a.rows % VEC == 0;
        if (!aligned) return transpose::Tiled<32, 8, 1>::Impl<T>::run(a);  // step 6
        using Tn = TransposeTuning;
        const int64_t blocks = ceil_div<int64_t>(a.cols, TILE) * ceil_div<int64_t>(a.rows, Tn::TILES * TILE);
        if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
        GP_LAUNCH((transpose_wide<T, Tn>), unsigned(blocks), Tn::BLOCK, 0, a.stream,
                  static_cast<const T *>(a.in), static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *a) {
    return transpose::dispatch<Wide>(a);
}

GP_NAMESPACE_END
