// Baseline - cub::DeviceSegmentedReduce::Reduce from the CUDA toolkit
// (CCCL), the production segmented reduction the batched and segmented
// steps are measured against.  Same operator (numpy's NaN rule for
// min/max) and accumulator type as the other variants.
//
// Segments: the caller's offsets, begin = offsets, end = offsets + 1.
// An axis: CUB reads each problem as a contiguous run of elements from a
// begin offset, so only layouts whose problems are contiguous (s_n == 1:
// axis -1 of a C array, axis 0 of an F array) can be expressed; their
// offsets come from a counting iterator through a transform (problem p =
// (o, i) begins at o * s_outer + i * s_inner, ends len later).  Other
// layouts (columns) return cudaErrorInvalidValue: the description says so.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_segmented_reduce.cuh>

#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace reduce::seg;

// Problem p's first element, or (end = true) one past its last.
struct RowOffset {
    int64_t outer, inner, s_outer, s_inner, len;
    bool end;
    __host__ __device__ int64_t operator()(int64_t p) const {
        const int64_t o = outer == 1 ? 0 : p / inner, i = p - o * inner;
        return o * s_outer + i * s_inner + (end ? len : 0);
    }
};

template <class In, class Op>
struct CubSegmented {
    using Acc = typename Op::type;
    static cudaError_t call(const gp_reduce_args &a, const Problems &P, void *tmp, size_t &bytes) {
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        if (P.offsets != nullptr)
            return cub::DeviceSegmentedReduce::Reduce(tmp, bytes, in, out, P.count, P.offsets,
                                                      P.offsets + 1, Op(), Op::identity(),
                                                      a.stream);
        if (P.s_n != 1 && P.len > 1) return cudaErrorInvalidValue;
        const thrust::counting_iterator<int64_t> problems(0);
        const RowOffset begin{P.outer, P.inner, P.s_outer, P.s_inner, P.len, false};
        RowOffset end = begin;
        end.end = true;
        return cub::DeviceSegmentedReduce::Reduce(
            tmp, bytes, in, out, P.count, thrust::make_transform_iterator(problems, begin),
            thrust::make_transform_iterator(problems, end), Op(), Op::identity(), a.stream);
    }
    static size_t scratch(const gp_reduce_args &, const Problems &P) {
        gp_reduce_args probe{};
        size_t bytes = 0;
        return call(probe, P, nullptr, bytes) == cudaSuccess ? bytes : 0;
    }
    static cudaError_t run(const gp_reduce_args &a, const Problems &P) {
        size_t bytes = a.scratch_bytes;
        return call(a, P, a.scratch, bytes);
    }
};
}  // namespace

cudaError_t gp_reduce_cub_segmented(gp_reduce_args *a) {
    return reduce::seg::dispatch<CubSegmented>(a);
}

GP_NAMESPACE_END
