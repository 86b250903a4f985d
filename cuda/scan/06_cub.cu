// Baseline - cub::DeviceScan (CCCL), the production scan, with the same
// operator and accumulator type as the other variants.  Sums in the input's
// own type go through InclusiveSum / ExclusiveSum, the calls CUB tunes for:
// InclusiveScan with gp::Sum (an operator CUB does not know) took 1.022 ms
// against InclusiveSum's 0.875 ms for 2^28 float32 on an H100
// (bench/results/tune-scan-*.md); sums that widen (int32 -> int64) keep
// gp::Sum, whose accumulator is the result type.
#include <type_traits>

#include <cub/device/device_scan.cuh>

#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
struct CubScan {
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
    static size_t scratch(int64_t n) {
        gp_scan_args inc{}, exc{};
        inc.n = exc.n = n;
        inc.inclusive = 1;
        size_t a = 0, b = 0;
        if (call(inc, nullptr, a) != cudaSuccess || call(exc, nullptr, b) != cudaSuccess) return size_t(-1);
        return a > b ? a : b;
    }
    static cudaError_t run(const gp_scan_args &a) {
        size_t bytes = a.scratch_bytes;
        return call(a, a.scratch, bytes);
    }
};
}  // namespace

cudaError_t gp_scan_cub(gp_scan_args *a) { return scan::dispatch<CubScan>(a); }

GP_NAMESPACE_END
