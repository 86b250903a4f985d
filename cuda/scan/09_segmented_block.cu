// Step 12 - segmented_block: a block per problem.
// Sources: the block-wide tile scan with a carry of scan-then-fan (Harris,
// Sengupta and Owens, GPU Gems 3, ch. 39.2.4, done inside one block, as
// "CUDA learning (2): parallel scan" does across blocks); the
// block-per-segment mapping of CUB's DeviceSegmentedReduce for long
// segments.
//
// What changed from step 11: a problem gets a block of 8 warps.  The block
// walks its problem in tiles of 8 x ROUNDS x 32 elements; warp w scans
// its ROUNDS rounds of 32 consecutive elements as in step 11 (shuffles and
// a carry from round to round), the 8 warp totals go through shared
// memory, and each warp adds the totals of the warps before it and the
// block's carry from the tiles before: the seeds' scan-then-fan, inside a
// block, where the "fan" is a register add and the carry never leaves the
// chip.  Two barriers a tile.
// Why step 11 was slow: a long problem had 32 threads for it, so few long
// problems (64 rows of 2^20) left most of the GPU idle and each warp had
// only ROUNDS loads in flight per lane for its whole row.
// Still slow here: problems shorter than a tile leave warps idle (a row of
// 64 uses 2 of 8 warps), and fewer problems than the GPU holds blocks (4
// rows of 2^24: 4 of its 132 SMs) still leave it idle: step 13 splits a
// long problem over many blocks.
// Assumes: nothing (any n, any strides); the loop over tiles is uniform
// over the block, so every thread reaches every barrier and shuffle.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256, WARPS = BLOCK / WARP;
constexpr int ROUNDS = 4;  // rounds of 32 elements a warp, loaded together
constexpr int TILE = BLOCK * ROUNDS;

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
scan_block(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive) {
    using Acc = typename Op::type;
    const Op op;
    __shared__ Acc warp_total[WARPS];
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    for (int64_t p = blockIdx.x; p < lay.problems; p += gridDim.x) {
        const seg::Problem q = lay.problem(p);
        Acc carry = Op::identity();  // the tiles before
        for (int64_t base = 0; base < q.len; base += TILE) {
            const int64_t first = base + int64_t(warp) * ROUNDS * WARP;  // the warp's part of the tile
            Acc x[ROUNDS];
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const int64_t k = first + r * WARP + lane;
                x[r] = k < q.len ? Acc(in[q.in0 + k * q.in_step]) : Op::identity();
            }
            // The warp's rounds, scanned with a carry from round to round.
            Acc wc = Op::identity();
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                x[r] = scan::warp_inclusive_scan(x[r], op);
                if (r > 0) x[r] = op(wc, x[r]);
                wc = __shfl_sync(FULL_MASK, x[r], WARP - 1);
            }
            if (lane == 0) warp_total[warp] = wc;
            __syncthreads();
            // What comes before the warp: the carry, then the warps before.
            Acc before = carry;
            for (int w = 0; w < warp; ++w) before = (base == 0 && w == 0) ? warp_total[0] : op(before, warp_total[w]);
            Acc all = before;
            for (int w = warp; w < WARPS; ++w) all = (base == 0 && w == 0) ? warp_total[0] : op(all, warp_total[w]);
            __syncthreads();  // warp_total is rewritten by the next tile
            const bool first_part = base == 0 && warp == 0;  // nothing before the warp's part
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const int64_t k = first + r * WARP + lane;
                const Acc inc = first_part ? x[r] : op(before, x[r]);
                const Acc exc = __shfl_up_sync(FULL_MASK, inc, 1);
                const Acc prev_round = r > 0 ? __shfl_sync(FULL_MASK, first_part ? x[r - 1] : op(before, x[r - 1]), WARP - 1)
                                             : before;
                if (k < q.len) out[q.out0 + k * q.out_step] = inclusive ? inc : (lane == 0 ? prev_round : exc);
            }
            carry = all;
        }
    }
}

template <class In, class Op>
struct BlockPerProblem {
    static size_t scratch(const gp_scan_args &) { return 0; }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        GP_LAUNCH((scan_block<In, Op>), seg::grid_for(lay.problems), BLOCK, 0, a.stream,
                  static_cast<const In *>(a.in), static_cast<typename Op::type *>(a.out), lay, a.inclusive != 0);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_segmented_block(gp_scan_args *a) { return seg::dispatch<BlockPerProblem>(a); }

GP_KERNEL_OF(gp_scan_segmented_block_kernel, scan_block<float, Sum<float>>)
GP_NAMESPACE_END
