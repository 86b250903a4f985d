// transpose.cuh - what the transpose variants share: the launch shapes of
// the first steps, the dispatch from the element size to an unsigned integer
// type of that size (a transpose only moves bits), and the 2-D grid of
// tiles.
#pragma once

#include <cstdint>

#include "../common.cuh"

GP_NAMESPACE_BEGIN
namespace transpose {

// Launch shapes, one home for the kernels and the registry (registry.cu);
// the tiled steps' shapes are in tiled.cuh.
constexpr int PER_ROW_BLOCK = 256;  // 02_per_row.cu: threads per block, one output row each
constexpr int PER_ELEMENT_K = 16;   // 03_per_element.cu: K x K threads, one element each

// Impl<T>::run(args) for T of the element's size (uint4: 16 bytes,
// complex128).
template <template <class> class Impl>
cudaError_t by_elem_size(const gp_transpose_args &a) {
    switch (a.elem_size) {
    case 1: return Impl<uint8_t>::run(a);
    case 2: return Impl<uint16_t>::run(a);
    case 4: return Impl<uint32_t>::run(a);
    case 8: return Impl<uint64_t>::run(a);
    case 16: return Impl<uint4>::run(a);
    default: return cudaErrorInvalidValue;
    }
}

// The 2-D journey's entry: a->rows x a->cols, C-contiguous (rows = -1:
// the call is not a matrix transpose, which these steps do not take).
template <template <class> class Impl>
cudaError_t dispatch(const gp_transpose_args *a) {
    if (a->rows < 0 || a->cols < 0) return cudaErrorInvalidValue;
    if (a->rows == 0 || a->cols == 0) return cudaSuccess;
    return by_elem_size<Impl>(*a);
}

// Tiles of TILE_ROWS x TILE_COLS input elements: blockIdx.x walks the tile
// columns, blockIdx.y the tile rows.  gridDim.y is capped at 65535 (the
// hardware limit), so kernels loop over tile rows with a stride of
// gridDim.y tiles: any number of rows works.
inline dim3 tile_grid(int64_t rows, int64_t cols, int tile_rows, int tile_cols) {
    const int64_t gy = ceil_div<int64_t>(rows, tile_rows);
    return dim3(unsigned(ceil_div<int64_t>(cols, tile_cols)), unsigned(gy < 65535 ? gy : 65535));
}

}  // namespace transpose
GP_NAMESPACE_END
