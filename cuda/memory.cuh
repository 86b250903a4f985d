// memory.cuh - memory accesses whose form differs between the GPU and the
// emulator: the block's dynamic shared memory and a streaming 16-byte
// load.  Included by common.cuh.
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

// A 16-byte read-only load whose L2 line is kept before others
// (createpolicy evict_last as the load's cache hint, PTX ISA 7.4+, sm_80+):
// for data read again soon by the same kernel.  A plain load on the
// emulator.
__device__ inline uint4 load_nc_keep_l2(const void *p) {
    uint4 r;
#if defined(GP_EMULATOR) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800
    memcpy(&r, p, sizeof(r));
#else
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p), "l"(policy));
#endif
    return r;
}

GP_NAMESPACE_END
