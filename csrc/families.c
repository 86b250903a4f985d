/* families.c - the one table of families: each row is a family's registries
 * and its argument adapter (how its parameters read, how its launcher's
 * argument struct is filled).  Everything else - validation, memory,
 * staging of host buffers, dtype conversion, launch, timing - is call.c's,
 * the same for every family. */
#include "family.h"

#include <string.h>

const size_t gp_sizes[GP_NDTYPES] = {4, 8, 4, 8, 1, 1, 2, 1, 2, 4, 8, 2};
const char *const gp_dtype_names[GP_NDTYPES] = {"int32", "int64", "float32", "float64", "bool",
                                                "int8",  "int16", "uint8",   "uint16",  "uint32",
                                                "uint64", "float16"};
static const char *const gp_op_names[GP_NOPS] = {"sum", "min", "max"};

/* Valid dtype and op codes; else ValueError and -1. */
static int check_codes(int in_t, int out_t, int op)
{
    if (in_t < 0 || in_t >= GP_NDTYPES || out_t < 0 || out_t >= GP_NDTYPES || op < 0 || op >= GP_NOPS) {
        PyErr_SetString(PyExc_ValueError, "bad dtype or op code");
        return -1;
    }
    return 0;
}

/* The parameters of the families that compute in a dtype: (n, in_t,
 * acc_t, op[, inclusive][, layout or None][, res_t]).  Without a layout the
 * n elements are one problem; a layout (outer, len, inner, s_outer, s_len,
 * s_inner, offsets address or 0[, longest]) gives the problems of
 * gp_batch, n being then all the input's elements (longest: gp_batch's
 * bound on the segments' lengths, 0 or left out where not known).  res_t:
 * the dtype an array result is converted to from acc_t. */
static int parse_typed(PyObject *params, int scan, gp_call *c)
{
    long long n, outer, len, inner;
    unsigned long long offsets, carry = 0;
    long long longest = 0;
    PyObject *layout = Py_None;
    int ok;
    c->res_t = -1;
    ok = scan ? PyArg_ParseTuple(params, "Liiip|OiK:scan", &n, &c->in_t, &c->out_t, &c->op,
                                 &c->inclusive, &layout, &c->res_t, &carry)
              : PyArg_ParseTuple(params, "Liii|Oi:reduce", &n, &c->in_t, &c->out_t, &c->op, &layout,
                                 &c->res_t);
    if (!ok || check_codes(c->in_t, c->out_t, c->op) < 0)
        return -1;
    if (c->res_t >= GP_NDTYPES || c->res_t == c->out_t) {
        if (c->res_t >= GP_NDTYPES) {
            PyErr_SetString(PyExc_ValueError, "bad result dtype code");
            return -1;
        }
        c->res_t = -1;
    }
    c->n = c->out_n = c->len = n;
    /* what comes before x[0], or NULL: a device state (cuda/rfa.cuh) on a
     * reproducible row, one accumulator value on another (call.c) */
    c->carry_in = (const void *)(uintptr_t)carry;
    if ((c->batched = layout != Py_None) == 0)
        return 0;
    if (!PyTuple_Check(layout)) {
        PyErr_SetString(PyExc_TypeError, "a layout is a tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(layout, "LLLLLLK|L:layout", &outer, &len, &inner, &c->batch.s_outer,
                          &c->batch.s_n, &c->batch.s_inner, &offsets, &longest))
        return -1;
    if (outer < 0 || len < 0 || inner < 0 || longest < 0 || (longest != 0 && offsets == 0) ||
        (offsets != 0 && (inner != 1 || len != n)) ||
        (offsets == 0 && (outer == 0 || inner == 0 ? 0 : len) * outer * inner != n)) {
        PyErr_Format(PyExc_ValueError, "bad layout: outer %lld, len %lld, inner %lld for %lld elements",
                     outer, len, inner, n);
        return -1;
    }
    c->len = len;
    c->batch.outer = outer;
    c->batch.inner = inner;
    c->batch.offsets = (const int64_t *)(uintptr_t)offsets;
    c->batch.longest = longest;
    return 0;
}

/* The layout a launcher gets: the call's, or one problem of all n elements. */
static gp_batch batch_of(const gp_call *c)
{
    gp_batch one = {1, 1, 0, 1, 0, NULL, 0};
    return c->batched ? c->batch : one;
}

/* ------------------------------------------------------------ reduce */

static int reduce_parse(PyObject *params, gp_call *c)
{
    if (parse_typed(params, 0, c) < 0)
        return -1;
    c->out_n = c->batched ? c->batch.outer * c->batch.inner : 1;
    c->scalar = !c->batched;
    return 0;
}

static cudaError_t reduce_launch(const gp_variant *v, gp_call *c)
{
    gp_reduce_args a = {c->in, c->out, c->len, (gp_dtype)c->in_t, (gp_dtype)c->out_t, (gp_op)c->op,
                        c->scratch, c->scratch_bytes, c->stream, c->counter, batch_of(c), c->states};
    cudaError_t err = ((gp_reduce_fn)v->launch)(&a);
    c->scratch_bytes = a.scratch_bytes;
    return err;
}

/* -------------------------------------------------------------- scan */

static int scan_parse(PyObject *params, gp_call *c)
{
    return parse_typed(params, 1, c);
}

static cudaError_t scan_launch(const gp_variant *v, gp_call *c)
{
    gp_scan_args a = {c->in, c->out, c->len, (gp_dtype)c->in_t, (gp_dtype)c->out_t, (gp_op)c->op,
                      c->inclusive, c->scratch, c->scratch_bytes, c->stream, batch_of(c), c->carry_in,
                      c->carry_out, c->lookback};
    cudaError_t err = ((gp_scan_fn)v->launch)(&a);
    c->scratch_bytes = a.scratch_bytes;
    return err;
}

/* --------------------------------------------------------- transpose */

/* Up to GP_TRANSPOSE_MAX_RANK ints of a tuple into out[]; its length, or -1
 * with an exception. */
static int int64_tuple(PyObject *t, const char *what, int64_t *out)
{
    Py_ssize_t k, len;
    if (!PyTuple_Check(t)) {
        PyErr_Format(PyExc_TypeError, "transpose %s must be a tuple", what);
        return -1;
    }
    len = PyTuple_Size(t);
    if (len > GP_TRANSPOSE_MAX_RANK) {
        PyErr_Format(PyExc_ValueError,
                     "transpose: %zd axes after the plan (size-1 axes dropped, axes that stay together "
                     "fused), at most %d: the kernels' limit (gpuprims.transpose_plan shows the plan)",
                     len, GP_TRANSPOSE_MAX_RANK);
        return -1;
    }
    for (k = 0; k < len; k++) {
        long long v = PyLong_AsLongLong(PyTuple_GetItem(t, k));
        if (v == -1 && PyErr_Occurred())
            return -1;
        out[k] = v;
    }
    return (int)len;
}

/* The checks of a planned problem that keep every element the kernels read
 * inside the caller's buffer: a permutation, sizes without overflow, and the
 * span of the strides within [0, span) from `offset` (span -2: the n
 * elements of a C-contiguous input; -1: a device address, not checkable
 * here, which call.c refuses for a host buffer). */
static int transpose_check(gp_call *c, long long offset, long long span)
{
    gp_transpose_args *a = &c->transpose;
    int64_t n = 1, lo = 0, hi = 0;
    int k, seen[GP_TRANSPOSE_MAX_RANK] = {0};
    for (k = 0; k < a->rank; k++) {
        const int64_t d = a->shape[k], st = a->strides[k];
        if (d < 0 || (d > 0 && n > INT64_MAX / d)) {
            PyErr_SetString(PyExc_ValueError, "bad transpose shape");
            return -1;
        }
        n *= d;
        if (a->perm[k] < 0 || a->perm[k] >= a->rank || seen[a->perm[k]]++) {
            PyErr_SetString(PyExc_ValueError, "transpose axes are not a permutation");
            return -1;
        }
        /* |stride| * (d - 1) of each axis below 2^62 / 16: the sums cannot overflow */
        if (d > 1 && (st > (INT64_C(1) << 58) / (d - 1) || st < -((INT64_C(1) << 58) / (d - 1)))) {
            PyErr_SetString(PyExc_ValueError, "transpose strides overflow");
            return -1;
        }
        if (d > 1 && st < 0)
            lo += st * (d - 1);
        else if (d > 1)
            hi += st * (d - 1);
    }
    c->n = c->out_n = n;
    if (span == -2) /* C-contiguous: the n elements */
        span = n;
    if (span == -1) { /* a device address: the kernels read where the strides point */
        c->in_span = n > 0 ? -1 : 0;
        c->in_offset = 0;
        return 0;
    }
    if (n > 0 && (offset < 0 || offset + lo < 0 || span < 0 || offset + hi >= span)) {
        PyErr_Format(PyExc_ValueError, "transpose: strides reach [%lld, %lld] from element %lld, "
                     "outside a buffer of %lld elements", (long long)lo, (long long)hi, offset, span);
        return -1;
    }
    c->in_span = n > 0 ? span : 0;
    c->in_offset = offset;
    return 0;
}

/* (shape, strides or None, perm, elem_size, dtype name, offset, span): the
 * problem as python/gpuprims/_transpose.py plans it (gpuprims.h,
 * gp_transpose_args); strides and offset in elements, span the elements of
 * the input buffer, or -1 for a device address read through the strides
 * wherever they point (None strides: C-contiguous, offset 0, span n). */
static int transpose_parse(PyObject *params, gp_call *c)
{
    gp_transpose_args *a = &c->transpose;
    PyObject *shape, *strides, *perm;
    int64_t p[GP_TRANSPOSE_MAX_RANK];
    long long offset, span;
    int elem, k, rank;
    if (!PyArg_ParseTuple(params, "OOOisLL:transpose", &shape, &strides, &perm, &elem, &c->dtype,
                          &offset, &span))
        return -1;
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8 && elem != 16) {
        PyErr_Format(PyExc_ValueError, "element size %d: 1, 2, 4, 8 or 16 bytes", elem);
        return -1;
    }
    if ((rank = int64_tuple(shape, "shape", a->shape)) < 0 || (k = int64_tuple(perm, "axes", p)) < 0)
        return -1;
    if (k != rank) {
        PyErr_SetString(PyExc_ValueError, "transpose axes do not match the shape");
        return -1;
    }
    a->rank = rank;
    for (k = 0; k < rank; k++)
        a->perm[k] = p[k] < 0 || p[k] >= rank ? -1 : (int)p[k];
    if (strides == Py_None) { /* C-contiguous */
        int64_t step = 1;
        for (k = rank - 1; k >= 0; k--) {
            a->strides[k] = step;
            /* wraps only where transpose_check refuses the shape */
            step = (int64_t)((uint64_t)step * (uint64_t)(a->shape[k] > 0 ? a->shape[k] : 1));
        }
    } else if ((k = int64_tuple(strides, "strides", a->strides)) != rank) {
        if (k >= 0)
            PyErr_SetString(PyExc_ValueError, "transpose strides do not match the shape");
        return -1;
    }
    if (transpose_check(c, strides == Py_None ? 0 : offset, strides == Py_None ? -2 : span) < 0)
        return -1;
    /* The 2-D journey's view: a C-contiguous matrix transposed (rank 2, perm
     * (1, 0)), or 1 x n (rank 0 or 1: its transpose has the same bytes). */
    a->rows = a->cols = -1;
    if (strides == Py_None && rank <= 1) {
        a->rows = 1;
        a->cols = c->n;
    } else if (strides == Py_None && rank == 2 && a->perm[0] == 1) {
        a->rows = a->shape[0];
        a->cols = a->shape[1];
    }
    a->elem_size = elem;
    c->in_elem = c->out_elem = (size_t)elem;
    c->in_t = c->out_t = c->op = -1;
    return 0;
}

static cudaError_t transpose_launch(const gp_variant *v, gp_call *c)
{
    gp_transpose_args a = c->transpose;
    if (c->scratch == NULL) { /* a transpose needs no scratch */
        c->scratch_bytes = 0;
        return cudaSuccess;
    }
    a.in = (const char *)c->in + c->in_offset * (int64_t)c->in_elem;
    a.out = c->out;
    a.stream = c->stream;
    return ((gp_transpose_fn)v->launch)(&a);
}

/* -------------------------------------------------------------- table */

/* A family's registries (cuda/<family>/registry.cu): the GPU build's and
 * the emulator's, and the table's fields that point at them. */
#define GP_DECLARE_REGISTRIES(fam)                                  \
    extern const gp_variant fam##_variants[], fam##_variants_emu[]; \
    extern const int fam##_nvariants, fam##_nvariants_emu
GP_DECLARE_REGISTRIES(gp_reduce);
GP_DECLARE_REGISTRIES(gp_scan);
GP_DECLARE_REGISTRIES(gp_transpose);

#ifdef GP_HAVE_CUDA
#define GP_REGISTRIES(fam) {fam##_variants, fam##_variants_emu}, {&fam##_nvariants, &fam##_nvariants_emu}
#else
#define GP_REGISTRIES(fam) {NULL, fam##_variants_emu}, {NULL, &fam##_nvariants_emu}
#endif

const gp_family gp_families[] = {
    {"reduce", GP_REGISTRIES(gp_reduce), reduce_parse, reduce_launch},
    {"scan", GP_REGISTRIES(gp_scan), scan_parse, scan_launch},
    {"transpose", GP_REGISTRIES(gp_transpose), transpose_parse, transpose_launch},
};
const int gp_nfamilies = (int)(sizeof(gp_families) / sizeof(gp_families[0]));

const gp_family *gp_family_named(const char *name)
{
    int i;
    for (i = 0; i < gp_nfamilies; i++)
        if (strcmp(gp_families[i].name, name) == 0)
            return &gp_families[i];
    PyErr_Format(PyExc_ValueError, "unknown family '%s'", name);
    return NULL;
}

const gp_variant *gp_family_rows(const gp_family *f, const gp_runtime *rt, int *count)
{
    int k = rt == &gp_runtime_emu;
    *count = *f->count[k];
    return f->rows[k];
}

const gp_variant *gp_auto_row(const gp_family *f, const gp_runtime *rt)
{
    int i, count;
    const gp_variant *rows = gp_family_rows(f, rt, &count);
    for (i = 0; i < count; i++)
        if (rows[i].flags & GP_AUTO)
            return &rows[i];
    return NULL;
}

/* ------------------------------------------------------- for Python */

static PyObject *names_tuple(const char *const *names, int count, size_t stride)
{
    PyObject *t = PyTuple_New(count);
    int i;
    for (i = 0; t != NULL && i < count; i++) {
        const char *name = *(const char *const *)((const char *)names + i * stride);
        PyObject *s = PyUnicode_FromString(name);
        if (s == NULL || PyTuple_SetItem(t, i, s) < 0)
            Py_CLEAR(t);
    }
    return t;
}

/* families() -> the family names, in the table's order */
PyObject *gp_families_py(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
    return names_tuple(&gp_families[0].name, gp_nfamilies, sizeof(gp_family));
}

/* dtypes() -> the numpy names of the gp_dtype codes, in code order */
PyObject *gp_dtypes_py(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
    return names_tuple(gp_dtype_names, GP_NDTYPES, sizeof(char *));
}

/* ops() -> the names of the gp_op codes, in code order */
PyObject *gp_ops_py(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
    return names_tuple(gp_op_names, GP_NOPS, sizeof(char *));
}

/* The names of the gp_variant.flags bits, in bit order. */
static const char *const gp_flag_names[] = {"auto", "baseline", "library", "batched", "segmented",
                                            "auto_batched", "matrix", "reproducible",
                                            "narrow_in"};

/* The names of the bits set in flags, as a tuple. */
static PyObject *flag_names(unsigned flags)
{
    const Py_ssize_t known = (Py_ssize_t)(sizeof(gp_flag_names) / sizeof(gp_flag_names[0]));
    Py_ssize_t i, k = 0, count = 0;
    PyObject *t;
    for (i = 0; i < known; i++)
        count += (flags >> i) & 1u;
    if ((t = PyTuple_New(count)) == NULL)
        return NULL;
    for (i = 0; i < known; i++) {
        PyObject *name;
        if (!((flags >> i) & 1u))
            continue;
        if ((name = PyUnicode_FromString(gp_flag_names[i])) == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, k++, name);
    }
    return t;
}

/* variants(family) -> [(name, title, source, description, max_n or None,
 *   dtypes or None, block_size, where, backends, roles, instead or None),
 *   ...] in journey order, from the emulator's registry (roles: the names of
 *   the row's flags, "auto", "baseline", "library", "batched", ...)
 * which every build has: backends is ("cuda",) for the rows the emulator
 * cannot run (NVIDIA library code). */
PyObject *gp_variants(PyObject *module, PyObject *args)
{
    const char *name;
    const gp_family *f;
    const gp_variant *rows;
    PyObject *list;
    int i, count;
    (void)module;

    if (!PyArg_ParseTuple(args, "s:variants", &name) || (f = gp_family_named(name)) == NULL)
        return NULL;
    rows = gp_family_rows(f, &gp_runtime_emu, &count);
    list = PyList_New(0);
    for (i = 0; list != NULL && i < count; i++) {
        const gp_variant *v = &rows[i];
        PyObject *max_n = v->max_n < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(v->max_n);
        PyObject *row = max_n == NULL ? NULL
                                      : Py_BuildValue("(ssssNzisNNz)", v->name, v->title, v->source,
                                                      v->description, max_n, v->dtypes,
                                                      v->block_size,
                                                      v->where == GP_ON_HOST ? "host" : "device",
                                                      v->launch != NULL
                                                          ? Py_BuildValue("(ss)", "cuda", "emulator")
                                                          : Py_BuildValue("(s)", "cuda"),
                                                      flag_names(v->flags),
                                                      v->instead);
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(row);
    }
    return list;
}

/* The scalar at p as a Python int or float. */
PyObject *gp_scalar_to_python(const void *p, int type)
{
    switch (type) {
    case GP_INT32: return PyLong_FromLong((long)*(const int32_t *)p);
    case GP_INT64: return PyLong_FromLongLong((long long)*(const int64_t *)p);
    case GP_UINT64: return PyLong_FromUnsignedLongLong((unsigned long long)*(const uint64_t *)p);
    case GP_FLOAT32: return PyFloat_FromDouble((double)*(const float *)p);
    default: return PyFloat_FromDouble(*(const double *)p);
    }
}
