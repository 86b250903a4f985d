/* reduce.c - the reduction family in gpuprims._core: running one variant
 * and timing it. */
#include "glue.h"

#include <stdlib.h>
#include <string.h>

/* One reduction being prepared or run: its arguments, its variant, and the
 * single pool allocation that holds the output, the converted input (when
 * the dtype pair needs one) and the variant's scratch. */
typedef struct {
    const gp_runtime *rt;
    const gp_variant *v;
    gp_reduce_args a;
    void *base;
    gp_thread_res *res;
} gp_reduce_call;

/* Validate, allocate and, where needed, convert the input.  On failure an
 * exception is set, nothing stays allocated, and -1 is returned. */
static int reduce_setup(PyObject *module, gp_reduce_call *c, int index, uintptr_t in_ptr,
                        long long n, int in_t, int acc_t, int op)
{
    cudaStream_t s = cudaStreamPerThread;
    size_t cast_bytes = 0, out_bytes;
    gp_thread_res *res;
    cudaError_t err;
    const char *where = "reduce: allocating scratch";

    if (gp_check_variant(module, "reduce", index, n, GP_ON_DEVICE) < 0 ||
        gp_check_codes(in_t, acc_t, op, GP_NOPS) < 0 || (res = gp_thread_resources(module)) == NULL)
        return -1;
    if (in_ptr % gp_sizes[in_t] != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "device input is not aligned to its element size; pass a copy");
        return -1;
    }
    memset(c, 0, sizeof(*c));
    c->res = res;
    c->rt = RT;
    c->v = &RT->reduce[index];
    c->a.in = (const void *)in_ptr;
    c->a.n = n;
    c->a.in_t = (gp_dtype)in_t;
    c->a.acc_t = (gp_dtype)acc_t;
    c->a.op = (gp_op)op;
    c->a.stream = s;
    c->a.counter = res->counter;
    if (!RT->combo_supported(c->a.op, c->a.in_t, c->a.acc_t)) {
        cast_bytes = gp_align256((size_t)n * gp_sizes[acc_t]); /* converted first, below */
        c->a.in_t = c->a.acc_t;
    }
    err = ((gp_reduce_fn)c->v->launch)(&c->a); /* query the scratch size */
    if (err == cudaSuccess) {
        size_t total;
        out_bytes = gp_align256(gp_sizes[acc_t]);
        total = out_bytes + cast_bytes + c->a.scratch_bytes + 1;
        if (total <= GP_SMALL_SCRATCH_BYTES)
            c->a.out = res->scratch; /* no pool allocation: c->base stays NULL */
        else if ((err = RT->malloc_async(&c->base, total, s)) == cudaSuccess)
            c->a.out = c->base;
    }
    if (err == cudaSuccess) {
        c->a.scratch = (char *)c->a.out + out_bytes + cast_bytes;
        if (cast_bytes) {
            void *converted = (char *)c->a.out + out_bytes;
            where = "reduce: converting the input";
            err = RT->cast((const void *)in_ptr, (gp_dtype)in_t, converted, c->a.acc_t, n, s);
            c->a.in = converted;
        }
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

/* reduce(index, in_ptr, n, in_t, acc_t, op) -> int or float (exact: the
 * caller makes it a NumPy scalar of the accumulator type).  The kernel
 * writes the result straight into this thread's pinned buffer, so the call
 * costs one allocation, the launch(es), one free and one wait. */
PyObject *gp_reduce(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op;
    unsigned long long in_ptr;
    long long n;
    gp_reduce_call c;
    cudaError_t err, err2;
    char where[96];

    if (!PyArg_ParseTuple(args, "iKLiii:reduce", &index, &in_ptr, &n, &in_t, &acc_t, &op) ||
        reduce_setup(module, &c, index, (uintptr_t)in_ptr, n, in_t, acc_t, op) < 0)
        return NULL;
    c.a.out = c.res->result;
    err = ((gp_reduce_fn)c.v->launch)(&c.a);
    err2 = c.base != NULL ? RT->free_async(c.base, c.a.stream) : cudaSuccess;
    if (err == cudaSuccess)
        err = err2;
    if (err == cudaSuccess)
        err = gp_sync(RT, c.a.stream);
    if (err != cudaSuccess) {
        (void)RT->get_last_error();
        PyOS_snprintf(where, sizeof(where), "reduce[%s]", c.v->name);
        return gp_raise_cuda(module, err, where);
    }
    return gp_scalar_to_python(c.res->result, acc_t);
}

/* reduce_host(index, buffer, n, in_t, acc_t, op) -> int or float */
PyObject *gp_reduce_host(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op;
    long long n;
    PyObject *obj;
    Py_buffer view;
    gp_reduce_args a;
    cudaError_t err;
    char result[8];
    (void)module;

    if (!PyArg_ParseTuple(args, "iOLiii:reduce_host", &index, &obj, &n, &in_t, &acc_t, &op) ||
        gp_check_variant(module, "reduce", index, n, GP_ON_HOST) < 0 || gp_check_codes(in_t, acc_t, op, GP_NOPS) < 0)
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if ((size_t)view.len < (size_t)n * gp_sizes[in_t]) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "buffer holds fewer than n elements");
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    a.in = view.buf;
    a.out = result;
    a.n = n;
    a.in_t = (gp_dtype)in_t;
    a.acc_t = (gp_dtype)acc_t;
    a.op = (gp_op)op;
    err = ((gp_reduce_fn)RT->reduce[index].launch)(&a);
    if (err == cudaSuccess) {
        a.scratch = malloc(a.scratch_bytes ? a.scratch_bytes : 1);
        if (a.scratch == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        Py_BEGIN_ALLOW_THREADS
        err = ((gp_reduce_fn)RT->reduce[index].launch)(&a);
        Py_END_ALLOW_THREADS
        free(a.scratch);
    }
    PyBuffer_Release(&view);
    if (err != cudaSuccess) {
        PyErr_Format(PyExc_ValueError, "variant %s refused its arguments (%s)",
                     RT->reduce[index].name, RT->error_name(err));
        return NULL;
    }
    return gp_scalar_to_python(result, acc_t);
}

/* ------------------------------------------------------------ timing */

static cudaError_t reduce_timed(void *ctx, int phase)
{
    gp_reduce_call *c = (gp_reduce_call *)ctx;
    if (phase == GP_PREPARE)
        return c->rt->memset_async(c->a.out, 0xff, gp_sizes[c->a.acc_t], c->a.stream);
    return ((gp_reduce_fn)c->v->launch)(&c->a);
}

/* time_reduce(index, in_ptr, n, in_t, acc_t, op, warmup, repeat, flush_bytes)
 *   -> (list of ms, the last result as int or float) */
PyObject *gp_time_reduce(PyObject *module, PyObject *args)
{
    int index, in_t, acc_t, op, warmup, repeat;
    unsigned long long in_ptr, flush_bytes;
    long long n;
    gp_reduce_call c;
    PyObject *times;
    cudaError_t err;
    char result[8];

    if (!PyArg_ParseTuple(args, "iKLiiiiiK:time_reduce", &index, &in_ptr, &n, &in_t, &acc_t, &op,
                          &warmup, &repeat, &flush_bytes) ||
        reduce_setup(module, &c, index, (uintptr_t)in_ptr, n, in_t, acc_t, op) < 0)
        return NULL;
    times = gp_time_runs(module, reduce_timed, &c, warmup, repeat, flush_bytes, c.v->name);
    err = RT->memcpy_async(result, c.a.out, gp_sizes[acc_t], cudaMemcpyDeviceToHost, c.a.stream);
    if (c.base != NULL)
        (void)RT->free_async(c.base, c.a.stream);
    if (err == cudaSuccess)
        err = gp_sync(RT, c.a.stream);
    if (times == NULL)
        return NULL;
    if (err != cudaSuccess) {
        Py_DECREF(times);
        return gp_raise_cuda(module, err, "time_reduce: reading the result");
    }
    return Py_BuildValue("(NN)", times, gp_scalar_to_python(result, acc_t));
}

