// Baseline - cub::DeviceReduce::Reduce from the CUDA toolkit (CCCL), the
// production reduction gpuprims measures itself against.  Same operator
// (including numpy's NaN rule for min/max) and accumulator type as the other
// variants; CUB chooses its own tiles and makes two launches for large n.
#include <cub/device/device_reduce.cuh>

#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
struct CubReduce {
    using Acc = typename Op::type;
    static cudaError_t call(const gp_reduce_args &a, void *tmp, size_t &bytes) {
        return cub::DeviceReduce::Reduce(tmp, bytes, static_cast<const In *>(a.in),
                                         static_cast<Acc *>(a.out), a.n, Op(), Op::identity(),
                                         a.stream);
    }
    static size_t scratch(int64_t n) {
        gp_reduce_args probe{};
        probe.n = n;
        size_t bytes = 0;
        return call(probe, nullptr, bytes) == cudaSuccess ? bytes : size_t(-1);
    }
    static cudaError_t run(const gp_reduce_args &a) {
        size_t bytes = a.scratch_bytes;
        return call(a, a.scratch, bytes);
    }
};
}  // namespace

cudaError_t gp_reduce_cub(gp_reduce_args *a) { return reduce::dispatch<CubReduce>(a); }

GP_NAMESPACE_END
