// async_copy.cuh - the asynchronous machinery of sm_80 and sm_90 as PTX
// wrappers, for the look-back scan (cuda/scan/decoupled_lookback.cuh):
// cp.async copies from global to shared memory, the completion barriers
// (mbarrier) they land on, bulk copies (sm_90's tensor memory accelerator)
// and programmatic dependent launch (GP_LAUNCH_EARLY and its two device
// halves).  Where the hardware or the emulator lacks one, each falls back to
// what has the same effect there (a synchronous copy, a barrier always
// landed, an ordinary launch).
#pragma once

#include <cstring>

#include "common.cuh"

GP_NAMESPACE_BEGIN

// ---------------------------------------------------------- cp.async copies
// Asynchronous 16-byte copies from global to shared memory that leave the
// registers free while they fly (cp.async.cg: through L2, not L1; PTX ISA
// 7.0+, sm_80+); a thread learns that its copies have landed through a
// completion barrier (async_arrive, below).  The emulator, and GPUs before
// sm_80 (no cp.async), copy at once.
#if defined(GP_EMULATOR) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800)
#define GP_SYNC_COPIES 1
#endif

// evict_first: the copy's lines leave the L2 first (l2_evict_policy):
// where the L2 holds dirty lines of earlier work, lines brought in
// plainly may each write one of them back, while evict-first lines make
// room for each other.
__device__ inline void async_copy16(void *shared_dst, const void *global_src, bool evict_first = false) {
#ifdef GP_SYNC_COPIES
    (void)evict_first;
    memcpy(shared_dst, global_src, 16);
#else
    if (evict_first)
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                     :
                     : "r"(static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
                       "l"(__cvta_generic_to_global(global_src)), "l"(l2_evict_policy<false>())
                     : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                     :
                     : "r"(static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
                       "l"(__cvta_generic_to_global(global_src))
                     : "memory");
#endif
}

// cp.async's groups, for a thread that waits for its own copies: commit
// the copies issued so far as a group; wait until every group has landed
// (synchronous copies: nothing to wait for).
__device__ inline void async_commit() {
#ifndef GP_SYNC_COPIES
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

__device__ inline void async_wait_all() {
#ifndef GP_SYNC_COPIES
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

// ... or until all but the latest N groups have landed.
template <int N>
__device__ inline void async_wait_groups() {
#ifndef GP_SYNC_COPIES
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// ... the same with N known only at run time (0 to 8; more waits as for 8).
__device__ inline void async_wait_pending(int n) {
    switch (n) {
    case 0: async_wait_groups<0>(); break;
    case 1: async_wait_groups<1>(); break;
    case 2: async_wait_groups<2>(); break;
    case 3: async_wait_groups<3>(); break;
    case 4: async_wait_groups<4>(); break;
    case 5: async_wait_groups<5>(); break;
    case 6: async_wait_groups<6>(); break;
    case 7: async_wait_groups<7>(); break;
    default: async_wait_groups<8>(); break;
    }
}

// ------------------------------------------------------ completion barriers
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

// ------------------------------------------------------- bulk copies, sm_90
// Bulk copies (the tensor memory accelerator, sm_90+): one thread copies
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory with one instruction, and the copy completes on a barrier
// initialised with count 1: its phase ends when the thread has arrived and
// the bytes have landed (async_landed polls it); evict_first as
// async_copy16's.  GP_BULK_COPIES: the code being compiled has them;
// elsewhere bulk_copy is never called.
#if !defined(GP_EMULATOR) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GP_BULK_COPIES 1
#endif

__device__ inline void bulk_copy(void *shared_dst, const void *global_src, unsigned bytes, unsigned long long *bar,
                                 bool evict_first = false) {
#ifdef GP_BULK_COPIES
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
    if (evict_first)
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
            "%4;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
            "l"(__cvta_generic_to_global(global_src)), "r"(bytes), "r"(b), "l"(l2_evict_policy<false>())
            : "memory");
    else
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
                     "l"(__cvta_generic_to_global(global_src)), "r"(bytes), "r"(b)
                     : "memory");
#else
    (void)shared_dst, (void)global_src, (void)bytes, (void)bar, (void)evict_first;
#endif
}

// Bulk copies the other way (sm_90+): one thread copies `bytes` (a
// multiple of 16, both addresses 16-byte aligned) from shared to global
// memory with one instruction, as a bulk group of its own; evict_first as
// async_copy16's.  The shared bytes must be written before (each writer's
// fence_proxy_async, then a barrier); the thread waits with
// bulk_store_wait<true> before they are written again, and with
// bulk_store_wait<false> before its block exits.  Elsewhere a synchronous
// copy.
__device__ inline void bulk_store(void *global_dst, const void *shared_src, unsigned bytes, bool evict_first = false) {
#ifdef GP_BULK_COPIES
    const unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(shared_src));
    if (evict_first)
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;" ::"l"(
                         __cvta_generic_to_global(global_dst)),
                     "r"(src), "r"(bytes), "l"(l2_evict_policy<false>())
                     : "memory");
    else
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                         __cvta_generic_to_global(global_dst)),
                     "r"(src), "r"(bytes)
                     : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
    (void)evict_first;
    memcpy(global_dst, shared_src, bytes);
#endif
}
// Wait until the thread's bulk stores have read their shared bytes (READ),
// or until they are done.
template <bool READ>
__device__ inline void bulk_store_wait() {
#ifdef GP_BULK_COPIES
    if (READ) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    else asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
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

// ------------------------------------------------ programmatic dependent launch
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

GP_NAMESPACE_END

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
