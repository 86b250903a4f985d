// reproducible.cuh - the reproducible (determinism="gpu_to_gpu") scans of
// steps 13 and 14: prefix sums whose every element is the reproducible sum
// of its prefix (../rfa.cuh), and their launchers.  A float sum takes this
// path; every other combination (integer sums, min, max: exact in any
// order) runs the kernels of steps 5 and 12.
//
// What an element is.  Element i of the inclusive scan is the rounding of
// the accumulator state of x[0..i] (element i of the exclusive scan: of
// x[0..i-1], +0.0 for i = 0): a state's rounded value depends on the
// multiset of its inputs alone (rfa.cuh, "WHICH BINS"), so every element
// has the bits of gpuprims.sum(x[:i+1], determinism="gpu_to_gpu"), on every
// GPU, tile shape, grid and chunking.  So the scan is a scan of states
// under the exact merge (associative: any tree gives the same value), each
// prefix state rounded once.
#pragma once

#include <algorithm>
#include <cstdlib>

#include "scan.cuh"
#include "segmented.cuh"
#include "../rfa.cuh"  // after common.cuh: in the build's namespace

GP_NAMESPACE_BEGIN
namespace scanrep {

template <class Acc>
using State = rfa::State<Acc>;

// A test hook: GPUPRIMS_TEST_GRID=<blocks> overrides the grid of every
// reproducible kernel, so tests can check that the bits do not depend on it.
inline int64_t test_grid(int64_t grid) {
    const char *s = getenv("GPUPRIMS_TEST_GRID");
    if (s == nullptr || *s == '\0') return grid;
    const long long g = atoll(s);
    return g >= 1 ? int64_t(g) : grid;
}

// Whether a call is a float sum (what steps 13 and 14 make reproducible).
inline bool float_sum(const gp_scan_args &a) {
    return a.op == GP_SUM && (a.acc_t == GP_FLOAT32 || a.acc_t == GP_FLOAT64);
}

// ------------------------------------------------------- states in a warp
template <class Acc>
__device__ inline State<Acc> shfl_up_state(const State<Acc> &s, int delta) {
    State<Acc> r;
    r.index = __shfl_up_sync(FULL_MASK, s.index, delta);
    r.flags = __shfl_up_sync(FULL_MASK, s.flags, delta);
#pragma unroll
    for (int k = 0; k < State<Acc>::K; ++k) r.bin[k] = __shfl_up_sync(FULL_MASK, (long long)s.bin[k], delta);
    return r;
}
template <class Acc>
__device__ inline State<Acc> shfl_xor_state(const State<Acc> &s, int mask) {
    State<Acc> r;
    r.index = __shfl_xor_sync(FULL_MASK, s.index, mask);
    r.flags = __shfl_xor_sync(FULL_MASK, s.flags, mask);
#pragma unroll
    for (int k = 0; k < State<Acc>::K; ++k) r.bin[k] = __shfl_xor_sync(FULL_MASK, (long long)s.bin[k], mask);
    return r;
}
template <class Acc>
__device__ inline State<Acc> shfl_state(const State<Acc> &s, int src) {
    State<Acc> r;
    r.index = __shfl_sync(FULL_MASK, s.index, src);
    r.flags = __shfl_sync(FULL_MASK, s.flags, src);
#pragma unroll
    for (int k = 0; k < State<Acc>::K; ++k) r.bin[k] = __shfl_sync(FULL_MASK, (long long)s.bin[k], src);
    return r;
}
// Inclusive scan of the lanes' states (Hillis-Steele over the warp).
template <class Acc>
__device__ inline State<Acc> warp_inclusive(State<Acc> s, int lane) {
#pragma unroll
    for (int d = 1; d < WARP; d <<= 1) {
        const State<Acc> y = shfl_up_state(s, d);
        if (lane >= d) s = rfa::Rfa<Acc>::merge(y, s);
    }
    return s;
}
// Every lane gets the merge of all lanes' states (a butterfly).
template <class Acc>
__device__ inline State<Acc> warp_all(State<Acc> s) {
#pragma unroll
    for (int m = 1; m < WARP; m <<= 1) s = rfa::Rfa<Acc>::merge(s, shfl_xor_state(s, m));
    return s;
}

// The deposits of a thread's items (the batch checked against the
// accumulator's limit once; a batch with a new largest magnitude, Inf or
// NaN goes value by value).
template <int ITEMS, class Acc>
__device__ inline void add_items(rfa::Acc<Acc> &a, const Acc (&x)[ITEMS]) {
    bool ok = true;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) ok &= rfa::abs_of(x[k]) <= a.lim;
    if (ok) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) a.deposit(x[k]);
        a.counted(ITEMS, ITEMS);
    } else {
#pragma unroll 1
        for (int k = 0; k < ITEMS; ++k) a.add(x[k]);
    }
}

// ------------------------------------------------ the tile status of 1-D
// Per tile: a status word (0: nothing yet; 1: the tile's own state, its
// aggregate; 2: its inclusive prefix) and the two 32-byte states.  A state
// is stored, __threadfence(), then its status; a reader reads the status,
// __threadfence(), then the state past L1 - the look-back protocol for
// wide values (lookback.cuh, Slots), here with a 32-byte value.
template <class Acc>
struct TileStates {
    unsigned *status;
    State<Acc> *agg, *inc;
    static size_t zeroed_bytes(int64_t tiles) { return align_up(size_t(tiles) * sizeof(unsigned)); }
    static size_t bytes(int64_t tiles) { return zeroed_bytes(tiles) + 2 * size_t(tiles) * sizeof(State<Acc>); }
    TileStates(char *p, int64_t tiles)
        : status(reinterpret_cast<unsigned *>(p)),
          agg(reinterpret_cast<State<Acc> *>(p + zeroed_bytes(tiles))), inc(agg + tiles) {}

    __device__ static void store(State<Acc> *dst, const State<Acc> &s) {
        uint4 w[2];
        memcpy(w, &s, sizeof w);
        __stcg(reinterpret_cast<uint4 *>(dst), w[0]);
        __stcg(reinterpret_cast<uint4 *>(dst) + 1, w[1]);
    }
    __device__ static State<Acc> load(const State<Acc> *src) {
        uint4 w[2];
        w[0] = __ldcg(reinterpret_cast<const uint4 *>(src));
        w[1] = __ldcg(reinterpret_cast<const uint4 *>(src) + 1);
        State<Acc> s;
        memcpy(&s, w, sizeof w);
        return s;
    }
    __device__ void publish(int64_t t, const State<Acc> &s, unsigned what) const {
        store(what == 2 ? inc + t : agg + t, s);
        __threadfence();
        reinterpret_cast<volatile unsigned *>(status)[t] = what;
    }
    __device__ unsigned poll(int64_t t) const { return reinterpret_cast<volatile unsigned *>(status)[t]; }
};

// The prefix of tile t > 0 (the whole warp calls it, after the tile's
// aggregate is out): lane l looks at tile t-1-l, the warp waits until the
// 32 tiles have published something, merges the states up to the nearest
// inclusive prefix (lanes past it give the identity), and steps back 32
// tiles while no inclusive prefix was among them - Merrill and Garland's
// look-back.  Which tiles it happens to combine varies from run to run;
// the value of the merge does not (exact integer additions), so neither
// do the bits.
template <class Acc>
__device__ inline State<Acc> look_back(const TileStates<Acc> &ts, int64_t t, int lane) {
    State<Acc> run = rfa::Rfa<Acc>::identity();
    for (int64_t last = t - 1;; last -= WARP) {
        const int64_t p = last - lane;
        unsigned f = p >= 0 ? ts.poll(p) : 2u;
        while (!__all_sync(FULL_MASK, f != 0u)) {
            lookback::spin_pause<20>();
            if (f == 0u) f = ts.poll(p);
        }
        __threadfence();
        State<Acc> v = rfa::Rfa<Acc>::identity();
        const unsigned incl = __ballot_sync(FULL_MASK, f == 2u);
        const int stop = incl ? __ffs(int(incl)) - 1 : WARP - 1;
        if (lane <= stop && p >= 0) v = TileStates<Acc>::load(f == 2u ? ts.inc + p : ts.agg + p);
        run = rfa::Rfa<Acc>::merge(run, warp_all(v));
        if (incl) return run;
    }
}

// ---------------------------------------------------------- the 1-D kernel
// Persistent blocks take tiles from a counter (in order, so a tile's
// predecessors are taken by running blocks).  A tile: each thread loads
// ITEMS consecutive elements and sums them into an accumulator (pass 1);
// the block scans the threads' states (exclusive) and merges the tile's
// aggregate; warp 0 publishes it, looks back for the tile's prefix and
// publishes the inclusive prefix; then each thread starts from the prefix
// state merged with its exclusive state and, element by element, deposits
// and rounds (pass 2).  carry_in: the state before element 0 (tile 0's
// prefix); carry_out receives the state of everything (the last tile's
// inclusive prefix).
struct Shape {
    static constexpr int BLOCK = 256, ITEMS = 8, BLOCKS_PER_SM = 3;
    static constexpr int TILE = BLOCK * ITEMS;
};
// 8-byte accumulators: 2 blocks an SM (at 3, ptxas -v for sm_90 caps them at
// 80 registers and they spill).
template <class Acc>
constexpr int blocks_per_sm() { return sizeof(Acc) == 4 ? Shape::BLOCKS_PER_SM : 2; }

template <class In, class Acc>
__global__ void __launch_bounds__(Shape::BLOCK, blocks_per_sm<Acc>())
scan_rfa(const In *__restrict__ in, Acc *__restrict__ out, int64_t n, bool inclusive, bool vec_in, bool vec_out,
         unsigned *counter, TileStates<Acc> ts, int64_t tiles, const State<Acc> *carry_in, State<Acc> *carry_out) {
    constexpr int BLOCK = Shape::BLOCK, ITEMS = Shape::ITEMS, WARPS = BLOCK / WARP;
    using R = rfa::Rfa<Acc>;
    __shared__ State<Acc> warp_total[WARPS];
    __shared__ State<Acc> tile_prefix;
    __shared__ unsigned long long taken;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;

    for (;;) {
        if (threadIdx.x == 0) taken = atomicAdd(reinterpret_cast<unsigned long long *>(counter), 1ull);
        __syncthreads();
        const int64_t t = int64_t(taken);
        if (t >= tiles) break;
        const int64_t first = t * Shape::TILE + int64_t(threadIdx.x) * ITEMS;
        Acc x[ITEMS];
        scan::load_items<ITEMS, Sum<Acc>>(in, first, n, vec_in, x);  // 0 past n: deposits nothing

        // pass 1: the thread's state, the block's exclusive scan of them
        rfa::Acc<Acc> a;
        add_items(a, x);
        const State<Acc> mine = warp_inclusive(a.state(), lane);
        State<Acc> before = shfl_up_state(mine, 1);
        if (lane == 0) before = R::identity();
        if (lane == WARP - 1) warp_total[warp] = mine;
        __syncthreads();
        State<Acc> agg = R::identity(), lower = R::identity();
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == warp) lower = agg;
            agg = R::merge(agg, warp_total[w]);
        }
        before = R::merge(lower, before);

        // the tile's prefix: look-back by warp 0
        if (warp == 0) {
            State<Acc> prefix = R::identity();
            if (t == 0) {
                if (carry_in != nullptr) prefix = *carry_in;
            } else {
                if (lane == 0) ts.publish(t, agg, 1u);
                prefix = look_back(ts, t, lane);
            }
            if (lane == 0) {
                const State<Acc> inc = R::merge(prefix, agg);
                ts.publish(t, inc, 2u);
                tile_prefix = prefix;
                if (carry_out != nullptr && t == tiles - 1) *carry_out = inc;
            }
        }
        __syncthreads();

        // pass 2: every element's state, rounded
        rfa::Acc<Acc> b;
        b.load(R::merge(tile_prefix, before));
        Acc y[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (!inclusive) y[k] = R::convert_fast(b.state());
            b.add(x[k]);
            if (inclusive) y[k] = R::convert_fast(b.state());
        }
        scan::store_items<ITEMS, Acc>(out, first, n, vec_out, y);
        __syncthreads();  // warp_total, tile_prefix and taken are reused
    }
}

// Not a float sum: never dispatched here (the launcher of step 13 sends
// those to step 5), so it only has to compile.
template <class In, class Op>
struct ScanRep {
    static size_t scratch(int64_t) { return 0; }
    static cudaError_t run(const gp_scan_args &) { return cudaErrorInvalidValue; }
};

template <class In, class Acc>
struct ScanRepFloat {
    static int64_t tiles(int64_t n) { return ceil_div<int64_t>(n, Shape::TILE); }
    static size_t scratch(int64_t n) { return 256 + TileStates<Acc>::bytes(tiles(n)); }
    static cudaError_t run(const gp_scan_args &a) {
        const int64_t nt = tiles(a.n);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(cudaMemsetAsync(p, 0, 256 + TileStates<Acc>::zeroed_bytes(nt), a.stream));
        DeviceFacts d;
        GP_TRY(device_facts(d));
        const int64_t grid = test_grid(std::min<int64_t>(nt, int64_t(d.sms) * blocks_per_sm<Acc>()));
        GP_LAUNCH((scan_rfa<In, Acc>), unsigned(grid), Shape::BLOCK, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), a.n, a.inclusive != 0, scan::aligned16<In>(a.in),
                  scan::aligned16<Acc>(a.out), reinterpret_cast<unsigned *>(p), TileStates<Acc>(p + 256, nt), nt,
                  static_cast<const State<Acc> *>(a.carry_in), static_cast<State<Acc> *>(a.carry_out));
        return cudaSuccess;
    }
};
template <class In> struct ScanRep<In, Sum<float>> : ScanRepFloat<In, float> {};
template <class In> struct ScanRep<In, Sum<double>> : ScanRepFloat<In, double> {};

// ------------------------------------------------- axes and segments
// A group of G lanes per problem (G = 1: a thread, for columns and many
// short problems; 32: a warp).  The group walks its problem in rounds of G
// elements with a running state: each lane deposits its element, the group
// scans the lanes' states, merges the running state in front, and each
// lane rounds its element's state.  Every element is the rounding of the
// state of its problem's prefix: the bits of the 1-D scan of the problem.
template <int G, class In, class Acc>
__global__ void __launch_bounds__(256)
scan_rfa_groups(const In *__restrict__ in, Acc *__restrict__ out, seg::Layout L, bool inclusive) {
    using R = rfa::Rfa<Acc>;
    constexpr int GROUPS = 256 / G;
    const int sub = threadIdx.x % G;
    const int64_t first = int64_t(blockIdx.x) * GROUPS + threadIdx.x / G;
    const int64_t step = int64_t(gridDim.x) * GROUPS;
    // every lane of a warp runs the same trips and rounds (the shuffles need all of them)
    const int64_t trips = ceil_div<int64_t>(L.problems - int64_t(blockIdx.x) * GROUPS, step);
    for (int64_t trip = 0; trip < trips; ++trip) {
        const int64_t p = first + trip * step;
        seg::Problem P{0, 0, 0, 0, 0};
        if (p < L.problems) P = L.problem(p);
        if constexpr (G == 1) {
            rfa::Acc<Acc> a;
            for (int64_t k = 0; k < P.len; ++k) {
                const Acc x = Acc(in[P.in0 + k * P.in_step]);
                Acc y;
                if (!inclusive) y = R::convert_fast(a.state());
                a.add(x);
                if (inclusive) y = R::convert_fast(a.state());
                out[P.out0 + k * P.out_step] = y;
            }
        } else {
            int64_t len = P.len;
#pragma unroll
            for (int m = 1; m < WARP; m <<= 1) {
                const int64_t other = __shfl_xor_sync(FULL_MASK, (long long)len, m);
                len = other > len ? other : len;
            }
            State<Acc> run = R::identity();
            for (int64_t k0 = 0; k0 < len; k0 += WARP) {
                const int64_t k = k0 + sub;
                const bool here = k < P.len;
                const Acc x = here ? Acc(in[P.in0 + k * P.in_step]) : Acc(0);
                rfa::Acc<Acc> a;
                a.add(x);
                const State<Acc> inc = warp_inclusive(a.state(), sub);
                State<Acc> exc = shfl_up_state(inc, 1);
                if (sub == 0) exc = R::identity();
                if (here) out[P.out0 + k * P.out_step] = R::convert_fast(R::merge(run, inclusive ? inc : exc));
                run = R::merge(run, shfl_state(inc, WARP - 1));
            }
        }
    }
}

template <class In, class Op>
struct GroupsRep {
    static size_t scratch(const gp_scan_args &) { return 0; }
    static cudaError_t run(const gp_scan_args &) { return cudaErrorInvalidValue; }
};

template <class In, class Acc>
struct GroupsRepFloat {
    static size_t scratch(const gp_scan_args &) { return 0; }
    template <int G>
    static cudaError_t launch(const gp_scan_args &a, const seg::Layout &L) {
        constexpr int GROUPS = 256 / G;
        DeviceFacts d;
        GP_TRY(device_facts(d));
        int64_t grid = std::min<int64_t>(ceil_div<int64_t>(L.problems, GROUPS), int64_t(d.sms) * 8);
        grid = test_grid(grid);
        GP_LAUNCH((scan_rfa_groups<G, In, Acc>), unsigned(grid), 256, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), L, a.inclusive != 0);
        return cudaSuccess;
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout L = Layout_of(a);
        const int64_t mean = L.problems > 0 ? L.elements() / L.problems : 0;
        // a thread a problem where they are short, or many and side by side
        // (columns: neighbouring threads read neighbouring addresses)
        if (mean <= 8 || (L.offsets == nullptr && L.inner > 1 && L.problems >= 2048)) return launch<1>(a, L);
        return launch<WARP>(a, L);
    }
    static seg::Layout Layout_of(const gp_scan_args &a) { return seg::Layout::of(a); }
};
template <class In> struct GroupsRep<In, Sum<float>> : GroupsRepFloat<In, float> {};
template <class In> struct GroupsRep<In, Sum<double>> : GroupsRepFloat<In, double> {};

}  // namespace scanrep
GP_NAMESPACE_END
