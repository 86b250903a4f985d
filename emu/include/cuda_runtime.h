/* cuda_runtime.h - the emulator's stand-in for CUDA's, for kernels.
 *
 * With GP_EMULATOR defined, the kernel sources of cuda/ are compiled by the
 * host C++ compiler against this header: the CUDA qualifiers become nothing
 * (__shared__ becomes `static`: the blocks of a launch run one after
 * another on one host thread, so a static is exactly "one copy per block"),
 * threadIdx & co. are variables the emulator sets before it resumes a
 * thread, and every barrier and warp collective is a call into the
 * emulator's scheduler (emu/runtime.cpp), which switches between the
 * threads of the block there.  Only what gpuprims' kernels use is here.
 */
#ifndef GP_EMU_CUDA_RUNTIME_H
#define GP_EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

// Vector types, with CUDA's sizes and alignments.
struct alignas(8) int2 { int x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
struct alignas(16) double2 { double x, y; };

constexpr int warpSize = 32;

enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75
};

namespace gp_emu_rt {

// Where the running thread is; set by the scheduler before it resumes one.
extern uint3 thread_idx, block_idx;
extern dim3 block_dim, grid_dim;

enum Collective { SYNCWARP = 0, SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, ANY, ALL };

void syncthreads();
void yield();  // let the other threads of the block run, then carry on
unsigned long long warp_collective(Collective kind, unsigned mask, unsigned long long value, int arg,
                                   int width);
void *dynamic_shared();

// Registers a kernel's pointer argument for explain mode (gpuprims.trace).
void note_pointer_arg(int index, void *p, int itemsize);

// kernel: the kernel's address, whose opt-in (cudaFuncSetAttribute) sets
// how much dynamic shared memory a launch of it may take.
cudaError_t launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   void (*body)(void *), void *ctx);
cudaError_t set_max_dynamic_shared(const void *kernel, int bytes);

// Host side of the launchers (the emulated device is the host).
cudaError_t memset_async(void *p, int value, size_t bytes, cudaStream_t s);
cudaError_t memcpy_async(void *dst, const void *src, size_t bytes, int kind, cudaStream_t s);
int multiprocessors();

template <class T>
T shuffle(Collective kind, unsigned mask, T v, int arg, int width) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffles move up to 8 bytes");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    bits = warp_collective(kind, mask, bits, arg, width);
    T r;
    std::memcpy(&r, &bits, sizeof(T));
    return r;
}

template <class T>
void note_arg(int, const T &) {}
template <class T>
void note_arg(int index, T *const &p) {
    if constexpr (!std::is_const<T>::value && !std::is_void<T>::value) note_pointer_arg(index, p, int(sizeof(T)));
}

// A <<<grid, block, smem, stream>>> launch: the arguments are converted to
// the kernel's parameter types once, as CUDA does, and every thread calls
// the kernel with its own copy of them.
template <class... P, class... A>
cudaError_t launch_kernel(const char *name, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, A &&...args) {
    using Args = std::tuple<std::decay_t<P>...>;
    struct Ctx {
        void (*kernel)(P...);
        Args args;
    } ctx{kernel, Args(std::forward<A>(args)...)};
    std::apply([](const auto &...a) {
        int i = 0;
        (note_arg(i++, a), ...);
    }, ctx.args);
    return launch(name, reinterpret_cast<const void *>(kernel), grid, block, smem, stream,
                  [](void *c) {
                      Ctx *x = static_cast<Ctx *>(c);
                      Args copy = x->args;  // each thread's own parameters
                      std::apply(x->kernel, copy);
                  },
                  &ctx);
}

}  // namespace gp_emu_rt

#define threadIdx (::gp_emu_rt::thread_idx)
#define blockIdx (::gp_emu_rt::block_idx)
#define blockDim (::gp_emu_rt::block_dim)
#define gridDim (::gp_emu_rt::grid_dim)

// ------------------------------------------------------ barriers and warps
inline void __syncthreads() { ::gp_emu_rt::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)::gp_emu_rt::warp_collective(::gp_emu_rt::SYNCWARP, mask, 0, 0, 32);
}
template <class T> T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return ::gp_emu_rt::shuffle(::gp_emu_rt::SHFL_IDX, mask, v, src, width);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return ::gp_emu_rt::shuffle(::gp_emu_rt::SHFL_UP, mask, v, int(delta), width);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return ::gp_emu_rt::shuffle(::gp_emu_rt::SHFL_DOWN, mask, v, int(delta), width);
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return ::gp_emu_rt::shuffle(::gp_emu_rt::SHFL_XOR, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return unsigned(::gp_emu_rt::warp_collective(::gp_emu_rt::BALLOT, mask, pred != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int pred) {
    return int(::gp_emu_rt::warp_collective(::gp_emu_rt::ANY, mask, pred != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int pred) {
    return int(::gp_emu_rt::warp_collective(::gp_emu_rt::ALL, mask, pred != 0, 0, 32));
}

// Memory order: the threads of a launch run on one host thread and switch
// only at barriers and collectives, so fences and atomics need no hardware
// help; the compiler barrier keeps volatile-free code from caching across.
inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
template <class T> T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
template <class T> T atomicSub(T *p, T v) { T old = *p; *p = old - v; return old; }
template <class T> T atomicExch(T *p, T v) { T old = *p; *p = v; return old; }
template <class T> T atomicMax(T *p, T v) { T old = *p; *p = old < v ? v : old; return old; }
template <class T> T atomicMin(T *p, T v) { T old = *p; *p = v < old ? v : old; return old; }
template <class T> T atomicOr(T *p, T v) { T old = *p; *p = old | v; return old; }
template <class T> T atomicAnd(T *p, T v) { T old = *p; *p = old & v; return old; }
template <class T> T atomicCAS(T *p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }

// Cache-hinted loads and stores are plain loads and stores here.
template <class T> T __ldg(const T *p) { return *p; }
template <class T> T __ldcg(const T *p) { return *p; }
template <class T> T __ldca(const T *p) { return *p; }
template <class T> T __ldcs(const T *p) { return *p; }
template <class T> T __ldlu(const T *p) { return *p; }
template <class T> T __ldcv(const T *p) { return *p; }
template <class T> void __stcs(T *p, T v) { *p = v; }
template <class T> void __stcg(T *p, T v) { *p = v; }
template <class T> void __stwb(T *p, T v) { *p = v; }
template <class T> void __stwt(T *p, T v) { *p = v; }

inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
// The four byte products of a and b added to c (signed or unsigned bytes).
inline int __dp4a(int a, int b, int c) {
    for (int k = 0; k < 32; k += 8)
        c += int((signed char)((unsigned(a) >> k) & 0xffu)) * int((signed char)((unsigned(b) >> k) & 0xffu));
    return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int k = 0; k < 32; k += 8) c += ((a >> k) & 0xffu) * ((b >> k) & 0xffu);
    return c;
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
// A thread that sleeps while it waits for another's store lets the other
// threads of the block run (blocks run one after another, so a thread can
// only wait on its own block or on blocks already finished).
inline void __nanosleep(unsigned) { ::gp_emu_rt::yield(); }

// ------------------------------------------- the host API the launchers use
// A kernel's opt-in to more than 48 KiB of dynamic shared memory a launch
// (up to sm_90's 227 KiB), the one function attribute the emulator keeps.
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
template <class... P>
static inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    return ::gp_emu_rt::set_max_dynamic_shared(reinterpret_cast<const void *>(kernel), value);
}
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaGetDevice(int *dev) { *dev = 0; return cudaSuccess; }
static inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int) {
    *value = attr == cudaDevAttrMultiProcessorCount      ? ::gp_emu_rt::multiprocessors()
             : attr == cudaDevAttrComputeCapabilityMajor ? 0  // no GPU generation's features
                                                         : 1024;
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s = nullptr) {
    return ::gp_emu_rt::memset_async(p, value, bytes, s);
}
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                          cudaStream_t s = nullptr) {
    return ::gp_emu_rt::memcpy_async(dst, src, bytes, int(kind), s);
}

#endif /* __cplusplus */
#endif
