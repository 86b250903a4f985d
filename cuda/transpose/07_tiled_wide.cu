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
//  * a block moves several tiles down a tile column and issues the loads of
//    the next tile before writing the current one out (software pipelining),
//    so reads stay in flight across the barrier and fewer blocks are launched.
// Vectors need 16-byte aligned rows: the base pointers aligned and both
// dimensions multiples of VEC.  Other shapes run step 6's kernel.
#include <cstring>

#include "tiled.cuh"

namespace {
using namespace gp;

// Tunables, in one place.  Evidence: bench/tune_transpose.cu; its table for
// each GPU measured is kept in bench/results/.
template <int BLOCK_, int TILES_, bool STREAMING_>
struct WideTuning {
    static constexpr int BLOCK = BLOCK_;          // threads: 8 lanes per row segment
    static constexpr int TILES = TILES_;          // tiles per block, one after another down the rows
    static constexpr bool STREAMING = STREAMING_; // evict-first loads and stores (__ldcs/__stcs)
};
using TransposeTuning = WideTuning<64, 4, false>;

template <bool STREAMING>
__device__ inline uint4 load_vec(const void *p) {
    if constexpr (STREAMING) return __ldcs(static_cast<const uint4 *>(p));
    else return __ldg(static_cast<const uint4 *>(p));
}
template <bool STREAMING>
__device__ inline void store_vec(void *p, uint4 v) {
    if constexpr (STREAMING) __stcs(static_cast<uint4 *>(p), v);
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
    const int64_t c0 = int64_t(blockIdx.x) * TILE;
    const int64_t c = c0 + lane8 * VEC;
    const int64_t span = int64_t(Tn::TILES) * TILE;  // rows one block covers
    uint4 v[PASSES];

    auto load_tile = [&](int64_t r0) {
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {
            const int64_t r = r0 + row + k * ROWS_PER_PASS;
            if (r < rows && c < cols) v[k] = load_vec<Tn::STREAMING>(in + r * cols + c);
        }
    };

    for (int64_t b0 = int64_t(blockIdx.y) * span; b0 < rows; b0 += int64_t(gridDim.y) * span) {
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
                    store_vec<Tn::STREAMING>(out + orow * rows + ocol, w);
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
        GP_LAUNCH((transpose_wide<T, Tn>), transpose::tile_grid(a.rows, a.cols, Tn::TILES * TILE, TILE),
                  Tn::BLOCK, 0, a.stream, static_cast<const T *>(a.in), static_cast<T *>(a.out),
                  a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

extern "C" cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *a) {
    return transpose::dispatch<Wide>(a);
}
