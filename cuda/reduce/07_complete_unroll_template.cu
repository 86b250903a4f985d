// Step 7 - reduceCompleteUnroll<blockSize>: the block size as a template
// parameter.
// Source: Cheng, Grossman and McKercher, Professional CUDA C Programming,
// ch. 3 (T. Tan's "CUDA Freshman" 3.5); Harris 2007, templated block size.
//
// What changed from step 6: `blockDim.x >= 512` becomes `BLOCK >= 512`, a
// compile-time constant, so the compiler deletes the steps that cannot run
// and the guards cost nothing.  The launcher picks the instance for the
// block size in use (here one, reduce::BLOCK; the book switches over
// 64..1024).
// Why step 6 was slow: its guards were tested at run time, in every block.
// Assumes: BLOCK a power of two, 64..1024, equal to blockDim.x.
//
// Fixed from the book's kernel: as in step 5.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <unsigned BLOCK, class In, class Op>
__global__ void reduce_complete_unroll(const In *in, typename Op::type *work,
                                       typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    const Op op;
    const unsigned tid = threadIdx.x;
    Acc *idata = work + int64_t(blockIdx.x) * BLOCK;
    idata[tid] = reduce::unrolled_load<8, Op>(in, n);
    __syncthreads();
    if (BLOCK >= 1024 && tid < 512) idata[tid] = op(idata[tid], idata[tid + 512]);
    __syncthreads();
    if (BLOCK >= 512 && tid < 256) idata[tid] = op(idata[tid], idata[tid + 256]);
    __syncthreads();
    if (BLOCK >= 256 && tid < 128) idata[tid] = op(idata[tid], idata[tid + 128]);
    __syncthreads();
    if (BLOCK >= 128 && tid < 64) idata[tid] = op(idata[tid], idata[tid + 64]);
    __syncthreads();
    if (tid < 32) reduce::last_warp_volatile<Op>(idata, tid);
    if (tid == 0) partial[blockIdx.x] = idata[0];
}

struct CompleteUnrollTemplate {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK * 8;
    static constexpr bool WORK = true;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_complete_unroll<BLOCK, In, Op>), unsigned(grid), BLOCK, 0, s, in, work,
                  partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_complete_unroll_template(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<CompleteUnrollTemplate>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_complete_unroll_template_kernel,
             reduce_complete_unroll<reduce::BLOCK, float, Sum<float>>)
GP_NAMESPACE_END
