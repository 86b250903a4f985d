// segflat_shapes_emu.cu - the tile shapes of the flat segmented reduction
// (cuda/reduce/segmented_flat.cuh) that bench/tune_segflat.cu times, besides
// the library's, on the emulator (tests/test_segflat_shapes.py builds and
// runs it): 128 x 4, 256 x 4, 256 x 8, 64 x 2 threads x vectors and the
// register path, on segments with empty runs, long spans and tile edges,
// an aligned and a misaligned input, rows of a C array.  Integer results
// must equal the host's; float sums lie within 4 (log2 len + 1) eps sum|x|
// + eps |sum| of a long double sum; min/max exact.  Prints "all ok" and
// exits 0, or says what differs.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "reduce/segmented_flat.cuh"
#include "emu_draw.h"

using namespace gp;
using namespace gp::reduce::seg;
using namespace gp::reduce::flat;

static int bad = 0, runs = 0;

// Segments `off` (or rows of len, off empty) of h[shift ...], through
// FlatWith<Shape>, against the host.
template <class Shape, class In, class Op>
void check(const char *what, const std::vector<In> &h, int shift, const std::vector<int64_t> &off, int64_t rows,
           int64_t len) {
    using Acc = typename Op::type;
    const bool segments = rows == 0;
    const int64_t n = segments ? int64_t(h.size()) - shift : rows * len;
    const int64_t count = segments ? int64_t(off.size()) - 1 : rows;
    In *in = static_cast<In *>(aligned_alloc(256, (h.size() * sizeof(In) + 255) / 256 * 256));
    memcpy(in, h.data(), h.size() * sizeof(In));
    int64_t *d_off = static_cast<int64_t *>(aligned_alloc(256, (off.size() * 8 + 255) / 256 * 256 + 256));
    if (!off.empty()) memcpy(d_off, off.data(), off.size() * 8);
    Acc *out = static_cast<Acc *>(aligned_alloc(256, (count * sizeof(Acc) + 255) / 256 * 256 + 256));
    for (int64_t p = 0; p < count; ++p) out[p] = Acc(12345);
    gp_reduce_args a{};
    a.in = in + shift, a.out = out;
    a.n = segments ? n : len;
    a.batch = segments ? gp_batch{count, 1, 0, 1, 0, d_off} : gp_batch{rows, 1, len, 1, 0, nullptr};
    const Problems P = problems_of(a);
    using F = FlatWith<Shape, In, Op>;
    const size_t bytes = F::scratch(a, P);
    void *scratch = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    a.scratch = scratch, a.scratch_bytes = bytes;
    if (F::run(a, P) != cudaSuccess) std::printf("%s: launch failed\n", what), ++bad;
    int64_t wrong = 0, first = -1;
    for (int64_t p = 0; p < count; ++p) {
        const int64_t b = segments ? off[p] : p * len, e = segments ? off[p + 1] : (p + 1) * len;
        bool ok;
        if (std::is_floating_point<Acc>::value && std::is_same<Op, Sum<Acc>>::value) {
            long double s = 0, m = 0;
            for (int64_t k = b; k < e; ++k) s += h[shift + k], m += std::fabs((long double)h[shift + k]);
            const double eps = std::numeric_limits<Acc>::epsilon();
            const double depth = std::ceil(std::log2(double(e - b > 1 ? e - b : 1))) + 1;
            ok = std::fabs((long double)out[p] - s) <= 4 * depth * eps * m + eps * std::fabs(double(s));
        } else {
            Acc s = Op::identity();
            for (int64_t k = b; k < e; ++k) s = Op()(s, Acc(h[shift + k]));
            ok = out[p] == s;
        }
        if (!ok && first < 0) first = p;
        wrong += !ok;
    }
    ++runs;
    if (wrong) std::printf("%s: %lld of %lld wrong, the first segment %lld\n", what, (long long)wrong, (long long)count, (long long)first), ++bad;
    free(in), free(d_off), free(out), free(scratch);
}

template <class Shape>
void shape(const char *name) {
    // Lengths: ragged with empties, runs of empties at the start, at tile
    // edges and at the end, one segment over many tiles.
    std::vector<std::vector<int64_t>> cases;
    {
        unsigned long long s = 5;
        std::vector<int64_t> l;
        for (int i = 0; i < 3000; ++i) l.push_back(int64_t(draw<int>(s) + 1000) % 9);
        cases.push_back(l);
        l.assign(700, 0);
        for (int i = 0; i < 40; ++i) l.push_back(int64_t(draw<int>(s) + 1000) % 300);
        l.push_back(4096), l.insert(l.end(), 2500, 0), l.push_back(9 * 4096 + 5), l.insert(l.end(), 300, 0);
        cases.push_back(l);
        cases.push_back({1, 8191, 8192, 0, 0, 1, 16383, 2});
        cases.push_back({});
        cases.push_back(std::vector<int64_t>(50, 0));
    }
    for (size_t c = 0; c < cases.size(); ++c) {
        std::vector<int64_t> off{7};
        for (int64_t l : cases[c]) off.push_back(off.back() + l);
        const int64_t n = off.back() + 11;
        unsigned long long s = 17 + c;
        std::vector<float> f(n + 1);
        std::vector<double> d(n + 1);
        std::vector<int> i(n + 1);
        for (auto &v : f) v = draw<float>(s);
        for (auto &v : d) v = draw<double>(s);
        for (auto &v : i) v = draw<int>(s);
        char what[96];
        for (int shift : {0, 1}) {
            std::snprintf(what, sizeof what, "%s case %zu shift %d f32 sum", name, c, shift);
            check<Shape, float, Sum<float>>(what, f, shift, off, 0, 0);
            std::snprintf(what, sizeof what, "%s case %zu shift %d f32->f64 sum", name, c, shift);
            check<Shape, float, Sum<double>>(what, f, shift, off, 0, 0);
            std::snprintf(what, sizeof what, "%s case %zu shift %d f64 max", name, c, shift);
            check<Shape, double, Max<double>>(what, d, shift, off, 0, 0);
            std::snprintf(what, sizeof what, "%s case %zu shift %d i32->i64 sum", name, c, shift);
            check<Shape, int, Sum<long long>>(what, i, shift, off, 0, 0);
        }
    }
    unsigned long long s = 3;
    std::vector<float> f(3 * 5000 + 1);
    for (auto &v : f) v = draw<float>(s);
    for (int64_t len : {int64_t(1), int64_t(3), int64_t(64), int64_t(5000)}) {
        char what[96];
        std::snprintf(what, sizeof what, "%s rows of %lld f32 sum", name, (long long)len);
        check<Shape, float, Sum<float>>(what, f, 1, {}, 3 * 5000 / len, len);
    }
}

int main() {
    shape<FlatTuning>("FlatTuning");
    shape<FlatShape<128, 8, 6, false>>("128 x 8 registers");
    shape<FlatShape<128, 4, 8>>("128 x 4");
    shape<FlatShape<256, 4, 4>>("256 x 4");
    shape<FlatShape<256, 8, 3>>("256 x 8");
    shape<FlatShape<64, 2, 8, false>>("64 x 2 registers");
    std::printf(bad ? "FAILED %d of %d\n" : "all ok (%d checks)\n", bad ? bad : runs, runs);
    return bad != 0;
}
