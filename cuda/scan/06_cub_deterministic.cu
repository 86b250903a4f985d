// Baseline - cub::DeviceScan with CCCL's run-to-run determinism requirement
// (CCCL >= 3.5): cuda::execution::require(cuda::execution::determinism::
// run_to_run) passed in the environment of InclusiveSum / ExclusiveSum.  For
// float sums CUB then combines its tiles' totals in a fixed order instead of
// adding whatever prefixes its look-back finds published - the fair rival of
// decoupled_lookback, which is deterministic the same way.  Integer scans
// (sums, min, max) take the same requirement with CUB's own operators
// (cuda::std::plus, cuda::minimum, cuda::maximum; exact in any order).  Float
// min/max keep numpy's NaN rule (gp::Min, gp::Max), which CUB's requirement
// does not take; they are exact in any order (the first NaN, else the last
// of the tied operands, whatever the grouping), so CUB's default scan is
// already run-to-run deterministic for them.  Sums that widen (int32 ->
// int64, float32 -> float64) go through InclusiveScan / ExclusiveScan with
// cuda::std::plus of the accumulator type.
//
// Built against an older CCCL (the toolkit's, without the nvidia-cuda-cccl
// wheel) every call fails with cudaErrorNotSupported and says why.
#include <type_traits>

#include <cub/device/device_scan.cuh>

#include "../cub_env.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN

#ifdef GP_CUB_ENV
namespace {
using namespace gp;

template <class Op, class Acc>
struct CubOp;  // CUB's operator for gp's, where CUB's determinism requirement takes one
template <class Acc> struct CubOp<Sum<Acc>, Acc> { using type = ::cuda::std::plus<Acc>; };
template <class Acc> struct CubOp<Min<Acc>, Acc> { using type = ::cuda::minimum<Acc>; };
template <class Acc> struct CubOp<Max<Acc>, Acc> { using type = ::cuda::maximum<Acc>; };

template <class In, class Op>
struct CubDeterministicScan : cub_env::CubTwoPhase<CubDeterministicScan<In, Op>> {
    using Args = gp_scan_args;
    using Acc = typename Op::type;
    static constexpr bool exact_any_order = std::is_floating_point<Acc>::value && !std::is_same<Op, Sum<Acc>>::value;

    static cudaError_t call(const gp_scan_args &a, void *tmp, size_t &bytes) {
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        if constexpr (exact_any_order) {  // float min/max: see the header
            if (a.inclusive) return cub::DeviceScan::InclusiveScan(tmp, bytes, in, out, Op(), a.n, a.stream);
            return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, Op(), Op::identity(), a.n, a.stream);
        } else {
            return cub_env::two_phase(
                ::cuda::execution::determinism::run_to_run, tmp, bytes, a.stream, [&](auto env) -> cudaError_t {
                    if constexpr (std::is_same<Op, Sum<In>>::value) {
                        if (a.inclusive) return cub::DeviceScan::InclusiveSum(in, out, a.n, env);
                        return cub::DeviceScan::ExclusiveSum(in, out, a.n, env);
                    } else {
                        using CubOpT = typename CubOp<Op, Acc>::type;
                        if (a.inclusive) return cub::DeviceScan::InclusiveScan(in, out, CubOpT(), a.n, env);
                        return cub::DeviceScan::ExclusiveScan(in, out, CubOpT(), Op::identity(), a.n, env);
                    }
                });
        }
    }
};
}  // namespace

cudaError_t gp_scan_cub_deterministic(gp_scan_args *a) { return scan::dispatch<CubDeterministicScan>(a); }

extern "C" const char *gp_scan_cub_deterministic_detail(void) { return nullptr; }

#else  // CCCL before 3.5: no determinism requirement for DeviceScan

cudaError_t gp_scan_cub_deterministic(gp_scan_args *) { return cudaErrorNotSupported; }

extern "C" const char *gp_scan_cub_deterministic_detail(void) {
    return "CUB's run-to-run deterministic scan needs CCCL 3.5 or newer, and this build of gpuprims has "
           "an older one (gpuprims.device_info()['cccl']): pip install 'nvidia-cuda-cccl>=13.3.5' and "
           "rebuild (pip install --no-build-isolation .), or use variant='decoupled_lookback', which is "
           "deterministic";
}
#endif

GP_NAMESPACE_END
