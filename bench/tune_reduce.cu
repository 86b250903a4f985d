// tune_reduce.cu - the evidence for SinglePassTuning (cuda/reduce/single_pass.cuh, step 9).
//
// Times the single-pass kernel, float32 sum, for several (block, unroll,
// blocks per SM) choices against cub::DeviceReduce in the same run: CUDA
// events around the launch only, L2 overwritten before every run, median
// of REPEAT runs.  Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_reduce.cu -o /tmp/tune && /tmp/tune
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include <cub/device/device_reduce.cuh>

#include "../cuda/reduce/single_pass.cuh"

using namespace gp;  // the variant's kernel and tunables live in gp::

constexpr int REPEAT = 40;

template <class T>
void run(const char *name, const float *d_in, int64_t n, float *d_out, void *scratch, unsigned *ctr,
         void *flush, size_t fb, float cub_ms) {
    using Impl = SinglePass<float, Sum<float>, T>;
    gp_reduce_args a{};
    a.in = d_in; a.out = d_out; a.n = n; a.in_t = GP_FLOAT32; a.acc_t = GP_FLOAT32; a.op = GP_SUM;
    a.scratch = scratch; a.scratch_bytes = Impl::scratch(n); a.stream = 0; a.counter = ctr;
    float ms = median_ms([&] { CHECK(Impl::run(a)); }, flush, fb, REPEAT);
    std::printf("| %-26s | %9lld | %8.4f | %6.0f | %5.3f |\n", name, (long long)n, ms,
                n * 4.0 / ms / 1e6, cub_ms / ms);
}

// `tune_reduce loads`: the three ways of issuing the 16-byte loads at
// every size from 2^20 to 2^28 float32 elements, and for int8 and float16
// sums (the narrow inputs), against a device-to-device copy of the same
// bytes (% roof: input bytes / time against the copy's bytes read and
// written / its time, as bench_dtypes' narrow table counts).
template <class In, class Op>
void loads_rows(const char *what, const void *d_in, int64_t n, void *d_out, void *scratch, unsigned *ctr,
                void *copy_to, void *flush, size_t fb, bool shapes = false) {
    const int64_t bytes = n * int64_t(sizeof(In));
    const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(copy_to, d_in, bytes, cudaMemcpyDeviceToDevice)); },
                                    flush, fb, REPEAT);
    const double roof = 2.0 * bytes / copy_ms / 1e6;
    std::printf("\n%s, n = %lld (%lld bytes): copy roof %.0f GB/s\n\n| load | n | ms | GB/s | %% roof |\n"
                "|---|---:|---:|---:|---:|\n", what, (long long)n, (long long)bytes, roof);
    const auto row = [&](const char *name, float ms) {
        std::printf("| %-10s | %9lld | %8.4f | %6.0f | %5.1f |\n", name, (long long)n, ms, bytes / ms / 1e6,
                    100.0 * bytes / ms / 1e6 / roof);
    };
    const auto time = [&](auto impl) {
        using Impl = decltype(impl);
        gp_reduce_args a{};
        a.in = d_in; a.out = d_out; a.n = n;
        a.scratch = scratch; a.scratch_bytes = Impl::scratch(n); a.stream = 0; a.counter = ctr;
        return median_ms([&] { CHECK(Impl::run(a)); }, flush, fb, REPEAT);
    };
    if (!shapes) {
        row("ldg", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_LDG>>{}));
        row("ldcs", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_STREAMING>>{}));
        row("L2::256B", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_PREFETCH_256B>>{}));
        row("ldg again", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_LDG>>{}));
        return;
    }
    // `tune_reduce shapes`: grid shapes <threads, loads a thread, blocks an
    // SM>, all with evict-first loads (the library's for these sizes).
    row("256,4,8", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_STREAMING>>{}));
    row("256,2,8", time(SinglePass<In, Op, Tuning<256, 2, 8, LOAD_STREAMING>>{}));
    row("256,8,8", time(SinglePass<In, Op, Tuning<256, 8, 8, LOAD_STREAMING>>{}));
    row("256,4,4", time(SinglePass<In, Op, Tuning<256, 4, 4, LOAD_STREAMING>>{}));
    row("256,8,4", time(SinglePass<In, Op, Tuning<256, 8, 4, LOAD_STREAMING>>{}));
    row("512,4,4", time(SinglePass<In, Op, Tuning<512, 4, 4, LOAD_STREAMING>>{}));
    row("512,2,4", time(SinglePass<In, Op, Tuning<512, 2, 4, LOAD_STREAMING>>{}));
    row("1024,2,2", time(SinglePass<In, Op, Tuning<1024, 2, 2, LOAD_STREAMING>>{}));
    row("128,4,16", time(SinglePass<In, Op, Tuning<128, 4, 16, LOAD_STREAMING>>{}));
    row("128,8,16", time(SinglePass<In, Op, Tuning<128, 8, 16, LOAD_STREAMING>>{}));
    row("256,4,8 again", time(SinglePass<In, Op, Tuning<256, 4, 8, LOAD_STREAMING>>{}));
}

int main(int argc, char **argv) {
    const bool loads = argc > 1 && std::strcmp(argv[1], "loads") == 0;
    const bool shapes = argc > 1 && std::strcmp(argv[1], "shapes") == 0;
    int dev = 0;
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, dev));
    const size_t fb = size_t(p.l2CacheSize) * 4;
    void *flush;
    CHECK(cudaMalloc(&flush, fb));
    const int64_t nmax = int64_t(1) << 28;
    std::vector<float> h(nmax);
    unsigned s = 12345;
    for (auto &v : h) { s = s * 1664525u + 1013904223u; v = (s >> 8) * (1.0f / 16777216.0f) - 0.5f; }
    float *d_in, *d_out;
    unsigned *ctr;
    void *scratch;
    CHECK(cudaMalloc(&d_in, nmax * 4));
    CHECK(cudaMalloc(&d_out, 64));
    CHECK(cudaMalloc(&ctr, 4));
    CHECK(cudaMemset(ctr, 0, 4));
    CHECK(cudaMalloc(&scratch, 1 << 24));
    CHECK(cudaMemcpy(d_in, h.data(), nmax * 4, cudaMemcpyHostToDevice));
    std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    void *copy_to = nullptr;  // the copy roof's destination (loads, shapes)
    if (loads || shapes) CHECK(cudaMalloc(&copy_to, nmax * 4));
    if (shapes) {
        for (int lg : {22, 24}) {
            loads_rows<signed char, Sum<long long>>("int8 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to,
                                                    flush, fb, true);
            loads_rows<Half, Sum<float>>("float16 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to, flush,
                                         fb, true);
            loads_rows<float, Sum<float>>("float32 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to, flush,
                                          fb, true);
        }
        return 0;
    }
    if (loads) {
        for (int lg = 20; lg <= 28; ++lg)
            loads_rows<float, Sum<float>>("float32 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to, flush,
                                          fb);
        for (int lg : {24, 26, 28}) {  // the same bytes read as int8 (summed into int64) and float16 (float32)
            loads_rows<signed char, Sum<long long>>("int8 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to,
                                                    flush, fb);
            loads_rows<Half, Sum<float>>("float16 sum", d_in, int64_t(1) << lg, d_out, scratch, ctr, copy_to,
                                         flush, fb);
        }
        return 0;
    }
    std::printf("\n| config (block, unroll, blocks/SM, load) | n | ms | GB/s | x vs CUB |\n|---|---:|---:|---:|---:|\n");
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 24, int64_t(1) << 28}) {
        size_t cub_bytes = 0;
        CHECK(cub::DeviceReduce::Sum(nullptr, cub_bytes, d_in, d_out, n));
        void *cub_tmp;
        CHECK(cudaMalloc(&cub_tmp, cub_bytes));
        float cub_ms = median_ms([&] { CHECK(cub::DeviceReduce::Sum(cub_tmp, cub_bytes, d_in, d_out, n)); }, flush, fb, REPEAT);
        std::printf("| %-26s | %9lld | %8.4f | %6.0f | %5.3f |\n", "cub::DeviceReduce::Sum", (long long)n, cub_ms,
                    n * 4.0 / cub_ms / 1e6, 1.0);
        run<SinglePassTuning>("current", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 4, 8>>("256, 4, 8", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 4, 8, LOAD_STREAMING>>("256, 4, 8, ldcs", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 4, 8, LOAD_PREFETCH_256B>>("256, 4, 8, L2::256B", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 2, 8>>("256, 2, 8", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 8, 8>>("256, 8, 8", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<512, 4, 4>>("512, 4, 4", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<512, 4, 4, LOAD_PREFETCH_256B>>("512, 4, 4, L2::256B", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<1024, 4, 2>>("1024, 4, 2", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<1024, 4, 2, LOAD_PREFETCH_256B>>("1024, 4, 2, L2::256B", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<1024, 2, 2, LOAD_PREFETCH_256B>>("1024, 2, 2, L2::256B", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        run<Tuning<256, 4, 4>>("256, 4, 4", d_in, n, d_out, scratch, ctr, flush, fb, cub_ms);
        CHECK(cudaFree(cub_tmp));
    }
    return 0;
}
