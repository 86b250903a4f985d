// Step 9 - nd_tiled: any rank at the speed of a copy, after cuTT.
// Source: Hynninen and Lyakh, "cuTT: A High-Performance Tensor Transpose
// Library for CUDA Compatible GPUs" (arXiv:1705.01598, 2017): plan the
// permutation on the host, then move 2-D tiles between the input's and the
// output's fastest axes through shared memory, the other axes a batch.
//
// What changed from step 8: the work is cut into tiles instead of single
// elements, so that both the reads and the writes come in runs.
//  * The host's plan (python/gpuprims/_transpose.py, transpose_plan) has
//    already dropped size-1 axes and fused the axes that stay adjacent and
//    in order: (0, 3, 1, 2) of (64, 128, 64, 128) arrives as (0, 2, 1) of
//    (64, 8192, 128), a batch of 64 matrix transposes.
//  * Tile mode (the input's fastest axis A moves): a block stages a
//    TILE x TILE tile whose rows run along A (read as runs of the input)
//    and whose columns run along B, the input axis that is the output's
//    fastest (written as runs of the output).  Where A or B is shorter than
//    a tile, the tile's side continues over a second axis (for A the input
//    axis with the next smallest stride, for B the output's second fastest
//    axis): cuTT's answer to small dimensions, so that a reversal of 16^6
//    still moves 64 x 64 tiles, not 16 x 16 ones.  The offsets of the tile's
//    positions along each side are computed once per block into shared
//    memory; the remaining axes are a batch, taken apart once per tile.
//  * The tiles are walked in the output's order (in_output_order; for 1-
//    and 2-byte tiles the batch in groups, grouped), so that the tiles in
//    flight write neighbouring parts of the output, and a tile finds its
//    coordinates by 32-bit divisions done as multiplications
//    (tile_at with Div32 divisors).
//  * Copy mode (A does not move: it is the output's fastest axis too): no
//    tile is needed; every output row of A is a run of the input, and the
//    block copies a few of them, their input offsets computed once.
//  * Vector widths by element size: where A has stride 1, the strides and
//    pointers allow it and the lengths divide, every global access is 16
//    bytes (16 int8, 8 float16, 4 float32, 2 float64 or 1 complex128
//    elements), as in tiled_wide; else one element at a time.
//  * A C-contiguous matrix of 2-, 4- or 8-byte elements (rank 2 after the
//    plan) runs tiled_wide's kernel, tuned for it (step 7).  On an H200
//    (bench-transpose, 2-D) it beats the packed tile below for float16:
//    90-98% of the copy roof against 75-93% at 4000 x 6000 ... 16384^2.
//    For int8 the packed tile wins (87-89% at 8192^2 and 16384^2 against
//    61-64%).
// Why step 8 was slow: a division chain per element, and reads (or writes)
// scattered one element per memory transaction.
// Assumes: the problem of gp_transpose_args, at most ND_MAX_RANK axes;
// blocks of NdTuning::BLOCK threads.
#include <cstdlib>
#include <utility>

#include "nd.cuh"
#include "tiled_wide.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;
using transpose::ND_MAX_RANK;
using transpose::NdTuning;

// One side of a tile: positions f in [0, d1 * d2) of an inner axis (d1
// elements) and an outer one (d2), at input offset (f % d1) * in1 + (f / d1)
// * in2 and output offset (f % d1) * out1 + (f / d1) * out2.  A tile holds P
// positions (P <= TILE; P a multiple of d1 where d2 > 1), `tiles` of them
// cover the side.
struct Side {
    int64_t d1, total, tiles;
    int64_t in1, in2, out1, out2;
    int P;
};

// The axes outside the tile's sides, slowest first.
struct Batch {
    int rank;
    int64_t dim[ND_MAX_RANK], in[ND_MAX_RANK], out[ND_MAX_RANK];

    void push(int64_t d, int64_t i, int64_t o) {  // a new fastest axis (rank < ND_MAX_RANK)
        dim[rank] = d;
        in[rank] = i;
        out[rank++] = o;
    }
};

// A divisor with its multiplier for division by multiplication (Granlund
// and Montgomery, "Division by Invariant Integers using Multiplication",
// PLDI 1994): for every 32-bit n, n / d = (t + ((n - t) >> s1)) >> s2,
// where t is the high half of n * m.  A tile finds its coordinates by a
// division per axis; as 64-bit divisions (a call of some 70 instructions
// each) they cost more issue slots than the tile's loads and stores.
struct Div32 {
    uint32_t d, m;
    int s1, s2;
};

inline Div32 div32_of(int64_t d) {  // 1 <= d < 2^32
    int l = 0;
    while ((uint64_t(1) << l) < uint64_t(d)) ++l;
    Div32 v;
    v.d = uint32_t(d);
    v.m = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << l) - uint64_t(d)) / uint64_t(d) + 1);
    v.s1 = l < 1 ? l : 1;
    v.s2 = l > 1 ? l - 1 : 0;
    return v;
}

__host__ __device__ inline uint32_t div32(uint32_t n, const Div32 &v) {
    const uint32_t t = uint32_t(uint64_t(n) * v.m >> 32);
    return (t + ((n - t) >> v.s1)) >> v.s2;
}

struct TileArgs {
    Side a, b;  // a: along the input's fastest axis; b: along the output's
    Batch batch;
    int64_t blocks;  // a.tiles * b.tiles * batch size
    // Where every tile index and side position fits 32 bits (narrow), the
    // Div32 divisors of tile_at: a.tiles, b.tiles, a.d1, b.d1, batch.dim[j].
    bool narrow;
    Div32 ta, tb, a1, b1, dim[ND_MAX_RANK];
};

// n / d, and n % d into r: by the hardware's 64-bit division, or in 32
// bits by multiplication (Div32).
__device__ inline int64_t split(int64_t n, int64_t d, int64_t &r) {
    const int64_t q = n / d;
    r = n - q * d;
    return q;
}
__device__ inline uint32_t split(uint32_t n, const Div32 &d, uint32_t &r) {
    const uint32_t q = div32(n, d);
    r = n - q * d.d;
    return q;
}

// Tile `id`: the input and output offsets of its first element (ib, ob)
// and its extent along a and b (na, nb).  I, D: int64_t indices and
// divisors, or uint32_t indices and Div32 divisors (ta, tb, a1, b1, dim:
// a.tiles, b.tiles, a.d1, b.d1, batch.dim[j]).
template <class I, class D>
__device__ inline void tile_at(const TileArgs &p, I id, const D &ta, const D &tb, const D &a1, const D &b1,
                               const D *dim, int64_t &ib, int64_t &ob, int &na, int &nb) {
    I fa, fb, la, lb, c;
    I rest = split(id, ta, fa);
    rest = split(rest, tb, fb);
    fa *= I(p.a.P);
    fb *= I(p.b.P);
    const I ha = split(fa, a1, la), hb = split(fb, b1, lb);
    ib = la * p.a.in1 + ha * p.a.in2 + lb * p.b.in1 + hb * p.b.in2;
    ob = la * p.a.out1 + ha * p.a.out2 + lb * p.b.out1 + hb * p.b.out2;
    for (int j = p.batch.rank - 1; j >= 0; --j) {
        rest = split(rest, dim[j], c);
        ib += c * p.batch.in[j];
        ob += c * p.batch.out[j];
    }
    na = int(p.a.total - fa < p.a.P ? p.a.total - fa : p.a.P);
    nb = int(p.b.total - fb < p.b.P ? p.b.total - fb : p.b.P);
}

__device__ inline void tile_of(const TileArgs &p, int64_t id, int64_t &ib, int64_t &ob, int &na, int &nb) {
    if (p.narrow)
        tile_at(p, uint32_t(id), p.ta, p.tb, p.a1, p.b1, p.dim, ib, ob, na, nb);
    else
        tile_at(p, id, p.a.tiles, p.b.tiles, p.a.d1, p.b.d1, p.batch.dim, ib, ob, na, nb);
}

// The offsets of position i < TILE of a tile, relative to the tile's first
// (a tile starts at a multiple of d1 where the side spans two axes, so
// these are the same for every tile): 32-bit divisions, as i < TILE.
template <int TILE>
__device__ inline void side_table(const Side &s, int i, int64_t &in, int64_t &out) {
    const int d = int(s.d1 < TILE ? s.d1 : TILE), lo = i % d, hi = i / d;
    in = lo * s.in1 + hi * s.in2;
    out = lo * s.out1 + hi * s.out2;
}

// VEC consecutive elements as one access of VEC * sizeof(T) bytes (<= 16).
template <class T, int VEC>
struct alignas(VEC * sizeof(T)) Pack {
    T e[VEC];
};

template <class T, int VEC, int TILE, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
transpose_nd_tiled(const T *__restrict__ in, T *__restrict__ out, TileArgs p) {
    constexpr int VR = TILE / VEC;                   // vectors per tile row
    constexpr int PASSES = TILE * VR / BLOCK;        // vectors per thread
    static_assert(TILE % VEC == 0 && (TILE * VR) % BLOCK == 0, "whole passes over the tile");
    using V = Pack<T, VEC>;
    __shared__ T tile[TILE][TILE + 1];                // [position along b][position along a]
    __shared__ int64_t a_in[TILE], a_out[TILE], b_in[TILE], b_out[TILE];

    for (int i = threadIdx.x; i < TILE; i += BLOCK) {  // the positions' offsets within a tile
        side_table<TILE>(p.a, i, a_in[i], a_out[i]);
        side_table<TILE>(p.b, i, b_in[i], b_out[i]);
    }
    __syncthreads();

    for (int64_t id = blockIdx.x; id < p.blocks; id += gridDim.x) {
        int64_t ib, ob;
        int na, nb;
        tile_of(p, id, ib, ob, na, nb);

        V v[PASSES];
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {  // input runs along a -> registers
            const int i = threadIdx.x + k * BLOCK, r = i / VR, c = i % VR * VEC;
            if (r < nb && c < na) {
                v[k] = transpose::load_nc(reinterpret_cast<const V *>(in + ib + b_in[r] + a_in[c]));
            }
        }
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {  // registers -> tile
            const int i = threadIdx.x + k * BLOCK, r = i / VR, c = i % VR * VEC;
            if (r < nb && c < na) {
#pragma unroll
                for (int q = 0; q < VEC; ++q) tile[r][c + q] = v[k].e[q];
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < PASSES; ++k) {  // tile column -> output run along b
            const int i = threadIdx.x + k * BLOCK, r = i / VR, c = i % VR * VEC;
            if (r < na && c < nb) {
                V w;
#pragma unroll
                for (int q = 0; q < VEC; ++q) w.e[q] = tile[c + q][r];
                transpose::store_cs(reinterpret_cast<V *>(out + ob + a_out[r] + b_out[c]), w);
            }
        }
        __syncthreads();  // the tile is read before the next one overwrites it
    }
}

// The tile for 1- and 2-byte elements.  Moving them one at a time through
// shared memory costs a shared-memory instruction per element each way
// (16 a thread for 16 bytes of int8) and the transpose above could not
// keep up with the memory.  Here a thread loads P = 4 / sizeof(T) input
// rows x 16 bytes (a 4 x 16 block of int8), transposes each P x P block
// of elements in registers (byte permutes), so that every 32-bit word
// holds P consecutive elements of one output row, and stores those words
// into the staged tile: 16 word stores and 4 16-byte loads of shared
// memory for 64 bytes, instead of 64 and 64.  The staged tile is in
// output order (a row per position along a, TB * sizeof(T) = 128 bytes),
// read back as 16-byte vectors for the output runs.  The 8 lanes of a
// quarter warp take 8 consecutive a-vectors of the same P input rows, so
// that every load instruction of a warp reads 4 input rows x 128 bytes,
// whole cache lines; the lanes' 4 b-groups x 8 a-vectors then store words
// of 8 staged rows, and the word column of a-vector j is XORed with 4 * (j
// % 8), so that those 32 stores hit 32 different banks (the output reads
// undo the XOR on 16-byte groups).
template <class T, class Tn = transpose::PackedTuning<T>>
__global__ void __launch_bounds__(Tn::BLOCK)
transpose_nd_packed(const T *__restrict__ in, T *__restrict__ out, TileArgs p) {
    constexpr int BLOCK = Tn::BLOCK, P = Tn::P, VEC = Tn::VEC, TA = Tn::TA, TB = Tn::TB, W = Tn::W;
    constexpr int GB = TB / P, UNITS = Tn::UNITS;  // b-groups of P rows; blocks of P x VEC a thread
    constexpr int CHUNKS = TA * (W / 4) / BLOCK;  // 16-byte output vectors per thread
    static_assert(GB % 4 == 0 && (TA / VEC) % 8 == 0 && W % 32 == 0 && (TA * (W / 4)) % BLOCK == 0 &&
                  (GB * (TA / VEC)) % BLOCK == 0, "tile shape");
    __shared__ uint4 staged[TA * W / 4];  // [a][16-byte group of b], groups swizzled
    __shared__ int64_t a_in[TA], a_out[TA], b_in[TB], b_out[TB];
    unsigned *words = reinterpret_cast<unsigned *>(staged);

    for (int i = threadIdx.x; i < TA; i += BLOCK) side_table<TA>(p.a, i, a_in[i], a_out[i]);
    for (int i = threadIdx.x; i < TB; i += BLOCK) side_table<TB>(p.b, i, b_in[i], b_out[i]);
    __syncthreads();

    for (int64_t id = blockIdx.x; id < p.blocks; id += gridDim.x) {
        int64_t ib, ob;
        int na, nb;
        tile_of(p, id, ib, ob, na, nb);

        uint4 v[UNITS][P];
#pragma unroll
        for (int k = 0; k < UNITS; ++k) {  // P input rows x 16 bytes -> registers
            const int u = threadIdx.x + k * BLOCK, lane = u % 32, wi = u / 32;
            const int g = lane / 8 + 4 * (wi % (GB / 4)), j = lane % 8 + 8 * (wi / (GB / 4));
            const int b = g * P, a = j * VEC;
            if (b < nb && a < na) {
#pragma unroll
                for (int t = 0; t < P; ++t)
                    v[k][t] = transpose::load_nc(reinterpret_cast<const uint4 *>(in + ib + b_in[b + t] + a_in[a]));
            }
        }
#pragma unroll
        for (int k = 0; k < UNITS; ++k) {  // P x P blocks transposed -> staged words
            const int u = threadIdx.x + k * BLOCK, lane = u % 32, wi = u / 32;
            const int g = lane / 8 + 4 * (wi % (GB / 4)), j = lane % 8 + 8 * (wi / (GB / 4));
            const int b = g * P, a = j * VEC, col = g ^ ((j & 7) << 2);
            if (b < nb && a < na) {
                unsigned r[P][4];
#pragma unroll
                for (int t = 0; t < P; ++t) memcpy(r[t], &v[k][t], 16);
#pragma unroll
                for (int q = 0; q < 4; ++q) {  // word q of each row: elements a + q*P ... + P-1
                    unsigned o[P];
                    if constexpr (P == 4) {  // 4 x 4 bytes: rows r[0..3][q] -> columns o[0..3]
                        const unsigned t0 = transpose::byte_perm(r[0][q], r[1][q], 0x5140);
                        const unsigned t1 = transpose::byte_perm(r[0][q], r[1][q], 0x7362);
                        const unsigned t2 = transpose::byte_perm(r[2][q], r[3][q], 0x5140);
                        const unsigned t3 = transpose::byte_perm(r[2][q], r[3][q], 0x7362);
                        o[0] = transpose::byte_perm(t0, t2, 0x5410);
                        o[1] = transpose::byte_perm(t0, t2, 0x7632);
                        o[2] = transpose::byte_perm(t1, t3, 0x5410);
                        o[3] = transpose::byte_perm(t1, t3, 0x7632);
                    } else {  // 2 x 2 halves
                        o[0] = transpose::byte_perm(r[0][q], r[1][q], 0x5410);
                        o[1] = transpose::byte_perm(r[0][q], r[1][q], 0x7632);
                    }
#pragma unroll
                    for (int i = 0; i < P; ++i) words[(a + q * P + i) * W + col] = o[i];
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < CHUNKS; ++k) {  // staged rows -> output runs along b, 16 bytes a lane
            const int c = threadIdx.x + k * BLOCK, a = c / (W / 4), G = c % (W / 4), b = G * VEC;
            if (a < na && b < nb)
                transpose::store_cs(reinterpret_cast<uint4 *>(out + ob + a_out[a] + b_out[b]),
                                    staged[a * (W / 4) + (G ^ (a / VEC & 7))]);
        }
        __syncthreads();  // the tile is read before the next one overwrites it
    }
}

// Copy mode: `rows` output rows of L elements each, row r of the output at
// out + r * L, its elements in + row_in(r) + i * s; the rows' axes (the
// output's axes but the last), slowest first, in `batch`.  A block copies
// R rows x C vectors.
struct CopyArgs {
    int64_t L, s, rows, vpr;  // vpr: vectors per row
    int64_t C, R, col_chunks, blocks;
    Batch batch;
};

template <class T, int VEC, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK)
transpose_nd_copy(const T *__restrict__ in, T *__restrict__ out, CopyArgs p) {
    using V = Pack<T, VEC>;
    __shared__ int64_t row_in[BLOCK * ITEMS];  // input offset of each row of the block
    for (int64_t id = blockIdx.x; id < p.blocks; id += gridDim.x) {
        const int64_t c0 = id % p.col_chunks * p.C, r0 = id / p.col_chunks * p.R;
        const int nr = int(p.rows - r0 < p.R ? p.rows - r0 : p.R);
        const int nc = int(p.vpr - c0 < p.C ? p.vpr - c0 : p.C);
        for (int t = threadIdx.x; t < nr; t += BLOCK) {
            int64_t rest = r0 + t, off = 0;
            for (int j = p.batch.rank - 1; j >= 0; --j) {
                off += rest % p.batch.dim[j] * p.batch.in[j];
                rest /= p.batch.dim[j];
            }
            row_in[t] = off;
        }
        __syncthreads();
        V v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {  // every load in flight before the first store
            const int i = threadIdx.x + k * BLOCK;
            if (i < nr * nc) {
                const int r = i / nc, c = i % nc;
                v[k] = transpose::load_nc(reinterpret_cast<const V *>(in + row_in[r] + (c0 + c) * VEC * p.s));
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int i = threadIdx.x + k * BLOCK;
            if (i < nr * nc) {
                const int r = i / nc, c = i % nc;
                transpose::store_cs(reinterpret_cast<V *>(out + (r0 + r) * p.L + (c0 + c) * VEC), v[k]);
            }
        }
        __syncthreads();  // row_in is read before the next rows overwrite it
    }
}

// ------------------------------------------------------------ the host

constexpr int64_t MAX_BLOCKS = int64_t(1) << 30;

inline bool aligned(const void *p, int bytes) { return reinterpret_cast<uintptr_t>(p) % unsigned(bytes) == 0; }

template <class T>
struct NdTiled {
    using Tn = NdTuning<T>;
    static constexpr int VEC = 16 / sizeof(T);

    static cudaError_t run(const gp_transpose_args &a) {
        // tiled_wide's kernel for a C-contiguous matrix of 2-, 4- or 8-byte elements
        if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)
            if (a.rank == 2 && a.rows >= 0) return Wide<T>::run(a);
        const int r = a.rank;
        if (r == 0) return copy_mode(a, -1);
        // A: the input's fastest axis (smallest nonzero |stride|, the last on
        // ties; a broadcast axis, stride 0, only where every axis is one)
        int A = r - 1;
        for (int k = r - 1; k >= 0; --k)
            if (rank_of_stride(a.strides[k]) < rank_of_stride(a.strides[A])) A = k;
        const int B = a.perm[r - 1];
        if (A == B) return copy_mode(a, A);
        return tile_mode(a, A, B);
    }

    static int64_t mag(int64_t s) { return s < 0 ? -s : s; }
    static uint64_t rank_of_stride(int64_t s) { return s == 0 ? UINT64_MAX : uint64_t(mag(s)); }

    // Output strides of the input's axes.
    static void out_strides(const gp_transpose_args &a, int64_t *os) {
        int64_t step = 1;
        for (int j = a.rank - 1; j >= 0; --j) {
            os[a.perm[j]] = step;
            step *= a.shape[a.perm[j]];
        }
    }

    static cudaError_t tile_mode(const gp_transpose_args &a, int A, int B) {
        // 16-byte accesses: A of stride 1 and both sides' first axes whole
        // vectors long; every other stride and both pointers on vectors
        bool vec = VEC > 1 && a.strides[A] == 1 && a.shape[A] % VEC == 0 && a.shape[B] % VEC == 0 &&
                   aligned(a.in, 16) && aligned(a.out, 16);
        for (int k = 0; k < a.rank && vec; ++k)
            if (k != A && a.strides[k] % VEC != 0) vec = false;
        if constexpr (sizeof(T) <= 2) {
            using Pk = transpose::PackedTuning<T>;
            using PkN = transpose::PackedTuning<T, true>;
            if (vec && a.rank > 2 && PkN::TA != Pk::TA) {
                // the longer side where it lies along one axis, or covers
                // the whole of A and of A's continuation, which follows A in
                // the input (PackedTuning says why)
                const TileArgs t = plan_tile(a, A, B, PkN::TA, PkN::TB);
                if (t.a.in2 == 0 || (t.a.in2 == t.a.d1 * t.a.in1 && t.a.tiles == 1)) return launch_packed<PkN>(a, t);
            }
            if (vec) return launch_packed<Pk>(a, plan_tile(a, A, B, Pk::TA, Pk::TB));
        } else if constexpr (VEC > 1) {
            if (vec) return launch_tile<VEC, Tn::TILE>(a, plan_tile(a, A, B, Tn::TILE, Tn::TILE));
        }
        return launch_tile<1, 32>(a, plan_tile(a, A, B, 32, 32));  // one element at a time
    }

    // The tile's sides for tiles of tile_a x tile_b elements, and the batch.
    static TileArgs plan_tile(const gp_transpose_args &a, int A, int B, int tile_a, int tile_b) {
        const int r = a.rank;
        int64_t os[ND_MAX_RANK];
        out_strides(a, os);
        // B's second axis: the output's second fastest, where B is shorter
        // than a tile; A's: the input axis with the next smallest stride.
        int B2 = -1, A2 = -1;
        if (a.shape[B] < tile_b && r > 2 && a.perm[r - 2] != A) B2 = a.perm[r - 2];
        if (a.shape[A] < tile_a)
            for (int k = r - 1; k >= 0; --k)
                if (k != A && k != B && k != B2 && (A2 < 0 || rank_of_stride(a.strides[k]) < rank_of_stride(a.strides[A2]))) A2 = k;
        TileArgs t{};
        make_side(a, os, A, A2, tile_a, t.a);
        make_side(a, os, B, B2, tile_b, t.b);
        int64_t batch = 1;
        for (int j = 0; j < r; ++j) {  // the other axes, in output order
            const int k = a.perm[j];
            if (k == A || k == A2 || k == B || k == B2) continue;
            t.batch.dim[t.batch.rank] = a.shape[k];
            t.batch.in[t.batch.rank] = a.strides[k];
            t.batch.out[t.batch.rank++] = os[k];
            batch *= a.shape[k];
        }
        t.blocks = t.a.tiles * t.b.tiles * batch;
        return in_output_order(t);
    }

    // The tiles walked in the output's order.  Where both sides lie along
    // one axis in whole tiles, their tile indices join the batch as two
    // more axes (P positions of A, of B), and the batch is ordered by output
    // stride, the smallest fastest: the tiles in flight then write
    // neighbouring parts of the output, as a copy would.  (Otherwise the
    // tiles along A come fastest, whose output lies far apart: for (2, 1,
    // 0) of an int8 (1024, 512, 512) 128 MiB.)  Evidence: bench/tune_nd.cu
    // run 10 (H200, % of the copy roof): int8 (2, 1, 0) 82.2 -> 85.4, int8
    // 16384^2 85.6 -> 90.6, float32 (2, 1, 0) 88.5 -> 90.3, float64 (2, 1,
    // 0) 93.2 -> 95.5; the (0, 2, 1) cases within 0.6 either way.
    static TileArgs in_output_order(TileArgs t) {
        if (t.a.total != t.a.d1 || t.b.total != t.b.d1 || t.a.total % t.a.P != 0 || t.b.total % t.b.P != 0 ||
            t.batch.rank + 2 > ND_MAX_RANK)
            return t;
        Batch &n = t.batch;
        const auto add = [&n](int64_t d, int64_t in, int64_t out) {
            if (d < 2) return;
            n.push(d, in, out);  // then moved before the first axis of a smaller output stride
            for (int k = n.rank - 1; k > 0 && mag(n.out[k - 1]) < mag(n.out[k]); --k) {
                std::swap(n.dim[k], n.dim[k - 1]);
                std::swap(n.in[k], n.in[k - 1]);
                std::swap(n.out[k], n.out[k - 1]);
            }
        };
        add(t.a.tiles, t.a.P * t.a.in1, t.a.P * t.a.out1);
        add(t.b.tiles, t.b.P * t.b.in1, t.b.P * t.b.out1);
        t.a.tiles = t.b.tiles = 1;
        t.a.total = t.a.P;
        t.b.total = t.b.P;
        return t;
    }

    // t with the Div32 divisors of tile_at's 32-bit path, where its indices
    // fit 32 bits (the launchers' last step).  A test hook:
    // GPUPRIMS_TEST_WIDE_INDEX (set, not empty) sends every plan through
    // tile_at's 64-bit path, which real problems take only
    // past 2^32 tiles or side positions.
    static TileArgs narrowed(TileArgs t) {
        constexpr int64_t LIMIT = int64_t(1) << 32;
        const char *wide = getenv("GPUPRIMS_TEST_WIDE_INDEX");
        t.narrow = t.blocks < LIMIT && t.a.total < LIMIT && t.b.total < LIMIT && (wide == nullptr || *wide == '\0');
        if (!t.narrow) return t;
        t.ta = div32_of(t.a.tiles);
        t.tb = div32_of(t.b.tiles);
        t.a1 = div32_of(t.a.d1);
        t.b1 = div32_of(t.b.d1);
        for (int j = 0; j < t.batch.rank; ++j) t.dim[j] = div32_of(t.batch.dim[j]);
        return t;
    }

    // A side over axis k1 and, where k1 is shorter than a tile, as much of
    // axis k2 (-1: none) as fills it.
    static void make_side(const gp_transpose_args &a, const int64_t *os, int k1, int k2, int tile, Side &s) {
        s.d1 = a.shape[k1];
        s.in1 = a.strides[k1];
        s.out1 = os[k1];
        if (s.d1 >= tile || k2 < 0) {
            s.total = s.d1;
            s.P = int(s.d1 < tile ? s.d1 : tile);
            s.in2 = s.out2 = 0;
        } else {
            const int64_t d2 = a.shape[k2], m = tile / s.d1 < d2 ? tile / s.d1 : d2;
            s.total = s.d1 * d2;
            s.P = int(m * s.d1);
            s.in2 = a.strides[k2];
            s.out2 = os[k2];
        }
        s.tiles = ceil_div<int64_t>(s.total, s.P);
    }

    template <int V, int TILE>
    static cudaError_t launch_tile(const gp_transpose_args &a, const TileArgs &plan) {
        const TileArgs t = narrowed(plan);
        const int64_t grid = t.blocks < MAX_BLOCKS ? t.blocks : MAX_BLOCKS;
        GP_LAUNCH((transpose_nd_tiled<T, V, TILE, Tn::BLOCK>), unsigned(grid), Tn::BLOCK, 0, a.stream,
                  static_cast<const T *>(a.in), static_cast<T *>(a.out), t);
        return cudaSuccess;
    }

    // The packed tile, its batch walked in groups of 8 x 8 (grouped).
    template <class Pk>
    static cudaError_t launch_packed(const gp_transpose_args &a, const TileArgs &plan) {
        const TileArgs t = narrowed(grouped(plan, 8));
        const int64_t grid = t.blocks < MAX_BLOCKS ? t.blocks : MAX_BLOCKS;
        GP_LAUNCH((transpose_nd_packed<T, Pk>), unsigned(grid), Pk::BLOCK, 0, a.stream,
                  static_cast<const T *>(a.in), static_cast<T *>(a.out), t);
        return cudaSuccess;
    }

    // The batch walked in groups: X, the batch axis of the smallest input
    // stride, and Y, the one of the smallest output stride, are each split
    // in two (hi, lo; lo = g positions, or the largest power of two below g
    // that divides the axis), and the order becomes [the other axes, Y hi,
    // X hi, Y lo, X lo] (slowest first).  Blocks start in index order, so
    // those in flight then cover g x g neighbours of both: runs of g tiles
    // in the input and in the output, where the plain order (the output's
    // axes, its fastest last) gives the output long runs and the input
    // short ones.  As tiled_wide's GROUP, for the batch.  Evidence:
    // bench/tune_nd.cu (H200, % of the copy roof): int8 at 2^28 elements,
    // (3, 2, 1, 0) of 128^4 in 128 x 128 tiles 81.8 -> 85.7, the rank-6
    // reversal in 256 x 128 tiles 84.6 -> 85.6; float16 reversals at 2^26
    // 84.7 -> 86.4 and 82.4 -> 84.4.  The float32 and float64 tiles
    // lose by it (86.9 -> 84.4, 84.7 -> 81.5 on reversals) and keep the
    // plain order.
    static TileArgs grouped(const TileArgs &t, int g) {
        const Batch &b = t.batch;
        int X = -1, Y = -1;
        for (int k = 0; k < b.rank; ++k) {
            if (X < 0 || mag(b.in[k]) < mag(b.in[X])) X = k;
            if (Y < 0 || mag(b.out[k]) < mag(b.out[Y])) Y = k;
        }
        if (X == Y || b.rank + 2 > ND_MAX_RANK) return t;
        int gx = g, gy = g;
        while (b.dim[X] % gx) gx /= 2;
        while (b.dim[Y] % gy) gy /= 2;
        if (gx == 1 || gy == 1 || (gx == b.dim[X] && gy == b.dim[Y])) return t;
        TileArgs r = t;
        Batch &n = r.batch;
        n.rank = 0;
        for (int k = 0; k < b.rank; ++k)
            if (k != X && k != Y) n.push(b.dim[k], b.in[k], b.out[k]);
        n.push(b.dim[Y] / gy, b.in[Y] * gy, b.out[Y] * gy);
        n.push(b.dim[X] / gx, b.in[X] * gx, b.out[X] * gx);
        n.push(gy, b.in[Y], b.out[Y]);
        n.push(gx, b.in[X], b.out[X]);
        return r;
    }

    // Axis A (-1: a 0-d problem, one element) keeps its place: rows of A.
    static cudaError_t copy_mode(const gp_transpose_args &a, int A) {
        CopyArgs c{};
        c.L = A < 0 ? 1 : a.shape[A];
        c.s = A < 0 ? 1 : a.strides[A];
        c.rows = 1;
        for (int j = 0; j + 1 < a.rank; ++j) {  // the output's axes but the last
            const int k = a.perm[j];
            c.batch.dim[c.batch.rank] = a.shape[k];
            c.batch.in[c.batch.rank++] = a.strides[k];
            c.rows *= a.shape[k];
        }
        bool vec = VEC > 1 && c.s == 1 && c.L % VEC == 0 && aligned(a.in, 16) && aligned(a.out, 16);
        for (int j = 0; j < c.batch.rank && vec; ++j)
            if (c.batch.in[j] % VEC != 0) vec = false;
        if constexpr (VEC > 1)
            if (vec) return launch_copy<VEC>(a, c);
        return launch_copy<1>(a, c);
    }

    template <int V>
    static cudaError_t launch_copy(const gp_transpose_args &a, CopyArgs c) {
        constexpr int SLOTS = Tn::COPY_BLOCK * Tn::COPY_ITEMS;
        c.vpr = c.L / V;
        c.C = c.vpr < SLOTS ? c.vpr : SLOTS;
        c.R = SLOTS / c.C;
        c.col_chunks = ceil_div<int64_t>(c.vpr, c.C);
        c.blocks = c.col_chunks * ceil_div<int64_t>(c.rows, c.R);
        const int64_t grid = c.blocks < MAX_BLOCKS ? c.blocks : MAX_BLOCKS;
        GP_LAUNCH((transpose_nd_copy<T, V, Tn::COPY_BLOCK, Tn::COPY_ITEMS>), unsigned(grid), Tn::COPY_BLOCK, 0,
                  a.stream, static_cast<const T *>(a.in), static_cast<T *>(a.out), c);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_transpose_nd_tiled(const gp_transpose_args *a) {
    return transpose::dispatch_nd<NdTiled>(a);
}

// The tile kernel as it runs for 4-byte elements (float32), for gpuprims.occupancy.
GP_KERNEL_OF(gp_transpose_nd_tiled_kernel,
             transpose_nd_tiled<uint32_t, 4, NdTuning<uint32_t>::TILE, NdTuning<uint32_t>::BLOCK>)
GP_NAMESPACE_END
