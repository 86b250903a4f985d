// Step 1 - scan0: every thread sums its own prefix.
// Source: the blog post "CUDA learning (2): parallel scan" (scan0).
//
// Thread i reads in[0 .. i] (inclusive) or in[0 .. i-1] (exclusive) and
// combines them in order: n(n+1)/2 operations instead of n, every input
// element read by up to n threads.  Correct and embarrassingly parallel,
// and hopeless beyond small n: max_n keeps a call under a second.
// Assumes: nothing (any n up to max_n, blocks of scan::NAIVE_BLOCK threads).
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void scan_naive(const In *in, typename Op::type *out, int64_t n, bool inclusive) {
    using Acc = typename Op::type;
    const Op op;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;  // no barrier in this kernel: an early return is safe
    Acc s = Op::identity();
    const int64_t end = inclusive ? i + 1 : i;
    for (int64_t k = 0; k < end; ++k) s = op(s, Acc(in[k]));
    out[i] = s;
}

template <class In, class Op>
struct Naive {
    static size_t scratch(int64_t) { return 0; }
    static cudaError_t run(const gp_scan_args &a) {
        GP_LAUNCH((scan_naive<In, Op>), unsigned(ceil_div<int64_t>(a.n, scan::NAIVE_BLOCK)),
                  scan::NAIVE_BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), static_cast<typename Op::type *>(a.out), a.n,
                  a.inclusive != 0);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_naive(gp_scan_args *a) { return scan::dispatch<Naive>(a); }

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_naive_kernel, scan_naive<float, Sum<float>>)

GP_NAMESPACE_END
