// packs_scan_emu.cu - the segmented scan by packs (cuda/scan/packs.cuh, the
// adaptive scan's route for segments of a mean of 2 ... 8192; timed by
// bench/tune_segscan.cu packs) on the emulator (tests/test_packs_scan.py
// builds and runs it): the library's ScanPackTuning and three other shapes, wide packs included, inclusive and exclusive, float32 / int32 / int64 /
// float64 sums and int32 max, on random segments of means 3 to 3000 with
// runs of empty segments, one segment far longer than the others (deferred
// to the chunk kernels but at mean 3000), segments that start and end
// inside a longer input (the elements outside every
// segment must stay as they were: the output is poisoned first).  Integer
// results must equal the host's; float sums lie within 4 (log2 len + 1)
// eps sum|x| + eps |sum| of a long double scan of the segment.  Prints "all
// ok" and exits 0, or says what differs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "../cuda/scan/packs.cuh"
#include "emu_draw.h"

using namespace gp;
using gp::segs::PackShape;
using gp::segs::PackTuning;
namespace packs_scan = gp::scan::packs;

static int bad = 0, runs = 0;

template <class Shape, class T, class Op>
void check(const char *what, const std::vector<T> &h, const std::vector<int64_t> &off,
           bool inclusive, int64_t longest) {
    const int64_t n = int64_t(h.size()), count = int64_t(off.size()) - 1;
    const auto room = [](size_t bytes) { return (bytes + 255) / 256 * 256 + 256; };
    T *in = static_cast<T *>(aligned_alloc(256, room(n * sizeof(T))));
    memcpy(in, h.data(), n * sizeof(T));
    int64_t *d_off = static_cast<int64_t *>(aligned_alloc(256, room(off.size() * 8)));
    memcpy(d_off, off.data(), off.size() * 8);
    T *got = static_cast<T *>(aligned_alloc(256, room(n * sizeof(T))));
    const T poison = T(77);
    for (int64_t i = 0; i < n; ++i) got[i] = poison;
    const size_t bytes = packs_scan::scratch_bytes<Shape, T, Op>(n, count, d_off, longest);
    void *scratch = aligned_alloc(256, room(bytes));
    const cudaError_t e =
        packs_scan::launch<Shape, T, Op>(in, n, d_off, count, longest, inclusive, got, scratch, 0);
    ++runs;
    int64_t wrong = 0, first = -1;
    std::vector<bool> inside(n, false);
    const Op op;
    for (int64_t p = 0; p < count; ++p) {
        long double s = 0, m = 0;
        T acc = Op::identity();
        const int64_t len = off[p + 1] - off[p];
        const double eps =
            std::is_same<T, float>::value ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
        const double depth = std::ceil(std::log2(double(len > 1 ? len : 1))) + 1;
        for (int64_t i = off[p]; i < off[p + 1]; ++i) {
            inside[i] = true;
            const long double before = s;
            const T acc_before = acc;
            s += (long double)h[i], m += std::fabs((long double)h[i]);
            acc = op(acc, h[i]);
            bool ok;
            if (std::is_floating_point<T>::value && std::is_same<Op, Sum<T>>::value) {
                const long double want = inclusive ? s : before;
                const double bound = 4 * depth * eps * double(m) + eps * std::fabs(double(want));
                ok = std::fabs(double((long double)got[i] - want)) <= bound;
            } else {
                ok = got[i] == (inclusive ? acc : acc_before);
            }
            if (!ok && wrong++ == 0) first = i;
        }
    }
    for (int64_t i = 0; i < n; ++i)
        if (!inside[i] && !(got[i] == poison) && wrong++ == 0) first = i;
    if (e != cudaSuccess || wrong) {
        ++bad;
        std::printf("%s (%s, %s, longest %lld): %s, %lld wrong, first at %lld\n", what, typeid(T).name(),
                    inclusive ? "inclusive" : "exclusive", (long long)longest,
                    e == cudaSuccess ? "launched" : "launch failed", (long long)wrong,
                    (long long)first);
    }
    free(in), free(d_off), free(got), free(scratch);
}

// Random lengths in [0, 2 mean], runs of empties, one long segment; the
// segments start `lead` elements in and `tail` elements before the end.
std::vector<int64_t> offsets_of(int64_t mean, int64_t count, int64_t lead, int64_t tail,
                                int64_t longest, int64_t &n, unsigned long long seed) {
    std::vector<int64_t> off{lead};
    for (int64_t p = 0; p < count; ++p) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int64_t len = int64_t(seed >> 33) % (2 * mean + 1);
        if (p % 97 >= 90) len = 0;  // runs of empty segments
        if (p == count / 2) len = longest;
        off.push_back(off.back() + len);
    }
    n = off.back() + tail;
    return off;
}

template <class Shape>
void shape(const char *name) {
    struct Case {
        int64_t mean, count, lead, tail, longest;
    };
    // The longest segment is deferred (longer than 16x the mean and than
    // two packs' worth of elements: 2048 or 4096) but at mean 3000; at mean
    // 5 it spans 37 chunks (more than a warp's round of chunk totals).  The
    // last two cases (n / count 3 and 6) take wide packs of 512 segments
    // where 32 segments fill less than 3/4 of a trip (float32 at both,
    // float64 at the first), one wide pack holding the deferred segment.
    // Each case runs without a bound on the lengths (gp_batch.longest 0)
    // and with the true longest; in the last three nothing is long, so
    // with the bound nothing is deferred (no counters, no chunk kernels)
    // though n passes the deferral length.
    for (const Case c :
         {Case{3, 700, 0, 0, 20123}, Case{40, 300, 5, 3, 21603}, Case{300, 90, 0, 7, 32003},
          Case{3000, 12, 1, 0, 140003}, Case{5, 100, 2, 1, 300001}, Case{2, 3000, 0, 0, 5003},
          Case{4, 2000, 3, 2, 4500}, Case{3, 3000, 0, 0, 6}, Case{40, 300, 5, 3, 80},
          Case{700, 50, 2, 1, 1400}}) {
        int64_t n;
        const std::vector<int64_t> off =
            offsets_of(c.mean, c.count, c.lead, c.tail, c.longest, n, 17 + c.mean);
        char what[160];
        std::snprintf(what, sizeof what, "%s, mean %lld, %lld segments", name, (long long)c.mean,
                      (long long)c.count);
        unsigned long long s = 99 + c.mean;
        std::vector<float> f(n);
        std::vector<double> d(n);
        std::vector<int> i32(n);
        std::vector<long long> i64(n);
        for (int64_t k = 0; k < n; ++k) f[k] = draw<float>(s), d[k] = draw<double>(s);
        for (int64_t k = 0; k < n; ++k) i32[k] = draw<int>(s), i64[k] = draw<long long>(s);
        int64_t longest = 0;
        for (size_t p = 0; p + 1 < off.size(); ++p) longest = std::max(longest, off[p + 1] - off[p]);
        for (const int64_t bound : {int64_t(0), longest})
            for (const bool inclusive : {true, false}) {
                check<Shape, float, Sum<float>>(what, f, off, inclusive, bound);
                check<Shape, double, Sum<double>>(what, d, off, inclusive, bound);
                check<Shape, int, Sum<int>>(what, i32, off, inclusive, bound);
                check<Shape, long long, Sum<long long>>(what, i64, off, inclusive, bound);
                check<Shape, int, Max<int>>(what, i32, off, inclusive, bound);
            }
    }
}

int main() {
    shape<gp::scan::packs::ScanPackTuning>("ScanPackTuning");
    shape<PackTuning>("PackTuning");
    shape<PackShape<128, 2, 1024, 8>>("128 x 2, packs of 1024");
    shape<PackShape<64, 4, 2048, 8, 3>>("64 x 4, 3 stages");
    if (bad) return 1;
    std::printf("all ok (%d checks)\n", runs);
    return 0;
}
