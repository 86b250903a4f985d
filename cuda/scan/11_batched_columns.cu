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
// flight at a time.  Here a block holds a tile of columns by rows: each
// thread scans RPT rows of its column (RPT loads in flight, coalesced
// across the warp), the row groups of a column are combined with shuffles
// within a warp and through shared memory across warps, and the tiles down
// a column - the "chunks" along the axis - are chained by step 9's
// deterministic look-back, which each lane of the first warp down the tile
// runs for its own column (its chunks publish their totals; a chunk's
// prefix is always the same expression of them; segmented.cuh).  The shape
// follows the array: fewer than 32 columns (a (2^24, 4) array along axis
// 0) fold the warp into 32 / CPW row groups of CPW columns, so no lane
// idles; a short axis (n <= RPT) puts all 8 warps across the columns and
// needs no look-back at all.
// Why steps 10-13 were slow here: step 10 starved the GPU when outer*inner
// was small and kept one load in flight; steps 11-13 read a column's
// elements with 32 different rows per warp load.
// Still slow here: with fewer than 32 columns a warp's load covers CPW
// columns of 32 / CPW rows RPT rows apart, each a part of a sector (the
// rest of the sector comes from L1 on the next row); a tile waits for its
// look-back before it writes.
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

// The block's arrangement.  A warp covers CPW neighbouring columns (32, or
// the power of two >= the columns where there are fewer) by 32 / CPW row
// groups: lane l takes column l % CPW of row group l / CPW.  The 8 warps
// are WC across the columns by WR down the rows.  A row group is RPT
// consecutive rows of its column.
struct Shape {
    int cpw, wc, wr;
    int64_t col_blocks, chunks;  // tiles across, tiles down
    __host__ __device__ int groups() const { return WARP / cpw; }  // row groups a warp
};

template <class In, class Op>
__global__ void __launch_bounds__(BLOCK, 2)
scan_columns(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive, Shape sh,
             unsigned long long *ticket, seg::ColumnSlots<lookback::Slots<typename Op::type>> cs) {
    using Acc = typename Op::type;
    constexpr int RPT = rows_of<Acc>();
    const Op op;
    __shared__ Acc total_s[WARPS][WARP];   // each warp's column totals (lane < CPW)
    __shared__ Acc prefix_s[WARPS][WARP];  // the chunks above, per column of the tile
    __shared__ int64_t tile_s;
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int wc = warp % sh.wc, wr = warp / sh.wc;
    const int col = lane % sh.cpw, group = lane / sh.cpw;

    if (threadIdx.x == 0) tile_s = int64_t(atomicAdd(ticket, 1ull));
    __syncthreads();
    const int64_t tile = tile_s, chunk = tile / sh.col_blocks, cb = tile - chunk * sh.col_blocks;
    const int64_t q = (cb * sh.wc + wc) * sh.cpw + col;                       // the thread's column
    const int64_t r0 = ((chunk * sh.wr + wr) * sh.groups() + group) * RPT;  // its first row
    const bool valid = q < lay.problems;
    const seg::Problem pr = lay.problem(valid ? q : 0);

    Acc x[RPT];
#pragma unroll
    for (int j = 0; j < RPT; ++j)
        x[j] = valid && r0 + j < lay.n ? Acc(in[pr.in0 + (r0 + j) * pr.in_step]) : Op::identity();
#pragma unroll
    for (int j = 1; j < RPT; ++j) x[j] = op(x[j - 1], x[j]);
    // The row groups of the warp, column by column: lanes CPW apart.
    Acc inc = x[RPT - 1];
    for (int off = sh.cpw; off < WARP; off *= 2) {
        const Acc y = __shfl_up_sync(FULL_MASK, inc, off);
        if (lane >= off) inc = op(y, inc);
    }
    const Acc in_warp_before = __shfl_up_sync(FULL_MASK, inc, sh.cpw);  // lanes >= CPW
    if (lane >= WARP - sh.cpw) total_s[warp][col] = inc;
    __syncthreads();

    // The warps above in the tile; the tile's total and its chunk's prefix
    // (the first warp down each column block).
    Acc above = Op::identity();
    for (int g = 0; g < wr; ++g) above = g == 0 ? total_s[wc][col] : op(above, total_s[g * sh.wc + wc][col]);
    if (wr == 0 && sh.chunks > 1 && lane < sh.cpw) {
        Acc p = Op::identity();
        if (valid) {
            Acc t = total_s[wc][col];
            for (int g = 1; g < sh.wr; ++g) t = op(t, total_s[g * sh.wc + wc][col]);
            seg::lane_publish_totals(cs, chunk, t, q, op);
            if (chunk > 0) p = seg::lane_look_back(cs, chunk, q, op);
        }
        prefix_s[wc][col] = p;
    }
    __syncthreads();

    // Everything above the thread's first row, top to bottom: the chunks
    // above, the warps above, the row groups above in the warp.
    const bool have_chunk = chunk > 0, have_warp = wr > 0, have_group = group > 0;
    Acc carry = Op::identity();
    bool have = false;
    if (have_chunk) carry = prefix_s[wc][col], have = true;
    if (have_warp) carry = have ? op(carry, above) : above, have = true;
    if (have_group) carry = have ? op(carry, in_warp_before) : in_warp_before, have = true;
    if (!valid) return;  // after the last barrier and shuffle
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
    using S = lookback::Slots<Acc>;
    using CS = seg::ColumnSlots<S>;
    static constexpr int RPT = rows_of<Acc>();
    static Shape shape(const seg::Layout &lay) {
        Shape s{};
        s.cpw = WARP;
        while (s.cpw > 1 && s.cpw / 2 >= lay.problems) s.cpw /= 2;
        const int64_t groups = ceil_div<int64_t>(lay.n, int64_t(s.groups()) * RPT);  // warps the axis fills
        s.wr = groups >= 8 ? 8 : groups >= 4 ? 4 : groups >= 2 ? 2 : 1;
        s.wc = WARPS / s.wr;
        s.col_blocks = ceil_div<int64_t>(lay.problems, int64_t(s.wc) * s.cpw);
        s.chunks = ceil_div<int64_t>(lay.n, int64_t(s.wr) * s.groups() * RPT);
        return s;
    }
    // Slots for every column, 0 where one chunk needs no look-back.
    static int64_t slots(const seg::Layout &lay, const Shape &s, int64_t &levels_count) {
        levels_count = 0;
        return s.chunks > 1 ? CS::count(s.chunks, levels_count) * lay.problems : 0;
    }
    static size_t scratch(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        int64_t lc;
        return 256 + S::bytes(slots(lay, shape(lay), lc));
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        const Shape s = shape(lay);
        const int64_t tiles = s.chunks * s.col_blocks;
        if (s.chunks >= (int64_t(1) << 35) || tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
        int64_t lc;
        const int64_t count = slots(lay, s, lc);
        char *p = static_cast<char *>(a.scratch);
        GP_TRY(cudaMemsetAsync(p, 0, 256 + S::zeroed_bytes(count), a.stream));
        const CS cs{S(p + 256, count), s.chunks, lc, lay.problems};
        GP_LAUNCH((scan_columns<In, Op>), unsigned(tiles), BLOCK, 0, a.stream, static_cast<const In *>(a.in),
                  static_cast<Acc *>(a.out), lay, a.inclusive != 0, s, reinterpret_cast<unsigned long long *>(p), cs);
        return cudaSuccess;
    }
};
}  // namespace

cudaError_t gp_scan_batched_columns(gp_scan_args *a) { return seg::dispatch<Columns>(a); }

GP_KERNEL_OF(gp_scan_batched_columns_kernel, scan_columns<float, Sum<float>>)
GP_NAMESPACE_END
