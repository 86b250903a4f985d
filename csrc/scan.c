/* scan.c - the scan family in gpuprims._core: running one variant and
 * timing it. */
#include "glue.h"

#include <stdlib.h>
#include <string.h>

/* One scan being prepared or run: its arguments, its variant, and the pool
 * allocation (if any) holding the converted input and the scratch. */
typedef struct {
    const gp_runtime *rt;
    const gp_variant *v;
    gp_scan_args a;
    void *base;
} gp_scan_call;

static int parse_common(PyObject *module, int index, long long n, int in_t, int acc_t, int op, gp_where where)
{
    if (gp_check_variant(module, "scan", index, n, where) < 0 || gp_check_codes(in_t, acc_t, op, GP_NOPS) < 0)
        return -1;
    return 0;
}

/* Validate, allocate and, where the dtype pair needs it, convert the input.
 * On failure an exception is set, nothing stays allocated, -1 returned. */
static int scan_setup(PyObject *module, gp_scan_call *c, int index, uintptr_t in_ptr,
                      uintptr_t out_ptr, long long n, int in_t, int acc_t, int op, int inclusive)
{
    cudaStream_t s = cudaStreamPerThread;
    size_t cast_bytes = 0, total;
    gp_thread_res *res;
    cudaError_t err;
    const char *where = "scan: allocating scratch";

    if (parse_common(module, index, n, in_t, acc_t, op, GP_ON_DEVICE) < 0 ||
        (res = gp_thread_resources(module)) == NULL)
        return -1;
    if (in_ptr % gp_sizes[in_t] != 0 || out_ptr % gp_sizes[acc_t] != 0) {
        PyErr_SetString(PyExc_ValueError, "device array not aligned to its element size; pass a copy");
        return -1;
    }
    memset(c, 0, sizeof(*c));
    c->rt = RT;
    c->v = &RT->scan[index];
    c->a.in = (const void *)in_ptr;
    c->a.out = (void *)out_ptr;
    c->a.n = n;
    c->a.in_t = (gp_dtype)in_t;
    c->a.acc_t = (gp_dtype)acc_t;
    c->a.op = (gp_op)op;
    c->a.inclusive = inclusive;
    c->a.stream = s;
    if (!RT->combo_supported(c->a.op, c->a.in_t, c->a.acc_t)) {
        cast_bytes = gp_align256((size_t)n * gp_sizes[acc_t]);
        c->a.in_t = c->a.acc_t;
    }
    err = ((gp_scan_fn)c->v->launch)(&c->a); /* query the scratch size */
    if (err == cudaSuccess) {
        total = cast_bytes + c->a.scratch_bytes + 1;
        if (total <= GP_SMALL_SCRATCH_BYTES)
            c->a.scratch = res->scratch;
        else if ((err = RT->malloc_async(&c->base, total, s)) == cudaSuccess)
            c->a.scratch = c->base;
    }
    if (err == cudaSuccess && cast_bytes) {
        void *converted = c->a.scratch;
        c->a.scratch = (char *)converted + cast_bytes;
        where = "scan: converting the input";
        err = RT->cast((const void *)in_ptr, (gp_dtype)in_t, converted, c->a.acc_t, n, s);
        c->a.in = converted;
    }
    if (err != cudaSuccess) {
        if (c->base != NULL)
            (void)RT->free_async(c->base, s);
        c->base = NULL;
        (void)RT->get_last_error();
        gp_raise_cuda(module, err, where);
        return -1;
    }
    return 0;
}

/* scan(index, in_ptr, out_ptr, n, in_t, acc_t, op, inclusive): device to
 * device; waits for the GPU before returning. */
PyObject *gp_scan(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op, inclusive;
    unsigned long long in_ptr, out_ptr;
    long long n;
    gp_scan_call c;
    cudaError_t err, err2;
    char where[96];

    if (!PyArg_ParseTuple(args, "iKKLiiip:scan", &index, &in_ptr, &out_ptr, &n, &in_t, &acc_t, &op,
                          &inclusive) ||
        scan_setup(module, &c, index, (uintptr_t)in_ptr, (uintptr_t)out_ptr, n, in_t, acc_t, op,
                   inclusive) < 0)
        return NULL;
    err = ((gp_scan_fn)c.v->launch)(&c.a);
    err2 = c.base != NULL ? RT->free_async(c.base, c.a.stream) : cudaSuccess;
    if (err == cudaSuccess)
        err = err2;
    if (err == cudaSuccess)
        err = gp_sync(RT, c.a.stream);
    if (err != cudaSuccess) {
        (void)RT->get_last_error();
        PyOS_snprintf(where, sizeof(where), "scan[%s]", c.v->name);
        return gp_raise_cuda(module, err, where);
    }
    Py_RETURN_NONE;
}

/* scan_host(index, in_buffer, out_buffer, n, in_t, acc_t, op, inclusive) */
PyObject *gp_scan_host(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op, inclusive;
    long long n;
    PyObject *in_obj, *out_obj;
    Py_buffer in, out;
    gp_scan_args a;
    cudaError_t err;
    char dummy;
    (void)module;

    if (!PyArg_ParseTuple(args, "iOOLiiip:scan_host", &index, &in_obj, &out_obj, &n, &in_t, &acc_t,
                          &op, &inclusive) ||
        parse_common(module, index, n, in_t, acc_t, op, GP_ON_HOST) < 0)
        return NULL;
    if (PyObject_GetBuffer(in_obj, &in, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    if ((size_t)in.len < (size_t)n * gp_sizes[in_t] || (size_t)out.len < (size_t)n * gp_sizes[acc_t]) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "buffers hold fewer than n elements");
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    a.in = in.buf;
    a.out = out.buf;
    a.n = n;
    a.in_t = (gp_dtype)in_t;
    a.acc_t = (gp_dtype)acc_t;
    a.op = (gp_op)op;
    a.inclusive = inclusive;
    a.scratch = &dummy; /* the host scan needs none */
    Py_BEGIN_ALLOW_THREADS
    err = ((gp_scan_fn)RT->scan[index].launch)(&a);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    if (err != cudaSuccess) {
        PyErr_SetString(PyExc_ValueError, "the host scan refused its arguments");
        return NULL;
    }
    Py_RETURN_NONE;
}

static cudaError_t scan_timed(void *ctx, int phase)
{
    gp_scan_call *c = (gp_scan_call *)ctx;
    if (phase == GP_PREPARE) /* poison the output */
        return c->rt->memset_async(c->a.out, 0xff, (size_t)c->a.n * gp_sizes[c->a.acc_t], c->a.stream);
    return ((gp_scan_fn)c->v->launch)(&c->a);
}

/* time_scan(index, in_ptr, out_ptr, n, in_t, acc_t, op, inclusive, warmup,
 *           repeat, flush_bytes) -> list of ms; out holds the last result */
PyObject *gp_time_scan(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op, inclusive, warmup, repeat;
    unsigned long long in_ptr, out_ptr, flush_bytes;
    long long n;
    gp_scan_call c;
    PyObject *times;

    if (!PyArg_ParseTuple(args, "iKKLiiipiiK:time_scan", &index, &in_ptr, &out_ptr, &n, &in_t,
                          &acc_t, &op, &inclusive, &warmup, &repeat, &flush_bytes) ||
        scan_setup(module, &c, index, (uintptr_t)in_ptr, (uintptr_t)out_ptr, n, in_t, acc_t, op,
                   inclusive) < 0)
        return NULL;
    times = gp_time_runs(module, scan_timed, &c, warmup, repeat, flush_bytes, c.v->name);
    if (c.base != NULL)
        (void)RT->free_async(c.base, c.a.stream);
    return times;
}
