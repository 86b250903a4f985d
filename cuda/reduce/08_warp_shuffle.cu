// Step 8 - warp shuffles: the tree in registers.
// Source: __shfl_down_sync (CUDA C++ Programming Guide, warp shuffle
// functions); the block reduction is block_reduce in common.cuh.
//
// What changed from step 7: no global tile any more.  Each thread keeps its
// unroll-8 value in a register; each warp reduces its 32 values with five
// __shfl_down_sync steps (register to register, no memory, no barrier); the
// BLOCK/32 warp results meet in shared memory and warp 0 reduces them the
// same way.
// Why step 7 was slow: its tree went through a global scratch tile (written
// and read back at every step) with five barriers per block; here one
// barrier per block, and the only global traffic left is reading the input
// once.
// Assumes: BLOCK a multiple of 32, at most 1024.
#include "reduce.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

template <int BLOCK, class In, class Op>
__global__ void __launch_bounds__(BLOCK)
reduce_warp_shuffle(const In *in, typename Op::type *, typename Op::type *partial, int64_t n) {
    using Acc = typename Op::type;
    __shared__ Acc warp_results[BLOCK / WARP];
    Acc v = reduce::unrolled_load<8, Op>(in, n);
    v = block_reduce<BLOCK>(v, Op(), warp_results);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

struct WarpShuffle {
    static constexpr int BLOCK = reduce::BLOCK, ITEMS = BLOCK * 8;
    static constexpr bool WORK = false;
    template <class In, class Op>
    static cudaError_t launch(int64_t grid, const In *in, typename Op::type *work,
                              typename Op::type *partial, int64_t n, cudaStream_t s) {
        GP_LAUNCH((reduce_warp_shuffle<BLOCK, In, Op>), unsigned(grid), BLOCK, 0, s, in, work, partial, n);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_reduce_warp_shuffle(gp_reduce_args *a) {
    return reduce::dispatch<reduce::MultipassOf<WarpShuffle>::type>(a);
}

// The main kernel, float32 sum, for gpuprims.occupancy.
GP_KERNEL_OF(gp_reduce_warp_shuffle_kernel,
             reduce_warp_shuffle<WarpShuffle::BLOCK, float, Sum<float>>)
GP_NAMESPACE_END
