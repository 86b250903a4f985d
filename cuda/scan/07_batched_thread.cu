// Step 10 - batched_thread: many scans at once, a thread per problem.
// Source: the CPU scan of "CUDA learning (2): parallel scan", run by every
// thread on a problem of its own (a batched scan: the axis of an N-D array,
// or ragged segments).
//
// What changed from the 1-D journey: the call holds many independent
// problems (gp_batch in cuda/gpuprims.h: an axis of an N-D array, or
// segments given by offsets), and the question is no longer how to scan one
// long array but which threads take which problem - the mapping of work to
// threads.  The simplest mapping: thread p scans problem p alone, element
// by element, keeping the running value in a register.  No barrier, no
// shuffle, any length, any strides.
// Why it can be fast: where the axis is not the last one (a cumsum along
// axis 0 of a C array: inner > 1, s_inner == 1), problem p and p+1 are
// neighbouring columns, so at each step k the 32 threads of a warp read 32
// consecutive addresses and write 32 consecutive addresses: every access is
// coalesced, and the loop reads each element once.
// Why it is slow elsewhere: along the last axis (rows, or segments) the
// threads of a warp read addresses a whole row apart, one 32-byte sector
// per element; a thread's problem is as long as it is (a warp waits for its
// longest problem); and a few long problems keep only a few threads busy
// (4 rows of 2^24: four threads for the whole GPU).  The next steps give a
// problem more threads.
// Assumes: nothing (any n, any strides, empty problems write nothing).
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256;
constexpr int UNROLL = 4;  // loads issued before the first of them is used

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
scan_thread(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive) {
    using Acc = typename Op::type;
    const Op op;
    const int64_t stride = int64_t(gridDim.x) * BLOCK;
    for (int64_t p = int64_t(blockIdx.x) * BLOCK + threadIdx.x; p < lay.problems; p += stride) {
        const seg::Problem q = lay.problem(p);
        Acc run = Op::identity();
        for (int64_t k0 = 0; k0 < q.len; k0 += UNROLL) {
            Acc x[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                x[u] = k0 + u < q.len ? Acc(in[q.in0 + (k0 + u) * q.in_step]) : Op::identity();
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const Acc next = (k0 + u == 0) ? x[u] : op(run, x[u]);
                if (k0 + u < q.len) out[q.out0 + (k0 + u) * q.out_step] = inclusive ? next : run;
                run = next;
            }
        }
    }
}

template <class In, class Op>
struct ThreadPerProblem {
    static size_t scratch(const gp_scan_args &) { return 0; }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        GP_LAUNCH((scan_thread<In, Op>), seg::grid_for(ceil_div<int64_t>(lay.problems, BLOCK)), BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), static_cast<typename Op::type *>(a.out), lay, a.inclusive != 0);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_batched_thread(gp_scan_args *a) { return seg::dispatch<ThreadPerProblem>(a); }

GP_KERNEL_OF(gp_scan_batched_thread_kernel, scan_thread<float, Sum<float>>)
GP_NAMESPACE_END
