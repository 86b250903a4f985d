// single_pass.cuh - the single-pass reduction: its kernel and its launcher template.
// (09_single_pass.cu explains the step and registers it; the tuning
// programs in bench/ include this header to time the same kernel.)
#ifndef GPUPRIMS_REDUCE_SINGLE_PASS_CUH
#define GPUPRIMS_REDUCE_SINGLE_PASS_CUH

#include <cstring>
#include <type_traits>

#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

using reduce::LOAD_LDG;
using reduce::LOAD_PREFETCH_256B;
using reduce::LOAD_STREAMING;
using reduce::SinglePassTuning;
using reduce::StreamingOf;
using reduce::Tuning;

// A 16-byte load: read-only path (__ldg), evict-first (__ldcs), or the
// non-coherent path without L1 allocation and with a 256-byte L2 prefetch.
template <int KIND, class V>
__device__ inline V load16(const V *p) {
    if constexpr (KIND == LOAD_LDG) {
        return __ldg(p);
    } else if constexpr (KIND == LOAD_STREAMING) {
        return __ldcs(p);
    } else {
        const uint4 r = load_nc_no_l1_prefetch_256b(p);
        V v;
        memcpy(&v, &r, sizeof(V));
        return v;
    }
}

template <class T> struct Vec16;
template <> struct Vec16<int> { using type = int4; };
template <> struct Vec16<float> { using type = float4; };
template <> struct Vec16<long long> { using type = longlong2; };
template <> struct Vec16<double> { using type = double2; };

// The narrow inputs (GP_NARROW_COMBOS) are read 16 bytes at a time too:
// 16 int8/uint8/bool, 8 int16/uint16/float16, 4 uint32, 2 uint64 per load.
template <> struct Vec16<Bool8> { using type = uint4; };
template <> struct Vec16<signed char> { using type = uint4; };
template <> struct Vec16<unsigned char> { using type = uint4; };
template <> struct Vec16<short> { using type = uint4; };
template <> struct Vec16<unsigned short> { using type = uint4; };
template <> struct Vec16<unsigned> { using type = uint4; };
template <> struct Vec16<Half> { using type = uint4; };
template <> struct Vec16<unsigned long long> { using type = ulonglong2; };

template <class Op, class V4>
__device__ inline typename Op::type fold4(typename Op::type acc, const V4 &v, Op op) {
    using Acc = typename Op::type;
    acc = op(acc, Acc(v.x));
    acc = op(acc, Acc(v.y));
    acc = op(acc, Acc(v.z));
    return op(acc, Acc(v.w));
}
template <class Op>
__device__ inline typename Op::type fold(typename Op::type acc, const int4 &v, Op op) { return fold4(acc, v, op); }
template <class Op>
__device__ inline typename Op::type fold(typename Op::type acc, const float4 &v, Op op) { return fold4(acc, v, op); }
template <class Op>
__device__ inline typename Op::type fold(typename Op::type acc, const longlong2 &v, Op op) {
    using Acc = typename Op::type;
    return op(op(acc, Acc(v.x)), Acc(v.y));
}
template <class Op>
__device__ inline typename Op::type fold(typename Op::type acc, const double2 &v, Op op) {
    using Acc = typename Op::type;
    return op(op(acc, Acc(v.x)), Acc(v.y));
}

// A sum of 1- and 2-byte integers adds the elements of one 32-bit word
// with integer instructions on the word (__dp4a: the four bytes times 1 and
// the carry-in, one instruction), then the words of a vector in int32 (at
// most 8 * 65535 per vector: no overflow), then the vector's total into the
// int64 accumulator: an int64 add per 16 bytes instead of per element.
template <class In> __device__ inline int word_sum(unsigned w, int c);
template <> __device__ inline int word_sum<signed char>(unsigned w, int c) {
    return __dp4a(int(w), 0x01010101, c);
}
template <> __device__ inline int word_sum<unsigned char>(unsigned w, int c) {
    return int(__dp4a(w, 0x01010101u, unsigned(c)));
}
template <> __device__ inline int word_sum<Bool8>(unsigned w, int c) {
    // each byte's top bit set where the byte is nonzero (no carry crosses
    // a byte: (b & 0x7f) + 0x7f <= 0xfe), then counted
    return c + __popc((((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u);
}
template <> __device__ inline int word_sum<short>(unsigned w, int c) {
    return c + int(short(w & 0xffffu)) + (int(w) >> 16);
}
template <> __device__ inline int word_sum<unsigned short>(unsigned w, int c) {
    return c + int(w & 0xffffu) + int(w >> 16);
}

template <class In, class Op>
constexpr bool word_summed = std::is_same<Op, Sum<long long>>::value && sizeof(In) <= 2 &&
                             !std::is_same<In, Half>::value;

// One 16-byte vector into the accumulator, for any input type: the kernels'
// own four as fold() does; the narrow ones element by element (widen), or a
// word at a time for the small integer sums.
template <class In, class Op, class V>
__device__ inline typename Op::type fold_vec(typename Op::type acc, const V &v, Op op) {
    using Acc = typename Op::type;
    if constexpr (std::is_same<In, int>::value || std::is_same<In, long long>::value ||
                  std::is_same<In, float>::value || std::is_same<In, double>::value) {
        return fold(acc, v, op);
    } else if constexpr (word_summed<In, Op>) {
        return acc + Acc(word_sum<In>(v.x, word_sum<In>(v.y, word_sum<In>(v.z, word_sum<In>(v.w, 0)))));
    } else {
        constexpr int K = sizeof(V) / sizeof(In);
        In e[K];
        memcpy(e, &v, sizeof(V));
#pragma unroll
        for (int k = 0; k < K; ++k) acc = op(acc, widen<Acc>(e[k]));
        return acc;
    }
}

template <class In, class Op, class T>
__global__ void __launch_bounds__(T::BLOCK)
reduce_single_pass(const In *__restrict__ in, int64_t n, int64_t head,
                   typename Op::type *partial, unsigned *ticket, typename Op::type *out) {
    using Acc = typename Op::type;
    using V = typename Vec16<In>::type;
    constexpr int BLOCK = T::BLOCK, UNROLL = T::UNROLL;
    constexpr int PER_VEC = sizeof(V) / sizeof(In);
    const Op op;

    const int64_t nvec = (n - head) / PER_VEC;
    const int64_t tail = head + nvec * PER_VEC;
    const int64_t tid = int64_t(blockIdx.x) * BLOCK + threadIdx.x;
    const int64_t stride = int64_t(gridDim.x) * BLOCK;

    Acc acc = Op::identity();
    if (tid < head) acc = op(acc, widen<Acc>(in[tid]));
    if (tid < n - tail) acc = op(acc, widen<Acc>(in[tail + tid]));

    const V *vin = reinterpret_cast<const V *>(in + head);
    int64_t i = tid;
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        V r[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) r[k] = load16<T::LOAD>(vin + i + k * stride);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc = fold_vec<In>(acc, r[k], op);
    }
    for (; i < nvec; i += stride) acc = fold_vec<In>(acc, load16<T::LOAD>(vin + i), op);

    __shared__ Acc warp_results[BLOCK / WARP];
    acc = block_reduce<BLOCK>(acc, op, warp_results);
    if (gridDim.x == 1) {  // uniform over the block: one block needs no ticket
        if (threadIdx.x == 0) *out = acc;
        return;
    }

    __shared__ bool is_last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
        __threadfence();  // the partial is visible before the ticket is taken
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;  // uniform over the block

    // The last block: all partials are written.  Read them past L1 (__ldcg),
    // each thread a fixed subset in block order, then the block tree.
    Acc v = Op::identity();
    for (unsigned j = threadIdx.x; j < gridDim.x; j += BLOCK) v = op(v, __ldcg(partial + j));
    v = block_reduce<BLOCK>(v, op, warp_results);
    if (threadIdx.x == 0) {
        *out = v;
        *ticket = 0;  // ready for the next launch on this stream
    }
}

int sm_count() {  // 1 where it cannot be read: a small grid, still right
    DeviceFacts d;
    return device_facts(d) == cudaSuccess && d.sms >= 1 ? d.sms : 1;
}

template <class In, class Op, class T = SinglePassTuning>
struct SinglePass {
    using Acc = typename Op::type;
    static constexpr int PER_VEC = 16 / sizeof(In);

    static int64_t grid_for(int64_t n) {
        const int64_t items_per_block = int64_t(T::BLOCK) * T::UNROLL * PER_VEC;
        const int64_t want = ceil_div<int64_t>(n, items_per_block);
        const int64_t cap = int64_t(sm_count()) * T::BLOCKS_PER_SM;
        return want < cap ? want : cap;
    }
    static size_t scratch(int64_t n) {
        return align_up(size_t(grid_for(n)) * sizeof(Acc)) + sizeof(unsigned);
    }
    static cudaError_t run(const gp_reduce_args &a) {
        const In *in = static_cast<const In *>(a.in);
        const uintptr_t mis = reinterpret_cast<uintptr_t>(in) % 16;
        if (mis % sizeof(In) != 0) return cudaErrorMisalignedAddress;
        int64_t head = int64_t((16 - mis) % 16 / sizeof(In));
        if (head > a.n) head = a.n;
        const int64_t grid = grid_for(a.n);
        Acc *partial = static_cast<Acc *>(a.scratch);
        unsigned *ticket = a.counter;
        if (ticket == nullptr && grid > 1) {
            ticket = reinterpret_cast<unsigned *>(static_cast<char *>(a.scratch) +
                                                  align_up(size_t(grid) * sizeof(Acc)));
            GP_TRY(cudaMemsetAsync(ticket, 0, sizeof(unsigned), a.stream));
        }
        if (a.n * int64_t(sizeof(In)) <= T::STREAM_UP_TO)
            GP_LAUNCH((reduce_single_pass<In, Op, StreamingOf<T>>), unsigned(grid), T::BLOCK, 0, a.stream, in, a.n,
                      head, partial, ticket, static_cast<Acc *>(a.out));
        else
            GP_LAUNCH((reduce_single_pass<In, Op, T>), unsigned(grid), T::BLOCK, 0, a.stream, in, a.n, head, partial,
                      ticket, static_cast<Acc *>(a.out));
        return cudaSuccess;
    }
};
template <class In, class Op> using SinglePassTuned = SinglePass<In, Op, SinglePassTuning>;
}  // namespace

GP_NAMESPACE_END

#endif  // GPUPRIMS_REDUCE_SINGLE_PASS_CUH
