// tune_segflat.cu - the evidence for FlatTuning, the tile shape of the flat
// segmented reduction (cuda/reduce/segmented_flat.cuh, step 21), and for the
// lengths at which the adaptive step (17) should hand segments to it.
//
// Float32 sums of 2^26 elements cut into segments of random lengths,
// uniform in [0, 2 mean] (as bench/bench_reduce.py makes them; the last
// elements past the last whole segment belong to none), for means 4, 16,
// 64, 256, 1024, 2048, 4096 and 65536; then rows of C arrays of 2^26 floats
// along their last axis.  Each case times, in one run: what
// segmented_adaptive runs today (gp_reduce_segmented_adaptive), CUB's
// DeviceSegmentedReduce::Sum (segments only), and segmented_flat with the
// library's FlatTuning and other tile shapes (FlatShape<threads, 16-byte
// vectors a thread, blocks an SM, cp.async>); for the library's shape also
// each of its three kernels alone (the others run before, outside the
// events).  CUDA events around the launches only, L2 overwritten before every
// run, median of REPEAT runs.  GB/s and % roof count the bytes of the
// input's segments, the outputs and the offsets (8 bytes each, k + 1), as
// bench_reduce.py does, against a device-to-device copy's read + write rate
// measured here.  Every result is checked against a float64 host sum
// within the tests' bound (4 (log2 len + 1) eps sum|x| + eps |sum|, eps =
// 2^-23) and against a second run (same bits).
// `tune_segflat packs`: the segments only, timing instead of the flat shapes
// the adaptive step's packs of segments (reduce_packs in
// cuda/reduce/segmented.cuh) with the library's PackTuning and other shapes
// (PackShape<threads, 16-byte vectors a lane a trip, elements a pack,
// blocks an SM>).
// Build and run on the GPU machine (well under 90 s on an H200):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_segflat.cu -o /tmp/tune_segflat && /tmp/tune_segflat
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/reduce/17_segmented_adaptive.cu"
#include "../cuda/reduce/18_cub_segmented.cu"
#include "../cuda/reduce/segmented_flat.cuh"

using namespace gp;
using namespace gp::reduce::seg;
using namespace gp::reduce::flat;
using In = float;
using Op = Sum<float>;

constexpr int REPEAT = 20;

struct Bench {
    float *in, *out;
    void *scratch;
    size_t scratch_bytes;
    unsigned *counter;
    void *flush;
    size_t fb;
    double roof_gbps;
    std::vector<float> host, got, again;
};

struct Case {
    gp_reduce_args a;
    int64_t count;   // results
    double bytes;    // read + written
    std::vector<double> want, bound;
    float base_ms, cub_ms;  // the adaptive step's and CUB's, for "x auto" and "x CUB" (0: none)
};

// Times launch(a) (pre() before each run, outside the events); checks the
// results of full(a) (launch(a) after pre() where not given) and a second
// run's bits.
template <class F, class G = NoPre, class H = std::nullptr_t>
float row(Bench &b, Case &c, const char *name, F launch, G pre = G{}, H full = nullptr) {
    gp_reduce_args a = c.a;
    a.scratch = b.scratch, a.scratch_bytes = b.scratch_bytes, a.out = b.out;
    const auto whole = [&](gp_reduce_args x) {
        if constexpr (std::is_same<H, std::nullptr_t>::value) {
            pre();
            return launch(x);
        } else {
            return full(x);
        }
    };
    CHECK(cudaMemset(b.out, 0xff, c.count * 4));
    CHECK(whole(a));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(b.got.data(), b.out, c.count * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemset(b.out, 0xff, c.count * 4));
    CHECK(whole(a));
    CHECK(cudaMemcpy(b.again.data(), b.out, c.count * 4, cudaMemcpyDeviceToHost));
    const float ms = median_ms([&] { CHECK(launch(a)); }, b.flush, b.fb, REPEAT, pre);
    int64_t bad = 0;
    for (int64_t p = 0; p < c.count; ++p)
        if (!(std::fabs(double(b.got[p]) - c.want[p]) <= c.bound[p])) ++bad;
    const bool same = std::memcmp(b.got.data(), b.again.data(), c.count * 4) == 0;
    const double gbps = c.bytes / ms / 1e6;
    char check[64], vs[2][16] = {"", ""};
    std::snprintf(check, sizeof check, "%s, %s", bad ? "WRONG" : "ok", same ? "same bits" : "BITS DIFFER");
    if (c.base_ms > 0) std::snprintf(vs[0], sizeof vs[0], "%.2f", c.base_ms / ms);
    if (c.cub_ms > 0) std::snprintf(vs[1], sizeof vs[1], "%.2f", c.cub_ms / ms);
    std::printf("| %-44s | %8.4f | %6.0f | %6.1f | %5s | %5s | %s |\n", name, ms, gbps, 100 * gbps / b.roof_gbps,
                vs[0], vs[1], check);
    return ms;
}

// The whole of segmented_flat with a shape (two-phase scratch as the
// library calls it).
template <class Shape>
void shape(Bench &b, Case &c, const char *name) {
    using F = FlatWith<Shape, In, Op>;
    const Problems P = problems_of(c.a);
    if (F::scratch(c.a, P) > b.scratch_bytes) {
        std::printf("| %-44s | scratch too small |\n", name);
        return;
    }
    row(b, c, name, [&](gp_reduce_args x) { return F::run(x, P); });
}

// FlatTuning's three kernels one at a time (segments): the bounds search,
// the tiles (bounds computed before), the records (everything before).
void pieces(Bench &b, Case &c) {
    using F = FlatWith<FlatTuning, In, Op>;
    using Acc = float;
    const Problems P = problems_of(c.a);
    const int64_t n = c.a.n, nt = F::tiles(n);
    const F::Records rec(b.scratch, nt, true);
    const ListedOffsets off{P.offsets, rec.bounds};
    const bool vec = reinterpret_cast<uintptr_t>(c.a.in) % 16 == 0;
    const auto search = [&] {
        flat_bounds<F::BOUND_BLOCK><<<unsigned(ceil_div<int64_t>(nt + 1, F::BOUND_BLOCK / WARP)), F::BOUND_BLOCK>>>(
            P.offsets, P.count, F::TILE, nt, rec.bounds);
        return cudaGetLastError();
    };
    const auto tiles = [&](gp_reduce_args x) {
        reduce_flat<FlatTuning, In, Op, ListedOffsets><<<unsigned(nt), FlatTuning::BLOCK>>>(
            static_cast<const In *>(x.in), n, P.count, off, nt, vec, rec.agg, rec.head, rec.cross,
            static_cast<Acc *>(x.out));
        return cudaGetLastError();
    };
    const auto fix = [&](gp_reduce_args x) {
        flat_fixup<F::FIX_BLOCK, F::NEAR, Op><<<unsigned(ceil_div<int64_t>(nt, F::FIX_BLOCK)), F::FIX_BLOCK>>>(
            nt, rec.agg, rec.head, rec.cross, static_cast<Acc *>(x.out));
        return cudaGetLastError();
    };
    const auto all = [&](gp_reduce_args x) {
        CHECK(search());
        CHECK(tiles(x));
        return fix(x);
    };
    std::printf("| FlatTuning's kernels alone (%lld tiles): | | | | | | |\n", (long long)nt);
    // The rest of the call runs outside the events (pre) or only for the check (all).
    row(b, c, "  flat_bounds (a warp a tile)", [&](gp_reduce_args) { return search(); }, NoPre{}, all);
    row(b, c, "  reduce_flat", tiles, [&] { CHECK(search()); }, all);
    row(b, c, "  flat_fixup", fix, [&] {
        CHECK(search());
        gp_reduce_args x = c.a;
        x.out = b.out;
        CHECK(tiles(x));
    }, all);
}

void shapes(Bench &b, Case &c) {
    shape<FlatTuning>(b, c, "flat: FlatTuning (the library's)");
    shape<FlatShape<128, 8, 6, false>>(b, c, "flat: 128 x 8, 6/SM, through registers");
    shape<FlatShape<128, 4, 8>>(b, c, "flat: 128 x 4, 8/SM");
    shape<FlatShape<256, 4, 4>>(b, c, "flat: 256 x 4, 4/SM");
    shape<FlatShape<256, 8, 3>>(b, c, "flat: 256 x 8, 3/SM");
}

// reduce_packs (the adaptive step's segments of mean PACK_MIN ... PACK_MAX)
// with a shape, nothing deferred (no segment here is 16x its mean).
template <class Shape>
void packs(Bench &b, Case &c, const char *name) {
    const Problems P = problems_of(c.a);
    const int64_t K = pack_segments<Shape>(P.len);
    char label[96];
    std::snprintf(label, sizeof label, "%s, K %lld", name, (long long)K);
    row(b, c, label,
        [&](gp_reduce_args x) { return launch_packs<In, Op, Shape>(x, P, K, Deferred{}); });
}

void pack_shapes(Bench &b, Case &c) {
    packs<PackTuning>(b, c, "packs: PackTuning (the library's)");
    packs<PackShape<256, 4, 2048, 4>>(b, c, "packs: 256 x 4, 4/SM");
    packs<PackShape<256, 4, 2048, 5>>(b, c, "packs: 256 x 4, 5/SM");
    packs<PackShape<128, 4, 2048, 12>>(b, c, "packs: 128 x 4, 12/SM");
    packs<PackShape<256, 2, 2048, 6>>(b, c, "packs: 256 x 2, 6/SM");
    packs<PackShape<128, 4, 1024, 8>>(b, c, "packs: 128 x 4, 1024 a pack, 8/SM");
    packs<PackShape<128, 4, 512, 8>>(b, c, "packs: 128 x 4, 512 a pack, 8/SM");
    packs<PackShape<128, 4, 4096, 8>>(b, c, "packs: 128 x 4, 4096 a pack, 8/SM");
    packs<PackShape<128, 4, 8192, 8>>(b, c, "packs: 128 x 4, 8192 a pack, 8/SM");
    packs<PackShape<128, 8, 2048, 6>>(b, c, "packs: 128 x 8, 6/SM");
    packs<PackShape<128, 4, 2048, 8, 3>>(b, c, "packs: 128 x 4, 8/SM, 3 stages");
}

const char *HEAD =
    "| mapping | ms | GB/s | % roof | x auto | x CUB | check |\n|---|---:|---:|---:|---:|---:|---|\n";

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const bool pieces_too = !(argc > 1 && std::strcmp(argv[1], "quick") == 0);
    const bool packs_only = argc > 1 && std::strcmp(argv[1], "packs") == 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    Bench b{};
    b.flush = l2_flush_buffer(prop, b.fb);
    const int64_t total = int64_t(1) << 26;
    float *dummy;
    b.host = random_floats(total, &b.in, &dummy);
    CHECK(cudaFree(dummy));
    CHECK(cudaMalloc(&b.out, total * 4));
    b.got.resize(total), b.again.resize(total);
    b.scratch_bytes = size_t(64) << 20;
    CHECK(cudaMalloc(&b.scratch, b.scratch_bytes));
    CHECK(cudaMalloc(&b.counter, 4));
    CHECK(cudaMemset(b.counter, 0, 4));
    {  // the copy roof: read + write of 256 MiB
        float *dst;
        const size_t bytes = size_t(total) * 4;
        CHECK(cudaMalloc(&dst, bytes));
        const float ms = median_ms([&] { CHECK(cudaMemcpyAsync(dst, b.in, bytes, cudaMemcpyDeviceToDevice)); },
                                   b.flush, b.fb, REPEAT);
        b.roof_gbps = 2.0 * bytes / ms / 1e6;
        CHECK(cudaFree(dst));
    }
    std::printf("%s, %d SMs; copy roof %.0f GB/s (read + write); float32 sums; FlatTuning %d x %d, %d/SM\n",
                prop.name, prop.multiProcessorCount, b.roof_gbps, FlatTuning::BLOCK, FlatTuning::VPT,
                FlatTuning::MIN_BLOCKS);
    const double eps = std::ldexp(1.0, -23);
    int64_t *d_off;
    CHECK(cudaMalloc(&d_off, (total + 1) * 8));
    void *cub_tmp = nullptr;
    size_t cub_bytes = 0;
    for (int64_t mean : {int64_t(4), int64_t(16), int64_t(64), int64_t(256), int64_t(1024), int64_t(2048),
                         int64_t(4096), int64_t(65536)}) {
        const std::vector<int64_t> off = random_offsets(total, mean);
        Case c{};
        c.count = int64_t(off.size()) - 1;
        CHECK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
        c.want.assign(c.count, 0.0), c.bound.resize(c.count);
        for (int64_t p = 0; p < c.count; ++p) {
            double m = 0;
            for (int64_t k = off[p]; k < off[p + 1]; ++k) c.want[p] += b.host[k], m += std::fabs(b.host[k]);
            const double len = double(off[p + 1] - off[p]);
            c.bound[p] = 4 * (std::ceil(std::log2(len > 1 ? len : 1)) + 1) * eps * m + eps * std::fabs(c.want[p]);
        }
        c.bytes = 4.0 * double(off.back()) + 4.0 * double(c.count) + 8.0 * double(c.count + 1);
        gp_reduce_args &a = c.a;
        a.in = b.in, a.n = total, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM, a.counter = b.counter;
        a.batch = gp_batch{c.count, 1, 0, 1, 0, d_off};
        std::printf("\n### segments of mean length %lld: %lld segments\n\n%s", (long long)mean, (long long)c.count,
                    HEAD);
        gp_reduce_args q = a;
        CHECK(gp_reduce_segmented_adaptive(&q));  // scratch == nullptr: its size
        if (q.scratch_bytes > b.scratch_bytes) std::printf("(the adaptive step wants %zu bytes of scratch)\n", q.scratch_bytes);
        c.base_ms = row(b, c, "auto (gp_reduce_segmented_adaptive)",
                        [](gp_reduce_args x) { return gp_reduce_segmented_adaptive(&x); });
        {  // as the library's callers call it: the longest segment known (gp_batch.longest)
            int64_t longest = 0;
            for (int64_t p = 0; p < c.count; ++p) longest = std::max(longest, off[p + 1] - off[p]);
            row(b, c, "auto, longest known", [longest](gp_reduce_args x) {
                x.batch.longest = longest;
                return gp_reduce_segmented_adaptive(&x);
            });
        }
        size_t need = 0;
        CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, need, b.in, b.out, c.count, d_off, d_off + 1));
        if (need > cub_bytes) {
            if (cub_tmp) CHECK(cudaFree(cub_tmp));
            CHECK(cudaMalloc(&cub_tmp, need));
            cub_bytes = need;
        }
        c.cub_ms = row(b, c, "CUB DeviceSegmentedReduce::Sum", [&](gp_reduce_args x) {
            size_t bytes = cub_bytes;
            return cub::DeviceSegmentedReduce::Sum(cub_tmp, bytes, static_cast<const float *>(x.in),
                                                   static_cast<float *>(x.out), c.count, d_off, d_off + 1);
        });
        if (packs_only) {
            pack_shapes(b, c);
            continue;
        }
        shapes(b, c);
        if (pieces_too) pieces(b, c);
    }
    if (packs_only) return 0;
    // Rows of a C array along the last axis: offsets computed, no bounds.
    struct Rows { int64_t rows, cols; };
    for (const Rows s : {Rows{1 << 24, 4}, Rows{1 << 20, 64}, Rows{1 << 16, 1024}, Rows{64, 1 << 20}}) {
        Case c{};
        c.count = s.rows;
        c.want.assign(c.count, 0.0), c.bound.resize(c.count);
        const double depth = std::ceil(std::log2(double(s.cols))) + 1;
        for (int64_t p = 0; p < s.rows; ++p) {
            double m = 0;
            for (int64_t k = p * s.cols; k < (p + 1) * s.cols; ++k) c.want[p] += b.host[k], m += std::fabs(b.host[k]);
            c.bound[p] = 4 * depth * eps * m + eps * std::fabs(c.want[p]);
        }
        c.bytes = 4.0 * double(total) + 4.0 * double(c.count);
        gp_reduce_args &a = c.a;
        a.in = b.in, a.n = s.cols, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM, a.counter = b.counter;
        a.batch = gp_batch{s.rows, 1, s.cols, 1, 0, nullptr};
        std::printf("\n### (%lld, %lld) axis=-1\n\n%s", (long long)s.rows, (long long)s.cols, HEAD);
        c.base_ms = row(b, c, "auto (gp_reduce_segmented_adaptive)",
                        [](gp_reduce_args x) { return gp_reduce_segmented_adaptive(&x); });
        shape<FlatTuning>(b, c, "flat: FlatTuning (the library's)");
        shape<FlatShape<128, 4, 8>>(b, c, "flat: 128 x 4, 8/SM");
    }
    return 0;
}
