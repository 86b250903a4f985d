// cast.cu - element-wise conversion between the gpuprims dtypes.  The
// reduction and scan kernels compute in int32, int64, float32 and float64
// (GP_COMBOS; single_pass also reads the narrow dtypes of GP_NARROW_COMBOS
// directly); an input of another dtype, or a dtype= request without an
// instance, is converted into scratch first, and an array result whose
// dtype is not the accumulator's (float16 sums accumulate in float32, a
// uint8 minimum is found in int32) is converted back.  Conversions follow
// C's (and NumPy's astype): integers wrap modulo 2^bits, floats round to
// nearest even, bool is x != 0.
//
// A min/max result is converted with GP_CAST_SATURATE or-ed into `to`: an
// integer accumulator is clamped to the target's range (bool: to [0, 1])
// instead of wrapped.  Every value a min/max produces is an input value,
// already in the narrow range, except the identity of an exclusive scan's
// first element or an empty segment: int32's INT32_MAX / INT32_MIN, which
// wrap to -1 / 0 in int8 (and INT32_MIN to true in bool) but clamp to
// exactly the narrow dtype's own identity (127 / -128, true / false).
#include "common.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

// What a value becomes in the To type.
template <class To> struct Convert {
    template <class From> __host__ __device__ static To from(From x) { return To(x); }
    __host__ __device__ static To from(Half h) { return To(half_to_float(h.bits)); }
};
template <> struct Convert<bool> {
    template <class From> __host__ __device__ static bool from(From x) { return x != From(0); }
    __host__ __device__ static bool from(Half h) { return (h.bits & 0x7fffu) != 0; }
};
template <> struct Convert<Half> {
    template <class From> __host__ __device__ static Half from(From x) { return Half{float_to_half(float(x))}; }
    __host__ __device__ static Half from(Half h) { return h; }
};

// The range of an integer target as long long, for the saturating
// conversion; a float target (or uint64, whose range holds every int64 at
// or above 0) has no upper clamp.
template <class T> struct Range {
    static constexpr long long lo = -0x7fffffffffffffffLL - 1, hi = 0x7fffffffffffffffLL;
};
template <> struct Range<bool> { static constexpr long long lo = 0, hi = 1; };
template <> struct Range<signed char> { static constexpr long long lo = -128, hi = 127; };
template <> struct Range<unsigned char> { static constexpr long long lo = 0, hi = 255; };
template <> struct Range<short> { static constexpr long long lo = -32768, hi = 32767; };
template <> struct Range<unsigned short> { static constexpr long long lo = 0, hi = 65535; };
template <> struct Range<int> { static constexpr long long lo = -2147483647LL - 1, hi = 2147483647; };
template <> struct Range<unsigned> { static constexpr long long lo = 0, hi = 4294967295LL; };
template <> struct Range<unsigned long long> { static constexpr long long lo = 0, hi = 0x7fffffffffffffffLL; };

// What a value becomes in the To type, clamped to To's range: for the
// signed integer accumulators (int32, int64); any other source converts as
// Convert does.
template <class To> struct Saturate {
    template <class From> __host__ __device__ static To from(From x) { return Convert<To>::from(x); }
    __host__ __device__ static To from(int x) { return from((long long)x); }
    __host__ __device__ static To from(long long x) {
        const long long lo = Range<To>::lo, hi = Range<To>::hi;
        return Convert<To>::from(x < lo ? lo : (x > hi ? hi : x));
    }
};

template <class From, class To, bool Saturating>
__global__ void cast_kernel(const From *in, To *out, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = Saturating ? Saturate<To>::from(in[i]) : Convert<To>::from(in[i]);
}

// The C type of each gp_dtype code, for the conversions only.
template <class F> cudaError_t with_type(gp_dtype t, F &&f) {
    switch (t) {
    case GP_INT32: return f(int());
    case GP_INT64: return f((long long)0);
    case GP_FLOAT32: return f(float());
    case GP_FLOAT64: return f(double());
    case GP_BOOL: return f(bool());
    case GP_INT8: return f((signed char)0);
    case GP_INT16: return f(short());
    case GP_UINT8: return f((unsigned char)0);
    case GP_UINT16: return f((unsigned short)0);
    case GP_UINT32: return f(0u);
    case GP_UINT64: return f(0ull);
    case GP_FLOAT16: return f(Half{0});
    default: return cudaErrorInvalidValue;
    }
}
}  // namespace

extern "C" cudaError_t GP_SYM(gp_cast)(const void *in, gp_dtype from, void *out, gp_dtype to, int64_t n,
                               cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    const unsigned block = 256;
    const int64_t want = ceil_div<int64_t>(n, block);
    const unsigned grid = unsigned(want < 65535 ? want : 65535);
    if (to & GP_CAST_SATURATE) {
        to = gp_dtype(to & ~GP_CAST_SATURATE);
        if (from == GP_INT32 || from == GP_INT64)  // the integer accumulators: clamped
            return with_type(from, [&](auto f) {
                using From = decltype(f);
                return with_type(to, [&](auto t) -> cudaError_t {
                    using To = decltype(t);
                    GP_LAUNCH((cast_kernel<From, To, true>), grid, block, 0, s, static_cast<const From *>(in),
                              static_cast<To *>(out), n);
                    return cudaSuccess;
                });
            });
    }
    return with_type(from, [&](auto f) {
        using From = decltype(f);
        return with_type(to, [&](auto t) -> cudaError_t {
            using To = decltype(t);
            GP_LAUNCH((cast_kernel<From, To, false>), grid, block, 0, s, static_cast<const From *>(in),
                      static_cast<To *>(out), n);
            return cudaSuccess;
        });
    });
}

extern "C" int GP_SYM(gp_combo_supported)(gp_op op, gp_dtype in_t, gp_dtype acc_t) {
    return gp::combo_listed(0u, op, in_t, acc_t) ? 1 : 0;
}

extern "C" int GP_SYM(gp_variant_reads)(const gp_variant *v, gp_op op, gp_dtype in_t, gp_dtype acc_t) {
    const unsigned sets = (v->flags & GP_NARROW_IN) ? gp::COMBOS_NARROW : 0u;
    return gp::combo_listed(sets, op, in_t, acc_t) ? 1 : 0;
}

GP_NAMESPACE_END
