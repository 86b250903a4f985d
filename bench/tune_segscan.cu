// tune_segscan.cu - the evidence for FlatTuning, RowTuning and LongTuning, the shapes of the flat
// look-back scan on contiguous problems (cuda/scan/10_segmented_lookback.cu:
// rows of a C array along the last axis, ragged segments).
//
// float32 inclusive cumsum.  For each case - C arrays (rows, n) scanned
// along their rows, and 2^26 elements cut into segments of random lengths
// (uniform in [0, 2 mean], means 4, 64, 1024, 65536) - times every
// candidate shape of scan_tiles (FlatShape: warps a block x vectors a lane,
// stages a ring, blocks an SM, EARLY publication, MEANWHILE, bulk copies)
// and, for rows of 2^20 or more, the 1-D look-back scan once a row
// (decoupled_lookback: the speed to approach, and what segmented_adaptive
// runs for rows of 2^23 or more).  CUDA events around the launches only, L2 overwritten before
// every run, median of REPEAT runs; % roof = (bytes read + written of the
// data) / time against a device-to-device copy's rate measured in this run
// (segments also read 8 bytes of offset a segment: the last column counts
// them).  Every candidate's result is checked on the device against a
// float64 scan made on the host (|got - want| <= 4 (log2(len) + 1) eps
// sum|x| + eps |want|, len the problem's length) and against a second run
// (same bits).
// Build and run on the GPU machine (under 90 s on an H200):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_segscan.cu -o /tmp/tune_segscan && /tmp/tune_segscan
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/scan/10_segmented_lookback.cu"
#include "../cuda/scan/packs.cuh"

using namespace gp;
using Op = Sum<float>;

constexpr int REPEAT = 20;

// Elements where |got - want| > bound, and the largest |got - want| / bound
// (as the bits of a non-negative float, which order as integers).
__global__ void check_kernel(const float *got, const double *want, const double *bound, int64_t n,
                             unsigned long long *bad, unsigned *worst) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const double e = fabs(double(got[i]) - want[i]);
        if (!(e <= bound[i])) atomicAdd(bad, 1ull);
        const float r = float(e / bound[i]);
        if (r == r) atomicMax(worst, __float_as_uint(r));
    }
}

// Elements whose bits differ.
__global__ void differ_kernel(const unsigned *a, const unsigned *b, int64_t n, unsigned long long *count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        if (a[i] != b[i]) atomicAdd(count, 1ull);
}

struct Bench {
    float *in, *out, *out2;
    double *want, *bound;
    void *scratch;
    size_t scratch_bytes;
    unsigned long long *counts;
    void *flush;
    size_t fb;
    double roof_gbps;
    DeviceFacts facts;
    std::vector<float> host;
};

struct Case {
    gp_scan_args a;
    int64_t total, segments;
    int64_t longest;  // the longest segment (what the library's callers pass as gp_batch.longest)
};

// Times run(a), then checks its result and a second run's bits.
template <class F>
void row(Bench &b, const char *name, const Case &c, F run) {
    gp_scan_args a = c.a;
    a.scratch = b.scratch;
    a.out = b.out;
    CHECK(cudaMemset(b.out, 0xff, c.total * 4));
    CHECK(run(a));
    CHECK(cudaDeviceSynchronize());
    const float ms = median_ms([&] { CHECK(run(a)); }, b.flush, b.fb, REPEAT);
    CHECK(cudaMemset(b.out2, 0xff, c.total * 4));
    a.out = b.out2;
    CHECK(run(a));
    CHECK(cudaMemset(b.counts, 0, 24));
    const unsigned grid = unsigned(std::min<int64_t>(ceil_div<int64_t>(c.total, 256), 8192));
    check_kernel<<<grid, 256>>>(b.out, b.want, b.bound, c.total, b.counts, reinterpret_cast<unsigned *>(b.counts + 1));
    differ_kernel<<<grid, 256>>>(reinterpret_cast<const unsigned *>(b.out), reinterpret_cast<const unsigned *>(b.out2),
                                 c.total, b.counts + 2);
    CHECK(cudaGetLastError());
    unsigned long long h[3];
    CHECK(cudaMemcpy(h, b.counts, 24, cudaMemcpyDeviceToHost));
    unsigned wbits = unsigned(h[1]);
    float worst;
    std::memcpy(&worst, &wbits, 4);
    char check[96];
    std::snprintf(check, sizeof check, "%s (worst %.2f of bound), %s", h[0] ? "WRONG" : "ok", worst,
                  h[2] ? "BITS DIFFER" : "same bits");
    const double data = 8.0 * double(c.total), offs = 8.0 * double(c.segments ? c.segments + 1 : 0);
    const double gbps = data / ms / 1e6;
    std::printf("| %-40s | %8.4f | %6.0f | %6.1f | %6.1f | %s |\n", name, ms, gbps, 100 * gbps / b.roof_gbps,
                100 * (data + offs) / ms / 1e6 / b.roof_gbps, check);
}

template <class Shape>
void candidate(Bench &b, const char *name, const Case &c) {
    using T = TilesWith<Shape, float, Op>;
    if (T::scratch(seg::Layout::of(c.a)) > b.scratch_bytes) {
        std::printf("| %-40s | scratch too small |\n", name);
        return;
    }
    row(b, name, c, [&](gp_scan_args x) {
        return c.segments ? T::template run<true>(x, b.facts) : T::template run<false>(x, b.facts);
    });
}

// The shapes compared: FlatShape<warps, vectors a lane, stages, blocks an
// SM, EARLY, MEANWHILE, BULK>.  Measured and dropped (bench/results/
// tune-segscan-*): on rows of 4 and 64, MEANWHILE, cp.async copies, 2x8 s3
// b6, 4x8 s2 b4; on chained tiles (long rows, segments), no EARLY (1.5-2.6x
// slower than the same shape with it), 2x16 s3 b4, 2x16 s2 b6, 2x12 s3 b5,
// 2x8 s3 b6, 2x6 s2 b10, 4x12 s2 b3 (2x12 s2 b6's speed), MEANWHILE with
// 2x12 and 2x16 at 6 blocks, cp.async, and a second publication of the
// landed tiles after the scan (the 1-D's MID_PUBLISH: 2-25% slower here).
// `tune_segscan chain`: the library's chained shape against other PLAIN
// shapes on the 1-D-like row (1, 2^26), rows that do not divide the tile
// and the segments.  Measured and dropped (bench/results/tune-segscan-
// chain-*): no sleep between polls, a second publication after the scan,
// MEANWHILE (0-20 points slower), and with PLAIN 2x12 s2 b6, 2x16 s2 b6,
// 2x16 s2 b5, 2x16 s3 b4, 4x8 s2 b4, 2x8 s3 b8 (0-16 points slower); timed
// again once tiles without offsets skipped the heads (run 3).
void chain_candidates(Bench &b, const Case &c) {
    candidate<FlatTuning<float, float>>(b, "FlatTuning (the library's)", c);
    candidate<FlatShape<2, 12, 2, 6, true, false, true, true, true>>(b, "2x12 s2 b6, PLAIN", c);
    candidate<FlatShape<2, 16, 2, 6, true, false, true, true, true>>(b, "2x16 s2 b6, PLAIN", c);
    candidate<FlatShape<4, 8, 2, 4, true, false, true, true, true>>(b, "4x8 s2 b4, PLAIN", c);
    candidate<FlatShape<2, 8, 2, 7, true, false, true, true, true>>(b, "2x8 s2 b7, PLAIN", c);
}

void candidates(Bench &b, const Case &c) {
    if (FlatLookback<float, Op>::rows_divide(seg::Layout::of(c.a)))
        candidate<RowTuning<float, Op>>(b, "RowTuning (the library's)", c);
    else
        candidate<FlatTuning<float, float>>(b, "FlatTuning (the library's)", c);
    candidate<FlatShape<2, 12, 2, 6>>(b, "2x12 s2 b6", c);
    candidate<FlatShape<2, 8, 2, 8, true, true>>(b, "2x8 s2 b8, MEANWHILE", c);
    candidate<FlatShape<2, 8, 2, 6>>(b, "2x8 s2 b6", c);
    candidate<FlatShape<2, 8, 2, 6, true, true>>(b, "2x8 s2 b6, MEANWHILE", c);
    candidate<FlatShape<2, 12, 2, 5, true, true>>(b, "2x12 s2 b5, MEANWHILE", c);
}

// The scan by packs of segments (cuda/scan/packs.cuh) with a shape:
// segs::PackShape<threads, vectors a lane a trip, elements a pack, blocks
// an SM[, stages]>.  longest: the bound on the segments' lengths the launch
// is given (0: none, so the deferral's counters are zeroed and its kernels
// launched).
template <class Shape>
void pack_candidate(Bench &b, const char *name, const Case &c, int64_t longest = 0,
                    int64_t k_most = WARP * scan::packs::WIDE_M) {
    if (scan::packs::scratch_bytes<Shape, float, Op>(c.total, c.segments, c.a.batch.offsets, longest) >
        b.scratch_bytes) {
        std::printf("| %-40s | scratch too small |\n", name);
        return;
    }
    row(b, name, c, [&](gp_scan_args x) {
        return scan::packs::launch<Shape, float, Op>(static_cast<const float *>(x.in), x.n, x.batch.offsets,
                                                      c.segments, longest, x.inclusive != 0,
                                                      static_cast<float *>(x.out), b.scratch, 0, k_most);
    });
}

void pack_candidates(Bench &b, const Case &c) {
    candidate<FlatTuning<float, float>>(b, "FlatTuning (the library's)", c);
    using segs::PackShape;
    using scan::packs::ScanPackTuning;
    pack_candidate<ScanPackTuning>(b, "packs: ScanPackTuning (the library's)", c);
    pack_candidate<ScanPackTuning>(b, "packs: ScanPackTuning, longest known", c, c.longest);
    pack_candidate<ScanPackTuning>(b, "packs: ScanPackTuning, K <= 32 (no wide packs)", c, 0, WARP);
    pack_candidate<segs::PackTuning>(b, "packs: PackTuning (the reduction's: 2048 a pack)", c);
    pack_candidate<PackShape<128, 4, 512, 8>>(b, "packs: 128 x 4, 512 a pack, 8/SM", c);
    pack_candidate<PackShape<128, 4, 1024, 6, 3>>(b, "packs: 128 x 4, 1024 a pack, 6/SM, 3 stages", c);
}

// Segments of a long mean through scan_long (LongWith, one grid of tiles
// over the flat data, a look-back tree a segment) with a shape
// (lookback::LookbackShape<warps, vectors a lane, stages, blocks an SM,
// BULK, STREAM, MID_PUBLISH>), and evict-first copies up to
// EVICT_FIRST_UP_TO bytes of input.  Measured and dropped (bench/results/
// tune-segscan-long-*): 2x16 s2 b4, 2x16 s2 b6 (it spills), 2x12 s3 b4,
// 2x12 s2 b6 with cp.async copies, 2x8 s3 b6, 2x10 s2 b7 (3-30 points
// below the best).
template <class Shape, int64_t EVICT_FIRST_UP_TO = INT64_MAX>
void long_candidate(Bench &b, const char *name, const Case &c) {
    using T = LongWith<Shape, float, Op, EVICT_FIRST_UP_TO>;
    if (T::scratch(seg::Layout::of(c.a), c.longest) > b.scratch_bytes) {
        std::printf("| %-40s | scratch too small |\n", name);
        return;
    }
    row(b, name, c, [&](gp_scan_args x) {
        x.batch.longest = c.longest;
        return T::run(x, b.facts);
    });
}

void long_candidates(Bench &b, const Case &c) {
    using lookback::LookbackShape;
    candidate<FlatTuning<float, float>>(b, "flat: FlatTuning (the library's)", c);
    if (c.total / c.segments <= 65536)
        pack_candidate<scan::packs::ScanPackTuning>(b, "packs: ScanPackTuning (the library's)", c, c.longest);
    long_candidate<LongTuning<float, float>>(b, "long: LongTuning (the library's)", c);
    long_candidate<LongTuning<float, float>, 0>(b, "long: LongTuning, no evict-first", c);
    long_candidate<LookbackShape<2, 8, 2, 8>>(b, "long: 2x8 s2 b8, MID_PUBLISH", c);
    long_candidate<LookbackShape<2, 12, 2, 6, true, true, false>>(b, "long: 2x12 s2 b6, no MID_PUBLISH", c);
    long_candidate<LookbackShape<4, 8, 2, 4>>(b, "long: 4x8 s2 b4", c);
}

// The float64 scan of each problem ([starts[p], starts[p+1]) of the host
// data) and its bound, uploaded.
void reference(Bench &b, const std::vector<int64_t> &starts) {
    const double eps = std::ldexp(1.0, -24);
    const int64_t total = starts.back();
    std::vector<double> want(total), bound(total);
    for (size_t p = 0; p + 1 < starts.size(); ++p) {
        const int64_t len = starts[p + 1] - starts[p];
        const double depth = std::ceil(std::log2(double(len > 1 ? len : 1))) + 1;
        double s = 0, m = 0;
        for (int64_t i = starts[p]; i < starts[p + 1]; ++i) {
            s += b.host[i], m += std::fabs(b.host[i]);
            want[i] = s, bound[i] = 4 * depth * eps * m + eps * std::fabs(s);
        }
    }
    CHECK(cudaMemcpy(b.want, want.data(), total * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.bound, bound.data(), total * 8, cudaMemcpyHostToDevice));
}

const char *HEAD = "| shape | ms | GB/s | % roof | % roof with offsets | check |\n|---|---:|---:|---:|---:|---|\n";

int main(int argc, char **argv) {
    // `tune_segscan segments`: the ragged cases and the long rows of 2^26
    // elements alone (the host references at 2^28 take minutes).
    // `tune_segscan rows`: C rows of 2^26 elements in all whose length is a
    // multiple of the 1-D tile, the library's flat shape against the 1-D
    // scan over all the rows at once (what segmented_adaptive runs for
    // them), no segments.
    const bool segments_only = argc > 1 && std::strcmp(argv[1], "segments") == 0;
    const bool rows_only = argc > 1 && std::strcmp(argv[1], "rows") == 0;
    const bool chain = argc > 1 && std::strcmp(argv[1], "chain") == 0;
    // `tune_segscan packs`: the segments alone (means 4 to 65536), the
    // library's flat look-back against the scan by packs (cuda/scan/packs.cuh).
    const bool packs = argc > 1 && std::strcmp(argv[1], "packs") == 0;
    // `tune_segscan long`: segments of means 8192 to 2^20, the flat
    // look-back and the packs against scan_long's shapes.
    const bool long_only = argc > 1 && std::strcmp(argv[1], "long") == 0;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    Bench b{};
    CHECK(device_facts(b.facts));
    b.flush = l2_flush_buffer(prop, b.fb);
    const int64_t most = int64_t(1) << (segments_only || rows_only || chain || packs || long_only ? 26 : 28);  // 16384^2
    b.host = random_floats(most, &b.in, &b.out);
    CHECK(cudaMalloc(&b.out2, most * 4));
    CHECK(cudaMalloc(&b.want, most * 8));
    CHECK(cudaMalloc(&b.bound, most * 8));
    CHECK(cudaMalloc(&b.counts, 24));
    b.scratch_bytes = size_t(64) << 20;
    CHECK(cudaMalloc(&b.scratch, b.scratch_bytes));
    {  // the copy roof: read + write of 512 MiB (256 MiB for the segments alone)
        const size_t bytes = std::min(size_t(1) << 29, size_t(most) * 4);
        const float ms = median_ms([&] { CHECK(cudaMemcpyAsync(b.out, b.in, bytes, cudaMemcpyDeviceToDevice)); },
                                   b.flush, b.fb, REPEAT);
        b.roof_gbps = 2.0 * bytes / ms / 1e6;
    }
    std::printf("%s, %d SMs; copy roof %.0f GB/s (read + write); float32 inclusive cumsum\n", prop.name,
                prop.multiProcessorCount, b.roof_gbps);

    struct Shape { int64_t rows, n; };
    const Shape all_shapes[] = {{1 << 24, 4}, {1 << 20, 64}, {1 << 14, 1 << 14}, {64, 1 << 20}, {4, 1 << 24}, {1, 1 << 26}};
    const Shape whole_tiles[] = {{1 << 15, 1 << 11}, {1 << 13, 1 << 13}, {1 << 12, 1 << 14}, {1 << 10, 1 << 16},
                                 {1 << 8, 1 << 18},  {64, 1 << 20},     {4, 1 << 24},       {1, 1 << 26}};
    std::vector<Shape> shapes(std::begin(all_shapes), std::end(all_shapes));
    if (rows_only) shapes.assign(std::begin(whole_tiles), std::end(whole_tiles));
    if (chain) shapes = {{1, 1 << 26}, {21, 3 * (1 << 20) + 7}};
    if (packs || long_only) shapes.clear();
    for (const Shape s : shapes) {
        if (segments_only && (s.rows > 64 || s.rows * s.n > most)) continue;  // the long rows of 2^26 stay
        Case c{};
        c.total = s.rows * s.n;
        gp_scan_args &a = c.a;
        a.in = b.in, a.n = s.n, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM, a.inclusive = 1;
        a.batch = gp_batch{s.rows, 1, s.n, 1, 1, nullptr};
        std::vector<int64_t> starts;
        for (int64_t r = 0; r <= s.rows; ++r) starts.push_back(r * s.n);
        reference(b, starts);
        std::printf("\n### (%lld, %lld) axis=-1\n\n%s", (long long)s.rows, (long long)s.n, HEAD);
        if (chain) {
            chain_candidates(b, c);
        } else if (rows_only) {
            if (FlatLookback<float, Op>::rows_divide(seg::Layout::of(c.a)))
                candidate<RowTuning<float, Op>>(b, "RowTuning (flat, the library's)", c);
            else
                candidate<FlatTuning<float, float>>(b, "FlatTuning (flat, the library's)", c);
        } else {
            candidates(b, c);
        }
        // The same rows through the 1-D scan: all at once, a look-back tree
        // a row (lookback::Rows; rows of whole tiles), and once a row.
        using A = lookback::LookbackWith<lookback::Tuning, float, Op>;
        if (s.n % A::TILE == 0 && A::scratch(s.n, s.rows) <= b.scratch_bytes)
            row(b, "1-D decoupled_lookback, all rows at once", c,
                [&](gp_scan_args x) { return A::run(x, b.facts, s.rows); });
        using L = lookback::Lookback<float, Op>;
        if (!rows_only && !chain && s.n >= (1 << 20) && L::scratch(s.n) <= b.scratch_bytes)
            row(b, s.rows == 1 ? "1-D decoupled_lookback" : "1-D decoupled_lookback, a launch a row", c,
                [&](gp_scan_args x) {
                    for (int64_t r = 0; r < s.rows; ++r) {
                        gp_scan_args y = x;
                        y.in = static_cast<const float *>(x.in) + r * s.n;
                        y.out = static_cast<float *>(x.out) + r * s.n;
                        y.batch = gp_batch{};
                        const cudaError_t e = L::run(y, b.facts);
                        if (e != cudaSuccess) return e;
                    }
                    return cudaSuccess;
                });
    }

    if (rows_only) return 0;
    int64_t *d_off;
    const int64_t total = int64_t(1) << 26;
    CHECK(cudaMalloc(&d_off, (2 * total + 1) * 8));  // lengths of 0 ... 2 mean: up to 2 total segments at mean 1
    std::vector<int64_t> means{4, 64, 1024, 65536};
    if (packs) means = {1, 2, 4, 8, 16, 64, 256, 1024, 4096, 8192, 16384, 65536};
    if (long_only) means = {8192, 16384, 65536, 262144, 1 << 20};
    for (int64_t mean : means) {
        const std::vector<int64_t> off = random_offsets(total, mean);
        Case c{};
        c.segments = int64_t(off.size()) - 1;
        c.total = off.back();
        for (size_t i = 0; i + 1 < off.size(); ++i) c.longest = std::max(c.longest, off[i + 1] - off[i]);
        CHECK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
        gp_scan_args &a = c.a;
        a.in = b.in, a.n = c.total, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM, a.inclusive = 1;
        a.batch = gp_batch{c.segments, 1, 0, 1, 0, d_off};
        reference(b, off);
        std::printf("\n### segments of mean length %lld: %lld segments, %lld elements, offsets %.1f MiB\n\n%s",
                    (long long)mean, (long long)c.segments, (long long)c.total, 8.0 * (c.segments + 1) / (1 << 20),
                    HEAD);
        if (chain) chain_candidates(b, c);
        else if (packs) pack_candidates(b, c);
        else if (long_only) long_candidates(b, c);
        else candidates(b, c);
    }
    return 0;
}
