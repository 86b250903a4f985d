// registry.cu - the one table of scan variants, in journey order.
// Python (gpuprims.variants("scan")), the CLI, the benchmark and the tests
// all read their lists from here.  A row is a gp_variant (gpuprims.h), in
// field order: name, title, source, description; max_n, dtypes, block_size,
// where, launch; kernel, dynamic_smem; flags, instead, error_detail.
#include "lookback_tuning.cuh"
#include "reproducible.cuh"
#include "scan.cuh"

GP_NAMESPACE_BEGIN

// The launchers (C++ functions in gp::, one per variant).
cudaError_t gp_scan_naive(gp_scan_args *);
cudaError_t gp_scan_hillis_steele(gp_scan_args *);
cudaError_t gp_scan_hillis_steele_double_buffer(gp_scan_args *);
cudaError_t gp_scan_blelloch(gp_scan_args *);
cudaError_t gp_scan_blelloch_padded(gp_scan_args *);
cudaError_t gp_scan_hillis_steele_multiblock(gp_scan_args *);
cudaError_t gp_scan_blelloch_multiblock(gp_scan_args *);
cudaError_t gp_scan_warp_shuffle(gp_scan_args *);
cudaError_t gp_scan_decoupled_lookback(gp_scan_args *);
cudaError_t gp_scan_batched_thread(gp_scan_args *);
cudaError_t gp_scan_segmented_warp(gp_scan_args *);
cudaError_t gp_scan_segmented_block(gp_scan_args *);
cudaError_t gp_scan_segmented_lookback(gp_scan_args *);
cudaError_t gp_scan_batched_columns(gp_scan_args *);
cudaError_t gp_scan_segmented_adaptive(gp_scan_args *);
cudaError_t gp_scan_decoupled_lookback_reproducible(gp_scan_args *);
cudaError_t gp_scan_segmented_reproducible(gp_scan_args *);
cudaError_t gp_scan_cub(gp_scan_args *);
cudaError_t gp_scan_cub_deterministic(gp_scan_args *);
extern "C" cudaError_t gp_scan_cpu(gp_scan_args *); /* csrc/scan_cpu.c, in C */

/* the main kernels, for occupancy (in each variant's file) */
const void *gp_scan_naive_kernel(void);
const void *gp_scan_hillis_steele_kernel(void);
size_t gp_scan_hillis_steele_smem(int threads);
const void *gp_scan_hillis_steele_double_buffer_kernel(void);
size_t gp_scan_hillis_steele_double_buffer_smem(int threads);
const void *gp_scan_blelloch_kernel(void);
size_t gp_scan_blelloch_smem(int threads);
const void *gp_scan_blelloch_padded_kernel(void);
size_t gp_scan_blelloch_padded_smem(int threads);
const void *gp_scan_warp_shuffle_kernel(void);
const void *gp_scan_decoupled_lookback_kernel(void);
size_t gp_scan_decoupled_lookback_smem(int threads);
const void *gp_scan_batched_thread_kernel(void);
const void *gp_scan_segmented_warp_kernel(void);
const void *gp_scan_segmented_block_kernel(void);
const void *gp_scan_segmented_lookback_kernel(void);
size_t gp_scan_segmented_lookback_smem(int);
const void *gp_scan_batched_columns_kernel(void);
const void *gp_scan_decoupled_lookback_reproducible_kernel(void);
const void *gp_scan_segmented_reproducible_kernel(void);

// Why cub_deterministic failed (06_cub_deterministic.cu: built against a
// CCCL without the determinism requirement), where that file is built: not
// on the emulator, which runs no NVIDIA library code.
#ifdef GP_EMULATOR
#define GP_CUB_DETERMINISTIC_DETAIL NULL
#else
extern "C" const char *gp_scan_cub_deterministic_detail(void);
#define GP_CUB_DETERMINISTIC_DETAIL gp_scan_cub_deterministic_detail
#endif

extern "C" const gp_variant GP_SYM(gp_scan_variants)[] = {
    {"naive", "Each thread sums its own prefix",
     "blog post \"CUDA learning (2): parallel scan\" (scan0)",
     "Thread i combines in[0..i] by itself: n(n+1)/2 operations and every element read by up to n "
     "threads. max_n keeps a call under a second.",
     int64_t(1) << 16, NULL, scan::NAIVE_BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_scan_naive,
     gp_scan_naive_kernel, NULL,
     0, NULL, NULL},
    {"hillis_steele", "Hillis-Steele, one block, two barriers per step",
     "Hillis & Steele, CACM 1986; scan1 of \"CUDA learning (2): parallel scan\"",
     "One element per thread in shared memory; at step d every thread adds the element 2^d to its "
     "left: log2 n steps, n log n work, a barrier between the reads and the writes of each step. "
     "One block: max_n elements.",
     scan::HS_TILE, NULL, scan::HS_TILE, GP_ON_DEVICE, (gp_any_fn)gp_scan_hillis_steele,
     gp_scan_hillis_steele_kernel, gp_scan_hillis_steele_smem,
     0, "hillis_steele_multiblock", NULL},
    {"hillis_steele_double_buffer", "Hillis-Steele, double-buffered",
     "Harris et al., GPU Gems 3, ch. 39 (double buffer); scan2 of \"CUDA learning (2): parallel scan\"",
     "Two shared buffers, read one and write the other, swapped every step: one barrier per step. "
     "One block: max_n elements.",
     scan::HS_TILE, NULL, scan::HS_TILE, GP_ON_DEVICE, (gp_any_fn)gp_scan_hillis_steele_double_buffer,
     gp_scan_hillis_steele_double_buffer_kernel, gp_scan_hillis_steele_double_buffer_smem,
     0, "hillis_steele_multiblock", NULL},
    {"blelloch", "Blelloch up-sweep / down-sweep, one block",
     "Blelloch, Prefix sums and their applications, 1990; scan3 of \"CUDA learning (2): parallel scan\"",
     "A reduction tree up, the identity at the root, partial sums passed down: 2(n-1) operations, "
     "two elements per thread. Its strides pile the accesses of a warp onto few shared-memory "
     "banks. One block: max_n elements.",
     scan::BL_TILE, NULL, scan::BL_TILE / 2, GP_ON_DEVICE, (gp_any_fn)gp_scan_blelloch,
     gp_scan_blelloch_kernel, gp_scan_blelloch_smem,
     0, "blelloch_multiblock", NULL},
    {"blelloch_padded", "Blelloch with one pad word per 32 elements",
     "Harris et al., GPU Gems 3, ch. 39 (bank-conflict padding); scan4 of \"CUDA learning (2): parallel scan\"",
     "Index i is stored at i + i/32, so the tree's power-of-two strides spread over the banks: no "
     "bank conflicts. One block: max_n elements.",
     scan::BL_TILE, NULL, scan::BL_TILE / 2, GP_ON_DEVICE, (gp_any_fn)gp_scan_blelloch_padded,
     gp_scan_blelloch_padded_kernel, gp_scan_blelloch_padded_smem,
     0, "blelloch_multiblock", NULL},
    {"hillis_steele_multiblock", "Scan-then-fan over double-buffered Hillis-Steele tiles",
     "Harris et al., GPU Gems 3, ch. 39 (scan-then-fan); scan5 of \"CUDA learning (2): parallel scan\"",
     "Each block scans a tile of 1024 elements and writes its total; the totals are scanned the "
     "same way, recursively; a last kernel adds each tile's prefix. Any n.",
     -1, NULL, scan::HS_TILE, GP_ON_DEVICE, (gp_any_fn)gp_scan_hillis_steele_multiblock,
     gp_scan_hillis_steele_double_buffer_kernel, gp_scan_hillis_steele_double_buffer_smem,
     0, NULL, NULL},
    {"blelloch_multiblock", "Scan-then-fan over padded Blelloch tiles",
     "Harris et al., GPU Gems 3, ch. 39 (scan-then-fan); scan6 of \"CUDA learning (2): parallel scan\"",
     "Tiles of 2048 elements scanned by the padded Blelloch tree, then scan-then-fan. Any n.",
     -1, NULL, scan::BL_TILE / 2, GP_ON_DEVICE, (gp_any_fn)gp_scan_blelloch_multiblock,
     gp_scan_blelloch_padded_kernel, gp_scan_blelloch_padded_smem,
     0, NULL, NULL},
    {"warp_shuffle", "Warp-shuffle block scan, reduce-then-scan",
     "__shfl_up_sync; reduce-then-scan (Merrill & Grimshaw, Parallel scan for stream architectures, 2009)",
     "16 elements per thread scanned in registers, thread totals across a warp with __shfl_up_sync, "
     "two barriers per tile. Reduce every tile, scan the totals, scan every tile from its prefix: "
     "the input is read twice.",
     -1, NULL, scan::SHUFFLE_BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_scan_warp_shuffle,
     gp_scan_warp_shuffle_kernel, NULL,
     0, NULL, NULL},
    {"decoupled_lookback", "Single pass with decoupled look-back",
     "Merrill & Garland, Single-pass Parallel Prefix Scan with Decoupled Look-back (2016)",
     "One pass over warp tiles: persistent warps take tiles in order and keep their next tiles "
     "loading into shared memory (one bulk copy a tile on sm_90, else cp.async; a completion "
     "barrier per stage) while they wait; a "
     "warp publishes a tile's total as soon as it lands, even while it waits for a prefix (and "
     "the totals of the aligned blocks of 32^j tiles it ends), and builds a tile's prefix from "
     "the blocks of the base-32 digits of its index, each digit's blocks reduced in a fixed tree. "
     "The traffic of a copy; deterministic (the prefix is always the same tree of tile totals).",
     -1, NULL, lookback::Tuning::WARPS * WARP, GP_ON_DEVICE, (gp_any_fn)gp_scan_decoupled_lookback,
     gp_scan_decoupled_lookback_kernel, gp_scan_decoupled_lookback_smem,
     GP_AUTO, NULL, NULL},
    {"batched_thread", "A thread per problem, a sequential scan",
     "the CPU scan of \"CUDA learning (2): parallel scan\", one per thread",
     "For an axis or segments: thread p scans problem p alone, element by element. Along a "
     "non-last axis neighbouring threads read neighbouring columns (coalesced); along rows each "
     "thread's loads are a row apart, and a few long problems keep only a few threads busy.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_scan_batched_thread,
     gp_scan_batched_thread_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_warp", "A warp per problem, shuffle scans with a carry",
     "__shfl_up_sync; the warp-per-segment policy of CUB's DeviceSegmentedReduce (CCCL)",
     "A warp walks its problem in rounds of 32 consecutive elements (coalesced along rows), scans "
     "each with five __shfl_up_sync steps and carries lane 31's value into the next round. Short "
     "problems leave lanes idle; few long ones leave warps idle.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_scan_segmented_warp,
     gp_scan_segmented_warp_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_block", "A block per problem, tile scans with a carry",
     "Harris et al., GPU Gems 3, ch. 39 (scan-then-fan, inside one block); the block-per-segment "
     "policy of CUB's DeviceSegmentedReduce (CCCL)",
     "A block walks its problem in tiles of 1024: each warp scans 4 rounds of 32, the 8 warp totals "
     "are combined through shared memory, and the block carries its running value from tile to "
     "tile in a register. Fewer problems than the GPU holds blocks leave it idle.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_scan_segmented_block,
     gp_scan_segmented_block_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_lookback", "Flat tiles, head flags, single-pass look-back",
     "Sengupta et al., Scan primitives for GPU computing (2007: head flags); Merrill & Garland, "
     "decoupled look-back (2016)",
     "The problems laid end to end (C rows, segments) are scanned as one array by decoupled_lookback's "
     "persistent warps, whatever the lengths: warp tiles of 2048 elements (1024 for 8-byte data or "
     "results) "
     "taken in order, the next ones landing in a ring in shared memory. Elements that start a "
     "problem (row starts computed from the row length, segment offsets marked per tile) restart "
     "the scan, the lanes' vectors are combined across the warp with the segmented operator, and "
     "a tile continuing a problem gets its prefix from the tiles before through the deterministic "
     "look-back (none where the rows divide the tile). Segments of a mean of 8192 or more: each a "
     "1-D scan with a look-back tree of its own, on one grid of tiles over the data (no heads; a "
     "tile where segments meet is scanned once a part). Other layouts: blocks of 256 threads, "
     "element by element. Input read once, output written once.",
     -1, NULL, 64, GP_ON_DEVICE, (gp_any_fn)gp_scan_segmented_lookback,
     gp_scan_segmented_lookback_kernel, gp_scan_segmented_lookback_smem,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"batched_columns", "Lanes across columns, chunks chained by look-back",
     "the column mapping of batched_thread; Merrill & Garland, decoupled look-back (2016), one "
     "chain per column",
     "For a non-last axis. Where each row is one aligned 16-byte vector, end to end (a C (n, 4) "
     "float32 or (n, 2) float64 array along axis 0), the rows are the elements of a 1-D "
     "decoupled look-back scan: persistent warps, each with a ring of tiles copied in ahead, "
     "each lane folding 17 consecutive rows alone, one warp scan a tile, 16-byte totals. Where "
     "the columns are contiguous and a row is whole aligned 16-byte vectors (a C array's axis 0 "
     "or a middle axis), a block's tile is up to 8 vectors of a row "
     "by 256 or more rows, copied in whole row segments by cp.async into shared memory, where "
     "each thread scans 8 (float32; 256 threads) or 16 (other types; 128 threads) rows of its "
     "vector of columns; the row groups are combined with shuffles and through shared memory, "
     "and a long axis is cut into chunks whose column totals chain through a deterministic "
     "look-back per column, the block polling every column's at once; the blocks start loading "
     "while the look-back's slots are zeroed. Any other layout: lane l takes column l (fewer "
     "columns: the warp folds into row groups), 16 rows a thread, each lane running its "
     "column's look-back.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_scan_batched_columns,
     gp_scan_batched_columns_kernel, NULL,
     GP_BATCHED, NULL, NULL},
    {"segmented_adaptive", "The mapping chosen by layout",
     "CUB's dispatch layers (a policy per call from the problem's shape)",
     "Problems that are neighbours in memory (a non-last axis): batched_thread where they fill "
     "the GPU (2^18 or more), else batched_columns. Rows: rows of whole tiles of the 1-D "
     "decoupled_lookback (float32: multiples of 2048) all at once through it, a look-back tree a "
     "row; else segmented_warp for many long rows, the 1-D decoupled_lookback once per row for rows "
     "of 2^23 or more, else segmented_lookback. Segments (their lengths live on the device) of a "
     "mean of 2 to 8192 on aligned data: packs of neighbouring segments a warp (up to 512 of the "
     "shortest), streamed as one run with no look-back, the long ones cut out and scanned apart "
     "in chunks (no such pass where the call's bound on the lengths says none is long); other "
     "segments: "
     "segmented_lookback. Thresholds measured on an H200. What auto runs for an axis or segments.",
     -1, NULL, 64, GP_ON_DEVICE, (gp_any_fn)gp_scan_segmented_adaptive,
     gp_scan_segmented_lookback_kernel, gp_scan_segmented_lookback_smem,
     GP_BATCHED | GP_SEGMENTED | GP_AUTO_BATCHED, NULL, NULL},
    {"decoupled_lookback_reproducible", "Decoupled look-back, reproducible: a scan of binned accumulators",
     "Merrill & Garland, decoupled look-back (2016); Ahrens, Demmel, Nguyen, Algorithms for Efficient "
     "Reproducible Floating Point Summation, ACM TOMS 46(3), 2020 (binned summation)",
     "What determinism='gpu_to_gpu' runs for a float cumsum: a block sums a chunk of tiles into "
     "an accumulator state (3 integer counts of fixed exponent bins), looks back over the chunks' "
     "states for its prefix, then each warp scans its slice of the chunk with a running state, and "
     "every element is its prefix's state rounded once - where the prefix already holds the "
     "largest magnitude, one 128-bit integer count a thread, advanced and rounded per element. "
     "Small inputs look back tile by tile. Element i has the bits of the reproducible sum of "
     "x[:i+1] on every GPU, grid, chunking and on the emulator. Integer sums, min and max (exact "
     "in any order) run decoupled_lookback.",
     -1, NULL, scanrep::Shape::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_scan_decoupled_lookback_reproducible,
     gp_scan_decoupled_lookback_reproducible_kernel, NULL,
     GP_REPRODUCIBLE, NULL, NULL},
    {"segmented_reproducible", "Axes and segments, reproducible: a running accumulator per problem",
     "Ahrens, Demmel, Nguyen, ACM TOMS 46(3), 2020 (binned summation); a thread or a warp per "
     "problem as steps 10 and 11",
     "What determinism='gpu_to_gpu' runs for a float cumsum over an axis or segments: a thread per "
     "problem for columns and short problems, else a warp per problem taking 32 elements a round, "
     "with a running binned state merged exactly, so every problem gets the bits of the 1-D "
     "reproducible scan of its elements whatever the mapping, grid or GPU. Integer sums, min and "
     "max run segmented_adaptive.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_scan_segmented_reproducible,
     gp_scan_segmented_reproducible_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED | GP_REPRODUCIBLE, NULL, NULL},
    {"cub", "CUB DeviceScan (baseline)",
     "cub::DeviceScan::InclusiveSum / ExclusiveSum (sums in the input's type), InclusiveScan / "
     "ExclusiveScan otherwise; CCCL (the nvidia-cuda-cccl wheel's where the build has it, else the CUDA toolkit's)",
     "NVIDIA's production scan (decoupled look-back), same operator and accumulator type: the "
     "baseline. Not bitwise reproducible for float sums: its look-back adds whatever prefixes "
     "have been published (measured: 10 different results in 10 runs on an H200).",
     -1, NULL, 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_scan_cub), NULL, NULL,
     GP_BASELINE | GP_LIBRARY, NULL, NULL},
    {"cub_deterministic", "CUB DeviceScan, run-to-run deterministic (baseline)",
     "cub::DeviceScan::InclusiveSum / ExclusiveSum with cuda::execution::require(cuda::execution::"
     "determinism::run_to_run), CCCL 3.5 or newer",
     "NVIDIA's production scan asked for the same bits run after run: float sums combine the "
     "tiles' totals in a fixed order, the rival of decoupled_lookback. Integer scans take the "
     "requirement with CUB's own operators; float min/max (numpy's NaN rule) are exact in any "
     "order and run CUB's default scan. Built against an older CCCL, a call raises CudaError "
     "saying so.",
     -1, NULL, 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_scan_cub_deterministic), NULL, NULL,
     GP_BASELINE, NULL, GP_CUB_DETERMINISTIC_DETAIL},
    {"cpu", "CPU serial scan (host reference)",
     "blog post \"CUDA learning (2): parallel scan\" (CPU inclusive and exclusive scans)",
     "The blog's serial loops in C, on the host.",
     -1, NULL, 0, GP_ON_HOST, (gp_any_fn)gp_scan_cpu, NULL, NULL,
     GP_BASELINE, NULL, NULL},
};
extern "C" const int GP_SYM(gp_scan_nvariants) =
    sizeof(GP_SYM(gp_scan_variants)) / sizeof(GP_SYM(gp_scan_variants)[0]);
GP_NAMESPACE_END
