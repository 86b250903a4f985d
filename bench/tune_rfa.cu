// tune_rfa.cu - the evidence for RepTuning and the deposit loop of the
// reproducible 1-D reduction (cuda/reduce/reproducible.cuh, step 19).
//
// Times, in one run, float32 and float64 sums of 2^20, 2^24 and 2^28 random
// values in [-1, 1):
//   * single_pass (step 9): what determinism="run_to_run" runs, the
//     reference time of every ratio;
//   * cub::DeviceReduce::Reduce with CCCL's gpu_to_gpu requirement (CCCL >=
//     3.5; skipped with an older one);
//   * per_value: the 1-D kernel whose batches holding a new largest
//     magnitude go value by value through rfa::Acc::add.  Its cold loop
//     indexes the batch's vectors at run time, so ptxas keeps them in local
//     memory: 4 16-byte local stores per batch, on every batch;
//   * the step 19 kernel (admit(): one widening per batch, the deposits
//     without a branch) under several RepTuningT shapes.
// CUDA events around the launch only, L2 overwritten before every run,
// median of REPEAT runs (tune_common.cuh).  Every reproducible candidate
// must give per_value's bits ("bits" column), on the timed data and on
// mixed magnitudes (2^-60 to 2^60, which widens the accumulators often),
// with an Inf, and against the host's rfa::sum at 2^20; the program exits
// with 1 where one does not.  Build and run on the GPU machine (the include
// folder of the nvidia-cuda-cccl wheel first, as the library's build does):
//   CCCL=$(python3 -c "import sys,glob; print(sorted(g for p in sys.path for g in glob.glob(p+'/nvidia/cu*/include/cccl'))[-1])")
//   nvcc -O3 -std=c++17 -arch=sm_90 -I"$CCCL" -Icuda bench/tune_rfa.cu -o /tmp/tune_rfa && /tmp/tune_rfa
#include <cstring>
#include <vector>

#include "tune_common.cuh"

#include <cub/device/device_reduce.cuh>

#include "../cuda/cub_env.cuh"
#include "../cuda/reduce/reproducible.cuh"

using namespace gp;  // the variants' kernels and tunables live in gp::

constexpr int REPEAT = 30;

namespace gp {
namespace reduce {
namespace rep {
namespace per_value {  // the per_value candidate (see the header)

template <class Acc, class V>
__device__ inline void deposit_vec(rfa::Acc<Acc> &a, const V &v) {
    if constexpr (sizeof(v.x) == 4) {
        a.deposit(Acc(v.x)), a.deposit(Acc(v.y)), a.deposit(Acc(v.z)), a.deposit(Acc(v.w));
    } else {
        a.deposit(Acc(v.x)), a.deposit(Acc(v.y));
    }
}
template <class Acc, class V>
__device__ inline bool within(const rfa::Acc<Acc> &a, const V &v) {
    const Acc l = a.lim;
    if constexpr (sizeof(v.x) == 4) {
        return (rfa::abs_of(Acc(v.x)) <= l) & (rfa::abs_of(Acc(v.y)) <= l) & (rfa::abs_of(Acc(v.z)) <= l) &
               (rfa::abs_of(Acc(v.w)) <= l);
    } else {
        return (rfa::abs_of(Acc(v.x)) <= l) & (rfa::abs_of(Acc(v.y)) <= l);
    }
}
template <class Acc, class V>
__device__ inline void add_vec(rfa::Acc<Acc> &a, const V &v) {
    if constexpr (sizeof(v.x) == 4) {
        a.add(Acc(v.x)), a.add(Acc(v.y)), a.add(Acc(v.z)), a.add(Acc(v.w));
    } else {
        a.add(Acc(v.x)), a.add(Acc(v.y));
    }
}

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
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        V r[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) r[k] = load16<T::LOAD>(vin + i + k * stride);
        bool ok = true;
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) ok &= within(acc, r[k]);
        if (ok) {
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) deposit_vec(acc, r[k]);
            acc.counted(UNROLL * PER_VEC, UNROLL * PER_VEC);
        } else {
#pragma unroll 1
            for (int k = 0; k < UNROLL; ++k) add_vec(acc, r[k]);
        }
    }
    for (; i < nvec; i += stride) add_vec(acc, load16<T::LOAD>(vin + i));

    __shared__ rfa::State<Acc> warp_states[BLOCK / WARP];
    rfa::State<Acc> s = block_merge<BLOCK>(acc.state(), warp_states);
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) *static_cast<Acc *>(out) = R::convert(s);
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
        const volatile rfa::State<Acc> *vp = partial + j;
        p.index = vp->index, p.flags = vp->flags;
#pragma unroll
        for (int k = 0; k < rfa::State<Acc>::K; ++k) p.bin[k] = vp->bin[k];
        s = R::merge(s, p);
    }
    s = block_merge<BLOCK>(s, warp_states);
    if (threadIdx.x == 0) {
        *static_cast<Acc *>(out) = R::convert(s);
        *ticket = 0;
    }
}
}  // namespace per_value
}  // namespace rep
}  // namespace reduce
}  // namespace gp

using reduce::rep::RepTuningT;

// One launch of a reproducible candidate (kernel K) with tuning T: the
// grid of step 19 (SinglePass::grid_for under T), the input 16-byte aligned.
template <class In, class T, class K>
cudaError_t launch_rep(K kernel, const In *in, int64_t n, void *scratch, unsigned *ticket, In *out) {
    const int64_t grid = SinglePass<In, Sum<In>, T>::grid_for(n);
    GP_LAUNCH(kernel, unsigned(grid), T::BLOCK, 0, cudaStream_t(0), in, n, int64_t(0),
              static_cast<rfa::State<In> *>(scratch), ticket, static_cast<void *>(out), false);
    return cudaSuccess;
}

template <class In>
struct Bench {
    const char *dtype;
    In *d_in, *d_out;
    void *scratch;
    unsigned *ticket;
    void *flush;
    size_t fb;
    int64_t n;
    float base_ms;  // single_pass
    In ref;         // per_value's result
    bool ok = true;

    static uint64_t bits(In v) {
        uint64_t b = 0;
        std::memcpy(&b, &v, sizeof v);
        return b;
    }
    In result() {
        In r;
        CHECK(cudaMemcpy(&r, d_out, sizeof r, cudaMemcpyDeviceToHost));
        return r;
    }
    void print(const char *name, float ms, const char *check) {
        std::printf("| %s | 2^%d | %-34s | %8.4f | %6.0f | %5.3f | %s |\n", dtype, __builtin_ctzll(n), name, ms,
                    n * double(sizeof(In)) / ms / 1e6, base_ms / ms, check);
    }
    // The bits of one run of a candidate on the current input.
    template <class T, class K>
    In once(K kernel) {
        CHECK(cudaMemset(d_out, 0xff, sizeof(In)));
        CHECK(launch_rep<In, T>(kernel, d_in, n, scratch, ticket, d_out));
        CHECK(cudaDeviceSynchronize());
        return result();
    }
    template <class T, class K>
    void candidate(const char *name, K kernel) {
        const In r = once<T>(kernel);
        const bool same = bits(r) == bits(ref);
        ok &= same;
        const float ms = median_ms([&] { CHECK(launch_rep<In, T>(kernel, d_in, n, scratch, ticket, d_out)); },
                                   flush, fb, REPEAT);
        print(name, ms, same ? "same" : "DIFFERENT");
    }
};

// Every candidate, one size and type.  A macro list, so that the timed
// table and the bit checks name the same set.
#define GP_RFA_CANDIDATES(X)                                                   \
    X("step 19: 256, 4, 4", (RepTuningT<256, 4, 4>))                           \
    X("step 19: 256, 4, 4, L2::256B", (RepTuningT<256, 4, 4, false, LOAD_PREFETCH_256B>)) \
    X("step 19: 256, 2, 4, prefetch", (RepTuningT<256, 2, 4, true>))           \
    X("step 19: 256, 4, 3, prefetch", (RepTuningT<256, 4, 3, true>))           \
    X("step 19: 256, 4, 4, prefetch (RepTuning)", (RepTuningT<256, 4, 4, true>)) \
    X("step 19: 256, 8, 3", (RepTuningT<256, 8, 3>))                           \
    X("step 19: 256, 2, 5, prefetch", (RepTuningT<256, 2, 5, true>))           \
    X("step 19: 256, 2, 6", (RepTuningT<256, 2, 6>))                           \
    X("step 19: 512, 4, 2", (RepTuningT<512, 4, 2>))                           \
    X("step 19: 128, 4, 8", (RepTuningT<128, 4, 8>))

#define GP_UNPAREN(...) __VA_ARGS__

template <class In>
void table(Bench<In> &b, int64_t n) {
    b.n = n;
    using SP = SinglePass<In, Sum<In>, SinglePassTuning>;
    gp_reduce_args a{};
    a.in = b.d_in; a.out = b.d_out; a.n = n; a.in_t = sizeof(In) == 4 ? GP_FLOAT32 : GP_FLOAT64;
    a.acc_t = a.in_t; a.op = GP_SUM; a.scratch = b.scratch; a.scratch_bytes = SP::scratch(n); a.stream = 0;
    a.counter = b.ticket;
    b.base_ms = median_ms([&] { CHECK(SP::run(a)); }, b.flush, b.fb, REPEAT);
    b.print("single_pass (run_to_run auto)", b.base_ms, "-");

#if defined(GP_CUB_ENV)
    {
        size_t bytes = 0;
        auto call = [&](void *tmp, size_t &nb) {
            return cub_env::two_phase(::cuda::execution::determinism::gpu_to_gpu, tmp, nb, cudaStream_t(0),
                                      [&](auto env) -> cudaError_t {
                                          return cub::DeviceReduce::Reduce(b.d_in, b.d_out, n,
                                                                           ::cuda::std::plus<In>(), In(0), env);
                                      });
        };
        CHECK(call(nullptr, bytes));
        void *tmp;
        CHECK(cudaMalloc(&tmp, bytes > 0 ? bytes : 1));
        const float ms = median_ms([&] { CHECK(call(tmp, bytes)); }, b.flush, b.fb, REPEAT);
        b.print("cub gpu_to_gpu", ms, "-");
        CHECK(cudaFree(tmp));
    }
#else
    std::printf("| %s | 2^%d | cub gpu_to_gpu: needs CCCL >= 3.5 (-I the nvidia-cuda-cccl wheel's include/cccl) | | | | |\n",
                b.dtype, __builtin_ctzll(n));
#endif

    using RT = RepTuningT<256, 4, 4>;
    b.ref = b.template once<RT>(reduce::rep::per_value::reduce_rfa<In, In, RT>);
    const float ms = median_ms(
        [&] { CHECK(launch_rep<In, RT>(reduce::rep::per_value::reduce_rfa<In, In, RT>, b.d_in, n, b.scratch,
                                       b.ticket, b.d_out)); },
        b.flush, b.fb, REPEAT);
    b.print("per_value: 256, 4, 4", ms, "ref");
#define GP_RFA_ROW(name, T) b.template candidate<GP_UNPAREN T>(name, reduce::rep::reduce_rfa<In, In, GP_UNPAREN T>);
    GP_RFA_CANDIDATES(GP_RFA_ROW)
#undef GP_RFA_ROW
}

// The untimed checks: every candidate's bits against per_value's (and the
// host's) on data that widens often and on data holding an Inf.
template <class In>
void check_bits(Bench<In> &b, std::vector<In> &h, int64_t n, const char *what, bool host) {
    CHECK(cudaMemcpy(b.d_in, h.data(), n * sizeof(In), cudaMemcpyHostToDevice));
    b.n = n;
    using RT = RepTuningT<256, 4, 4>;
    const In ref = b.template once<RT>(reduce::rep::per_value::reduce_rfa<In, In, RT>);
    bool same = true;
    if (host) {
        const In hr = rfa::sum(h.data(), n);
        same &= Bench<In>::bits(hr) == Bench<In>::bits(ref);
    }
#define GP_RFA_ROW(name, T) \
    same &= Bench<In>::bits(b.template once<GP_UNPAREN T>(reduce::rep::reduce_rfa<In, In, GP_UNPAREN T>)) == Bench<In>::bits(ref);
    GP_RFA_CANDIDATES(GP_RFA_ROW)
#undef GP_RFA_ROW
    b.ok &= same;
    std::printf("bits, %s, n = %lld, %s%s: %s (%a)\n", b.dtype, (long long)n, what, host ? ", host rfa::sum too" : "",
                same ? "all the same" : "DIFFERENT", double(ref));
}

template <class In>
bool run_type(const char *dtype, void *d_in_raw, void *scratch, unsigned *ticket, void *flush, size_t fb) {
    const int64_t nmax = int64_t(1) << 28;
    Bench<In> b;
    b.dtype = dtype;
    b.d_in = static_cast<In *>(d_in_raw);
    CHECK(cudaMalloc(&b.d_out, 64));
    b.scratch = scratch, b.ticket = ticket, b.flush = flush, b.fb = fb;

    std::vector<In> h(nmax);
    uint64_t s = 777;
    auto next = [&s] { s = s * 6364136223846793005ull + 1442695040888963407ull; return s >> 11; };  // 53 bits
    // mixed magnitudes first (2^24 values), then the timed data
    for (int64_t i = 0; i < (int64_t(1) << 24); ++i) {
        const double u = double(next()) / double(uint64_t(1) << 53) * 2 - 1;
        h[i] = In(std::ldexp(u != 0 ? u : 0.5, int(next() % 121) - 60));
    }
    check_bits(b, h, int64_t(1) << 20, "mixed magnitudes", true);
    check_bits(b, h, (int64_t(1) << 24) - 3, "mixed magnitudes", false);
    h[12345] = In(INFINITY);
    check_bits(b, h, int64_t(1) << 20, "mixed magnitudes and +Inf", true);

    for (auto &v : h) {
        const double u = double(next()) / double(uint64_t(1) << 53) * 2 - 1;
        v = In(u != 0 ? u : 0.5);  // never zero
    }
    check_bits(b, h, int64_t(1) << 20, "uniform [-1, 1)", true);
    CHECK(cudaMemcpy(b.d_in, h.data(), nmax * sizeof(In), cudaMemcpyHostToDevice));
    std::printf("\n| dtype | n | variant (block, loads per batch, blocks/SM) | ms | GB/s | x single_pass | bits |\n"
                "|---|---|---|---:|---:|---:|---|\n");
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 24, int64_t(1) << 28}) table(b, n);
    std::printf("\n");
    CHECK(cudaFree(b.d_out));
    return b.ok;
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    size_t fb = 0;
    void *flush = l2_flush_buffer(p, fb);
    void *d_in, *scratch;
    unsigned *ticket;
    CHECK(cudaMalloc(&d_in, (size_t(1) << 28) * sizeof(double)));
    CHECK(cudaMalloc(&scratch, 1 << 24));
    CHECK(cudaMalloc(&ticket, 4));
    CHECK(cudaMemset(ticket, 0, 4));
    std::printf("%s, %d SMs; CCCL %d.%d.%d\n\n", p.name, p.multiProcessorCount, CCCL_MAJOR_VERSION,
                CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
    bool ok = run_type<float>("float32", d_in, scratch, ticket, flush, fb);
    ok &= run_type<double>("float64", d_in, scratch, ticket, flush, fb);
    std::printf("%s\n", ok ? "every candidate gave per_value's bits" : "SOME CANDIDATE GAVE OTHER BITS");
    return ok ? 0 : 1;
}
