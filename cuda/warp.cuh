// warp.cuh - warp and block collectives: the warp width, the full mask,
// and reductions over a warp and over a block.  Included by common.cuh.
#pragma once

#include "common.cuh"

GP_NAMESPACE_BEGIN

constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr int WARP = 32;

// Butterfly-free tree: after it, lane 0 holds the reduction of the warp.
template <class T, class Op>
__device__ inline T warp_reduce(T v, Op op) {
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset >>= 1)
        v = op(v, __shfl_down_sync(FULL_MASK, v, offset));
    return v;
}

// Reduce over a whole block of BLOCK threads; the result is valid in
// thread 0.  `smem` holds BLOCK / 32 values.  Every thread must call it.
template <int BLOCK, class T, class Op>
__device__ inline T block_reduce(T v, Op op, T *smem) {
    static_assert(BLOCK % WARP == 0 && BLOCK <= 1024, "block of whole warps");
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    v = warp_reduce(v, op);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / WARP ? smem[lane] : Op::identity();
        v = warp_reduce(v, op);
    }
    return v;
}

GP_NAMESPACE_END
