// tune_axis.cu - the evidence for DenseTuning and the adaptive choice of
// axis reductions (cuda/reduce/segmented.cuh, step 17).
//
// For each shape and axis of the issue's table (float32 sums of 2^26
// elements of a C array, and 16384^2), times in one run the mapping step 17
// chose before the one-pass kernels (the "old" rows: a thread per row,
// groups of 16-byte lanes, the split with its combine, the column tiles or
// 16-byte columns) against the one-pass kernels with several tunings, and
// what the library's adaptive step runs now ("auto"), after a reference
// row: step 9's single pass over the same 2^26 floats as one vector (the
// rate an axis case can aim at; reduce_rows_split and reduce_columns_flat
// read their rows or columns with its loop); then segmented sums
// over 2^26 elements of random lengths (means 4, 64, 1024, 65536) through
// the adaptive step.  CUDA events around the launches only, L2 overwritten
// before every run, median of REPEAT runs; % roof = bytes read / time
// against a device-to-device copy's read + write rate measured here; every
// result checked against a float64 host sum within the tests' bound.
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_axis.cu -o /tmp/tune_axis && /tmp/tune_axis
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/reduce/17_segmented_adaptive.cu"
#include "../cuda/reduce/single_pass.cuh"

using namespace gp;
using namespace gp::reduce::seg;
using In = float;
using Op = Sum<float>;

constexpr int REPEAT = 20;

struct Bench {
    float *in;
    float *out;
    void *scratch;
    unsigned *counter;
    void *flush;
    size_t fb;
    double roof_gbps;
    std::vector<float> host;
};

// A C array (rows, cols) reduced over axis (1: rows, 0: columns), or
// segments (offsets on the device).
gp_reduce_args args_of(Bench &b, int64_t rows, int64_t cols, int axis, const int64_t *offsets,
                       int64_t segs) {
    gp_reduce_args a{};
    a.in = b.in, a.out = b.out, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM;
    a.stream = 0, a.counter = b.counter;
    if (offsets != nullptr) {
        a.n = rows * cols;
        a.batch = gp_batch{segs, 1, 0, 1, 0, offsets};
    } else if (axis == 1) {
        a.n = cols;
        a.batch = gp_batch{rows, 1, cols, 1, 0, nullptr};
    } else {
        a.n = rows;
        a.batch = gp_batch{1, cols, 0, cols, 1, nullptr};
    }
    return a;
}

// Times launch(a) (a.scratch set), checks out[0 .. count) against want.
template <class F>
void row(Bench &b, const char *name, gp_reduce_args a, int64_t count, const std::vector<double> &want,
         const std::vector<double> &bound, F launch) {
    a.scratch = b.scratch;
    CHECK(cudaMemset(b.out, 0xff, count * 4));
    CHECK(launch(a));
    CHECK(cudaDeviceSynchronize());
    std::vector<float> got(count);
    CHECK(cudaMemcpy(got.data(), b.out, count * 4, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (int64_t p = 0; p < count; ++p)
        if (!(std::fabs(double(got[p]) - want[p]) <= bound[p])) ++bad;
    const float ms = median_ms([&] { CHECK(launch(a)); }, b.flush, b.fb, REPEAT);
    const double bytes = double(a.batch.offsets ? a.n : a.n * a.batch.outer * a.batch.inner) * 4;
    const double gbps = bytes / ms / 1e6;
    std::printf("| %-44s | %9.4f | %6.0f | %6.1f | %s |\n", name, ms, gbps, 100 * gbps / b.roof_gbps,
                bad ? "WRONG" : "ok");
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    Bench b{};
    b.flush = l2_flush_buffer(prop, b.fb);
    const int64_t n = int64_t(1) << 28;  // room for 16384^2
    float *dummy;
    b.host = random_floats(n, &b.in, &dummy);
    CHECK(cudaFree(dummy));
    CHECK(cudaMalloc(&b.out, (int64_t(1) << 26) * 4));
    CHECK(cudaMalloc(&b.scratch, size_t(64) << 20));
    CHECK(cudaMalloc(&b.counter, 4));
    CHECK(cudaMemset(b.counter, 0, 4));
    {  // the copy roof: read + write of 256 MiB
        float *dst;
        const size_t bytes = size_t(1) << 28;
        CHECK(cudaMalloc(&dst, bytes));
        const float ms = median_ms([&] { CHECK(cudaMemcpyAsync(dst, b.in, bytes, cudaMemcpyDeviceToDevice)); },
                                   b.flush, b.fb, REPEAT);
        b.roof_gbps = 2.0 * bytes / ms / 1e6;
        CHECK(cudaFree(dst));
    }
    std::printf("%s, %d SMs; copy roof %.0f GB/s (read + write)\n", prop.name, prop.multiProcessorCount,
                b.roof_gbps);
    const double eps = std::ldexp(1.0, -23);
    {  // the reference: step 9 on the 2^26 floats whole
        const int64_t m = int64_t(1) << 26;
        double want = 0, mag = 0;
        for (int64_t k = 0; k < m; ++k) want += b.host[k], mag += std::fabs(b.host[k]);
        const std::vector<double> w{want}, bound{4 * 27 * eps * mag + eps * std::fabs(want)};
        gp_reduce_args a{};
        a.in = b.in, a.out = b.out, a.in_t = GP_FLOAT32, a.acc_t = GP_FLOAT32, a.op = GP_SUM;
        a.n = m, a.counter = b.counter;
        a.batch = gp_batch{1, 1, 0, 1, 0, nullptr};  // for row()'s byte count only
        std::printf("\n### reference: 2^26 floats as one vector\n\n| mapping | ms | GB/s | %% roof | check |\n|---|---:|---:|---:|---|\n");
        row(b, "single_pass (step 9, SinglePassTuning)", a, 1, w, bound,
            [](gp_reduce_args x) { return gp::SinglePass<In, Op>::run(x); });
    }
    struct Shape { int64_t rows, cols; };
    const Shape shapes[] = {{1 << 24, 4}, {1 << 20, 64}, {1 << 14, 1 << 14}, {64, 1 << 20}, {4, 1 << 24}};
    for (const Shape s : shapes) {
        for (int axis : {1, 0}) {
            const int64_t count = axis == 1 ? s.rows : s.cols, len = axis == 1 ? s.cols : s.rows;
            std::vector<double> want(count, 0.0), mag(count, 0.0), bound(count);
            for (int64_t r = 0; r < s.rows; ++r)
                for (int64_t c = 0; c < s.cols; ++c) {
                    const double v = b.host[r * s.cols + c];
                    want[axis == 1 ? r : c] += v, mag[axis == 1 ? r : c] += std::fabs(v);
                }
            const double depth = std::ceil(std::log2(double(len))) + 1;
            for (int64_t p = 0; p < count; ++p) bound[p] = 4 * depth * eps * mag[p] + eps * std::fabs(want[p]);
            std::printf("\n### (%lld, %lld) axis=%d\n\n| mapping | ms | GB/s | %% roof | check |\n|---|---:|---:|---:|---|\n",
                        (long long)s.rows, (long long)s.cols, axis == 1 ? -1 : 0);
            gp_reduce_args a = args_of(b, s.rows, s.cols, axis, nullptr, 0);
            const Problems P = problems_of(a);
            row(b, "auto (gp_reduce_segmented_adaptive)", a, count, want, bound,
                [](gp_reduce_args x) { return gp_reduce_segmented_adaptive(&x); });
            if (axis == 1) {
                if (P.len <= Seg::THREAD_MAX)
                    row(b, "old: a thread per row (reduce_groups<1>)", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_groups<In, Op, 1, 1>(x, P, 1); });
                if (P.len >= Seg::VEC_MIN_ROW && P.len <= 128)
                    row(b, "old: 16-byte lanes (reduce_groups_vec)", a, count, want, bound, [&](gp_reduce_args x) {
                        return launch_groups<In, Op, 1, WARP, true>(x, P, vec_lanes<In>(P.len, 1, WARP));
                    });
                if (P.len > Seg::WARP_MAX) {
                    const int64_t chunks = split_chunks(P.count, P.len, Seg::MIN_CHUNK);
                    row(b, "old: blocks, split + combine", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_blocks<In, Op>(x, P, chunks); });
                }
                if (rows_dense_lanes<In>(a, P)) {
                    const int64_t w = rows_dense_lanes<In>(a, P);
                    row(b, "rows_dense U=1", a, count, want, bound, [&](gp_reduce_args x) {
                        return w == 1 ? launch_rows_dense_w<In, Op, 1, 1>(x, P) : launch_rows_dense_w<In, Op, 16, 1>(x, P);
                    });
                    row(b, "rows_dense U=2", a, count, want, bound, [&](gp_reduce_args x) {
                        return w == 1 ? launch_rows_dense_w<In, Op, 1, 2>(x, P) : launch_rows_dense_w<In, Op, 16, 2>(x, P);
                    });
                    row(b, "rows_dense U=4", a, count, want, bound, [&](gp_reduce_args x) {
                        return w == 1 ? launch_rows_dense_w<In, Op, 1, 4>(x, P) : launch_rows_dense_w<In, Op, 16, 4>(x, P);
                    });
                    row(b, "rows_dense U=8", a, count, want, bound, [&](gp_reduce_args x) {
                        return w == 1 ? launch_rows_dense_w<In, Op, 1, 8>(x, P) : launch_rows_dense_w<In, Op, 16, 8>(x, P);
                    });
                }
                if (rows_long_ok<In>(a, P)) {
                    row(b, "rows_split 256 x 8/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_split<In, Op, 256, 4>(x, P); });
                    row(b, "rows_split 256 x 8/SM, U=8", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_split<In, Op, 256, 8>(x, P); });
                    row(b, "rows_split 512 x 4/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_split<In, Op, 512, 4>(x, P); });
                    row(b, "rows_long 256 x 8/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_long<In, Op, 256, 4>(x, P); });
                    row(b, "rows_long 256 x 8/SM, U=8", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_long<In, Op, 256, 8>(x, P); });
                    row(b, "rows_long 512 x 4/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_long<In, Op, 512, 4>(x, P); });
                    row(b, "rows_long 1024 x 2/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_rows_long<In, Op, 1024, 4>(x, P); });
                }
            } else {
                row(b, "old: column tiles (+ combine)", a, count, want, bound,
                    [&](gp_reduce_args x) { return launch_columns<In, Op>(x, P, column_shape(P)); });
                if (columns_vec_ok<In>(a, P) && P.len <= Seg::COLUMN_THREAD_MAX)
                    row(b, "old: 16-byte columns (reduce_columns_vec)", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_vec<In, Op>(x, P); });
                if (columns_flat_ok<In, Op, 1024, 8, 2>(a, P) || columns_flat_ok<In, Op>(a, P)) {
                    row(b, "columns_flat 1024 x 1/SM, U=8", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_flat<In, Op, 1024, 8, 1>(x, P); });
                    row(b, "columns_flat 1024 x 1/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_flat<In, Op, 1024, 4, 1>(x, P); });
                    row(b, "columns_flat 1024 x 2/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_flat<In, Op, 1024, 4, 2>(x, P); });
                    row(b, "columns_flat 512 x 2/SM, U=8", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_flat<In, Op, 512, 8, 2>(x, P); });
                    row(b, "columns_flat 256 x 8/SM, U=4", a, count, want, bound,
                        [&](gp_reduce_args x) { return launch_columns_flat<In, Op, 256, 4, 8>(x, P); });
                }
            }
        }
    }
    // Segments: random lengths in [0, 2 mean], 2^26 elements at most.
    int64_t *d_off;
    CHECK(cudaMalloc(&d_off, ((int64_t(1) << 26) + 1) * 8));
    for (int64_t mean : {int64_t(4), int64_t(64), int64_t(1024), int64_t(65536)}) {
        const std::vector<int64_t> off = random_offsets(int64_t(1) << 26, mean);
        const int64_t segs = int64_t(off.size()) - 1, used = off.back();
        CHECK(cudaMemcpy(d_off, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
        std::vector<double> want(segs, 0.0), bound(segs);
        for (int64_t p = 0; p < segs; ++p) {
            double m = 0;
            for (int64_t k = off[p]; k < off[p + 1]; ++k) want[p] += b.host[k], m += std::fabs(b.host[k]);
            const double len = double(off[p + 1] - off[p]);
            bound[p] = 4 * (std::ceil(std::log2(len > 1 ? len : 1)) + 1) * eps * m + eps * std::fabs(want[p]);
        }
        std::printf("\n### segments of mean length %lld: %lld segments\n\n| mapping | ms | GB/s | %% roof | check |\n|---|---:|---:|---:|---|\n",
                    (long long)mean, (long long)segs);
        gp_reduce_args a = args_of(b, 1, used, 1, d_off, segs);
        row(b, "auto (gp_reduce_segmented_adaptive)", a, segs, want, bound,
            [](gp_reduce_args x) { return gp_reduce_segmented_adaptive(&x); });
        // The group widths the adaptive step chooses among (no deferral:
        // no segment here is longer than twice the mean).
        const Problems P = problems_of(a);
        if (mean <= 4096) {
            char name[64];
            for (int w : {1, 2, 4, 8, 16, 32}) {
                std::snprintf(name, sizeof name, "groups_vec W=%d", w);
                row(b, name, a, segs, want, bound,
                    [&](gp_reduce_args x) { return launch_groups<In, Op, 1, WARP, true>(x, P, w); });
                std::snprintf(name, sizeof name, "groups (scalar) W=%d", w);
                row(b, name, a, segs, want, bound,
                    [&](gp_reduce_args x) { return launch_groups<In, Op, 1, WARP>(x, P, w); });
            }
        }
    }
    return 0;
}
