// reproducible.cuh - the reproducible (determinism="gpu_to_gpu") scans of
// steps 13 and 14: prefix sums whose every element is the reproducible sum
// of its prefix (../rfa.cuh), and their launchers.  A float sum takes this
// path; every other combination (integer sums, min, max: exact in any
// order) runs the kernels of steps 5 and 12.
//
// What an element is.  Element i of the inclusive scan is the rounding of
// the accumulator state of x[0..i] (element i of the exclusive scan: of
// x[0..i-1], +0.0 for i = 0): a state's rounded value depends on the
// multiset of its inputs alone (rfa.cuh, "WHICH BINS"), so every element
// has the bits of gpuprims.sum(x[:i+1], determinism="gpu_to_gpu"), on every
// GPU, tile shape, grid and chunking.  So the scan is a scan of states
// under the exact merge (associative: any tree gives the same value), each
// prefix state rounded once.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "scan.cuh"
#include "segmented.cuh"
#include "../rfa.cuh"  // after common.cuh: in the build's namespace
#include "../async_copy.cuh"

GP_NAMESPACE_BEGIN
namespace scanrep {

template <class Acc>
using State = rfa::State<Acc>;

// A test hook: GPUPRIMS_TEST_GRID=<blocks> overrides the grid of every
// reproducible kernel, so tests can check that the bits do not depend on it.
inline int64_t test_grid(int64_t grid) {
    const char *s = getenv("GPUPRIMS_TEST_GRID");
    if (s == nullptr || *s == '\0') return grid;
    const long long g = atoll(s);
    return g >= 1 ? int64_t(g) : grid;
}

// Whether a call is a float sum (what steps 13 and 14 make reproducible).
inline bool float_sum(const gp_scan_args &a) {
    return a.op == GP_SUM && (a.acc_t == GP_FLOAT32 || a.acc_t == GP_FLOAT64);
}

// ------------------------------------------------------- states in a warp
// A state through a warp shuffle: `shfl` is the shuffle (up, xor or from a
// lane) applied to each of the state's words.
template <class Acc, class Shfl>
__device__ inline State<Acc> shfl_state(const State<Acc> &s, Shfl shfl) {
    State<Acc> r;
    r.index = shfl(s.index);
    r.flags = shfl(s.flags);
#pragma unroll
    for (int k = 0; k < State<Acc>::K; ++k) r.bin[k] = int64_t(shfl((long long)s.bin[k]));
    return r;
}
template <class Acc>
__device__ inline State<Acc> shfl_up_state(const State<Acc> &s, int delta) {
    return shfl_state(s, [delta](auto v) { return __shfl_up_sync(FULL_MASK, v, delta); });
}
template <class Acc>
__device__ inline State<Acc> shfl_xor_state(const State<Acc> &s, int mask) {
    return shfl_state(s, [mask](auto v) { return __shfl_xor_sync(FULL_MASK, v, mask); });
}
template <class Acc>
__device__ inline State<Acc> shfl_from_state(const State<Acc> &s, int src) {
    return shfl_state(s, [src](auto v) { return __shfl_sync(FULL_MASK, v, src); });
}
// Inclusive scan of the lanes' states (Hillis-Steele over the warp).
template <class Acc>
__device__ inline State<Acc> warp_inclusive(State<Acc> s, int lane) {
#pragma unroll
    for (int d = 1; d < WARP; d <<= 1) {
        const State<Acc> y = shfl_up_state(s, d);
        if (lane >= d) s = rfa::Rfa<Acc>::merge(y, s);
    }
    return s;
}
// Every lane gets the merge of all lanes' states (a butterfly).
template <class Acc>
__device__ inline State<Acc> warp_all(State<Acc> s) {
#pragma unroll
    for (int m = 1; m < WARP; m <<= 1) s = rfa::Rfa<Acc>::merge(s, shfl_xor_state(s, m));
    return s;
}

// The deposits of a thread's items (the batch checked against the
// accumulator's limit once; a batch with a new largest magnitude, Inf or
// NaN goes value by value).
template <int ITEMS, class Acc>
__device__ inline void add_items(rfa::Acc<Acc> &a, const Acc (&x)[ITEMS]) {
    bool ok = true;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) ok &= rfa::abs_of(x[k]) <= a.lim;
    if (ok) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) a.deposit(x[k]);
        a.counted(ITEMS, ITEMS);
    } else {
        // one add a trip, x[k] picked out by selects: an index into x
        // itself would put x in local memory, and every step's loads with it
#pragma unroll 1
        for (int k = 0; k < ITEMS; ++k) {
            Acc v = x[0];
#pragma unroll
            for (int j = 1; j < ITEMS; ++j) v = j == k ? x[j] : v;
            a.add(v);
        }
    }
}

// ------------------------------------------------ the tile status of 1-D
// Per tile: a status word (0: nothing yet; 1: the tile's own state, its
// aggregate; 2: its inclusive prefix) and the two 32-byte states.  A state
// is stored, __threadfence(), then its status; a reader reads the status
// with acquire semantics (poll), then the state past L1.  Each lane orders
// only its own loads, so no fence of the whole warp waits between the
// statuses and the states.
template <class Acc>
struct TileStates {
    unsigned *status;
    State<Acc> *agg, *inc;
    static size_t zeroed_bytes(int64_t tiles) { return align_up(size_t(tiles) * sizeof(unsigned)); }
    static size_t bytes(int64_t tiles) { return zeroed_bytes(tiles) + 2 * size_t(tiles) * sizeof(State<Acc>); }
    TileStates(char *p, int64_t tiles)
        : status(reinterpret_cast<unsigned *>(p)),
          agg(reinterpret_cast<State<Acc> *>(p + zeroed_bytes(tiles))), inc(agg + tiles) {}

    __device__ static void store(State<Acc> *dst, const State<Acc> &s) {
        uint4 w[2];
        memcpy(w, &s, sizeof w);
        __stcg(reinterpret_cast<uint4 *>(dst), w[0]);
        __stcg(reinterpret_cast<uint4 *>(dst) + 1, w[1]);
    }
    __device__ static State<Acc> load(const State<Acc> *src) {
        uint4 w[2];
        w[0] = __ldcg(reinterpret_cast<const uint4 *>(src));
        w[1] = __ldcg(reinterpret_cast<const uint4 *>(src) + 1);
        State<Acc> s;
        memcpy(&s, w, sizeof w);
        return s;
    }
    __device__ void publish(int64_t t, const State<Acc> &s, unsigned what) const {
        store(what == 2 ? inc + t : agg + t, s);
        __threadfence();
        reinterpret_cast<volatile unsigned *>(status)[t] = what;
    }
    // tile t's status; the loads after it see the state stored before it
    __device__ unsigned poll(int64_t t) const {
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
        unsigned v;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(status + t) : "memory");
        return v;
#else
        const unsigned v = reinterpret_cast<volatile unsigned *>(status)[t];
        __threadfence();
        return v;
#endif
    }
};

// The prefix of tile t > 0 (the whole warp calls it, after the tile's
// aggregate is out): lane l looks at tile t-1-l, the warp waits until the
// 32 tiles have published something, merges the states up to the nearest
// inclusive prefix (lanes past it give the identity), and steps back 32
// tiles while no inclusive prefix was among them - Merrill and Garland's
// look-back.  Which tiles it happens to combine varies from run to run;
// the value of the merge does not (exact integer additions), so neither
// do the bits.
template <class Acc>
__device__ inline State<Acc> look_back(const TileStates<Acc> &ts, int64_t t, int lane) {
    State<Acc> run = rfa::Rfa<Acc>::identity();
    for (int64_t last = t - 1;; last -= WARP) {
        const int64_t p = last - lane;
        unsigned f = p >= 0 ? ts.poll(p) : 2u;
        while (!__all_sync(FULL_MASK, f != 0u)) {
            lookback::spin_pause<20>();
            if (f == 0u) f = ts.poll(p);
        }
        State<Acc> v = rfa::Rfa<Acc>::identity();
        const unsigned incl = __ballot_sync(FULL_MASK, f == 2u);
        const int stop = incl ? __ffs(int(incl)) - 1 : WARP - 1;
        if (lane <= stop && p >= 0) v = TileStates<Acc>::load(f == 2u ? ts.inc + p : ts.agg + p);
        // the nearest tile had its inclusive prefix: lane 0's state is all there is
        run = rfa::Rfa<Acc>::merge(run, stop == 0 ? shfl_from_state(v, 0) : warp_all(v));
        if (incl) return run;
    }
}

// The two halves of the chaining of tile t (agg: the tile's own state).
// tile_before (the whole warp): the state of everything before the tile -
// carry_in, or the identity, for the first tile; else the look-back, after
// the tile's aggregate is published.  publish_inclusive (one thread): the
// tile's inclusive state (inc = before (+) agg) for the tiles after it, and
// into carry_out for the last tile.
template <class Acc>
__device__ inline State<Acc> tile_before(const TileStates<Acc> &ts, int64_t t, int lane, const State<Acc> &agg,
                                         const State<Acc> *carry_in) {
    if (t == 0) return carry_in != nullptr ? *carry_in : rfa::Rfa<Acc>::identity();
    if (lane == 0) ts.publish(t, agg, 1u);
    return look_back(ts, t, lane);
}
template <class Acc>
__device__ inline void publish_inclusive(const TileStates<Acc> &ts, int64_t t, int64_t tiles, const State<Acc> &inc,
                                         State<Acc> *carry_out) {
    ts.publish(t, inc, 2u);
    if (carry_out != nullptr && t == tiles - 1) *carry_out = inc;
}
// Both, by warp 0: returns the state before tile t.
template <class Acc>
__device__ inline State<Acc> tile_prefix(const TileStates<Acc> &ts, int64_t t, int64_t tiles, int lane,
                                         const State<Acc> &agg, const State<Acc> *carry_in,
                                         State<Acc> *carry_out) {
    const State<Acc> prefix = tile_before(ts, t, lane, agg, carry_in);
    if (lane == 0) publish_inclusive(ts, t, tiles, rfa::Rfa<Acc>::merge(prefix, agg), carry_out);
    return prefix;
}

// ----------------------------------------------- the fast path's integers
// Where every element a warp scans has the same top bin J - the state
// before the warp already holds a magnitude at least as large as any of the
// warp's, and no Inf or NaN is about - the state of each of its elements is
// the state before the warp plus deposits at J, and its exact value is
// N u_m (m = J - K + 1, u_m the lowest kept quantum) for an integer N: the
// counts of the bins before, bin[0] 2^(2W) + bin[1] 2^W + bin[2], plus one
// term D(x) = RNE_m(x) / u_m for each element (rfa.cuh, "WHICH BINS": the
// kept part of a deposit at J is x rounded to a multiple of u_m, ties to
// even).  So an element costs one conversion of x to D, one 128-bit
// addition and one rounding of N u_m to T - the rounding of the value that
// Rfa::convert rounds, so the same bits.  |N| < 2^117 (rfa.cuh, "LIMITS").
using I128 = __int128;
using U128 = unsigned __int128;

template <class T> __device__ inline int64_t round_to_ll(T v);  // to nearest, ties to even
template <> __device__ inline int64_t round_to_ll<float>(float v) {
#ifdef __CUDA_ARCH__
    return __float2ll_rn(v);
#else
    return llrintf(v);  // the default rounding mode: to nearest even
#endif
}
template <> __device__ inline int64_t round_to_ll<double>(double v) {
#ifdef __CUDA_ARCH__
    return __double2ll_rn(v);
#else
    return llrint(v);
#endif
}
template <class T> __device__ inline T from_ll(long long v);  // rounded to nearest even
template <class T> __device__ inline T from_ull(unsigned long long v);
#ifdef __CUDA_ARCH__
template <> __device__ inline float from_ll<float>(long long v) { return __ll2float_rn(v); }
template <> __device__ inline double from_ll<double>(long long v) { return __ll2double_rn(v); }
template <> __device__ inline float from_ull<float>(unsigned long long v) { return __ull2float_rn(v); }
template <> __device__ inline double from_ull<double>(unsigned long long v) { return __ull2double_rn(v); }
#else
template <> __device__ inline float from_ll<float>(long long v) { return float(v); }
template <> __device__ inline double from_ll<double>(long long v) { return double(v); }
template <> __device__ inline float from_ull<float>(unsigned long long v) { return float(v); }
template <> __device__ inline double from_ull<double>(unsigned long long v) { return double(v); }
#endif

// The largest value over the warp / the OR of the lanes' values: one
// redux instruction from sm_80 on; before, and on the emulator, a butterfly
// of shuffles.
template <class V, class Op>
__device__ inline V warp_butterfly(V v, Op op) {
#pragma unroll
    for (int m = 1; m < WARP; m <<= 1) v = op(v, __shfl_xor_sync(FULL_MASK, v, m));
    return v;
}
__device__ inline int warp_max(int v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_max_sync(FULL_MASK, v);
#else
    return warp_butterfly(v, [](int a, int b) { return a > b ? a : b; });
#endif
}
__device__ inline unsigned warp_or(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_or_sync(FULL_MASK, v);
#else
    return warp_butterfly(v, [](unsigned a, unsigned b) { return a | b; });
#endif
}

// A 128-bit integer through warp shuffles (two 64-bit halves).
__device__ inline I128 shfl_up_i128(I128 v, int d) {
    const long long lo = __shfl_up_sync(FULL_MASK, (long long)(uint64_t(U128(v))), d);
    const long long hi = __shfl_up_sync(FULL_MASK, (long long)(v >> 64), d);
    return I128(U128(uint64_t(lo)) | (U128(uint64_t(hi)) << 64));
}
__device__ inline I128 shfl_i128(I128 v, int src) {
    const long long lo = __shfl_sync(FULL_MASK, (long long)(uint64_t(U128(v))), src);
    const long long hi = __shfl_sync(FULL_MASK, (long long)(v >> 64), src);
    return I128(U128(uint64_t(lo)) | (U128(uint64_t(hi)) << 64));
}

template <class T>
struct Exact {
    using R = rfa::Rfa<T>;
    using Bits = typename R::Bits;
    static constexpr int P = R::P, W = R::W, K = R::K, E0 = R::E0, EMAX = R::EMAX, BIAS = R::BIAS;
    static_assert(K == 3, "three bins");
    static constexpr Bits INF = Bits(EMAX + BIAS) << (P - 1);  // bits of +Inf: |x| bits below it are finite
    // The smallest J whose 2^e and 2^-e (e the exponent of u_m) are both
    // normal T (J = 4 for both types; below it every |x| is under 2^-66
    // (float) or 2^-971 (double)): the fast path's frames (Frame).
    static constexpr int J_FAST = K - 1 + (W - BIAS - E0) / W;
    static_assert(E0 + (J_FAST - (K - 1)) * W >= 1 - BIAS && E0 + (R::J_MAX - (K - 1)) * W <= BIAS - 1,
                  "2^e and 2^-e normal from J_FAST to J_MAX");

    // Rfa::index_from(J_MIN, x) from the bits a of a finite |x|, without
    // a loop: with t = ceil(log2 |x|), |x| <= 2^(E0 + jW + W - 1) holds for
    // j >= (t - E0 - W + 1) / W, which rounded up is floor((t - E0) / W).
    __device__ static int index_of(Bits a) {
        const int be = int(a >> (P - 1));
        if (be == 0) return R::J_MIN;  // zero or subnormal: below bin J_MIN's limit
        const int t = be - BIAS + ((a & ((Bits(1) << (P - 1)) - 1)) != 0 ? 1 : 0);
        const int j = (t - E0) / W;  // t - E0 > 0 for every normal number
        return j > R::J_MIN ? j : R::J_MIN;
    }
    // N of the bins of a state (in units of its lowest kept quantum).
    __device__ static I128 count(const int64_t (&bin)[K]) {
        return I128(bin[0]) * (I128(1) << (2 * W)) + I128(bin[1]) * (I128(1) << W) + I128(bin[2]);
    }
    // The flags x adds to a state (rfa.cuh, SPECIAL VALUES), and the value
    // of a state with flags fl != 0 (Rfa::convert's: the counts do not matter).
    __device__ static unsigned flag_of(T x) {
        return x != x ? unsigned(rfa::NAN_SEEN) : x - x == x - x ? 0u : x > T(0) ? unsigned(rfa::POS_INF) : unsigned(rfa::NEG_INF);
    }
    __device__ static T special(unsigned fl) {
        const bool nan = (fl & rfa::NAN_SEEN) || ((fl & rfa::POS_INF) && (fl & rfa::NEG_INF));
        return rfa::bits_of<T>(nan ? Bits(INF | (Bits(1) << (P - 2))) : (fl & rfa::POS_INF) ? INF : Bits(INF | R::SIGN));
    }
    // 2^e for a normal exponent e.
    __device__ static T pow2n(int e) { return rfa::bits_of<T>(Bits(Bits(e + BIAS) << (P - 1))); }
    // RNE_P(N) as a T times 2^sh, for any N: the top 64 bits of |N|, the
    // bits below them ORed into the lowest (a sticky bit far below the
    // rounding position), converted once.
    __device__ static T wide(I128 N) {
        const bool neg = N < 0;
        const U128 u = neg ? U128(0) - U128(N) : U128(N);
        const uint64_t hi = uint64_t(u >> 64), lo = uint64_t(u);
        uint64_t w = lo;
        int sh = 0;
        if (hi != 0) {
            const int lz = rfa::clz64(hi);
            sh = 64 - lz;
            w = (hi << lz) | ((lo >> 1) >> (63 - lz)) | uint64_t((lo << lz) != 0);
        }
        const T f = from_ull<T>(w) * pow2n(sh);  // exact: below 2^(117 + 1)
        return neg ? -f : f;
    }
    // The same value without branches (|N| < 2^117, so the shift sh < 64).
    __device__ static T wide_common(I128 N) {
        const bool neg = N < 0;
        const U128 u = neg ? U128(0) - U128(N) : U128(N);
        const uint64_t hi = uint64_t(u >> 64), lo = uint64_t(u);
        const int sh = hi == 0 ? 0 : 64 - rfa::clz64(hi);
        const uint64_t w = (lo >> sh) | ((hi << 1) << (63 - sh)) | uint64_t((lo & ((uint64_t(1) << sh) - 1)) != 0);
        const T f = from_ull<T>(w) * pow2n(sh);
        return neg ? -f : f;
    }
};

// The per-thread constants of the fast path at top bin J >= J_FAST, where
// 2^e and 2^-e are normal: D(x) is x scaled into the frame of u_m, and a
// rounded count f gives f u_m by one exact multiplication - never
// subnormal, as |f| >= 1 where it is not zero (an overflow is the Inf that
// rounding N u_m gives).
template <class T>
struct Frame {
    using X = Exact<T>;
    static constexpr int W = X::W, K = X::K;
    T s;   // 2^e, e the exponent of u_m
    T sx;  // 2^-e

    __device__ explicit Frame(int j) {
        const int e = X::E0 + (j - (K - 1)) * W;
        s = X::pow2n(e);
        sx = X::pow2n(-e);
    }
    // D(x) = RNE_m(x) / u_m, for |x| <= Rfa::limit(J).
    __device__ I128 D(T x) const {
        if constexpr (sizeof(T) == 4) {
            return I128(round_to_ll<T>(x * sx));  // |x / u_m| <= 2^(3W - 1) = 2^62; an underflow is far below 1/2
        } else {
            // |x / u_m| reaches 2^77: bin J's count d0 first (rfa.cuh's
            // deposit, in the frame of u_m: M = 1.5 * 2^(52 + 2W), whose
            // binade's spacing is u_J / u_m = 2^(2W), rounds x / u_m to a
            // multiple of u_J), then the exact remainder r (|r| <= 2^(2W-1),
            // a count of u_m) rounded to an integer (d0 u_J is a multiple of
            // u_m: RNE_m(x) = d0 u_J + RNE_m(r u_m)).
            const T M = T(1.5) * X::pow2n(52 + 2 * W);
            const T t = rfa::fused(x, sx, M);
            const T r = rfa::fused(x, sx, -(t - M));
            const int64_t d0 = int64_t(rfa::bits_of<uint64_t>(t) - rfa::bits_of<uint64_t>(M));
            return I128(d0) * (I128(1) << (2 * W)) + I128(round_to_ll<T>(r));
        }
    }
    // round(N) where N takes the common path - N within one conversion -
    // else ok is cleared (and the value is to be discarded).  No branches,
    // so that the compiler can overlap the conversions of a thread's
    // elements (the scan's hot loop).  WIDE (float only): any N, through
    // Exact::wide_common.
    template <bool WIDE = false>
    __device__ T round_common(I128 N, bool &ok) const {
        T f;
        if constexpr (sizeof(T) == 4 && WIDE) {
            f = X::wide_common(N);
        } else if constexpr (sizeof(T) == 4) {
            const int64_t lo = int64_t(N);
            ok &= I128(lo) == N;
            f = from_ll<T>(lo);
        } else {
            const int64_t A = int64_t(N >> 52);
            const uint64_t B = uint64_t(N) & ((uint64_t(1) << 52) - 1);
            const T b = rfa::bits_of<T>(B | rfa::bits_of<uint64_t>(X::pow2n(52))) - X::pow2n(52);
            ok &= uint64_t(A + (int64_t(1) << 53)) < (uint64_t(1) << 54);
            f = rfa::fused(from_ll<T>(A), X::pow2n(52), b);
        }
        return f * s;
    }
    // N u_m rounded to nearest even.
    __device__ T round(I128 N) const {
        T f;
        if constexpr (sizeof(T) == 4) {
            const int64_t lo = int64_t(N);
            f = I128(lo) == N ? from_ll<T>(lo) : X::wide(N);  // one conversion where N fits 64 bits
        } else {
            // N = A 2^52 + B with 0 <= B < 2^52: where |A| < 2^53 both are
            // doubles and one fused multiply-add rounds their sum once.
            // (B as a double without a conversion: the bits of 2^52 + B, less 2^52.)
            const int64_t A = int64_t(N >> 52);
            const uint64_t B = uint64_t(N) & ((uint64_t(1) << 52) - 1);
            const T b = rfa::bits_of<T>(B | rfa::bits_of<uint64_t>(X::pow2n(52))) - X::pow2n(52);
            f = uint64_t(A + (int64_t(1) << 53)) < (uint64_t(1) << 54) ? rfa::fused(from_ll<T>(A), X::pow2n(52), b)
                                                                        : X::wide(N);
        }
        return f * s;
    }
};

// The bins of a state moved up by d >= 0 indices (the lowest fall off), for
// any integer type of count.
template <class B>
__device__ inline void raise_bins(B (&b)[3], int d) {
    b[2] = d == 0 ? b[2] : d == 1 ? b[1] : d == 2 ? b[0] : B(0);
    b[1] = d == 0 ? b[1] : d == 1 ? b[0] : B(0);
    b[0] = d == 0 ? b[0] : B(0);
}

// ---------------------------------------------------------- the 1-D kernel
// Persistent blocks take tiles from a counter (in order, so a tile's
// predecessors are taken by running blocks).  A tile:
//  1. each thread loads ITEMS consecutive elements and deposits them at its
//     own top bin j (from the largest |x| of its items) into 3 counts; a
//     thread with an Inf or NaN goes value by value (rfa::Acc::add);
//  2. each warp moves its lanes' counts up to the warp's top bin (the
//     largest j) and scans them as integers (exact: these are the warp's
//     deposits at that bin); lane 31 has the warp's total state;
//  3. warp 0 scans the warps' totals (states, exact merges), publishes the
//     tile's aggregate, looks back for the tile's prefix, publishes the
//     inclusive prefix and leaves each warp the state before it;
//  4. fast path (step 2's counts are valid: the state before the warp has a
//     top bin at least the warp's, no Inf or NaN): each thread adds the
//     state before the warp and its lanes' counts into one 128-bit N, then
//     per element adds D(x) and rounds N (Frame); after an Inf or NaN every
//     element is Inf or NaN, from the flags alone; otherwise (the few warps
//     that raise the largest magnitude - the first one always - and the one
//     with the first Inf or NaN) the lanes' own states are scanned as
//     states and every element goes through the accumulator and
//     Rfa::convert_fast.
// Either way element i is the rounding of the exact value of the state of
// x[0..i]: the bits do not depend on the tile shape.  carry_in: the state
// before element 0 (tile 0's prefix); carry_out receives the state of
// everything (the last tile's inclusive prefix).
template <int BLOCK_, int ITEMS_, int BLOCKS_PER_SM_>
struct TileShape {
    static constexpr int BLOCK = BLOCK_, ITEMS = ITEMS_, BLOCKS_PER_SM = BLOCKS_PER_SM_;
    static constexpr int TILE = BLOCK * ITEMS;
};
// float: 16 items a thread (64 bytes of loads in flight each); double: 8,
// 2 blocks an SM (ptxas -v for sm_90: no spills at these bounds).
using Shape = TileShape<256, 16, 3>;  // float's (the registry shows its block size)
template <class Acc> struct ShapeOf;
template <> struct ShapeOf<float> { using type = Shape; };
template <> struct ShapeOf<double> { using type = TileShape<256, 8, 2>; };

template <class Acc> struct CountOf;  // a warp's sum of deposit counts at one bin fits it
template <> struct CountOf<float> { using type = int32_t; };   // 32 lanes x 16 items x 2^20
template <> struct CountOf<double> { using type = int64_t; };  // 32 lanes x 8 items x 2^25 > 2^31

// The bits of the largest |x[k]|: compared as integers they are in the
// order of |x|, with Inf and NaN above every finite value.
template <int ITEMS, class Acc>
__device__ inline typename rfa::Rfa<Acc>::Bits abs_max_bits(const Acc (&x)[ITEMS]) {
    using R = rfa::Rfa<Acc>;
    typename R::Bits amax = 0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const typename R::Bits a = rfa::bits_of<typename R::Bits>(x[k]) & ~R::SIGN;
        amax = a > amax ? a : amax;
    }
    return amax;
}

// The fast path's elements of one thread: y[k] the rounding of the count
// N0 + D(x[0]) + ... + D(x[k]) (exclusive: of the count before x[k]) in the
// frame f; amax: the bits of the thread's largest |x|.  All the elements
// go through one rounding (conv) without branches; where one of them needs
// more, all again with Frame::round.  float: the one-conversion rounding
// where every count the thread makes stays far inside 64 bits (|N| below
// 2^62, judged in float from N0 and the largest |x|), else the wide one.
template <int ITEMS, class Acc>
__device__ inline void round_elements(const Frame<Acc> &f, I128 N0, const Acc (&x)[ITEMS],
                                      typename rfa::Rfa<Acc>::Bits amax, bool inclusive, Acc (&y)[ITEMS]) {
    using X = Exact<Acc>;
    bool ok = true;
    const auto elements = [&](auto conv) {
        I128 N = N0;
        Acc last = inclusive ? Acc(0) : conv(N);  // the exclusive scan's element: the rounding before
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            N += f.D(x[k]);
            const Acc z = conv(N);
            y[k] = inclusive ? z : last;
            last = z;
        }
    };
    bool narrow = true;
    if constexpr (sizeof(Acc) == 4) {
        const int64_t lo = int64_t(N0);
        narrow = I128(lo) == N0 &&
                 rfa::abs_of(from_ll<Acc>(lo)) + Acc(ITEMS) * rfa::bits_of<Acc>(amax) * f.sx < X::pow2n(62);
    }
    if (narrow) elements([&](I128 N) { return f.round_common(N, ok); });
    else elements([&](I128 N) { return f.template round_common<true>(N, ok); });
    if (!ok) elements([&](I128 N) { return f.round(N); });
}

// Steps 1, 2 and 4 of the WARP x ITEMS elements of one warp, this lane's
// from `first` on.  before_of(tot) - called by every lane of the warp, tot
// the warp's own state (step 2), the same in every lane - returns the state
// of everything before the warp's elements: from the block's step 3
// (rfa_tile) or a warp's running state (scan_rfa_warps).
template <int ITEMS, class In, class Acc, class Before>
__device__ inline void rfa_warp(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive,
                                bool vec_in, bool vec_out, int64_t first, Before before_of) {
    constexpr int K = 3;
    using R = rfa::Rfa<Acc>;
    using X = Exact<Acc>;
    using Bits = typename R::Bits;
    using C = typename CountOf<Acc>::type;
    static_assert(sizeof(C) == 8 || (int64_t(WARP) * ITEMS << (X::W - 1)) < (int64_t(1) << 31), "warp counts fit");
    const int lane = threadIdx.x % WARP;
    Acc x[ITEMS];
    scan::load_items<ITEMS, Sum<Acc>>(in, first, n, vec_in, x);  // 0 past n: deposits nothing

    // 1. the thread's state: top bin j, flags, counts
    const Bits amax = abs_max_bits(x);
    State<Acc> own;
    {
        rfa::Acc<Acc> a;
        if (amax < X::INF) {
            State<Acc> at = R::identity();
            at.index = X::index_of(amax);
            a.load(at);
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) a.deposit(x[k]);
            a.counted(ITEMS, ITEMS);
        } else {  // an Inf or NaN: value by value, read again (a loop, not ITEMS copies of Acc::add)
#pragma unroll 1
            for (int64_t i = first; i < first + ITEMS && i < n; ++i) a.add(Acc(in[i]));
        }
        own = a.state();
    }

    // 2. the warp's counts at its top bin, scanned
    const int jw = warp_max(own.index);
    const unsigned wflags = warp_or(own.flags);
    C cnt[K], inc[K];
#pragma unroll
    for (int k = 0; k < K; ++k) cnt[k] = C(own.bin[k]);
    raise_bins(cnt, jw - own.index);
#pragma unroll
    for (int k = 0; k < K; ++k) inc[k] = cnt[k];
#pragma unroll
    for (int d = 1; d < WARP; d <<= 1) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const C y = __shfl_up_sync(FULL_MASK, inc[k], d);
            if (lane >= d) inc[k] += y;
        }
    }
    State<Acc> tot;  // the warp's own state, every lane
    tot.index = jw;
    tot.flags = wflags;
#pragma unroll
    for (int k = 0; k < K; ++k) tot.bin[k] = int64_t(__shfl_sync(FULL_MASK, inc[k], WARP - 1));
    C lower_lanes[K];  // the counts of the lanes before this one
#pragma unroll
    for (int k = 0; k < K; ++k) lower_lanes[k] = inc[k] - cnt[k];
    const State<Acc> before = before_of(tot);

    // 4. every element's state, rounded
    if (before.flags == 0 && wflags == 0 && before.index >= jw && before.index >= X::J_FAST) {
        Acc y[ITEMS];
        int64_t b[K];
#pragma unroll
        for (int k = 0; k < K; ++k) b[k] = int64_t(lower_lanes[k]);
        raise_bins(b, before.index - jw);
#pragma unroll
        for (int k = 0; k < K; ++k) b[k] += before.bin[k];
        round_elements(Frame<Acc>(before.index), X::count(b), x, amax, inclusive, y);
        scan::store_items<ITEMS, Acc>(out, first, n, vec_out, y);
    } else if (before.flags != 0) {  // an Inf or NaN before the warp: every element is one, by its flags alone
        unsigned mine = own.flags;
#pragma unroll
        for (int d = 1; d < WARP; d <<= 1) {
            const unsigned o = __shfl_up_sync(FULL_MASK, mine, d);
            if (lane >= d) mine |= o;
        }
        unsigned fl = __shfl_up_sync(FULL_MASK, mine, 1);
        fl = before.flags | (lane == 0 ? 0u : fl);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const unsigned was = fl;
            fl |= X::flag_of(x[k]);
            if (first + k < n) out[first + k] = X::special(inclusive ? fl : was);
        }
    } else {  // warp-uniform; a loop over the items read again, so that it costs no registers
        const State<Acc> mine = warp_inclusive(own, lane);
        State<Acc> lanes = shfl_up_state(mine, 1);
        if (lane == 0) lanes = R::identity();
        rfa::Acc<Acc> b;
        b.load(R::merge(before, lanes));
#pragma unroll 1
        for (int64_t i = first; i < first + ITEMS && i < n; ++i) {
            if (!inclusive) out[i] = R::convert_fast(b.state());
            b.add(Acc(in[i]));
            if (inclusive) out[i] = R::convert_fast(b.state());
        }
    }
}

// The block's next unit of work (a tile or a chunk) from the counter,
// every thread getting it.  Units are taken in order, so the units before
// one were all taken by blocks already running: a look-back never waits
// for a block that has not started.  `taken` is the block's shared slot;
// the caller synchronises before the next call.
__device__ inline int64_t take(unsigned *counter, unsigned long long &taken) {
    if (threadIdx.x == 0) taken = atomicAdd(reinterpret_cast<unsigned long long *>(counter), 1ull);
    __syncthreads();
    return int64_t(taken);
}

// The shared memory of one tile's scan (rfa_tile).
template <int WARPS, class Acc>
struct TileShared {
    State<Acc> warp_total[WARPS];
    State<Acc> warp_before[WARPS];
};

// One tile (the whole block calls it; the elements from tile_first on):
// each warp's steps 1, 2 and 4 (rfa_warp) around the block's step 3, in
// which warp 0 scans the warps' totals and calls chain(agg, lane) (every
// lane, the same agg: the tile's own state) for the state of everything
// before the tile - scan_rfa's look-back.  Ends with the tile's elements
// stored; the caller synchronises before sm is used again.
template <class Sh, class In, class Acc, class Chain>
__device__ inline void rfa_tile(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive,
                                bool vec_in, bool vec_out, int64_t tile_first,
                                TileShared<Sh::BLOCK / WARP, Acc> &sm, Chain chain) {
    constexpr int WARPS = Sh::BLOCK / WARP;
    using R = rfa::Rfa<Acc>;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    rfa_warp<Sh::ITEMS>(in, out, n, inclusive, vec_in, vec_out, tile_first + int64_t(threadIdx.x) * Sh::ITEMS,
                        [&](const State<Acc> &tot) {
                            if (lane == 0) sm.warp_total[warp] = tot;
                            __syncthreads();
                            // 3. the warps' totals, the tile's prefix (warp 0)
                            if (warp == 0) {
                                State<Acc> v = lane < WARPS ? sm.warp_total[lane] : R::identity();
#pragma unroll
                                for (int d = 1; d < WARPS; d <<= 1) {
                                    const State<Acc> y = shfl_up_state(v, d);
                                    if (lane >= d) v = R::merge(y, v);
                                }
                                const State<Acc> agg = shfl_from_state(v, WARPS - 1);
                                State<Acc> lower = shfl_up_state(v, 1);
                                if (lane == 0) lower = R::identity();
                                const State<Acc> prefix = chain(agg, lane);
                                if (lane < WARPS) sm.warp_before[lane] = R::merge(prefix, lower);
                            }
                            __syncthreads();
                            return sm.warp_before[warp];
                        });
}

template <class Sh, class In, class Acc>
__global__ void __launch_bounds__(Sh::BLOCK, Sh::BLOCKS_PER_SM)
scan_rfa(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive, bool vec_in, bool vec_out,
         unsigned *counter, TileStates<Acc> ts, int64_t tiles, const State<Acc> *carry_in, State<Acc> *carry_out) {
    __shared__ TileShared<Sh::BLOCK / WARP, Acc> sm;
    __shared__ unsigned long long taken;
    for (;;) {
        const int64_t t = take(counter, taken);
        if (t >= tiles) break;
        rfa_tile<Sh>(in, out, n, inclusive, vec_in, vec_out, t * Sh::TILE, sm,
                     [&](const State<Acc> &agg, int lane) {
                         return tile_prefix(ts, t, tiles, lane, agg, carry_in, carry_out);
                     });
        __syncthreads();  // sm and taken are reused
    }
}

// The state of a warp's inputs (own: the lane's state), every lane getting
// it: the lanes' states meet at the warp's top bin and their counts are
// added as integers - the value of any order of merges (rfa.cuh, MERGING).
template <class Acc>
__device__ inline State<Acc> warp_state(State<Acc> s) {
    const int j = warp_max(s.index);
    raise_bins(s.bin, j - s.index);
    s.index = j;
    s.flags = warp_or(s.flags);
#pragma unroll
    for (int m = 1; m < WARP; m <<= 1)
#pragma unroll
        for (int k = 0; k < 3; ++k) s.bin[k] += int64_t(__shfl_xor_sync(FULL_MASK, (long long)s.bin[k], m));
    return s;
}

// The steps of its slice a warp of scan_rfa_warps keeps in shared memory
// from pass A for pass B (the slice's first ones: pass B, reading
// backwards, reaches them last, when the L2 has most likely let them go):
// 6 steps of 1 KiB a warp; none where the input is converted (pass A's
// loads are not striped there).  Beside them, float's pass B has a ring of
// 3 steps a warp that its loads land in, RING - 1 = two steps ahead of use
// (cp.async: no registers held).  The block's bytes for both (shared_bytes):
// float 72 KiB (3 blocks an SM), double 48 KiB (4 blocks; a ring would take
// kept steps' room, which measured slower).
template <int TPC, class In, class Acc>
__host__ __device__ constexpr int kept_steps() {
    return !std::is_same<In, Acc>::value ? 0 : TPC < 6 ? TPC : 6;
}
template <class In, class Acc>
__host__ __device__ constexpr int ring_steps() {
    return std::is_same<In, Acc>::value && sizeof(Acc) == 4 ? 3 : 0;
}
template <class Sh, int TPC, class In, class Acc>
__host__ __device__ constexpr int shared_bytes() {
    return (kept_steps<TPC, In, Acc>() + ring_steps<In, Acc>()) * (Sh::BLOCK / WARP) * WARP * Sh::ITEMS *
           int(sizeof(Acc));
}

// The 1-D scan in chunks of TPC tiles, each warp on its own part.  A block
// takes a chunk from the counter; warp w owns the chunk's w-th slice of
// TPC x WARP x ITEMS consecutive elements.  Pass A: each warp sums its
// slice (deposits only, the reduction's work); warp 0 scans the warps'
// states, publishes the chunk's state and looks back over the chunks'
// states for its prefix (tile_prefix, as scan_rfa does for tiles), and
// leaves each warp the state before its slice.  Pass B: each warp scans
// its slice, WARP x ITEMS elements (a step) at a time, reading it again
// (its first kept_steps from shared memory, the rest partly from L2) - no
// barrier and no look-back until the next chunk, so the warps of an SM run
// unhindered by each other; thread 0 publishes the chunk's inclusive state
// meanwhile.  The bits are scan_rfa's: every element is the rounding of its
// prefix's state.
template <class Sh, int TPC, class In, class Acc>
__global__ void __launch_bounds__(Sh::BLOCK, Sh::BLOCKS_PER_SM)
scan_rfa_warps(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive, bool vec_in,
               bool vec_out, unsigned *counter, TileStates<Acc> ts, int64_t chunks, const State<Acc> *carry_in,
               State<Acc> *carry_out) {
    constexpr int ITEMS = Sh::ITEMS, WARPS = Sh::BLOCK / WARP, STEP = WARP * ITEMS;
    constexpr int64_t SLICE = int64_t(TPC) * STEP;
    using R = rfa::Rfa<Acc>;
    using X = Exact<Acc>;
    using Bits = typename R::Bits;
    __shared__ State<Acc> part[WARPS];
    __shared__ unsigned long long taken;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    // the warp's kept steps (kept_steps): step k's 16-byte vector s at
    // kept_at(k, s), the slot s ^ ((s / 8) % 2) - so the 8 lanes of
    // an access phase meet 8 different bank quads both when pass A writes
    // the vectors v x WARP + lane and when pass B reads lane x VPL + q; and
    // its ring (ring_steps; the same slots, ring_at), after every warp's kept steps
    constexpr int KEEP = kept_steps<TPC, In, Acc>(), RING = ring_steps<In, Acc>();
    constexpr int VPL = ITEMS * int(sizeof(Acc)) / 16, VECS = WARP * VPL;
    static_assert(VPL == 2, "the slots' swizzle is for 2 vectors a lane");
    uint4 *const kept = reinterpret_cast<uint4 *>(dynamic_shared_memory()) + warp * KEEP * VECS;
    uint4 *const ring = reinterpret_cast<uint4 *>(dynamic_shared_memory()) + WARPS * KEEP * VECS + warp * RING * VECS;
    constexpr int SLOTS = RING > 0 ? RING : 1;
    const auto slot = [](int s) { return s ^ ((s >> 3) & 1); };
    const auto kept_at = [&](int k, int s) -> uint4 & { return kept[k * VECS + slot(s)]; };
    const auto ring_at = [&](int k, int s) -> uint4 & { return ring[k % SLOTS * VECS + slot(s)]; };
    for (;;) {
        const int64_t c = take(counter, taken);
        if (c >= chunks) break;
        const int64_t w0 = c * WARPS * SLICE + warp * SLICE;  // the warp's slice
        rfa::Acc<Acc> a;
        // pass A: the order of the deposits does not matter, so where it
        // can each access of the warp reads one contiguous run (lane l
        // takes the step's 16-byte vectors l, l + 32, ...)
        constexpr int VEC = 16 / int(sizeof(Acc)), NV = ITEMS / VEC;
        const bool striped = vec_in && w0 + SLICE <= n;
        bool summed = false;
        if constexpr (std::is_same<In, Acc>::value) {
            if (striped) {
                // A whole slice, read twice.  Its KEEP kept steps go
                // straight into their slots, all at once (cp.async, a group
                // a step, evict-first: pass B reads them from there); the
                // rest come a step ahead into registers, kept in the L2
                // before other lines (pass B reads them again), each
                // prefetched into the L2 PREFETCH steps before its use - more
                // bytes in flight than the registers hold.
                constexpr int PREFETCH = 3;
                const auto vec = [&](int k, int v) {
                    return in + w0 + int64_t(k) * STEP + int64_t(v * WARP + lane) * VEC;
                };
#pragma unroll
                for (int k = 0; k < KEEP; ++k) {
#pragma unroll
                    for (int v = 0; v < NV; ++v) async_copy16(&kept_at(k, v * WARP + lane), vec(k, v), true);
                    async_commit();
                }
                uint4 next[NV];
                const auto load_ahead = [&](int k) {  // step k; step k - 1 is in use
                    if (k < TPC) {
#pragma unroll
                        for (int v = 0; v < NV; ++v) next[v] = load_nc_keep_l2(vec(k, v));
                    }
                    const int p = k - 1 + PREFETCH;
                    if (p < TPC && p >= KEEP) {
#pragma unroll
                        for (int v = 0; v < NV; ++v) prefetch_l2_keep(vec(p, v));
                    }
                };
                load_ahead(KEEP);
#pragma unroll 1
                for (int k = 0; k < KEEP; ++k) {
                    async_wait_pending(KEEP - 1 - k);  // step k's group has landed
                    Acc x[ITEMS];
#pragma unroll
                    for (int v = 0; v < NV; ++v) memcpy(x + v * VEC, &kept_at(k, v * WARP + lane), 16);
                    add_items(a, x);
                }
#pragma unroll 1
                for (int k = KEEP; k < TPC; ++k) {
                    Acc x[ITEMS];
                    memcpy(x, next, sizeof(x));
                    load_ahead(k + 1);
                    add_items(a, x);
                }
                summed = true;
            }
        }
        if (!summed) {
#pragma unroll 1
            for (int k = 0; k < TPC; ++k) {
                const int64_t step_first = w0 + int64_t(k) * STEP;
                if (step_first >= n) break;
                Acc x[ITEMS];
                scan::load_items<ITEMS, Sum<Acc>>(in, step_first + int64_t(lane) * ITEMS, n, vec_in, x);  // 0 past n
                add_items(a, x);
            }
        }
        // Pass B's ring (float, a whole slice): step k of the slice in slot
        // k % RING, RING - 1 steps in flight.  Its first RING - 1 - the
        // slice's last, which pass B's backward walk reads first - are
        // asked for now, so they fly during the look-back.  ring_ask(k) asks
        // for step k (a group, empty for a kept step or none) into the slot
        // that step k + RING used - read a step before, its values long used.
        constexpr int IN_FLIGHT = RING - 1;
        static_assert(RING == 0 || IN_FLIGHT >= 1, "a ring has a slot beside those in flight");
        const auto ring_ask = [&](int k) {
            if (k >= KEEP) {
#pragma unroll
                for (int q = 0; q < VPL; ++q)
                    async_copy16(&ring_at(k, lane * VPL + q), in + w0 + int64_t(k) * STEP + int64_t(lane * VPL + q) * VEC,
                                 true);
            }
            async_commit();
        };
        const bool ringed = RING > 0 && striped;
        if (ringed) {
            async_wait_all();  // an earlier chunk's asks (one the fast path did not take) have landed
            for (int r = 1; r <= IN_FLIGHT; ++r) ring_ask(TPC - r);
        }
        const State<Acc> mine = warp_state(a.state());
        if (lane == 0) part[warp] = mine;
        __syncthreads();
        State<Acc> chunk_inc;  // thread 0: the chunk's inclusive state
        if (warp == 0) {
            const State<Acc> v = warp_inclusive(lane < WARPS ? part[lane] : R::identity(), lane);
            const State<Acc> agg = shfl_from_state(v, WARPS - 1);
            State<Acc> lower = shfl_up_state(v, 1);
            if (lane == 0) lower = R::identity();
            const State<Acc> prefix = tile_before(ts, c, lane, agg, carry_in);
            if (lane == 0) chunk_inc = R::merge(prefix, agg);
            __syncwarp();  // every lane has read part[] before it is overwritten
            if (lane < WARPS) part[lane] = R::merge(prefix, lower);
        }
        __syncthreads();
        // the chunk's inclusive state out, by one thread while the others
        // start pass B (its store's fence stalls warp 0 alone)
        if (threadIdx.x == 0) publish_inclusive(ts, c, chunks, chunk_inc, carry_out);
        // Pass B.  A fast step (no element raises the top bin of the
        // state before it, no Inf or NaN) needs no deposits into bins: its
        // elements' D summed over the warp and scanned as 128-bit integers,
        // each element the rounding of the count before it (the exact
        // value of its state: N u_m at the top bin).
        State<Acc> at = part[warp];  // the state before the warp's slice
        // Pass B's loads are the elements' second and last reads (where the
        // input has the accumulator's type) and its stores are not read
        // again, so both go evict-first - leaving the L2 to the chunks that
        // pass A has read and pass B has yet to read again.
        constexpr bool LAST = std::is_same<In, Acc>::value;
        const auto load_last = [&](int64_t step_first, Acc (&x)[ITEMS]) {
            scan::load_items<ITEMS, Sum<Acc>, LAST>(in, step_first + int64_t(lane) * ITEMS, n, vec_in, x);  // 0 past n
        };
        // the fast path's, steps from the last to the first: a kept step
        // from shared memory, the others from the ring (asking for step
        // k - IN_FLIGHT once step k has landed) or from global memory
        const auto kept_step = [&](int k) { return striped && k < KEEP; };  // KEEP is 0 where the input is converted
        const auto load_fast = [&](int k, Acc (&x)[ITEMS]) {
            if (kept_step(k)) {
#pragma unroll
                for (int q = 0; q < VPL; ++q) memcpy(x + q * VEC, &kept_at(k, lane * VPL + q), 16);
            } else if (ringed) {
                async_wait_pending(IN_FLIGHT - 1);  // of the steps in flight, k (the oldest) has landed
#pragma unroll
                for (int q = 0; q < VPL; ++q) memcpy(x + q * VEC, &ring_at(k, lane * VPL + q), 16);
                ring_ask(k - IN_FLIGHT);
            } else {
                load_last(w0 + int64_t(k) * STEP, x);
            }
        };
        const auto load_step = [&](int64_t step_first, Acc (&x)[ITEMS]) {
            load_last(step_first, x);
            return abs_max_bits(x);
        };
        // A fast step's counts: the lane's elements as one count (own) and
        // the lanes' counts scanned (inc); returns the step's total.
        const auto step_counts = [&](const Acc (&x)[ITEMS], const Frame<Acc> &f, I128 &own, I128 &inc) {
            own = 0;
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) own += f.D(x[i]);
            inc = own;
#pragma unroll
            for (int o = 1; o < WARP; o <<= 1) {
                const I128 y = shfl_up_i128(inc, o);
                if (lane >= o) inc += y;
            }
            return shfl_i128(inc, WARP - 1);
        };
        // ... and its elements rounded from N0, the count before the lane's first, and stored
        const auto step_store = [&](int64_t step_first, const Acc (&x)[ITEMS], Bits amax, const Frame<Acc> &f,
                                    I128 N0) {
            Acc y[ITEMS];
            round_elements(f, N0, x, amax, inclusive, y);
            scan::store_items<ITEMS, Acc, true>(out, step_first + int64_t(lane) * ITEMS, n, vec_out, y);
        };
        // float: the same step in 64-bit counts where every count it makes
        // fits them - the warp's largest |x| in units of u_m, times STEP,
        // below 2^60, and the count at the step's edge (N: before it;
        // backwards: after it) below 2^61 - so each D is one conversion, the
        // warp's scan two shuffles a level, and each element one conversion
        // of its count (Frame::round_common's, without its checks).  Updates
        // N as the two calls above do; false (N untouched) where it does not
        // apply.
        const auto step_narrow = [&](int64_t step_first, const Acc (&x)[ITEMS], Bits amax, const Frame<Acc> &f,
                                     I128 &N, bool backwards) {
            if constexpr (sizeof(Acc) == 4) {
                const Acc big = rfa::bits_of<Acc>(Bits(warp_max(int(amax)))) * f.sx * Acc(STEP);
                const int64_t N64 = int64_t(N);
                if (!(big < X::pow2n(60)) || I128(N64) != N || N64 >= (int64_t(1) << 61) || N64 <= -(int64_t(1) << 61))
                    return false;
                int64_t d[ITEMS], own = 0;
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) own += d[k] = round_to_ll<Acc>(x[k] * f.sx);
                int64_t inc = own;
#pragma unroll
                for (int o = 1; o < WARP; o <<= 1) {
                    const int64_t y = __shfl_up_sync(FULL_MASK, (long long)inc, o);
                    if (lane >= o) inc += y;
                }
                const int64_t total = __shfl_sync(FULL_MASK, (long long)inc, WARP - 1);
                const int64_t before = backwards ? N64 - total : N64;
                int64_t c = before + inc - own;  // the count before the lane's first element
                Acc y[ITEMS];
                Acc last = inclusive ? Acc(0) : from_ll<Acc>(c) * f.s;
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) {
                    c += d[k];
                    const Acc z = from_ll<Acc>(c) * f.s;
                    y[k] = inclusive ? z : last;
                    last = z;
                }
                scan::store_items<ITEMS, Acc, true>(out, step_first + int64_t(lane) * ITEMS, n, vec_out, y);
                N = I128(backwards ? before : before + total);
                return true;
            } else {
                (void)step_first, (void)x, (void)amax, (void)f, (void)N, (void)backwards;
                return false;
            }
        };
        if (mine.flags == 0 && at.flags == 0 && mine.index <= at.index && at.index >= X::J_FAST) {
            // Every step is fast (the slice's own state, from pass A, holds
            // no larger magnitude than the state before it), and the count
            // after the slice is known: the slice's state raised to at's top
            // bin counts its elements' D exactly (rfa.cuh, WHICH BINS).  So
            // the steps go from the last to the first, each count before a
            // step the count after it less the step's own - reading first
            // what pass A read last, the most likely to be still in L2.
            State<Acc> whole = mine;
            raise_bins(whole.bin, at.index - whole.index);
            I128 N = X::count(at.bin) + X::count(whole.bin);
            const Frame<Acc> f(at.index);
            const int64_t left = w0 >= n ? 0 : ceil_div<int64_t>(n - w0, STEP);  // steps with elements
            const int steps = left < TPC ? int(left) : TPC;
            // float with no ring (a converted input): each step's loads
            // issued a step ahead (next), so that they fly while the step
            // before is scanned (double: its registers would spill, and it
            // measured slower)
            constexpr bool AHEAD = sizeof(Acc) == 4 && RING == 0;
            Acc next[ITEMS];
            if (AHEAD && steps > 0)
                load_fast(steps - 1, next);
#pragma unroll 1
            for (int k = steps - 1; k >= 0; --k) {
                const int64_t step_first = w0 + int64_t(k) * STEP;
                Acc x[ITEMS];
                Bits amax;
                if constexpr (AHEAD) {
#pragma unroll
                    for (int i = 0; i < ITEMS; ++i) x[i] = next[i];
                    if (k > 0)
                        load_fast(k - 1, next);
                    amax = abs_max_bits(x);
                } else {
                    // the next step, where pass B reads it from global
                    // memory, prefetched into the L1 while this one is
                    // scanned (no registers held: double's registers a step
                    // ahead spill)
                    if (k > 0 && !kept_step(k - 1) && !ringed) {  // load_fast's last branch
                        const int64_t next_first = w0 + int64_t(k - 1) * STEP + int64_t(lane) * ITEMS;
                        if (next_first < n) prefetch_l1(in + next_first);
                    }
                    load_fast(k, x);
                    amax = abs_max_bits(x);
                }
                if (step_narrow(step_first, x, amax, f, N, true)) continue;
                I128 own, inc;
                N -= step_counts(x, f, own, inc);
                step_store(step_first, x, amax, f, N + inc - own);
            }
            continue;
        }
        // Step by step from the first: `at` is the state before element
        // `from`, the fast steps' elements from there on are in the count N
        // alone; a step the fast path cannot take first deposits those
        // elements into `at` (reading them again), then runs rfa_warp.
        int64_t from = w0;
        I128 N = X::count(at.bin);
#pragma unroll 1
        for (int k = 0; k < TPC; ++k) {
            const int64_t step_first = w0 + int64_t(k) * STEP;
            if (step_first >= n) break;
            Acc x[ITEMS];
            const Bits amax = load_step(step_first, x);
            const bool special = __any_sync(FULL_MASK, amax >= X::INF);
            const int jw = warp_max(amax < X::INF ? X::index_of(amax) : R::J_MIN);
            if (!special && at.flags == 0 && at.index >= jw && at.index >= X::J_FAST) {
                const Frame<Acc> f(at.index);
                if (step_narrow(step_first, x, amax, f, N, false)) continue;
                I128 own, inc;
                const I128 total = step_counts(x, f, own, inc);
                step_store(step_first, x, amax, f, N + inc - own);
                N += total;
            } else {
                if (from < step_first) {  // the fast steps' elements into `at`
                    rfa::Acc<Acc> a;
#pragma unroll 1
                    for (int64_t i = from + lane; i < step_first; i += WARP) a.add(Acc(in[i]));
                    at = R::merge(at, warp_state(a.state()));
                }
                rfa_warp<ITEMS>(in, out, n, inclusive, vec_in, vec_out, step_first + int64_t(lane) * ITEMS,
                                [&](const State<Acc> &tot) {
                                    const State<Acc> before = at;
                                    at = R::merge(at, tot);
                                    return before;
                                });
                from = step_first + STEP;
                N = X::count(at.bin);
            }
        }
    }
}

// The same scan element by element: pass 1 sums each thread's items into
// an accumulator, the block scans the threads' states, and pass 2 deposits
// every element into the thread's running state and rounds it
// (Rfa::convert_fast).  The direct form of the definition, kept for the
// tuning program (bench/tune_rfa_scan.cu) to compare bits and times with.
template <class In, class Acc>
__global__ void __launch_bounds__(256, sizeof(Acc) == 4 ? 3 : 2)
scan_rfa_stepwise(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive, bool vec_in,
                  bool vec_out, unsigned *counter, TileStates<Acc> ts, int64_t tiles, const State<Acc> *carry_in,
                  State<Acc> *carry_out) {
    constexpr int BLOCK = 256, ITEMS = 8, WARPS = BLOCK / WARP, TILE = BLOCK * ITEMS;
    using R = rfa::Rfa<Acc>;
    __shared__ State<Acc> warp_total[WARPS];
    __shared__ State<Acc> tile_before;
    __shared__ unsigned long long taken;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;

    for (;;) {
        const int64_t t = take(counter, taken);
        if (t >= tiles) break;
        const int64_t first = t * TILE + int64_t(threadIdx.x) * ITEMS;
        Acc x[ITEMS];
        scan::load_items<ITEMS, Sum<Acc>>(in, first, n, vec_in, x);

        rfa::Acc<Acc> a;
        add_items(a, x);
        const State<Acc> mine = warp_inclusive(a.state(), lane);
        State<Acc> before = shfl_up_state(mine, 1);
        if (lane == 0) before = R::identity();
        if (lane == WARP - 1) warp_total[warp] = mine;
        __syncthreads();
        State<Acc> agg = R::identity(), lower = R::identity();
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == warp) lower = agg;
            agg = R::merge(agg, warp_total[w]);
        }
        before = R::merge(lower, before);

        if (warp == 0) {
            const State<Acc> prefix = tile_prefix(ts, t, tiles, lane, agg, carry_in, carry_out);
            if (lane == 0) tile_before = prefix;
        }
        __syncthreads();

        rfa::Acc<Acc> b;
        b.load(R::merge(tile_before, before));
        Acc y[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (!inclusive) y[k] = R::convert_fast(b.state());
            b.add(x[k]);
            if (inclusive) y[k] = R::convert_fast(b.state());
        }
        scan::store_items<ITEMS, Acc>(out, first, n, vec_out, y);
        __syncthreads();
    }
}

// Not a float sum: never dispatched here (the launcher of step 13 sends
// those to step 5), so it only has to compile.
template <class In, class Op>
struct ScanRep {
    static size_t scratch(int64_t) { return 0; }
    static cudaError_t run(const gp_scan_args &) { return cudaErrorInvalidValue; }
};

// What a launcher's look-back chains: a block's tiles (scan_rfa), chunks of
// TPC tiles (scan_rfa_warps), or the tiles of scan_rfa_stepwise (whose
// shape is fixed).
enum class Unit { tile, chunk, stepwise };
// The launcher of the kernel of Unit U with shape Sh.
template <class Sh, class In, class Acc, Unit U = Unit::tile, int TPC = 1>
struct ScanRepWith {
    static constexpr int64_t UNIT = U == Unit::chunk ? int64_t(Sh::TILE) * TPC : int64_t(Sh::TILE);
    static int64_t units(int64_t n) { return ceil_div<int64_t>(n, UNIT); }
    static size_t scratch(int64_t n) { return 256 + TileStates<Acc>::bytes(units(n)); }
    // the persistent grid: a block an SM's share, at most one a unit
    static cudaError_t grid_for(int64_t units, int64_t &grid) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        grid = test_grid(std::min<int64_t>(units, int64_t(d.sms) * Sh::BLOCKS_PER_SM));
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a) {
        const int64_t nt = units(a.n);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(cudaMemsetAsync(p, 0, 256 + TileStates<Acc>::zeroed_bytes(nt), a.stream));
        int64_t grid;
        GP_TRY(grid_for(nt, grid));
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        const bool inc = a.inclusive != 0, vin = scan::aligned16<In>(a.in), vout = scan::aligned16<Acc>(a.out);
        unsigned *counter = reinterpret_cast<unsigned *>(p);
        const TileStates<Acc> ts(p + 256, nt);
        const State<Acc> *cin = static_cast<const State<Acc> *>(a.carry_in);
        State<Acc> *cout = static_cast<State<Acc> *>(a.carry_out);
        if constexpr (U == Unit::stepwise) {
            GP_LAUNCH((scan_rfa_stepwise<In, Acc>), unsigned(grid), Sh::BLOCK, 0, a.stream, in, out, a.n, inc,
                      vin, vout, counter, ts, nt, cin, cout);
        } else if constexpr (U == Unit::chunk) {
            constexpr int SHARED = shared_bytes<Sh, TPC, In, Acc>();
            GP_TRY(opt_in_shared(scan_rfa_warps<Sh, TPC, In, Acc>, SHARED, 1024));  // static: part, taken
            GP_LAUNCH((scan_rfa_warps<Sh, TPC, In, Acc>), unsigned(grid), Sh::BLOCK, SHARED, a.stream, in, out, a.n,
                      inc, vin, vout, counter, ts, nt, cin, cout);
        } else {
            GP_LAUNCH((scan_rfa<Sh, In, Acc>), unsigned(grid), Sh::BLOCK, 0, a.stream, in, out, a.n, inc, vin,
                      vout, counter, ts, nt, cin, cout);
        }
        return cudaSuccess;
    }
};
template <class In, class Acc>
using ScanRepStepwise = ScanRepWith<TileShape<256, 8, sizeof(Acc) == 4 ? 3 : 2>, In, Acc, Unit::stepwise>;
// The library's: scan_rfa_warps in chunks of 16, 8 or 4 of its tiles
// (16: float 32 Ki elements, double 16 Ki; per-element work 32 bytes a
// lane; float 3 blocks an SM, double 4 - at 64 registers, where it spills a
// little and still gains more from the fourth block than it loses): the
// largest chunks of which there are at least half as many as resident
// blocks (fewer chunks leave blocks idle, smaller ones cost more
// look-backs; larger ones keep more in the L2 between pass A and pass B,
// and measured slower at every size); below that chunks of 4 where there
// are enough of them (float: half as many as resident blocks; double: an
// eighth: the float64 tile kernel is the slower one); else scan_rfa a tile
// at a time (small inputs, whose few chunks would leave most blocks idle).
// On an H200 that puts float32 from 2^21 elements and float64 from 2^19 in
// chunks, the crossovers of bench/tune_rfa_scan.cu mid.  The same bits
// either way.
template <class Acc> struct WarpShapeOf;
template <> struct WarpShapeOf<float> { using type = TileShape<256, 8, 3>; };
template <> struct WarpShapeOf<double> { using type = TileShape<256, 4, 4>; };
template <class Acc> constexpr int SMALL_SHARE = sizeof(Acc) == 4 ? 2 : 8;  // chunks of 4 x SMALL_SHARE >= resident
template <class In, class Acc>
struct ScanRepFloat {
    using Tiles = ScanRepWith<typename ShapeOf<Acc>::type, In, Acc>;
    template <int TPC>
    using Chunks = ScanRepWith<typename WarpShapeOf<Acc>::type, In, Acc, Unit::chunk, TPC>;
    static size_t scratch(int64_t n) { return std::max(Tiles::scratch(n), Chunks<4>::scratch(n)); }  // the most units
    static cudaError_t run(const gp_scan_args &a) {
        int64_t resident;  // the chunk kernel's full grid (GPUPRIMS_TEST_GRID applies)
        GP_TRY(Chunks<16>::grid_for(INT64_MAX, resident));
        if (2 * Chunks<16>::units(a.n) >= resident) return Chunks<16>::run(a);
        if (2 * Chunks<8>::units(a.n) >= resident) return Chunks<8>::run(a);
        if (SMALL_SHARE<Acc> * Chunks<4>::units(a.n) >= resident) return Chunks<4>::run(a);
        return Tiles::run(a);
    }
};
template <class In> struct ScanRep<In, Sum<float>> : ScanRepFloat<In, float> {};
template <class In> struct ScanRep<In, Sum<double>> : ScanRepFloat<In, double> {};

// ------------------------------------------------- axes and segments
// A group of G lanes per problem (G = 1: a thread, for columns and many
// short problems; 32: a warp).  The group walks its problem in rounds of G
// elements with a running state: each lane deposits its element, the group
// scans the lanes' states, merges the running state in front, and each
// lane rounds its element's state.  Every element is the rounding of the
// state of its problem's prefix: the bits of the 1-D scan of the problem.
template <int G, class In, class Acc>
__global__ void __launch_bounds__(256)
scan_rfa_groups(const In *__restrict__ in, Acc *__restrict__ out, seg::Layout L, bool inclusive) {
    using R = rfa::Rfa<Acc>;
    constexpr int GROUPS = 256 / G;
    const int sub = threadIdx.x % G;
    const int64_t first = int64_t(blockIdx.x) * GROUPS + threadIdx.x / G;
    const int64_t step = int64_t(gridDim.x) * GROUPS;
    // every lane of a warp runs the same trips and rounds (the shuffles need all of them)
    const int64_t trips = ceil_div<int64_t>(L.problems - int64_t(blockIdx.x) * GROUPS, step);
    for (int64_t trip = 0; trip < trips; ++trip) {
        const int64_t p = first + trip * step;
        seg::Problem P{0, 0, 0, 0, 0};
        if (p < L.problems) P = L.problem(p);
        if constexpr (G == 1) {
            rfa::Acc<Acc> a;
            for (int64_t k = 0; k < P.len; ++k) {
                const Acc x = Acc(in[P.in0 + k * P.in_step]);
                Acc y;
                if (!inclusive) y = R::convert_fast(a.state());
                a.add(x);
                if (inclusive) y = R::convert_fast(a.state());
                out[P.out0 + k * P.out_step] = y;
            }
        } else {
            int64_t len = P.len;
#pragma unroll
            for (int m = 1; m < WARP; m <<= 1) {
                const int64_t other = __shfl_xor_sync(FULL_MASK, (long long)len, m);
                len = other > len ? other : len;
            }
            State<Acc> run = R::identity();
            for (int64_t k0 = 0; k0 < len; k0 += WARP) {
                const int64_t k = k0 + sub;
                const bool here = k < P.len;
                const Acc x = here ? Acc(in[P.in0 + k * P.in_step]) : Acc(0);
                rfa::Acc<Acc> a;
                a.add(x);
                const State<Acc> inc = warp_inclusive(a.state(), sub);
                State<Acc> exc = shfl_up_state(inc, 1);
                if (sub == 0) exc = R::identity();
                if (here) out[P.out0 + k * P.out_step] = R::convert_fast(R::merge(run, inclusive ? inc : exc));
                run = R::merge(run, shfl_from_state(inc, WARP - 1));
            }
        }
    }
}

template <class In, class Op>
struct GroupsRep {
    static size_t scratch(const gp_scan_args &) { return 0; }
    static cudaError_t run(const gp_scan_args &) { return cudaErrorInvalidValue; }
};

template <class In, class Acc>
struct GroupsRepFloat {
    static size_t scratch(const gp_scan_args &) { return 0; }
    template <int G>
    static cudaError_t launch(const gp_scan_args &a, const seg::Layout &L) {
        constexpr int GROUPS = 256 / G;
        DeviceFacts d;
        GP_TRY(device_facts(d));
        int64_t grid = std::min<int64_t>(ceil_div<int64_t>(L.problems, GROUPS), int64_t(d.sms) * 8);
        grid = test_grid(grid);
        GP_LAUNCH((scan_rfa_groups<G, In, Acc>), unsigned(grid), 256, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), L, a.inclusive != 0);
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout L = Layout_of(a);
        const int64_t mean = L.problems > 0 ? L.elements() / L.problems : 0;
        // a thread a problem where they are short, or many and side by side
        // (columns: neighbouring threads read neighbouring addresses)
        if (mean <= 8 || (L.offsets == nullptr && L.inner > 1 && L.problems >= 2048)) return launch<1>(a, L);
        return launch<WARP>(a, L);
    }
    static seg::Layout Layout_of(const gp_scan_args &a) { return seg::Layout::of(a); }
};
template <class In> struct GroupsRep<In, Sum<float>> : GroupsRepFloat<In, float> {};
template <class In> struct GroupsRep<In, Sum<double>> : GroupsRepFloat<In, double> {};

}  // namespace scanrep
GP_NAMESPACE_END
