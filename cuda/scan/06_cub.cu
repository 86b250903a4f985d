// Baseline - cub::DeviceScan (CCCL), the production scan, with the same
// operator and accumulator type as the other variants.  Sums in the input's
// own type go through InclusiveSum / ExclusiveSum, the calls CUB tunes for:
// InclusiveScan with gp::Sum (an operator CUB does not know) took 1.022 ms
// against InclusiveSum's 0.875 ms for 2^28 float32 on an H100
// (bench/results/tune-scan-*.md); sums that widen (int32 -> int64) keep
// gp::Sum, whose accumulator is the result type.
#include <type_traits>

#include <cub/device/device_scan.cuh>

#include "../cub_env.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
struct CubScan : cub_env::CubTwoPhase<CubScan<In, Op>> {
    using Args = gp_scan_args;
    using Acc = typename Op::type;
    static cudaError_t call(const gp_scan_args &a, void *tmp, size_t &bytes) {
        const In *in = static_cast<const In *>(a.in);
        Acc *out = static_cast<Acc *>(a.out);
        if (std::is_same<Op, Sum<In>>::value) {
            if (a.inclusive) return cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, a.n, a.stream);
            return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, a.n, a.stream);
        }
        if (a.inclusive) return cub::DeviceScan::InclusiveScan(tmp, bytes, in, out, Op(), a.n, a.stream);
        return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, Op(), Op::identity(), a.n, a.stream);
    }
};
}  // namespace

cudaError_t gp_scan_cub(gp_scan_args *a) { return scan::dispatch<CubScan>(a); }

GP_NAMESPACE_END
