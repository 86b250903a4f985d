/* call.c - the one call path of every family: call(...) runs a variant,
 * time(...) times it.
 *
 * A call is validated here and nowhere else (the variant, its limits and
 * dtypes, the codes, the operands' sizes and alignment), before any GPU
 * work.  Operands are device addresses (used in place) or host buffers: a
 * host variant reads and writes them directly; a device variant given host
 * buffers runs them through the host pipeline in chunks (pipeline.c) when
 * they are large, strided or over the device-memory limit, and otherwise
 * stages them through one pool allocation, so that gpuprims.sum(numpy_array)
 * is one call into the core - copy in, convert, launch, copy out, free,
 * wait - with the GIL released for all of it.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

/* "family[variant]": what error messages and timings name. */
static void name_of(const gp_job *j, char *buf, size_t size)
{
    PyOS_snprintf(buf, size, "%s[%s]", j->fam->name, j->v->name);
}

void gp_job_release(gp_job *j)
{
    if (j->in.host)
        PyBuffer_Release(&j->in.view);
    if (j->has_out && j->out.host)
        PyBuffer_Release(&j->out.view);
    j->in.host = j->out.host = 0;
}

#define release gp_job_release
#define raise_failed gp_job_raise_failed

/* Bytes of the input buffer a call reads: n elements, or the span of a
 * strided input (gp_call.in_span). */
static size_t in_bytes_of(const gp_call *c)
{
    return (size_t)(c->in_span > 0 ? c->in_span : c->n) * c->in_elem;
}

/* strided: a host buffer may have any strides (the pipeline packs it). */
static int take_operand(PyObject *obj, int writable, int strided, gp_operand *o)
{
    if (PyLong_Check(obj)) {
        o->host = 0;
        o->addr = (uintptr_t)PyLong_AsUnsignedLongLong(obj);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (PyObject_GetBuffer(obj, &o->view, (strided ? PyBUF_FULL_RO : PyBUF_C_CONTIGUOUS) |
                                              (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    o->host = 1;
    return 0;
}

/* Is `name` one of the comma-separated `list`? */
static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    const char *p = list;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
        p += len;
    }
    return 0;
}

/* The variant's declared limits: max_n (ValueError) and dtypes (TypeError),
 * each message naming a variant without the limit. */
static int check_limits(const gp_job *j)
{
    const gp_variant *v = j->v, *automatic;
    const char *auto_name, *p;
    char names[128];
    size_t k = 0;
    int over = v->max_n >= 0 && j->c.n > v->max_n;
    if (!over && (v->dtypes == NULL || j->c.dtype == NULL || in_list(v->dtypes, j->c.dtype)))
        return 0;
    automatic = gp_auto_row(j->fam, j->rt);
    auto_name = automatic != NULL ? automatic->name : "?";
    if (over) {
        if (v->instead != NULL)
            PyErr_Format(PyExc_ValueError,
                         "%s variant '%s' handles at most max_n = %lld elements, got %lld; use "
                         "variant='%s' or variant='auto' (%s), which has no such limit",
                         j->fam->name, v->name, (long long)v->max_n, (long long)j->c.n, v->instead,
                         auto_name);
        else
            PyErr_Format(PyExc_ValueError,
                         "%s variant '%s' handles at most max_n = %lld elements, got %lld; use "
                         "variant='auto' (%s), which has no such limit",
                         j->fam->name, v->name, (long long)v->max_n, (long long)j->c.n, auto_name);
        return -1;
    }
    for (p = v->dtypes; *p && k + 3 < sizeof(names); p++) { /* "a,b" -> "a, b" */
        names[k++] = *p;
        if (*p == ',')
            names[k++] = ' ';
    }
    names[k] = '\0';
    PyErr_Format(PyExc_TypeError,
                 "%s variant '%s' takes only %s, not %s; use variant='auto' (%s), which takes "
                 "every supported dtype",
                 j->fam->name, v->name, names, j->c.dtype, auto_name);
    return -1;
}

/* A layout (an axis, segments) only for the rows that read it, and the
 * row for one problem only without one. */
static int check_layout(const gp_job *j)
{
    const gp_call *c = &j->c;
    unsigned need = !c->batched ? 0 : c->batch.offsets != NULL ? GP_SEGMENTED : GP_BATCHED;
    const gp_variant *rows;
    int count, i;
    if (need == GP_BATCHED && c->in_t >= 0 &&
        !j->rt->variant_reads(j->v, (gp_op)c->op, (gp_dtype)c->in_t, (gp_dtype)c->out_t) &&
        ((c->batch.inner > 1 && c->batch.s_inner != 1) || (c->len > 1 && c->batch.s_n != c->batch.inner) ||
         (c->batch.outer > 1 && c->batch.s_outer != c->len * c->batch.inner))) {
        PyErr_SetString(PyExc_ValueError, "an input converted to the accumulator's dtype must be "
                                          "C-contiguous: pass a contiguous copy");
        return -1;
    }
    if (need == 0 || (j->v->flags & need))
        return 0;
    rows = gp_family_rows(j->fam, j->rt, &count);
    for (i = 0; i < count && !(rows[i].flags & GP_AUTO_BATCHED); i++)
        ;
    PyErr_Format(PyExc_ValueError,
                 "%s variant '%s' takes one 1-D array; for %s use variant='auto'%s%s%s",
                 j->fam->name, j->v->name, need == GP_SEGMENTED ? "segments" : "an axis",
                 i < count ? " (" : "", i < count ? rows[i].name : "", i < count ? ")" : "");
    return -1;
}

/* The input and the output as device addresses or host buffers, of the
 * sizes and alignment the call needs, where the variant can use them. */
static int take_operands(gp_job *j, PyObject *in, PyObject *out, int timing)
{
    const gp_call *c = &j->c;
    const char *family = j->fam->name;
    int all_host, any_host;

    /* A scalar family returns its value, or (a device call, not timed)
     * writes it to the device address `out` and returns None. */
    if (c->scalar ? out != Py_None && (timing || !PyLong_Check(out)) : out == Py_None) {
        PyErr_Format(PyExc_ValueError, c->scalar ? "%s returns its value: out must be None (or, untimed, "
                                                   "a device address for it)"
                                                 : "%s needs an output array", family);
        return -1;
    }
    if (take_operand(in, 0, !timing && gp_pipeline_takes_strided(j), &j->in) < 0)
        return -1;
    if (j->in.host && j->in.view.strides != NULL && !PyBuffer_IsContiguous(&j->in.view, 'C') &&
        (size_t)j->in.view.itemsize != c->in_elem) {
        PyErr_SetString(PyExc_ValueError, "a strided host input must have the call's element size; "
                                          "pass a C-contiguous buffer");
        release(j);
        return -1;
    }
    j->has_out = out != Py_None;
    if (j->has_out && take_operand(out, 1, 0, &j->out) < 0) {
        release(j);
        return -1;
    }
    if (c->scalar && j->has_out && (j->in.host || j->v->where != GP_ON_DEVICE)) {
        PyErr_Format(PyExc_ValueError, "%s variant '%s': a value written to a device address needs a "
                     "device variant on device input", family, j->v->name);
        release(j);
        return -1;
    }
    all_host = j->in.host && (!j->has_out || j->out.host);
    any_host = j->in.host || (j->has_out && j->out.host);
    if ((j->v->where == GP_ON_HOST && !all_host) || (timing && any_host)) {
        PyErr_Format(PyExc_ValueError, "%s variant '%s' %s", family, j->v->name,
                     j->v->where == GP_ON_HOST ? "runs on the host: pass host buffers"
                                               : "is timed on device arrays: pass device addresses");
        release(j);
        return -1;
    }
    if ((j->in.host && (c->in_span < 0 || (size_t)j->in.view.len < in_bytes_of(c))) ||
        (j->has_out && j->out.host && (size_t)j->out.view.len < (size_t)c->out_n * c->out_elem)) {
        PyErr_SetString(PyExc_ValueError, "a buffer holds fewer elements than the call needs");
        release(j);
        return -1;
    }
    if ((!j->in.host && j->in.addr % c->in_elem != 0) ||
        (j->has_out && !j->out.host && j->out.addr % c->out_elem != 0)) {
        PyErr_SetString(PyExc_ValueError, "device array not aligned to its element size; pass a copy");
        release(j);
        return -1;
    }
    return 0;
}

/* Everything about a call that can be checked without touching the GPU:
 * the family, the row, the parameters, the limits, the operands.  On
 * failure an exception is set, nothing is held, -1 returned. */
static int validate(gp_job *j, PyObject *module, const char *family, int index, PyObject *in,
                    PyObject *out, PyObject *params, int timing)
{
    int count;
    const gp_variant *rows;
    gp_call *c = &j->c;

    memset(j, 0, sizeof(*j));
    j->module = module;
    j->rt = gp_rt(module);
    j->cast_from = -1;
    c->res_t = -1;
    if ((j->fam = gp_family_named(family)) == NULL)
        return -1;
    rows = gp_family_rows(j->fam, j->rt, &count);
    if (index < 0 || index >= count) {
        PyErr_Format(PyExc_ValueError, "%s variant index %d out of range", family, index);
        return -1;
    }
    j->v = &rows[index];
    if (!PyTuple_Check(params)) {
        PyErr_SetString(PyExc_TypeError, "params must be a tuple");
        return -1;
    }
    if (j->fam->parse(params, c) < 0)
        return -1;
    if (c->in_t >= 0) {
        c->in_elem = gp_sizes[c->in_t];
        c->out_elem = gp_sizes[c->res_t >= 0 && !c->scalar ? c->res_t : c->out_t];
        c->dtype = gp_dtype_names[c->in_t];
    }
    if (c->n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return -1;
    }
    if (check_limits(j) < 0 || check_layout(j) < 0) /* first: the same error on every backend */
        return -1;
    /* A carry-in: on a reproducible row, the device address of the rfa
     * state of everything before x[0] (the kernels continue from it); on any
     * other scan row, of one accumulator value that the host pipeline puts
     * in front of the first chunk as it does each later chunk's carry. */
    if (c->carry_in != NULL && (j->v->flags & GP_REPRODUCIBLE) &&
        (c->batched || c->op != GP_SUM || (c->out_t != GP_FLOAT32 && c->out_t != GP_FLOAT64))) {
        PyErr_SetString(PyExc_ValueError, "a carry-in state is for a 1-D float sum scan on a reproducible "
                                          "row (determinism='gpu_to_gpu')");
        return -1;
    }
    if (c->carry_in != NULL && !(j->v->flags & GP_REPRODUCIBLE) && (c->batched || timing)) {
        PyErr_SetString(PyExc_ValueError, "a carry-in value is for an untimed 1-D scan of a NumPy array");
        return -1;
    }
    if (j->v->launch == NULL) {
        gp_raise_not_on_backend(module, family, j->v);
        return -1;
    }
    if (timing && j->v->where == GP_ON_HOST) {
        PyErr_Format(PyExc_ValueError, "%s variant '%s' runs on the host: time it by wall clock",
                     family, j->v->name);
        return -1;
    }
    return take_operands(j, in, out, timing);
}


/* Raise the CudaError of a failed step, with the library's own words where
 * the variant has them. */
PyObject *gp_job_raise_failed(gp_job *j, cudaError_t err, const char *step)
{
    char name[160], where[400];
    const char *why = j->v->error_detail != NULL ? j->v->error_detail() : NULL;
    name_of(j, name, sizeof(name));
    PyOS_snprintf(where, sizeof(where), "%s%s%s%s%s", name, step ? ": " : "", step ? step : "",
                  why ? ": " : "", why ? why : "");
    (void)j->rt->get_last_error();
    return gp_raise_cuda(j->module, err, where);
}

/* ------------------------------------------------------- host variants */

static PyObject *run_host(gp_job *j)
{
    gp_call *c = &j->c;
    double result[2]; /* a scalar result, aligned for any dtype */
    cudaError_t err;

    c->in = j->in.view.buf;
    c->out = c->scalar ? (void *)result : j->out.view.buf;
    c->scratch = NULL;
    err = j->fam->launch(j->v, c); /* how much scratch */
    if (err == cudaSuccess) {
        c->scratch = malloc(c->scratch_bytes ? c->scratch_bytes : 1);
        if (c->scratch == NULL) {
            release(j);
            return PyErr_NoMemory();
        }
        Py_BEGIN_ALLOW_THREADS
        err = j->fam->launch(j->v, c);
        Py_END_ALLOW_THREADS
        free(c->scratch);
    }
    release(j);
    if (err != cudaSuccess) {
        char name[160];
        name_of(j, name, sizeof(name));
        PyErr_Format(PyExc_ValueError, "%s refused its arguments (%s)", name, j->rt->error_name(err));
        return NULL;
    }
    if (c->scalar)
        return gp_scalar_to_python(result, c->out_t);
    Py_RETURN_NONE;
}

/* ----------------------------------------------------- device variants */

/* The device memory of a device call, in one allocation: the staged input
 * and output (host operands), the converted input, a device word for a
 * scalar result (timed calls), the variant's scratch.  Small calls use the
 * thread's preallocated scratch instead of the pool. */
typedef struct {
    char *staged_in, *staged_out, *converted, *result;
    void *final; /* an array result converted to c.res_t: where it goes (c.out is the accumulator's) */
} gp_layout;

static int prepare_device(gp_job *j, int timing, gp_layout *m)
{
    const gp_runtime *rt = j->rt;
    gp_call *c = &j->c;
    size_t in_bytes = 0, out_bytes = 0, cast_bytes = 0, result_bytes = 0, acc_bytes = 0, bytes;
    static char no_scratch; /* a call that needs no memory: a non-NULL scratch of 0 bytes */
    cudaError_t err;

    if (gp_ensure_device(j->module) < 0)
        return -1;
    c->stream = cudaStreamPerThread;
    if (c->in_t >= 0 && !rt->variant_reads(j->v, (gp_op)c->op, (gp_dtype)c->in_t, (gp_dtype)c->out_t)) {
        j->cast_from = c->in_t; /* the kernels run on the accumulator type */
        c->in_t = c->out_t;
        cast_bytes = gp_align256((size_t)c->n * gp_sizes[c->out_t]);
    }
    if (j->in.host)
        in_bytes = gp_align256(in_bytes_of(c));
    if (j->has_out && j->out.host)
        out_bytes = gp_align256((size_t)c->out_n * c->out_elem);
    if (c->scalar && timing)
        result_bytes = gp_align256(c->out_elem);
    if (c->res_t >= 0 && !c->scalar)
        acc_bytes = gp_align256((size_t)c->out_n * gp_sizes[c->out_t]);
    c->in = NULL;
    c->out = NULL;
    c->scratch = NULL;
    if ((err = j->fam->launch(j->v, c)) != cudaSuccess) { /* how much scratch */
        raise_failed(j, err, "sizing scratch");
        return -1;
    }
    bytes = in_bytes + out_bytes + cast_bytes + result_bytes + acc_bytes + c->scratch_bytes;
    if (bytes == 0 && !c->scalar) { /* device arrays in and out, no scratch: as they are */
        c->scratch = &no_scratch;
        c->in = (const void *)j->in.addr;
        c->out = (void *)j->out.addr;
        return 0;
    }
    if ((j->res = gp_thread_resources(j->module)) == NULL)
        return -1;
    c->counter = j->res->counter;
    c->lookback = &j->res->lookback;
    if (bytes < GP_SMALL_SCRATCH_BYTES)
        m->staged_in = j->res->scratch;
    else if ((err = rt->malloc_async(&j->block, bytes, c->stream)) == cudaSuccess)
        m->staged_in = j->block;
    else {
        raise_failed(j, err, "allocating");
        return -1;
    }
    m->staged_out = m->staged_in + in_bytes;
    m->converted = m->staged_out + out_bytes;
    m->result = m->converted + cast_bytes;
    c->scratch = m->result + result_bytes + acc_bytes;
    c->in = j->in.host ? m->staged_in : (const void *)j->in.addr;
    c->out = c->scalar ? (j->has_out ? (void *)j->out.addr : timing ? (void *)m->result : j->res->result)
                       : (j->out.host ? (void *)m->staged_out : (void *)j->out.addr);
    m->final = c->out;
    if (acc_bytes)
        c->out = m->result + result_bytes;
    return 0;
}

/* The input copied in (host operand) and converted (dtype pair without
 * kernels); no Python API: runs without the GIL. */
static cudaError_t load_input(gp_job *j, gp_layout *m)
{
    gp_call *c = &j->c;
    cudaError_t err = cudaSuccess;
    if (j->in.host)
        err = j->rt->memcpy_async(m->staged_in, j->in.view.buf, in_bytes_of(c),
                                  cudaMemcpyHostToDevice, c->stream);
    if (err == cudaSuccess && j->cast_from >= 0) {
        err = j->rt->cast(c->in, (gp_dtype)j->cast_from, m->converted, (gp_dtype)c->out_t, c->n,
                          c->stream);
        c->in = m->converted;
    }
    return err;
}

/* An array result converted from the accumulator's dtype (c.res_t); a
 * min/max result saturates (its identity, INT32_MAX or INT32_MIN, becomes
 * the narrow dtype's own instead of wrapping). */
static cudaError_t store_result(gp_job *j, gp_layout *m)
{
    gp_call *c = &j->c;
    int sat = c->op == GP_MIN || c->op == GP_MAX ? GP_CAST_SATURATE : 0;
    if (c->res_t < 0 || c->scalar)
        return cudaSuccess;
    return j->rt->cast(c->out, (gp_dtype)c->out_t, m->final, (gp_dtype)(c->res_t | sat), c->out_n, c->stream);
}

static cudaError_t free_block(gp_job *j)
{
    cudaError_t err = j->block != NULL ? j->rt->free_async(j->block, j->c.stream) : cudaSuccess;
    j->block = NULL;
    return err;
}

static PyObject *run_device(gp_job *j)
{
    gp_call *c = &j->c;
    gp_layout m;
    cudaError_t err, err2;

    if (prepare_device(j, 0, &m) < 0) {
        release(j);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = load_input(j, &m);
    if (err == cudaSuccess)
        err = j->fam->launch(j->v, c);
    if (err == cudaSuccess)
        err = store_result(j, &m);
    if (err == cudaSuccess && j->has_out && j->out.host)
        err = j->rt->memcpy_async(j->out.view.buf, m.staged_out, (size_t)c->out_n * c->out_elem,
                                  cudaMemcpyDeviceToHost, c->stream);
    err2 = free_block(j);
    if (err == cudaSuccess)
        err = err2;
    err2 = j->rt->stream_sync(c->stream);
    if (err == cudaSuccess)
        err = err2;
    Py_END_ALLOW_THREADS
    release(j);
    if (err != cudaSuccess)
        return raise_failed(j, err, NULL);
    if (c->scalar && !j->has_out)
        return gp_scalar_to_python(j->res->result, c->out_t);
    Py_RETURN_NONE;
}

/* call(family, index, in, out, params[, progress]) -> the value (a scalar
 * family) or None.  A device variant on host buffers large enough (or over
 * the device-memory limit, or strided) runs through the host pipeline
 * (pipeline.c); progress: a long pipelined call shows a progress line. */
PyObject *gp_call_py(PyObject *module, PyObject *args)
{
    const char *family;
    int index, progress = 0, wanted;
    PyObject *in, *out, *params;
    gp_job j;

    if (!PyArg_ParseTuple(args, "siOOO|p:call", &family, &index, &in, &out, &params, &progress) ||
        validate(&j, module, family, index, in, out, params, 0) < 0)
        return NULL;
    j.progress = progress;
    if ((wanted = gp_pipeline_wanted(&j)) < 0) { /* 0 for a host row */
        release(&j);
        return NULL;
    }
    /* only the pipeline takes a plain carry-in value (an empty scan has nothing to continue) */
    if (!wanted && j.c.carry_in != NULL && !(j.v->flags & GP_REPRODUCIBLE) && j.c.n > 0) {
        release(&j);
        PyErr_SetString(PyExc_ValueError, "a carry-in value is for a 1-D scan of a NumPy array on a device row");
        return NULL;
    }
    if (j.v->where == GP_ON_HOST)
        return run_host(&j);
    return wanted ? gp_pipeline_run(&j) : run_device(&j);
}

/* ------------------------------------------------------------ timing */

static cudaError_t timed(void *ctx, int phase)
{
    gp_job *j = (gp_job *)ctx;
    if (phase == GP_PREPARE) /* poison the output (the accumulator's, where converted after) */
        return j->rt->memset_async(j->c.out, 0xff,
                                   (size_t)j->c.out_n * (j->c.out_t >= 0 ? gp_sizes[j->c.out_t] : j->c.out_elem),
                                   j->c.stream);
    return j->fam->launch(j->v, &j->c);
}

/* time(family, index, in_addr, out_addr or None, params, warmup, repeat,
 *      flush_bytes) -> (list of ms, the value or None): the output holds
 * the last run's result. */
PyObject *gp_time_py(PyObject *module, PyObject *args)
{
    const char *family;
    int index, warmup, repeat;
    unsigned long long flush_bytes;
    PyObject *in, *out, *params, *times, *value = NULL;
    gp_job j;
    gp_layout m;
    cudaError_t err;
    char name[160];

    if (!PyArg_ParseTuple(args, "siOOOiiK:time", &family, &index, &in, &out, &params, &warmup,
                          &repeat, &flush_bytes) ||
        validate(&j, module, family, index, in, out, params, 1) < 0)
        return NULL;
    name_of(&j, name, sizeof(name));
    if (gp_require_gpu(module, name) < 0 || prepare_device(&j, 1, &m) < 0)
        return NULL;
    if ((err = load_input(&j, &m)) != cudaSuccess) {
        (void)free_block(&j);
        return raise_failed(&j, err, "converting the input");
    }
    times = gp_time_runs(module, timed, &j, warmup, repeat, flush_bytes, name);
    if (times != NULL && (err = store_result(&j, &m)) == cudaSuccess)
        err = gp_sync(j.rt, j.c.stream);
    if (times != NULL && err != cudaSuccess) {
        Py_CLEAR(times);
        raise_failed(&j, err, "converting the result");
    }
    if (times != NULL && j.c.scalar) {
        double result[2];
        err = j.rt->memcpy_async(result, j.c.out, j.c.out_elem, cudaMemcpyDeviceToHost, j.c.stream);
        if (err == cudaSuccess)
            err = gp_sync(j.rt, j.c.stream);
        value = err == cudaSuccess ? gp_scalar_to_python(result, j.c.out_t)
                                   : raise_failed(&j, err, "reading the result");
    }
    (void)free_block(&j);
    if (times == NULL || (j.c.scalar && value == NULL)) {
        Py_XDECREF(times);
        return NULL;
    }
    return Py_BuildValue("(NN)", times, value != NULL ? value : Py_NewRef(Py_None));
}
