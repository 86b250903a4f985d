// memory.cuh - memory accesses whose form differs between the GPU and the
// emulator: the block's dynamic shared memory, a streaming 16-byte load,
// the L2 cache policies of cache hints, a load kept in the L2 and
// prefetches.
// Included by common.cuh.
#pragma once

#include <cstring>

#include "common.cuh"

GP_NAMESPACE_BEGIN

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

// The L2 policy of an access's cache hint (createpolicy, PTX ISA 7.4+,
// sm_80+): the lines it brings in are the first to evict (LAST: the last).
// Not volatile: createpolicy only computes a value, so the compiler may
// make it once for all the accesses of a loop.
template <bool LAST>
__device__ inline unsigned long long l2_evict_policy() {
    unsigned long long policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(GP_EMULATOR)
    if constexpr (LAST)
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    else
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

// A 16-byte read-only load whose L2 line is kept before others
// (l2_evict_policy<true> as its cache hint): for data read again soon by the
// same kernel.  A plain load on the emulator.
__device__ inline uint4 load_nc_keep_l2(const void *p) {
    uint4 r;
#if defined(GP_EMULATOR) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800
    memcpy(&r, p, sizeof(r));
#else
    asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p), "l"(l2_evict_policy<true>()));
#endif
    return r;
}

// Hints that fetch the line holding p ahead of its loads, with no register
// held: into the L2, kept there before other lines
// (prefetch.global.L2::evict_last, PTX ISA 7.4+, sm_80+), or into the SM's
// L1 (prefetch.global.L1).  Nothing on the emulator: they change no value.
__device__ inline void prefetch_l2_keep(const void *p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(GP_EMULATOR)
    asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
#else
    (void)p;
#endif
}
__device__ inline void prefetch_l1(const void *p) {
#if defined(__CUDA_ARCH__) && !defined(GP_EMULATOR)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}

GP_NAMESPACE_END
