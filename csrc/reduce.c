/* reduce.c - the reduction family in gpuprims._core: the registry rows,
 * running one variant, and timing it with CUDA events. */
#include "glue.h"

#include <stdlib.h>
#include <string.h>

static const size_t gp_sizes[GP_NDTYPES] = {4, 8, 4, 8};

static size_t align256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* variants(family) -> [(name, title, source, description, max_n or None,
 *                       block_size, where), ...] in journey order */
PyObject *gp_variants(PyObject *module, PyObject *args)
{
    const char *family;
    PyObject *list;
    int i;
    (void)module;

    if (!PyArg_ParseTuple(args, "s:variants", &family))
        return NULL;
    if (strcmp(family, "reduce") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown family %R", PyTuple_GetItem(args, 0));
        return NULL;
    }
    list = PyList_New(0);
    for (i = 0; list != NULL && i < gp_reduce_nvariants; i++) {
        const gp_variant *v = &gp_reduce_variants[i];
        PyObject *max_n = v->max_n < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(v->max_n);
        PyObject *row = max_n == NULL ? NULL
                                      : Py_BuildValue("(ssssNis)", v->name, v->title, v->source,
                                                      v->description, max_n, v->block_size,
                                                      v->where == GP_ON_HOST ? "host" : "device");
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(row);
    }
    return list;
}

/* One reduction being prepared or run: its arguments, its variant, and the
 * single pool allocation that holds the output, the converted input (when
 * the dtype pair needs one) and the variant's scratch. */
typedef struct {
    const gp_variant *v;
    gp_reduce_args a;
    void *base;
    gp_thread_res *res;
} gp_reduce_call;

static int check_args(int index, long long n, int in_t, int acc_t, int op, gp_where where)
{
    if (index < 0 || index >= gp_reduce_nvariants) {
        PyErr_Format(PyExc_ValueError, "variant index %d out of range", index);
        return -1;
    }
    if (gp_reduce_variants[index].where != where) {
        PyErr_Format(PyExc_ValueError, "variant %s does not run on the %s",
                     gp_reduce_variants[index].name, where == GP_ON_HOST ? "host" : "device");
        return -1;
    }
    if (in_t < 0 || in_t >= GP_NDTYPES || acc_t < 0 || acc_t >= GP_NDTYPES || op < 0 ||
        op >= GP_NOPS || n < 0) {
        PyErr_SetString(PyExc_ValueError, "bad dtype, op or size code");
        return -1;
    }
    if (gp_reduce_variants[index].max_n >= 0 && n > gp_reduce_variants[index].max_n) {
        PyErr_Format(PyExc_ValueError, "n = %lld is over the limit of variant %s (max_n = %lld)",
                     n, gp_reduce_variants[index].name, (long long)gp_reduce_variants[index].max_n);
        return -1;
    }
    return 0;
}

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

    if (check_args(index, n, in_t, acc_t, op, GP_ON_DEVICE) < 0 ||
        (res = gp_thread_resources(module)) == NULL)
        return -1;
    if (in_ptr % gp_sizes[in_t] != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "device input is not aligned to its element size; pass a copy");
        return -1;
    }
    memset(c, 0, sizeof(*c));
    c->res = res;
    c->v = &gp_reduce_variants[index];
    c->a.in = (const void *)in_ptr;
    c->a.n = n;
    c->a.in_t = (gp_dtype)in_t;
    c->a.acc_t = (gp_dtype)acc_t;
    c->a.op = (gp_op)op;
    c->a.stream = s;
    c->a.counter = res->counter;
    if (!gp_reduce_supported(c->a.op, c->a.in_t, c->a.acc_t)) {
        cast_bytes = align256((size_t)n * gp_sizes[acc_t]); /* converted first, below */
        c->a.in_t = c->a.acc_t;
    }
    err = c->v->launch(&c->a); /* query the scratch size */
    if (err == cudaSuccess) {
        size_t total;
        out_bytes = align256(gp_sizes[acc_t]);
        total = out_bytes + cast_bytes + c->a.scratch_bytes + 1;
        if (total <= GP_SMALL_SCRATCH_BYTES)
            c->a.out = res->scratch; /* no pool allocation: c->base stays NULL */
        else if ((err = cudaMallocAsync(&c->base, total, s)) == cudaSuccess)
            c->a.out = c->base;
    }
    if (err == cudaSuccess) {
        c->a.scratch = (char *)c->a.out + out_bytes + cast_bytes;
        if (cast_bytes) {
            void *converted = (char *)c->a.out + out_bytes;
            where = "reduce: converting the input";
            err = gp_cast((const void *)in_ptr, (gp_dtype)in_t, converted, c->a.acc_t, n, s);
            c->a.in = converted;
        }
    }
    if (err != cudaSuccess) {
        if (c->base != NULL)
            (void)cudaFreeAsync(c->base, s);
        c->base = NULL;
        (void)cudaGetLastError();
        gp_raise_cuda(module, err, where);
        return -1;
    }
    return 0;
}

/* The scalar at p as a Python int or float. */
static PyObject *scalar_to_python(const void *p, int type)
{
    switch (type) {
    case GP_INT32: return PyLong_FromLong((long)*(const int32_t *)p);
    case GP_INT64: return PyLong_FromLongLong((long long)*(const int64_t *)p);
    case GP_FLOAT32: return PyFloat_FromDouble((double)*(const float *)p);
    default: return PyFloat_FromDouble(*(const double *)p);
    }
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
    err = c.v->launch(&c.a);
    err2 = c.base != NULL ? cudaFreeAsync(c.base, c.a.stream) : cudaSuccess;
    if (err == cudaSuccess)
        err = err2;
    if (err == cudaSuccess)
        err = gp_sync(c.a.stream);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        PyOS_snprintf(where, sizeof(where), "reduce[%s]", c.v->name);
        return gp_raise_cuda(module, err, where);
    }
    return scalar_to_python(c.res->result, acc_t);
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
        check_args(index, n, in_t, acc_t, op, GP_ON_HOST) < 0)
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
    err = gp_reduce_variants[index].launch(&a);
    if (err == cudaSuccess) {
        a.scratch = malloc(a.scratch_bytes ? a.scratch_bytes : 1);
        if (a.scratch == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        Py_BEGIN_ALLOW_THREADS
        err = gp_reduce_variants[index].launch(&a);
        Py_END_ALLOW_THREADS
        free(a.scratch);
    }
    PyBuffer_Release(&view);
    if (err != cudaSuccess) {
        PyErr_Format(PyExc_ValueError, "variant %s refused its arguments (%s)",
                     gp_reduce_variants[index].name, cudaGetErrorName(err));
        return NULL;
    }
    return scalar_to_python(result, acc_t);
}

/* ------------------------------------------------------------ timing */

/* A timed operation: fn(ctx, GP_PREPARE) poisons its output, fn(ctx, GP_RUN)
 * enqueues the work that is timed. */
enum { GP_PREPARE = 0, GP_RUN = 1 };
typedef cudaError_t (*gp_timed_fn)(void *ctx, int phase);

/* Times `repeat` runs, each between a pair of events, after `warmup` untimed
 * runs.  Before every timed run, outside its events, a buffer of flush_bytes
 * is overwritten (evicting the input from L2) and the output is poisoned.
 * Returns a list of milliseconds. */
static PyObject *time_runs(PyObject *module, gp_timed_fn fn, void *ctx, int warmup, int repeat,
                           unsigned long long flush_bytes, const char *where)
{
    cudaStream_t s = cudaStreamPerThread;
    cudaEvent_t *ev;
    void *flush = NULL;
    cudaError_t err = cudaSuccess;
    PyObject *list = NULL;
    int i, made = 0;

    if (repeat < 1 || warmup < 0) {
        PyErr_SetString(PyExc_ValueError, "repeat must be >= 1 and warmup >= 0");
        return NULL;
    }
    ev = (cudaEvent_t *)calloc(2 * (size_t)repeat, sizeof(cudaEvent_t));
    if (ev == NULL)
        return PyErr_NoMemory();
    if (flush_bytes)
        err = cudaMallocAsync(&flush, (size_t)flush_bytes, s);
    for (; err == cudaSuccess && made < 2 * repeat; made++)
        err = cudaEventCreate(&ev[made]);
    for (i = 0; err == cudaSuccess && i < warmup; i++) {
        err = fn(ctx, GP_PREPARE);
        if (err == cudaSuccess)
            err = fn(ctx, GP_RUN);
    }
    for (i = 0; err == cudaSuccess && i < repeat; i++) {
        if (flush != NULL)
            err = cudaMemsetAsync(flush, (i * 37 + 1) & 0xff, (size_t)flush_bytes, s);
        if (err == cudaSuccess)
            err = fn(ctx, GP_PREPARE);
        if (err == cudaSuccess)
            err = cudaEventRecord(ev[2 * i], s);
        if (err == cudaSuccess)
            err = fn(ctx, GP_RUN);
        if (err == cudaSuccess)
            err = cudaEventRecord(ev[2 * i + 1], s);
    }
    if (err == cudaSuccess)
        err = gp_sync(s);
    if (err == cudaSuccess)
        list = PyList_New(repeat);
    for (i = 0; list != NULL && err == cudaSuccess && i < repeat; i++) {
        float ms = 0.0f;
        err = cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        PyList_SetItem(list, i, PyFloat_FromDouble((double)ms));
    }
    for (i = 0; i < made; i++)
        (void)cudaEventDestroy(ev[i]);
    free(ev);
    if (flush != NULL)
        (void)cudaFreeAsync(flush, s);
    if (err != cudaSuccess) {
        Py_XDECREF(list);
        (void)cudaGetLastError();
        return gp_raise_cuda(module, err, where);
    }
    return list;
}

static cudaError_t reduce_timed(void *ctx, int phase)
{
    gp_reduce_call *c = (gp_reduce_call *)ctx;
    if (phase == GP_PREPARE)
        return cudaMemsetAsync(c->a.out, 0xff, gp_sizes[c->a.acc_t], c->a.stream);
    return c->v->launch(&c->a);
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
    times = time_runs(module, reduce_timed, &c, warmup, repeat, flush_bytes, c.v->name);
    err = cudaMemcpyAsync(result, c.a.out, gp_sizes[acc_t], cudaMemcpyDeviceToHost, c.a.stream);
    if (c.base != NULL)
        (void)cudaFreeAsync(c.base, c.a.stream);
    if (err == cudaSuccess)
        err = gp_sync(c.a.stream);
    if (times == NULL)
        return NULL;
    if (err != cudaSuccess) {
        Py_DECREF(times);
        return gp_raise_cuda(module, err, "time_reduce: reading the result");
    }
    return Py_BuildValue("(NN)", times, scalar_to_python(result, acc_t));
}

typedef struct {
    void *dst, *src;
    size_t nbytes;
} gp_copy_ctx;

static cudaError_t copy_timed(void *ctx, int phase)
{
    gp_copy_ctx *c = (gp_copy_ctx *)ctx;
    if (phase == GP_PREPARE)
        return cudaSuccess; /* the copy overwrites all of dst */
    return cudaMemcpyAsync(c->dst, c->src, c->nbytes, cudaMemcpyDeviceToDevice,
                           cudaStreamPerThread);
}

/* time_copy(nbytes, warmup, repeat, flush_bytes) -> list of ms: the roof, a
 * device-to-device copy of nbytes (nbytes read + nbytes written). */
PyObject *gp_time_copy(PyObject *module, PyObject *args)
{
    unsigned long long nbytes, flush_bytes;
    int warmup, repeat;
    gp_copy_ctx c = {NULL, NULL, 0};
    cudaStream_t s = cudaStreamPerThread;
    cudaError_t err;
    PyObject *times;

    if (!PyArg_ParseTuple(args, "KiiK:time_copy", &nbytes, &warmup, &repeat, &flush_bytes) ||
        gp_ensure_device(module) < 0)
        return NULL;
    c.nbytes = (size_t)nbytes;
    err = cudaMallocAsync(&c.src, c.nbytes + 1, s);
    if (err == cudaSuccess)
        err = cudaMallocAsync(&c.dst, c.nbytes + 1, s);
    if (err == cudaSuccess)
        err = cudaMemsetAsync(c.src, 0x5a, c.nbytes, s); /* not zeros */
    if (err != cudaSuccess) {
        if (c.src != NULL)
            (void)cudaFreeAsync(c.src, s);
        (void)cudaGetLastError();
        return gp_raise_cuda(module, err, "time_copy: allocating");
    }
    times = time_runs(module, copy_timed, &c, warmup, repeat, flush_bytes, "copy");
    (void)cudaFreeAsync(c.src, s);
    (void)cudaFreeAsync(c.dst, s);
    return times;
}
