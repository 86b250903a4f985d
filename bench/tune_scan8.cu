// tune_scan8.cu - the evidence for the look-back scan's tunings of 8-byte
// accumulators (cuda/scan/lookback_tuning.cuh: WideTuning, WideningTuning,
// and the small-n shapes beside them).
//
// For float64, int64, int32 -> int64 and float32 -> float64 inclusive sums
// at 2^20, 2^24 and 2^28, in one run: a device-to-device copy of the same
// bytes (input plus output), CUB's DeviceScan (InclusiveSum, or
// InclusiveScan with gp::Sum where the sum widens, as the library's `cub`
// variant calls it) and with CUB's run_to_run determinism requirement
// (CCCL >= 3.5, as `cub_deterministic`), the library's choice (Lookback,
// what `auto` runs), the shapes it ran before (fenced slots), and the
// candidates.  CUDA events around the launches only, L2 overwritten before
// every run, median of REPEAT runs (tune_common.cuh).
//
// Every output is checked: integers exactly against a host scan (wrapping
// like the device's); floats against a long double scan on the host (largest
// error over the prefix's sum of |x|, in units of eps * log2 n, eps the
// result type's unit roundoff; WRONG above 4),
// for the same bits in two runs, and for the same bits as the first shape
// with the same tile (shapes that differ in occupancy, stages, slots or
// where the tile waits must agree bit for bit).  A shape that fails a
// check is marked FAIL and the program exits with status 1 at the end.
//
// `tune_scan8 evict` times instead the library's choice with and without
// evict-first L2 hints on its copies (float32 too), at 2^20 to 2^28;
// `tune_scan8 parts` splits the small shape's time at 2^20 (Parts below);
// `tune_scan8 hops` times it at tile counts around a new look-back level
// (hops below), on zeroed slots and on the tagged slots the library's calls
// use; `tune_scan8 small` times candidates for 2^20 (Small below);
// `tune_scan8 runs` and `runs2` time tiles read in runs (RunRows, RunRows2
// below), `tune_scan8 ncu` launches two of them once each, for Nsight
// Compute, and `tune_scan8 where` times the library's choice at 2^28 the
// ways this program and the library's timing loop differ (where_rows).
//
// On the GPU machine (after pip install --no-build-isolation -e . with the
// nvidia-cuda-cccl wheel installed):
//   nvcc -O3 -std=c++17 -arch=sm_90 -I"$(python3 -c "import sys, glob; print(sorted(g for p in sys.path for g in glob.glob(p + '/nvidia/cu*/include/cccl'))[-1])")" -Icuda bench/tune_scan8.cu -o /tmp/tune_scan8 && /tmp/tune_scan8
// or: bash bench/gpu_run.sh tune-scan8
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tune_common.cuh"

#include <cub/device/device_scan.cuh>

#include "cub_env.cuh"
#include "scan/decoupled_lookback.cuh"

using namespace gp;
using namespace gp::lookback;

constexpr int REPEAT = 30;
DeviceFacts facts;  // of device 0
bool failed = false;

// --------------------------------------------------------------- the shapes
// The library's shapes, the fenced slots they replaced, and candidates
// around the 8-byte one (2 x 12 vectors, two stages by cp.async, 6 blocks
// an SM, no publication after the scan).  The shapes this program timed
// before and their figures: bench/results/tune-scan8-*.md.
// LookbackShape<WARPS, VPT, STAGES, BLOCKS, BULK, STREAM, MID_PUBLISH, HOLD, FENCED>
// Shapes for 8-byte inputs (float64, int64): a 16-byte vector holds 2.
using W_Before = LookbackShape<2, 16, 3, 4, true, true, true, false, true>;  // fenced slots
using W_S3B4 = LookbackShape<2, 16, 3, 4>;
using W_Small12 = LookbackShape<2, 12, 2, 6, false, true, false>;  // the library's small one before runs
using W_12S3B5 = LookbackShape<2, 12, 3, 5, false, true, false>;
using W_12Bulk = LookbackShape<2, 12, 2, 6, true, true, false>;
using W_12Mid = LookbackShape<2, 12, 2, 6, false, true, true>;
using W_12Plain = LookbackShape<2, 12, 2, 6, false, false, false>;
using W_4x12S2B3 = LookbackShape<4, 12, 2, 3, false, true, false>;
using W_10S2B6 = LookbackShape<2, 10, 2, 6, false, true, false>;
// Shapes for 4-byte inputs into 8-byte sums: a vector holds 4.
using N_Before = LookbackShape<2, 8, 4, 4, true, true, true, false, true>;  // fenced slots
using N_S4B4 = LookbackShape<2, 8, 4, 4>;                                   // the library's large one, 2026-11-23
using N_Small6 = LookbackShape<2, 6, 2, 6, false, true, false>;             // the library's, small
using N_Small8 = LookbackShape<2, 8, 2, 6, false, true, false>;
using N_6S3B6 = LookbackShape<2, 6, 3, 6, false, true, false>;
using N_8S3B5 = LookbackShape<2, 8, 3, 5, false, true, false>;
using N_6Bulk = LookbackShape<2, 6, 2, 6, true, true, false>;
// Small-scan candidates (`tune_scan8 small`): tiles of more than 1024
// elements, so that 2^20 elements are fewer than 32^2 tiles (no third
// look-back level), at 4 blocks an SM (the 255-register budget).
using W_S20B4 = LookbackShape<2, 20, 2, 4, false, true, false>;        // 1280 elements
using W_S24B4 = LookbackShape<2, 24, 2, 4, false, true, false>;        // 1536
using W_S24B4H = LookbackShape<2, 24, 2, 4, false, true, false, true>; // 1536, the tile waits in its stage
using N_S10B4 = LookbackShape<2, 10, 2, 4, false, true, false>;        // 1280
using N_S12B4 = LookbackShape<2, 12, 2, 4, false, true, false>;        // 1536
using F_Small = SmallTuning;                                           // float32's: 1536 already
// A warp a block (12 blocks an SM, the same 12 warps): 2^20 8-byte sums are
// 1366 tiles, 683 blocks of two (up to 12 tiles on an SM, 10.3 on average)
// or 1366 blocks of one (up to 11) - whether the fullest SMs set the time.
using W_1x12B12 = LookbackShape<1, 12, 2, 12, false, true, false>;
using N_1x6B12 = LookbackShape<1, 6, 2, 12, false, true, false>;
// Tiles read in runs (`tune_scan8 runs`): the large shapes with each lane
// reading RUN consecutive vectors, a warp scan a run instead of a vector;
// the results stored from registers (o0), through a buffer of shared
// memory stored striped (o1) or by a bulk copy (o2).
// LookbackShape<..., HOLD, FENCED, RUN, OUT>
template <int VPT, int RUN, int OUT, bool MID = false, int BLOCKS = 6, bool STREAM = true>
using Runs = LookbackShape<2, VPT, 2, BLOCKS, true, STREAM, MID, false, false, RUN, OUT>;
// Small-scan shapes in runs of 3 through a bulk copy (`tune_scan8 runs2`):
// cp.async copies as the library's small shapes.
template <int WARPS, int VPT, int BLOCKS>
using SmallRuns = LookbackShape<WARPS, VPT, 2, BLOCKS, false, true, false, false, false, 3, 2>;

// ------------------------------------------------------------- one case
template <class In, class Acc>
struct Case {
    const char *name;
    int64_t n;
    const In *in;
    Acc *out;
    void *flush;
    size_t fb;
    float copy_ms = 0, cub_ms = 0, r2r_ms = 0;
    std::vector<Acc> ref;      // the host scan
    std::vector<double> absref; // floats: the prefix sums of |x|
    std::map<int64_t, std::vector<Acc>> first_of;  // by tile elements and runs
    std::vector<Acc> auto_bits;

    double bytes() const { return double(n) * (sizeof(In) + sizeof(Acc)); }
    void row(const char *variant, float ms, const char *check) const {
        std::printf("| %-16s | %-30s | 2^%-2d | %8.4f | %6.0f | %5.3f | %5.3f | %5.3f | %s |\n", name, variant,
                    int(std::lround(std::log2(double(n)))), ms, bytes() / ms / 1e6, copy_ms / ms, cub_ms / ms,
                    r2r_ms > 0 ? r2r_ms / ms : 0.0, check);
    }
    // The check of one result: "" and failed = true where it is wrong.
    std::string verify(const std::vector<Acc> &r) const {
        char buf[96];
        if (std::is_integral<Acc>::value) {
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; ++i)
                if (r[i] != ref[i]) bad = i;
            if (bad < 0) return "exact";
            std::snprintf(buf, sizeof buf, "WRONG at %lld", (long long)bad);
            return buf;
        }
        double worst = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double e = std::fabs(double(r[i]) - double(ref[i])) / absref[i];
            worst = std::isnan(e) ? INFINITY : std::fmax(worst, e);
        }
        const double units = worst / (std::numeric_limits<Acc>::epsilon() / 2 * std::log2(double(n)));
        std::snprintf(buf, sizeof buf, "err %.1e x eps*log2n%s", units, units <= 4 ? "" : " WRONG");
        return buf;
    }
};

// A random input of n elements (never zeros; the same every run) and its
// host scan.
template <class In>
void make_input(int64_t n, std::vector<In> &h) {
    h.resize(n);
    unsigned long long s = 777;
    for (auto &v : h) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const long long r = (long long)(s >> 33) - (1ll << 30);  // [-2^30, 2^30)
        if (std::is_floating_point<In>::value) v = In(double(r | 1) / double(1ll << 30));
        else v = In(r | 1);
    }
}

// The tile of a LookbackWith, or of the shape Lookback picks at n.
template <class L> struct IsLookback : std::false_type {};
template <class In, class Op, int64_t E> struct IsLookback<Lookback<In, Op, E>> : std::true_type {};
template <class L>
constexpr int run_of() {
    if constexpr (IsLookback<L>::value) return 1;
    else return L::Shape::RUN;
}
template <class L>
int64_t tile_of(int64_t n) {
    if constexpr (IsLookback<L>::value) {
        return ceil_div<int64_t>(n, L::Small::TILE) <= resident_warps<typename L::Small::Shape>(facts)
                   ? L::Small::TILE
                   : L::Large::TILE;
    } else {
        return L::TILE;
    }
}

// Look-back slots that outlive a call, as the library keeps one per host
// thread (csrc/glue.h): zeroed once, then tagged.
gp_lookback_cache *lookback_cache() {
    static gp_lookback_cache cache{};
    if (cache.slots == nullptr) {
        cache.bytes = GP_LOOKBACK_CACHE_BYTES;
        CHECK(cudaMalloc(&cache.slots, cache.bytes));
        CHECK(cudaMemset(cache.slots, 0, cache.bytes));
    }
    return &cache;
}

// The arguments of an inclusive scan by L of n elements, with its scratch
// allocated (the caller frees a.scratch).
template <class L>
gp_scan_args scan_args(const void *in, void *out, int64_t n, gp_lookback_cache *cache = nullptr) {
    gp_scan_args a{};
    a.in = in; a.out = out; a.n = n; a.inclusive = 1; a.cache = cache;
    a.scratch_bytes = L::scratch(n);
    CHECK(cudaMalloc(&a.scratch, a.scratch_bytes));
    return a;
}

// The input and accumulator types of a Case.
template <class C> using InOf = std::remove_const_t<std::remove_pointer_t<decltype(std::declval<C>().in)>>;
template <class C> using AccOf = std::remove_pointer_t<decltype(std::declval<C>().out)>;

// cache: the slots a small scan publishes in instead of zeroed scratch (as
// the library's calls run it), or nullptr (zeroed scratch every run).
template <class L, class In, class Acc>
void run_with(const char *variant, Case<In, Acc> &c, gp_lookback_cache *cache = nullptr) {
    gp_scan_args a = scan_args<L>(c.in, c.out, c.n, cache);
    const float ms = median_ms([&] { CHECK(L::run(a, facts)); }, c.flush, c.fb, REPEAT);
    std::vector<Acc> r1(c.n), r2(c.n);
    CHECK(cudaMemcpy(r1.data(), c.out, c.n * sizeof(Acc), cudaMemcpyDeviceToHost));
    CHECK(cudaMemset(c.out, 0xff, c.n * sizeof(Acc)));
    CHECK(L::run(a, facts));
    CHECK(cudaMemcpy(r2.data(), c.out, c.n * sizeof(Acc), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(a.scratch));
    std::string check = c.verify(r1);
    bool bad = check.find("WRONG") != std::string::npos;
    const bool same = std::memcmp(r1.data(), r2.data(), c.n * sizeof(Acc)) == 0;
    check += same ? ", same bits twice" : ", BITS DIFFER twice";
    bad = bad || !same;
    const int64_t tile = tile_of<L>(c.n);
    {
        // Runs sum a tile's elements in another order: the same bits only
        // with the same runs.
        const int64_t key = tile * 64 + run_of<L>();
        auto it = c.first_of.find(key);
        if (it == c.first_of.end()) {
            c.first_of[key] = r1;
        } else {
            const bool eq = std::memcmp(r1.data(), it->second.data(), c.n * sizeof(Acc)) == 0;
            check += eq ? ", = first of its tile" : ", DIFFERS from first of its tile";
            bad = bad || !eq;
        }
    }
    char t[48];
    std::snprintf(t, sizeof t, ", tile %lld run %d", (long long)tile, run_of<L>());
    check += t;
    if (bad) {
        check += " FAIL";
        failed = true;
    }
    c.row(variant, ms, check.c_str());
}

template <class Shape, class In, class Acc>
void runs(const char *variant, Case<In, Acc> &c, gp_lookback_cache *cache = nullptr) {
    run_with<LookbackWith<Shape, In, gp::Sum<Acc>>>(variant, c, cache);
}

// CUB: InclusiveSum where input and sum have one type, else InclusiveScan
// with gp::Sum (CUB then sums in the accumulator type), as `cub` calls it;
// with the run_to_run requirement as `cub_deterministic` calls it.
template <class In, class Acc>
cudaError_t cub_scan(void *tmp, size_t &bytes, const In *in, Acc *out, int64_t n) {
    if constexpr (std::is_same<In, Acc>::value) return cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, n);
    else return cub::DeviceScan::InclusiveScan(tmp, bytes, in, out, gp::Sum<Acc>(), n);
}
#ifdef GP_CUB_ENV
template <class In, class Acc>
cudaError_t cub_r2r(void *tmp, size_t &bytes, const In *in, Acc *out, int64_t n) {
    return cub_env::two_phase(::cuda::execution::determinism::run_to_run, tmp, bytes, 0,
                              [&](auto env) -> cudaError_t {
                                  if constexpr (std::is_same<In, Acc>::value)
                                      return cub::DeviceScan::InclusiveSum(in, out, n, env);
                                  else
                                      return cub::DeviceScan::InclusiveScan(in, out, ::cuda::std::plus<Acc>(), n, env);
                              });
}
#endif

template <class In, class Acc, class F>
float time_cub(Case<In, Acc> &c, F call, const char *variant) {
    size_t tb = 0;
    CHECK(call(nullptr, tb, c.in, c.out, c.n));
    void *tmp;
    CHECK(cudaMalloc(&tmp, tb ? tb : 1));
    const float ms = median_ms([&] { CHECK(call(tmp, tb, c.in, c.out, c.n)); }, c.flush, c.fb, REPEAT);
    CHECK(cudaFree(tmp));
    std::vector<Acc> r(c.n);
    CHECK(cudaMemcpy(r.data(), c.out, c.n * sizeof(Acc), cudaMemcpyDeviceToHost));
    const std::string check = c.verify(r);
    if (check.find("WRONG") != std::string::npos) failed = true;
    c.row(variant, ms, check.c_str());
    return ms;
}

// Every row of one type at one n.
template <class In, class Acc, class Rows>
void one_case(const char *name, const std::vector<In> &h, In *in, Acc *out, void *flush, size_t fb, int lg,
              Rows rows) {
    Case<In, Acc> c;
    c.name = name; c.n = int64_t(1) << lg; c.in = in; c.out = out; c.flush = flush; c.fb = fb;
    c.ref.resize(c.n);
    if (std::is_integral<Acc>::value) {
        unsigned long long acc = 0;  // wraps as the device's sum does
        for (int64_t i = 0; i < c.n; ++i) { acc += (unsigned long long)(long long)h[i]; c.ref[i] = Acc((long long)acc); }
    } else {
        c.absref.resize(c.n);
        long double acc = 0;  // x86's 64-bit significand: the reference's own error well below a float64 scan's
        double aacc = 0;
        for (int64_t i = 0; i < c.n; ++i) { acc += (long double)h[i]; aacc += std::fabs(double(h[i])); c.ref[i] = Acc(acc); c.absref[i] = aacc; }
    }
    const size_t copy_bytes = size_t(c.n) * (sizeof(In) + sizeof(Acc)) / 2;
    c.copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(out, in, copy_bytes, cudaMemcpyDeviceToDevice)); }, flush, fb, REPEAT);
    c.row("copy (same bytes)", c.copy_ms, "");
    c.cub_ms = time_cub(c, cub_scan<In, Acc>, "cub");
#ifdef GP_CUB_ENV
    c.r2r_ms = time_cub(c, cub_r2r<In, Acc>, "cub run_to_run");
#endif
    run_with<Lookback<In, gp::Sum<Acc>>>("auto (Lookback)", c);
    rows(c);
}

// `tune_scan8 evict`: the library's shapes with their copies' lines marked
// evict-first in the L2 (LookbackWith's EVICT_FIRST_UP_TO) against plain
// copies, at 2^20 to 2^28.
struct Evict {
    template <class C>
    void operator()(C &c) const {
        using In = InOf<C>;
        using Acc = AccOf<C>;
        run_with<Lookback<In, gp::Sum<Acc>, 0>>("auto, plain copies", c);
        run_with<Lookback<In, gp::Sum<Acc>, INT64_MAX>>("auto, evict-first copies", c);
        run_with<Lookback<In, gp::Sum<Acc>, 0>>("auto, plain copies (again)", c);
        run_with<Lookback<In, gp::Sum<Acc>, INT64_MAX>>("auto, evict-first (again)", c);
    }
};

// `tune_scan8 parts`: where the time of a small scan (2^20) goes - the
// library's small shape whole, its zeroing launch alone, and its tile pass
// without the look-back (no totals published or polled: wrong results, so
// timed only) with and without the zeroing before it.
struct NoLookBack : NoProbe {
    static constexpr bool LOOK_BACK = false;
};
template <class C, class F>
void time_only(C &c, const char *variant, F call) {
    c.row(variant, median_ms([&] { CHECK(call()); }, c.flush, c.fb, REPEAT), "timed only");
}
struct Parts {
    template <class C>
    void operator()(C &c) const {
        using In = InOf<C>;
        using Acc = AccOf<C>;
        using Shape = TuningFor<In, Acc, true>;
        using L = LookbackWith<Shape, In, gp::Sum<Acc>>;
        using T = LookbackWith<Shape, In, gp::Sum<Acc>, NoLookBack>;
        gp_scan_args a = scan_args<L>(c.in, c.out, c.n);
        time_only(c, "small shape: zeroing alone", [&] { return L::zero(a); });
        time_only(c, "small shape: tile pass + zeroing", [&] { return T::run(a, facts); });
        time_only(c, "small shape: tile pass alone", [&] { return T::launch(a, facts); });
        time_only(c, "small shape: whole (as auto)", [&] { return L::run(a, facts); });
        CHECK(cudaFree(a.scratch));
    }
};

// `tune_scan8 small`: 2^20, a small scan (every tile a warp of the first
// fills): the library's small shape on zeroed slots (as before) and on the
// tagged slots the library's calls now use, and candidates with larger
// tiles on tagged slots.
// The library's small 8-byte shape with plain copies instead of evict-first
// ones (EVICT_FIRST_UP_TO = 0: 8-byte sums mark every size evict-first), and
// with plain stores instead of streaming ones, on tagged slots.
template <class Shape, class C>
void small_copies(C &c) {
    using In = InOf<C>;
    using Acc = AccOf<C>;
    using Plain = LookbackShape<Shape::WARPS, Shape::VPT, Shape::STAGES, Shape::BLOCKS, Shape::BULK, false,
                                Shape::MID_PUBLISH>;
    run_with<LookbackWith<Shape, In, gp::Sum<Acc>, NoProbe, 0>>("library, plain copies, tagged", c, lookback_cache());
    run_with<LookbackWith<Plain, In, gp::Sum<Acc>>>("library, plain stores, tagged", c, lookback_cache());
}
template <class Shape, class C>
void zeroed_and_tagged(const char *name, C &c) {
    std::string z = std::string(name) + ", zeroed slots", t = std::string(name) + ", tagged slots";
    runs<Shape>(z.c_str(), c);
    runs<Shape>(t.c_str(), c, lookback_cache());
}
struct Small {
    template <class C>
    void operator()(C &c) const {
        using In = InOf<C>;
        using Acc = AccOf<C>;
        if constexpr (sizeof(Acc) == 4) {
            zeroed_and_tagged<F_Small>("2x12 s2 b5 (library)", c);
        } else if constexpr (sizeof(In) == 8) {
            zeroed_and_tagged<W_Small12>("2x12 s2 b6 (library)", c);
            runs<W_S20B4>("2x20 s2 b4, tagged", c, lookback_cache());
            runs<W_S24B4>("2x24 s2 b4, tagged", c, lookback_cache());
            runs<W_S24B4H>("2x24 s2 b4 hold, tagged", c, lookback_cache());
            runs<W_1x12B12>("1x12 s2 b12, tagged", c, lookback_cache());
            small_copies<W_Small12>(c);
        } else {
            zeroed_and_tagged<N_Small6>("2x6 s2 b6 (library)", c);
            runs<N_S10B4>("2x10 s2 b4, tagged", c, lookback_cache());
            runs<N_S12B4>("2x12 s2 b4, tagged", c, lookback_cache());
            runs<N_1x6B12>("1x6 s2 b12, tagged", c, lookback_cache());
            small_copies<N_Small6>(c);
        }
    }
};

// `tune_scan8 hops`: the small shape's time at tile counts on either side
// of 32 and 32^2 tiles, where the look-back gains a level (a tile that
// ends a block of 32^j tiles publishes the block's total, waiting for the
// totals before it; the tiles past it wait for that total): a jump in time
// there beyond the tiles' bytes is the price of that level.
template <class In, class Acc>
void hops(const char *name, const In *in, Acc *out, void *flush, size_t fb) {
    using L = LookbackWith<TuningFor<In, Acc, true>, In, gp::Sum<Acc>>;
    const int64_t resident = resident_warps<typename L::Shape>(facts);
    for (int64_t tiles : {int64_t(32), int64_t(33), int64_t(512), int64_t(1000), int64_t(1023), int64_t(1024),
                          int64_t(1025), int64_t(1100), int64_t(1366), resident}) {
        if (tiles > resident) continue;
        gp_scan_args a = scan_args<L>(in, out, tiles * L::TILE);
        const float ms = median_ms([&] { CHECK(L::run(a, facts)); }, flush, fb, REPEAT);
        std::vector<Acc> zeroed(a.n), tagged(a.n);
        CHECK(cudaMemcpy(zeroed.data(), out, a.n * sizeof(Acc), cudaMemcpyDeviceToHost));
        a.cache = lookback_cache();  // the library's calls: tagged slots, no zeroing launch
        const float tagged_ms = median_ms([&] { CHECK(L::run(a, facts)); }, flush, fb, REPEAT);
        CHECK(cudaMemcpy(tagged.data(), out, a.n * sizeof(Acc), cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(zeroed.data(), tagged.data(), a.n * sizeof(Acc)) == 0;
        failed = failed || !same;
        const float copy = median_ms([&] {
            CHECK(cudaMemcpyAsync(out, in, size_t(a.n) * (sizeof(In) + sizeof(Acc)) / 2, cudaMemcpyDeviceToDevice));
        }, flush, fb, REPEAT);
        CHECK(cudaFree(a.scratch));
        std::printf("| %-16s | %5lld | %8lld | %8.2f | %8.2f | %8.2f | %8.2f | %s |\n", name, (long long)tiles,
                    (long long)a.n, ms * 1e3, tagged_ms * 1e3, copy * 1e3, (tagged_ms - copy) * 1e3,
                    same ? "same bits" : "BITS DIFFER FAIL");
    }
}

// The input (make_input's, uploaded) and the output of up to nmax
// elements; the input has room for the copy roof's source too: n (In +
// Acc) / 2 bytes (6 an element for int32 -> int64).
template <class In, class Acc>
struct Buffers {
    std::vector<In> h;
    In *in = nullptr;
    Acc *out = nullptr;
    explicit Buffers(int64_t nmax) {
        make_input<In>(nmax, h);
        CHECK(cudaMalloc(&in, nmax * std::max(sizeof(In), (sizeof(In) + sizeof(Acc)) / 2)));
        CHECK(cudaMalloc(&out, nmax * sizeof(Acc)));
        CHECK(cudaMemcpy(in, h.data(), nmax * sizeof(In), cudaMemcpyHostToDevice));
    }
    ~Buffers() {
        cudaFree(in);
        cudaFree(out);
    }
};

template <class In, class Acc>
void hops_of(const char *name, void *flush, size_t fb) {
    const Buffers<In, Acc> b(int64_t(1) << 21);
    hops<In, Acc>(name, b.in, b.out, flush, fb);
}

template <class In, class Acc, class Rows>
void one_type(const char *name, void *flush, size_t fb, Rows rows) {
    constexpr bool AT_2_20 = std::is_same<Rows, Parts>::value || std::is_same<Rows, Small>::value;
    const Buffers<In, Acc> b(int64_t(1) << (AT_2_20 ? 20 : 28));
    const std::vector<In> &h = b.h;
    In *in = b.in;
    Acc *out = b.out;
    if constexpr (std::is_same<Rows, Evict>::value) {
        for (int lg : {20, 22, 24, 26, 28}) one_case<In, Acc>(name, h, in, out, flush, fb, lg, rows);
    } else if constexpr (AT_2_20) {
        one_case<In, Acc>(name, h, in, out, flush, fb, 20, rows);
    } else {
        for (int lg : {20, 24, 28}) one_case<In, Acc>(name, h, in, out, flush, fb, lg, rows);
    }
}

// The rows of 8-byte inputs and of widening sums.
struct SameWidth {
    template <class C>
    void operator()(C &c) const {
        runs<W_Before>("2x16 s3 b4 FENCED (before)", c);
        runs<W_S3B4>("2x16 s3 b4", c);
        runs<W_Small12>("2x12 s2 b6 cp.async no mid", c);
        runs<W_12S3B5>("2x12 s3 b5 cp.async no mid", c);
        runs<W_12Bulk>("2x12 s2 b6 bulk no mid", c);
        runs<W_12Mid>("2x12 s2 b6 cp.async mid", c);
        runs<W_12Plain>("2x12 s2 b6 cp.async no mid, plain stores", c);
        runs<W_4x12S2B3>("4x12 s2 b3 cp.async no mid", c);
        runs<W_10S2B6>("2x10 s2 b6 cp.async no mid", c);
    }
};
struct Widening {
    template <class C>
    void operator()(C &c) const {
        runs<N_Before>("2x8 s4 b4 FENCED (before)", c);
        runs<N_S4B4>("2x8 s4 b4", c);
        runs<N_Small6>("2x6 s2 b6 cp.async no mid", c);
        runs<N_Small8>("2x8 s2 b6 cp.async no mid", c);
        runs<N_6S3B6>("2x6 s3 b6 cp.async no mid", c);
        runs<N_8S3B5>("2x8 s3 b5 cp.async no mid", c);
        runs<N_6Bulk>("2x6 s2 b6 bulk no mid", c);
    }
};

// `tune_scan8 runs`: the large shapes with tiles read in runs (Runs).
struct RunRows {
    template <class C>
    void operator()(C &c) const {
        using In = InOf<C>;
        if constexpr (sizeof(In) == 8) {
            runs<Runs<12, 1, 0>>("2x12 (library large)", c);
            runs<Runs<12, 3, 0>>("2x12 runs of 3, o0", c);
            runs<Runs<12, 3, 1>>("2x12 runs of 3, o1", c);
            runs<Runs<12, 3, 2>>("2x12 runs of 3, o2", c);
            runs<Runs<12, 3, 2, true>>("2x12 runs of 3, o2, mid", c);
            runs<Runs<15, 3, 0>>("2x15 runs of 3, o0", c);
            runs<Runs<15, 5, 0>>("2x15 runs of 5, o0", c);
            runs<Runs<15, 5, 2, false, 4>>("2x15 runs of 5, o2, b4", c);
            runs<Runs<12, 1, 0>>("2x12 (library large, again)", c);
            runs<Runs<12, 3, 2>>("2x12 runs of 3, o2 (again)", c);
        } else {
            runs<Runs<6, 1, 0>>("2x6 (library large)", c);
            runs<Runs<6, 3, 0>>("2x6 runs of 3, o0", c);
            runs<Runs<6, 3, 1>>("2x6 runs of 3, o1", c);
            runs<Runs<6, 3, 2>>("2x6 runs of 3, o2", c);
            runs<Runs<9, 3, 2>>("2x9 runs of 3, o2", c);
        }
    }
};

// `tune_scan8 runs2`: runs of 3 through a bulk copy at more warps an SM
// (smaller tiles), with plain bulk stores, and for small scans (2^20, on
// tagged slots as the library's calls run them) at larger tiles.
struct RunRows2 {
    template <class C>
    void operator()(C &c) const {
        using In = InOf<C>;
        if (c.n == (int64_t(1) << 20)) {
            if constexpr (sizeof(In) == 8) {
                runs<W_Small12>("2x12 b6 (library small)", c, lookback_cache());
                runs<SmallRuns<2, 12, 6>>("small 2x12 b6 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<2, 18, 4>>("small 2x18 b4 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<1, 18, 8>>("small 1x18 b8 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<2, 21, 3>>("small 2x21 b3 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<2, 9, 8>>("small 2x9 b8 runs of 3, o2", c, lookback_cache());
                runs<W_Small12>("2x12 b6 (library small, again)", c, lookback_cache());
            } else {
                runs<N_Small6>("2x6 b6 (library small)", c, lookback_cache());
                runs<SmallRuns<2, 6, 6>>("small 2x6 b6 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<2, 9, 4>>("small 2x9 b4 runs of 3, o2", c, lookback_cache());
                runs<SmallRuns<2, 12, 4>>("small 2x12 b4 runs of 3, o2", c, lookback_cache());
                runs<N_Small6>("2x6 b6 (library small, again)", c, lookback_cache());
            }
            return;
        }
        if constexpr (sizeof(In) == 8) {
            runs<Runs<12, 1, 0>>("2x12 b6 (library large before)", c);
            runs<Runs<12, 3, 2>>("2x12 b6 runs of 3, o2", c);
            runs<Runs<12, 3, 2, false, 6, false>>("2x12 b6 runs of 3, o2, plain", c);
            runs<Runs<9, 3, 2, false, 8>>("2x9 b8 runs of 3, o2", c);
            runs<Runs<9, 3, 2, false, 7>>("2x9 b7 runs of 3, o2", c);
            runs<Runs<6, 3, 2, false, 10>>("2x6 b10 runs of 3, o2", c);
            runs<Runs<6, 3, 2, false, 11>>("2x6 b11 runs of 3, o2", c);
            runs<Runs<12, 3, 2>>("2x12 b6 runs of 3, o2 (again)", c);
        } else {
            runs<Runs<6, 1, 0>>("2x6 b6 (library large)", c);
            runs<Runs<6, 3, 2>>("2x6 b6 runs of 3, o2", c);
            runs<Runs<6, 3, 2, false, 8>>("2x6 b8 runs of 3, o2", c);
            runs<Runs<6, 1, 0>>("2x6 b6 (library large, again)", c);
        }
    }
};

// `tune_scan8 where`: the library's choice at 2^28 timed as this program
// times it (the legacy default stream, each run waited for) and as the
// library's timing loop does (csrc/timing.c: the per-thread stream, where
// the early launch of the scan after its zeroing takes effect, every run
// queued, the output poisoned before each), one change at a time.
template <class In>
void where_rows(const char *name, void *flush, size_t fb) {
    const int64_t n = int64_t(1) << 28;
    const Buffers<In, In> b(n);
    using L = Lookback<In, gp::Sum<In>>;
    gp_scan_args a = scan_args<L>(b.in, b.out, n);
    const auto poison = [&] { CHECK(cudaMemsetAsync(b.out, 0xff, n * sizeof(In), a.stream)); };
    const auto run = [&] { CHECK(L::run(a, facts)); };
    for (int round = 0; round < 2; ++round) {
        a.stream = 0;
        const float waited = median_ms(run, flush, fb, REPEAT);
        const float poisoned = median_ms(run, flush, fb, REPEAT, poison);
        a.stream = cudaStreamPerThread;
        const float pts = median_ms(run, flush, fb, REPEAT, NoPre{}, a.stream);
        const float pts_q = median_ms<true>(run, flush, fb, REPEAT, NoPre{}, a.stream);
        const float lib = median_ms<true>(run, flush, fb, REPEAT, poison, a.stream);
        std::printf("| %s | %.4f | %.4f | %.4f | %.4f | %.4f |\n", name, waited, poisoned, pts, pts_q, lib);
    }
    // The same input and output from the runtime's stream-ordered pool
    // (cudaMallocAsync), where the library's arrays come from, against
    // cudaMalloc's; CUB on both.
    In *pin = nullptr, *pout = nullptr;
    CHECK(cudaMallocAsync(&pin, n * sizeof(In), 0));
    CHECK(cudaMallocAsync(&pout, n * sizeof(In), 0));
    CHECK(cudaMemcpy(pin, b.in, n * sizeof(In), cudaMemcpyDeviceToDevice));
    size_t tb = 0;
    CHECK(cub_scan<In, In>(nullptr, tb, b.in, b.out, n));
    void *tmp;
    CHECK(cudaMalloc(&tmp, tb));
    a.stream = 0;
    for (int round = 0; round < 2; ++round) {
        a.in = b.in; a.out = b.out;
        const float lib_malloc = median_ms(run, flush, fb, REPEAT);
        const float cub_malloc = median_ms([&] { CHECK(cub_scan<In, In>(tmp, tb, b.in, b.out, n)); }, flush, fb, REPEAT);
        a.in = pin; a.out = pout;
        const float lib_pool = median_ms(run, flush, fb, REPEAT);
        const float cub_pool = median_ms([&] { CHECK(cub_scan<In, In>(tmp, tb, pin, pout, n)); }, flush, fb, REPEAT);
        std::printf("| %s: cudaMalloc lib / CUB, pool lib / CUB | %.4f | %.4f | %.4f | %.4f | |\n", name, lib_malloc,
                    cub_malloc, lib_pool, cub_pool);
    }
    CHECK(cudaFree(tmp));
    CHECK(cudaFree(pin));
    CHECK(cudaFree(pout));
    CHECK(cudaFree(a.scratch));
}

// `tune_scan8 ncu`: one launch each of the library's large 8-byte shape and
// of runs of 3 through a bulk copy, float64 and int64 at 2^28, for a
// profiler (no timing, no checks).
template <class In>
void profile_once() {
    const Buffers<In, In> b(int64_t(1) << 28);
    using L0 = LookbackWith<Runs<12, 1, 0>, In, gp::Sum<In>>;
    using L1 = LookbackWith<Runs<12, 3, 2>, In, gp::Sum<In>>;
    static_assert(L0::TILE == L1::TILE, "one scratch serves both");
    const gp_scan_args a = scan_args<L0>(b.in, b.out, int64_t(1) << 28);
    CHECK(L0::run(a, facts));
    CHECK(L1::run(a, facts));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(a.scratch));
}

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is measured
    const bool evict = argc > 1 && std::strcmp(argv[1], "evict") == 0;
    const bool parts = argc > 1 && std::strcmp(argv[1], "parts") == 0;
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    CHECK(device_facts(facts));
    size_t fb = 0;
    void *flush = l2_flush_buffer(p, fb);
    std::printf("%s, %d SMs, CCCL %d.%d.%d\n\n", p.name, p.multiProcessorCount, CCCL_MAJOR_VERSION,
                CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
    std::printf("shapes: warps a block x vectors a lane, stages, blocks an SM; hold: the tile waits in shared "
                "memory; FENCED: flag + __threadfence slots, else paired words.  x copy / x CUB / x r2r: their "
                "time over the row's (above 1: the row is faster)\n\n");
    if (argc > 1 && std::strcmp(argv[1], "ncu") == 0) {
        profile_once<double>();
        profile_once<long long>();
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "where") == 0) {
        std::printf("| sum, 2^28 | default stream, waited | + output poisoned | per-thread stream, waited | "
                    "per-thread, queued | per-thread, queued, poisoned (as the library times) |\n"
                    "|---|---:|---:|---:|---:|---:|\n");
        where_rows<double>("float64", flush, fb);
        where_rows<long long>("int64", flush, fb);
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "hops") == 0) {
        std::printf("| sum | tiles | n | us, zeroed slots | us, tagged slots (library) | copy us | tagged - copy | "
                    "check |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
        hops_of<float, float>("float32", flush, fb);
        hops_of<double, double>("float64", flush, fb);
        hops_of<int, long long>("int32 -> int64", flush, fb);
        return failed ? 1 : 0;
    }
    std::printf("| sum | variant | n | ms | GB/s | x copy | x CUB | x r2r | check |\n|---|---|---|---:|---:|---:|---:|---:|---|\n");
    if (argc > 1 && std::strcmp(argv[1], "small") == 0) {
        one_type<float, float>("float32", flush, fb, Small{});
        one_type<double, double>("float64", flush, fb, Small{});
        one_type<long long, long long>("int64", flush, fb, Small{});
        one_type<int, long long>("int32 -> int64", flush, fb, Small{});
        one_type<float, double>("float32 -> float64", flush, fb, Small{});
    } else if (argc > 1 && std::strcmp(argv[1], "runs") == 0) {
        one_type<double, double>("float64", flush, fb, RunRows{});
        one_type<long long, long long>("int64", flush, fb, RunRows{});
        one_type<int, long long>("int32 -> int64", flush, fb, RunRows{});
    } else if (argc > 1 && std::strcmp(argv[1], "runs2") == 0) {
        one_type<double, double>("float64", flush, fb, RunRows2{});
        one_type<long long, long long>("int64", flush, fb, RunRows2{});
        one_type<int, long long>("int32 -> int64", flush, fb, RunRows2{});
    } else if (parts) {
        one_type<float, float>("float32", flush, fb, Parts{});
        one_type<double, double>("float64", flush, fb, Parts{});
        one_type<long long, long long>("int64", flush, fb, Parts{});
        one_type<int, long long>("int32 -> int64", flush, fb, Parts{});
    } else if (evict) {
        one_type<float, float>("float32", flush, fb, Evict{});
        one_type<double, double>("float64", flush, fb, Evict{});
        one_type<long long, long long>("int64", flush, fb, Evict{});
        one_type<int, long long>("int32 -> int64", flush, fb, Evict{});
    } else {
        one_type<double, double>("float64", flush, fb, SameWidth{});
        one_type<long long, long long>("int64", flush, fb, SameWidth{});
        one_type<int, long long>("int32 -> int64", flush, fb, Widening{});
        one_type<float, double>("float32 -> float64", flush, fb, Widening{});
    }
    CHECK(cudaFree(flush));
    if (failed) std::printf("\nSOME CHECK FAILED (rows marked FAIL / WRONG)\n");
    return failed ? 1 : 0;
}
