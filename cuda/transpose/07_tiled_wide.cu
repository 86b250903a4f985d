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
//    keeps TILE / (BLOCK / 8) loads of 16 bytes in flight.
// Vectors need 16-byte aligned rows: the base pointers aligned and both
// dimensions multiples of VEC.  Other shapes run step 6's kernel.
#include <cstring>

#include "tiled.cuh"

namespace {
using namespace gp;

// Tunables, in one place.  Evidence: bench/tune_transpose.cu; its table for
// each GPU measured is kept in bench/results/.
struct TransposeTuning {
    static constexpr int BLOCK = 64;  // threads: 8 lanes per row segment, 8 rows per pass
};

template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
transpose_wide(const T *__restrict__ in, T *__restrict__ out, int64_t rows, int64_t cols) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int TILE = 8 * VEC;
    constexpr int ROWS_PER_PASS = BLOCK / 8;
    constexpr int PASSES = TILE / ROWS_PER_PASS;
    static_assert(BLOCK % 32 == 0 && TILE % ROWS_PER_PASS == 0, "whole warps, whole passes");
    __shared__ T tile[TILE][TILE + 1];

    const int lane8 = threadIdx.x % 8;         // which 16-byte vector of the row segment
    const int row = threadIdx.x / 8;           // which row of the pass
    const int64_t c0 = int64_t(blockIdx.x) * TILE;
    for (int64_t r0 = int64_t(blockIdx.y) * TILE; r0 < rows; r0 += int64_t(gridDim.y) * TILE) {
        uint4 v[PASSES];
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {  // all loads issued before any is used
            const int64_t r = r0 + row + k * ROWS_PER_PASS, c = c0 + lane8 * VEC;
            if (r < rows && c < cols) v[k] = __ldg(reinterpret_cast<const uint4 *>(in + r * cols + c));
        }
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {
            const int64_t r = r0 + row + k * ROWS_PER_PASS, c = c0 + lane8 * VEC;
            if (r < rows && c < cols) {
                T e[VEC];
                memcpy(e, &v[k], 16);
#pragma unroll
                for (int q = 0; q < VEC; ++q) tile[row + k * ROWS_PER_PASS][lane8 * VEC + q] = e[q];
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {
            const int j = row + k * ROWS_PER_PASS;          // output row c0 + j = input column
            const int64_t orow = c0 + j, ocol = r0 + lane8 * VEC;
            if (orow < cols && ocol < rows) {
                T e[VEC];
#pragma unroll
                for (int q = 0; q < VEC; ++q) e[q] = tile[lane8 * VEC + q][j];
                uint4 w;
                memcpy(&w, e, 16);
                *reinterpret_cast<uint4 *>(out + orow * rows + ocol) = w;
            }
        }
        __syncthreads();  // the tile is read before the next pass overwrites it
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
        GP_LAUNCH((transpose_wide<T, TransposeTuning::BLOCK>), transpose::tile_grid(a.rows, a.cols, TILE, TILE),
                  TransposeTuning::BLOCK, 0, a.stream, static_cast<const T *>(a.in),
                  static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

extern "C" cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *a) {
    return transpose::dispatch<Wide>(a);
}
