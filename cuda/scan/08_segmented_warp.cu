// Step 11 - segmented_warp: a warp per problem.
// Sources: __shfl_up_sync (CUDA C++ Programming Guide, warp shuffle
// functions); the warp-per-segment mapping of CUB's
// DeviceSegmentedReduce for medium segments (CCCL, agent "warp" policy).
//
// What changed from step 10: a problem gets 32 threads instead of one.
// The warp walks its problem in rounds of 32 consecutive elements: lane l
// takes element 32r + l, so along a row the warp reads 32 consecutive
// addresses (coalesced where step 10 read one sector per element); the 32
// values are scanned with five __shfl_up_sync steps (Hillis-Steele in
// registers), and lane 31's result is the carry into the next round.
// ROUNDS rounds are loaded before the first is scanned, so each lane has
// that many loads in flight.
// Why step 10 was slow: along the last axis every thread's loads were a
// row apart (uncoalesced), and a long problem was scanned by one thread.
// Still slow here: short problems (mean length 4) leave most of the 32
// lanes idle, and a few long problems keep only a few warps busy (4 rows of
// 2^24: 4 warps for the GPU); along axis 0 the lanes read one column
// (strided) where step 10's threads read a row.
// Assumes: nothing (any n, any strides); the loop over rounds is uniform
// over the warp, so every lane reaches every shuffle.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256, WARPS = BLOCK / WARP;
constexpr int ROUNDS = 4;  // rounds of 32 elements loaded together

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
scan_warp(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive) {
    using Acc = typename Op::type;
    const Op op;
    const int lane = threadIdx.x % WARP;
    const int64_t warps = int64_t(gridDim.x) * WARPS;
    for (int64_t p = int64_t(blockIdx.x) * WARPS + threadIdx.x / WARP; p < lay.problems; p += warps) {
        const seg::Problem q = lay.problem(p);
        Acc carry = Op::identity();  // everything before the round
        for (int64_t base = 0; base < q.len; base += ROUNDS * WARP) {
            Acc x[ROUNDS];
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const int64_t k = base + r * WARP + lane;
                x[r] = k < q.len ? Acc(in[q.in0 + k * q.in_step]) : Op::identity();
            }
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const int64_t k = base + r * WARP + lane;
                Acc inc = scan::warp_inclusive_scan(x[r], op);
                if (base > 0 || r > 0) inc = op(carry, inc);
                const Acc exc = __shfl_up_sync(FULL_MASK, inc, 1);
                if (k < q.len) out[q.out0 + k * q.out_step] = inclusive ? inc : (lane == 0 ? carry : exc);
                carry = __shfl_sync(FULL_MASK, inc, WARP - 1);
            }
        }
    }
}

template <class In, class Op>
struct WarpPerProblem {
    static size_t scratch(const gp_scan_args &) { return 0; }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        GP_LAUNCH((scan_warp<In, Op>), seg::grid_for(ceil_div<int64_t>(lay.problems, WARPS)), BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), static_cast<typename Op::type *>(a.out), lay, a.inclusive != 0);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_segmented_warp(gp_scan_args *a) { return seg::dispatch<WarpPerProblem>(a); }

GP_KERNEL_OF(gp_scan_segmented_warp_kernel, scan_warp<float, Sum<float>>)
GP_NAMESPACE_END
