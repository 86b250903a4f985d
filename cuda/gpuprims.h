/* gpuprims.h - the C ABI between the CUDA launchers (cuda/) and the
 * CPython glue (csrc/).  Plain C so that csrc/ stays C99.
 *
 * Every family exposes one registry table of gp_variant rows
 * (cuda/<family>/registry.cu: gp_<family>_variants, gp_<family>_nvariants),
 * which the family table of the glue (csrc/families.c) points at.  Python
 * reads its variant lists from these tables and nowhere else.  The kernels are
 * built twice (for the GPU, and for the emulator backend on the CPU), so
 * each table and C entry point exists twice: NAME for the GPU build and
 * NAME_emu for the emulator build (GP_SYM names the one of the build).
 */
#ifndef GPUPRIMS_H
#define GPUPRIMS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h> /* emu/include/cuda_runtime_api.h where CUDA is not used */

#ifdef __cplusplus
extern "C" {
#endif

#ifdef GP_EMULATOR
#define GP_SYM(name) name##_emu
#define GP_CUDA_ONLY(launcher) ((gp_any_fn)0) /* NVIDIA library code: not emulated */
#else
#define GP_SYM(name) name
#define GP_CUDA_ONLY(launcher) ((gp_any_fn)launcher)
#endif

/* Element types.  The codes are part of the ABI with python/gpuprims.  The
 * reduction and scan kernels compute in the first four (GP_COMBOS in
 * cuda/common.cuh); the others are converted to one of them first (gp_cast)
 * and, for an array result, back into the result's dtype. */
typedef enum gp_dtype {
    GP_INT32 = 0,
    GP_INT64 = 1,
    GP_FLOAT32 = 2,
    GP_FLOAT64 = 3,
    GP_BOOL = 4,
    GP_INT8 = 5,
    GP_INT16 = 6,
    GP_UINT8 = 7,
    GP_UINT16 = 8,
    GP_UINT32 = 9,
    GP_UINT64 = 10,
    GP_FLOAT16 = 11,
    GP_NDTYPES = 12,
    /* Not a dtype: or-ed into gp_cast's `to`, an integer accumulator is
     * clamped to the target's range instead of wrapped (min/max results) */
    GP_CAST_SATURATE = 0x100
} gp_dtype;

typedef enum gp_op { GP_SUM = 0, GP_MIN = 1, GP_MAX = 2, GP_NOPS = 3 } gp_op;

/* Where a variant runs. */
typedef enum gp_where { GP_ON_DEVICE = 0, GP_ON_HOST = 1 } gp_where;

/* The layout of a batched or segmented reduction or scan, which only the
 * rows flagged GP_BATCHED or GP_SEGMENTED read: `outer x inner` independent
 * problems of `n` elements each.
 *
 * Batched (offsets == NULL): problem (o, i) is in[o*s_outer + k*s_n +
 * i*s_inner] for 0 <= k < n (strides in elements, any sign: `in` points at
 * element (0, 0, 0)).  A reduction writes out[o*inner + i]; a scan writes
 * out[(o*n + k)*inner + i] (C order of (outer, n, inner)).  This is an axis
 * of an N-D array: outer and inner are the axes before and after it.
 *
 * Segmented (offsets != NULL, device memory, outer + 1 non-decreasing
 * values, offsets[outer] <= n): inner == 1; problem o is in[offsets[o]] ..
 * in[offsets[o+1] - 1] of a contiguous input of n elements.  A reduction
 * writes out[o] (the identity for an empty segment); a scan writes out[k]
 * for k in that range (the caller guarantees offsets[0] == 0 and
 * offsets[outer] == n for a scan).
 *
 * Segmented, optional: `longest` > 0 promises that no segment is longer
 * (offsets[o+1] - offsets[o] <= longest for every o); 0 promises nothing.
 * A caller that has the offsets on the host knows it from checking them;
 * a launcher that sets long segments apart (cuda/segments.cuh, Deferred)
 * then skips that work, its counters and its launches where none can be
 * long.  Batched calls leave it 0.
 *
 * A 1-D call is outer = inner = 1, s_n = 1, offsets = NULL: what the rows
 * without those flags are given. */
typedef struct gp_batch {
    int64_t outer, inner;
    int64_t s_outer, s_n, s_inner;
    const int64_t *offsets;
    int64_t longest;
} gp_batch;

/* Arguments of one reduction.  `in` holds n elements of in_t; `out` receives
 * one element of acc_t (or one per problem of `batch`).  Both live where the variant runs (device memory for
 * GP_ON_DEVICE, host memory for GP_ON_HOST).
 *
 * Two-phase like CUB: called with scratch == NULL, a launcher only stores the
 * bytes of scratch it needs in scratch_bytes and returns cudaSuccess.  Called
 * again with that much scratch, it enqueues its work on `stream` and returns
 * the first error met; it never synchronizes and never allocates.  On that
 * second call scratch must be non-NULL even where 0 bytes were asked for. */
typedef struct gp_reduce_args {
    const void *in;
    void *out;
    int64_t n;
    gp_dtype in_t;
    gp_dtype acc_t;
    gp_op op;
    void *scratch;
    size_t scratch_bytes;
    cudaStream_t stream;
    /* Optional: a device word that is 0 before the call and that only work
     * on `stream` uses.  A launcher needing a grid-wide ticket counts on it
     * and leaves it 0 again; with NULL it takes a word from its scratch and
     * zeroes it itself (one more operation on the stream). */
    unsigned *counter;
    gp_batch batch;
    /* GP_REPRODUCIBLE rows, float sums (0 elsewhere): GP_STATES_OUT writes
     * the accumulator's 32-byte state (cuda/rfa.cuh, rfa::State of acc_t)
     * to `out` instead of the rounded sum (one per problem); GP_STATES_IN
     * reads `in` as n such states, merges them and writes the rounded sum
     * (in_t is then acc_t).  What chunked callers (the host pipeline,
     * gpuprims.dask) use so that the bits do not depend on the chunking. */
    int states;
} gp_reduce_args;

enum { GP_STATES_OUT = 1, GP_STATES_IN = 2 };

typedef cudaError_t (*gp_reduce_fn)(gp_reduce_args *args);

/* A launcher of any family, stored untyped in the registry rows and cast
 * back to its family's type (gp_reduce_fn, ...) by the caller. */
typedef void (*gp_any_fn)(void);

/* One row of a registry. */
typedef struct gp_variant {
    const char *name;        /* stable snake_case id */
    const char *title;       /* one line */
    const char *source;      /* seed kernel or published technique */
    const char *description; /* one paragraph */
    int64_t max_n;           /* largest n (elements) accepted, or -1 for none */
    const char *dtypes;      /* NULL: every dtype of the family; else the
                                accepted ones, comma-separated numpy names */
    int block_size;          /* threads per block, 0 where not applicable */
    gp_where where;
    gp_any_fn launch; /* the family's launcher type; NULL where this build
                         cannot run it (the CUDA libraries on the emulator) */
    /* For gpuprims.occupancy: the variant's main kernel instantiated for
     * 4-byte elements (float32 sum; a transpose's uint32_t moves), as the
     * address the CUDA occupancy API takes; NULL where
     * the work is not a kernel of ours (CUB, cuBLAS, the copy, host code).
     * Rows without a kernel of ours give NULL, NULL. */
    const void *(*kernel)(void);
    /* Dynamic shared memory of that kernel for a block of `threads`
     * threads, in bytes; NULL: none. */
    size_t (*dynamic_smem)(int threads);
    unsigned flags; /* GP_AUTO, GP_BASELINE, GP_LIBRARY (below); 0 for a journey step */
    /* For a row with max_n: the variant without the limit that the error
     * names (a single-block step's multi-block form), or NULL: the auto one. */
    const char *instead;
    /* Why the last failed call of this variant failed, in the library's own
     * words (cuBLAS's status), or NULL where the CUDA status says it all. */
    const char *(*error_detail)(void);
} gp_variant;

/* gp_variant.flags. */
enum {
    GP_AUTO = 1,     /* the fastest general variant: what variant="auto" runs */
    GP_BASELINE = 2, /* not a journey step: a production library, the copy roof or
                        the host reference; listed after the journey */
    GP_LIBRARY = 4,  /* the production library the journey is measured against
                        (its title starts with the library's name: "CUB ...") */
    GP_BATCHED = 8,  /* reads gp_batch's outer/inner/strides: an axis of an N-D array */
    GP_SEGMENTED = 16, /* reads gp_batch's offsets: ragged segments */
    GP_AUTO_BATCHED = 32, /* what variant="auto" runs for an axis or segments */
    GP_MATRIX = 64,  /* transpose: takes matrices only (gp_transpose_args.rows and
                        cols), not a transpose of any rank */
    GP_REPRODUCIBLE = 128, /* a float sum's bits depend on the multiset of inputs only
                             (determinism="gpu_to_gpu"): the same on every GPU, launch
                             configuration, chunking and on the emulator */
    GP_NARROW_IN = 256 /* reduce: reads the narrow inputs of GP_NARROW_COMBOS (cuda/common.cuh)
                          as they are, without a conversion to the accumulator's dtype first */
};

/* Arguments of one out-of-place transpose, numpy.ascontiguousarray(
 * numpy.transpose(x, axes)) for any rank up to GP_TRANSPOSE_MAX_RANK.
 *
 * The problem as planned on the host (python/gpuprims/_transpose.py,
 * transpose_plan: size-1 axes dropped, axes that stay adjacent and in order
 * fused): `in` points at element (0, ..., 0) of an input of `rank` axes of
 * shape[k] elements, element (i_0, ..., i_{rank-1}) at
 * in + sum_k i_k * strides[k] elements (strides may be negative or 0);
 * `out` receives the C-contiguous array of shape (shape[perm[0]], ...,
 * shape[perm[rank-1]]): output axis j is input axis perm[j].  Elements are
 * elem_size bytes (1, 2, 4, 8 or 16) and only moved, never interpreted.
 *
 * The 2-D journey (the variants flagged GP_MATRIX) reads rows and cols: the
 * same call as a C-contiguous rows x cols matrix whose cols x rows
 * transpose is the output (a rank-1 or rank-0 problem is 1 x n, whose
 * transpose has the same bytes); rows = cols = -1 where the problem is not
 * one (GP_MATRIX variants then refuse it with cudaErrorInvalidValue).
 *
 * A launcher enqueues its work on `stream` and returns the first error
 * met; it neither synchronizes nor allocates. */
#define GP_TRANSPOSE_MAX_RANK 16
typedef struct gp_transpose_args {
    const void *in;
    void *out;
    int64_t rows;
    int64_t cols;
    int elem_size;
    cudaStream_t stream;
    int rank;
    int64_t shape[GP_TRANSPOSE_MAX_RANK];   /* input axes, elements */
    int64_t strides[GP_TRANSPOSE_MAX_RANK]; /* input strides, elements */
    int perm[GP_TRANSPOSE_MAX_RANK];        /* output axis j is input axis perm[j] */
} gp_transpose_args;

typedef cudaError_t (*gp_transpose_fn)(const gp_transpose_args *args);

/* Look-back slots that outlive a call (cuda/scan/lookback.cuh): `bytes` of
 * device memory used for nothing else, and the tag its last scan used (0:
 * the memory is all zeros).  A scan given one takes the next tag and
 * publishes its tiles' totals there tagged with it, so it needs no zeroing
 * launch first; where the tag wraps the launcher zeroes the memory and
 * starts again at 1.  Only one scan at a time may use it: the core keeps
 * one per host thread, whose calls all run on the thread's stream and end
 * before the next begins. */
typedef struct gp_lookback_cache {
    void *slots;
    size_t bytes;
    unsigned tag;
} gp_lookback_cache;
#define GP_LOOKBACK_CACHE_BYTES (64 * 1024) /* the core's, per host thread */

/* Arguments of one prefix scan: `in` holds n elements of in_t, `out`
 * receives n elements of acc_t: out[i] = in[0] op ... op in[i] (inclusive)
 * or in[0] op ... op in[i-1], out[0] = identity (exclusive).  Two-phase
 * scratch protocol as gp_reduce_args. */
typedef struct gp_scan_args {
    const void *in;
    void *out;
    int64_t n;
    gp_dtype in_t;
    gp_dtype acc_t;
    gp_op op;
    int inclusive;
    void *scratch;
    size_t scratch_bytes;
    cudaStream_t stream;
    gp_batch batch; /* GP_BATCHED / GP_SEGMENTED rows */
    /* GP_REPRODUCIBLE 1-D rows, float sums: device addresses of 32-byte
     * accumulator states (cuda/rfa.cuh), or NULL.  carry_in: the state of
     * everything before in[0] (the scan continues from it); carry_out
     * receives the state of carry_in and all n elements.  The host
     * pipeline carries a chunk's state into the next this way. */
    const void *carry_in;
    void *carry_out;
    /* 1-D look-back scans whose tiles all fit the grid at once: slots to use
     * instead of zeroed scratch, or NULL. */
    gp_lookback_cache *cache;
} gp_scan_args;

typedef cudaError_t (*gp_scan_fn)(gp_scan_args *args);


/* Which (op, in_t, acc_t) combinations the reduction and scan kernels are
 * instantiated for (GP_COMBOS in cuda/common.cuh).  Anything else is
 * converted by the caller first (gp_cast). */
int gp_combo_supported(gp_op op, gp_dtype in_t, gp_dtype acc_t);
int gp_combo_supported_emu(gp_op op, gp_dtype in_t, gp_dtype acc_t);

/* Whether variant v reads (op, in_t, acc_t) as it is: GP_COMBOS, and
 * GP_NARROW_COMBOS for a row flagged GP_NARROW_IN.  The caller converts any
 * other input first (gp_cast).  v is a row of the same build's registry. */
int gp_variant_reads(const gp_variant *v, gp_op op, gp_dtype in_t, gp_dtype acc_t);
int gp_variant_reads_emu(const gp_variant *v, gp_op op, gp_dtype in_t, gp_dtype acc_t);

/* Convert n elements from one dtype to another on the device (cuda/cast.cu). */
cudaError_t gp_cast(const void *in, gp_dtype from, void *out, gp_dtype to, int64_t n,
                    cudaStream_t stream);
cudaError_t gp_cast_emu(const void *in, gp_dtype from, void *out, gp_dtype to, int64_t n,
                        cudaStream_t stream);

/* A pitched copy made by a kernel (cuda/copy2d.cu): `height` rows of
 * `width` bytes, `spitch` apart in src and `dpitch` apart in dst, by
 * `blocks` blocks (0: the tuned number); dst may be page-locked host memory
 * mapped into the device's address space. */
cudaError_t gp_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                      unsigned blocks, cudaStream_t stream);
cudaError_t gp_copy2d_emu(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                          unsigned blocks, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GPUPRIMS_H */
