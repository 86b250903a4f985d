/* transpose.c - the transpose family in gpuprims._core: running one variant
 * and timing it. */
#include "glue.h"

#include <string.h>

static int check_elem(int elem_size)
{
    if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) {
        PyErr_Format(PyExc_ValueError, "element size %d: 1, 2, 4 or 8 bytes", elem_size);
        return -1;
    }
    return 0;
}

static PyObject *raise_launch(PyObject *module, cudaError_t err, const gp_variant *v)
{
    char where[320];
    const char *why = NULL;
#ifdef GP_HAVE_CUDA
    if (RT == &gp_runtime_cuda && strcmp(v->name, "cublas") == 0)
        why = gp_cublas_error();
#endif
    PyOS_snprintf(where, sizeof(where), "transpose[%s]%s%s", v->name, why ? ": " : "",
                  why ? why : "");
    (void)RT->get_last_error();
    return gp_raise_cuda(module, err, where);
}

/* transpose(index, in_ptr, out_ptr, rows, cols, elem_size): device to device,
 * waits for the GPU before returning. */
PyObject *gp_transpose(PyObject *module, PyObject *args)
{
    int index, elem;
    unsigned long long in_ptr, out_ptr;
    long long rows, cols;
    gp_transpose_args a;
    const gp_variant *v;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "iKKLLi:transpose", &index, &in_ptr, &out_ptr, &rows, &cols, &elem) ||
        check_elem(elem) < 0 || rows < 0 || cols < 0 ||
        gp_check_variant(module, "transpose", index, rows * cols, GP_ON_DEVICE) < 0 ||
        gp_ensure_device(module) < 0)
        return NULL;
    v = &RT->transpose[index];
    memset(&a, 0, sizeof(a));
    a.in = (const void *)(uintptr_t)in_ptr;
    a.out = (void *)(uintptr_t)out_ptr;
    a.rows = rows;
    a.cols = cols;
    a.elem_size = elem;
    a.stream = cudaStreamPerThread;
    err = ((gp_transpose_fn)v->launch)(&a);
    if (err == cudaSuccess)
        err = gp_sync(RT, a.stream);
    if (err != cudaSuccess)
        return raise_launch(module, err, v);
    Py_RETURN_NONE;
}

/* transpose_host(index, in_buffer, out_buffer, rows, cols, elem_size) */
PyObject *gp_transpose_host(PyObject *module, PyObject *args)
{
    int index, elem;
    long long rows, cols;
    PyObject *in_obj, *out_obj;
    Py_buffer in, out;
    gp_transpose_args a;
    cudaError_t err;
    (void)module;

    if (!PyArg_ParseTuple(args, "iOOLLi:transpose_host", &index, &in_obj, &out_obj, &rows, &cols,
                          &elem) ||
        check_elem(elem) < 0 || rows < 0 || cols < 0 ||
        gp_check_variant(module, "transpose", index, rows * cols, GP_ON_HOST) < 0)
        return NULL;
    if (PyObject_GetBuffer(in_obj, &in, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    if (in.len < rows * cols * elem || out.len < rows * cols * elem) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "buffers hold fewer than rows * cols elements");
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    a.in = in.buf;
    a.out = out.buf;
    a.rows = rows;
    a.cols = cols;
    a.elem_size = elem;
    Py_BEGIN_ALLOW_THREADS
    err = ((gp_transpose_fn)RT->transpose[index].launch)(&a);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    if (err != cudaSuccess) {
        PyErr_SetString(PyExc_ValueError, "the host transpose refused its arguments");
        return NULL;
    }
    Py_RETURN_NONE;
}

typedef struct {
    const gp_runtime *rt;
    const gp_variant *v;
    gp_transpose_args a;
} gp_transpose_call;

static cudaError_t transpose_timed(void *ctx, int phase)
{
    gp_transpose_call *c = (gp_transpose_call *)ctx;
    if (phase == GP_PREPARE) /* poison: every output byte 0xff before each run */
        return c->rt->memset_async(c->a.out, 0xff, (size_t)(c->a.rows * c->a.cols * c->a.elem_size),
                               c->a.stream);
    return ((gp_transpose_fn)c->v->launch)(&c->a);
}

/* time_transpose(index, in_ptr, out_ptr, rows, cols, elem_size, warmup,
 *                repeat, flush_bytes) -> list of ms; the output holds the
 * last run's result. */
PyObject *gp_time_transpose(PyObject *module, PyObject *args)
{
    int index, elem, warmup, repeat;
    unsigned long long in_ptr, out_ptr, flush_bytes;
    long long rows, cols;
    gp_transpose_call c;

    if (!PyArg_ParseTuple(args, "iKKLLiiiK:time_transpose", &index, &in_ptr, &out_ptr, &rows,
                          &cols, &elem, &warmup, &repeat, &flush_bytes) ||
        check_elem(elem) < 0 || rows < 0 || cols < 0 ||
        gp_check_variant(module, "transpose", index, rows * cols, GP_ON_DEVICE) < 0 ||
        gp_ensure_device(module) < 0)
        return NULL;
    memset(&c, 0, sizeof(c));
    c.rt = RT;
    c.v = &RT->transpose[index];
    c.a.in = (const void *)(uintptr_t)in_ptr;
    c.a.out = (void *)(uintptr_t)out_ptr;
    c.a.rows = rows;
    c.a.cols = cols;
    c.a.elem_size = elem;
    c.a.stream = cudaStreamPerThread;
    return gp_time_runs(module, transpose_timed, &c, warmup, repeat, flush_bytes, c.v->name);
}
