// reproducible.cuh - the reproducible (determinism="gpu_to_gpu") reductions
// of steps 19 and 20: kernels that sum into rfa accumulators (../rfa.cuh)
// instead of floats, and their launchers.  A float sum (float32 or float64
// accumulator) takes this path; every other combination (integer sums,
// min, max: exact whatever the order) runs the kernels of steps 9 and 17.
#pragma once

#include <cstdlib>

#include "segmented.cuh"
#include "single_pass.cuh"
#include "../rfa.cuh"  // after common.cuh: in the build's namespace

GP_NAMESPACE_BEGIN
namespace reduce {
namespace rep {

// Launch shape of the 1-D kernel: Tuning's block, loads in flight per
// thread and blocks per SM, plus PREFETCH: whether a thread issues the
// loads of its next batch before it deposits the current one (twice the
// registers for loaded data, and the loads never stop while it computes).
// The default: single_pass's 256 threads and 4 vector loads per batch, but
// 4 blocks per SM, not 8: the accumulator and two batches need 64
// registers (ptxas -v, sm_90, every type; __launch_bounds__ caps them at
// 64, without spills), so 8 blocks of 256 would not be resident at once and
// a grid sized for 8 would run in two waves.
// Evidence and the candidates: bench/tune_rfa.cu.
template <int BLOCK_, int UNROLL_, int BLOCKS_PER_SM_, bool PREFETCH_ = false, int LOAD_ = LOAD_LDG>
struct RepTuningT : Tuning<BLOCK_, UNROLL_, BLOCKS_PER_SM_, LOAD_> {
    static constexpr bool PREFETCH = PREFETCH_;
};
using RepTuning = RepTuningT<256, 4, 4, true>;
// float32 values into a float64 accumulator: converted values take two
// registers each, and 4 loads in flight twice over spill at 64 registers.
template <class In, class Acc> struct RepTuningFor { using type = RepTuning; };
template <> struct RepTuningFor<float, double> { using type = RepTuningT<256, 2, 4, true>; };

// A test hook: GPUPRIMS_TEST_GRID=<blocks> overrides the grid of every
// reproducible kernel (1-D: the block count; batched: the blocks of the
// sweep), so tests can check that the bits do not depend on it.
inline int64_t test_grid(int64_t grid) {
    const char *s = getenv("GPUPRIMS_TEST_GRID");
    if (s == nullptr || *s == '\0') return grid;
    const long long g = atoll(s);
    return g >= 1 ? int64_t(g) : grid;
}

template <class Acc>
__device__ inline rfa::State<Acc> shfl_down_state(const rfa::State<Acc> &s, int offset, int width) {
    rfa::State<Acc> r;
    r.index = __shfl_down_sync(FULL_MASK, s.index, offset, width);
    r.flags = __shfl_down_sync(FULL_MASK, s.flags, offset, width);
#pragma unroll
    for (int k = 0; k < rfa::State<Acc>::K; ++k)
        r.bin[k] = __shfl_down_sync(FULL_MASK, (long long)s.bin[k], offset, width);
    return r;
}

// Merge over each aligned group of W lanes (lane 0 of the group holds the
// result).  The merge is exact, so the tree's shape does not matter.
template <int W, class Acc>
__device__ inline rfa::State<Acc> group_merge(rfa::State<Acc> s) {
#pragma unroll
    for (int offset = W / 2; offset > 0; offset >>= 1)
        s = rfa::Rfa<Acc>::merge(s, shfl_down_state(s, offset, W));
    return s;
}

// Merge over a block of BLOCK threads; the result is valid in thread 0.
template <int BLOCK, class Acc>
__device__ inline rfa::State<Acc> block_merge(rfa::State<Acc> s, rfa::State<Acc> *smem) {
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    s = group_merge<WARP>(s);
    if (lane == 0) smem[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < BLOCK / WARP ? smem[lane] : rfa::Rfa<Acc>::identity();
        s = group_merge<WARP>(s);
    }
    return s;
}

// A batch of N values (In: float or double) for one accumulator of Acc
// (registers: every loop over it is unrolled; each value is converted to Acc
// where it is used, so a float batch for a double accumulator holds floats).
// The common case: every |x| is within the accumulator's limit (one compare
// each), and the batch deposits without a branch.
template <class Acc, int N, class In>
__device__ inline bool within(const rfa::Acc<Acc> &a, const In (&x)[N]) {
    const Acc l = a.lim;
    bool ok = true;
#pragma unroll
    for (int i = 0; i < N; ++i) ok &= rfa::abs_of(Acc(x[i])) <= l;
    return ok;
}
// The rare case: a batch holding a new largest magnitude, an Inf or a NaN.
// Inf and NaN go into the flags (as rfa::Acc::widen records them) and are
// replaced by 0, which deposits nothing (its bits(M_k) are taken off again
// at the flush); then the accumulator widens once, to the batch's largest
// finite magnitude.  Afterwards every x is within the limit.  The value is
// the same as widening value by value: the top bin depends only on the
// largest magnitude (rfa.cuh).
template <class Acc, int N, class In>
__device__ inline void admit(rfa::Acc<Acc> &a, In (&x)[N]) {
    using R = rfa::Rfa<Acc>;
    const Acc finite = R::limit(R::J_MAX);  // the largest finite value
    Acc big = Acc(0);
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const Acc v = Acc(x[i]), m = rfa::abs_of(v);
        if (m <= finite) {
            big = big < m ? m : big;
        } else {
            a.flags |= v != v ? rfa::NAN_SEEN : v > Acc(0) ? rfa::POS_INF : rfa::NEG_INF;
            x[i] = In(0);
        }
    }
    if (!(big <= a.lim)) a.widen(big);
}
template <class Acc, int N, class In>
__device__ inline void deposit_batch(rfa::Acc<Acc> &a, In (&x)[N]) {
    if (!within(a, x)) admit(a, x);
#pragma unroll
    for (int i = 0; i < N; ++i) a.deposit(Acc(x[i]));
    a.counted(N, N);
}

template <int LOAD, int U, class V>
__device__ inline void load_batch(V (&r)[U], const V *p, int64_t i, int64_t stride) {
#pragma unroll
    for (int k = 0; k < U; ++k) r[k] = load16<LOAD>(p + i + k * stride);
}
// The values of U 16-byte vectors (4 floats or 2 doubles each).
template <class Acc, int U, class V>
__device__ inline void deposit_vectors(rfa::Acc<Acc> &a, const V (&r)[U]) {
    using In = decltype(V{}.x);
    constexpr int PER = 16 / sizeof(In);
    In x[U * PER];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        if constexpr (PER == 4) {
            x[4 * k] = r[k].x, x[4 * k + 1] = r[k].y, x[4 * k + 2] = r[k].z, x[4 * k + 3] = r[k].w;
        } else {
            x[2 * k] = r[k].x, x[2 * k + 1] = r[k].y;
        }
    }
    deposit_batch(a, x);
}

// A problem's result: the rounded sum, or (GP_STATES_OUT) its state.
template <class Acc>
__device__ inline void write_result(void *out, bool states, const rfa::State<Acc> &s) {
    if (states) *static_cast<rfa::State<Acc> *>(out) = s;
    else *static_cast<Acc *>(out) = rfa::Rfa<Acc>::convert_fast(s);
}

// The 1-D kernel: single_pass's grid-stride loop of 16-byte loads, each
// batch of UNROLL vectors checked against the accumulator's limit once and
// deposited without branches (a batch holding a new largest magnitude, Inf
// or NaN first goes through admit()); with T::PREFETCH the next batch's
// loads are issued before the current batch is deposited.  Blocks merge
// their states by shuffles, write them to `partial`, and the last block
// (ticket) merges the partials and rounds once.  Any grid gives the same
// bits.
template <class In, class Acc, class T>
__global__ void __launch_bounds__(T::BLOCK, T::BLOCKS_PER_SM)
reduce_rfa(const In *__restrict__ in, int64_t n, int64_t head, rfa::State<Acc> *partial,
           unsigned *ticket, void *out, bool states) {
    using V = typename Vec16<In>::type;
    constexpr int BLOCK = T::BLOCK, UNROLL = T::UNROLL;
    constexpr int PER_VEC = sizeof(V) / sizeof(In);
    using R = rfa::Rfa<Acc>;

    const int64_t nvec = (n - head) / PER_VEC;
    const int64_t tail = head + nvec * PER_VEC;
    const int64_t tid = int64_t(blockIdx.x) * BLOCK + threadIdx.x;
    const int64_t stride = int64_t(gridDim.x) * BLOCK;

    rfa::Acc<Acc> acc;
    if (tid < head) acc.add(Acc(in[tid]));
    if (tid < n - tail) acc.add(Acc(in[tail + tid]));

    const V *vin = reinterpret_cast<const V *>(in + head);
    int64_t i = tid;
    if constexpr (T::PREFETCH) {
        if (i + (UNROLL - 1) * stride < nvec) {
            V r[UNROLL];
            load_batch<T::LOAD>(r, vin, i, stride);
            for (;;) {
                const int64_t next = i + UNROLL * stride;
                const bool more = next + (UNROLL - 1) * stride < nvec;
                V nr[UNROLL];
                if (more) load_batch<T::LOAD>(nr, vin, next, stride);
                deposit_vectors<Acc>(acc, r);
                i = next;
                if (!more) break;
#pragma unroll
                for (int k = 0; k < UNROLL; ++k) r[k] = nr[k];  // register moves
            }
        }
    } else {
        for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
            V r[UNROLL];
            load_batch<T::LOAD>(r, vin, i, stride);
            deposit_vectors<Acc>(acc, r);
        }
    }
    for (; i < nvec; i += stride) {
        V r[1];
        load_batch<T::LOAD>(r, vin, i, stride);
        deposit_vectors<Acc>(acc, r);
    }

    __shared__ rfa::State<Acc> warp_states[BLOCK / WARP];
    rfa::State<Acc> s = block_merge<BLOCK>(acc.state(), warp_states);
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) write_result(out, states, s);
        return;
    }
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        __threadfence();
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    s = R::identity();
    for (unsigned j = threadIdx.x; j < gridDim.x; j += BLOCK) {
        rfa::State<Acc> p;
        const volatile rfa::State<Acc> *vp = partial + j;  // past L1: written by other blocks
        p.index = vp->index, p.flags = vp->flags;
#pragma unroll
        for (int k = 0; k < rfa::State<Acc>::K; ++k) p.bin[k] = vp->bin[k];
        s = R::merge(s, p);
    }
    s = block_merge<BLOCK>(s, warp_states);
    if (threadIdx.x == 0) {
        write_result(out, states, s);
        *ticket = 0;
    }
}

// GP_STATES_IN: one block merges n states (a chunked caller's, one a
// chunk) and rounds once.
template <class Acc>
__global__ void __launch_bounds__(256) merge_states(const rfa::State<Acc> *__restrict__ in, int64_t n, Acc *out) {
    __shared__ rfa::State<Acc> warp_states[256 / WARP];
    rfa::State<Acc> s = rfa::Rfa<Acc>::identity();
    for (int64_t j = threadIdx.x; j < n; j += 256) s = rfa::Rfa<Acc>::merge(s, in[j]);
    s = block_merge<256>(s, warp_states);
    if (threadIdx.x == 0) *out = rfa::Rfa<Acc>::convert_fast(s);
}

// Not a float sum: never dispatched here (the launcher of step 19 sends
// those to step 9), so it only has to compile.
template <class In, class Op>
struct SinglePassRep : SinglePassTuned<In, Op> {};

template <class In, class Acc, class T = typename RepTuningFor<In, Acc>::type>
struct SinglePassRepFloat {
    static constexpr int PER_VEC = 16 / sizeof(In);
    static int64_t grid_for(int64_t n) {
        return test_grid(SinglePass<In, Sum<Acc>, T>::grid_for(n));
    }
    static size_t scratch(int64_t n) {
        return align_up(size_t(grid_for(n)) * sizeof(rfa::State<Acc>)) + sizeof(unsigned);
    }
    static cudaError_t run(const gp_reduce_args &a) {
        if (a.states == GP_STATES_IN) {  // in: a.n states of Acc
            GP_LAUNCH((merge_states<Acc>), 1u, 256, 0, a.stream, static_cast<const rfa::State<Acc> *>(a.in), a.n,
                      static_cast<Acc *>(a.out));
            return cudaSuccess;
        }
        const In *in = static_cast<const In *>(a.in);
        const uintptr_t mis = reinterpret_cast<uintptr_t>(in) % 16;
        if (mis % sizeof(In) != 0) return cudaErrorMisalignedAddress;
        int64_t head = int64_t((16 - mis) % 16 / sizeof(In));
        if (head > a.n) head = a.n;
        const int64_t grid = grid_for(a.n);
        auto *partial = static_cast<rfa::State<Acc> *>(a.scratch);
        unsigned *ticket = a.counter;
        if (ticket == nullptr && grid > 1) {
            ticket = reinterpret_cast<unsigned *>(static_cast<char *>(a.scratch) +
                                                  align_up(size_t(grid) * sizeof(rfa::State<Acc>)));
            GP_TRY(cudaMemsetAsync(ticket, 0, sizeof(unsigned), a.stream));
        }
        GP_LAUNCH((reduce_rfa<In, Acc, T>), unsigned(grid), T::BLOCK, 0, a.stream, in, a.n, head,
                  partial, ticket, a.out, a.states == GP_STATES_OUT);
        return cudaSuccess;
    }
};
template <> struct SinglePassRep<float, Sum<float>> : SinglePassRepFloat<float, float> {};

template <> struct SinglePassRep<float, Sum<double>> : SinglePassRepFloat<float, double> {};
template <> struct SinglePassRep<double, Sum<double>> : SinglePassRepFloat<double, double> {};

// Whether a call is a float sum (what steps 19 and 20 make reproducible).
inline bool float_sum(const gp_reduce_args &a) {
    return a.op == GP_SUM && (a.acc_t == GP_FLOAT32 || a.acc_t == GP_FLOAT64);
}

// ------------------------------------------------- axes and segments
// A group of G lanes per problem (G = 1: a thread, for columns; 32: a warp;
// BLOCK: a block, for long rows).  Lane l deposits elements l, l + G, ...
// of its problem, then the group merges; lane 0 rounds and writes.  The
// result depends on the problem's elements only, never on G or the grid.
template <int G, class In, class Acc>
__global__ void __launch_bounds__(seg::Seg::BLOCK)
reduce_rfa_groups(const In *__restrict__ in, seg::Problems P, void *out, bool states) {
    constexpr int BLOCK = seg::Seg::BLOCK;
    constexpr int GROUPS = BLOCK / G;
    using R = rfa::Rfa<Acc>;
    __shared__ rfa::State<Acc> warp_states[BLOCK / WARP];
    const int sub = threadIdx.x % G;
    const int64_t first = int64_t(blockIdx.x) * GROUPS + threadIdx.x / G;
    const int64_t step = int64_t(gridDim.x) * GROUPS;
    // every lane of a block runs the same number of trips (the shuffles and
    // barriers need all of them)
    const int64_t trips = ceil_div<int64_t>(P.count - int64_t(blockIdx.x) * GROUPS, step);
    for (int64_t t = 0; t < trips; ++t) {
        const int64_t p = first + t * step;
        rfa::Acc<Acc> acc;
        if (p < P.count) {
            const seg::Span sp = P.span(p);
            const In *q = in + sp.base;
            int64_t k = sub;
            for (; k + 3 * G < sp.len; k += 4 * G) {
                In x[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) x[j] = __ldg(q + (k + j * G) * sp.stride);
                deposit_batch(acc, x);
            }
            for (; k < sp.len; k += G) acc.add(Acc(__ldg(q + k * sp.stride)));
        }
        rfa::State<Acc> s = acc.state();
        if constexpr (G == BLOCK) {
            s = block_merge<BLOCK>(s, warp_states);
            __syncthreads();  // warp_states is reused next trip
        } else if constexpr (G > 1) {
            s = group_merge<G>(s);
        }
        if (sub == 0 && p < P.count) {
            if (states) static_cast<rfa::State<Acc> *>(out)[p] = s;
            else static_cast<Acc *>(out)[p] = R::convert_fast(s);
        }
    }
}

// Not a float sum: never dispatched here (the launcher of step 20 sends
// those to step 17), so it only has to compile.
template <class In, class Op>
struct GroupsRep {
    static size_t scratch(const gp_reduce_args &, const seg::Problems &) { return 0; }
    static cudaError_t run(const gp_reduce_args &, const seg::Problems &) { return cudaErrorInvalidValue; }
};

template <class In, class Acc>
struct GroupsRepFloat {
    static size_t scratch(const gp_reduce_args &, const seg::Problems &) { return 0; }
    template <int G>
    static cudaError_t launch(const gp_reduce_args &a, const seg::Problems &P) {
        constexpr int GROUPS = seg::Seg::BLOCK / G;
        int64_t grid = ceil_div<int64_t>(P.count, GROUPS);
        const int64_t cap = int64_t(seg::sms()) * seg::Seg::BLOCKS_PER_SM * 4;
        if (grid > cap) grid = cap;
        grid = test_grid(grid);
        GP_LAUNCH((reduce_rfa_groups<G, In, Acc>), unsigned(grid), seg::Seg::BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), P, a.out, a.states == GP_STATES_OUT);
        return cudaSuccess;
    }
    static cudaError_t run(const gp_reduce_args &a, const seg::Problems &P) {
        if (seg::column_like(P) || P.len <= 8) return launch<1>(a, P);
        if (P.len <= seg::Seg::WARP_MAX) return launch<WARP>(a, P);
        return launch<seg::Seg::BLOCK>(a, P);
    }
};

template <> struct GroupsRep<float, Sum<float>> : GroupsRepFloat<float, float> {};
template <> struct GroupsRep<float, Sum<double>> : GroupsRepFloat<float, double> {};
template <> struct GroupsRep<double, Sum<double>> : GroupsRepFloat<double, double> {};

}  // namespace rep
}  // namespace reduce
GP_NAMESPACE_END
