// reduce.cuh - what the reduction variants share: the (op, in, acc) table,
// the dispatch from runtime dtype codes to template instances, and the
// multi-pass driver that combines per-block partial results on the GPU.
#pragma once

#include "../common.cuh"

GP_NAMESPACE_BEGIN
namespace reduce {

// Launch shapes, one home for the kernels and the registry (registry.cu).
//
// Steps 1-8 (the book's kernels) run blocks of BLOCK threads, the book's
// choice; step 7 instantiates its template for it.
constexpr int BLOCK = 512;

// Step 9, single_pass (09_single_pass.cu).  Evidence: bench/tune_reduce.cu,
// its tables in bench/results/ (tune-reduce-*.md): on an H200, float32 sum,
// n = 2^28: 256 threads, 4 loads, 8 blocks per SM, __ldg: 0.2507 ms,
// 4283 GB/s, equal to cub::DeviceReduce (0.2506 ms); no other configuration
// there is faster by more than 0.3% at that size.  Inputs of up to 128 MiB
// are read with evict-first loads (__ldcs) instead: where the L2 holds
// dirty lines of earlier work (the benchmark's flush leaves it so), each
// line a plain load brings in may first write one of them back, while
// lines marked evict-first make room for each other.  On an H200 (bench/
// results/tune-reduce-loads-nvidia-h200-2026-11-24.md, % of a copy of the
// same bytes) that read 2^23 / 2^24 / 2^25 float32 at 65.3 / 75.2 / 85.2%
// against 60.4 / 67.3 / 78.1%, float16 2^24 / 2^26 at 65.1 / 84.2% against
// 60.1 / 77.9%, the same at 2^20 and 2^26 float32 (256 MiB), and 95.3
// against 98.8% at 512 MiB.
enum LoadKind { LOAD_LDG = 0, LOAD_STREAMING = 1, LOAD_PREFETCH_256B = 2 };
template <int BLOCK_, int UNROLL_, int BLOCKS_PER_SM_, int LOAD_ = LOAD_LDG, int64_t STREAM_UP_TO_ = 0>
struct Tuning {
    static constexpr int BLOCK = BLOCK_;                  // threads per block
    static constexpr int UNROLL = UNROLL_;                // 16-byte loads in flight per thread
    static constexpr int BLOCKS_PER_SM = BLOCKS_PER_SM_;  // resident blocks per SM
    static constexpr int LOAD = LOAD_;                    // how the 16-byte loads are issued
    static constexpr int64_t STREAM_UP_TO = STREAM_UP_TO_;  // inputs of at most this many bytes: LOAD_STREAMING
};
// T's shape with evict-first loads (the inputs of at most T::STREAM_UP_TO bytes).
template <class T>
using StreamingOf = Tuning<T::BLOCK, T::UNROLL, T::BLOCKS_PER_SM, LOAD_STREAMING>;
using SinglePassTuning = Tuning<256, 4, 8, LOAD_LDG, int64_t(1) << 27>;

template <class Op>
__global__ void write_identity(typename Op::type *out) { *out = Op::identity(); }

// A reduction launcher: two_phase (common.cuh) around Impl<In, Op>
// (scratch(n), run(const gp_reduce_args &)); n == 0 writes the identity.
// SETS: the tables the variant instantiates beyond GP_COMBOS (with_combo).
template <template <class, class> class Impl, unsigned SETS = 0>
cudaError_t dispatch(gp_reduce_args *a) {
    return two_phase<Impl, SETS>(a, [a](auto op) -> cudaError_t {
        using Op = decltype(op);
        GP_LAUNCH(write_identity<Op>, 1, 1, 0, a->stream, static_cast<typename Op::type *>(a->out));
        return cudaSuccess;
    });
}

// Convert one input element, or give the identity past the end: partial
// blocks and unroll tails then need no special case in the tree.
template <class Op, class In>
__device__ inline typename Op::type load_or_identity(const In *in, int64_t i, int64_t n) {
    return i < n ? typename Op::type(in[i]) : Op::identity();
}

// The book's unrolling (reduceUnroll2/4/8): thread tid of block b combines
// the UNROLL elements idx, idx + blockDim, ..., idx + (UNROLL-1)*blockDim,
// where idx = b * blockDim * UNROLL + tid.  When all are in range, the
// UNROLL loads are issued before the first add (independent loads in
// flight, the book's a1..a8); in the last block each is checked, so a group
// that runs past n still adds its elements in range.
template <int UNROLL, class Op, class In>
__device__ inline typename Op::type unrolled_load(const In *in, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const int64_t step = blockDim.x;
    const int64_t idx = int64_t(blockIdx.x) * step * UNROLL + threadIdx.x;
    if (idx + (UNROLL - 1) * step < n) {
        Acc a[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) a[k] = Acc(in[idx + k * step]);
        Acc v = a[0];
#pragma unroll
        for (int k = 1; k < UNROLL; ++k) v = op(v, a[k]);
        return v;
    }
    Acc v = Op::identity();
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) v = op(v, load_or_identity<Op>(in, idx + k * step, n));
    return v;
}

// The book's last-warp unrolling: the final 64 -> 1 steps without
// __syncthreads(), by the 32 threads of warp 0 through a volatile pointer.
// The book's kernel relies on the warp running in lock step.  Since Volta, threads
// of a warp are scheduled independently, so lane 1 may read vmem[17] before
// lane 17 has written it: a race.  Each step therefore reads both operands,
// waits for the whole warp (__syncwarp), writes, and waits again before the
// next read.  volatile still keeps every access in memory, not in a register.
// Call with tid < 32 and idata[0 .. 63] valid.
template <class Op>
__device__ inline void last_warp_volatile(typename Op::type *idata, unsigned tid) {
    using Acc = typename Op::type;
    const Op op;
    volatile Acc *vmem = idata;
#pragma unroll
    for (unsigned offset = 32; offset > 0; offset >>= 1) {
        const Acc v = op(vmem[tid], vmem[tid + offset]);
        __syncwarp();
        vmem[tid] = v;
        __syncwarp();
    }
}

// The book's kernels produce one partial result per block.  Multipass runs a
// variant V over the input, then over its own partials, until one value is
// left, which the last pass writes straight into the output.  V provides:
//   BLOCK     threads per block;  ITEMS  input elements per block
//   WORK      true if the kernel reduces in place in a global tile (the
//             book's "in-place reduction in global memory"): a scratch copy,
//             so that the caller's array is never written
//   launch<In, Op>(grid, in, work, partial, n, stream)
template <class V, class In, class Op>
struct Multipass {
    using Acc = typename Op::type;

    static size_t work_bytes(int64_t n) {
        return V::WORK ? align_up(size_t(ceil_div<int64_t>(n, V::ITEMS)) * V::BLOCK * sizeof(Acc)) : 0;
    }
    static size_t scratch(int64_t n) {
        const int64_t g1 = ceil_div<int64_t>(n, V::ITEMS);
        const int64_t g2 = ceil_div<int64_t>(g1, V::ITEMS);
        return work_bytes(n) + align_up(g1 * sizeof(Acc)) + align_up(g2 * sizeof(Acc));
    }
    static cudaError_t run(const gp_reduce_args &a) {
        char *p = static_cast<char *>(a.scratch);
        Acc *work = reinterpret_cast<Acc *>(p);
        const int64_t g1 = ceil_div<int64_t>(a.n, V::ITEMS);
        Acc *bufs[2] = {reinterpret_cast<Acc *>(p + work_bytes(a.n)),
                        reinterpret_cast<Acc *>(p + work_bytes(a.n) + align_up(g1 * sizeof(Acc)))};
        int64_t m = a.n;
        int64_t g = g1;
        Acc *dst = g == 1 ? static_cast<Acc *>(a.out) : bufs[0];
        GP_TRY(V::template launch<In, Op>(g, static_cast<const In *>(a.in), work, dst, m, a.stream));
        for (int which = 1; g > 1; which ^= 1) {
            const Acc *src = dst;
            m = g;
            g = ceil_div<int64_t>(m, V::ITEMS);
            dst = g == 1 ? static_cast<Acc *>(a.out) : bufs[which];
            GP_TRY(V::template launch<Acc, Op>(g, src, work, dst, m, a.stream));
        }
        return cudaSuccess;
    }
};

// Bind a variant traits struct V to the Impl<In, Op> shape dispatch() wants.
template <class V>
struct MultipassOf {
    template <class In, class Op> using type = Multipass<V, In, Op>;
};

}  // namespace reduce
GP_NAMESPACE_END
