// registry.cu - the one table of transpose variants, in journey order.
#include "transpose.cuh"

GP_NAMESPACE_BEGIN

// The launchers (C++ functions in gp::, one per variant).
cudaError_t gp_transpose_serial(const gp_transpose_args *);
cudaError_t gp_transpose_per_row(const gp_transpose_args *);
cudaError_t gp_transpose_per_element(const gp_transpose_args *);
cudaError_t gp_transpose_tiled(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_padded(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_coarsened(const gp_transpose_args *);
cudaError_t gp_transpose_tiled_wide(const gp_transpose_args *);
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

extern "C" const gp_variant GP_SYM(gp_transpose_variants)[] = {
    {"serial", "One thread, <<<1, 1>>>",
     "seed 002: transpose_serial",
     "The CPU loop run by a single GPU thread: no parallelism at all, each load waiting on memory. "
     "max_n keeps a call under a second.",
     int64_t(1) << 20, NULL, 1, GP_ON_DEVICE, (gp_any_fn)gp_transpose_serial,
     gp_transpose_serial_kernel, NULL},
    {"per_row", "One thread per output row",
     "seed 002: transpose_parallel_per_row",
     "Thread i writes output row i, looping over the input rows: coalesced reads, writes a row "
     "apart. Tall, thin matrices leave it nearly serial; max_n keeps a call under a second.",
     int64_t(1) << 26, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_transpose_per_row,
     gp_transpose_per_row_kernel, NULL},
    {"per_element", "One thread per element, 16 x 16 blocks",
     "seed 002: transpose_parallel_per_element",
     "Every element its own thread: reads along input rows are coalesced, writes of a warp land a "
     "row apart, one memory transaction each.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_transpose_per_element,
     gp_transpose_per_element_kernel, NULL},
    {"tiled", "Shared-memory tile, 32 x 32",
     "shared-memory tiling (NVIDIA, An Efficient Matrix Transpose in CUDA C/C++)",
     "The block stages a 32 x 32 tile in shared memory so that both reads and writes are "
     "coalesced; reading a tile column is now a 32-way shared-memory bank conflict.",
     -1, NULL, 1024, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled, gp_transpose_tiled_kernel, NULL},
    {"tiled_padded", "Tile padded by one column",
     "padding against bank conflicts (NVIDIA, An Efficient Matrix Transpose in CUDA C/C++)",
     "tile[32][33]: a column of the tile spreads over all 32 banks, the conflict is gone.",
     -1, NULL, 1024, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled_padded,
     gp_transpose_tiled_padded_kernel, NULL},
    {"tiled_coarsened", "Padded tile, 4 elements per thread",
     "granularity coarsening, announced in seed 002",
     "32 x 8 threads move a 32 x 32 tile, 4 elements each: fewer threads, independent loads in "
     "flight, index arithmetic shared.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled_coarsened,
     gp_transpose_tiled_coarsened_kernel, NULL},
    {"tiled_wide", "16-byte accesses through a large padded tile",
     "tuned tile and coarsening (bench/tune_transpose.cu)",
     "Every load and store 16 bytes wide, a padded 64 x 64 tile (float32) so that reads and writes "
     "come in 256-byte runs, tiles handed out in groups of tile columns, evict-first stores: the "
     "fastest general transpose here. Unaligned shapes run tiled_coarsened's kernel.",
     -1, NULL, 256, GP_ON_DEVICE, (gp_any_fn)gp_transpose_tiled_wide,
     gp_transpose_tiled_wide_kernel, NULL},
    {"copy", "Device-to-device copy (roof)",
     "cudaMemcpyAsync",
     "Copies the same bytes without transposing: the bandwidth roof every transpose is measured "
     "against. Its output is a copy of the input (same shape), not the transpose.",
     -1, NULL, 0, GP_ON_DEVICE, (gp_any_fn)gp_transpose_copy, NULL, NULL},
    {"cublas", "cuBLAS geam (baseline)",
     "cublasSgeam / cublasDgeam with CUBLAS_OP_T",
     "NVIDIA's production out-of-place transpose: C = 1 * op(A) + 0 * B. Floats only (float32 "
     "and float64).",
     -1, "float32,float64", 0, GP_ON_DEVICE, GP_CUDA_ONLY(gp_transpose_cublas), NULL, NULL},
    {"cpu", "CPU loop (host reference)",
     "seed 002: transpose_CPU",
     "The seed's two nested loops in C, on the host.",
     -1, NULL, 0, GP_ON_HOST, (gp_any_fn)gp_transpose_cpu, NULL, NULL},
};
extern "C" const int GP_SYM(gp_transpose_nvariants) =
    sizeof(GP_SYM(gp_transpose_variants)) / sizeof(GP_SYM(gp_transpose_variants)[0]);
GP_NAMESPACE_END
