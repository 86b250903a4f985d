// Step 14 - batched_columns: a scan along a non-last axis, the lanes across
// the columns, and the rows cut into chunks chained by a look-back.
// Sources: the column mapping of step 10 (a thread per column, which CUB's
// DeviceSegmentedReduce has no form of and cuTT's "fuse the unit-stride
// axes" reasoning motivates: keep the contiguous axis across the lanes);
// the decoupled look-back of step 9 run by each lane for its own column.
//
// What changed from steps 10-13: a cumsum along axis 0 of a C array (or a
// middle axis: inner > 1) scans columns whose elements are a row apart.
// Steps 11-13 give a column's consecutive elements to consecutive lanes:
// every load then touches a different row (a sector per element).  Step 10
// had the right mapping - lane l takes column l, so at each row the warp
// reads 32 consecutive addresses - but a thread walked its whole column
// alone: 2^14 columns of 2^14 are only 2^14 threads, each with one load in
// flight at a time.  Here a block holds a tile of 32 x WC columns by WR x
// RPT rows: each thread scans RPT rows of its column (RPT loads in flight,
// all coalesced across the warp), the WR row groups of a column are
// combined through shared memory, and the tiles down a column - the
// "chunks" along the axis - are chained by step 9's deterministic
// look-back, which each lane of the first row group runs for its own column
// (a column's chunks publish their totals; a chunk's prefix is always the
// same tree of them).  Short axes (n <= RPT) put all 8 warps across the
// columns (WR = 1) and need no look-back at all.
// Why steps 10-13 were slow here: step 10 starved the GPU when outer*inner
// was small and kept one load in flight; steps 11-13 read a column's
// elements with 32 different rows per warp load.
// Still slow here: fewer than 32 columns (a (2^24, 4) array along axis 0)
// leave lanes idle.
// Assumes: any n, any strides (coalesced where the columns are contiguous:
// s_inner == 1, or inner == 1 and s_outer == 1); fewer than 2^35 chunks.
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256, WARPS = BLOCK / WARP;

// Rows a thread: 16 for 4-byte accumulators, 8 for wider ones.
template <class Acc>
__host__ __device__ constexpr int rows_of() { return sizeof(Acc) > 4 ? 8 : 16; }

// The block's arrangement: WC warps across the columns, WR down the rows.
struct Shape {
    int wc, wr;
    int64_t col_blocks, chunks;  // tiles across, tiles down
};

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK)
scan_columns(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive, Shape sh,
             unsigned long long *ticket, seg::ColumnSlots<lookback::Slots<typename Op::type>, typename Op::type> cs) {
    using Acc = typename Op::type;
    constexpr int RPT = rows_of<Acc>();
    const Op op;
    __shared__ Acc total_s[WARPS][WARP];
    __shared__ Acc prefix_s[WARPS][WARP];
    __shared__ int64_t tile_s;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int wc = warp % sh.wc, wr = warp / sh.wc;

    if (threadIdx.x == 0) tile_s = int64_t(atomicAdd(ticket, 1ull));
    __syncthreads();
    const int64_t tile = tile_s, chunk = tile / sh.col_blocks, cb = tile - chunk * sh.col_blocks;
    const int64_t q = (cb * sh.wc + wc) * WARP + lane;  // the thread's column (problem)
    const int64_t r0 = (chunk * sh.wr + wr) * RPT;       // its first row
    const bool valid = q < lay.problems;
    const seg::Problem pr = lay.problem(valid ? q : 0);

    Acc x[RPT];
#pragma unroll
    for (int j = 0; j < RPT; ++j)
        x[j] = valid && r0 + j < lay.n ? Acc(in[pr.in0 + (r0 + j) * pr.in_step]) : Op::identity();
#pragma unroll
    for (int j = 1; j < RPT; ++j) x[j] = op(x[j - 1], x[j]);
    total_s[warp][lane] = x[RPT - 1];
    __syncthreads();

    // The row groups above the thread's, and the tile's total (warps of the
    // first row group), folded top to bottom.
    Acc above = Op::identity();
    for (int g = 0; g < wr; ++g) above = g == 0 ? total_s[wc][lane] : op(above, total_s[g * sh.wc + wc][lane]);
    if (wr == 0 && sh.chunks > 1) {
        Acc p = Op::identity();
        if (valid) {
            Acc t = total_s[wc][lane];
            for (int g = 1; g < sh.wr; ++g) t = op(t, total_s[g * sh.wc + wc][lane]);
            seg::lane_publish_totals(cs, chunk, t, q, op);
            if (chunk > 0) p = seg::lane_look_back(cs, chunk, q, op);
        }
        prefix_s[wc][lane] = p;
    }
    __syncthreads();

    // Everything above the thread's first row: the chunks above, then the
    // row groups above in this tile.
    const bool have_chunk = chunk > 0, have_group = wr > 0;
    Acc carry = have_chunk ? prefix_s[wc][lane] : above;
    if (have_chunk && have_group) carry = op(carry, above);
    const bool have = have_chunk || have_group;
    if (!valid) return;  // after the last barrier
#pragma unroll
    for (int j = 0; j < RPT; ++j) {
        if (r0 + j >= lay.n) break;
        Acc v;
        if (inclusive)
            v = have ? op(carry, x[j]) : x[j];
        else
            v = j == 0 ? (have ? carry : Op::identity()) : (have ? op(carry, x[j - 1]) : x[j - 1]);
        out[pr.out0 + (r0 + j) * pr.out_step] = v;
    }
}

template <class In, class Op>
struct Columns {
    using Acc = typename Op::type;
    static constexpr int RPT = rows_of<Acc>();
    static Shape shape(const seg::Layout &lay) {
        Shape s{};
        const int64_t groups = ceil_div<int64_t>(lay.n, RPT);  // row groups the axis needs
        s.wr = groups >= 8 ? 8 : groups >= 4 ? 4 : groups >= 2 ? 2 : 1;
        s.wc = WARPS / s.wr;
        s.col_blocks = ceil_div<int64_t>(lay.problems, int64_t(s.wc) * WARP);
        s.chunks = ceil_div<int64_t>(lay.n, int64_t(s.wr) * RPT);
        return s;
    }
    static lookback::Levels levels(const Shape &s, int64_t &count) { return lookback::Levels::of(s.chunks, count); }
    static size_t scratch(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        const Shape s = shape(lay);
        int64_t count = 0;
        if (s.chunks > 1) levels(s, count);
        return 256 + lookback::Slots<Acc>::bytes(count * lay.problems);
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        const Shape s = shape(lay);
        const int64_t tiles = s.chunks * s.col_blocks;
        if (s.chunks >= (int64_t(1) << 35) || tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
        int64_t count = 0;
        lookback::Levels lv{};
        if (s.chunks > 1) lv = levels(s, count);
        char *p = static_cast<char *>(a.scratch);
        using S = lookback::Slots<Acc>;
        GP_TRY(cudaMemsetAsync(p, 0, 256 + S::zeroed_bytes(count * lay.problems), a.stream));
        const seg::ColumnSlots<S, Acc> cs{S(p + 256, count * lay.problems), lv, lay.problems};
        GP_LAUNCH((scan_columns<In, Op>), unsigned(tiles), BLOCK, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), lay, a.inclusive != 0, s, reinterpret_cast<unsigned long long *>(p), cs);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_batched_columns(gp_scan_args *a) { return seg::dispatch<Columns>(a); }

GP_KERNEL_OF(gp_scan_batched_columns_kernel, scan_columns<float, Sum<float>>)
GP_NAMESPACE_END
