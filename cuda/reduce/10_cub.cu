// Baseline - cub::DeviceReduce::Reduce from the CUDA toolkit (CCCL), the
// production reduction gpuprims measures itself against.  Same operator
// (including numpy's NaN rule for min/max) and accumulator type as the other
// variants; CUB chooses its own tiles and makes two launches for large n.
#include <cub/device/device_reduce.cuh>

#include "../cub_env.cuh"
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
struct CubReduce : cub_env::CubTwoPhase<CubReduce<In, Op>> {
    using Args = gp_reduce_args;
    using Acc = typename Op::type;
    static cudaError_t call(const gp_reduce_args &a, void *tmp, size_t &bytes) {
        return cub::DeviceReduce::Reduce(tmp, bytes, static_cast<const In *>(a.in),
                                         static_cast<Acc *>(a.out), a.n, Op(), Op::identity(),
                                         a.stream);
    }
};
}  // namespace

cudaError_t gp_reduce_cub(gp_reduce_args *a) { return reduce::dispatch<CubReduce>(a); }

GP_NAMESPACE_END
