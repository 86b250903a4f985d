// profile_scan.cu - where the look-back scan's warps spend their cycles
// (clock64 around each part of the loop, summed over warps): the evidence
// for what to change next.  `profile_scan flat`: the flat look-back of
// contiguous problems (10_segmented_lookback.cu's scan_tiles, the library's
// chained shape and the 1-D's) against the 1-D scan on the same 2^26
// floats - one row, rows that do not divide the tile, segments of mean
// 1024 and 65536.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/profile_scan.cu -o /tmp/p && /tmp/p [flat]
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/scan/10_segmented_lookback.cu"

using namespace gp;
using namespace gp::lookback;

// The kernel's probe (decoupled_lookback.cuh): clock64() at each mark,
// the cycles of each part of a warp's loop summed over the warps into
// gp_prof[START..WRITE], the iterations into gp_prof[PARTS].
__device__ unsigned long long gp_prof[PARTS + 1];

__device__ inline long long cycles() {
#ifdef __CUDA_ARCH__
    return clock64();
#else
    return 0;  // the host pass never calls it
#endif
}

struct ClockProbe {
    static constexpr bool LOOK_BACK = true;
    long long t, acc[PARTS + 1];
    __device__ ClockProbe() : t(cycles()) {
        for (int k = 0; k <= PARTS; ++k) acc[k] = 0;
    }
    __device__ void mark(ProbePart k) {
        const long long now = cycles();
        acc[k] += now - t;
        t = now;
    }
    __device__ void iteration(int lane) {
        if (lane == 0) acc[PARTS] += 1;
    }
    __device__ void end(int lane) {
        if (lane == 0)
            for (int k = 0; k <= PARTS; ++k) atomicAdd(&gp_prof[k], (unsigned long long)acc[k]);
    }
};

// The same for the tile pass alone (no look-back, wrong results).
struct ClockTilePass : ClockProbe {
    static constexpr bool LOOK_BACK = false;
};

// One profiled run (after a warm-up) of run(a), a's scratch `bytes`; n:
// the elements, for the table.
template <class Run>
void profile_run(const char *name, gp_scan_args a, size_t bytes, int64_t n, Run run) {
    a.scratch_bytes = bytes;
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    CHECK(run(a));  // warm-up
    CHECK(cudaDeviceSynchronize());
    unsigned long long zero[PARTS + 1] = {}, got[PARTS + 1];
    CHECK(cudaMemcpyToSymbol(gp_prof, zero, sizeof zero));
    CHECK(run(a));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpyFromSymbol(got, gp_prof, sizeof got));
    CHECK(cudaFree(a.scratch));
    const char *part[PARTS] = {"start", "land", "publish", "scan", "take", "lookback", "write"};
    double all = 0;
    for (int k = 0; k < PARTS; ++k) all += double(got[k]);
    std::printf("| %-22s | 2^%.0f | %8llu |", name, std::log2(double(n)), got[PARTS]);
    for (int k = 0; k < PARTS; ++k) std::printf(" %s %4.1f%% |", part[k], 100.0 * got[k] / all);
    std::printf(" %.0f cycles/iteration a warp |\n", all / double(got[PARTS]));
}

// The 1-D scan of n floats with shape L.
template <class L>
void profile(const char *name, const float *in, float *out, int64_t n, const DeviceFacts &d) {
    gp_scan_args a{};
    a.in = in; a.out = out; a.n = n; a.inclusive = 1;
    profile_run(name, a, L::scratch(n), n, [&](const gp_scan_args &x) { return L::run(x, d); });
}

// The flat look-back (TilesWith<Shape>) of the problems of `a`.
template <class Shape, bool SEGMENTS>
void profile_flat(const char *name, const gp_scan_args &a, const DeviceFacts &d) {
    using T = TilesWith<Shape, float, Sum<float>, ClockProbe>;
    const seg::Layout lay = seg::Layout::of(a);
    profile_run(name, a, T::scratch(lay), lay.elements(),
                [&](const gp_scan_args &x) { return T::template run<SEGMENTS>(x, d); });
}

// The flat kernel's cases against the 1-D scan of the same 2^26 floats.
void flat(const float *in, float *out, const DeviceFacts &d) {
    const int64_t total = int64_t(1) << 26;
    using Lib = FlatTuning<float, float>;
    using OneD = FlatShape<2, 16, 2, 6, true, false, true, true, true>;
    profile<LookbackWith<Tuning, float, Sum<float>, ClockProbe>>("1-D, 2x16 s2 b6", in, out, total, d);
    // A float32 inclusive sum of n elements laid out as `batch`.
    const auto args = [&](int64_t n, gp_batch batch) {
        gp_scan_args a{};
        a.in = in, a.out = out, a.n = n, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM, a.inclusive = 1;
        a.batch = batch;
        return a;
    };
    struct Rows { int64_t rows, n; };
    for (const Rows r : {Rows{1, total}, Rows{21, 3 * (int64_t(1) << 20) + 7}}) {
        const gp_scan_args a = args(r.n, gp_batch{r.rows, 1, r.n, 1, 1, nullptr});
        std::printf("rows (%lld, %lld):\n", (long long)r.rows, (long long)r.n);
        profile_flat<Lib, false>("flat, the library's", a, d);
        profile_flat<OneD, false>("flat, 2x16 s2 b6 PLAIN", a, d);
    }
    int64_t *d_off;
    CHECK(cudaMalloc(&d_off, (total + 1) * 8));
    for (int64_t mean : {int64_t(1024), int64_t(65536)}) {
        const std::vector<int64_t> off = random_offsets(total, mean);
        CHECK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
        const gp_scan_args a = args(off.back(), gp_batch{int64_t(off.size()) - 1, 1, 0, 1, 0, d_off});
        std::printf("segments of mean %lld:\n", (long long)mean);
        profile_flat<Lib, true>("flat, the library's", a, d);
        profile_flat<OneD, true>("flat, 2x16 s2 b6 PLAIN", a, d);
    }
    CHECK(cudaFree(d_off));
}

int main(int argc, char **argv) {
    float *in, *out;
    random_floats(int64_t(1) << 28, &in, &out);
    DeviceFacts d;
    CHECK(device_facts(d));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("%s: share of warp cycles (clock64, summed over warps)\n\n", p.name);
    if (argc > 1 && std::strcmp(argv[1], "flat") == 0) {
        flat(in, out, d);
        return 0;
    }
    for (int lg : {20, 24, 28}) {
        const int64_t n = int64_t(1) << lg;
        // auto: the shape Lookback::run picks for n
        using Small = LookbackWith<SmallTuning, float, Sum<float>, ClockProbe>;
        using Large = LookbackWith<Tuning, float, Sum<float>, ClockProbe>;
        if (ceil_div<int64_t>(n, Small::TILE) <= resident_warps<SmallTuning>(d))
            profile<Small>("auto (small n)", in, out, n, d);
        else
            profile<Large>("auto (large n)", in, out, n, d);
        profile<LookbackWith<LookbackShape<2, 16, 2, 6, true, true, false>, float, Sum<float>, ClockProbe>>("2x16 s2 b6, no mid publish", in, out, n, d);
        profile<LookbackWith<Tuning, float, Sum<float>, ClockTilePass>>("2x16 s2 b6 NO LOOKBACK", in, out, n, d);
    }
    return 0;
}
