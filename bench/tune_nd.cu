// tune_nd.cu - evidence for nd_tiled's tile shapes and tile orders
// (cuda/transpose/nd.cuh: PackedTuning for 1-byte elements, NdTuning for
// 4- and 8-byte ones; 09_nd_tiled.cu: the 32-bit tile index, the grouped
// batch order; step 9).
//
// Times nd_tiled's kernels on bench_transpose's any-rank cases (int8 at
// 2^28 elements, float16, float32 and float64 at 2^26; int8 matrices) for
// several tile shapes, block sizes, tile orders and index paths, against
// a device-to-device copy of the same bytes in the same run: CUDA events
// around the launch only, L2 overwritten before every run, median of REPEAT
// runs; every output checked against the first row's.  Build and run on
// the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda bench/tune_nd.cu -o /tmp/tnd && /tmp/tnd   (/tmp/tnd int8: int8 only)
#include <cstring>
#include <string>
#include <vector>

#include "tune_common.cuh"

#include "../cuda/transpose/09_nd_tiled.cu"

using namespace gp;

constexpr int REPEAT = 20;

// PackedTuning with another side along a (TA positions) and block size.
template <class T, int TA_, int BLOCK_, int TB_BYTES = 128>
struct Packed {
    static constexpr int BLOCK = BLOCK_;
    static constexpr int P = 4 / int(sizeof(T)), VEC = 16 / int(sizeof(T));
    static constexpr int TA = TA_, TB = TB_BYTES / int(sizeof(T));
    static constexpr int W = TB / P;
    static constexpr int UNITS = (TB / P) * (TA / VEC) / BLOCK;
};

struct Case {
    std::vector<int64_t> shape;
    std::vector<int> perm;
};

gp_transpose_args args_of(const Case &c, const void *in, void *out) {
    gp_transpose_args a{};
    a.in = in;
    a.out = out;
    a.rank = int(c.shape.size());
    a.rows = -1;
    int64_t step = 1;
    for (int k = a.rank - 1; k >= 0; --k) {
        a.shape[k] = c.shape[k];
        a.strides[k] = step;
        a.perm[k] = c.perm[k];
        step *= c.shape[k];
    }
    return a;
}

std::string name_of(const Case &c) {
    std::string s;
    for (size_t k = 0; k < c.shape.size(); ++k) s += (k ? "x" : "") + std::to_string(c.shape[k]);
    s += " (";
    for (size_t k = 0; k < c.perm.size(); ++k) s += (k ? "," : "") + std::to_string(c.perm[k]);
    return s + ")";
}

template <class T>
struct Bench {
    const T *in;
    T *out, *ref;
    size_t bytes;
    void *flush;
    size_t fb;
    float copy_ms;

    template <class F>
    void row(const char *label, const gp_transpose_args &a, F launch, bool first) {
        CHECK(cudaMemset(out, 0xab, bytes));
        const float ms = median_ms([&] { launch(a); CHECK(cudaGetLastError()); }, flush, fb, REPEAT);
        bool same = true;
        if (first) {
            CHECK(cudaMemcpy(ref, out, bytes, cudaMemcpyDeviceToDevice));
        } else {
            std::vector<unsigned char> h1(bytes), h2(bytes);
            CHECK(cudaMemcpy(h1.data(), out, bytes, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(h2.data(), ref, bytes, cudaMemcpyDeviceToHost));
            same = std::memcmp(h1.data(), h2.data(), bytes) == 0;
        }
        std::printf("| %-24s | %8.4f | %6.1f | %s |\n", label, ms, 100.0 * copy_ms / ms, same ? "same" : "DIFFERS");
    }
};

// How a plan's tiles are handed out: `cap` blocks at most (0: a block a
// tile, the library's way; else each block loops over tiles, gridDim apart),
// and `flip`: the batch axes taken fastest-first in the opposite order (the
// library takes the output's slowest-first list, its last axis fastest).
int g_sms = 0;
struct Order {
    int per_sm;  // 0: a block a tile
    bool flip;
    int groups = 0;  // the batch in groups of groups x groups (NdTiled::grouped)
    bool wide_index = false;  // tile_at's 64-bit divisions instead of its 32-bit ones
};

// The plan in the order o, then with the divisors of tile_at's 32-bit path
// (as the library's launchers do last), or without them (wide_index).
inline TileArgs ordered(TileArgs t, Order o) {
    if (o.groups > 0) t = NdTiled<char>::grouped(t, o.groups);
    if (o.flip)
        for (int i = 0, j = t.batch.rank - 1; i < j; ++i, --j) {
            std::swap(t.batch.dim[i], t.batch.dim[j]);
            std::swap(t.batch.in[i], t.batch.in[j]);
            std::swap(t.batch.out[i], t.batch.out[j]);
        }
    t = NdTiled<char>::narrowed(t);
    if (o.wide_index) t.narrow = false;
    return t;
}

inline unsigned grid_of(const TileArgs &t, Order o) {
    int64_t g = t.blocks < MAX_BLOCKS ? t.blocks : MAX_BLOCKS;
    if (o.per_sm > 0 && g > int64_t(g_sms) * o.per_sm) g = int64_t(g_sms) * o.per_sm;
    return unsigned(g);
}

template <class T, int TA, int BLOCK, int TB_BYTES = 128>
void packed(Bench<T> &b, const gp_transpose_args &a, int A, int B, const char *label, bool first, Order o = {}) {
    using Tn = Packed<T, TA, BLOCK, TB_BYTES>;
    const TileArgs t = ordered(NdTiled<T>::plan_tile(a, A, B, Tn::TA, Tn::TB), o);
    const unsigned grid = grid_of(t, o);
    b.row(label, a, [&](const gp_transpose_args &x) {
        transpose_nd_packed<T, Tn><<<grid, Tn::BLOCK>>>(static_cast<const T *>(x.in), static_cast<T *>(x.out), t);
    }, first);
}

template <class T, int TILE, int BLOCK>
void tiled(Bench<T> &b, const gp_transpose_args &a, int A, int B, const char *label, bool first, Order o = {}) {
    constexpr int VEC = 16 / sizeof(T);
    const TileArgs t = ordered(NdTiled<T>::plan_tile(a, A, B, TILE, TILE), o);
    const unsigned grid = grid_of(t, o);
    b.row(label, a, [&](const gp_transpose_args &x) {
        transpose_nd_tiled<T, VEC, TILE, BLOCK><<<grid, BLOCK>>>(static_cast<const T *>(x.in),
                                                                 static_cast<T *>(x.out), t);
    }, first);
}

template <class T, class Rows>
void run_cases(const char *type, const std::vector<Case> &cases, int64_t n, void *flush, size_t fb, Rows rows) {
    const size_t bytes = size_t(n) * sizeof(T);
    std::vector<unsigned char> h(bytes);
    unsigned s = 4242;
    for (auto &v : h) { s = s * 1664525u + 1013904223u; v = (unsigned char)(s >> 24); }
    T *in, *out, *ref;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMalloc(&ref, bytes));
    CHECK(cudaMemcpy(in, h.data(), bytes, cudaMemcpyHostToDevice));
    for (const Case &c : cases) {
        size_t m = sizeof(T);  // this case's bytes (at most n elements)
        for (int64_t d : c.shape) m *= size_t(d);
        Bench<T> b{in, out, ref, m, flush, fb, 0.f};
        b.copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(out, in, m, cudaMemcpyDeviceToDevice, 0)); }, flush, fb, REPEAT);
        const gp_transpose_args a = args_of(c, in, out);
        int A = a.rank - 1;  // C-contiguous: the last axis is the fastest
        const int B = a.perm[a.rank - 1];
        std::printf("\n%s %s: copy roof %.4f ms\n\n| config | ms | %% roof | output |\n|---|---:|---:|---|\n", type,
                    name_of(c).c_str(), b.copy_ms);
        rows(b, a, A, B);
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    CHECK(cudaFree(ref));
}

int main(int argc, char **argv) {
    const bool int8_only = argc > 1 && std::string(argv[1]) == "int8";  // `tnd int8`: the int8 cases alone
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    size_t fb = 0;
    void *flush = l2_flush_buffer(p, fb);
    std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    g_sms = p.multiProcessorCount;
    const Order before{0, false, 0, true};
    const std::vector<Case> i8 = {{{1024, 512, 512}, {2, 1, 0}}, {{1024, 512, 512}, {0, 2, 1}},
                                  {{128, 128, 128, 128}, {3, 2, 1, 0}},
                                  {{32, 32, 32, 32, 16, 16}, {5, 4, 3, 2, 1, 0}},
                                  {{4000, 6000}, {1, 0}}, {{8192, 8192}, {1, 0}}, {{16384, 16384}, {1, 0}}};
    run_cases<unsigned char>("int8", i8, int64_t(1) << 28, flush, fb, [&](auto &b, auto &a, int A, int B) {
        packed<unsigned char, 128, 128>(b, a, A, B, "64-bit index (before)", true, before);
        packed<unsigned char, 128, 128>(b, a, A, B, "32-bit index (now)", false);
        packed<unsigned char, 128, 128>(b, a, A, B, "now, groups 8 x 8", false, {0, false, 8});
        packed<unsigned char, 256, 128>(b, a, A, B, "now, TA 256", false);
        packed<unsigned char, 256, 128>(b, a, A, B, "now, TA 256, groups 8 x 8", false, {0, false, 8});
    });
    if (int8_only) return 0;
    // float32 and float64: the same cases
    const std::vector<Case> wide = {{{512, 256, 512}, {2, 1, 0}}, {{512, 256, 512}, {0, 2, 1}},
                                    {{64, 8192, 128}, {0, 2, 1}}, {{64, 128, 64, 128}, {3, 2, 1, 0}},
                                    {{16, 16, 16, 16, 16, 16}, {5, 4, 3, 2, 1, 0}}};
    run_cases<float>("float32", wide, int64_t(1) << 26, flush, fb, [&](auto &b, auto &a, int A, int B) {
        tiled<float, 64, 256>(b, a, A, B, "64-bit index (before)", true, before);
        tiled<float, 64, 256>(b, a, A, B, "32-bit index (now)", false);
    });
    const std::vector<Case> f2 = {{{512, 256, 512}, {0, 2, 1}}, {{64, 8192, 128}, {0, 2, 1}},
                                  {{64, 128, 64, 128}, {3, 2, 1, 0}}, {{16, 16, 16, 16, 16, 16}, {5, 4, 3, 2, 1, 0}}};
    run_cases<unsigned short>("float16", f2, int64_t(1) << 26, flush, fb, [&](auto &b, auto &a, int A, int B) {
        packed<unsigned short, 128, 128>(b, a, A, B, "64-bit index (before)", true, before);
        packed<unsigned short, 128, 128>(b, a, A, B, "32-bit index (now)", false);
        packed<unsigned short, 128, 128>(b, a, A, B, "now, groups 8 x 8", false, {0, false, 8});
    });
    run_cases<double>("float64", wide, int64_t(1) << 26, flush, fb, [&](auto &b, auto &a, int A, int B) {
        tiled<double, 32, 128>(b, a, A, B, "64-bit index (before)", true, before);
        tiled<double, 32, 128>(b, a, A, B, "32-bit index (now)", false);
    });
    return 0;
}

