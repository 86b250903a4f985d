// tiled.cuh - the shared-memory tile transpose, with the three knobs the
// journey turns one at a time (04_tiled.cu ... 07_tiled_wide.cu):
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

}  // namespace transpose
GP_NAMESPACE_END
