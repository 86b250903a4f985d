// tiled.cuh - the shared-memory tile transpose, with the three knobs the
// journey turns one at a time (04_tiled.cu, then 05_tiled_wide.cu):
//   TILE        the tile is TILE x TILE elements, staged in shared memory
//   BLOCK_ROWS  the block is TILE x BLOCK_ROWS threads; each thread moves
//               TILE / BLOCK_ROWS elements (granularity coarsening)
//   PAD         extra columns per tile row in shared memory (0 or 1)
//
// A block reads a tile row by row (threadIdx.x along the input row: each
// warp reads consecutive addresses), waits, and writes it back transposed,
// again row by row of the output (consecutive addresses).  The transpose
// happens in shared memory: the write phase reads tile[x][y], a column of
// the tile.  Without padding the 32 lanes of a warp then hit the same bank
// (TILE words apart) and are served one after another; one padding column
// makes the stride TILE + 1 words and spreads them over all 32 banks.
#pragma once

#include <type_traits>

#include "transpose.cuh"

GP_NAMESPACE_BEGIN
namespace transpose {

template <int TILE, int BLOCK_ROWS, int PAD, class T>
__global__ void __launch_bounds__(TILE *BLOCK_ROWS)
tiled(const T *__restrict__ in, T *__restrict__ out, int64_t rows, int64_t cols) {
    static_assert(TILE % BLOCK_ROWS == 0, "whole passes over the tile");
    __shared__ T tile[TILE][TILE + PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c0 = int64_t(blockIdx.x) * TILE;  // first input column of the tile
    for (int64_t r0 = int64_t(blockIdx.y) * TILE; r0 < rows; r0 += int64_t(gridDim.y) * TILE) {
#pragma unroll
        for (int k = 0; k < TILE; k += BLOCK_ROWS) {
            const int64_t r = r0 + ty + k, c = c0 + tx;
            if (r < rows && c < cols) tile[ty + k][tx] = in[r * cols + c];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k += BLOCK_ROWS) {
            const int64_t orow = c0 + ty + k, ocol = r0 + tx;  // out is cols x rows
            if (orow < cols && ocol < rows) out[orow * rows + ocol] = tile[tx][ty + k];
        }
        __syncthreads();  // the tile is read before the next pass overwrites it
    }
}

template <int TILE, int BLOCK_ROWS, int PAD>
struct Tiled {
    static constexpr int THREADS = TILE * BLOCK_ROWS;
    // The kernel for elements of type T, as the address the occupancy API takes.
    template <class T>
    static const void *kernel() {
        return reinterpret_cast<const void *>(&tiled<TILE, BLOCK_ROWS, PAD, T>);
    }
    template <class T>
    struct Impl {
        static cudaError_t run(const gp_transpose_args &a) {
            GP_LAUNCH((tiled<TILE, BLOCK_ROWS, PAD, T>), tile_grid(a.rows, a.cols, TILE, TILE),
                      dim3(TILE, BLOCK_ROWS), 0, a.stream, static_cast<const T *>(a.in),
                      static_cast<T *>(a.out), a.rows, a.cols);
            return cudaSuccess;
        }
    };
};

// The journey's shapes (04_tiled.cu), read by the registry too.
using TiledPlain = Tiled<32, 32, 0>;      // step 4: 32 x 32 threads, one element each
using TiledPadded = Tiled<32, 32, 1>;     // step 5: the same, tile padded by one column
using TiledCoarsened = Tiled<32, 8, 1>;   // step 6: 32 x 8 threads, 4 elements each

// Step 7, tiled_wide (05_tiled_wide.cu).  Evidence: bench/tune_transpose.cu,
// its tables in bench/results/ (tune-transpose-*.md): float32 on an H200 at
// 16384 x 16384, 64 x 64 tiles (16 vectors a side) of 256 threads in groups
// of 2 tile columns: 4108 GB/s, 1.03x cublasSgeam, 5% over 32 x 32 tiles of
// 64 threads (3912 GB/s); 128 threads need 107 registers and lose (3972
// GB/s).  float64 takes the same shape (32 x 32 tiles of 16-byte vectors):
// on an H200 0.2635 ms at 8192^2 against 0.2739 ms with 8 vectors a side of
// 64 threads and cublasDgeam's 0.2671 ms (1.01x; 1.00x at 4000 x 6000).
// 1- and 2-byte elements keep 8 vectors a side (16 would not fit the 48 KiB
// of static shared memory).
template <int VECS_, int BLOCK_, int GROUP_>
struct WideTuning {
    static constexpr int VECS = VECS_;    // 16-byte vectors per tile side
    static constexpr int BLOCK = BLOCK_;  // threads
    static constexpr int GROUP = GROUP_;  // tile columns per group of the block order (0: none)
};
template <class T>
using TransposeTuning = std::conditional_t<sizeof(T) >= 4, WideTuning<16, 256, 2>, WideTuning<8, 64, 2>>;

}  // namespace transpose
GP_NAMESPACE_END
