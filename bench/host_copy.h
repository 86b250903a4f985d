// host_copy.h - the copy with non-temporal (streaming) stores that the host
// pipeline packs with (csrc/pipeline.c, copy_stream), for the host-side
// benchmark programs: its stores write the destination's cache lines
// without reading them first.
#pragma once
#include <emmintrin.h>
#include <cstdint>
#include <cstring>

static void copy_nt(char *dst, const char *src, size_t bytes)
{
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > bytes)
        head = bytes;
    memcpy(dst, src, head);
    dst += head, src += head, bytes -= head;
    size_t vec = bytes / 64;
    for (size_t i = 0; i < vec; i++) {
        __m128i a = _mm_loadu_si128((const __m128i *)src + 0), b = _mm_loadu_si128((const __m128i *)src + 1);
        __m128i c = _mm_loadu_si128((const __m128i *)src + 2), d = _mm_loadu_si128((const __m128i *)src + 3);
        _mm_stream_si128((__m128i *)dst + 0, a);
        _mm_stream_si128((__m128i *)dst + 1, b);
        _mm_stream_si128((__m128i *)dst + 2, c);
        _mm_stream_si128((__m128i *)dst + 3, d);
        src += 64, dst += 64;
    }
    memcpy(dst, src, bytes & 63);
    _mm_sfence();
}
