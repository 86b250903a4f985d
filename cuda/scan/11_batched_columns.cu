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
// Three forms.  The general one (scan_columns, any strides) is the mapping
// above, each lane a column of scalars.  With fewer than 32 columns its
// warp's load covers CPW columns of 32 / CPW rows RPT rows apart, each a
// part of a sector, and a tile waits for its look-back with the tile in
// registers.  Where the columns are contiguous and a row is whole aligned
// 16-byte vectors - a C array's axis 0 or middle axis, the common case -
// the vector tiles (scan_column_tiles, below) read and write whole row
// segments instead: a block's tile is up to 8 vectors of a row by 256 rows
// or more (2048 rows of one vector: 32 KiB of contiguous bytes), copied in
// by cp.async, scanned in shared memory, a column's look-back its own as
// before.  Where each row is exactly one vector, end to end (a (2^24, 4)
// float32 array along axis 0), the array is a 1-D scan whose elements are
// the rows, and the rows scan (rows_lookback.cuh, RowScan below) runs the
// 1-D kernel's rings of tiles on it.
// Assumes: any n, any strides (coalesced where the columns are contiguous:
// s_inner == 1, or inner == 1 and s_outer == 1); fewer than 2^35 chunks.
#include <type_traits>

#include "../async_copy.cuh"
#include "rows_lookback.cuh"
#include "segmented.cuh"

GP_NAMESPACE_BEGIN

namespace {
using namespace gp;

constexpr int BLOCK = 256, WARPS = BLOCK / WARP;

// Rows a thread: 16 for 4-byte accumulators, 8 for wider ones.  Chosen for
// the registers, not yet timed: no spills at 2 blocks an SM or more (79
// registers for float32 sums, up to 101 for 8-byte results; ptxas of CUDA
// 13.0, sm_90).
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
    // 32-bit division (the launcher keeps the tiles under 2^31): a 64-bit
    // one is a call of some 70 instructions before the tile's first load.
    const uint32_t tile = uint32_t(tile_s), cbs = uint32_t(sh.col_blocks), chunk32 = tile / cbs;
    const int64_t chunk = chunk32, cb = tile - chunk32 * cbs;
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

// ------------------------------------------------ tiles of 16-byte vectors
// The fast form, for a C-ordered axis (the columns contiguous: s_inner == 1)
// whose rows are whole 16-byte vectors (inner, s_n and s_outer multiples of
// VEC = 16 / sizeof(In), both pointers 16-byte aligned) and whose sums do
// not widen (sizeof(In) == sizeof(Acc)): a (2^24, 4) float32 array along
// axis 0 is a 1-D scan of float4 rows, four independent sums a vector.
//
// A block's tile is TR = G * RPT consecutive rows of VC neighbouring
// vectors (VC * VEC columns: the whole row where it is at most VC_MAX
// vectors wide, or up to 32 vectors for an axis shorter than the tile).  Thread t takes vector column c = t % VC and row group g =
// t / VC (G = THREADS / VC groups).  Loads and stores go round by round
// through shared memory: round j moves rows j*G ... j*G + G-1 of the tile,
// so a warp moves 32 / VC whole row segments of VC*16 bytes (512 contiguous
// bytes where the tile spans the row) - every load of the tile issued
// before the first is used.  In shared memory each thread scans its own RPT
// consecutive rows (a padding vector row after every RPT rows keeps those
// reads free of bank conflicts), the row groups are combined with shuffles
// (lanes VC apart) and across warps through shared memory, and the tiles
// down a column are chained by the per-column look-back above: thread t <
// VC * VEC publishes and looks back for column t of the tile (a scalar
// look-back a column, all the tile's columns at once).  Where the tile has
// at most 128 bytes of columns, the whole block polls every column's
// items at once, and they are level totals only (seg::LevelItems): a
// tile's prefix never waits for another tile's look-back, only for totals,
// which a tile publishes as soon as its rows are summed (a prefix
// published every 32 chunks would put each block of 32 chunks behind the
// look-back of its first).  The waits are still the cost where a row has
// few tiles across: (2^20, 64) float32 along axis 0 reads 87.4% of the
// copy roof with no look-back at all against 70.6% with it (bench/results/
// tune-colscan-nvidia-h200-2026-11-24.md).  The results go back through
// the same shared memory and out with evict-first stores.
// A block's tile is its index: blocks start in index order, so a tile only
// waits for tiles whose blocks have started (the assumption of CUB's
// single-pass scan).  The look-back's slots are zeroed by a kernel that lets
// this one start at once (programmatic dependent launch, sm_90+): a block
// sends its tile's copies out, then waits for the zeroing before it
// publishes or polls - the launch and the zeroing overlap the first loads
// (on an H200 +0.7 to +1.4 points of the roof against tiles taken from a
// counter after a memset: bench/results/tune-colscan-early-nvidia-h200-
// 2026-11-24.md).
// Every element's result is the same expression of the same inputs for a
// given layout (the shape follows n and inner only), so the bits never
// change between runs.
//
// The shape knobs, one struct (ColumnTiling below has the library's):
// THREADS a block, RPT rows a thread, VC_MAX vectors across at most,
// BLOCKS blocks an SM asked of the compiler (__launch_bounds__), ASYNC the
// tile copied in by cp.async (else loaded through registers).
template <int THREADS_, int RPT_, int VC_MAX_, int BLOCKS_, bool ASYNC_ = true, bool WAIT_ = true>
struct ColumnTileShape {
    static constexpr int THREADS = THREADS_, RPT = RPT_, VC_MAX = VC_MAX_, BLOCKS = BLOCKS_;
    static constexpr bool ASYNC = ASYNC_;
    // WAIT = false: no look-back (every chunk's prefix the identity, the
    // totals still published) - a wrong result, for bench/tune_colscan.cu
    // to time what the look-back's waits cost.
    static constexpr bool WAIT = WAIT_;
    static constexpr int WARPS_ = THREADS / WARP;
    static constexpr int TILE_VECTORS = (RPT + 1) * THREADS;  // with the padding rows
    static_assert(THREADS % WARP == 0 && THREADS >= 128 && VC_MAX <= WARP, "a block of whole warps");
    // The tile, the warps' totals (16 bytes a vector column), the prefixes
    // and the look-back items (4 KiB): static shared memory, 48 KiB at most.
    static_assert(TILE_VECTORS * 16 + WARPS_ * WARP * 16 + WARP * 16 + 4096 + 16 <= 48 * 1024,
                  "static shared memory");
};

// The library's shapes.  Float32: 256 threads x 8 rows at 4 blocks an SM
// (tiles of 32 KiB of input, at most 8 vectors - 128 bytes - of a row
// across, so a wide row's tile is 256 rows tall).  On an H200 (bench/
// results/tune-colscan-lanes-nvidia-h200-2026-11-24.md, float32 cumsum, %
// of a copy of the bytes read + written, two runs of the program) it took
// (2^20, 64) along axis 0 to 69.5% against 62.3 for 128 x 16, (16384,
// 16384) 83.6 against 83.4, (64, 4096, 64) along axis 1 65.2 against 60.5,
// and (64, 2^20) 86.0 against 88.0.  Against narrower, shorter or
// 192-thread tiles and loads through registers it is the fastest or within
// 0.5 points on the other shapes (tune-colscan-nvidia-h200-2026-11-24.md);
// on (64, 2^20) (one tile down the axis) 128 x 8 at 6 blocks an SM and
// 128 x 16 read 2-3 points more (90.3 / 89.6 against 87.5).  ptxas of CUDA 13.0
// (sm_90) caps it at 64 registers: float32 sums spill 20 bytes, min/max
// none.
// Other types: 128 threads x 16 rows at 4 blocks an SM (32 KiB tiles, 107
// to 126 registers, nothing spilled); at 256 x 8 their sums spill 8 (int32)
// to 40 bytes (int64), not timed.
template <class Acc>
using ColumnTilingFor = std::conditional_t<std::is_same<Acc, float>::value, ColumnTileShape<256, 8, 8, 4>,
                                           ColumnTileShape<128, 16, 8, 4>>;
using ColumnTiling = ColumnTilingFor<float>;  // float32's (bench/tune_colscan.cu, gpuprims.occupancy)

// Where the look-back's values of Acc live: 8-byte values in the
// fence-free paired words (lookback.cuh), 4-byte ones packed with their
// flag, wider ones behind a flag and a fence.
template <class Acc>
using ColumnSlotsOf = std::conditional_t<sizeof(Acc) == 8, lookback::PairedSlots<Acc>, lookback::Slots<Acc>>;

struct TileGeometry {
    int lvc;                       // log2 of the vectors across a tile (VC)
    int64_t col_blocks, chunks;    // tiles across a problem slab, tiles down
    int64_t vectors;               // 16-byte vectors of a row (inner / VEC)
    int64_t across;                // tiles across every slab (outer * col_blocks)
};

template <class Shape, class In, class Op>
__global__ void __launch_bounds__(Shape::THREADS, Shape::BLOCKS)
scan_column_tiles(const In *in, typename Op::type *out, seg::Layout lay, bool inclusive, TileGeometry geo,
                  seg::ColumnSlots<ColumnSlotsOf<typename Op::type>> cs) {
    using Acc = typename Op::type;
    static_assert(sizeof(In) == sizeof(Acc) && 16 % sizeof(Acc) == 0, "16-byte vectors of Acc");
    constexpr int VEC = 16 / sizeof(Acc), RPT = Shape::RPT, T = Shape::THREADS, WARPS = Shape::WARPS_;
    const Op op;
    __shared__ uint4 tile_s[Shape::TILE_VECTORS];
    __shared__ Acc warp_total_s[WARPS][WARP * VEC];  // each warp's column totals
    __shared__ Acc prefix_s[WARP * VEC];             // the chunks above, per column
    constexpr int GATHER = 128 / sizeof(Acc);        // columns a tile gathers at once (4 KiB of items)
    constexpr int ITEMS = WARP;                      // items a column a round
    constexpr int ITEMS_EACH = (ITEMS * GATHER + T - 1) / T;  // items a thread polls a round, at most
    __shared__ Acc items_s[ITEMS][GATHER];           // the items, column by column
    __shared__ unsigned long long landed_s;  // the copies of the tile (ASYNC)
    const int t = threadIdx.x, lane = t % WARP, warp = t / WARP;
    const int VC = 1 << geo.lvc, G = T >> geo.lvc;  // vectors across, row groups of the block
    const int c = t & (VC - 1), g = t >> geo.lvc;

    if (t == 0) {
        async_barrier_init(&landed_s, T);
        fence_barrier_init();
    }
    __syncthreads();
    // The tile's coordinates by 32-bit divisions, as in the kernel above.
    const uint32_t tile = blockIdx.x, across = uint32_t(geo.across), cbs = uint32_t(geo.col_blocks);
    const uint32_t chunk32 = tile / across, rest = tile - chunk32 * across, o32 = rest / cbs;
    const int64_t chunk = chunk32, o = o32, cb = rest - o32 * cbs;
    const int64_t r0 = chunk * int64_t(G) * RPT;                     // the tile's first row
    const int64_t vi = cb * VC + c;                                  // the thread's vector of the row
    const bool col_ok = vi < geo.vectors;
    const In *src = in + o * lay.s_outer + vi * VEC;
    Acc *dst = out + o * lay.n * lay.inner + vi * VEC;
    // Slot of tile row r, vector column c (one padding vector row every RPT rows).
    const auto slot = [VC](int r, int col) { return (r + r / RPT) * VC + col; };

    // The tile in, every round at once: cp.async copies (ASYNC: no
    // registers held while they fly; they land on the block's barrier) or
    // loads into registers, then stores.  Slots past n or past the row stay
    // unwritten and unread.
    if constexpr (Shape::ASYNC) {
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
            const int64_t row = r0 + j * G + g;
            if (col_ok && row < lay.n) async_copy16(&tile_s[slot(j * G + g, c)], src + row * lay.s_n);
        }
        async_arrive(&landed_s);
        grid_dependency_wait();  // the slots are zeroed
        async_wait_landed(&landed_s, 0);
    } else {
        uint4 raw[RPT];
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
            const int64_t row = r0 + j * G + g;
            raw[j] = col_ok && row < lay.n ? __ldg(reinterpret_cast<const uint4 *>(src + row * lay.s_n)) : uint4{};
        }
        grid_dependency_wait();  // the slots are zeroed
#pragma unroll
        for (int j = 0; j < RPT; ++j) tile_s[slot(j * G + g, c)] = raw[j];
    }
    __syncthreads();

    // The thread's RPT rows (rows past n read as identities: never
    // written, and only after every real row of the column), read from
    // shared memory twice - for the total now, for the scan once the
    // prefix is known - so that no tile waits through the look-back in
    // registers.  Both fold the rows in order: the total is the scan's last
    // value, bit for bit.
    const int64_t mine = r0 + int64_t(g) * RPT;  // the thread's first row
    const auto row_of = [&](int k, Acc (&e)[VEC]) {
        const uint4 v = tile_s[slot(g * RPT + k, c)];
        In raw_e[VEC];
        memcpy(raw_e, &v, 16);
#pragma unroll
        for (int i = 0; i < VEC; ++i) e[i] = mine + k < lay.n ? Acc(raw_e[i]) : Op::identity();
    };
    Acc inc[VEC], before[VEC];
    row_of(0, inc);
#pragma unroll
    for (int k = 1; k < RPT; ++k) {
        Acc e[VEC];
        row_of(k, e);
#pragma unroll
        for (int i = 0; i < VEC; ++i) inc[i] = op(inc[i], e[i]);
    }

    // The row groups of the warp, column by column (lanes VC apart).
    for (int off = VC; off < WARP; off *= 2) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const Acc y = __shfl_up_sync(FULL_MASK, inc[i], off);
            if (lane >= off) inc[i] = op(y, inc[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) before[i] = __shfl_up_sync(FULL_MASK, inc[i], VC & (WARP - 1));  // lanes >= VC
    if (lane >= WARP - VC)
#pragma unroll
        for (int i = 0; i < VEC; ++i) warp_total_s[warp][c * VEC + i] = inc[i];
    __syncthreads();

    // The tile's column totals, the warps in order; thread col < CT (the
    // tile's columns) publishes column col's.  Its prefix: where the tile
    // has at most GATHER columns, the whole block polls the look-back's
    // items of every column at once (gather, below) and thread col folds
    // its column's in order; wider tiles run a column's look-back in its
    // thread (seg::lane_look_back, with the prefixes it publishes at every
    // 32nd chunk).  The columns past the row (a last tile across) take no
    // part.
    // A tile is wider than GATHER columns only past VC_MAX vectors, which
    // tile_geometry allows where one tile covers the axis (no look-back):
    // with VC_MAX <= 8, every tile that looks back gathers, and the
    // per-thread look-back below is not compiled.
    const int CT = VC * VEC;
    const bool gather = Shape::VC_MAX * VEC <= GATHER || CT <= GATHER;
    const int mine_col = t % CT;
    const int64_t q_mine = o * lay.inner + cb * CT + mine_col;
    const bool mine_ok = cb * CT + mine_col < lay.inner;
    // Every column of the tile polls its items 0 .. count-1 (at most
    // ITEMS; item i at slot slot_of(i, q)) until all have been published,
    // each thread a share of them, all its polls in flight at once (held
    // in registers until the round is over), then into items_s[i][col].
    // use_issued (std::true_type) and first_round: the first polls' loads
    // were made earlier (peek) into `issued` (an array indexed by constants
    // only, so that it stays in registers while the loads fly).  The whole
    // block calls it (count is uniform), a barrier after.
    using Raw = typename ColumnSlotsOf<Acc>::Raw;
    const int first_item = t / CT, item_step = T / CT;
    Raw issued[ITEMS_EACH];
    const auto gather_items = [&](int count, auto slot_of, auto use_issued, bool first_round) {
        if (mine_ok) {
            Acc got[ITEMS_EACH];
            bool ok[ITEMS_EACH];
#pragma unroll
            for (int m = 0; m < ITEMS_EACH; ++m) {
                const int i = first_item + m * item_step;
                ok[m] = i >= count;
                if constexpr (decltype(use_issued)::value)
                    if (!ok[m] && first_round) ok[m] = cs.slots.decode(issued[m], slot_of(i, q_mine), got[m]);
            }
            for (;;) {
                bool all = true;
#pragma unroll
                for (int m = 0; m < ITEMS_EACH; ++m) {
                    if (!ok[m]) ok[m] = cs.slots.try_get(slot_of(first_item + m * item_step, q_mine), got[m]);
                    all = all && ok[m];
                }
                if (all) break;
                lookback::spin_pause<32>();
            }
#pragma unroll
            for (int m = 0; m < ITEMS_EACH; ++m)
                if (first_item + m * item_step < count) items_s[first_item + m * item_step][mine_col] = got[m];
        }
        __syncthreads();
    };
    const bool look = Shape::WAIT && geo.chunks > 1 && chunk > 0;  // the tile has a prefix to find
    if (geo.chunks > 1) {
        Acc own = Op::identity();  // thread col < CT: the tile's total, then the blocks of chunks it ends
        if (t < CT) {
            Acc p = Op::identity();
            if (mine_ok) {
                own = warp_total_s[0][t];
                for (int w = 1; w < WARPS; ++w) own = op(own, warp_total_s[w][t]);
                if (gather) {
                    cs.slots.publish(cs.total(0, chunk, q_mine), own);
                } else {
                    seg::lane_publish_totals(cs, chunk, own, q_mine, op);
                    if (look) p = seg::lane_look_back(cs, chunk, q_mine, op);
                }
            }
            prefix_s[t] = p;
        }
        // The totals of the aligned blocks of 32^(j+1) chunks this tile
        // ends (gathering tiles): the 31 blocks of 32^j before its own,
        // folded left to right, then its own (seg::lane_publish_totals'
        // expression).  Uniform over the block.
        for (int j = 0; gather && j + 1 < lookback::LEVELS && lookback::digit(chunk, j) == 31; ++j) {
            const int64_t b0 = (chunk >> (5 * j)) - 31;
            gather_items(31, [&](int i, int64_t q) { return cs.total(j, b0 + i, q); }, std::false_type{}, false);
            if (t < CT && mine_ok) {
                Acc f = items_s[0][t];
                for (int i = 1; i < 31; ++i) f = op(f, items_s[i][t]);
                own = op(f, own);
                cs.slots.publish(cs.total(j + 1, chunk >> (5 * (j + 1)), q_mine), own);
            }
            __syncthreads();  // the items read before the next level's land
        }
    }

    // A gathering tile's prefix: the blocks of the base-32 digits of the
    // chunk, the largest first, each level's left to right (seg::LevelItems)
    // - the expression of seg::lane_look_back, from level totals only, so no
    // tile waits for another tile's look-back.  ITEMS a round; the first
    // round's loads leave now and are read after the tile's own scan.
    const bool gathering = gather && look;
    const seg::LevelItems items(cs, gathering ? chunk : 0);
    if (gathering && mine_ok) {
#pragma unroll
        for (int m = 0; m < ITEMS_EACH; ++m) {
            const int i = first_item + m * item_step;
            if (i < items.count && i < ITEMS) issued[m] = cs.slots.peek(items.slot(cs.columns, i, q_mine));
        }
    }

    // The tile's own scan, the chunks above left out (the prefix is added on
    // the way out): everything above the thread's first row in the tile -
    // the warps above, the row groups above in the warp - then its rows,
    // back into its own slots (exclusive: each row gets what came before
    // it).
    const int gw = lane >> geo.lvc;  // the group within the warp
    Acc carry[VEC];
    const bool have = warp > 0 || gw > 0;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        bool seen = false;
        carry[i] = Op::identity();
        for (int w = 0; w < warp; ++w) {
            const Acc a = warp_total_s[w][c * VEC + i];
            carry[i] = seen ? op(carry[i], a) : a, seen = true;
        }
        if (gw > 0) carry[i] = seen ? op(carry[i], before[i]) : before[i];
    }
    Acc run[VEC];
#pragma unroll
    for (int k = 0; k < RPT; ++k) {
        Acc e[VEC], r[VEC];
        row_of(k, e);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const Acc prev = k == 0 ? carry[i] : (have ? op(carry[i], run[i]) : run[i]);
            run[i] = k == 0 ? e[i] : op(run[i], e[i]);
            if (inclusive) r[i] = have ? op(carry[i], run[i]) : run[i];
            else r[i] = k == 0 ? (have ? carry[i] : Op::identity()) : prev;
        }
        uint4 v;
        memcpy(&v, r, 16);
        tile_s[slot(g * RPT + k, c)] = v;
    }

    if (gathering) {  // uniform over the block
        Acc p = Op::identity();
        for (int r = 0; r < items.count; r += ITEMS) {
            const int n_r = items.count - r < ITEMS ? items.count - r : ITEMS;
            gather_items(n_r, [&](int i, int64_t q) { return items.slot(cs.columns, r + i, q); }, std::true_type{},
                         r == 0);
            if (t < CT && mine_ok)
                for (int i = 0; i < n_r; ++i) p = r + i == 0 ? items_s[i][t] : op(p, items_s[i][t]);
            __syncthreads();
        }
        if (t < CT) prefix_s[t] = p;
    }
    __syncthreads();
    if (!col_ok) return;
    // Out, each value after the chunks above it: the prefix, then the
    // tile's own scan (exclusive: the tile's first row is the prefix).
    Acc pre[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) pre[i] = prefix_s[c * VEC + i];
#pragma unroll
    for (int j = 0; j < RPT; ++j) {
        const int row_t = j * G + g;  // the row in the tile
        const int64_t row = r0 + row_t;
        if (row >= lay.n) continue;
        uint4 v = tile_s[slot(row_t, c)];
        if (look) {
            Acc e[VEC];
            memcpy(e, &v, 16);
#pragma unroll
            for (int i = 0; i < VEC; ++i) e[i] = !inclusive && row_t == 0 ? pre[i] : op(pre[i], e[i]);
            memcpy(&v, e, 16);
        }
        __stcs(reinterpret_cast<uint4 *>(dst + row * lay.inner), v);
    }
}

// The tile shape of a layout: VC the power of two >= the row's vectors,
// at most VC_MAX - or, for a short axis, up to a warp wide while the tile
// stays at least n rows tall (fewer rows of the tile left empty).
template <class Shape>
TileGeometry tile_geometry(const seg::Layout &lay, int vec) {
    TileGeometry g{};
    g.vectors = lay.inner / vec;
    g.lvc = 0;
    while ((1 << g.lvc) < Shape::VC_MAX && (int64_t(1) << g.lvc) < g.vectors) ++g.lvc;
    while ((1 << g.lvc) < WARP && (int64_t(1) << g.lvc) < g.vectors &&
           int64_t(Shape::THREADS >> (g.lvc + 1)) * Shape::RPT >= lay.n)
        ++g.lvc;
    g.col_blocks = ceil_div<int64_t>(g.vectors, int64_t(1) << g.lvc);
    g.chunks = ceil_div<int64_t>(lay.n, int64_t(Shape::THREADS >> g.lvc) * Shape::RPT);
    g.across = lay.problems / lay.inner * g.col_blocks;
    return g;
}

// Whether the layout fits the vector tiles: the columns contiguous and
// every row a whole number of aligned 16-byte vectors, no widening sum.
template <class In, class Acc>
constexpr bool vector_types() { return sizeof(In) == sizeof(Acc) && 16 % sizeof(Acc) == 0; }

template <class In, class Acc>
bool tiles_fit(const gp_scan_args &a) {
    constexpr int64_t VEC = 16 / sizeof(Acc);
    const gp_batch &b = a.batch;
    return vector_types<In, Acc>() && b.offsets == nullptr && b.inner >= VEC && b.inner % VEC == 0 &&
           b.s_inner == 1 && b.s_n % VEC == 0 && (b.outer == 1 || b.s_outer % VEC == 0) &&
           scan::aligned16<In>(a.in) && scan::aligned16<Acc>(a.out);
}

// The launch of one tile shape (bench/tune_colscan.cu times several).  The
// scratch: the column slots.
template <class Shape, class In, class Op>
struct ColumnTiles {
    using Acc = typename Op::type;
    using S = ColumnSlotsOf<Acc>;
    using CS = seg::ColumnSlots<S>;
    static constexpr int VEC = 16 / sizeof(Acc);
    static int64_t slots(const seg::Layout &lay, const TileGeometry &g, int64_t &levels_count) {
        levels_count = 0;
        return g.chunks > 1 ? CS::count(g.chunks, levels_count) * lay.problems : 0;
    }
    static size_t scratch(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        int64_t lc;
        return S::bytes(slots(lay, tile_geometry<Shape>(lay, VEC), lc));
    }
    static cudaError_t run(const gp_scan_args &a) {
        const seg::Layout lay = seg::Layout::of(a);
        const TileGeometry g = tile_geometry<Shape>(lay, VEC);
        const int64_t tiles = g.chunks * a.batch.outer * g.col_blocks;
        if (g.chunks >= (int64_t(1) << 35) || tiles > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
        int64_t lc;
        const int64_t count = slots(lay, g, lc);
        char *p = static_cast<char *>(a.scratch);
        const CS cs{S(p, count), g.chunks, lc, lay.problems};
        DeviceFacts d;
        GP_TRY(device_facts(d));
        const int64_t words = int64_t(S::zeroed_bytes(count)) / 8;  // none where one chunk needs no look-back
        if (words > 0) GP_TRY(lookback::launch_zero_words(p, words, a.stream));
        GP_LAUNCH_EARLY(d.major >= 9 && words > 0, (scan_column_tiles<Shape, In, Op>), unsigned(tiles),
                        Shape::THREADS, 0, a.stream, static_cast<const In *>(a.in), static_cast<Acc *>(a.out), lay,
                        a.inclusive != 0, g, cs);
        return cudaSuccess;
    }
};

// The general form (any strides, widening sums): the kernel above.
template <class In, class Op>
struct Strided {
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

// ------------------------------------------------- rows of one vector
// A C array whose rows are one 16-byte vector each, scanned along axis 0:
// the 1-D look-back scan of its rows (rows_lookback.cuh), each lane a run
// of RowTiling::VPT consecutive rows.  The vector tiles above chain 32 KiB
// tiles by a look-back that a block waits through with nothing else in
// flight; here each warp keeps its next tile loading while it waits.
// The library's shape: 2 warps a block, 17 rows a lane (8.5 KiB tiles of
// 544 rows), two stages filled by bulk copies (34 KiB a block), 6 blocks
// an SM - 168 registers, nothing spilled (ptxas of CUDA 13.0, sm_90).  On
// an H200 (bench/results/tune-rows-nvidia-h200-2026-11-23.md, (2^24, 4)
// float32 along axis 0, run 9): 0.164 ms, 78.7% of a copy (through the
// library in bench_scan.py: 0.162 ms, 80.2%, bench/results/scan-axis-
// nvidia-h200-2026-11-23-run13.md), against 0.344 ms (37.7%, run 6) for
// the vector tiles; the same tile pass without its
// look-back (every prefix the identity) 0.138 ms (93.7%).  Before the
// stage's reads were whole 16-byte loads (run 6): 2 x 15 rows 60.5% against
// 59.8%, three stages at 4 blocks 48.9%.  Not kept (runs 5-6): the tile
// kept in registers, the stage refilled before the look-back and each
// lane storing its own rows, 32.6-41.4% (27.6% even without the
// look-back: 16-byte stores 272 bytes apart); 16-byte totals behind a
// flag and a fence, 49.2-50.6%.
using RowTiling = lookback::LookbackShape<2, 17, 2, 6, true, true, true, true>;

template <class Shape, class In, class Op, class Probe = lookback::NoProbe>
struct RowScan {
    using R = lookback::RowsWith<Shape, In, Op, Probe>;
    // Whether the layout is rows of one aligned vector laid end to end.
    static bool fits(const gp_scan_args &a) {
        const gp_batch &b = a.batch;
        return b.offsets == nullptr && b.outer == 1 && b.inner * int64_t(sizeof(In)) == 16 && b.s_inner == 1 &&
               b.s_n == b.inner && scan::aligned16<In>(a.in) && scan::aligned16<typename Op::type>(a.out) &&
               R::fits(a.n);
    }
    static size_t scratch(const gp_scan_args &a) { return R::scratch(a.n); }
    static cudaError_t run(const gp_scan_args &a) {
        DeviceFacts d;
        GP_TRY(device_facts(d));
        return R::run(a, a.n, d);
    }
};

// The rows or the vector tiles where the layout fits them, the general
// kernel otherwise.  The scratch covers any: it is asked for before the
// pointers are known (their alignment decides too).
template <class In, class Op>
struct Columns {
    using Acc = typename Op::type;
    static size_t scratch(const gp_scan_args &a) {
        size_t bytes = Strided<In, Op>::scratch(a);
        if constexpr (vector_types<In, Acc>())
            bytes = std::max({bytes, ColumnTiles<ColumnTilingFor<Acc>, In, Op>::scratch(a),
                              RowScan<RowTiling, In, Op>::scratch(a)});
        return bytes;
    }
    static cudaError_t run(const gp_scan_args &a) {
        if constexpr (vector_types<In, Acc>()) {
            if (RowScan<RowTiling, In, Op>::fits(a)) return RowScan<RowTiling, In, Op>::run(a);
            if (tiles_fit<In, Acc>(a)) return ColumnTiles<ColumnTilingFor<Acc>, In, Op>::run(a);
        }
        return Strided<In, Op>::run(a);
    }
};
}  // namespace

cudaError_t gp_scan_batched_columns(gp_scan_args *a) { return seg::dispatch<Columns>(a); }

// gpuprims.occupancy's kernel: float32's tiles, the block of the registry's row.
static_assert(ColumnTiling::THREADS == 256, "registry.cu gives batched_columns 256 threads a block");
GP_KERNEL_OF(gp_scan_batched_columns_kernel, scan_column_tiles<ColumnTiling, float, Sum<float>>)
GP_NAMESPACE_END
