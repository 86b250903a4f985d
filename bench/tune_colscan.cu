// tune_colscan.cu - the evidence for ColumnTiling, the tile shape of the
// scan along a non-last axis (cuda/scan/11_batched_columns.cu, step 14).
//
// For each shape (a C array's axis 0, and a middle axis), float32 inclusive
// sums, times in one run the general column kernel (the form any strides
// take: "strided") and a thread a problem (batched_thread: what the
// adaptive step runs from 2^18 columns on, AdaptiveTuning in
// 12_segmented_adaptive.cu) against the vector tiles in several shapes
// (threads a block, rows a thread, vectors across at most, blocks an SM
// asked of the compiler, cp.async or register loads).  CUDA events around
// the launches only, L2 overwritten before every run, median of REPEAT
// runs; % roof = bytes read + written / time against a device-to-device
// copy of 256 MiB measured here.  Every candidate is checked against a
// float64 scan on the host within the tests' bound
// (python/gpuprims/_numerics.py, scan_tolerance; "err" is the largest
// error in units of eps * the prefix of |x|) and for the same bits in two
// runs.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_colscan.cu -o /tmp/tune_colscan && /tmp/tune_colscan
#include <cmath>
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/scan/11_batched_columns.cu"

// A thread a problem (step 10, what the adaptive step runs where the
// columns alone fill the GPU), in a namespace of its own: its file-local
// names (BLOCK) are also the columns file's.
namespace thread_step {
namespace gp { using namespace ::gp; }
#include "../cuda/scan/07_batched_thread.cu"
}  // namespace thread_step

using namespace gp;
using In = float;
using Op = Sum<float>;

constexpr int REPEAT = 20;

struct Bench {
    float *in, *out;
    void *flush;
    size_t fb;
    double roof_gbps;
    std::vector<float> host, got, again;
};

// A C array (outer, n, inner) scanned along its axis of length n.
gp_scan_args args_of(const Bench &b, int64_t outer, int64_t n, int64_t inner) {
    gp_scan_args a{};
    a.in = b.in, a.out = b.out, a.n = n, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM;
    a.inclusive = 1, a.stream = 0;
    a.batch = gp_batch{outer, inner, n * inner, inner, 1, nullptr};
    return a;
}

// The largest error of b.got in units of eps * prefix|x| and whether every
// element is within scan_tolerance's bound: (2 ceil(log2 n) + 32) eps
// prefix|x| + eps |ref| (the float64 reference's own error is far below).
bool check(const Bench &b, int64_t outer, int64_t n, int64_t inner, double &worst) {
    const double eps = std::ldexp(1.0, -23), depth = 2 * std::ceil(std::log2(double(std::max<int64_t>(n, 2)))) + 32;
    std::vector<double> run(inner), mag(inner);
    bool ok = true;
    worst = 0;
    for (int64_t o = 0; o < outer; ++o) {
        std::fill(run.begin(), run.end(), 0.0), std::fill(mag.begin(), mag.end(), 0.0);
        for (int64_t k = 0; k < n; ++k)
            for (int64_t i = 0; i < inner; ++i) {
                const int64_t e = (o * n + k) * inner + i;
                run[i] += b.host[e], mag[i] += std::fabs(b.host[e]);
                const double err = std::fabs(double(b.got[e]) - run[i]);
                if (!(err <= depth * eps * mag[i] + eps * std::fabs(run[i]))) ok = false;
                worst = std::fmax(worst, err / (eps * mag[i]));
            }
    }
    return ok;
}

template <class F, class S>
void row(Bench &b, const char *name, int64_t outer, int64_t n, int64_t inner, F run, S scratch) {
    gp_scan_args a = args_of(b, outer, n, inner);
    a.scratch_bytes = scratch(a);
    CHECK(cudaMalloc(&a.scratch, std::max<size_t>(a.scratch_bytes, 16)));
    const int64_t count = outer * n * inner;
    CHECK(cudaMemset(b.out, 0xff, count * 4));
    CHECK(run(a));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(b.got.data(), b.out, count * 4, cudaMemcpyDeviceToHost));
    const float ms = median_ms([&] { CHECK(run(a)); }, b.flush, b.fb, REPEAT);
    CHECK(cudaMemset(b.out, 0xff, count * 4));
    CHECK(run(a));
    CHECK(cudaMemcpy(b.again.data(), b.out, count * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(a.scratch));
    double worst;
    const bool ok = check(b, outer, n, inner, worst);
    const bool same = std::memcmp(b.got.data(), b.again.data(), count * 4) == 0;
    const double gbps = 8.0 * count / ms / 1e6;
    std::printf("| %-34s | %8.4f | %6.0f | %5.1f | %s, err %.2f, %s |\n", name, ms, gbps, 100 * gbps / b.roof_gbps,
                ok ? "ok" : "WRONG", worst, same ? "same bits" : "BITS DIFFER");
}

template <class Shape>
void tiles(Bench &b, const char *name, int64_t outer, int64_t n, int64_t inner) {
    using T = ColumnTiles<Shape, In, Op>;
    row(b, name, outer, n, inner, [](const gp_scan_args &a) { return T::run(a); },
        [](const gp_scan_args &a) { return T::scratch(a); });
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    Bench b{};
    b.flush = l2_flush_buffer(prop, b.fb);
    const int64_t total = int64_t(1) << 28;  // the largest shape's elements (16384^2; the others have 2^26)
    b.host = random_floats(total, &b.in, &b.out);
    b.got.resize(total), b.again.resize(total);
    {  // the copy roof: read + write of 256 MiB
        const int64_t bytes = (int64_t(1) << 26) * 4;
        const float ms = median_ms([&] { CHECK(cudaMemcpyAsync(b.out, b.in, bytes, cudaMemcpyDeviceToDevice)); },
                                   b.flush, b.fb, REPEAT);
        b.roof_gbps = 2.0 * bytes / ms / 1e6;
    }
    std::printf("%s, %d SMs; copy roof %.0f GB/s (read + write of 256 MiB); float32 inclusive cumsum, median of %d\n",
                prop.name, prop.multiProcessorCount, b.roof_gbps, REPEAT);
    std::printf("tile shapes <threads, rows a thread, vectors across at most, blocks an SM, cp.async>; "
                "library: <%d, %d, %d, %d, %d>\n", ColumnTiling::THREADS, ColumnTiling::RPT, ColumnTiling::VC_MAX,
                ColumnTiling::BLOCKS, int(ColumnTiling::ASYNC));
    struct Case { int64_t outer, n, inner; const char *what; };
    const Case cases[] = {
        {1, int64_t(1) << 24, 4, "(2^24, 4) axis 0"},         {1, int64_t(1) << 20, 64, "(2^20, 64) axis 0"},
        {1, 16384, 16384, "(16384, 16384) axis 0"},           {1, 64, int64_t(1) << 20, "(64, 2^20) axis 0"},
        {1, 4, int64_t(1) << 24, "(4, 2^24) axis 0"},         {64, 4096, 64, "(64, 4096, 64) axis 1"},
    };
    for (const Case &c : cases) {
        std::printf("\n### %s\n\n| kernel | ms | GB/s | %% roof | check |\n|---|---:|---:|---:|---|\n", c.what);
        row(b, "strided (any layout)", c.outer, c.n, c.inner, [](const gp_scan_args &a) { return Strided<In, Op>::run(a); },
            [](const gp_scan_args &a) { return Strided<In, Op>::scratch(a); });
        if (c.outer * c.inner >= (int64_t(1) << 16))  // with fewer problems a run takes seconds
            row(b, "a thread a problem (batched_thread)", c.outer, c.n, c.inner,
                [](const gp_scan_args &a) { return thread_step::gp::gp_scan_batched_thread(const_cast<gp_scan_args *>(&a)); },
                [](const gp_scan_args &) { return size_t(0); });
        tiles<ColumnTiling>(b, "tiles: library (ColumnTiling)", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 2>>(b, "tiles <256, 8, 8, 2, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 3>>(b, "tiles <256, 8, 8, 3, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 4>>(b, "tiles <256, 8, 8, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 32, 2>>(b, "tiles <256, 8, 32, 2, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 4, 8, 4>>(b, "tiles <256, 4, 8, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 8, 4, false>>(b, "tiles <128, 16, 8, 4, loads>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 32, 4>>(b, "tiles <128, 16, 32, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 4, 4>>(b, "tiles <128, 16, 4, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 8, 8, 6>>(b, "tiles <128, 8, 8, 6, async>", c.outer, c.n, c.inner);
    }
    return 0;
}
