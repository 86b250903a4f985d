/* timing.c - timing any enqueued work with CUDA events, and the copy roof. */
#include "glue.h"

#include <stdlib.h>

/* Times `repeat` runs, each between a pair of events, after `warmup` untimed
 * runs.  Before every timed run, outside its events, a buffer of flush_bytes
 * is overwritten (evicting the input from L2) and the output is poisoned.
 * Returns a list of milliseconds. */
PyObject *gp_time_runs(PyObject *module, gp_timed_fn fn, void *ctx, int warmup, int repeat,
                           unsigned long long flush_bytes, const char *where)
{
    const gp_runtime *rt = gp_rt(module);
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
    if (gp_require_gpu(module, where) < 0) /* never an emulation's CPU time as a GPU time */
        return NULL;
    ev = (cudaEvent_t *)calloc(2 * (size_t)repeat, sizeof(cudaEvent_t));
    if (ev == NULL)
        return PyErr_NoMemory();
    if (flush_bytes)
        err = rt->malloc_async(&flush, (size_t)flush_bytes, s);
    for (; err == cudaSuccess && made < 2 * repeat; made++)
        err = rt->event_create(&ev[made]);
    for (i = 0; err == cudaSuccess && i < warmup; i++) {
        err = fn(ctx, GP_PREPARE);
        if (err == cudaSuccess)
            err = fn(ctx, GP_RUN);
    }
    for (i = 0; err == cudaSuccess && i < repeat; i++) {
        if (flush != NULL)
            err = rt->memset_async(flush, (i * 37 + 1) & 0xff, (size_t)flush_bytes, s);
        if (err == cudaSuccess)
            err = fn(ctx, GP_PREPARE);
        if (err == cudaSuccess)
            err = rt->event_record(ev[2 * i], s);
        if (err == cudaSuccess)
            err = fn(ctx, GP_RUN);
        if (err == cudaSuccess)
            err = rt->event_record(ev[2 * i + 1], s);
    }
    if (err == cudaSuccess)
        err = gp_sync(rt, s);
    if (err == cudaSuccess)
        list = PyList_New(repeat);
    for (i = 0; list != NULL && err == cudaSuccess && i < repeat; i++) {
        float ms = 0.0f;
        err = rt->event_elapsed_ms(&ms, ev[2 * i], ev[2 * i + 1]);
        PyList_SetItem(list, i, PyFloat_FromDouble((double)ms));
    }
    for (i = 0; i < made; i++)
        (void)rt->event_destroy(ev[i]);
    free(ev);
    if (flush != NULL)
        (void)rt->free_async(flush, s);
    if (err != cudaSuccess) {
        Py_XDECREF(list);
        (void)rt->get_last_error();
        return gp_raise_cuda(module, err, where);
    }
    return list;
}

typedef struct {
    void *dst, *src;
    size_t nbytes;
    const gp_runtime *rt;
} gp_copy_ctx;

static cudaError_t copy_timed(void *ctx, int phase)
{
    gp_copy_ctx *c = (gp_copy_ctx *)ctx;
    if (phase == GP_PREPARE)
        return cudaSuccess; /* the copy overwrites all of dst */
    return c->rt->memcpy_async(c->dst, c->src, c->nbytes, cudaMemcpyDeviceToDevice,
                           cudaStreamPerThread);
}

/* time_copy(nbytes, warmup, repeat, flush_bytes) -> list of ms: the roof, a
 * device-to-device copy of nbytes (nbytes read + nbytes written). */
PyObject *gp_time_copy(PyObject *module, PyObject *args)
{
    const gp_runtime *rt = gp_rt(module);
    unsigned long long nbytes, flush_bytes;
    int warmup, repeat;
    gp_copy_ctx c = {NULL, NULL, 0, NULL};
    cudaStream_t s = cudaStreamPerThread;
    cudaError_t err;
    PyObject *times;

    if (!PyArg_ParseTuple(args, "KiiK:time_copy", &nbytes, &warmup, &repeat, &flush_bytes) ||
        gp_require_gpu(module, "copy") < 0)
        return NULL;
    c.nbytes = (size_t)nbytes;
    c.rt = rt;
    err = rt->malloc_async(&c.src, c.nbytes + 1, s);
    if (err == cudaSuccess)
        err = rt->malloc_async(&c.dst, c.nbytes + 1, s);
    if (err == cudaSuccess)
        err = rt->memset_async(c.src, 0x5a, c.nbytes, s); /* not zeros */
    if (err != cudaSuccess) {
        if (c.src != NULL)
            (void)rt->free_async(c.src, s);
        (void)rt->get_last_error();
        return gp_raise_cuda(module, err, "time_copy: allocating");
    }
    times = gp_time_runs(module, copy_timed, &c, warmup, repeat, flush_bytes, "copy");
    (void)rt->free_async(c.src, s);
    (void)rt->free_async(c.dst, s);
    return times;
}
