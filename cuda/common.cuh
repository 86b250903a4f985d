// common.cuh - what every kernel file shares: the namespaces of the two
// builds, the launch macro and error handling, ceil_div and align_up, what
// a launcher knows of the device, the operators with their identities and
// the dtype dispatch.  It also brings in the device helpers that every
// kernel file uses: warp.cuh (warp and block collectives) and memory.cuh
// (dynamic shared memory, a streaming load).  The sm_80+/sm_90 asynchronous
// copies, which only the look-back scan uses, are in async_copy.cuh.
#pragma once

#include <atomic>
#include <cstdint>
#include <climits>
#include <cstring>
#include <cuda_runtime.h>  // emu/include/cuda_runtime.h in the emulator build

#include "gpuprims.h"

// Every .cu file is compiled twice: by nvcc for the GPU, and with
// GP_EMULATOR defined by the host compiler for the emulator backend (emu/).
// Both sets of objects live in one module, so what has external linkage
// sits in gp:: for the GPU and in gp::emu:: (an inline namespace: the
// source still says gp::) for the emulator; the registry tables and the C
// entry points get the suffix _emu (GP_SYM).
#ifdef GP_EMULATOR
#define GP_NAMESPACE_BEGIN namespace gp { inline namespace emu {
#define GP_NAMESPACE_END } }
#else
#define GP_NAMESPACE_BEGIN namespace gp {
#define GP_NAMESPACE_END }
#endif

// Return the first CUDA error from a host launcher instead of exiting: the
// Python glue turns it into gpuprims.CudaError.
#define GP_TRY(...)                                                         \
    do {                                                                    \
        cudaError_t gp_err_ = (__VA_ARGS__);                                \
        if (gp_err_ != cudaSuccess) return gp_err_;                         \
    } while (0)

// The one way kernels are launched in gpuprims (no bare <<< >>> elsewhere):
// it launches and returns from the enclosing launcher on a launch error.
// The emulator runs the launch on the CPU before it returns.
#ifdef GP_EMULATOR
#define GP_LAUNCH(kernel, grid, block, smem, stream, ...)                   \
    GP_TRY(::gp_emu_rt::launch_kernel(#kernel, kernel, (grid), (block), (smem), (stream), __VA_ARGS__))
#else
#define GP_LAUNCH(kernel, grid, block, smem, stream, ...)                   \
    do {                                                                    \
        kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__);         \
        GP_TRY(cudaGetLastError());                                         \
    } while (0)
#endif

// The main kernel of a variant, for gpuprims.occupancy (gp_variant.kernel):
//   GP_KERNEL_OF(gp_reduce_unroll2_kernel, reduce_unroll<2, float, Sum<float>>)
// A C++ function in the backend's namespace (the emulator build has its own).
#define GP_KERNEL_OF(name, ...)                                             \
    const void *name(void) { return reinterpret_cast<const void *>(&__VA_ARGS__); }

// The (op, input type, accumulator type) combinations instantiated for every
// reduction and scan variant: numpy's defaults (sum and cumsum of int32
// accumulate in int64) plus the same-type ones.  gpuprims converts the input
// first for any other dtype= request, so this table is the only list.
#define GP_COMBOS(X)                                                 \
    X(GP_SUM, GP_INT32, GP_INT64)                                           \
    X(GP_SUM, GP_INT32, GP_INT32)                                           \
    X(GP_SUM, GP_INT64, GP_INT64)                                           \
    X(GP_SUM, GP_FLOAT32, GP_FLOAT32)                                       \
    X(GP_SUM, GP_FLOAT32, GP_FLOAT64)                                       \
    X(GP_SUM, GP_FLOAT64, GP_FLOAT64)                                       \
    X(GP_MIN, GP_INT32, GP_INT32)                                           \
    X(GP_MIN, GP_INT64, GP_INT64)                                           \
    X(GP_MIN, GP_FLOAT32, GP_FLOAT32)                                       \
    X(GP_MIN, GP_FLOAT64, GP_FLOAT64)                                       \
    X(GP_MAX, GP_INT32, GP_INT32)                                           \
    X(GP_MAX, GP_INT64, GP_INT64)                                           \
    X(GP_MAX, GP_FLOAT32, GP_FLOAT32)                                       \
    X(GP_MAX, GP_FLOAT64, GP_FLOAT64)

// The narrow inputs read as they are, in NumPy's accumulator (the one
// python/gpuprims/_axes.py's DtypePlan gives: sums of bool and of every
// integer type in int64, where unsigned sums wrap modulo 2^64 exactly as
// uint64's; float16 in float32; min/max of the small integers in int32, of
// uint32 in int64, of float16 in float32; of uint64 in uint64, where the
// other variants compare int64 with the sign bit flipped).  Instantiated only by the
// variants that opt in (with_combo<COMBOS_NARROW>, gp_variant flag
// GP_NARROW_IN): the others get such an input converted first (gp_cast).
#define GP_NARROW_COMBOS(X)                                                 \
    X(GP_SUM, GP_BOOL, GP_INT64)                                            \
    X(GP_SUM, GP_INT8, GP_INT64)                                            \
    X(GP_SUM, GP_INT16, GP_INT64)                                           \
    X(GP_SUM, GP_UINT8, GP_INT64)                                           \
    X(GP_SUM, GP_UINT16, GP_INT64)                                          \
    X(GP_SUM, GP_UINT32, GP_INT64)                                          \
    X(GP_SUM, GP_UINT64, GP_INT64)                                          \
    X(GP_SUM, GP_FLOAT16, GP_FLOAT32)                                       \
    X(GP_MIN, GP_BOOL, GP_INT32)                                            \
    X(GP_MIN, GP_INT8, GP_INT32)                                            \
    X(GP_MIN, GP_INT16, GP_INT32)                                           \
    X(GP_MIN, GP_UINT8, GP_INT32)                                           \
    X(GP_MIN, GP_UINT16, GP_INT32)                                          \
    X(GP_MIN, GP_UINT32, GP_INT64)                                          \
    X(GP_MIN, GP_FLOAT16, GP_FLOAT32)                                       \
    X(GP_MIN, GP_UINT64, GP_UINT64)                                         \
    X(GP_MAX, GP_BOOL, GP_INT32)                                            \
    X(GP_MAX, GP_INT8, GP_INT32)                                            \
    X(GP_MAX, GP_INT16, GP_INT32)                                           \
    X(GP_MAX, GP_UINT8, GP_INT32)                                           \
    X(GP_MAX, GP_UINT16, GP_INT32)                                          \
    X(GP_MAX, GP_UINT32, GP_INT64)                                          \
    X(GP_MAX, GP_FLOAT16, GP_FLOAT32)                                       \
    X(GP_MAX, GP_UINT64, GP_UINT64)

#include "half.cuh"

GP_NAMESPACE_BEGIN

template <class T>
__host__ __device__ constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

// Round a byte count up to a multiple of 256 so that scratch slices stay
// aligned for 16-byte vector loads.
__host__ __device__ constexpr size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t(255); }

// The smallest power of two >= v; the same, kept between lo and hi.
inline int64_t pow2_ceil(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

inline int64_t pow2_between(int64_t v, int64_t lo, int64_t hi) {
    const int64_t w = pow2_ceil(v < 1 ? 1 : v);
    return w < lo ? lo : w > hi ? hi : w;
}

// Let `kernel` launch with `dynamic` bytes of dynamic shared memory beside
// `fixed` bytes of static: past 48 KiB together, the most a launch gets
// without asking, the kernel must opt in (cudaFuncSetAttribute).  The
// emulator keeps the opt-in and checks the dynamic bytes against it.
template <class Kernel>
inline cudaError_t opt_in_shared(Kernel kernel, int dynamic, int fixed) {
    if (dynamic + fixed > 48 * 1024)
        return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic);
    return cudaSuccess;
}

// ------------------------------------------------------------- the device
// What a launcher needs to know of the current device: its SM count (to
// size a persistent grid) and the major number of its compute capability.
// Read once per device and kept, so a launch costs no attribute queries.
struct DeviceFacts {
    int sms, major;
};

inline cudaError_t device_facts(DeviceFacts &d) {
    constexpr int DEVICES = 64;
    static std::atomic<int> sms_of[DEVICES], major_of[DEVICES];  // sms 0: not read yet
    int dev = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    const bool kept = dev >= 0 && dev < DEVICES;  // beyond: read every time
    if (kept && (d.sms = sms_of[dev].load(std::memory_order_acquire)) != 0) {
        d.major = major_of[dev].load(std::memory_order_relaxed);
        return cudaSuccess;
    }
    if ((err = cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev)) != cudaSuccess)
        return err;
    if (kept) {
        major_of[dev].store(d.major, std::memory_order_relaxed);
        sms_of[dev].store(d.sms, std::memory_order_release);  // after major
    }
    return cudaSuccess;
}

// ---------------------------------------------------------------- operators
// Each operator carries its identity, so padding lanes and empty inputs
// contribute nothing.  min/max propagate NaN the way numpy.min/max do, and
// between operands that compare equal (0.0 and -0.0) they return the second,
// as numpy.minimum/maximum do: a reduction that combines its parts in index
// order, op(left, right), returns numpy.min's zero (the last of the tied).
template <class T> struct Limits;
template <> struct Limits<int> {
    __host__ __device__ static constexpr int lowest() { return INT_MIN; }
    __host__ __device__ static constexpr int highest() { return INT_MAX; }
};
template <> struct Limits<long long> {
    __host__ __device__ static constexpr long long lowest() { return LLONG_MIN; }
    __host__ __device__ static constexpr long long highest() { return LLONG_MAX; }
};
template <> struct Limits<unsigned long long> {
    __host__ __device__ static constexpr unsigned long long lowest() { return 0; }
    __host__ __device__ static constexpr unsigned long long highest() { return ~0ull; }
};
template <> struct Limits<float> {
    __host__ __device__ static constexpr float lowest() { return -__builtin_huge_valf(); }
    __host__ __device__ static constexpr float highest() { return __builtin_huge_valf(); }
};
template <> struct Limits<double> {
    __host__ __device__ static constexpr double lowest() { return -__builtin_huge_val(); }
    __host__ __device__ static constexpr double highest() { return __builtin_huge_val(); }
};

template <class T> __host__ __device__ inline bool is_nan(T x) { return x != x; }

template <class T> struct Sum {
    using type = T;
    __host__ __device__ static constexpr T identity() { return T(0); }
    __host__ __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T> struct Min {
    using type = T;
    __host__ __device__ static constexpr T identity() { return Limits<T>::highest(); }
    __host__ __device__ T operator()(T a, T b) const {
        return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? a : b));
    }
};
template <class T> struct Max {
    using type = T;
    __host__ __device__ static constexpr T identity() { return Limits<T>::lowest(); }
    __host__ __device__ T operator()(T a, T b) const {
        return is_nan(a) ? a : (is_nan(b) ? b : (a > b ? a : b));
    }
};

template <gp_op OP, class Acc> struct OpOf;
template <class Acc> struct OpOf<GP_SUM, Acc> { using type = Sum<Acc>; };
template <class Acc> struct OpOf<GP_MIN, Acc> { using type = Min<Acc>; };
template <class Acc> struct OpOf<GP_MAX, Acc> { using type = Max<Acc>; };

constexpr int combo_key(int op, int in, int acc) { return (op * GP_NDTYPES + in) * GP_NDTYPES + acc; }

// ------------------------------------------------------------- dtype map
template <gp_dtype D> struct CType;
template <> struct CType<GP_INT32> { using type = int; };
template <> struct CType<GP_INT64> { using type = long long; };
template <> struct CType<GP_FLOAT32> { using type = float; };
template <> struct CType<GP_FLOAT64> { using type = double; };
// The narrow inputs (GP_NARROW_COMBOS).  A bool is read as its byte and
// counts as x != 0, as NumPy converts it.
struct Bool8 {
    unsigned char byte;
};
template <> struct CType<GP_BOOL> { using type = Bool8; };
template <> struct CType<GP_INT8> { using type = signed char; };
template <> struct CType<GP_INT16> { using type = short; };
template <> struct CType<GP_UINT8> { using type = unsigned char; };
template <> struct CType<GP_UINT16> { using type = unsigned short; };
template <> struct CType<GP_UINT32> { using type = unsigned; };
template <> struct CType<GP_UINT64> { using type = unsigned long long; };
template <> struct CType<GP_FLOAT16> { using type = Half; };

// An input element as the accumulator type: exact for every pair of the
// tables (an unsigned 64-bit value becomes the int64 of the same bits).
template <class Acc, class In> __host__ __device__ inline Acc widen(In x) { return Acc(x); }
template <class Acc> __host__ __device__ inline Acc widen(Bool8 x) { return Acc(x.byte != 0); }
template <class Acc> __host__ __device__ inline Acc widen(Half x) { return Acc(widen_half(x.bits)); }

// The C++ types of one instantiated combination: the input element and the
// operator (which carries the accumulator type).
template <class InT, class OpT> struct Combo {
    using In = InT;
    using Op = OpT;
};

// The tables a launcher instantiates beyond GP_COMBOS (bits of with_combo's SETS).
enum ComboSets : unsigned { COMBOS_NARROW = 1 };  // GP_NARROW_COMBOS

// f(Combo<In, Op>{}) for the combination of GP_COMBOS (and of the tables
// that SETS adds) that (op, in_t, acc_t) names, cudaErrorInvalidValue for
// any other: the one dtype switch of every reduction and scan launcher.
template <unsigned SETS = 0, class F>
cudaError_t with_combo(gp_op op, gp_dtype in_t, gp_dtype acc_t, F &&f) {
#define GP_CASE(OP, IN, ACC)                                                                  \
    case combo_key(OP, IN, ACC):                                                              \
        return f(Combo<typename CType<IN>::type, typename OpOf<OP, typename CType<ACC>::type>::type>{});
    switch (combo_key(op, in_t, acc_t)) {
        GP_COMBOS(GP_CASE)
    default:
        break;
    }
    if constexpr ((SETS & COMBOS_NARROW) != 0) {
        switch (combo_key(op, in_t, acc_t)) {
            GP_NARROW_COMBOS(GP_CASE)
        default:
            break;
        }
    }
#undef GP_CASE
    return cudaErrorInvalidValue;
}

// The two-phase protocol of the reduction and scan launchers (gpuprims.h),
// around Impl<In, Op> with
//   static size_t scratch(int64_t n);          bytes of device scratch
//   static cudaError_t run(const Args &);      enqueue the work (n >= 1)
// for the combination that the arguments name: a null scratch asks for its
// size (0 for n == 0); n == 0 runs empty(Op{}) instead of Impl.
template <template <class, class> class Impl, unsigned SETS = 0, class Args, class Empty>
cudaError_t two_phase(Args *a, Empty empty) {
    return with_combo<SETS>(a->op, a->in_t, a->acc_t, [a, &empty](auto combo) -> cudaError_t {
        using In = typename decltype(combo)::In;
        using Op = typename decltype(combo)::Op;
        if (a->scratch == nullptr) {
            a->scratch_bytes = a->n > 0 ? Impl<In, Op>::scratch(a->n) : 0;
            return cudaSuccess;
        }
        if (a->n == 0) return empty(Op{});
        return Impl<In, Op>::run(*a);
    });
}

// Whether (op, in_t, acc_t) is in GP_COMBOS or in the tables of SETS: what
// a variant that dispatches with with_combo<SETS> reads without conversion.
constexpr bool combo_listed(unsigned sets, int op, int in_t, int acc_t) {
#define GP_CASE(OP, IN, ACC) || combo_key(OP, IN, ACC) == key
    const int key = combo_key(op, in_t, acc_t);
    return (false GP_COMBOS(GP_CASE)) || ((sets & COMBOS_NARROW) != 0 && (false GP_NARROW_COMBOS(GP_CASE)));
#undef GP_CASE
}

GP_NAMESPACE_END

#include "warp.cuh"
#include "memory.cuh"
