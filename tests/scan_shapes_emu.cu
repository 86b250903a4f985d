// scan_shapes_emu.cu - the look-back scan's optional shapes on the
// emulator (tests/test_scan_shapes.py builds and runs it): HOLD (the tile
// waits for its prefix in shared memory) and FENCED (8-byte totals behind a
// flag and a fence) must give the bits of the library's shape with the same
// tile, inclusive and exclusive; integer sums exactly the host's, float
// sums within 4 eps * log2 n of the prefix's sum of |x| (a long double
// host scan).  Prints "all ok" and exits 0, or says what differs.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "scan/decoupled_lookback.cuh"
using namespace gp; using namespace gp::lookback;
static int bad = 0;
template <class L, class In, class Acc>
std::vector<Acc> run(const std::vector<In> &h, int inclusive) {
    const int64_t n = h.size();
    In *in; Acc *out; void *scr;
    in = (In *)aligned_alloc(256, (n * sizeof(In) + 255) / 256 * 256); out = (Acc *)aligned_alloc(256, (n * sizeof(Acc) + 255) / 256 * 256);
    memcpy(in, h.data(), n * sizeof(In));
    gp_scan_args a{}; a.in = in; a.out = out; a.n = n; a.inclusive = inclusive;
    a.scratch_bytes = L::scratch(n); scr = aligned_alloc(256, (a.scratch_bytes + 255) / 256 * 256); a.scratch = scr;
    DeviceFacts d; device_facts(d);
    if (L::run(a, d) != cudaSuccess) { std::printf("launch failed\n"); bad++; }
    std::vector<Acc> r(n);
    memcpy(r.data(), out, n * sizeof(Acc));
    free(in); free(out); free(scr);
    return r;
}
template <class In, class Acc, class A, class B>
void cmp(const char *what, int64_t n, int inclusive) {
    std::vector<In> h(n);
    unsigned long long s = 99;
    for (auto &v : h) { s = s * 6364136223846793005ull + 1442695040888963407ull; long long r = (long long)(s >> 33) - (1ll << 30); v = std::is_floating_point<In>::value ? In(double(r | 1) / double(1 << 30)) : In(r | 1); }
    auto x = run<LookbackWith<A, In, Sum<Acc>>, In, Acc>(h, inclusive);
    auto y = run<LookbackWith<B, In, Sum<Acc>>, In, Acc>(h, inclusive);
    bool same = std::memcmp(x.data(), y.data(), n * sizeof(Acc)) == 0;
    bool exact = true;
    if (std::is_floating_point<Acc>::value) {
        long double acc = 0, aacc = 0;
        for (int64_t i = 0; i < n; ++i) {
            const long double before = acc;
            acc += h[i];
            aacc += h[i] < 0 ? -(long double)h[i] : (long double)h[i];
            const long double want = inclusive ? acc : before, err = x[i] > want ? x[i] - want : want - x[i];
            if (err > 4 * 1.11e-16 * std::fmax(1.0, std::log2(double(n))) * aacc) { exact = false; break; }
        }
    } else { Acc acc = 0; for (int64_t i = 0; i < n; ++i) { Acc before = acc; acc += Acc(h[i]); if (x[i] != (inclusive ? acc : before)) { exact = false; break; } } }
    std::printf("%-40s n=%lld %s: %s%s\n", what, (long long)n, inclusive ? "incl" : "excl", same ? "same bits" : "DIFFER", exact ? "" : " NOT EXACT");
    bad += !same || !exact;
}
int main() {
    using Lib = LookbackShape<2, 16, 3, 4>;
    for (int inc : {1, 0})
        for (int64_t n : {int64_t(1), int64_t(1023), int64_t(40 * 1024 + 3), int64_t(33 * 33 * 1024 + 5)}) {
            cmp<double, double, Lib, LookbackShape<2, 16, 2, 6, true, true, true, true>>("f64 hold s2b6 vs lib", n, inc);
            cmp<double, double, Lib, LookbackShape<2, 16, 3, 4, true, true, true, false, true>>("f64 fenced vs lib", n, inc);
            cmp<long long, long long, Lib, LookbackShape<2, 16, 2, 6, true, true, false, true>>("i64 hold no mid vs lib", n, inc);
            cmp<int, long long, LookbackShape<2, 8, 4, 4>, LookbackShape<2, 8, 4, 6, true, true, true, true>>("i32->i64 hold vs lib", n, inc);
            cmp<float, double, LookbackShape<2, 8, 4, 4>, LookbackShape<2, 8, 4, 6, false, true, true, true>>("f32->f64 hold cp.async vs lib", n, inc);
        }
    std::printf(bad ? "FAILED %d\n" : "all ok\n", bad);
    return bad != 0;
}
