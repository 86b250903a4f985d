// registry.cu - the one table of reduction variants, in journey order.
// Python (gpuprims.variants("reduce")), the CLI, the benchmark and the tests
// all read their lists from here.  A row is a gp_variant (gpuprims.h), in
// field order: name, title, source, description; max_n, dtypes, block_size,
// where, launch; kernel, dynamic_smem; flags, instead, error_detail.
#include "reproducible.cuh"
#include "segmented_flat.cuh"

GP_NAMESPACE_BEGIN

// The launchers (C++ functions in gp::, one per variant).
cudaError_t gp_reduce_neighbored(gp_reduce_args *);
cudaError_t gp_reduce_neighbored_less(gp_reduce_args *);
cudaError_t gp_reduce_interleaved(gp_reduce_args *);
cudaError_t gp_reduce_unroll2(gp_reduce_args *);
cudaError_t gp_reduce_unroll4(gp_reduce_args *);
cudaError_t gp_reduce_unroll8(gp_reduce_args *);
cudaError_t gp_reduce_unroll_warp8(gp_reduce_args *);
cudaError_t gp_reduce_complete_unroll_warp8(gp_reduce_args *);
cudaError_t gp_reduce_complete_unroll_template(gp_reduce_args *);
cudaError_t gp_reduce_warp_shuffle(gp_reduce_args *);
cudaError_t gp_reduce_single_pass(gp_reduce_args *);
cudaError_t gp_reduce_batched_thread(gp_reduce_args *);
cudaError_t gp_reduce_segmented_block(gp_reduce_args *);
cudaError_t gp_reduce_segmented_warp(gp_reduce_args *);
cudaError_t gp_reduce_segmented_subwarp(gp_reduce_args *);
cudaError_t gp_reduce_segmented_split(gp_reduce_args *);
cudaError_t gp_reduce_batched_columns(gp_reduce_args *);
cudaError_t gp_reduce_segmented_adaptive(gp_reduce_args *);
cudaError_t gp_reduce_single_pass_reproducible(gp_reduce_args *);
cudaError_t gp_reduce_segmented_reproducible(gp_reduce_args *);
cudaError_t gp_reduce_segmented_flat(gp_reduce_args *);
cudaError_t gp_reduce_cub(gp_reduce_args *);
cudaError_t gp_reduce_cub_segmented(gp_reduce_args *);
cudaError_t gp_reduce_cub_reproducible(gp_reduce_args *);
extern "C" cudaError_t gp_reduce_cpu(gp_reduce_args *); /* csrc/reduce_cpu.c, in C */

/* the main kernels, for occupancy (in each variant's file) */
const void *gp_reduce_neighbored_kernel(void);
const void *gp_reduce_neighbored_less_kernel(void);
const void *gp_reduce_interleaved_kernel(void);
const void *gp_reduce_unroll2_kernel(void);
const void *gp_reduce_unroll4_kernel(void);
const void *gp_reduce_unroll8_kernel(void);
const void *gp_reduce_unroll_warp8_kernel(void);
const void *gp_reduce_complete_unroll_warp8_kernel(void);
const void *gp_reduce_complete_unroll_template_kernel(void);
const void *gp_reduce_warp_shuffle_kernel(void);
const void *gp_reduce_single_pass_kernel(void);
const void *gp_reduce_batched_thread_kernel(void);
const void *gp_reduce_segmented_block_kernel(void);
const void *gp_reduce_segmented_warp_kernel(void);
const void *gp_reduce_segmented_subwarp_kernel(void);
const void *gp_reduce_segmented_split_kernel(void);
const void *gp_reduce_batched_columns_kernel(void);
const void *gp_reduce_segmented_adaptive_kernel(void);
const void *gp_reduce_single_pass_reproducible_kernel(void);
const void *gp_reduce_segmented_reproducible_kernel(void);
const void *gp_reduce_segmented_flat_kernel(void);

// Why cub_reproducible failed (10_cub_reproducible.cu: built against a
// CCCL without the determinism requirement), where that file is built: not
// on the emulator, which runs no NVIDIA library code.
#ifdef GP_EMULATOR
#define GP_CUB_REPRODUCIBLE_DETAIL NULL
#else
extern "C" const char *gp_reduce_cub_reproducible_detail(void);
#define GP_CUB_REPRODUCIBLE_DETAIL gp_reduce_cub_reproducible_detail
#endif

extern "C" const gp_variant GP_SYM(gp_reduce_variants)[] = {
    {"neighbored", "Neighbored pairs, in place",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceNeighbored)",
     "Each block copies its tile to a global scratch tile and reduces it in place: at stride s the "
     "threads whose index is a multiple of 2s add the element s away. Scattered active threads keep "
     "every warp diverged until the end.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_neighbored,
     gp_reduce_neighbored_kernel, NULL,
     0, NULL, NULL},
    {"neighbored_less", "Neighbored pairs, fewer divergent warps",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceNeighboredLess)",
     "Thread t works on element 2*s*t, so the active threads are the first ones of the block: whole "
     "warps work or idle. Accesses within a warp are still strided.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_neighbored_less,
     gp_reduce_neighbored_less_kernel, NULL,
     0, NULL, NULL},
    {"interleaved", "Interleaved pairs",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceInterleaved)",
     "The partner of thread t is t + s with s halving from blockDim/2 to 1: the first threads stay "
     "active and a warp reads 32 consecutive elements.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_interleaved,
     gp_reduce_interleaved_kernel, NULL,
     0, NULL, NULL},
    {"unroll2", "Unrolled by 2",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceUnroll2)",
     "Each thread first adds 2 elements a block apart, so half as many blocks run the interleaved "
     "tree.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_unroll2, gp_reduce_unroll2_kernel, NULL,
     0, NULL, NULL},
    {"unroll4", "Unrolled by 4",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceUnroll4)",
     "Each thread first combines 4 elements a block apart: 4 independent loads in flight and a "
     "quarter of the blocks.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_unroll4, gp_reduce_unroll4_kernel, NULL,
     0, NULL, NULL},
    {"unroll8", "Unrolled by 8",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceUnroll8)",
     "Each thread first combines 8 elements a block apart: 8 independent loads in flight and an "
     "eighth of the blocks.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_unroll8, gp_reduce_unroll8_kernel, NULL,
     0, NULL, NULL},
    {"unroll_warp8", "Unrolled by 8, last warp unrolled",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceUnrollWarp8)",
     "As unroll8, but the tree stops at 64 values and warp 0 finishes with six volatile steps "
     "separated by __syncwarp() (the book's lock-step assumption races since Volta).",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_unroll_warp8,
     gp_reduce_unroll_warp8_kernel, NULL,
     0, NULL, NULL},
    {"complete_unroll_warp8", "Completely unrolled tree",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceCompleteUnrollWarp8)",
     "The tree loop written out as guarded steps for blocks of up to 1024 threads, then the "
     "unrolled last warp.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_complete_unroll_warp8,
     gp_reduce_complete_unroll_warp8_kernel, NULL,
     0, NULL, NULL},
    {"complete_unroll_template", "Completely unrolled, block size as template",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (reduceCompleteUnroll<blockSize>)",
     "The block size becomes a template parameter, so the guards are compile-time constants and "
     "the dead steps vanish.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_complete_unroll_template,
     gp_reduce_complete_unroll_template_kernel, NULL,
     0, NULL, NULL},
    {"warp_shuffle", "Warp shuffles",
     "__shfl_down_sync (CUDA Programming Guide, warp shuffle functions)",
     "Unroll by 8 into a register, reduce each warp with five __shfl_down_sync steps, meet the "
     "warp results in shared memory: no global scratch and one barrier per block.",
     -1, NULL, reduce::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_warp_shuffle,
     gp_reduce_warp_shuffle_kernel, NULL,
     0, NULL, NULL},
    {"single_pass", "Single pass: vector loads, last block finishes",
     "grid-stride loops with 16-byte loads; threadFenceReduction (CUDA samples) for the last block",
     "A grid that fills the GPU once strides over the array with 16-byte loads, several in flight "
     "per thread (evict-first for inputs of up to 128 MiB); warp shuffles reduce each block; the "
     "last block to finish reduces the partials "
     "in a fixed order. One launch, deterministic. Narrow inputs (bool, int8/16, uint8..64, float16) "
     "are read as they are, 16 bytes per load, and widened to NumPy's accumulator in registers.",
     -1, NULL, reduce::SinglePassTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_single_pass,
     gp_reduce_single_pass_kernel, NULL,
     GP_AUTO | GP_NARROW_IN, NULL, NULL},
    {"batched_thread", "Batched: a thread per problem",
     "one thread per output, a sequential loop: the mapping of column reductions in NumPy-on-GPU "
     "libraries (CuPy's reduction kernels along a non-contiguous axis)",
     "The first of the axis and segment steps: each of the outer x inner problems (or each segment) "
     "is one thread's sequential loop, several loads in flight. Neighbouring threads read "
     "neighbouring words where the problems are columns (axis 0 of a C array): coalesced; a row "
     "apart where they are rows or segments: 32 cache lines per warp load.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_batched_thread,
     gp_reduce_batched_thread_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_block", "Segmented: a block per problem",
     "a block per segment: cub::DeviceSegmentedReduce's kernel (CUB, CCCL) for every segment length",
     "Each problem gets a block of 256 threads: a block-stride loop reads the row coalesced, the "
     "warp shuffles and one barrier combine it. Wasteful on short rows (most threads idle, a tree "
     "and a barrier per row) and on a few long rows (a few blocks on a GPU that holds a thousand).",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_block,
     gp_reduce_segmented_block_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_warp", "Segmented: a warp per problem",
     "a warp per segment: CUB's medium-segment policy (cub::DeviceSegmentedReduce, CCCL); "
     "__shfl_down_sync reductions (CUDA Programming Guide)",
     "Each problem gets one warp: lane l reads elements l, l + 32, ..., five shuffles combine the "
     "lanes; no shared memory and no barrier, 8 problems per block and several in flight per warp. "
     "Short rows still idle most lanes.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_warp,
     gp_reduce_segmented_warp_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_subwarp", "Segmented: groups of 2-16 lanes per problem",
     "sub-warp groups per segment: CUB's small-segment policy (cub::DeviceSegmentedReduce, CCCL); "
     "__shfl_down_sync with a width (CUDA Programming Guide)",
     "A problem gets 2 to 16 lanes, the power of two that leaves each lane 2 of its (mean) "
     "length (one 16-byte vector where the problems are contiguous), so a warp holds several short "
     "problems side by side and reads neighbouring words; "
     "shuffles of that width combine each group. Lengths far from the mean keep a warp waiting "
     "on its longest group.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_subwarp,
     gp_reduce_segmented_subwarp_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"segmented_split", "Segmented: several blocks per long problem",
     "split reductions: partials per block combined by a second kernel in a fixed order "
     "(Harris, Optimizing Parallel Reduction in CUDA, NVIDIA 2007; CUB's two-pass DeviceReduce)",
     "Each problem is cut into equal chunks, one block each, so that a few long rows still fill "
     "the GPU; a second kernel combines each problem's partials in chunk order (no floating-point "
     "atomics: the same input gives the same bits). One chunk, one launch, where the problems "
     "alone fill the GPU.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_split,
     gp_reduce_segmented_split_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"batched_columns", "Batched: column tiles, rows split over blocks",
     "coalesced column reductions: threads across columns, a shared-memory tree across rows "
     "(the column pass of Harris' and CUB's 2-D reductions; CUB's fixed-size segment path)",
     "For a reduction over a strided axis (axis 0 of a C array): a block is TX neighbouring columns "
     "x 256/TX rows, so each warp load reads 32 neighbouring words even with 4 columns; rows are "
     "cut into chunks over blocks when the columns alone cannot fill the GPU, partials combined in "
     "a fixed order. An axis only, not segments.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_batched_columns,
     gp_reduce_batched_columns_kernel, NULL,
     GP_BATCHED, NULL, NULL},
    {"segmented_adaptive", "Adaptive: the mapping chosen by layout and length",
     "CUB's small/medium/large segment policies (cub::DeviceSegmentedReduce, CCCL); CuPy's "
     "reduction kernels' choice between the axis orders",
     "What variant='auto' runs for an axis or segments: column tiles where neighbouring problems "
     "are closer in memory than a problem's own elements (a thread per column where they are short "
     "and many); otherwise, by the (mean) problem length, a thread, 2 to 32 lanes (16-byte loads "
     "where the problems are contiguous), a warp, or one or several blocks per problem, so that "
     "every layout reads coalesced and fills the GPU; segments of a mean of 64 to 4096 elements in "
     "packs, a warp streaming up to 32 neighbouring segments as one run. Segments 16 times longer "
     "than the mean are binned apart and read in chunks, a block each (no such pass where the "
     "call's bound on the lengths, which the offsets' check finds, says none is that long). "
     "Deterministic.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_adaptive,
     gp_reduce_segmented_adaptive_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED | GP_AUTO_BATCHED, NULL, NULL},
    {"single_pass_reproducible", "Single pass, reproducible: binned accumulators",
     "Ahrens, Demmel, Nguyen, Algorithms for Efficient Reproducible Floating Point Summation, "
     "ACM TOMS 46(3), 2020 (binned summation); the loads and ticket of single_pass",
     "What determinism='gpu_to_gpu' runs for a float sum: single_pass's grid-stride loop, but each "
     "thread sums into 3 integer counts of fixed exponent bins and blocks merge those counts "
     "exactly, so the result depends on the multiset of inputs alone: the same bits on every "
     "GPU, grid, chunking and on the emulator, and more accurate than a float sum. Integer sums, "
     "min and max (exact in any order) run single_pass.",
     -1, NULL, reduce::SinglePassTuning::BLOCK, GP_ON_DEVICE,
     (gp_any_fn)gp_reduce_single_pass_reproducible, gp_reduce_single_pass_reproducible_kernel, NULL,
     GP_REPRODUCIBLE, NULL, NULL},
    {"segmented_reproducible", "Axes and segments, reproducible: binned accumulators per problem",
     "Ahrens, Demmel, Nguyen, ACM TOMS 46(3), 2020 (binned summation); a thread, warp or block per "
     "problem as steps 12-14",
     "What determinism='gpu_to_gpu' runs for a float sum over an axis or segments: a thread per "
     "problem for columns and short rows, a warp for rows up to 4096, a block for longer ones, each "
     "summing into binned accumulators merged exactly, so every problem gets the bits of the 1-D "
     "reproducible sum of its elements whatever the mapping, grid or GPU. Integer sums, min and "
     "max run segmented_adaptive.",
     -1, NULL, reduce::seg::SegTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_reproducible,
     gp_reduce_segmented_reproducible_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED | GP_REPRODUCIBLE, NULL, NULL},
    {"segmented_flat", "Segmented: the segments as one flat array in fixed tiles",
     "head flags and the segmented operator (Sengupta, Harris, Zhang, Owens, Scan primitives for GPU "
     "computing, 2007); the flat partition with a search for each part's first row (Merrill and "
     "Garland, Merge-based parallel sparse matrix-vector multiplication, SC16); the offsets of "
     "cub::DeviceSegmentedReduce (CCCL)",
     "The segments laid end to end are read as one array in fixed tiles, a block each (FlatTuning: "
     "4096 floats, 32 a thread), every load a coalesced 16-byte vector whatever the lengths. A "
     "search finds each tile's first offset once for all tiles; the tile marks its offsets, each "
     "thread walks its own run writing the segments that start and end there, and a block-wide segmented scan "
     "(flag: a segment starts in my run) finishes those that cross threads. Segments that cross "
     "tiles are finished from per-tile records by a small second kernel, in tile order: "
     "deterministic. Rows of a C array along the last axis are the same with computed offsets; "
     "a strided axis runs segmented_split's blocks. Reading evenly does not pay here: the marks, the "
     "walks and the block-wide scans make it slower than the adaptive step's per-segment mappings at "
     "most segment lengths, so auto does not take it.",
     -1, NULL, reduce::flat::FlatTuning::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_reduce_segmented_flat,
     gp_reduce_segmented_flat_kernel, NULL,
     GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"cub", "CUB DeviceReduce (baseline)",
     "cub::DeviceReduce::Reduce, CCCL (the nvidia-cuda-cccl wheel's where the build has it, else the CUDA toolkit's)",
     "NVIDIA's production reduction, with the same operator and accumulator type: the baseline "
     "every other variant is measured against.",
     -1, NULL, 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_reduce_cub), NULL, NULL,
     GP_BASELINE | GP_LIBRARY, NULL, NULL},
    {"cub_segmented", "CUB DeviceSegmentedReduce (baseline for axes and segments)",
     "cub::DeviceSegmentedReduce::Reduce, CCCL (the nvidia-cuda-cccl wheel's where the build has it, "
     "else the CUDA toolkit's)",
     "NVIDIA's production segmented reduction, with the same operator and accumulator type, given "
     "the segments' offsets, or for an axis offsets computed from the problem index (a transform "
     "of a counting iterator). Only layouts whose problems are contiguous runs (axis -1 of a C "
     "array, segments); a strided axis (columns) fails with cudaErrorInvalidValue.",
     -1, NULL, 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_reduce_cub_segmented), NULL, NULL,
     GP_BASELINE | GP_BATCHED | GP_SEGMENTED, NULL, NULL},
    {"cub_reproducible", "CUB DeviceReduce, reproducible on every GPU (baseline)",
     "cub::DeviceReduce::Reduce with cuda::execution::require(cuda::execution::determinism::"
     "gpu_to_gpu), CCCL 3.5 or newer; Ahrens, Demmel and Nguyen, ACM TOMS 2020",
     "NVIDIA's production reduction asked for the same bits on every GPU: float sums go through "
     "a reproducible floating-point accumulator (fixed exponent bins), the rival of a "
     "reproducible reduction. Integer sums take the requirement too (exact); min/max (numpy's "
     "NaN rule) are exact in any order and run CUB's default reduction. Built against an older "
     "CCCL, a call raises CudaError saying so.",
     -1, NULL, 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_reduce_cub_reproducible), NULL, NULL,
     GP_BASELINE, NULL, GP_CUB_REPRODUCIBLE_DETAIL},
    {"cpu", "CPU recursiveReduce (host reference)",
     "Cheng, Grossman, McKercher, Professional CUDA C Programming, ch. 3 (recursiveReduce)",
     "The book's recursive pairwise reduction in C, on the host, over a copy of the input (the "
     "book's version reduces its argument in place).",
     -1, NULL, 0, GP_ON_HOST, (gp_any_fn)gp_reduce_cpu, NULL, NULL,
     GP_BASELINE, NULL, NULL},
};
extern "C" const int GP_SYM(gp_reduce_nvariants) =
    sizeof(GP_SYM(gp_reduce_variants)) / sizeof(GP_SYM(gp_reduce_variants)[0]);

GP_NAMESPACE_END
