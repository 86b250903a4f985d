// tune_common.cuh - what the tuning programs share: a fatal CHECK (these are
// standalone programs, not the library) and gpuprims' timing method: the L2
// cache overwritten before each run (so no run reads what the one before
// left in it), CUDA events around the launch only, 3 warm-up runs, the
// median of `repeat` runs; and random inputs (never zeros).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(...)                                                                        \
    do {                                                                                  \
        cudaError_t e_ = (__VA_ARGS__);                                                   \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorName(e_)); \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

// The buffer median_ms overwrites before every timed run: 4x the device's
// L2 (`bytes` receives its size).
inline void *l2_flush_buffer(const cudaDeviceProp &p, size_t &bytes) {
    bytes = size_t(p.l2CacheSize) * 4;
    void *buf;
    CHECK(cudaMalloc(&buf, bytes));
    return buf;
}

struct NoPre {
    void operator()() const {}
};

// The median over `repeat` runs of launch(), after 3 warm-up runs; before
// each, the L2 is overwritten and pre() runs (outside the events); the
// events and the overwrite go to `stream`.  Each run is waited for, or with
// QUEUED every run is queued at once and synchronized at the end, as the
// library's timing loop (csrc/timing.c) does: the host may fall behind.
template <bool QUEUED = false, class F, class P = NoPre>
float median_ms(F launch, void *flush, size_t flush_bytes, int repeat, P pre = P{}, cudaStream_t stream = 0) {
    std::vector<cudaEvent_t> ev(2 * (repeat + 3));
    for (auto &e : ev) CHECK(cudaEventCreate(&e));
    for (int i = 0; i < repeat + 3; ++i) {
        CHECK(cudaMemsetAsync(flush, i, flush_bytes, stream));
        pre();
        CHECK(cudaEventRecord(ev[2 * i], stream));
        launch();
        CHECK(cudaEventRecord(ev[2 * i + 1], stream));
        if (!QUEUED) CHECK(cudaEventSynchronize(ev[2 * i + 1]));
    }
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> t;
    for (int i = 3; i < repeat + 3; ++i) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        t.push_back(ms);
    }
    for (auto &e : ev) CHECK(cudaEventDestroy(e));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// n random floats in [-1, 1) (never zeros; the same every run) on the host
// and on the device, and a device output buffer of n floats.
// Segment offsets over at most `total` elements: lengths uniform in
// [0, 2 mean] (empty segments included) from a fixed generator seeded by
// the mean, up to the last whole segment (the elements after it belong to
// none).  offsets[0] = 0.
inline std::vector<int64_t> random_offsets(int64_t total, int64_t mean) {
    std::vector<int64_t> off{0};
    unsigned r = unsigned(mean) * 2654435761u;
    while (true) {
        r = r * 1664525u + 1013904223u;
        const int64_t len = int64_t(r >> 8) % (2 * mean + 1);
        if (off.back() + len > total) break;
        off.push_back(off.back() + len);
    }
    return off;
}

inline std::vector<float> random_floats(int64_t n, float **in, float **out) {
    std::vector<float> h(n);
    unsigned s = 777;
    for (auto &v : h) { s = s * 1664525u + 1013904223u; v = float(int(s >> 8) - (1 << 23)) / float(1 << 23); }
    CHECK(cudaMalloc(in, n * 4));
    CHECK(cudaMalloc(out, n * 4));
    CHECK(cudaMemcpy(*in, h.data(), n * 4, cudaMemcpyHostToDevice));
    return h;
}
