/* module.c - gpuprims._core: the CPython glue between Python and the CUDA
 * launchers of cuda/.
 *
 * A multi-phase-init module written against the stable ABI (Python 3.11+):
 * its state holds the exception types and the DeviceBuffer type.  It moves
 * bytes between host buffers and device memory, runs registry variants,
 * times them with CUDA events, and turns every CUDA failure into
 * gpuprims.CudaError (or NoDeviceError) carrying the status name and where
 * it happened.  Nothing here exits the process.
 *
 * Memory comes from the runtime's stream-ordered pool (cudaMallocAsync), all
 * work is issued on the per-thread default stream, and the GIL is released
 * while the host waits for the GPU.
 */
#include "glue.h"

#include <string.h>

/* ------------------------------------------------------------ errors */

PyObject *gp_raise_cuda(PyObject *module, cudaError_t err, const char *where)
{
    gp_state *st = gp_get_state(module);
    PyObject *type = (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
                         ? st->NoDeviceError
                         : st->CudaError;
    PyObject *exc, *value;
    int failed;

    exc = PyObject_CallFunction(type, "N", PyUnicode_FromFormat("%s: %s (%s)", where,
                                                               cudaGetErrorName(err),
                                                               cudaGetErrorString(err)));
    if (exc == NULL)
        return NULL;
    value = PyUnicode_FromString(cudaGetErrorName(err));
    failed = value == NULL || PyObject_SetAttrString(exc, "status", value) < 0;
    Py_XDECREF(value);
    value = failed ? NULL : PyUnicode_FromString(where);
    failed = failed || value == NULL || PyObject_SetAttrString(exc, "where", value) < 0;
    Py_XDECREF(value);
    if (!failed)
        PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* The first GPU call checks that a device is there and sets the pool up.
 * The pool keeps freed memory (release threshold = max) so that repeated
 * calls reuse it instead of mapping and unmapping pages each time. */
int gp_ensure_device(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    int count = 0, dev = 0;
    cudaError_t err;
    cudaMemPool_t pool;
    uint64_t threshold = UINT64_MAX;

    if (st->device_ready)
        return 0;
    err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count == 0)
        err = cudaErrorNoDevice;
    if (err != cudaSuccess) {
        PyErr_Format(st->NoDeviceError,
                     "no CUDA GPU is visible (%s: %s); gpuprims' GPU variants need one",
                     cudaGetErrorName(err), cudaGetErrorString(err));
        (void)cudaGetLastError();
        return -1;
    }
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess ||
        (err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold)) !=
            cudaSuccess) {
        gp_raise_cuda(module, err, "device setup");
        return -1;
    }
    st->device_ready = 1;
    return 0;
}

/* Wait with the GIL released. */
cudaError_t gp_sync(cudaStream_t stream)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = cudaStreamSynchronize(stream);
    Py_END_ALLOW_THREADS
    return err;
}

gp_thread_res *gp_thread_resources(PyObject *module)
{
    static __thread gp_thread_res res = {-1, NULL, NULL, NULL};
    int dev = 0;
    cudaError_t err;

    if (gp_ensure_device(module) < 0)
        return NULL;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess)
        goto fail;
    if (res.device == dev)
        return &res;
    /* A first call on this thread, or on another device: the old device's
     * small buffers stay allocated (64 KiB per thread and device). */
    res.device = -1;
    if ((err = cudaMalloc((void **)&res.counter, sizeof(unsigned))) != cudaSuccess ||
        (err = cudaMemset(res.counter, 0, sizeof(unsigned))) != cudaSuccess ||
        (err = cudaHostAlloc(&res.result, 64, cudaHostAllocMapped | cudaHostAllocPortable)) !=
            cudaSuccess ||
        (err = cudaMalloc(&res.scratch, GP_SMALL_SCRATCH_BYTES)) != cudaSuccess)
        goto fail;
    res.device = dev;
    return &res;
fail:
    (void)cudaGetLastError();
    gp_raise_cuda(module, err, "per-thread setup");
    return NULL;
}

/* ------------------------------------------------------- DeviceBuffer */

typedef struct {
    PyObject_HEAD
    void *ptr;
    size_t nbytes;
} DeviceBuffer;

static void DeviceBuffer_dealloc(PyObject *self)
{
    DeviceBuffer *b = (DeviceBuffer *)self;
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    if (b->ptr != NULL) {
        /* Every gpuprims call has synchronized before returning, so nothing
         * of ours still uses the memory; ordering the free on the per-thread
         * stream keeps it behind anything issued there since. */
        (void)cudaFreeAsync(b->ptr, cudaStreamPerThread);
        (void)cudaGetLastError();
        b->ptr = NULL;
    }
    tp_free(self);
    Py_DECREF(tp);
}

static PyObject *DeviceBuffer_get_ptr(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(((DeviceBuffer *)self)->ptr);
}

static PyObject *DeviceBuffer_get_nbytes(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(((DeviceBuffer *)self)->nbytes);
}

static PyGetSetDef DeviceBuffer_getset[] = {
    {"ptr", DeviceBuffer_get_ptr, NULL, "device address (int)", NULL},
    {"nbytes", DeviceBuffer_get_nbytes, NULL, "size in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot DeviceBuffer_slots[] = {
    {Py_tp_dealloc, DeviceBuffer_dealloc},
    {Py_tp_getset, DeviceBuffer_getset},
    {Py_tp_doc, "Device memory from the stream-ordered pool, freed when the object goes away."},
    {0, NULL},
};

static PyType_Spec DeviceBuffer_spec = {
    "gpuprims._core.DeviceBuffer",
    sizeof(DeviceBuffer),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    DeviceBuffer_slots,
};

/* alloc(nbytes) -> DeviceBuffer */
static PyObject *gp_alloc(PyObject *module, PyObject *args)
{
    gp_state *st = gp_get_state(module);
    unsigned long long nbytes;
    DeviceBuffer *b;
    cudaError_t err;
    allocfunc tp_alloc;

    if (!PyArg_ParseTuple(args, "K:alloc", &nbytes) || gp_ensure_device(module) < 0)
        return NULL;
    tp_alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)st->DeviceBuffer, Py_tp_alloc);
    b = (DeviceBuffer *)tp_alloc((PyTypeObject *)st->DeviceBuffer, 0);
    if (b == NULL)
        return NULL;
    b->ptr = NULL;
    b->nbytes = (size_t)nbytes;
    /* Always a real allocation, even for 0 bytes, so ptr is never NULL. */
    err = cudaMallocAsync(&b->ptr, nbytes ? (size_t)nbytes : 1, cudaStreamPerThread);
    if (err == cudaSuccess)
        err = gp_sync(cudaStreamPerThread);
    if (err != cudaSuccess) {
        b->ptr = NULL;
        Py_DECREF(b);
        (void)cudaGetLastError();
        return gp_raise_cuda(module, err, "alloc");
    }
    return (PyObject *)b;
}

/* -------------------------------------------------- copies and streams */

/* htod(dst_ptr, src_buffer): copy a contiguous host buffer to the device. */
static PyObject *gp_htod(PyObject *module, PyObject *args)
{
    unsigned long long dst;
    PyObject *obj;
    Py_buffer view;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "KO:htod", &dst, &obj) || gp_ensure_device(module) < 0)
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    err = cudaMemcpyAsync((void *)(uintptr_t)dst, view.buf, (size_t)view.len,
                          cudaMemcpyHostToDevice, cudaStreamPerThread);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(cudaStreamPerThread);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "copy host to device");
    Py_RETURN_NONE;
}

/* dtoh(dst_buffer, src_ptr): fill a writable contiguous host buffer. */
static PyObject *gp_dtoh(PyObject *module, PyObject *args)
{
    unsigned long long src;
    PyObject *obj;
    Py_buffer view;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "OK:dtoh", &obj, &src) || gp_ensure_device(module) < 0)
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    err = cudaMemcpyAsync(view.buf, (const void *)(uintptr_t)src, (size_t)view.len,
                          cudaMemcpyDeviceToHost, cudaStreamPerThread);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(cudaStreamPerThread);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "copy device to host");
    Py_RETURN_NONE;
}

/* dtod(dst_ptr, src_ptr, nbytes) */
static PyObject *gp_dtod(PyObject *module, PyObject *args)
{
    unsigned long long dst, src, nbytes;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "KKK:dtod", &dst, &src, &nbytes) || gp_ensure_device(module) < 0)
        return NULL;
    err = cudaMemcpyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)nbytes,
                          cudaMemcpyDeviceToDevice, cudaStreamPerThread);
    if (err == cudaSuccess)
        err = gp_sync(cudaStreamPerThread);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "copy device to device");
    Py_RETURN_NONE;
}

/* wait_stream(handle): honour __cuda_array_interface__["stream"] - work
 * issued afterwards on the per-thread stream waits for what the foreign
 * stream has queued so far (1 = legacy default, 2 = per-thread default). */
static PyObject *gp_wait_stream(PyObject *module, PyObject *args)
{
    unsigned long long handle;
    cudaStream_t foreign;
    cudaEvent_t ev;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "K:wait_stream", &handle) || gp_ensure_device(module) < 0)
        return NULL;
    if (handle == 2)
        Py_RETURN_NONE; /* the same stream: already ordered */
    foreign = handle == 1 ? cudaStreamLegacy : (cudaStream_t)(uintptr_t)handle;
    err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) {
        err = cudaEventRecord(ev, foreign);
        if (err == cudaSuccess)
            err = cudaStreamWaitEvent(cudaStreamPerThread, ev, 0);
        (void)cudaEventDestroy(ev);
    }
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "waiting on the array's stream");
    Py_RETURN_NONE;
}

/* ------------------------------------------------------- device info */

static PyObject *gp_device_info(PyObject *module, PyObject *noargs)
{
    struct cudaDeviceProp p;
    int dev = 0, driver = 0, runtime = 0;
    cudaError_t err;
    (void)noargs;

    if (gp_ensure_device(module) < 0)
        return NULL;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaGetDeviceProperties(&p, dev)) != cudaSuccess ||
        (err = cudaDriverGetVersion(&driver)) != cudaSuccess ||
        (err = cudaRuntimeGetVersion(&runtime)) != cudaSuccess)
        return gp_raise_cuda(module, err, "device_info");
    return Py_BuildValue(
        "{s:i,s:s,s:(ii),s:i,s:K,s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:i,s:i,s:i}",
        "device", dev, "name", p.name, "compute_capability", p.major, p.minor,
        "multiprocessors", p.multiProcessorCount, "total_memory", (unsigned long long)p.totalGlobalMem,
        "l2_cache_bytes", p.l2CacheSize, "warp_size", p.warpSize,
        "max_threads_per_block", p.maxThreadsPerBlock,
        "max_threads_per_multiprocessor", p.maxThreadsPerMultiProcessor,
        "max_blocks_per_multiprocessor", p.maxBlocksPerMultiProcessor,
        "registers_per_multiprocessor", (unsigned long long)p.regsPerMultiprocessor,
        "shared_memory_per_multiprocessor", (unsigned long long)p.sharedMemPerMultiprocessor,
        "memory_bus_width_bits", p.memoryBusWidth, "driver_version", driver,
        "runtime_version", runtime);
}

/* Is a GPU usable?  (ok, message) without raising. */
static PyObject *gp_cuda_status(PyObject *module, PyObject *noargs)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    (void)module;
    (void)noargs;
    if (err == cudaSuccess && count == 0)
        err = cudaErrorNoDevice;
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return Py_BuildValue("(Os)", Py_False, cudaGetErrorString(err));
    }
    return Py_BuildValue("(Oi)", Py_True, count);
}

/* ------------------------------------------------------------- module */

static PyMethodDef gp_methods[] = {
    {"alloc", gp_alloc, METH_VARARGS, "alloc(nbytes) -> DeviceBuffer"},
    {"htod", gp_htod, METH_VARARGS, "htod(dst_ptr, buffer): host to device copy"},
    {"dtoh", gp_dtoh, METH_VARARGS, "dtoh(buffer, src_ptr): device to host copy"},
    {"dtod", gp_dtod, METH_VARARGS, "dtod(dst_ptr, src_ptr, nbytes)"},
    {"wait_stream", gp_wait_stream, METH_VARARGS, "wait_stream(cai_stream_handle)"},
    {"device_info", gp_device_info, METH_NOARGS, "properties of the current device"},
    {"cuda_status", gp_cuda_status, METH_NOARGS, "(True, device_count) or (False, reason)"},
    {"families", gp_families_py, METH_NOARGS, "families() -> tuple of family names"},
    {"variants", gp_variants, METH_VARARGS, "variants(family) -> list of registry rows"},
    {"reduce", gp_reduce, METH_VARARGS,
     "reduce(index, in_ptr, n, in_t, acc_t, op) -> bytes of the result (device variants)"},
    {"reduce_host", gp_reduce_host, METH_VARARGS,
     "reduce_host(index, buffer, n, in_t, acc_t, op) -> bytes of the result (host variants)"},
    {"time_reduce", gp_time_reduce, METH_VARARGS,
     "time_reduce(index, in_ptr, n, in_t, acc_t, op, warmup, repeat, flush_bytes)"
     " -> (list of kernel ms, bytes of the last result)"},
    {"scan", gp_scan, METH_VARARGS,
     "scan(index, in_ptr, out_ptr, n, in_t, acc_t, op, inclusive) (device variants)"},
    {"scan_host", gp_scan_host, METH_VARARGS,
     "scan_host(index, in_buffer, out_buffer, n, in_t, acc_t, op, inclusive) (host variants)"},
    {"time_scan", gp_time_scan, METH_VARARGS,
     "time_scan(index, in_ptr, out_ptr, n, in_t, acc_t, op, inclusive, warmup, repeat,"
     " flush_bytes) -> list of kernel ms"},
    {"transpose", gp_transpose, METH_VARARGS,
     "transpose(index, in_ptr, out_ptr, rows, cols, elem_size) (device variants)"},
    {"transpose_host", gp_transpose_host, METH_VARARGS,
     "transpose_host(index, in_buffer, out_buffer, rows, cols, elem_size) (host variants)"},
    {"time_transpose", gp_time_transpose, METH_VARARGS,
     "time_transpose(index, in_ptr, out_ptr, rows, cols, elem_size, warmup, repeat, flush_bytes)"
     " -> list of kernel ms"},
    {"time_copy", gp_time_copy, METH_VARARGS,
     "time_copy(nbytes, warmup, repeat, flush_bytes) -> list of device-to-device copy ms"},
    {"occupancy", gp_occupancy, METH_VARARGS,
     "occupancy(family, index, block_size) -> dict: the occupancy API on the variant's kernel"},
    {NULL, NULL, 0, NULL},
};

static int gp_exec(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    st->CudaError = PyErr_NewExceptionWithDoc(
        "gpuprims.CudaError",
        "A CUDA call failed. .status is the CUDA status name, .where the operation.",
        PyExc_RuntimeError, NULL);
    if (st->CudaError == NULL || PyModule_AddObjectRef(module, "CudaError", st->CudaError) < 0)
        return -1;
    st->NoDeviceError = PyErr_NewExceptionWithDoc(
        "gpuprims.NoDeviceError", "The CUDA backend was asked for and no usable GPU is visible.",
        st->CudaError, NULL);
    if (st->NoDeviceError == NULL ||
        PyModule_AddObjectRef(module, "NoDeviceError", st->NoDeviceError) < 0)
        return -1;
    st->DeviceBuffer = PyType_FromModuleAndSpec(module, &DeviceBuffer_spec, NULL);
    if (st->DeviceBuffer == NULL ||
        PyModule_AddObjectRef(module, "DeviceBuffer", st->DeviceBuffer) < 0)
        return -1;
    st->device_ready = 0;
    return 0;
}

static int gp_traverse(PyObject *module, visitproc visit, void *arg)
{
    gp_state *st = gp_get_state(module);
    Py_VISIT(st->CudaError);
    Py_VISIT(st->NoDeviceError);
    Py_VISIT(st->DeviceBuffer);
    return 0;
}

static int gp_clear(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    Py_CLEAR(st->CudaError);
    Py_CLEAR(st->NoDeviceError);
    Py_CLEAR(st->DeviceBuffer);
    return 0;
}

static void gp_free(void *module) { (void)gp_clear((PyObject *)module); }

static PyModuleDef_Slot gp_slots[] = {
    {Py_mod_exec, gp_exec},
    {0, NULL},
};

static struct PyModuleDef gp_module = {
    PyModuleDef_HEAD_INIT,
    "gpuprims._core",
    "gpuprims' compiled core: device memory, variant registries, launches and timing.",
    sizeof(gp_state),
    gp_methods,
    gp_slots,
    gp_traverse,
    gp_clear,
    gp_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&gp_module); }
