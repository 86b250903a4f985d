// registry.cu - the one table of transpose variants, in journey order.
// Python (gpuprims.variants("transpose")), the CLI, the benchmark and the
// tests all read their lists from here.  A row is a gp_variant (gpuprims.h),
// in field order: name, title, source, description; max_n, dtypes,
// block_size, where, launch; kernel, dynamic_smem; flags, instead,
// error_detail.  block_size of tiled_wide: its float32 (4-byte) tuning.
// The 2-D journey (serial ... tiled_wide, cuBLAS, the CPU loop) takes
// matrices only (GP_MATRIX); nd_naive and nd_tiled take any rank, and
// variant="auto" runs nd_tiled, which runs tiled_wide's kernel where the
// call is a matrix of 2-, 4- or 8-byte elements.
#include "nd.cuh"
#include "tiled.cuh"

GP_NAMESPACE_BEGIN

// The launchers (C++ functions in gp::, one per variant).
cudaError_t gp_transpose_serial(const gp_transpose_args *);
cudaError_t gp_transpose_per_row(const gp_transpose_args *);
cudaError_t gp_transpose_per_element(const gp_transpose_args *);
cudaError_t gp_transpose_tiled(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_padded(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_coarsened(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *);
cudaError_t gp_transpose_nd_naive(const gp_transpose_args *);
cudaError_t gp_transpose_nd_tiled(const gp_transpose_args *);
cudaError_t gp_transpose_copy(const gp_transpose_args *);
cudaError_t gp_transpose_cublas(const gp_transpose_args *);
extern "C" cudaError_t gp_transpose_cpu(const gp_transpose_args *); /* csrc/transpose_cpu.c, in C */

/* the main kernels, for occupancy (in each variant's file) */
const void *gp_transpose_serial_kernel(void);
const void *gp_transpose_per_row_kernel(void);
const void *gp_transpose_per_element_kernel(void);
const void *gp_transpose_tiled_kernel(void);
const void *gp_transpose_tiled_padded_kernel(void);
const void *gp_transpose_tiled_coarsened_kernel(void);
const void *gp_transpose_tiled_wide_kernel(void);
const void *gp_transpose_nd_naive_kernel(void);
const void *gp_transpose_nd_tiled_kernel(void);

// cuBLAS's own words for a failed call (07_cublas.cu), where that file is
// built: not on the emulator, which runs no NVIDIA library code.
#ifdef GP_EMULATOR
#define GP_CUBLAS_DETAIL NULL
#else
extern "C" const char *gp_cublas_error(void); /* why the last call failed, or NULL */
#define GP_CUBLAS_DETAIL gp_cublas_error
#endif

extern "C" const gp_variant GP_SYM(gp_transpose_variants)[] = {
    {"serial", "One thread, <<<1, 1>>>",
     "Orchid, \"GPU program optimization (2): matrix transpose\", 2016 (transpose_serial)",
     "The CPU loop run by a single GPU thread: no parallelism at all, each load waiting on memory. "
     "max_n keeps a call under a second.",
     int64_t(1) << 20, NULL, 1, GP_ON_DEVICE, (gp_any_fn)gp_transpose_serial,
     gp_transpose_serial_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"per_row", "One thread per output row",
     "Orchid, \"GPU program optimization (2): matrix transpose\", 2016 (transpose_parallel_per_row)",
     "Thread i writes output row i, looping over the input rows: coalesced reads, writes a row "
     "apart. Tall, thin matrices leave it nearly serial; max_n keeps a call under a second.",
     int64_t(1) << 26, NULL, transpose::PER_ROW_BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_transpose_per_row,
     gp_transpose_per_row_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"per_element", "One thread per element, 16 x 16 blocks",
     "Orchid, \"GPU program optimization (2): matrix transpose\", 2016 (transpose_parallel_per_element)",
     "Every element its own thread: reads along input rows are coalesced, writes of a warp land a "
     "row apart, one memory transaction each.",
     -1, NULL, transpose::PER_ELEMENT_K * transpose::PER_ELEMENT_K, GP_ON_DEVICE,
     (gp_any_fn)gp_transpose_per_element,
     gp_transpose_per_element_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"tiled", "Shared-memory tile, 32 x 32",
     "Ruetsch & Micikevicius, Optimizing Matrix Transpose in CUDA, NVIDIA 2009 (shared-memory tile)",
     "The block stages a 32 x 32 tile in shared memory so that both reads and writes are "
     "coalesced; reading a tile column is now a 32-way shared-memory bank conflict.",
     -1, NULL, transpose::TiledPlain::THREADS, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled,
     gp_transpose_tiled_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"tiled_padded", "Tile padded by one column",
     "Ruetsch & Micikevicius, Optimizing Matrix Transpose in CUDA, NVIDIA 2009 (padding against bank conflicts)",
     "tile[32][33]: a column of the tile spreads over all 32 banks, the conflict is gone.",
     -1, NULL, transpose::TiledPadded::THREADS, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled_padded,
     gp_transpose_tiled_padded_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"tiled_coarsened", "Padded tile, 4 elements per thread",
     "Ruetsch & Micikevicius, Optimizing Matrix Transpose in CUDA, NVIDIA 2009 (TILE_DIM x BLOCK_ROWS)",
     "32 x 8 threads move a 32 x 32 tile, 4 elements each: fewer threads, independent loads in "
     "flight, index arithmetic shared.",
     -1, NULL, transpose::TiledCoarsened::THREADS, GP_ON_DEVICE,
     (gp_any_fn)gp_transpose_tiled_coarsened,
     gp_transpose_tiled_coarsened_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"tiled_wide", "16-byte accesses through a large padded tile",
     "Ruetsch & Micikevicius tile (NVIDIA 2009) with 16-byte accesses; tuned: bench/tune_transpose.cu",
     "Every load and store 16 bytes wide, a padded 64 x 64 tile (float32) so that reads and writes "
     "come in 256-byte runs, tiles handed out in groups of tile columns, evict-first stores: the "
     "fastest general transpose here. Unaligned shapes run tiled_coarsened's kernel.",
     -1, NULL, transpose::TransposeTuning<uint32_t>::BLOCK, GP_ON_DEVICE,
     (gp_any_fn)gp_transpose_tiled_wide,
     gp_transpose_tiled_wide_kernel, NULL,
     GP_MATRIX, NULL, NULL},
    {"nd_naive", "Any rank: one thread per element, index by division",
     "strided index arithmetic (NumPy reference, \"Internal memory layout of an ndarray\")",
     "Thread o takes output element o apart into coordinates, one division per axis, and reads "
     "the input element at sum(coordinate x stride): any permutation of any rank, any strides. "
     "Writes are coalesced, reads scatter; the divisions cost more than the copy.",
     -1, NULL, transpose::ND_NAIVE_BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_transpose_nd_naive,
     gp_transpose_nd_naive_kernel, NULL,
     0, NULL, NULL},
    {"nd_tiled", "Any rank: tiles between the fastest axes, after cuTT",
     "Hynninen & Lyakh, cuTT: A High-Performance Tensor Transpose Library for CUDA Compatible GPUs, "
     "arXiv:1705.01598 (2017)",
     "The plan fuses the axes that stay together; tiles move between the input's and the output's "
     "fastest axes through shared memory (a side shorter than a tile continues over a second axis), "
     "the other axes a batch; a fastest axis that stays in place is a batched copy. 16-byte "
     "accesses for every element size where strides allow; a matrix of 2-, 4- or 8-byte elements "
     "runs tiled_wide's kernel. At most 16 axes after the plan.",
     -1, NULL, transpose::NdTuning<uint32_t>::BLOCK, GP_ON_DEVICE, (gp_any_fn)gp_transpose_nd_tiled,
     gp_transpose_nd_tiled_kernel, NULL,
     GP_AUTO, NULL, NULL},
    {"copy", "Device-to-device copy (roof)",
     "cudaMemcpyAsync",
     "Copies the same bytes without transposing: the bandwidth roof every transpose is measured "
     "against. Its output is a copy of the input (same shape), not the transpose.",
     -1, NULL, 0, GP_ON_DEVICE, (gp_any_fn)gp_transpose_copy, NULL, NULL,
     GP_BASELINE, NULL, NULL},
    {"cublas", "cuBLAS geam (baseline)",
     "cublasSgeam / cublasDgeam with CUBLAS_OP_T",
     "NVIDIA's production out-of-place transpose: C = 1 * op(A) + 0 * B. Floats only (float32 "
     "and float64).",
     -1, "float32,float64", 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_transpose_cublas), NULL, NULL,
     GP_BASELINE | GP_LIBRARY | GP_MATRIX, NULL, GP_CUBLAS_DETAIL},
    {"cpu", "CPU loop (host reference)",
     "Orchid, \"GPU program optimization (2): matrix transpose\", 2016 (transpose_CPU)",
     "The blog's two nested loops in C, on the host.",
     -1, NULL, 0, GP_ON_HOST, (gp_any_fn)gp_transpose_cpu, NULL, NULL,
     GP_BASELINE | GP_MATRIX, NULL, NULL},
};
extern "C" const int GP_SYM(gp_transpose_nvariants) =
    sizeof(GP_SYM(gp_transpose_variants)) / sizeof(GP_SYM(gp_transpose_variants)[0]);
#undef GP_CUBLAS_DETAIL
GP_NAMESPACE_END
