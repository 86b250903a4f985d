// Baseline - cub::DeviceReduce with CCCL's gpu_to_gpu determinism
// requirement (CCCL >= 3.5): cuda::execution::require(cuda::execution::
// determinism::gpu_to_gpu) in the environment of DeviceReduce::Reduce.  For
// float and double sums CUB then accumulates in a reproducible
// floating-point accumulator (Ahrens, Demmel and Nguyen, ACM TOMS 2020):
// the same bits on every GPU and every launch shape - the production rival
// of a reproducible reduction.  Integer sums take the same requirement
// (exact: CUB runs its run-to-run path).  min/max keep numpy's NaN rule
// (gp::Min, gp::Max), which CUB's requirement does not take; they are exact
// in any order (the first NaN, else the last of the tied operands, whatever
// the grouping), so CUB's default reduction gives the same bits everywhere.
//
// Built against an older CCCL (the toolkit's, without the nvidia-cuda-cccl
// wheel) every call fails with cudaErrorNotSupported and says why.
#include <type_traits>

#include <cub/device/device_reduce.cuh>

#include "../cub_env.cuh"
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

#ifdef GP_CUB_ENV
namespace {
using namespace gp;

template <class In, class Op>
struct CubReproducibleReduce : cub_env::CubTwoPhase<CubReproducibleReduce<In, Op>> {
    using Args = gp_reduce_args;
    using Acc = typename Op::type;
    static cudaError_t call(const gp_reduce_args &a, void *tmp, size_t &bytes) {
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        if constexpr (std::is_same<Op, Sum<Acc>>::value) {
            return cub_env::two_phase(
                ::cuda::execution::determinism::gpu_to_gpu, tmp, bytes, a.stream, [&](auto env) -> cudaError_t {
                    return cub::DeviceReduce::Reduce(in, out, a.n, ::cuda::std::plus<Acc>(), Acc(0), env);
                });
        } else {  // min/max: see the header
            return cub::DeviceReduce::Reduce(tmp, bytes, in, out, a.n, Op(), Op::identity(), a.stream);
        }
    }
};
}  // namespace

cudaError_t gp_reduce_cub_reproducible(gp_reduce_args *a) { return reduce::dispatch<CubReproducibleReduce>(a); }

extern "C" const char *gp_reduce_cub_reproducible_detail(void) { return nullptr; }

#else  // CCCL before 3.5

cudaError_t gp_reduce_cub_reproducible(gp_reduce_args *) { return cudaErrorNotSupported; }

extern "C" const char *gp_reduce_cub_reproducible_detail(void) {
    return "CUB's gpu_to_gpu reproducible reduction needs CCCL 3.5 or newer, and this build of gpuprims "
           "has an older one (gpuprims.device_info()['cccl']): pip install 'nvidia-cuda-cccl>=13.3.5' "
           "and rebuild (pip install --no-build-isolation .)";
}
#endif

GP_NAMESPACE_END
