// tune_scan.cu - the evidence for the look-back scan's tunings
// (cuda/scan/lookback_tuning.cuh).
//
// Times the look-back scan, float32 inclusive sum, for several block shapes
// against cub::DeviceScan::InclusiveSum and a device-to-device copy of the
// same bytes in the same run: CUDA events around the launches only, L2
// overwritten before every run, median of REPEAT runs.  Each shape is also
// checked: against a float64 scan on the host (largest error relative to
// the prefix of |x|) and for the same bits in two runs.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_scan.cu -o /tmp/s && /tmp/s
#include <cmath>
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include <cub/device/device_scan.cuh>

#include "scan/decoupled_lookback.cuh"

using namespace gp;
using namespace gp::lookback;

// The tile pass alone: no look-back, every tile without its prefix (wrong
// results, the time of the loads, the scan and the stores).
struct TilePassOnly : NoProbe {
    static constexpr bool LOOK_BACK = false;
};
constexpr int REPEAT = 30;
DeviceFacts facts;  // of device 0

struct Case {
    int64_t n;
    const float *in;
    float *out;
    void *flush;
    size_t fb;
    float copy_ms, cub_ms;
    const std::vector<float> *host;
    std::vector<double> ref, absref;
};

void row(const char *name, const Case &c, float ms, const char *check) {
    std::printf("| %-18s | 2^%-4.1f | %8.4f | %6.0f | %5.3f | %5.3f | %s |\n", name, std::log2(double(c.n)), ms,
                8.0 * c.n / ms / 1e6, c.copy_ms / ms, c.cub_ms / ms, check);
}

// The first result of each tile size (vectors a lane), at this n: shapes
// that differ only in how the look-back waits must give the same bits.
std::vector<float> first_of[33];

template <class L>
void run_with(const char *name, Case &c, cudaStream_t stream = 0, int vpt = 0) {
    gp_scan_args a{};
    a.in = c.in; a.out = c.out; a.n = c.n; a.inclusive = 1; a.stream = stream;
    a.scratch_bytes = L::scratch(c.n);
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    const float ms = median_ms([&] { CHECK(L::run(a, facts)); }, c.flush, c.fb, REPEAT, NoPre{}, stream);
    std::vector<float> r1(c.n), r2(c.n);
    CHECK(cudaMemcpy(r1.data(), c.out, c.n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemset(c.out, 0xff, c.n * 4));
    CHECK(L::run(a, facts));
    CHECK(cudaMemcpy(r2.data(), c.out, c.n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(a.scratch));
    double worst = 0;
    for (int64_t i = 0; i < c.n; ++i) worst = std::fmax(worst, std::fabs(r1[i] - c.ref[i]) / c.absref[i]);
    const char *as_first = "";
    if (vpt > 0 && first_of[vpt].size() == r1.size())
        as_first = std::memcmp(r1.data(), first_of[vpt].data(), c.n * 4) == 0 ? ", = first of its tile"
                                                                              : ", DIFFERS from first of its tile";
    else if (vpt > 0)
        first_of[vpt] = r1;
    char check[128];
    std::snprintf(check, sizeof check, "err %.1e x eps*log2n, %s%s", worst / (5.96e-8 * std::log2(double(c.n))),
                  std::memcmp(r1.data(), r2.data(), c.n * 4) == 0 ? "same bits" : "BITS DIFFER", as_first);
    row(name, c, ms, check);
}

template <class Shape, class Probe = NoProbe>
void runs(const char *name, Case &c) {
    run_with<LookbackWith<Shape, float, gp::Sum<float>, Probe>>(name, c, 0, Probe::LOOK_BACK ? Shape::VPT : 0);
}

using Auto = Lookback<float, gp::Sum<float>>;
using Large = LookbackWith<Tuning, float, gp::Sum<float>>;

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is measured
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    CHECK(device_facts(facts));
    Case c{};
    c.fb = size_t(p.l2CacheSize) * 4;
    CHECK(cudaMalloc(&c.flush, c.fb));
    float *in, *out;
    const std::vector<float> h = random_floats(int64_t(1) << 28, &in, &out);
    c.in = in; c.out = out;
    std::printf("%s, %d SMs\n\n| config (warps per block x vectors per lane) | n | ms | GB/s | x vs copy | x vs CUB | check |\n|---|---|---:|---:|---:|---:|---|\n",
                p.name, p.multiProcessorCount);
    if (argc > 1) {  // for Nsight Compute: one launch of each at 2^20, or the look-back and the tile pass at 2^26
        const bool small = std::strcmp(argv[1], "small") == 0;
        gp_scan_args a{};
        a.in = in; a.out = out; a.n = int64_t(1) << (small ? 20 : 26); a.inclusive = 1;
        a.scratch_bytes = Auto::scratch(a.n) * 4;
        CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
        CHECK(Auto::run(a, facts));
        CHECK((LookbackWith<Tuning, float, gp::Sum<float>, TilePassOnly>::run(a, facts)));
        if (small) {
            CHECK(cub::DeviceScan::InclusiveSum(nullptr, a.scratch_bytes, in, out, a.n));
            CHECK(cub::DeviceScan::InclusiveSum(a.scratch, a.scratch_bytes, in, out, a.n));
        }
        CHECK(cudaDeviceSynchronize());
        return 0;
    }
    for (int lg : {20, 24, 28}) {
        c.n = int64_t(1) << lg;
        c.ref.assign(c.n, 0); c.absref.assign(c.n, 0);
        double acc = 0, aacc = 0;
        for (int64_t i = 0; i < c.n; ++i) { acc += h[i]; aacc += std::fabs(h[i]); c.ref[i] = acc; c.absref[i] = aacc; }
        c.copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(out, in, c.n * 4, cudaMemcpyDeviceToDevice)); }, c.flush, c.fb, REPEAT);
        size_t tb = 0;
        CHECK(cub::DeviceScan::InclusiveSum(nullptr, tb, in, out, c.n));
        void *tmp;
        CHECK(cudaMalloc(&tmp, tb));
        c.cub_ms = median_ms([&] { CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, in, out, c.n)); }, c.flush, c.fb, REPEAT);
        CHECK(cudaFree(tmp));
        row("copy", c, c.copy_ms, "");
        row("cub InclusiveSum", c, c.cub_ms, "");
        run_with<Auto>("auto", c);
        for (auto &f : first_of) f.clear();
        runs<Tuning>("2x16 s2 b6 (auto, large n)", c);
        runs<LookbackShape<2, 16, 2, 6, true, true, false>>("2x16 s2 b6, no mid publish", c);
        runs<LookbackShape<2, 12, 2, 5, false>>("2x12 s2 b5 cp.async, mid publish", c);
        runs<SmallTuning>("2x12 s2 b5 cp.async (auto, small n)", c);
        runs<LookbackShape<2, 12, 3, 5>>("2x12 s3 b5", c);
        runs<LookbackShape<2, 16, 3, 4>>("2x16 s3 b4", c);
        {  // the kernel alone: the slots zeroed before the first event
            gp_scan_args a{};
            a.in = c.in; a.out = c.out; a.n = c.n; a.inclusive = 1;
            a.scratch_bytes = Large::scratch(c.n);
            CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
            const float ms = median_ms([&] { CHECK(Large::launch(a, facts)); }, c.flush, c.fb, REPEAT, [&] { CHECK(Large::zero(a)); });
            row("2x16 s2 b6, kernel alone", c, ms, "");
            row("zeroing alone", c, median_ms([&] { CHECK(Large::zero(a)); }, c.flush, c.fb, REPEAT), "");
            CHECK(cudaFree(a.scratch));
        }
        runs<Tuning, TilePassOnly>("2x16 s2 b6 NO LOOKBACK", c);
        run_with<Auto>("auto again", c);
        // The same two in the library's timing loop (csrc/timing.c), whose
        // conditions differ from the loop above: the per-thread default
        // stream, the output poisoned right before the first event, and no
        // synchronization between runs - at 2^20 that changes the ranking.
        {
            const cudaStream_t s = cudaStreamPerThread;
            const auto poison = [&] { CHECK(cudaMemsetAsync(c.out, 0xff, c.n * 4, s)); };
            gp_scan_args a{};
            a.in = c.in; a.out = c.out; a.n = c.n; a.inclusive = 1; a.stream = s;
            a.scratch_bytes = Auto::scratch(c.n);
            CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
            size_t tb = 0;
            CHECK(cub::DeviceScan::InclusiveSum(nullptr, tb, in, out, c.n, s));
            void *tmp;
            CHECK(cudaMalloc(&tmp, tb));
            const auto cub = [&] { CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, in, out, c.n, s)); };
            const auto ours = [&] { CHECK(Auto::run(a)); };  // the library's entry point
            row("cub, poisoned", c, median_ms(cub, c.flush, c.fb, REPEAT, poison, s), "");
            row("auto, poisoned", c, median_ms(ours, c.flush, c.fb, REPEAT, poison, s), "");
            row("cub, library's loop", c, median_ms<true>(cub, c.flush, c.fb, REPEAT, poison, s), "");
            row("auto, library's loop", c, median_ms<true>(ours, c.flush, c.fb, REPEAT, poison, s), "");
            CHECK(cudaFree(tmp));
            CHECK(cudaFree(a.scratch));
        }
    }
    return 0;
}
