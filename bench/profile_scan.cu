// profile_scan.cu - where the look-back scan's warps spend their cycles
// (clock64 around each part of the loop, summed over warps): the evidence
// for what to change next.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/profile_scan.cu -o /tmp/p && /tmp/p
#define GP_SCAN_PROFILE
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/scan/05_decoupled_lookback.cu"

using namespace gp;

template <class L>
void profile(const char *name, const float *in, float *out, int64_t n, const DeviceFacts &d) {
    gp_scan_args a{};
    a.in = in; a.out = out; a.n = n; a.inclusive = 1;
    a.scratch_bytes = L::scratch(n);
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    CHECK(L::run(a, d));  // warm-up
    CHECK(cudaDeviceSynchronize());
    unsigned long long zero[8] = {}, got[8];
    CHECK(cudaMemcpyToSymbol(gp_prof, zero, sizeof zero));
    CHECK(L::run(a, d));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpyFromSymbol(got, gp_prof, sizeof got));
    CHECK(cudaFree(a.scratch));
    const char *part[7] = {"start", "land", "publish", "scan", "take", "lookback", "write"};
    double all = 0;
    for (int k = 0; k < 7; ++k) all += double(got[k]);
    std::printf("| %-22s | 2^%.0f | %8llu |", name, std::log2(double(n)), got[7]);
    for (int k = 0; k < 7; ++k) std::printf(" %s %4.1f%% |", part[k], 100.0 * got[k] / all);
    std::printf(" %.0f cycles/iteration a warp |\n", all / double(got[7]));
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
        profile<Lookback<float, Sum<float>>>("auto", in, out, n, d);
        profile<LookbackWith<LookbackShape<2, 16, 2, 6, true, true, false, false>, float, Sum<float>>>("2x16 s2 b6, no mid publish", in, out, n, d);
        profile<LookbackWith<LookbackShape<2, 16, 2, 6, true, true, true>, float, Sum<float>>>("2x16 s2 b6 NO LOOKBACK", in, out, n, d);
    }
    return 0;
}
