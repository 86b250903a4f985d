// Step 3 - reduceInterleaved: interleaved pairs.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.4); Harris, "Optimizing Parallel
// Reduction in CUDA" (NVIDIA, 2007), sequential addressing.
//
// What changed from step 2: the partner of thread tid is tid + stride with
// the stride halving from BLOCK/2 to 1.  The busy threads are still the
// first ones (no divergence inside working warps), and now a warp's 32
// accesses are 32 consecutive elements: coalesced.
// Why step 2 was slow: a warp's accesses were 2*stride elements apart.
// Assumes: as step 1.
//
// Fixed from the book's kernel: as in step 1.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <class In, class Op>
__global__ void reduce_interleaved(const In *in, typename Op::type *work,
                                   typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + tid;
    Acc *idata = work + int64_t(blockIdx.x) * blockDim.x;
    idata[tid] = reduce::load_or_identity<Op>(in, idx, n);
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) idata[tid] = op(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct Interleaved {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_interleaved<In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_interleaved(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<Interleaved>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_interleaved_kernel, reduce_interleaved<float, Sum<float>>)
GP_NAMESPACE_END
