// profile_scan.cu - where the look-back scan's warps spend their cycles
// (clock64 around each part of the loop, summed over warps): the evidence
// for what to change next.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/profile_scan.cu -o /tmp/p && /tmp/p
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include "scan/decoupled_lookback.cuh"

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

template <class L>
void profile(const char *name, const float *in, float *out, int64_t n, const DeviceFacts &d) {
    gp_scan_args a{};
    a.in = in; a.out = out; a.n = n; a.inclusive = 1;
    a.scratch_bytes = L::scratch(n);
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    CHECK(L::run(a, d));  // warm-up
    CHECK(cudaDeviceSynchronize());
    unsigned long long zero[PARTS + 1] = {}, got[PARTS + 1];
    CHECK(cudaMemcpyToSymbol(gp_prof, zero, sizeof zero));
    CHECK(L::run(a, d));
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

int main() {
    float *in, *out;
    random_floats(int64_t(1) << 28, &in, &out);
    DeviceFacts d;
    CHECK(device_facts(d));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("%s: share of warp cycles (clock64, summed over warps)\n\n", p.name);
    for (int lg : {20, 24, 28}) {
        const int64_t n = int64_t(1) << lg;
        // auto: the shape Lookback::run picks for n
        using Small = LookbackWith<SmallTuning, float, Sum<float>, ClockProbe>;
        using Large = LookbackWith<Tuning, float, Sum<float>, ClockProbe>;
        if (ceil_div<int64_t>(n, Small::TILE) <= int64_t(d.sms) * SmallTuning::BLOCKS * SmallTuning::WARPS)
            profile<Small>("auto (small n)", in, out, n, d);
        else
            profile<Large>("auto (large n)", in, out, n, d);
        profile<LookbackWith<LookbackShape<2, 16, 2, 6, true, true, false>, float, Sum<float>, ClockProbe>>("2x16 s2 b6, no mid publish", in, out, n, d);
        profile<LookbackWith<Tuning, float, Sum<float>, ClockTilePass>>("2x16 s2 b6 NO LOOKBACK", in, out, n, d);
    }
    return 0;
}
