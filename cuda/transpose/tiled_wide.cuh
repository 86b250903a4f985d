// tiled_wide.cuh - the wide tiled transpose: its kernel and its launcher template.
// (05_tiled_wide.cu explains the step and registers it; the tuning
// programs in bench/ include this header to time the same kernel.)
#ifndef GPUPRIMS_TRANSPOSE_TILED_WIDE_CUH
#define GPUPRIMS_TRANSPOSE_TILED_WIDE_CUH

#include <cstring>

#include "tiled.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

using transpose::TransposeTuning;  // the tunables and their evidence: tiled.cuh
using transpose::WideTuning;

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

// A block moves one tile: VECS vector loads per input row segment, the
// scatter into the padded tile, a barrier, VECS vector stores per output
// row segment.
template <class T, class Tn>
__global__ void __launch_bounds__(Tn::BLOCK)
transpose_wide(const T *__restrict__ in, T *__restrict__ out, int64_t rows, int64_t cols) {
    constexpr int VEC = 16 / sizeof(T), VECS = Tn::VECS, TILE = VECS * VEC;
    constexpr int PASSES = TILE * VECS / Tn::BLOCK;  // vectors per thread
    static_assert(Tn::BLOCK % 32 == 0 && (TILE * VECS) % Tn::BLOCK == 0, "whole warps, whole passes");
    __shared__ T tile[TILE][TILE + 1];

    int64_t bx, by;
    block_tile<Tn::GROUP>(ceil_div<int64_t>(cols, TILE), ceil_div<int64_t>(rows, TILE), bx, by);
    const int64_t r0 = by * TILE, c0 = bx * TILE;
    uint4 v[PASSES];
#pragma unroll
    for (int k = 0; k < PASSES; ++k) {  // input rows -> registers
        const int i = threadIdx.x + k * Tn::BLOCK, r = i / VECS, c = i % VECS * VEC;
        if (r0 + r < rows && c0 + c < cols) v[k] = __ldg(reinterpret_cast<const uint4 *>(in + (r0 + r) * cols + c0 + c));
    }
#pragma unroll
    for (int k = 0; k < PASSES; ++k) {  // registers -> tile
        const int i = threadIdx.x + k * Tn::BLOCK, r = i / VECS, c = i % VECS * VEC;
        if (r0 + r < rows && c0 + c < cols) {
            T e[VEC];
            memcpy(e, &v[k], 16);
#pragma unroll
            for (int q = 0; q < VEC; ++q) tile[r][c + q] = e[q];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < PASSES; ++k) {  // tile column j -> output row c0 + j
        const int i = threadIdx.x + k * Tn::BLOCK, j = i / VECS, r = i % VECS * VEC;
        if (c0 + j < cols && r0 + r < rows) {
            T e[VEC];
#pragma unroll
            for (int q = 0; q < VEC; ++q) e[q] = tile[r + q][j];
            uint4 w;
            memcpy(&w, e, 16);
            __stcs(reinterpret_cast<uint4 *>(out + (c0 + j) * rows + r0 + r), w);
        }
    }
}

template <class T>
struct Wide {
    static cudaError_t run(const gp_transpose_args &a) {
        using Tn = TransposeTuning<T>;
        constexpr int VEC = 16 / sizeof(T), TILE = Tn::VECS * VEC;
        const bool aligned = reinterpret_cast<uintptr_t>(a.in) % 16 == 0 &&
                             reinterpret_cast<uintptr_t>(a.out) % 16 == 0 && a.cols % VEC == 0 &&
                             a.rows % VEC == 0;
        if (!aligned) return transpose::TiledCoarsened::Impl<T>::run(a);  // step 6
        const int64_t blocks = ceil_div<int64_t>(a.cols, TILE) * ceil_div<int64_t>(a.rows, TILE);
        if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
        GP_LAUNCH((transpose_wide<T, Tn>), unsigned(blocks), Tn::BLOCK, 0, a.stream,
                  static_cast<const T *>(a.in), static_cast<T *>(a.out), a.rows, a.cols);
        return cudaSuccess;
    }
};
}  // namespace

GP_NAMESPACE_END

#endif  // GPUPRIMS_TRANSPOSE_TILED_WIDE_CUH
