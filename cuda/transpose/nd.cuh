// nd.cuh - what the transpose steps of any rank share (08_nd_naive.cu,
// 09_nd_tiled.cu): the problem as the host planned it (gpuprims.h,
// gp_transpose_args: size-1 axes dropped, axes that stay adjacent and in
// order fused), read into the output's axis order, and the dispatch on the
// element size.
#pragma once

#include "transpose.cuh"

GP_NAMESPACE_BEGIN
namespace transpose {

constexpr int ND_MAX_RANK = GP_TRANSPOSE_MAX_RANK;
constexpr int ND_NAIVE_BLOCK = 256;  // 08_nd_naive.cu: threads per block, one element each

// The output's axes, slowest first: axis j has dim[j] elements and moves
// in_stride[j] elements through the input (its output stride is the
// product of the dims after it).  A kernel parameter (16 axes: 264 bytes).
struct OutAxes {
    int rank;
    int64_t dim[ND_MAX_RANK];
    int64_t in_stride[ND_MAX_RANK];
};

inline OutAxes out_axes(const gp_transpose_args &a) {
    OutAxes o{};
    o.rank = a.rank;
    for (int j = 0; j < a.rank; ++j) {
        o.dim[j] = a.shape[a.perm[j]];
        o.in_stride[j] = a.strides[a.perm[j]];
    }
    return o;
}

// Elements of the problem, or -1 where the arguments are not a problem
// (a rank over the limit, a negative size, axes that are no permutation).
inline int64_t nd_size(const gp_transpose_args &a) {
    if (a.rank < 0 || a.rank > ND_MAX_RANK) return -1;
    int64_t n = 1;
    bool seen[ND_MAX_RANK] = {};
    for (int k = 0; k < a.rank; ++k) {
        if (a.shape[k] < 0 || a.perm[k] < 0 || a.perm[k] >= a.rank || seen[a.perm[k]]) return -1;
        seen[a.perm[k]] = true;
        n *= a.shape[k];
    }
    return n;
}

// The tunables of nd_tiled (09_nd_tiled.cu), by element size: TILE x TILE
// elements a tile, 16-byte accesses (VEC = 16 / sizeof(T) elements), BLOCK
// threads; the copy mode moves COPY_ITEMS vectors a thread, COPY_BLOCK
// threads a block.  Chosen so that a tile row is 128-256 bytes and every
// thread has 4 vectors in flight (TILE * TILE / VEC / BLOCK).  Evidence, H200, bench_transpose's
// any-rank cases (2^26 elements, % of the copy roof): float64 32 x 32
// tiles of 128 threads 85-92% against 65-70% with 256 threads (2 vectors
// a thread) and 79-85% with 64; float32 64 x 64 tiles of 256 threads
// 87-90% against 75-78% with 128 threads and 84-92% for 32 x 32 of 64.
template <class T>
struct NdTuning {
    static constexpr int BLOCK = sizeof(T) == 8 ? 128 : 256;
    static constexpr int TILE = sizeof(T) == 1 ? 128 : sizeof(T) <= 4 ? 64 : sizeof(T) == 8 ? 32 : 16;
    static constexpr int COPY_BLOCK = 256, COPY_ITEMS = 4;
};

// The tile of nd_tiled for 1- and 2-byte elements (09_nd_tiled.cu,
// transpose_nd_packed): P = 4 / sizeof(T) elements to a 32-bit word, TA
// positions along the input's fastest side, TB along the output's (one
// 128-byte output run), BLOCK threads; each thread moves UNITS blocks of P
// input rows x 16 bytes.  Evidence, H200, int8 (bench_transpose's cases,
// % of the copy roof): 128 threads (2 blocks of 4 x 16 bytes a thread)
// 82-93% at 8192^2, 16384^2 and the any-rank cases, against 78-89% with
// 256 threads; float16 any-rank 85% either way.  Arrays of rank 3 and
// more take int8 tiles of 256 x 128 (ND = true, 256-byte input runs) where
// the 256 positions lie along one axis or cover A and its continuation
// whole: bench/tune_nd.cu, int8 at 2^28 elements, 81.7 -> 83.0% for (2, 1,
// 0) of (1024, 512, 512), 89.5 -> 92.1% for (0, 2, 1), the rank-6 reversal
// (16 x 16 positions) 84.8 -> 85.8 with groups.  For matrices 128 x 128
// stays (92.6 against 85.1% at 4000 x 6000, 85.2 against 83.6% at 8192^2),
// and so it does where the 256 positions would take part of a second axis:
// far away ((0, 3, 1, 2) of 128^4: 84.1% with 256, 92.1% with 128,
// bench_transpose), or next to A ((3, 2, 1, 0) of 128^4, with groups: 85.1-
// 86.3% with 128 against 83.8-85.0% with 256 in four tune runs).
template <class T, bool ND = false>
struct PackedTuning {
    static_assert(sizeof(T) <= 2, "1- and 2-byte elements");
    static constexpr int BLOCK = 128;
    static constexpr int P = 4 / int(sizeof(T)), VEC = 16 / int(sizeof(T));
    static constexpr int TA = ND && sizeof(T) == 1 ? 256 : 128, TB = 128 / int(sizeof(T));
    static constexpr int W = TB / P;  // 32-bit words in a row of the staged tile (32)
    static constexpr int UNITS = (TB / P) * (TA / VEC) / BLOCK;
};

// __byte_perm(x, y, s): byte k of the result is byte (s >> 4k) & 7 of the
// 8 bytes y:x (PRMT).  The emulator's is the same loop in C++.
__device__ inline unsigned byte_perm(unsigned x, unsigned y, unsigned s) {
#ifdef GP_EMULATOR
    const uint64_t v = uint64_t(x) | uint64_t(y) << 32;
    unsigned r = 0;
    for (int k = 0; k < 4; ++k) r |= unsigned(v >> (8 * ((s >> (4 * k)) & 7)) & 0xff) << (8 * k);
    return r;
#else
    return __byte_perm(x, y, s);
#endif
}

// Loads and stores of 1 to 16 bytes as the CUDA types the cache-hinted
// intrinsics take: a read-only load (__ldg) and an evict-first store
// (__stcs, the output is not read again).
template <int BYTES> struct Word;
template <> struct Word<1> { using type = unsigned char; };
template <> struct Word<2> { using type = unsigned short; };
template <> struct Word<4> { using type = unsigned int; };
template <> struct Word<8> { using type = unsigned long long; };
template <> struct Word<16> { using type = uint4; };

template <class V>
__device__ inline V load_nc(const V *p) {
    using W = typename Word<sizeof(V)>::type;
    const W w = __ldg(reinterpret_cast<const W *>(p));
    V v;
    memcpy(&v, &w, sizeof(V));
    return v;
}

template <class V>
__device__ inline void store_cs(V *p, const V &v) {
    using W = typename Word<sizeof(V)>::type;
    W w;
    memcpy(&w, &v, sizeof(V));
    __stcs(reinterpret_cast<W *>(p), w);
}

// The entry of the steps of any rank: Impl<T>::run(args) for T of the
// element's size, after the checks; nothing to do for an empty array.
template <template <class> class Impl>
cudaError_t dispatch_nd(const gp_transpose_args *a) {
    const int64_t n = nd_size(*a);
    if (n < 0) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    return by_elem_size<Impl>(*a);
}

}  // namespace transpose
GP_NAMESPACE_END
