// Steps 2, 3 and 6 - Hillis-Steele.
// Sources: Hillis and Steele, "Data parallel algorithms", CACM 1986; the
// blog post "CUDA learning (2): parallel scan" (scan1, scan2, scan5); the
// double buffer and scan-then-fan as in Harris, Sengupta and Owens,
// "Parallel Prefix Sum (Scan) with CUDA", GPU Gems 3, ch. 39.
//
// hillis_steele (step 2, scan1): one block, one element per thread in
//   shared memory; at step `offset` (1, 2, 4, ...) every thread i >= offset
//   adds the element `offset` to its left.  log2(n) steps, n log n work.
//   What changed from step 1: n log n operations instead of n^2/2, each
//   element read once from global memory.  Each step needs two barriers:
//   all reads of the step before any write.
// hillis_steele_double_buffer (step 3, scan2): two shared buffers, read one,
//   write the other, swap: one barrier per step instead of two.
// hillis_steele_multiblock (step 6, scan5): the double-buffered block scans
//   tiles of HS_TILE elements; the tile totals are scanned the same way; a
//   last kernel adds each tile's prefix ("scan-then-fan", ScanThenFan in
//   scan.cuh).  Any n, where steps 2-5 stop at one block.
// Exclusive scans shift by one inside the block: out[i] = temp[i-1].
// Assumes: steps 2 and 3 n <= HS_TILE (the registry's max_n).
//
// Fixed from the blog's kernels: accumulators of the output type (scan1
// used `int tmp` in a float scan), bounds for n not a multiple of the
// block, and no single-block kernel is used past one block (max_n).
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

using scan::HS_TILE;  // one element per thread, one block (scan.cuh)

inline unsigned block_for(int64_t grid, int64_t n) {
    // one full tile per block; a single block needs only n threads (whole warps)
    return grid > 1 ? HS_TILE : unsigned(ceil_div<int64_t>(n, WARP) * WARP);
}

template <class In, class Op>
__global__ void hillis_steele(const In *in, typename Op::type *out, int64_t n, bool inclusive,
                              typename Op::type *totals) {
    using Acc = typename Op::type;
    const Op op;
    Acc *temp = scan::shared_array<Acc>();  // blockDim.x elements
    const int i = threadIdx.x;
    const int64_t g = int64_t(blockIdx.x) * blockDim.x + i;
    temp[i] = g < n ? Acc(in[g]) : Op::identity();
    __syncthreads();
    for (int offset = 1; offset < int(blockDim.x); offset <<= 1) {
        Acc t = Op::identity();
        if (i >= offset) t = temp[i - offset];
        __syncthreads();  // every read of this step before any write
        if (i >= offset) temp[i] = op(t, temp[i]);
        __syncthreads();  // every write before the next step reads
    }
    if (g < n) out[g] = inclusive ? temp[i] : (i > 0 ? temp[i - 1] : Op::identity());
    if (totals != nullptr && i == int(blockDim.x) - 1) totals[blockIdx.x] = temp[i];
}

template <class In, class Op>
__global__ void hillis_steele_double_buffer(const In *in, typename Op::type *out, int64_t n,
                                            bool inclusive, typename Op::type *totals) {
    using Acc = typename Op::type;
    const Op op;
    Acc *temp = scan::shared_array<Acc>();  // 2 * blockDim.x elements
    const int i = threadIdx.x, b = blockDim.x;
    const int64_t g = int64_t(blockIdx.x) * b + i;
    int pout = 0, pin = 1;
    temp[i] = g < n ? Acc(in[g]) : Op::identity();
    __syncthreads();
    for (int offset = 1; offset < b; offset <<= 1) {
        pout = 1 - pout;  // swap: read the buffer written last step
        pin = 1 - pout;
        temp[pout * b + i] = i >= offset ? op(temp[pin * b + i - offset], temp[pin * b + i])
                                         : temp[pin * b + i];
        __syncthreads();  // one barrier: reads and writes touch different buffers
    }
    if (g < n) out[g] = inclusive ? temp[pout * b + i] : (i > 0 ? temp[pout * b + i - 1] : Op::identity());
    if (totals != nullptr && i == b - 1) totals[blockIdx.x] = temp[pout * b + i];
}

template <bool DOUBLE_BUFFER>
struct HillisSteele {
    static constexpr int TILE = HS_TILE;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *out, int64_t n,
                              bool inclusive, typename Op::type *totals, cudaStream_t s) {
        const unsigned block = block_for(grid, n);
        const size_t smem = (DOUBLE_BUFFER ? 2 : 1) * block * sizeof(typename Op::type);
        if (DOUBLE_BUFFER)
            GP_LAUNCH((hillis_steele_double_buffer<In, Op>), unsigned(grid), block, smem, s, in, out,
                      n, inclusive, totals);
        else
            GP_LAUNCH((hillis_steele<In, Op>), unsigned(grid), block, smem, s, in, out, n, inclusive,
                      totals);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_hillis_steele(gp_scan_args *a) {
    return scan::dispatch<scan::SingleTileOf<HillisSteele<false>>::type>(a);
}
cudaError_t gp_scan_hillis_steele_double_buffer(gp_scan_args *a) {
    return scan::dispatch<scan::SingleTileOf<HillisSteele<true>>::type>(a);
}
cudaError_t gp_scan_hillis_steele_multiblock(gp_scan_args *a) {
    return scan::dispatch<scan::ScanThenFanOf<HillisSteele<true>>::type>(a);
}

// The main kernels, float32 sum, and their dynamic shared memory, for
// gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_hillis_steele_kernel, hillis_steele<float, Sum<float>>)
GP_KERNEL_OF(gp_scan_hillis_steele_double_buffer_kernel,
             hillis_steele_double_buffer<float, Sum<float>>)
size_t gp_scan_hillis_steele_smem(int threads) {
    return size_t(threads) * sizeof(float);
}
size_t gp_scan_hillis_steele_double_buffer_smem(int threads) {
    return 2 * size_t(threads) * sizeof(float);
}
GP_NAMESPACE_END
