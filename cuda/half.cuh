// half.cuh - IEEE binary16 (numpy.float16) as its bits, for the conversion
// kernels (cast.cu) and the kernels that read float16 directly.  The
// conversions are written out so that the emulator build (no cuda_fp16.h)
// runs the same code; the GPU build widens with one cvt.f32.f16 instead.
#pragma once

#include <cstdint>
#include <cstring>

GP_NAMESPACE_BEGIN

struct Half {
    uint16_t bits;
};

__host__ __device__ inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13);  // inf, NaN (payload kept)
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);  // normal: rebias 15 -> 127
    } else if (man == 0) {
        bits = sign;  // zero
    } else {  // subnormal: normalize
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// The same value as half_to_float (every binary16 value is exact in
// binary32; a NaN stays a NaN), in one instruction on the GPU.
__host__ __device__ inline float widen_half(uint16_t h) {
#ifdef __CUDA_ARCH__
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    return half_to_float(h);
#endif
}

// Round to nearest, ties to even, as NumPy's float32 -> float16.
__host__ __device__ inline uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)  // inf or NaN (a quiet NaN stays a NaN)
        return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
    if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: inf
    if (absx < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
        if (absx < 0x33000000u) return sign;  // below half the smallest subnormal: zero
        const uint32_t man = (absx & 0x7fffffu) | 0x800000u;
        const int shift = 126 - int(absx >> 23);  // 14..24
        const uint32_t kept = man >> shift, rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        return uint16_t(sign | (kept + (rest > half || (rest == half && (kept & 1u)))));
    }
    const uint32_t rounded = absx + 0xfffu + ((absx >> 13) & 1u);  // ties to even on bit 13
    return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

GP_NAMESPACE_END
