// rfa.cuh - a reproducible floating-point accumulator: sums whose bits do
// not depend on the order of the additions.  After Ahrens, Demmel and
// Nguyen, "Algorithms for Efficient Reproducible Floating Point Summation",
// ACM Transactions on Mathematical Software 46(3), article 22, 2020
// (binned, or "indexed", summation; ReproBLAS is the authors' library).
// Templated on float and double; usable in device kernels, in the emulator
// (the same code compiled by the host compiler) and in plain host C++.
//
// WHY A FLOAT SUM DEPENDS ON ORDER.  Every addition rounds its exact result
// to the nearest float (ties to even).  Rounding discards different bits for
// different operands, so (a + b) + c and a + (b + c) can differ: in float32,
// (1e8 + -1e8) + 1 = 1 but 1e8 + (-1e8 + 1) = 0, because 1e8 - 1 is not a
// float32 (its spacing there is 8).  A parallel sum adds in an order fixed by
// the thread, block and tile shapes, so a different GPU (another SM count,
// another tuning) or another chunking of the array gives other bits.
//
// HOW FIXED BINS MAKE IT ASSOCIATIVE.  Cut the number line into bins by
// exponent, at boundaries that do not depend on the data: bin j has the
// quantum u_j = 2^(E0 + j W) (W bits per bin; E0 the exponent of the
// smallest subnormal, so bin 0's quantum divides every float).  To deposit
// x into the K bins J, J-1, ..., J-K+1, round x to a multiple of u_J, keep
// the quotient as an integer count of bin J, carry the (exact) remainder
// to bin J-1, and so on; the remainder of the last bin is dropped.  Every
// count is an integer and integer addition is exact, so the state after
// any set of deposits is the same whatever their order.  Rounding to a
// multiple of u is one float addition: for M = 1.5 * 2^(P-1) * u (P the
// mantissa digits), M + r is in [2^(P-1) u, 2^P u) whenever |r| <= 2^(W-1)
// u < 2^(P-2) u, a binade whose spacing is u, so the addition rounds r to
// the nearest multiple of u, and bits(M + r) - bits(M) is that multiple's
// count (the bits of floats in one binade are linear in their value).
// (M + r) - M and r - ((M + r) - M) are exact (Sterbenz's lemma).
//
// WHICH BINS.  The state's top bin J is the smallest index with
// |x| <= 2^(W-1) u_J for every x seen (and J >= K-1): J depends only on the
// largest |x|, a function of the multiset.  A deposit made while J was
// smaller is moved up when J grows: its counts shift by whole bins and the
// lowest bins fall off.  This gives the same value as depositing at the
// final J from the start, because the kept part of a cascade started at
// any bin J' >= J(x) and stopped at bin m is exactly RNE_m(x), x rounded to
// the nearest multiple of u_m, ties to even (each remainder is congruent to
// x modulo the bin's quantum, and the quanta differ by 2^W, an even factor,
// so the tie-breaking parity agrees); and where x's top bin lies below the
// kept ones, |x| <= 2^(W-1) u_{m-1} = u_m / 2 rounds to 0.  So the exact
// value of a state is
//     V = sum_i RNE_m(x_i),  m = J - K + 1,  J from max|x_i|,
// a function of the multiset of inputs only: independent of order, of how
// the inputs are split among threads, blocks or chunks, and of the launch
// configuration.  The state itself is (J, K counts, flags) and is not
// canonical (the counts' split among bins depends on when J grew), but
// the conversion to a float depends on V only: it rounds V once, exactly
// (round to nearest even), so equal V give equal bits.
//
// MERGING.  a (+) b: shift both to J = max(J_a, J_b) (dropping bins) and
// add the counts: exact and associative, and the same as depositing all
// inputs into one state (the argument above), so it serves tree reductions,
// look-back scans, and carries between chunks on the host.
//
// THE HOT LOOP works in a frame scaled by 2^-E_J (so that u_J = 1 and the
// M constants are compile-time numbers that never overflow): x * 2^-E_J is
// exact for |x| <= the bin limit unless it underflows, and then it is far
// below every kept quantum and rounds to 0 either way; on the GPU the scaling
// is fused into bin 0's addition (fma, same value).  Each thread adds
// bits(M + r) into one Bits word per bin (wrapping) and subtracts
// (number of deposits) * bits(M) when it flushes into the 64-bit counts,
// which it does before the wrapped sum could exceed its range.  Per element
// that is 3K - 2 float operations and K integer additions, plus one compare of
// |x| with the state's limit (values over it - a new largest magnitude,
// Inf, NaN - take the slow path).
//
// SPECIAL VALUES, as numpy.sum: any NaN, or +Inf with -Inf, gives NaN (the
// quiet NaN 0x7fc00000 / 0x7ff8000000000000, the same bits everywhere);
// +Inf or -Inf alone gives that infinity; flags record them, so the order
// does not matter.  An exact sum beyond the largest float rounds to +-Inf.
// Subnormal inputs are deposited exactly (bin 0's quantum is the smallest
// subnormal).  A zero sum is +0.0, as numpy.sum gives (it starts from +0.0,
// so even a sum of -0.0 alone is +0.0).
//
// ERROR BOUND.  Each x_i loses at most min(|x_i|, u_m / 2) with
// u_m = 2^(-(K-1) W) u_J < 2^(1 - (K-1) W) max|x|, and the conversion
// rounds once more, so
//     |result - sum x_i| <= n 2^(-(K-1) W) max|x_i| + eps |sum x_i|
// with eps = 2^-P, the unit roundoff: float32 (W = 21, K = 3) 2^-42 n
// max|x|; float64 (W = 26, K = 3) 2^-52 n max|x|.  That is never worse than
// a plain recursive float sum's (n - 1) eps' sum|x_i| (eps' = 2^(1-P)); for
// float32 it is below the pairwise bound (log2 n) eps' sum|x| up to n = 2^25.
// Most data lose far less: the dropped parts have random signs.
//
// LIMITS.  The 64-bit counts grow by at most 2^(W-1) per input, so a state
// holds at least 2^(64-W) inputs (float32 2^43, float64 2^38) before they
// could overflow.
#ifndef GPUPRIMS_RFA_CUH
#define GPUPRIMS_RFA_CUH

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(GP_EMULATOR)
#define GP_RFA_HD __host__ __device__
#else
#define GP_RFA_HD
#endif

#ifdef GP_NAMESPACE_BEGIN
GP_NAMESPACE_BEGIN
#else
namespace gp {
#endif
namespace rfa {

// The bin layout of each type.  P: mantissa digits; E0: exponent of the
// smallest subnormal; EMAX: 2^EMAX is the first power of two above the
// largest float; W: bits per bin (W - 1 < P - 2, and float32 counts of up
// to 1024 deposits stay in 32 bits); K: bins kept (the paper's default 3).
template <class T> struct Traits;
template <> struct Traits<float> {
    using Bits = uint32_t;
    using SBits = int32_t;
    static constexpr int P = 24, W = 21, K = 3, E0 = -149, EMAX = 128, BIAS = 127;
};
template <> struct Traits<double> {
    using Bits = uint64_t;
    using SBits = int64_t;
    static constexpr int P = 53, W = 26, K = 3, E0 = -1074, EMAX = 1024, BIAS = 1023;
};

// State flags (ORed when states merge).
enum : uint32_t {
    POS_INF = 1,
    NEG_INF = 2,
    NAN_SEEN = 4,
};

template <class To, class From>
GP_RFA_HD inline To bits_of(From v) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To r;
    memcpy(&r, &v, sizeof r);
    return r;
}

GP_RFA_HD inline float abs_of(float x) { return fabsf(x); }
GP_RFA_HD inline double abs_of(double x) { return fabs(x); }
GP_RFA_HD inline float fused(float a, float b, float c) { return fmaf(a, b, c); }
GP_RFA_HD inline double fused(double a, double b, double c) { return fma(a, b, c); }

GP_RFA_HD inline int clz64(uint64_t v) {  // v != 0
#ifdef __CUDA_ARCH__
    return __clzll(static_cast<long long>(v));
#else
    return __builtin_clzll(v);
#endif
}

// The stored form of an accumulator: what blocks, tiles and chunks
// exchange.  Position k holds the count of bin index - k, in units of that
// bin's quantum 2^(E0 + (index - k) W).  32 bytes for both types.
template <class T>
struct alignas(16) State {
    static constexpr int K = Traits<T>::K;
    int32_t index;
    uint32_t flags;
    int64_t bin[K];
};

template <class T>
struct Rfa {
    using Tr = Traits<T>;
    using Bits = typename Tr::Bits;
    using SBits = typename Tr::SBits;
    static constexpr int P = Tr::P, W = Tr::W, K = Tr::K, E0 = Tr::E0, EMAX = Tr::EMAX,
                         BIAS = Tr::BIAS;
    static constexpr int J_MIN = K - 1;
    static constexpr int J_MAX = (EMAX - E0 - (W - 1) + W - 1) / W;
    static constexpr Bits SIGN = Bits(1) << (8 * sizeof(T) - 1);
    // deposits a thread may add into its Bits words before it must flush
    static constexpr int64_t FLUSH = int64_t(1) << (8 * sizeof(T) - 1 - W);
    static_assert(W - 1 < P - 2, "a bin's counts must stay inside M's binade");
    static_assert(E0 + J_MIN * W - (K - 1) * W >= E0, "bins start at the smallest subnormal");

    // 2^e exactly (0 below the subnormals, +Inf at and above 2^EMAX).
    GP_RFA_HD static T pow2(int e) {
        Bits b;
        if (e >= EMAX) b = Bits(EMAX + BIAS) << (P - 1);
        else if (e >= 1 - BIAS) b = Bits(e + BIAS) << (P - 1);
        else if (e >= E0) b = Bits(1) << (e - E0);
        else b = 0;
        return bits_of<T>(b);
    }
    // M_k of the scaled frame (top bin's quantum 1): 1.5 * 2^(P-1-kW).
    GP_RFA_HD static T big(int k) { return T(1.5) * pow2(P - 1 - k * W); }
    // The largest |x| bin j may take as its top bin: 2^(E0 + jW + W - 1),
    // capped at the largest float (so that Inf and NaN always fail the test).
    GP_RFA_HD static T limit(int j) {
        const int e = E0 + j * W + W - 1;
        return e >= EMAX ? bits_of<T>(Bits((Bits(EMAX + BIAS) << (P - 1)) - 1)) : pow2(e);
    }
    GP_RFA_HD static T scale(int j) { return pow2(-(E0 + j * W)); }
    // The smallest index >= j whose limit holds |x| (x finite).  From
    // c = ceil(log2 |x|), read off the bits: limit(i) = 2^(E0 + iW + W - 1)
    // holds |x| exactly when E0 + iW + W - 1 >= c (where that exponent
    // reaches EMAX, limit(i) is the largest float, which holds every finite
    // |x|, and c <= EMAX holds there too), so the index is
    // ceil((c - E0 - W + 1) / W), or j if that is smaller.
    GP_RFA_HD static int index_from(int j, T x) {
        const Bits b = bits_of<Bits>(x) & Bits(~SIGN);
        if (b == 0) return j;
        const int be = int(b >> (P - 1));
        const Bits frac = b & Bits((Bits(1) << (P - 1)) - 1);
        int c;
        if (be != 0) {
            c = be - BIAS + (frac != 0);  // 2^(be - BIAS) (1 + frac 2^(1-P))
        } else {                          // subnormal: frac 2^E0, frac >= 1
            const uint64_t f1 = uint64_t(frac) - 1;  // ceil(log2 frac) = bit length of frac - 1
            c = E0 + (f1 == 0 ? 0 : 64 - clz64(f1));
        }
        const int need = c - E0 - (W - 1);  // > -W
        const int i = need <= 0 ? 0 : (need + W - 1) / W;
        return i > j ? i : j;
    }

    GP_RFA_HD static State<T> identity() {
        State<T> s;
        s.index = J_MIN;
        s.flags = 0;
        for (int k = 0; k < K; ++k) s.bin[k] = 0;
        return s;
    }
    // Shift s's counts up to index j >= s.index (the lowest bins fall off).
    // (Written with constant indices only, so that the counts stay in
    // registers on the GPU.)
    GP_RFA_HD static void raise_to(int64_t *bin, int from, int j) {
        const int d = j - from;
#pragma unroll
        for (int k = K - 1; k >= 0; --k) {
            int64_t v = 0;
#pragma unroll
            for (int s = 0; s <= k; ++s) v = d == s ? bin[k - s] : v;
            bin[k] = v;
        }
    }
    GP_RFA_HD static State<T> merge(State<T> a, const State<T> &b) {
        State<T> r = b;
        if (a.index < r.index) raise_to(a.bin, a.index, r.index);
        else if (r.index < a.index) raise_to(r.bin, r.index, a.index), r.index = a.index;
        for (int k = 0; k < K; ++k) r.bin[k] += a.bin[k];
        r.flags |= a.flags;
        return r;
    }

    // The state rounded to T: round to nearest even of its exact value
    // V = sum_k bin[k] 2^(E0 + (index - k) W), with the special values and
    // the sign of zero as the header comment says.
    GP_RFA_HD static T convert(const State<T> &s) {
        const Bits inf = Bits(EMAX + BIAS) << (P - 1);
        if ((s.flags & NAN_SEEN) || ((s.flags & POS_INF) && (s.flags & NEG_INF)))
            return bits_of<T>(Bits(inf | (Bits(1) << (P - 2))));
        if (s.flags & POS_INF) return bits_of<T>(inf);
        if (s.flags & NEG_INF) return bits_of<T>(Bits(inf | SIGN));
        // N = sum_k bin[k] 2^((K-1-k) W) as a 192-bit two's complement integer.
        uint64_t l[3] = {0, 0, 0};
        for (int k = 0; k < K; ++k) {
            const int sh = (K - 1 - k) * W;  // < 128
            const uint64_t v = uint64_t(s.bin[k]), ext = s.bin[k] < 0 ? ~uint64_t(0) : 0;
            uint64_t w[3];
            if (sh == 0) {
                w[0] = v, w[1] = ext, w[2] = ext;
            } else if (sh < 64) {
                w[0] = v << sh, w[1] = (v >> (64 - sh)) | (ext << sh), w[2] = ext;
            } else if (sh == 64) {
                w[0] = 0, w[1] = v, w[2] = ext;
            } else {
                w[0] = 0, w[1] = v << (sh - 64), w[2] = (v >> (128 - sh)) | (ext << (sh - 64));
            }
            uint64_t carry = 0;
            for (int i = 0; i < 3; ++i) {
                const uint64_t a = l[i] + w[i];
                const uint64_t c1 = a < l[i];
                l[i] = a + carry;
                carry = c1 | (l[i] < a);
            }
        }
        const bool neg = (l[2] >> 63) != 0;
        if (neg) {  // magnitude
            uint64_t carry = 1;
            for (int i = 0; i < 3; ++i) {
                l[i] = ~l[i] + carry;
                carry = carry && l[i] == 0;
            }
        }
        int top;  // index of the highest set bit
        if (l[2]) top = 191 - clz64(l[2]);
        else if (l[1]) top = 127 - clz64(l[1]);
        else if (l[0]) top = 63 - clz64(l[0]);
        else return T(0);
        const int e_lsb = E0 + (s.index - (K - 1)) * W;  // exponent of N's unit
        const int e = top + e_lsb;                       // V in [2^e, 2^(e+1))
        int q = e - (P - 1) > E0 ? e - (P - 1) : E0;     // exponent of the result's ulp
        const int sh = q - e_lsb;
        uint64_t mant;
        if (sh <= 0) {
            mant = l[0] << -sh;  // N < 2^P here: one limb
        } else {
            mant = shr(l, sh);
            const bool half = bit(l, sh - 1);
            bool sticky = false;
            for (int i = 0; i < 3 && !sticky; ++i) {
                const int lo = 64 * i;
                if (sh - 1 <= lo) break;
                const int nb = sh - 1 - lo;  // bits of limb i below the half bit
                sticky = (nb >= 64 ? l[i] : (l[i] & ((uint64_t(1) << nb) - 1))) != 0;
            }
            if (half && (sticky || (mant & 1))) ++mant;
            if (mant == (uint64_t(1) << P)) mant >>= 1, ++q;
        }
        Bits b;
        if (mant >= (uint64_t(1) << (P - 1))) {
            if (q + P - 1 >= EMAX) b = inf;
            else b = (Bits(q + P - 1 + BIAS) << (P - 1)) | Bits(mant - (uint64_t(1) << (P - 1)));
        } else {
            b = Bits(mant);  // subnormal: q == E0
        }
        return bits_of<T>(neg ? Bits(b | SIGN) : b);
    }

    // The same rounding as convert(), with the counts summed in one 128-bit
    // integer (|N| < 2^(63 + 2W + 2) <= 2^117): no arrays indexed at run
    // time, so on the GPU it stays in registers.  What the scans run once
    // per element.
    GP_RFA_HD static T convert_fast(const State<T> &s) {
        static_assert(K == 3 && 2 * W + 63 + 2 < 127, "three bins in 128 bits");
        if (s.flags != 0) return convert(s);
        const __int128 N = (__int128(s.bin[0]) << (2 * W)) + (__int128(s.bin[1]) << W) + __int128(s.bin[2]);
        return round_count(N, E0 + (s.index - (K - 1)) * W);
    }

    // N 2^e_lsb rounded to nearest even (|N| < 2^127, e_lsb >= E0): what
    // convert_fast rounds, for a caller that holds the count itself.
    GP_RFA_HD static T round_count(__int128 N, int e_lsb) {
        using U = unsigned __int128;
        const bool neg = N < 0;
        const U u = neg ? U(0) - U(N) : U(N);
        const uint64_t hi = uint64_t(u >> 64), lo = uint64_t(u);
        if ((hi | lo) == 0) return T(0);
        const int top = hi ? 127 - clz64(hi) : 63 - clz64(lo);
        int q = top + e_lsb - (P - 1) > E0 ? top + e_lsb - (P - 1) : E0;  // exponent of the result's ulp
        const int sh = q - e_lsb;
        uint64_t mant;
        if (sh <= 0) {
            mant = lo << -sh;  // N < 2^P here
        } else {
            mant = uint64_t(u >> sh);
            const bool half = (u >> (sh - 1)) & 1;
            const bool sticky = (u & ((U(1) << (sh - 1)) - 1)) != 0;
            if (half && (sticky || (mant & 1))) ++mant;
            if (mant == (uint64_t(1) << P)) mant >>= 1, ++q;
        }
        const Bits inf = Bits(EMAX + BIAS) << (P - 1);
        Bits b;
        if (mant >= (uint64_t(1) << (P - 1)))
            b = q + P - 1 >= EMAX ? inf : (Bits(q + P - 1 + BIAS) << (P - 1)) | Bits(mant - (uint64_t(1) << (P - 1)));
        else
            b = Bits(mant);  // subnormal: q == E0
        return bits_of<T>(neg ? Bits(b | SIGN) : b);
    }

private:
    GP_RFA_HD static bool bit(const uint64_t *l, int i) { return (l[i / 64] >> (i % 64)) & 1; }
    GP_RFA_HD static uint64_t shr(const uint64_t *l, int s) {  // low 64 bits of l >> s, 0 < s < 192
        const int i = s / 64, b = s % 64;
        const uint64_t lo = l[i], hi = i + 1 < 3 ? l[i + 1] : 0;
        return b == 0 ? lo : (lo >> b) | (hi << (64 - b));
    }
};

// A thread's accumulator, in registers: the state plus the per-bin Bits
// words of the hot loop (see the header comment).  Usage:
//   Acc<float> a;  a.add(x) ...  or, for a batch whose every |x| <= a.lim:
//   a.deposit(x) ... a.counted(n);   then a.state().
template <class T>
struct Acc {
    using R = Rfa<T>;
    using Bits = typename R::Bits;
    using SBits = typename R::SBits;
    static constexpr int K = R::K;

    int index;
    uint32_t flags;
    T scl, lim;          // 2^-E_index and the limit of index
    Bits word[K];        // wrapping sums of bits(M_k + r) since the last flush
    int64_t pending;     // deposits since the last flush
    int64_t bin[K];

    GP_RFA_HD Acc() : index(R::J_MIN), flags(0), scl(R::scale(R::J_MIN)), lim(R::limit(R::J_MIN)),
                      pending(0) {
        for (int k = 0; k < K; ++k) word[k] = 0, bin[k] = 0;
    }

    // x must satisfy |x| <= lim (so it is finite).  Does not count it.
    GP_RFA_HD void deposit(T x) {
        const T m0 = R::big(0);
#ifdef __CUDA_ARCH__
        T t = fused(x, scl, m0);
        word[0] += bits_of<Bits>(t);
        T r = fused(x, scl, -(t - m0));
#else
        const T xs = x * scl;  // the same values as the fused form (header comment)
        T t = xs + m0;
        word[0] += bits_of<Bits>(t);
        T r = xs - (t - m0);
#endif
#pragma unroll
        for (int k = 1; k < K - 1; ++k) {
            const T mk = R::big(k);
            t = mk + r;
            word[k] += bits_of<Bits>(t);
            r = r - (t - mk);
        }
        t = R::big(K - 1) + r;
        word[K - 1] += bits_of<Bits>(t);
    }
    // After deposit() of n values: flush if the next batch could overflow.
    GP_RFA_HD void counted(int64_t n, int64_t next_batch) {
        pending += n;
        if (pending > R::FLUSH - next_batch) flush();
    }
    GP_RFA_HD void flush() {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            bin[k] += int64_t(SBits(word[k] - Bits(pending) * bits_of<Bits>(R::big(k))));
            word[k] = 0;
        }
        pending = 0;
    }
    // x not within lim: a new largest magnitude, or Inf or NaN.
    GP_RFA_HD void widen(T x) {
        if (x != x) {
            flags |= NAN_SEEN;
            return;
        }
        if (x - x != x - x) {  // infinite
            flags |= x > T(0) ? POS_INF : NEG_INF;
            return;
        }
        flush();
        const int j = R::index_from(index, x);
        R::raise_to(bin, index, j);
        index = j;
        scl = R::scale(j);
        lim = R::limit(j);
    }
    // Any one value.
    GP_RFA_HD void add(T x) {
        const T a = abs_of(x);
        if (!(a <= lim)) {
            widen(x);
            if (!(a <= lim)) return;  // Inf or NaN: not deposited
        }
        deposit(x);
        counted(1, 1);
    }
    // Merge a stored state into this accumulator.
    GP_RFA_HD void add(const State<T> &s) {
        flush();
        State<T> me = state();
        me = R::merge(me, s);
        load(me);
    }
    GP_RFA_HD void load(const State<T> &s) {
        index = s.index;
        flags = s.flags;
        scl = R::scale(index);
        lim = R::limit(index);
        pending = 0;
        for (int k = 0; k < K; ++k) bin[k] = s.bin[k], word[k] = 0;
    }
    GP_RFA_HD State<T> state() {
        flush();
        State<T> s;
        s.index = index;
        s.flags = flags;
        for (int k = 0; k < K; ++k) s.bin[k] = bin[k];
        return s;
    }
};

// Convenience: the reproducible sum of n values on the host.
template <class T>
inline T sum(const T *x, int64_t n) {
    Acc<T> a;
    for (int64_t i = 0; i < n; ++i) a.add(x[i]);
    return Rfa<T>::convert(a.state());
}

}  // namespace rfa
#ifdef GP_NAMESPACE_END
GP_NAMESPACE_END
#else
}  // namespace gp
#endif

#endif  // GPUPRIMS_RFA_CUH
