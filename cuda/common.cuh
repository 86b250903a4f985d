// common.cuh - what every kernel file shares: the launch macro, error
// handling, ceil_div, the reduction operators with their identities, the
// warp/block helpers and the dtype dispatch.
#pragma once

#include <atomic>
#include <cstdint>
#include <cfloat>
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

// GP_LAUNCH for a kernel that may start while the kernel before it in the
// stream is still running (programmatic dependent launch, sm_90+): that
// kernel calls allow_dependent_launch(), and this one grid_dependency_wait()
// before it touches anything the other writes.  Only where `early` is true
// (the caller checks the device is sm_90+); the emulator runs kernels one
// after the other anyway.
#ifdef GP_EMULATOR
#define GP_LAUNCH_EARLY(early, kernel, grid, block, smem, stream, ...)      \
    do {                                                                    \
        (void)(early);                                                      \
        GP_LAUNCH(kernel, grid, block, smem, stream, __VA_ARGS__);          \
    } while (0)
#else
#define GP_LAUNCH_EARLY(early_, kernel_, grid_, block_, smem_, stream_, ...) \
    do {                                                                    \
        cudaLaunchAttribute gp_attr_{};                                     \
        gp_attr_.id = cudaLaunchAttributeProgrammaticStreamSerialization;   \
        gp_attr_.val.programmaticStreamSerializationAllowed = 1;            \
        cudaLaunchConfig_t gp_cfg_{};                                       \
        gp_cfg_.gridDim = dim3(grid_);                                      \
        gp_cfg_.blockDim = dim3(block_);                                    \
        gp_cfg_.dynamicSmemBytes = (smem_);                                 \
        gp_cfg_.stream = (stream_);                                         \
        gp_cfg_.attrs = &gp_attr_;                                          \
        gp_cfg_.numAttrs = (early_) ? 1 : 0;                                \
        GP_TRY(cudaLaunchKernelEx(&gp_cfg_, kernel_, __VA_ARGS__));         \
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

GP_NAMESPACE_BEGIN

template <class T>
__host__ __device__ constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

// Round a byte count up to a multiple of 256 so that scratch slices stay
// aligned for 16-byte vector loads.
__host__ __device__ constexpr size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t(255); }

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
// contribute nothing.  min/max propagate NaN the way numpy.min/max do.
template <class T> struct Limits;
template <> struct Limits<int> {
    __host__ __device__ static constexpr int lowest() { return INT_MIN; }
    __host__ __device__ static constexpr int highest() { return INT_MAX; }
};
template <> struct Limits<long long> {
    __host__ __device__ static constexpr long long lowest() { return LLONG_MIN; }
    __host__ __device__ static constexpr long long highest() { return LLONG_MAX; }
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
        return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a));
    }
};
template <class T> struct Max {
    using type = T;
    __host__ __device__ static constexpr T identity() { return Limits<T>::lowest(); }
    __host__ __device__ T operator()(T a, T b) const {
        return is_nan(a) ? a : (is_nan(b) ? b : (b > a ? b : a));
    }
};

template <gp_op OP, class Acc> struct OpOf;
template <class Acc> struct OpOf<GP_SUM, Acc> { using type = Sum<Acc>; };
template <class Acc> struct OpOf<GP_MIN, Acc> { using type = Min<Acc>; };
template <class Acc> struct OpOf<GP_MAX, Acc> { using type = Max<Acc>; };

constexpr int combo_key(int op, int in, int acc) { return (op * GP_NDTYPES + in) * GP_NDTYPES + acc; }

// --------------------------------------------------------- warp and block
constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr int WARP = 32;

// What a thread does between two polls of a value another thread will
// store: on the GPU sleep NS nanoseconds (0: poll again at once); on the
// emulator let the other threads of the block run (blocks run one after
// another, so the thread that stores is in the same block or done).
template <int NS>
__device__ inline void spin_pause() {
#ifdef GP_EMULATOR
    __nanosleep(NS);
#else
    if (NS > 0) __nanosleep(NS);
#endif
}

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

// ------------------------------------------------------------- dtype map
template <gp_dtype D> struct CType;
template <> struct CType<GP_INT32> { using type = int; };
template <> struct CType<GP_INT64> { using type = long long; };
template <> struct CType<GP_FLOAT32> { using type = float; };
template <> struct CType<GP_FLOAT64> { using type = double; };

// ------------------------------------------------- memory the emulator needs
// The block's dynamic shared memory (the launch's `smem` bytes), 16-byte
// aligned.
__device__ inline unsigned char *dynamic_shared_memory() {
#ifdef GP_EMULATOR
    return static_cast<unsigned char *>(::gp_emu_rt::dynamic_shared());
#else
    extern __shared__ __align__(16) unsigned char gp_shared_raw[];
    return gp_shared_raw;
#endif
}

// A 16-byte load through the non-coherent (read-only) path that does not
// allocate in L1 and asks L2 to fetch the whole 256-byte sector group:
// ld.global.nc.L1::no_allocate.L2::256B (PTX ISA 7.4+).  A plain load on the
// emulator.
__device__ inline uint4 load_nc_no_l1_prefetch_256b(const void *p) {
    uint4 r;
#ifdef GP_EMULATOR
    memcpy(&r, p, sizeof(r));
#else
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
#endif
    return r;
}

// Asynchronous 16-byte copies from global to shared memory that leave the
// registers free while they fly (cp.async.cg: through L2, not L1; PTX ISA
// 7.0+, sm_80+); a thread learns that its copies have landed through a
// completion barrier (async_arrive, below).  The emulator, and GPUs before
// sm_80 (no cp.async), copy at once.
#if defined(GP_EMULATOR) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800)
#define GP_SYNC_COPIES 1
#endif

__device__ inline void async_copy16(void *shared_dst, const void *global_src) {
#ifdef GP_SYNC_COPIES
    memcpy(shared_dst, global_src, 16);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                 :
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
                   "l"(__cvta_generic_to_global(global_src))
                 : "memory");
#endif
}

// The two halves of a programmatic dependent launch (GP_LAUNCH_EARLY):
// no-ops before sm_90, on the emulator, and where the launch was not early.
__device__ inline void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(GP_EMULATOR)
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ inline void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(GP_EMULATOR)
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// A completion barrier (mbarrier, sm_80+) per batch of async copies: each
// of `count` threads calls async_arrive() after issuing its copies, and
// async_landed(bar, parity) says - without waiting - whether the batch of
// that phase parity (0 for the first batch, then 1, 0, ...) has landed.
// Copies are synchronous on the emulator and before sm_80: always landed.
__device__ inline void async_barrier_init(unsigned long long *bar, unsigned count) {
#ifndef GP_SYNC_COPIES
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))),
                 "r"(count)
                 : "memory");
#else
    (void)bar, (void)count;
#endif
}

__device__ inline void async_arrive(unsigned long long *bar) {
#ifndef GP_SYNC_COPIES
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(
                     static_cast<unsigned>(__cvta_generic_to_shared(bar)))
                 : "memory");
#else
    (void)bar;
#endif
}

__device__ inline bool async_landed(unsigned long long *bar, unsigned parity) {
#ifndef GP_SYNC_COPIES
    unsigned done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))), "r"(parity)
        : "memory");
    return done != 0;
#else
    (void)bar, (void)parity;
    return true;
#endif
}

// Wait until the batch of that phase parity has landed (each thread for
// itself).
__device__ inline void async_wait_landed(unsigned long long *bar, unsigned parity) {
#if !defined(GP_SYNC_COPIES) && __CUDA_ARCH__ >= 900
    // try_wait suspends the thread for a while in hardware, instead of a spin
    asm volatile(
        "{\n .reg .pred p;\n wait_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra wait_%=;\n}" ::"r"(
            static_cast<unsigned>(__cvta_generic_to_shared(bar))),
        "r"(parity)
        : "memory");
#else
    while (!async_landed(bar, parity)) {
    }
#endif
}

// Bulk copies (the tensor memory accelerator, sm_90+): one thread copies
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory with one instruction, and the copy completes on a barrier
// initialised with count 1: its phase ends when the thread has arrived and
// the bytes have landed (async_landed polls it).  GP_BULK_COPIES: the code
// being compiled has them; elsewhere bulk_copy is never called.
#if !defined(GP_EMULATOR) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GP_BULK_COPIES 1
#endif

__device__ inline void bulk_copy(void *shared_dst, const void *global_src, unsigned bytes, unsigned long long *bar) {
#ifdef GP_BULK_COPIES
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
                 "l"(__cvta_generic_to_global(global_src)), "r"(bytes), "r"(b)
                 : "memory");
#else
    (void)shared_dst, (void)global_src, (void)bytes, (void)bar;
#endif
}

// Arrive at a count-1 barrier with no bytes to wait for: the thread's
// copies were synchronous.
__device__ inline void barrier_arrive(unsigned long long *bar) {
#ifdef GP_BULK_COPIES
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(bar)))
                 : "memory");
#else
    (void)bar;
#endif
}

// Order the thread's (and, after a __syncwarp, its warp's) earlier
// accesses of shared memory before its later bulk copies, and barrier
// initialisation before the copies that complete on the barriers.
__device__ inline void fence_proxy_async() {
#ifdef GP_BULK_COPIES
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ inline void fence_barrier_init() {
#ifdef GP_BULK_COPIES
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

GP_NAMESPACE_END
