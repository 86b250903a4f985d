/* family.h - a family of variants as the generic call path sees it.
 *
 * Every call of every family goes through call.c: validate once, find the
 * memory (the caller's device arrays, or host buffers staged through the
 * device), convert the input where the kernels lack the dtype pair, launch,
 * time.  What differs between families is only how their parameters read
 * and how their launcher's argument struct is filled: the two functions of
 * a gp_family row (families.c).
 */
#ifndef GPUPRIMS_FAMILY_H
#define GPUPRIMS_FAMILY_H

#include "glue.h"

/* One call of any family: what the family's parse() fills in from the
 * Python parameters, then the memory the generic path finds for it. */
typedef struct gp_call {
    /* the shape of the work (parse) */
    int64_t n;            /* elements of the input: what max_n limits */
    int64_t out_n;        /* elements of the output */
    size_t in_elem;       /* bytes per input element */
    size_t out_elem;      /* bytes per output element */
    int in_t, out_t;      /* gp_dtype codes, or -1: raw elements of in_elem bytes */
    int res_t;            /* an array result's gp_dtype when not out_t (converted from the
                             accumulator after the kernels), else -1 */
    int op;               /* gp_op, or -1 */
    int inclusive;        /* scan */
    /* reduce and scan over an axis or segments (gpuprims.h, gp_batch):
     * `n` is then all the input's elements and `len` one problem's */
    int batched;          /* params gave a layout: only GP_BATCHED / GP_SEGMENTED rows take it */
    int64_t len;
    gp_batch batch;
    const char *dtype;    /* the input's dtype name, for a variant's dtypes list */
    int scalar;           /* the output is one value, returned to Python */
    /* transpose (families.c: transpose_parse); call.c reads in_span only */
    int64_t in_span;      /* elements of the input buffer where they differ from n (the span of
                             a strided input), else 0; -1: a device address only (strides that
                             reach before it) */
    int64_t in_offset;    /* elements from the input buffer's start to element (0, ..., 0) */
    gp_transpose_args transpose; /* the planned problem (gpuprims.h) */
    /* the memory and the stream (call.c) */
    const void *in;
    void *out;
    void *scratch;        /* NULL asks the launcher for scratch_bytes */
    size_t scratch_bytes; /* what the launcher asked for: it gets them back */
    cudaStream_t stream;
    unsigned *counter;    /* a zeroed device word for grid-wide tickets */
    gp_lookback_cache *lookback; /* the thread's look-back slots (small 1-D scans), or NULL */
    /* reproducible rows (gpuprims.h): gp_reduce_args.states, and a scan's
     * carry_in / carry_out; 0 / NULL for every other call */
    int states;
    const void *carry_in;
    void *carry_out;
} gp_call;

typedef struct gp_family {
    const char *name;
    /* the registries: [0] of the GPU build (NULL without CUDA), [1] of the emulator */
    const gp_variant *rows[2];
    const int *count[2];
    /* Fill c from the family's parameters tuple; -1 with an exception. */
    int (*parse)(PyObject *params, gp_call *c);
    /* Run variant v on c (or, with c->scratch NULL, store the scratch it needs). */
    cudaError_t (*launch)(const gp_variant *v, gp_call *c);
} gp_family;

extern const gp_family gp_families[];
extern const int gp_nfamilies;

/* The family called `name`, or NULL with ValueError. */
const gp_family *gp_family_named(const char *name);
/* The rows of a family in the registry of backend rt. */
const gp_variant *gp_family_rows(const gp_family *f, const gp_runtime *rt, int *count);
/* The row variant="auto" runs, or NULL. */
const gp_variant *gp_auto_row(const gp_family *f, const gp_runtime *rt);

extern const size_t gp_sizes[GP_NDTYPES]; /* bytes of each gp_dtype */
extern const char *const gp_dtype_names[GP_NDTYPES];
PyObject *gp_scalar_to_python(const void *p, int type);

#endif
