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
#include "pipeline.h"

#include <string.h>

/* ------------------------------------------------------------ errors */

PyObject *gp_raise_cuda(PyObject *module, cudaError_t err, const char *where)
{
    if (PyErr_Occurred()) return NULL; /* raised while the call ran (Ctrl-C in an emulated launch): it stands */
    gp_state *st = gp_get_state(module);
    PyObject *type = (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
                         ? st->NoDeviceError
                         : st->CudaError;
    PyObject *exc, *value;
    const char *detail = st->rt->detail();
    int failed;

    exc = PyObject_CallFunction(type, "N", PyUnicode_FromFormat("%s: %s (%s)%s%s", where,
                                                               st->rt->error_name(err),
                                                               st->rt->error_string(err),
                                                               detail ? ": " : "",
                                                               detail ? detail : ""));
    if (exc == NULL)
        return NULL;
    value = PyUnicode_FromString(st->rt->error_name(err));
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

/* A variant the active backend cannot run (the CUDA libraries on the
 * emulator): CudaError with status cudaErrorNotSupported, naming the
 * backend that runs it. */
PyObject *gp_raise_not_on_backend(PyObject *module, const char *family, const gp_variant *v)
{
    gp_state *st = gp_get_state(module);
    PyObject *exc = PyObject_CallFunction(
        st->CudaError, "N",
        PyUnicode_FromFormat("%s variant '%s' is NVIDIA library code and needs the cuda backend; "
                             "the active backend is '%s' (gpuprims.set_backend('cuda') on a machine "
                             "with a GPU, or choose another variant)",
                             family, v->name, st->rt->name));
    PyObject *value;
    if (exc == NULL)
        return NULL;
    value = PyUnicode_FromString("cudaErrorNotSupported");
    if (value != NULL && PyObject_SetAttrString(exc, "status", value) == 0)
        PyErr_SetObject(st->CudaError, exc);
    Py_XDECREF(value);
    Py_DECREF(exc);
    return NULL;
}

/* The first call on the CUDA backend checks that a device is there and sets
 * the pool up (gp_runtime_cuda.setup).  The emulator needs nothing. */
int gp_ensure_device(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    int count = 0;
    cudaError_t err;

    if (gp_rt(module) == &gp_runtime_emu || st->device_ready)
        return 0;
    err = st->rt->device_count(&count);
    if (err == cudaSuccess && count == 0)
        err = cudaErrorNoDevice;
    if (err != cudaSuccess) {
        PyErr_Format(st->NoDeviceError,
                     "no CUDA GPU is visible (%s: %s); gpuprims' GPU variants need one "
                     "(or gpuprims.set_backend('emulator') to run the kernels on the CPU)",
                     st->rt->error_name(err), st->rt->error_string(err));
        (void)st->rt->get_last_error();
        return -1;
    }
    if ((err = st->rt->setup()) != cudaSuccess) {
        gp_raise_cuda(module, err, "device setup");
        return -1;
    }
    st->device_ready = 1;
    return 0;
}

/* Wait with the GIL released. */
cudaError_t gp_sync(const gp_runtime *rt, cudaStream_t stream)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = rt->stream_sync(stream);
    Py_END_ALLOW_THREADS
    return err;
}

gp_thread_res *gp_thread_resources(PyObject *module)
{
    /* one set per backend: [0] the CUDA backend, [1] the emulator */
    static __thread gp_thread_res per_backend[2] = {{NULL, -1, NULL, NULL, NULL, {NULL, 0, 0}},
                                                     {NULL, -1, NULL, NULL, NULL, {NULL, 0, 0}}};
    const gp_runtime *rt = gp_rt(module);
    gp_thread_res *res = &per_backend[rt == &gp_runtime_emu];
    int dev = 0;
    cudaError_t err;

    if (gp_ensure_device(module) < 0)
        return NULL;
    if ((err = rt->get_device(&dev)) != cudaSuccess)
        goto fail;
    if (res->device == dev)
        return res;
    /* A first call on this thread, or on another device: the old device's
     * small buffers stay allocated (128 KiB per thread and device). */
    res->device = -1;
    res->rt = rt;
    if ((err = rt->malloc_device((void **)&res->counter, sizeof(unsigned))) != cudaSuccess ||
        (err = rt->host_alloc_mapped(&res->result, 64)) != cudaSuccess ||
        (err = rt->malloc_device(&res->scratch, GP_SMALL_SCRATCH_BYTES)) != cudaSuccess ||
        (err = rt->malloc_device(&res->lookback.slots, GP_LOOKBACK_CACHE_BYTES)) != cudaSuccess ||
        (err = rt->memset_async(res->counter, 0, sizeof(unsigned), cudaStreamPerThread)) != cudaSuccess ||
        (err = rt->memset_async(res->lookback.slots, 0, GP_LOOKBACK_CACHE_BYTES, cudaStreamPerThread)) !=
            cudaSuccess ||
        (err = rt->stream_sync(cudaStreamPerThread)) != cudaSuccess)
        goto fail;
    res->lookback.bytes = GP_LOOKBACK_CACHE_BYTES;
    res->lookback.tag = 0;
    res->device = dev;
    return res;
fail:
    (void)rt->get_last_error();
    gp_raise_cuda(module, err, "per-thread setup");
    return NULL;
}

/* ------------------------------------------------------- DeviceBuffer */

/* Memory of one backend that a Python object owns, freed when the object
 * goes away: device memory from the stream-ordered pool (DeviceBuffer) or
 * page-locked host memory (PinnedBuffer, cudaHostAlloc; the emulator's:
 * malloc), the storage of gpuprims.empty_pinned's NumPy arrays, which the
 * host pipeline copies from and into in place. */
typedef struct {
    PyObject_HEAD
    void *ptr;
    size_t nbytes;
    const gp_runtime *rt; /* the backend it came from */
    int host;             /* page-locked host memory, else device memory */
} DeviceBuffer;

static void DeviceBuffer_dealloc(PyObject *self)
{
    DeviceBuffer *b = (DeviceBuffer *)self;
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    if (b->ptr != NULL) {
        /* Every gpuprims call has synchronized before returning, so nothing
         * of ours still uses the memory; ordering the free on the per-thread
         * stream keeps it behind anything issued there since (cudaFreeHost
         * waits for the device). */
        (void)(b->host ? b->rt->host_free(b->ptr) : b->rt->free_async(b->ptr, cudaStreamPerThread));
        (void)b->rt->get_last_error();
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

static PyObject *DeviceBuffer_get_backend(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(((DeviceBuffer *)self)->rt->name);
}

static PyGetSetDef DeviceBuffer_getset[] = {
    {"ptr", DeviceBuffer_get_ptr, NULL, "device address (int)", NULL},
    {"nbytes", DeviceBuffer_get_nbytes, NULL, "size in bytes", NULL},
    {"backend", DeviceBuffer_get_backend, NULL, "the backend whose memory it is", NULL},
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

/* A PinnedBuffer is a writable buffer of its bytes (what NumPy views). */
static int PinnedBuffer_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    DeviceBuffer *b = (DeviceBuffer *)self;
    return PyBuffer_FillInfo(view, self, b->ptr, (Py_ssize_t)b->nbytes, 0, flags);
}

static PyType_Slot PinnedBuffer_slots[] = {
    {Py_tp_dealloc, DeviceBuffer_dealloc},
    {Py_tp_getset, DeviceBuffer_getset},
    {Py_bf_getbuffer, PinnedBuffer_getbuffer},
    {Py_tp_doc, "Page-locked host memory (a writable buffer of bytes), freed when the object goes away."},
    {0, NULL},
};

static PyType_Spec PinnedBuffer_spec = {
    "gpuprims._core.PinnedBuffer",
    sizeof(DeviceBuffer),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    PinnedBuffer_slots,
};

/* A new buffer of `type` (host: page-locked host memory), nbytes of the
 * active backend's memory - always a real allocation, even for 0 bytes, so
 * ptr is never NULL.  Device memory comes from the stream-ordered pool on
 * this thread's stream; synced: that stream is waited for, so the memory is
 * usable from any stream (a foreign library's) on return.  A result that a
 * call of this module fills at once needs no such wait: the call runs on the
 * same stream and waits for it before it returns. */
static PyObject *new_buffer(PyObject *module, PyObject *type, unsigned long long nbytes, int host,
                            int synced)
{
    const gp_runtime *rt = gp_rt(module);
    allocfunc tp_alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)type, Py_tp_alloc);
    DeviceBuffer *b;
    cudaError_t err;

    if (gp_ensure_device(module) < 0 || (b = (DeviceBuffer *)tp_alloc((PyTypeObject *)type, 0)) == NULL)
        return NULL;
    b->ptr = NULL;
    b->nbytes = (size_t)nbytes;
    b->rt = rt;
    b->host = host;
    if (host) {
        Py_BEGIN_ALLOW_THREADS /* locking pages takes a while: ~0.5 s a GiB */
        err = rt->host_alloc(&b->ptr, nbytes ? (size_t)nbytes : 1);
        Py_END_ALLOW_THREADS
    } else {
        err = rt->malloc_async(&b->ptr, nbytes ? (size_t)nbytes : 1, cudaStreamPerThread);
        if (err == cudaSuccess && synced)
            err = gp_sync(rt, cudaStreamPerThread); /* waits with the GIL released */
    }
    if (err != cudaSuccess) {
        b->ptr = NULL;
        Py_DECREF(b);
        (void)rt->get_last_error();
        return gp_raise_cuda(module, err, host ? "page-locked host allocation" : "alloc");
    }
    return (PyObject *)b;
}

/* alloc(nbytes) -> DeviceBuffer */
static PyObject *gp_alloc(PyObject *module, PyObject *args)
{
    unsigned long long nbytes;
    int synced = 1;
    if (!PyArg_ParseTuple(args, "K|p:alloc", &nbytes, &synced))
        return NULL;
    return new_buffer(module, gp_get_state(module)->DeviceBuffer, nbytes, 0, synced);
}

/* host_alloc(nbytes) -> PinnedBuffer */
static PyObject *gp_host_alloc_py(PyObject *module, PyObject *args)
{
    unsigned long long nbytes;
    if (!PyArg_ParseTuple(args, "K:host_alloc", &nbytes))
        return NULL;
    return new_buffer(module, gp_get_state(module)->PinnedBuffer, nbytes, 1, 1);
}

/* host_pinned(address, nbytes) -> bool: the active backend's answer */
static PyObject *gp_host_pinned_py(PyObject *module, PyObject *args)
{
    unsigned long long addr, nbytes;
    int yes;
    if (!PyArg_ParseTuple(args, "KK:host_pinned", &addr, &nbytes) || gp_ensure_device(module) < 0)
        return NULL;
    yes = gp_rt(module)->host_pinned((const void *)(uintptr_t)addr, (size_t)nbytes, NULL);
    return PyBool_FromLong(yes);
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
    {
        const gp_runtime *rt = gp_rt(module);
        /* a large copy moves through the pinned ring (pipeline.c) */
        int piped = gp_pipeline_copy(module, rt, (void *)(uintptr_t)dst, view.buf, (size_t)view.len, 1);
        if (piped != 0) {
            PyBuffer_Release(&view);
            if (piped < 0)
                return NULL;
            Py_RETURN_NONE;
        }
        Py_BEGIN_ALLOW_THREADS
        err = rt->memcpy_async((void *)(uintptr_t)dst, view.buf, (size_t)view.len,
                               cudaMemcpyHostToDevice, cudaStreamPerThread);
        if (err == cudaSuccess)
            err = rt->stream_sync(cudaStreamPerThread);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "copy host to device");
    Py_RETURN_NONE;
}

/* The runtime whose memory `backend` names ("cuda" or "emulator"), ready
 * to copy, whichever backend is active: a DeviceArray is read by the
 * backend that made it.  NULL with an exception if this build has no such
 * backend (ValueError) or its device cannot be set up (NoDeviceError). */
static const gp_runtime *gp_memory_rt(PyObject *module, const char *backend)
{
    gp_state *st = gp_get_state(module);
    if (backend == NULL || strcmp(backend, gp_rt(module)->name) == 0)
        return gp_ensure_device(module) < 0 ? NULL : st->rt;
    if (strcmp(backend, gp_runtime_emu.name) == 0)
        return &gp_runtime_emu; /* host memory: nothing to set up */
#ifdef GP_HAVE_CUDA
    if (strcmp(backend, gp_runtime_cuda.name) == 0) {
        const gp_runtime *active = st->rt;
        int failed;
        st->rt = &gp_runtime_cuda; /* set its device up (once) while the emulator stays active */
        failed = gp_ensure_device(module) < 0;
        st->rt = active;
        return failed ? NULL : &gp_runtime_cuda;
    }
#endif
    PyErr_Format(PyExc_ValueError, "memory of a %s backend, which this build of gpuprims does not have",
                 backend);
    return NULL;
}

/* dtoh(dst_buffer, src_ptr[, backend]): fill a writable contiguous host
 * buffer from memory of `backend` (default: the active backend's). */
static PyObject *gp_dtoh(PyObject *module, PyObject *args)
{
    unsigned long long src;
    PyObject *obj;
    Py_buffer view;
    cudaError_t err;
    const char *backend = NULL;
    const gp_runtime *rt;

    if (!PyArg_ParseTuple(args, "OK|s:dtoh", &obj, &src, &backend) ||
        (rt = gp_memory_rt(module, backend)) == NULL)
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    {
        /* a large copy moves through the pinned ring (pipeline.c) */
        int piped = gp_pipeline_copy(module, rt, view.buf, (const void *)(uintptr_t)src, (size_t)view.len, 0);
        if (piped != 0) {
            PyBuffer_Release(&view);
            if (piped < 0)
                return NULL;
            Py_RETURN_NONE;
        }
    }
    {
        Py_BEGIN_ALLOW_THREADS
        err = rt->memcpy_async(view.buf, (const void *)(uintptr_t)src, (size_t)view.len,
                               cudaMemcpyDeviceToHost, cudaStreamPerThread);
        if (err == cudaSuccess)
            err = rt->stream_sync(cudaStreamPerThread);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "copy device to host");
    Py_RETURN_NONE;
}

/* dtod(dst_ptr, src_ptr, nbytes) */
static PyObject *gp_dtod(PyObject *module, PyObject *args)
{
    const gp_runtime *rt = gp_rt(module);
    unsigned long long dst, src, nbytes;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "KKK:dtod", &dst, &src, &nbytes) || gp_ensure_device(module) < 0)
        return NULL;
    err = rt->memcpy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)nbytes,
                           cudaMemcpyDeviceToDevice, cudaStreamPerThread);
    if (err == cudaSuccess)
        err = gp_sync(rt, cudaStreamPerThread);
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
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "K:wait_stream", &handle) || gp_ensure_device(module) < 0)
        return NULL;
    if (handle == 2)
        Py_RETURN_NONE; /* the same stream: already ordered */
    foreign = handle == 1 ? cudaStreamLegacy : (cudaStream_t)(uintptr_t)handle;
    err = gp_rt(module)->stream_wait_stream(cudaStreamPerThread, foreign);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "waiting on the array's stream");
    Py_RETURN_NONE;
}

/* ------------------------------------------------------- device info */

static PyObject *gp_device_info(PyObject *module, PyObject *noargs)
{
    const gp_runtime *rt = gp_rt(module);
    gp_device_props p;
    int dev = 0;
    cudaError_t err;
    (void)noargs;

    if (gp_ensure_device(module) < 0)
        return NULL;
    if ((err = rt->get_device(&dev)) != cudaSuccess || (err = rt->device_props(&p, dev)) != cudaSuccess)
        return gp_raise_cuda(module, err, "device_info");
    return Py_BuildValue(
        "{s:i,s:s,s:(ii),s:i,s:K,s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:i,s:i,s:i,s:s}",
        "device", dev, "name", p.name, "compute_capability", p.major, p.minor,
        "multiprocessors", p.multiprocessors, "total_memory", p.total_memory,
        "l2_cache_bytes", p.l2_cache_bytes, "warp_size", p.warp_size,
        "max_threads_per_block", p.max_threads_per_block,
        "max_threads_per_multiprocessor", p.max_threads_per_multiprocessor,
        "max_blocks_per_multiprocessor", p.max_blocks_per_multiprocessor,
        "registers_per_multiprocessor", p.registers_per_multiprocessor,
        "shared_memory_per_multiprocessor", p.shared_memory_per_multiprocessor,
        "memory_bus_width_bits", p.memory_bus_width_bits, "driver_version", p.driver_version,
        "runtime_version", p.runtime_version, "backend", rt->name);
}

#ifdef GP_HAVE_CUDA
const char *gp_cccl_version(void); /* cuda/cccl.cu */
int gp_cccl_version_number(void);
#endif

/* cccl() -> ("3.5.0, nvidia-cuda-cccl 13.3.5.0.6 wheel", 3005000): the CCCL
 * the CUB baselines were compiled against; None in a build without CUDA. */
static PyObject *gp_cccl(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
#ifdef GP_HAVE_CUDA
    return Py_BuildValue("(si)", gp_cccl_version(), gp_cccl_version_number());
#else
    Py_RETURN_NONE;
#endif
}

/* Why the CUDA backend cannot run here, or NULL where a GPU is usable;
 * `count` gets the number of GPUs.  Never raises. */
static const char *gp_cuda_unavailable(int *count)
{
    *count = 0;
#ifdef GP_HAVE_CUDA
    {
        cudaError_t err = gp_runtime_cuda.device_count(count);
        if (err == cudaSuccess && *count == 0)
            err = cudaErrorNoDevice;
        if (err != cudaSuccess) {
            (void)gp_runtime_cuda.get_last_error();
            return gp_runtime_cuda.error_string(err);
        }
        return NULL;
    }
#else
    return "gpuprims was built without CUDA (no nvcc at build time): only the emulator backend is "
           "available";
#endif
}

/* The "auto" backend decided: the CUDA backend where a GPU is usable, else
 * the emulator (auto_why says why).  gpuprims' import only marks "auto"
 * pending (set_backend_auto), and the first use of the backend decides:
 * importing gpuprims initializes no CUDA, so a process that sets
 * CUDA_VISIBLE_DEVICES after its imports - a dask-cuda worker sets it after
 * the spawned process has re-imported the main module - still works on
 * the GPU that it names. */
void gp_decide_auto(gp_state *st)
{
    int count;
    st->auto_pending = 0;
    st->auto_why = gp_cuda_unavailable(&count);
#ifdef GP_HAVE_CUDA
    st->rt = st->auto_why == NULL ? &gp_runtime_cuda : &gp_runtime_emu;
#else
    st->rt = &gp_runtime_emu;
#endif
}

/* set_backend_auto(): "auto", decided at the backend's first use. */
static PyObject *gp_set_backend_auto(PyObject *module, PyObject *noargs)
{
    gp_state *st = gp_get_state(module);
    (void)noargs;
    st->auto_pending = 1;
    st->auto_why = NULL;
    Py_RETURN_NONE;
}

/* auto_reason(): why "auto" chose the emulator (no usable GPU), or None
 * where it chose the GPU or the backend was named (deciding a pending
 * "auto" first). */
static PyObject *gp_auto_reason(PyObject *module, PyObject *noargs)
{
    gp_state *st = gp_get_state(module);
    (void)noargs;
    (void)gp_rt(module); /* decides a pending "auto" */
    if (st->auto_why == NULL)
        Py_RETURN_NONE;
    return PyUnicode_FromString(st->auto_why);
}

/* lookback_tag([tag]) -> the tag of the thread's last small look-back scan
 * on the active backend (gp_lookback_cache), after moving it on to `tag`
 * where one is given.  Only forward: a tag at or below one already used
 * could match a slot an earlier scan left.  Tests move it to just below
 * 2**32 to take scans through the wrap, where the slots are zeroed. */
static PyObject *gp_lookback_tag_py(PyObject *module, PyObject *args)
{
    PyObject *want = NULL;
    gp_thread_res *res;
    unsigned long long tag = 0;

    if (!PyArg_ParseTuple(args, "|O!", &PyLong_Type, &want))
        return NULL;
    if (want != NULL && (tag = PyLong_AsUnsignedLongLong(want)) == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if ((res = gp_thread_resources(module)) == NULL)
        return NULL;
    if (want != NULL) {
        if (tag > 0xffffffffull || tag < res->lookback.tag) {
            PyErr_Format(PyExc_ValueError, "lookback_tag: %llu is not in [%u, 2**32)", tag, res->lookback.tag);
            return NULL;
        }
        res->lookback.tag = (unsigned)tag;
    }
    return PyLong_FromUnsignedLong(res->lookback.tag);
}

/* Is a GPU usable by the CUDA backend?  (ok, device count or reason),
 * never raising, whichever backend is active. */
static PyObject *gp_cuda_status(PyObject *module, PyObject *noargs)
{
    int count;
    const char *why = gp_cuda_unavailable(&count);
    (void)module;
    (void)noargs;
    if (why != NULL)
        return Py_BuildValue("(Os)", Py_False, why);
    return Py_BuildValue("(Oi)", Py_True, count);
}

int gp_require_gpu(PyObject *module, const char *what)
{
    int count;
    const char *why;
    if (gp_rt(module) != &gp_runtime_emu)
        return gp_ensure_device(module);
    if ((why = gp_cuda_unavailable(&count)) != NULL)
        PyErr_Format(gp_get_state(module)->NoDeviceError,
                     "%s needs a CUDA GPU and none is usable (%s); the emulator backend runs the "
                     "kernels on the CPU, whose times say nothing about a GPU",
                     what, why);
    else
        PyErr_Format(PyExc_ValueError,
                     "%s needs the cuda backend; the emulator is selected "
                     "(gpuprims.set_backend(\"cuda\"))",
                     what);
    return -1;
}

/* ---------------------------------------------------------- backends */

/* backends() -> tuple of the backends this build has */
static PyObject *gp_backends(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
#ifdef GP_HAVE_CUDA
    return Py_BuildValue("(ss)", "cuda", "emulator");
#else
    return Py_BuildValue("(s)", "emulator");
#endif
}

/* set_backend(name): "cuda" or "emulator" ("auto": set_backend_auto).
 * "cuda" raises NoDeviceError where it was not built or no GPU is visible. */
static PyObject *gp_set_backend(PyObject *module, PyObject *args)
{
    gp_state *st = gp_get_state(module);
    const char *name;

    if (!PyArg_ParseTuple(args, "s:set_backend", &name))
        return NULL;
    if (strcmp(name, "emulator") == 0) {
        st->auto_pending = 0;
        st->auto_why = NULL;
        st->rt = &gp_runtime_emu;
        Py_RETURN_NONE;
    }
    if (strcmp(name, "cuda") == 0) {
#ifdef GP_HAVE_CUDA
        const gp_runtime *old = gp_rt(module); /* the backend to go back to, should the device fail */
        st->rt = &gp_runtime_cuda;
        if (gp_ensure_device(module) < 0) {
            st->rt = old;
            return NULL;
        }
        st->auto_why = NULL;
        Py_RETURN_NONE;
#else
        PyErr_SetString(st->NoDeviceError,
                        "the cuda backend is not available: gpuprims was built without CUDA (no nvcc "
                        "at build time); install the CUDA toolkit and reinstall, or use the emulator "
                        "backend");
        return NULL;
#endif
    }
    PyErr_Format(PyExc_ValueError, "unknown backend %R; choose 'cuda', 'emulator' or 'auto'",
                 PyTuple_GetItem(args, 0));
    return NULL;
}

/* set_backend_unchecked("cuda"): the CUDA backend even without a GPU, so
 * that every GPU call raises NoDeviceError saying why (GPUPRIMS_BACKEND=cuda);
 * ("emulator"): the emulator, keeping why "auto" chose it (a backend put
 * back as it was, gpuprims._backend.emulating). */
static PyObject *gp_set_backend_unchecked(PyObject *module, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:set_backend_unchecked", &name))
        return NULL;
    gp_state *st = gp_get_state(module);
    if (strcmp(name, "emulator") == 0) { /* kept: why "auto" chose it, for its warning */
        st->auto_pending = 0;
        st->rt = &gp_runtime_emu;
        Py_RETURN_NONE;
    }
#ifdef GP_HAVE_CUDA
    if (strcmp(name, "cuda") == 0) {
        st->auto_pending = 0;
        st->auto_why = NULL;
        st->rt = &gp_runtime_cuda;
        Py_RETURN_NONE;
    }
#endif
    return gp_set_backend(module, args);
}

static PyObject *gp_backend(PyObject *module, PyObject *noargs)
{
    (void)noargs;
    return PyUnicode_FromString(gp_rt(module)->name);
}

/* ------------------------------------------------------------- module */

/* dlpack.c */
PyObject *gp_dlpack_export(PyObject *module, PyObject *args);
PyObject *gp_dlpack_import(PyObject *module, PyObject *capsule);
PyObject *gp_dlpack_device(PyObject *module, PyObject *args);

/* pool_stats(reset=0): what a test reads to check that a call allocated
 * nothing (the device work of the active backend waited for first). */
static PyObject *gp_pool_stats_py(PyObject *module, PyObject *args)
{
    const gp_runtime *rt = gp_rt(module);
    gp_pool_stats s;
    int reset = 0;
    cudaError_t err;
    if (!PyArg_ParseTuple(args, "|p:pool_stats", &reset))
        return NULL;
    if (gp_ensure_device(module) < 0)
        return NULL;
    if ((err = gp_sync(rt, cudaStreamPerThread)) != cudaSuccess || (err = rt->pool_stats(&s, reset)) != cudaSuccess)
        return gp_raise_cuda(module, err, "pool_stats");
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "used_bytes", s.used, "used_high_bytes", s.used_high,
                         "reserved_bytes", s.reserved, "reserved_high_bytes", s.reserved_high, "allocations",
                         s.allocations);
}

static PyMethodDef gp_methods[] = {
    {"alloc", gp_alloc, METH_VARARGS,
     "alloc(nbytes[, synced=True]) -> DeviceBuffer (synced: usable from any stream on return; "
     "else only in stream order on this thread's stream, until a sync of it)"},
    {"host_alloc", gp_host_alloc_py, METH_VARARGS, "host_alloc(nbytes) -> PinnedBuffer (page-locked host memory)"},
    {"host_pinned", gp_host_pinned_py, METH_VARARGS,
     "host_pinned(address, nbytes) -> bool: the host range is page-locked memory"},
    {"htod", gp_htod, METH_VARARGS, "htod(dst_ptr, buffer): host to device copy"},
    {"dtoh", gp_dtoh, METH_VARARGS, "dtoh(buffer, src_ptr[, backend]): device to host copy"},
    {"dtod", gp_dtod, METH_VARARGS, "dtod(dst_ptr, src_ptr, nbytes)"},
    {"dlpack_export", gp_dlpack_export, METH_VARARGS,
     "dlpack_export(owner, ptr, shape, code, bits, device_type, device_id, versioned, flags) -> capsule"},
    {"dlpack_import", gp_dlpack_import, METH_O,
     "dlpack_import(capsule) -> (holder, ptr, shape, strides, code, bits, device_type, device_id, ro)"},
    {"dlpack_device", gp_dlpack_device, METH_VARARGS, "dlpack_device(backend) -> (type, id)"},
    {"wait_stream", gp_wait_stream, METH_VARARGS, "wait_stream(cai_stream_handle)"},
    {"device_info", gp_device_info, METH_NOARGS, "properties of the current device"},
    {"cccl", gp_cccl, METH_NOARGS, "cccl() -> (version text, CCCL_VERSION) of the CUB baselines, or None"},
    {"cuda_status", gp_cuda_status, METH_NOARGS, "(True, device_count) or (False, reason)"},
    {"lookback_tag", gp_lookback_tag_py, METH_VARARGS,
     "lookback_tag([tag]) -> the thread's last small look-back scan tag on the active backend (moved on to tag)"},
    {"set_backend_auto", gp_set_backend_auto, METH_NOARGS,
     "\"auto\": the GPU if one is usable, else the emulator, decided at the backend's first use"},
    {"auto_reason", gp_auto_reason, METH_NOARGS,
     "why \"auto\" chose the emulator (no usable GPU), or None"},
    {"backends", gp_backends, METH_NOARGS, "backends() -> the backends this build has"},
    {"set_backend", gp_set_backend, METH_VARARGS, "set_backend('cuda' | 'emulator')"},
    {"backend", gp_backend, METH_NOARGS, "backend() -> the active backend's name"},
    {"set_backend_unchecked", gp_set_backend_unchecked, METH_VARARGS,
     "set_backend_unchecked('cuda'): the cuda backend without checking for a GPU"},
    {"emu_trace", gp_emu_trace, METH_VARARGS,
     "emu_trace(start, max_bytes) -> None, or after a traced call: list of steps (emulator)"},
    {"families", gp_families_py, METH_NOARGS, "families() -> the family names, in the core's order"},
    {"dtypes", gp_dtypes_py, METH_NOARGS, "dtypes() -> the numpy names of the dtype codes, in order"},
    {"ops", gp_ops_py, METH_NOARGS, "ops() -> the names of the op codes, in order"},
    {"variants", gp_variants, METH_VARARGS, "variants(family) -> list of registry rows"},
    {"call", gp_call_py, METH_VARARGS,
     "call(family, index, in, out, params) -> the value of a scalar family, else None; in/out: "
     "device addresses or host buffers (a device variant stages host buffers)"},
    {"time", gp_time_py, METH_VARARGS,
     "time(family, index, in_addr, out_addr or None, params, warmup, repeat, flush_bytes)"
     " -> (list of kernel ms, the value or None)"},
    {"time_copy", gp_time_copy, METH_VARARGS,
     "time_copy(nbytes, warmup, repeat, flush_bytes) -> list of device-to-device copy ms"},
    {"pipeline_config", (PyCFunction)(void (*)(void))gp_pipeline_config_py, METH_VARARGS | METH_KEYWORDS,
     "pipeline_config(pinned_limit=, device_limit=, threshold=, chunk_bytes=, interrupt_after=, progress_s=, "
     "trace=, serial=) -> dict"},
    {"pipeline_stats", gp_pipeline_stats_py, METH_NOARGS, "pipeline_stats() -> dict: the pinned ring's counts"},
    {"pipeline_trace", gp_pipeline_trace_py, METH_NOARGS,
     "pipeline_trace() -> list of {chunk, stage, stream, start_ms, end_ms}: the last pipelined call's "
     "stages (pipeline_config(trace=N)); on the emulator host times, nothing about a GPU"},
    {"time_host_copy", gp_time_host_copy_py, METH_VARARGS,
     "time_host_copy(nbytes, to_device, pinned, repeat) -> list of ms (the bus roof)"},
    {"pool_stats", gp_pool_stats_py, METH_VARARGS,
     "pool_stats(reset=0) -> dict: the active backend's stream-ordered pool (used and reserved bytes, "
     "their high marks, malloc_async calls); reset: the high marks start again from now"},
    {"free_memory", gp_free_memory_py, METH_NOARGS,
     "free_memory(): give back the pinned ring and the pool's cached device memory"},
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
    st->PinnedBuffer = PyType_FromModuleAndSpec(module, &PinnedBuffer_spec, NULL);
    if (st->PinnedBuffer == NULL || PyModule_AddObjectRef(module, "PinnedBuffer", st->PinnedBuffer) < 0)
        return -1;
    st->device_ready = 0;
    st->auto_pending = 0;
    st->auto_why = NULL;
    st->rt = &gp_runtime_emu; /* until gpuprims picks one (gpuprims._backend) */
    return 0;
}

static int gp_traverse(PyObject *module, visitproc visit, void *arg)
{
    gp_state *st = gp_get_state(module);
    Py_VISIT(st->CudaError);
    Py_VISIT(st->NoDeviceError);
    Py_VISIT(st->DeviceBuffer);
    Py_VISIT(st->PinnedBuffer);
    return 0;
}

static int gp_clear(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    Py_CLEAR(st->CudaError);
    Py_CLEAR(st->NoDeviceError);
    Py_CLEAR(st->DeviceBuffer);
    Py_CLEAR(st->PinnedBuffer);
    return 0;
}

static void gp_free(void *module)
{
    gp_pipeline_teardown(); /* the pinned ring and its streams */
    (void)gp_clear((PyObject *)module);
}

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
