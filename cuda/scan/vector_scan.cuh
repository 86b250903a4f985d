// vector_scan.cuh - the elements of the 1-D look-back scan as small vectors
// combined elementwise, so that the 1-D kernel scans columns: a cumsum
// along axis 0 of a C-contiguous (R, C) array is C scans of R elements, and
// also one scan of R elements that are the rows, each row a Tuple of C
// values, the operator applied column by column (Blelloch, "Prefix Sums and
// Their Applications", 1990: a scan needs only an associative operator, and
// the elementwise form of one is one).  A row of 4 4-byte or 2 8-byte
// values is 16 bytes, of 2 4-byte values 8: the width of the values the
// look-back scan already moves, so its tiles stay coalesced rows of the
// array and its look-back tree is the same for every column.
//
// What the look-back kernel (decoupled_lookback.cuh) needs of an element:
// an operator with `type`, `identity()` and `operator()` (Elementwise) and
// the warp shuffles, here overloads found by argument-dependent lookup from
// warp.cuh's, scan.cuh's and lookback.cuh's collectives (a shuffle moves one
// built-in value, so the C values move apart).  The published totals of a
// 16-byte Tuple go through lookback.cuh's QuadSlots (no __threadfence()),
// of an 8-byte one through PairedSlots (decoupled_lookback.cuh, SlotsOf).
#pragma once

#include "../common.cuh"

GP_NAMESPACE_BEGIN
// A namespace of their own: the shuffles below are found by argument-
// dependent lookup alone, and hide no built-in shuffle from the unqualified
// calls of the namespaces that use them.
namespace vec {

// C values of one type, aligned to their whole size (16 or 8 bytes: one
// vector access).
template <class T, int C>
struct alignas(sizeof(T) * C) Tuple {
    T v[C];
};

// The operator Op applied to each of the C values of two tuples: an
// associative operator if Op is one, with the identity of Op in every
// place.  Value c of a scan of tuples is a scan of column c, every column
// combined in the same order (the look-back's fixed tree is the same for
// all of them).
template <class Op, int C>
struct Elementwise {
    using value_type = typename Op::type;
    using type = Tuple<value_type, C>;
    __host__ __device__ static constexpr type identity() {
        type r{};
        for (int c = 0; c < C; ++c) r.v[c] = Op::identity();
        return r;
    }
    __host__ __device__ type operator()(type a, type b) const {
        const Op op;
        type r;
#pragma unroll
        for (int c = 0; c < C; ++c) r.v[c] = op(a.v[c], b.v[c]);
        return r;
    }
};

// The warp shuffles of a Tuple: each value moved alone.
template <class T, int C>
__device__ __forceinline__ Tuple<T, C> __shfl_sync(unsigned mask, Tuple<T, C> x, int src, int width = 32) {
    Tuple<T, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = ::__shfl_sync(mask, x.v[c], src, width);
    return r;
}
template <class T, int C>
__device__ __forceinline__ Tuple<T, C> __shfl_up_sync(unsigned mask, Tuple<T, C> x, unsigned delta, int width = 32) {
    Tuple<T, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = ::__shfl_up_sync(mask, x.v[c], delta, width);
    return r;
}
template <class T, int C>
__device__ __forceinline__ Tuple<T, C> __shfl_down_sync(unsigned mask, Tuple<T, C> x, unsigned delta,
                                                        int width = 32) {
    Tuple<T, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = ::__shfl_down_sync(mask, x.v[c], delta, width);
    return r;
}

}  // namespace vec
GP_NAMESPACE_END
