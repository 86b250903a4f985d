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
// copy of 256 MiB measured here.  `tune_colscan quad`: the (2^24, 4) case
// alone, the library's kernels against this program's "quad" kernel (the
// 1-D look-back scan, decoupled_lookback.cuh, whose elements are the
// 16-byte rows, combined column by column; below) and against the 1-D
// float32 scan of the same bytes, the speed to approach.  Every candidate
// is checked against a float64 scan on the host within the tests' bound
// (python/gpuprims/_numerics.py, scan_tolerance; "err" is the largest
// error in units of eps * the prefix of |x|) and for the same bits in two
// runs.  On the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_colscan.cu -o /tmp/tune_colscan && /tmp/tune_colscan
#include <cmath>
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/scan/11_batched_columns.cu"
#include "../cuda/scan/decoupled_lookback.cuh"

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

// ------------------------------------------------ quad: rows as elements
// A cumsum along axis 0 of a C-contiguous (R, 4) float32 array is one
// scan of R elements, the rows, under the operator that adds them column
// by column.  So the 1-D look-back kernel's machinery serves: a warp's ring
// of tiles (a lane's 16-byte vector of round v is row v*32 + lane), tile
// totals published as they land, the fixed tree of totals for each tile's
// prefix - with 16-byte totals (Quad, in fence-free QuadSlots).  What is
// new is the tile's scan: each round's rows are scanned across the warp
// column by column (4 shuffles a step) and the tile's running value is
// folded into them at once, so a lane keeps one row of the tile per round
// (VPT x 4 registers, as the float32 scan) and no per-round base; the
// prefix is added when the tile is written.  Inclusive sums of aligned
// rows: what this program times.
namespace quad {
struct alignas(16) Quad {
    float v[4];
};
// The operator: Op on each column.
struct QuadOp {
    using type = Quad;
    __host__ __device__ static constexpr Quad identity() {
        return Quad{{Op::identity(), Op::identity(), Op::identity(), Op::identity()}};
    }
    __device__ Quad operator()(Quad a, Quad b) const {
        const Op op;
        return Quad{{op(a.v[0], b.v[0]), op(a.v[1], b.v[1]), op(a.v[2], b.v[2]), op(a.v[3], b.v[3])}};
    }
};
// The warp shuffles of a Quad (found by argument-dependent lookup from the
// look-back's collectives), each column moved alone.
__device__ __forceinline__ Quad __shfl_sync(unsigned mask, Quad x, int src, int width = 32) {
    return Quad{{::__shfl_sync(mask, x.v[0], src, width), ::__shfl_sync(mask, x.v[1], src, width),
                 ::__shfl_sync(mask, x.v[2], src, width), ::__shfl_sync(mask, x.v[3], src, width)}};
}
__device__ __forceinline__ Quad __shfl_up_sync(unsigned mask, Quad x, unsigned d, int width = 32) {
    return Quad{{::__shfl_up_sync(mask, x.v[0], d, width), ::__shfl_up_sync(mask, x.v[1], d, width),
                 ::__shfl_up_sync(mask, x.v[2], d, width), ::__shfl_up_sync(mask, x.v[3], d, width)}};
}
__device__ __forceinline__ Quad __shfl_down_sync(unsigned mask, Quad x, unsigned d, int width = 32) {
    return Quad{{::__shfl_down_sync(mask, x.v[0], d, width), ::__shfl_down_sync(mask, x.v[1], d, width),
                 ::__shfl_down_sync(mask, x.v[2], d, width), ::__shfl_down_sync(mask, x.v[3], d, width)}};
}

// 16-byte totals without a fence: a slot is four 64-bit words, each a
// "ready" flag beside a quarter of the value, written by two 16-byte stores
// and read by two 16-byte loads; a reader that sees the four flags has the
// four quarters, whatever order the words arrive in (lookback.cuh's
// PairedSlots, twice as wide).
struct QuadSlots {
    unsigned long long *word;  // four a slot
    static size_t bytes(int64_t count) { return size_t(count) * 32; }
    static size_t zeroed_bytes(int64_t count) { return bytes(count); }
    explicit QuadSlots(char *p, int64_t) : word(reinterpret_cast<unsigned long long *>(p)) {}
    __device__ QuadSlots shifted(int64_t by) const {
        QuadSlots s = *this;
        s.word += 4 * by;
        return s;
    }
    __device__ void publish(int64_t i, Quad v) const {
        unsigned long long q[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) q[k] = (1ull << 32) | __float_as_uint(v.v[k]);
        unsigned long long *w = word + 4 * i;
        asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(w), "l"(q[0]), "l"(q[1]) : "memory");
        asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(w + 2), "l"(q[2]), "l"(q[3]) : "memory");
    }
    __device__ bool try_get(int64_t i, Quad &v) const {
        const unsigned long long *w = word + 4 * i;
        unsigned long long q[4];
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(q[0]), "=l"(q[1]) : "l"(w) : "memory");
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(q[2]), "=l"(q[3]) : "l"(w + 2) : "memory");
#pragma unroll
        for (int k = 0; k < 4; ++k) v.v[k] = __uint_as_float(unsigned(q[k]));
        return ((q[0] & q[1] & q[2] & q[3]) >> 32) != 0;
    }
};

// WAIT = false: the look-back skipped (the prefix taken as the identity,
// the totals still published) - a wrong result, timed to see what the
// look-back's waits cost.
template <class Shape, bool WAIT = true>
__global__ void __launch_bounds__(Shape::WARPS *WARP, Shape::BLOCKS)
quad_scan(const Quad *in, Quad *out, int64_t rows, unsigned *next_tile, QuadSlots slots, lookback::Levels lv,
          unsigned tiles) {
    using W = lookback::WarpRing<Shape, Quad, true>;
    constexpr int VPT = Shape::VPT;
    const QuadOp op;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    __shared__ unsigned long long barriers[Shape::BARRIERS];
    unsigned t[W::STAGES];
    W ring(in, rows, true, next_tile, tiles, lane, warp, barriers, t);
    ring.start(warp);
    const lookback::Rows one{tiles, 0};
    while (t[0] < tiles) {
        const int64_t tile = t[0];
        ring.wait_oldest();
        ring.publish_landed(slots, lv, one, op);
        // x[v]: row v*32 + lane of the tile, then its inclusive scan within
        // the tile (what the rows before it in the tile add, folded in).
        Quad x[VPT];
        const unsigned char *stage = ring.mine + ring.s0 * W::SB;
        Quad carry = QuadOp::identity();
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const int64_t r = W::R::first(tile, v, lane);
            if (r < rows) memcpy(&x[v], stage + v * WARP * 16, 16);
            else x[v] = QuadOp::identity();
            Quad inc = scan::warp_inclusive_scan(x[v], op);
            const Quad round_total = __shfl_sync(FULL_MASK, inc, WARP - 1);
            x[v] = v == 0 ? inc : op(carry, inc);
            carry = v == 0 ? round_total : op(carry, round_total);
        }
        ring.publish_landed(slots, lv, one, op);
        const int s = ring.retire_oldest();
        ring.refill(s);
        const bool pending = ring.pending();
        const Quad p = WAIT ? lookback::look_back(tile, slots, lv, op, lane, [&]() {
            if (pending) ring.publish_landed(slots, lv, one, op);
        }) : QuadOp::identity();
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            const Quad r = tile > 0 ? op(p, x[v]) : x[v];
            const int64_t row = W::R::first(tile, v, lane);
            if (row < rows) __stcs(reinterpret_cast<uint4 *>(out + row), *reinterpret_cast<const uint4 *>(&r));
        }
    }
}

// The scratch: the tile counter (256 bytes), then the slots.
template <class Shape, bool WAIT = true>
struct QuadScan {
    static constexpr int64_t TILE = int64_t(Shape::VPT) * WARP;  // rows
    static size_t scratch(const gp_scan_args &a) {
        int64_t count;
        lookback::Levels::of(ceil_div<int64_t>(a.n, TILE), count);
        return 256 + QuadSlots::bytes(count);
    }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        const int64_t tiles = ceil_div<int64_t>(a.n, TILE);
        int64_t count;
        const lookback::Levels lv = lookback::Levels::of(tiles, count);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(lookback::launch_zero_words(p, int64_t(256 + QuadSlots::zeroed_bytes(count)) / 8, a.stream));
        const auto kernel = quad_scan<Shape, WAIT>;
        GP_TRY(opt_in_shared(kernel, Shape::SMEM, Shape::BARRIERS * 8));
        const int64_t blocks = lookback::persistent_blocks<Shape>(tiles, d);
        kernel<<<unsigned(blocks), Shape::WARPS * WARP, Shape::SMEM, a.stream>>>(
            static_cast<const Quad *>(a.in), static_cast<Quad *>(a.out), a.n, reinterpret_cast<unsigned *>(p),
            QuadSlots(p + 256, count), lv, unsigned(tiles));
        return cudaGetLastError();
    }
};
}  // namespace quad

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

// The rows scan without its look-back (a wrong result, the time only).
struct NoLookBack : lookback::NoProbe {
    static constexpr bool LOOK_BACK = false;
};

template <class Shape, class Probe = lookback::NoProbe>
void rows_row(Bench &b, const char *name, int64_t n) {
    using T = RowScan<Shape, In, Op, Probe>;
    row(b, name, 1, n, 4, [](const gp_scan_args &a) { return T::run(a); },
        [](const gp_scan_args &a) { return T::scratch(a); });
}

template <class Shape, bool WAIT = true>
void quad_row(Bench &b, const char *name, int64_t n) {
    row(b, name, 1, n, 4, [](const gp_scan_args &a) { return quad::QuadScan<Shape, WAIT>::run(a); },
        [](const gp_scan_args &a) { return quad::QuadScan<Shape, WAIT>::scratch(a); });
}

// The 1-D float32 scan of the same bytes (its result is not the case's:
// the check says WRONG; the time is the point).
void one_d_row(Bench &b, int64_t n, int64_t inner) {
    using L = lookback::LookbackWith<lookback::Tuning, float, Op>;
    row(b, "1-D float32 scan, same bytes (time only)", 1, n, inner,
        [](const gp_scan_args &a) {
            gp_scan_args x = a;
            x.n = a.n * a.batch.inner, x.batch = gp_batch{};
            DeviceFacts d;
            GP_TRY(device_facts(d));
            return L::run(x, d);
        },
        [](const gp_scan_args &a) { return L::scratch(a.n * a.batch.inner); });
}

int main(int argc, char **argv) {
    const bool quad_only = argc > 1 && std::strcmp(argv[1], "quad") == 0;
    // `tune_colscan waits`: every case, the library's tiles with and without
    // their look-back (ColumnTileShape's WAIT), to time its waits.
    const bool waits = argc > 1 && std::strcmp(argv[1], "waits") == 0;
    // `tune_colscan rows`: the (2^24, 4) case alone, the rows scan
    // (rows_lookback.cuh) in several shapes <warps, rows a lane, stages,
    // blocks an SM, bulk copies, evict-first stores>.
    const bool rows_only = argc > 1 && std::strcmp(argv[1], "rows") == 0;
    // `tune_colscan across`: rows of 64 floats ((2^20, 64) along axis 0 and
    // (64, 4096, 64) along axis 1), tiles as wide as the row (16 vectors
    // across) against the library's 8.
    const bool across = argc > 1 && std::strcmp(argv[1], "across") == 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    Bench b{};
    b.flush = l2_flush_buffer(prop, b.fb);
    const int64_t total = int64_t(1) << (quad_only || rows_only ? 26 : 28);  // the largest shape's elements (16384^2; the others have 2^26)
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
        // short axes of many columns: where a thread a column (step 10) and
        // the tiles cross
        {1, 8, int64_t(1) << 23, "(8, 2^23) axis 0"},         {1, 16, int64_t(1) << 22, "(16, 2^22) axis 0"},
        {1, 32, int64_t(1) << 21, "(32, 2^21) axis 0"},       {1, 128, int64_t(1) << 19, "(128, 2^19) axis 0"},
        {1, 512, int64_t(1) << 17, "(512, 2^17) axis 0"},
    };
    for (const Case &c : cases) {
        if ((quad_only || rows_only) && c.inner != 4) continue;
        if (across && c.inner != 64) continue;
        std::printf("\n### %s\n\n| kernel | ms | GB/s | %% roof | check |\n|---|---:|---:|---:|---|\n", c.what);
        row(b, "strided (any layout)", c.outer, c.n, c.inner, [](const gp_scan_args &a) { return Strided<In, Op>::run(a); },
            [](const gp_scan_args &a) { return Strided<In, Op>::scratch(a); });
        if (c.outer * c.inner >= (int64_t(1) << 16))  // with fewer problems a run takes seconds
            row(b, "a thread a problem (batched_thread)", c.outer, c.n, c.inner,
                [](const gp_scan_args &a) { return thread_step::gp::gp_scan_batched_thread(const_cast<gp_scan_args *>(&a)); },
                [](const gp_scan_args &) { return size_t(0); });
        tiles<ColumnTiling>(b, "tiles: library (ColumnTiling)", c.outer, c.n, c.inner);
        if (waits) {  // the library's shape without its look-back (a wrong result, the time only)
            using T = ColumnTiling;
            tiles<ColumnTileShape<T::THREADS, T::RPT, T::VC_MAX, T::BLOCKS, T::ASYNC, false>>(
                b, "tiles: library, no look-back (time only)", c.outer, c.n, c.inner);
            continue;
        }
        if (rows_only) {
            using lookback::LookbackShape;
            rows_row<RowTiling>(b, "rows: library (RowTiling)", c.n);
            // <warps, rows a lane, stages, blocks an SM, bulk, evict-first, mid-publish, HOLD>
            rows_row<LookbackShape<2, 17, 3, 4, true, true, true, true>>(b, "rows 2x17 s3 b4", c.n);
            rows_row<LookbackShape<2, 15, 2, 6, true, true, true, true>>(b, "rows 2x15 s2 b6", c.n);
            rows_row<RowTiling, NoLookBack>(b, "rows: library, no look-back (time only)", c.n);
            one_d_row(b, c.n, c.inner);
            continue;
        }
        if (across) {
            tiles<ColumnTileShape<256, 8, 16, 4>>(b, "tiles <256, 8, 16, 4, async>", c.outer, c.n, c.inner);
            tiles<ColumnTileShape<256, 8, 16, 3>>(b, "tiles <256, 8, 16, 3, async>", c.outer, c.n, c.inner);
            tiles<ColumnTileShape<128, 16, 16, 4>>(b, "tiles <128, 16, 16, 4, async>", c.outer, c.n, c.inner);
            tiles<ColumnTileShape<256, 4, 16, 6>>(b, "tiles <256, 4, 16, 6, async>", c.outer, c.n, c.inner);
            tiles<ColumnTileShape<128, 8, 16, 8>>(b, "tiles <128, 8, 16, 8, async>", c.outer, c.n, c.inner);
            continue;
        }
        if (quad_only) {
            using lookback::LookbackShape;
            quad_row<LookbackShape<2, 16, 2, 6>>(b, "quad 2x16 s2 b6", c.n);
            quad_row<LookbackShape<2, 12, 2, 6>>(b, "quad 2x12 s2 b6", c.n);
            quad_row<LookbackShape<2, 16, 2, 5>>(b, "quad 2x16 s2 b5", c.n);
            quad_row<LookbackShape<2, 16, 3, 4>>(b, "quad 2x16 s3 b4", c.n);
            quad_row<LookbackShape<2, 16, 2, 6>, false>(b, "quad 2x16 s2 b6, no look-back (time only)", c.n);
            quad_row<LookbackShape<2, 16, 3, 4>, false>(b, "quad 2x16 s3 b4, no look-back (time only)", c.n);
            one_d_row(b, c.n, c.inner);
            continue;
        }
        tiles<ColumnTileShape<256, 8, 8, 2>>(b, "tiles <256, 8, 8, 2, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 3>>(b, "tiles <256, 8, 8, 3, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 4>>(b, "tiles <256, 8, 8, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 32, 2>>(b, "tiles <256, 8, 32, 2, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 4, 8, 4>>(b, "tiles <256, 4, 8, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 4, 4>>(b, "tiles <256, 8, 4, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 6, 8, 4>>(b, "tiles <256, 6, 8, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<192, 8, 8, 5>>(b, "tiles <192, 8, 8, 5, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<256, 8, 8, 4, false>>(b, "tiles <256, 8, 8, 4, loads>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 8, 4, false>>(b, "tiles <128, 16, 8, 4, loads>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 32, 4>>(b, "tiles <128, 16, 32, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 16, 4, 4>>(b, "tiles <128, 16, 4, 4, async>", c.outer, c.n, c.inner);
        tiles<ColumnTileShape<128, 8, 8, 6>>(b, "tiles <128, 8, 8, 6, async>", c.outer, c.n, c.inner);
    }
    return 0;
}
