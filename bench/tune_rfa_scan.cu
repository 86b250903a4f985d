// tune_rfa_scan.cu - the evidence for the reproducible scan's kernel and
// shapes (cuda/scan/reproducible.cuh, decoupled_lookback_reproducible).
//
// Times, in one run, float32 and float64 inclusive sums at 2^20, 2^24 and
// 2^28 (`mid`: at 2^16 to 2^23, the kernels for those sizes only; `lib`:
// at 2^24 and 2^28, the library's scan and its rivals only, for comparing
// two builds of the headers, run one after the other; `big`: at 2^24, 2^26
// and 2^28, the library and chunks of 4 to 32 tiles): the
// reproducible scan as the library runs it (ScanRepFloat: the kernel that
// scans a chunk of tiles with each warp's running state, scan_rfa_warps,
// or for small inputs scan_rfa, a tile at a time), each of the two kernels
// alone in other shapes (BLOCKxITEMS, blocks an SM, tiles a chunk), the
// element-by-element form (scan_rfa_stepwise), and the rivals its speed is
// judged against: the plain look-back scan (decoupled_lookback's auto,
// run-to-run deterministic) and CUB's scan with CCCL's run_to_run
// determinism requirement.  CUDA events
// around the launches only, L2 overwritten before every run, median of
// REPEAT runs (tune_common.cuh).  Checks: every reproducible candidate gives
// the bits of the stepwise form (inclusive and exclusive), the same bits in
// two runs, and at 2^20 a few elements equal the host's rfa::sum of their
// prefix.  The data: random in [-1, 1) (never zeros), and a positive
// [0, 1) set whose large prefix sums take the fast path's wide rounding.
// On the GPU machine (the CCCL 3.5 headers of the nvidia-cuda-cccl wheel):
//   bash bench/gpu_run.sh tune-rfa-scan      (or tune-rfa-scan-mid, -big)
// which runs
//   CCCL=$(python3 -c "import site, glob; print(sorted(g for p in site.getsitepackages() + [site.getusersitepackages()] for g in glob.glob(p + '/nvidia/cu*/include/cccl'))[-1])")
//   nvcc -O3 -std=c++17 -arch=sm_90 -I"$CCCL" -Icuda bench/tune_rfa_scan.cu -o /tmp/tune_rfa_scan && /tmp/tune_rfa_scan [mid|lib|big]
// It prints the device's L2 set-aside for persisting accesses (pass A's
// evict-last loads are timed with whatever the machine has);
// PERSIST=<bytes>|max sets it for the run (cudaDeviceSetLimit), to time
// the kernels under another.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include <cub/device/device_scan.cuh>

#include "cub_env.cuh"
#ifndef GP_CUB_ENV
#error "CUB's run_to_run scan needs CCCL 3.5 or newer: -I the nvidia-cuda-cccl wheel's include/cccl (see the header)"
#endif
#include "scan/decoupled_lookback.cuh"
#include "scan/reproducible.cuh"

using namespace gp;
using scanrep::TileShape;
using scanrep::Unit;

constexpr int REPEAT = 20;
DeviceFacts facts;

template <class T>
struct Case {
    int64_t n;
    const T *in;
    T *out;
    void *flush;
    size_t fb;
    float auto_ms, cub_ms;
    const char *data;
    std::vector<T> ref_inc, ref_exc;  // the stepwise kernel's bits
};

template <class T>
void row(const char *name, const Case<T> &c, float ms, const char *check) {
    std::printf("| %-28s | %-7s | %-6s | 2^%-2d | %8.4f | %6.0f | %5.2f | %5.2f | %s |\n", name,
                sizeof(T) == 4 ? "float32" : "float64", c.data, int(std::lround(std::log2(double(c.n)))), ms,
                2.0 * sizeof(T) * c.n / ms / 1e6, c.auto_ms / ms, c.cub_ms / ms, check);
}

template <class T>
gp_scan_args args_of(const Case<T> &c, int inclusive) {
    gp_scan_args a{};
    a.in = c.in; a.out = c.out; a.n = c.n; a.inclusive = inclusive;
    a.op = GP_SUM; a.in_t = a.acc_t = sizeof(T) == 4 ? GP_FLOAT32 : GP_FLOAT64;
    return a;
}

template <class T>
std::vector<T> result(const Case<T> &c) {
    std::vector<T> r(c.n);
    CHECK(cudaMemcpy(r.data(), c.out, c.n * sizeof(T), cudaMemcpyDeviceToHost));
    return r;
}

// One reproducible candidate L (scratch(n), run(a)): timed inclusive; its
// inclusive and exclusive bits against the stepwise kernel's (REFERENCE:
// this is the stepwise kernel, whose bits become the reference).
template <class L, class T>
void candidate(const char *name, Case<T> &c, bool reference = false) {
    gp_scan_args a = args_of(c, 1);
    a.scratch_bytes = L::scratch(c.n);
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    const float ms = median_ms([&] { CHECK(L::run(a)); }, c.flush, c.fb, REPEAT);
    std::vector<T> r1 = result(c);
    CHECK(cudaMemset(c.out, 0xff, c.n * sizeof(T)));
    CHECK(L::run(a));
    const std::vector<T> r2 = result(c);
    gp_scan_args e = a;
    e.inclusive = 0;
    CHECK(L::run(e));
    std::vector<T> ex = result(c);
    CHECK(cudaFree(a.scratch));
    const size_t bytes = c.n * sizeof(T);
    const bool same_runs = std::memcmp(r1.data(), r2.data(), bytes) == 0;
    if (reference) {
        c.ref_inc = std::move(r1);
        c.ref_exc = std::move(ex);
    }
    const bool inc_ok = std::memcmp((reference ? c.ref_inc : r1).data(), c.ref_inc.data(), bytes) == 0;
    const bool exc_ok = std::memcmp((reference ? c.ref_exc : ex).data(), c.ref_exc.data(), bytes) == 0;
    char check[160];
    std::snprintf(check, sizeof check, "%s, %s", same_runs ? "same bits twice" : "BITS DIFFER BETWEEN RUNS",
                  reference ? "the reference bits"
                  : inc_ok && exc_ok ? "= stepwise (inclusive, exclusive)"
                                     : (inc_ok ? "EXCLUSIVE DIFFERS from stepwise" : "DIFFERS from stepwise"));
    row(name, c, ms, check);
}

template <class T>
struct CubRunToRun {
    static cudaError_t call(const gp_scan_args &a, void *tmp, size_t &bytes) {
        return cub_env::two_phase(::cuda::execution::determinism::run_to_run, tmp, bytes, a.stream,
                                  [&](auto env) -> cudaError_t {
                                      return cub::DeviceScan::InclusiveSum(static_cast<const T *>(a.in),
                                                                           static_cast<T *>(a.out), a.n, env);
                                  });
    }
};

// `mid` mode: the sizes below the library's largest chunks: chunks of 4 to
// 32 tiles of the library's chunk shape, beside the tile kernel; `big`: the
// same chunks at the large sizes.
bool mid = false, lib = false, big = false;
template <class T>
void mid_candidates(Case<T> &c) {
    using Sh = typename scanrep::WarpShapeOf<T>::type;
    candidate<scanrep::ScanRepWith<Sh, T, T, Unit::chunk, 4>>("chunks x4", c);
    candidate<scanrep::ScanRepWith<Sh, T, T, Unit::chunk, 8>>("chunks x8", c);
    candidate<scanrep::ScanRepWith<Sh, T, T, Unit::chunk, 16>>("chunks x16", c);
    candidate<scanrep::ScanRepWith<Sh, T, T, Unit::chunk, 32>>("chunks x32", c);
}

template <class T>
void sizes(const std::vector<T> &h, const std::vector<T> &hpos, T *din, T *dpos, T *out, void *flush, size_t fb) {
    using Auto = lookback::Lookback<T, gp::Sum<T>>;
    using Stepwise = scanrep::ScanRepStepwise<T, T>;
    using Production = scanrep::ScanRepFloat<T, T>;
    const std::vector<int> logs = mid ? std::vector<int>{16, 18, 20, 21, 22, 23}
                                  : lib ? std::vector<int>{24, 28}
                                  : big ? std::vector<int>{24, 26, 28}
                                        : std::vector<int>{20, 24, 28};
    for (int lg : logs) {
        for (int pos = 0; pos < 2; ++pos) {
            if (pos && (lg != 28 || lib || big)) continue;
            Case<T> c{};
            c.n = int64_t(1) << lg;
            c.in = pos ? dpos : din;
            c.out = out;
            c.flush = flush;
            c.fb = fb;
            c.data = pos ? "[0,1)" : "[-1,1)";
            {  // the rivals
                gp_scan_args a = args_of(c, 1);
                a.scratch_bytes = Auto::scratch(c.n);
                CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
                c.auto_ms = median_ms([&] { CHECK(Auto::run(a, facts)); }, flush, fb, REPEAT);
                CHECK(cudaFree(a.scratch));
                size_t tb = 0;
                CHECK(CubRunToRun<T>::call(a, nullptr, tb));
                void *tmp;
                CHECK(cudaMalloc(&tmp, tb));
                c.cub_ms = median_ms([&] { size_t b = tb; CHECK(CubRunToRun<T>::call(a, tmp, b)); }, flush, fb, REPEAT);
                CHECK(cudaFree(tmp));
                row("decoupled_lookback (auto)", c, c.auto_ms, "run_to_run");
                row("cub run_to_run", c, c.cub_ms, "run_to_run");
            }
            candidate<Stepwise>("scan_rfa_stepwise", c, true);
            if (lg == 20 && !pos) {  // the host's sums of a few prefixes
                int bad = 0;
                for (int64_t i : {int64_t(0), int64_t(1), int64_t(4095), int64_t(4096), int64_t(77777), c.n - 1}) {
                    const T s = rfa::sum(h.data(), i + 1);
                    bad += std::memcmp(&s, &c.ref_inc[i], sizeof(T)) != 0;
                }
                std::printf("| host rfa::sum of 6 prefixes | %s |\n", bad ? "DIFFER from the kernel" : "= the kernel");
            }
            candidate<Production>("library (ScanRepFloat)", c);
            if (lib) continue;
            if (big) {
                mid_candidates(c);
                continue;
            }
            candidate<scanrep::ScanRepWith<typename scanrep::ShapeOf<T>::type, T, T>>("scan_rfa (tile by tile)", c);
            if (mid) {
                mid_candidates(c);
                continue;
            }
            if constexpr (sizeof(T) == 4) {
                candidate<scanrep::ScanRepWith<TileShape<256, 8, 3>, T, T, Unit::chunk, 32>>("warps 256x8 3/SM x32", c);
                candidate<scanrep::ScanRepWith<TileShape<256, 8, 3>, T, T, Unit::chunk, 16>>("warps 256x8 3/SM x16", c);
                candidate<scanrep::ScanRepWith<TileShape<256, 8, 4>, T, T, Unit::chunk, 32>>("warps 256x8 4/SM x32", c);
            } else {
                candidate<scanrep::ScanRepWith<TileShape<256, 4, 3>, T, T, Unit::chunk, 32>>("warps 256x4 3/SM x32", c);
                candidate<scanrep::ScanRepWith<TileShape<256, 4, 3>, T, T, Unit::chunk, 64>>("warps 256x4 3/SM x64", c);
                candidate<scanrep::ScanRepWith<TileShape<256, 4, 4>, T, T, Unit::chunk, 32>>("warps 256x4 4/SM x32", c);
                candidate<scanrep::ScanRepWith<TileShape<256, 4, 4>, T, T, Unit::chunk, 16>>("warps 256x4 4/SM x16", c);
            }
        }
    }
    (void)hpos;
}

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    mid = argc > 1 && std::strcmp(argv[1], "mid") == 0;
    lib = argc > 1 && std::strcmp(argv[1], "lib") == 0;
    big = argc > 1 && std::strcmp(argv[1], "big") == 0;
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    CHECK(device_facts(facts));
    size_t set_aside = 0;
    CHECK(cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize));
    if (const char *v = std::getenv("PERSIST")) {
        const size_t want = std::strcmp(v, "max") == 0 ? size_t(p.persistingL2CacheMaxSize) : size_t(std::atoll(v));
        CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
        CHECK(cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize));
    }
    std::printf("L2 %d bytes, set aside for persisting accesses %zu (at most %d)\n", p.l2CacheSize, set_aside,
                p.persistingL2CacheMaxSize);
    size_t fb = 0;
    void *flush = l2_flush_buffer(p, fb);
    const int64_t N = int64_t(1) << 28;
    std::printf("%s, %d SMs; x vs auto / x vs CUB: their time over this row's (above 1: faster)\n\n"
                "| kernel | dtype | data | n | ms | GB/s | x vs auto | x vs CUB r2r | check |\n"
                "|---|---|---|---|---:|---:|---:|---:|---|\n",
                p.name, p.multiProcessorCount);
    {
        float *in, *out, *pos;
        const std::vector<float> h = random_floats(N, &in, &out);
        std::vector<float> hp(h);
        for (auto &v : hp) v = std::fabs(v);
        CHECK(cudaMalloc(&pos, N * 4));
        CHECK(cudaMemcpy(pos, hp.data(), N * 4, cudaMemcpyHostToDevice));
        sizes<float>(h, hp, in, pos, out, flush, fb);
        CHECK(cudaFree(in)); CHECK(cudaFree(out)); CHECK(cudaFree(pos));
    }
    {
        float *f_in, *f_out;
        const std::vector<float> hf = random_floats(N, &f_in, &f_out);
        CHECK(cudaFree(f_in)); CHECK(cudaFree(f_out));
        std::vector<double> h(hf.begin(), hf.end()), hp(h);
        for (auto &v : hp) v = std::fabs(v);
        double *in, *out, *pos;
        CHECK(cudaMalloc(&in, N * 8)); CHECK(cudaMalloc(&out, N * 8)); CHECK(cudaMalloc(&pos, N * 8));
        CHECK(cudaMemcpy(in, h.data(), N * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(pos, hp.data(), N * 8, cudaMemcpyHostToDevice));
        sizes<double>(h, hp, in, pos, out, flush, fb);
    }
    return 0;
}
