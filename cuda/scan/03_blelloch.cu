// Steps 4, 5 and 7 - Blelloch.
// Sources: Blelloch, "Prefix sums and their applications", 1990; the blog
// post "CUDA learning (2): parallel scan" (scan3, scan4, scan6); the padding
// and scan-then-fan as in Harris, Sengupta and Owens, "Parallel Prefix Sum
// (Scan) with CUDA", GPU Gems 3, ch. 39.
//
// blelloch (step 4, scan3): one block, two elements per thread.  Up-sweep: a
//   reduction tree builds partial sums in place; the root is replaced by the
//   identity; down-sweep: each node passes its value to its left child and
//   (value op left sum) to its right child.  2(n-1) operations instead of
//   Hillis-Steele's n log n (steps 2-3), an exclusive scan by construction
//   (inclusive adds the input).
// blelloch_padded (step 5, scan4): the tree's strides (2, 4, ... 32
//   elements) make the threads of a warp hit the same shared-memory bank;
//   one pad word per 32 elements (index i -> i + i/32) spreads them out.
// blelloch_multiblock (step 7, scan6): tiles of BL_TILE elements scanned so,
//   then scan-then-fan (ScanThenFan in scan.cuh).  Any n.
// Assumes: the tile is padded to a power of two with the identity; steps 4
// and 5 n <= BL_TILE (the registry's max_n).
//
// Fixed from the blog's kernels: the bounds use the tile's length, not a
// global N; accumulators of the output type; no single block past max_n.
#include "scan.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

using scan::BL_TILE;  // two elements per thread, BL_TILE / 2 threads (scan.cuh)

__host__ __device__ constexpr int padded(int i, bool pad) { return pad ? i + (i >> 5) : i; }

template <bool PAD, class In, class Op>
__global__ void blelloch(const In *in, typename Op::type *out, int64_t n, bool inclusive,
                         typename Op::type *totals) {
    using Acc = typename Op::type;
    const Op op;
    Acc *temp = scan::shared_array<Acc>();
    const int m = 2 * blockDim.x;  // elements of this tile: a power of two
    const int tid = threadIdx.x;
    const int64_t base = int64_t(blockIdx.x) * m;
    const int ai = tid, bi = tid + m / 2;
    const Acc xa = base + ai < n ? Acc(in[base + ai]) : Op::identity();
    const Acc xb = base + bi < n ? Acc(in[base + bi]) : Op::identity();
    temp[padded(ai, PAD)] = xa;
    temp[padded(bi, PAD)] = xb;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (tid < d) {
            const int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            temp[padded(b, PAD)] = op(temp[padded(a, PAD)], temp[padded(b, PAD)]);
        }
        offset <<= 1;
    }
    __syncthreads();
    if (tid == 0) {
        if (totals != nullptr) totals[blockIdx.x] = temp[padded(m - 1, PAD)];
        temp[padded(m - 1, PAD)] = Op::identity();
    }
    for (int d = 1; d < m; d <<= 1) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            const int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            const Acc t = temp[padded(a, PAD)];
            temp[padded(a, PAD)] = temp[padded(b, PAD)];
            temp[padded(b, PAD)] = op(temp[padded(b, PAD)], t);
        }
    }
    __syncthreads();
    if (base + ai < n) out[base + ai] = inclusive ? op(temp[padded(ai, PAD)], xa) : temp[padded(ai, PAD)];
    if (base + bi < n) out[base + bi] = inclusive ? op(temp[padded(bi, PAD)], xb) : temp[padded(bi, PAD)];
}

template <bool PAD>
struct Blelloch {
    static constexpr int TILE = BL_TILE;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *out, int64_t n,
                              bool inclusive, typename Op::type *totals, cudaStream_t s) {
        int m = 2;  // a single block: the power of two covering n
        while (grid == 1 && m < n) m <<= 1;
        if (grid > 1) m = TILE;
        const size_t smem = size_t(padded(m, PAD)) * sizeof(typename Op::type);
        GP_LAUNCH((blelloch<PAD, In, Op>), unsigned(grid), unsigned(m / 2), smem, s, in, out, n,
                  inclusive, totals);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_blelloch(gp_scan_args *a) {
    return scan::dispatch<scan::SingleTileOf<Blelloch<false>>::type>(a);
}
cudaError_t gp_scan_blelloch_padded(gp_scan_args *a) {
    return scan::dispatch<scan::SingleTileOf<Blelloch<true>>::type>(a);
}
cudaError_t gp_scan_blelloch_multiblock(gp_scan_args *a) {
    return scan::dispatch<scan::ScanThenFanOf<Blelloch<true>>::type>(a);
}

// The main kernels, float32 sum, and their dynamic shared memory, for
// gpuprims.occupancy.
GP_KERNEL_OF(gp_scan_blelloch_kernel, blelloch<false, float, Sum<float>>)
GP_KERNEL_OF(gp_scan_blelloch_padded_kernel, blelloch<true, float, Sum<float>>)
size_t gp_scan_blelloch_smem(int threads) {
    return size_t(padded(2 * threads, false)) * sizeof(float);
}
size_t gp_scan_blelloch_padded_smem(int threads) {
    return size_t(padded(2 * threads, true)) * sizeof(float);
}
GP_NAMESPACE_END
