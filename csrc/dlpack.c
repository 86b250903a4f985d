/* dlpack.c - DLPack exchange of device arrays: the C side of
 * DeviceArray.__dlpack__, __dlpack_device__ and gpuprims.from_dlpack.
 *
 * DLPack (https://dmlc.github.io/dlpack/latest/) describes a tensor in
 * memory with a C struct; the Python array API standard ("Data interchange
 * mechanisms", https://data-apis.org/array-api/latest/design_topics/data_interchange.html)
 * passes it between libraries in a PyCapsule:
 *   - named "dltensor" holding a DLManagedTensor (DLPack before 1.0), or
 *   - named "dltensor_versioned" holding a DLManagedTensorVersioned (1.0 and
 *     later; the producer returns it when the consumer's max_version >= (1, 0)).
 * The consumer takes the tensor over by renaming the capsule "used_dltensor"
 * ("used_dltensor_versioned") and calls the tensor's deleter when it no
 * longer needs the memory; a capsule that nobody consumed calls the deleter
 * itself when it goes away.
 *
 * Python decides the policy (which device types each backend reads, the
 * stream and copy arguments, the dtype codes); this file builds and reads
 * the structs and keeps their owners alive.  The structs are declared here
 * as the DLPack 1.0 header (dlpack.h) lays them out: the ABI is the
 * specification's, so no copy of that header is needed.
 */
#include "glue.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ the DLPack 1.0 ABI */

enum { GP_DL_CPU = 1, GP_DL_CUDA = 2 }; /* DLDeviceType: kDLCPU, kDLCUDA (the others pass through) */

typedef struct {
    int32_t device_type; /* a DLDeviceType (a C enum: int-sized) */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code; /* DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLComplex 5, kDLBool 6 ... */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: compact and row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define GP_DLPACK_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define GP_DLPACK_FLAG_IS_COPIED ((uint64_t)1 << 1)

/* The capsule names of the protocol, and of the objects that hold an
 * imported tensor (from_dlpack) until its DeviceArray goes away. */
static const char DLTENSOR[] = "dltensor";
static const char USED_DLTENSOR[] = "used_dltensor";
static const char DLTENSOR_V[] = "dltensor_versioned";
static const char USED_DLTENSOR_V[] = "used_dltensor_versioned";
static const char HELD[] = "gpuprims.dlpack_held";
static const char HELD_V[] = "gpuprims.dlpack_held_versioned";

/* ------------------------------------------------------------ export */

/* An exported tensor: the managed struct, then its shape and strides, in
 * one allocation; manager_ctx is a strong reference to the owner of the
 * memory (the DeviceArray, or the NumPy copy of a cross-device export). */

static void release_owner(void *owner, void *block)
{
    /* A consumer may call the deleter from any thread, or after the
     * interpreter is gone: then the owner is left (its memory is freed with
     * the process), as NumPy's exporter does. */
    PyGILState_STATE gil;
    if (!Py_IsInitialized())
        return;
    gil = PyGILState_Ensure();
    free(block);
    Py_XDECREF((PyObject *)owner);
    PyGILState_Release(gil);
}

static void deleter_legacy(DLManagedTensor *self) { release_owner(self->manager_ctx, self); }

static void deleter_versioned(DLManagedTensorVersioned *self)
{
    release_owner(self->manager_ctx, self);
}

/* The capsule's destructor: only a capsule nobody consumed still owns its
 * tensor (a consumer renamed it and calls the deleter itself). */
static void capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, DLTENSOR)) {
        DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(capsule, DLTENSOR);
        if (m->deleter != NULL)
            m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, DLTENSOR_V)) {
        DLManagedTensorVersioned *m =
            (DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, DLTENSOR_V);
        if (m->deleter != NULL)
            m->deleter(m);
    }
}

static void fill_tensor(DLTensor *t, int64_t *dims, Py_ssize_t ndim, unsigned long long ptr,
                        int code, int bits, int device_type, int device_id)
{
    int64_t step = 1;
    Py_ssize_t i;
    t->data = (void *)(uintptr_t)ptr;
    t->device.device_type = device_type;
    t->device.device_id = device_id;
    t->ndim = (int32_t)ndim;
    t->dtype.code = (uint8_t)code;
    t->dtype.bits = (uint8_t)bits;
    t->dtype.lanes = 1;
    t->shape = dims;
    /* C-contiguous strides, given explicitly: consumers of DLPack before
     * 1.0 are not all ready for NULL */
    t->strides = dims + ndim;
    for (i = ndim - 1; i >= 0; --i) {
        t->strides[i] = step;
        step *= dims[i];
    }
    t->byte_offset = 0;
}

/* dlpack_export(owner, ptr, shape, code, bits, device_type, device_id,
 *               versioned, flags) -> capsule
 * The C-contiguous tensor of `shape` at `ptr` with the DLPack dtype
 * (code, bits), kept alive through a reference to `owner` until the
 * consumer calls the deleter.  versioned: a "dltensor_versioned" capsule
 * (DLPack 1.0) carrying `flags` (read-only, is-copied); else "dltensor". */
PyObject *gp_dlpack_export(PyObject *module, PyObject *args)
{
    PyObject *owner, *shape, *capsule;
    unsigned long long ptr, flags;
    int code, bits, device_type, device_id, versioned;
    Py_ssize_t ndim, i;
    size_t head;
    void *block;
    int64_t *dims;
    (void)module;

    if (!PyArg_ParseTuple(args, "OKO!iiiipK:dlpack_export", &owner, &ptr, &PyTuple_Type, &shape,
                          &code, &bits, &device_type, &device_id, &versioned, &flags))
        return NULL;
    if (code < 0 || code > 255 || bits <= 0 || bits > 255) {
        PyErr_Format(PyExc_ValueError, "dlpack_export: no DLPack dtype (code %d, %d bits)", code, bits);
        return NULL;
    }
    ndim = PyTuple_Size(shape);
    head = versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor);
    head = (head + sizeof(int64_t) - 1) / sizeof(int64_t) * sizeof(int64_t);
    block = malloc(head + 2 * (size_t)(ndim ? ndim : 1) * sizeof(int64_t));
    if (block == NULL)
        return PyErr_NoMemory();
    dims = (int64_t *)((char *)block + head);
    for (i = 0; i < ndim; ++i) {
        long long n = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
        if (n == -1 && PyErr_Occurred()) {
            free(block);
            return NULL;
        }
        if (n < 0) {
            free(block);
            PyErr_SetString(PyExc_ValueError, "dlpack_export: a negative dimension");
            return NULL;
        }
        dims[i] = (int64_t)n;
    }
    Py_INCREF(owner);
    if (versioned) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)block;
        m->version.major = 1;
        m->version.minor = 0;
        m->manager_ctx = owner;
        m->deleter = deleter_versioned;
        m->flags = (uint64_t)flags;
        fill_tensor(&m->dl_tensor, dims, ndim, ptr, code, bits, device_type, device_id);
        capsule = PyCapsule_New(m, DLTENSOR_V, capsule_destructor);
    } else {
        DLManagedTensor *m = (DLManagedTensor *)block;
        m->manager_ctx = owner;
        m->deleter = deleter_legacy;
        fill_tensor(&m->dl_tensor, dims, ndim, ptr, code, bits, device_type, device_id);
        capsule = PyCapsule_New(m, DLTENSOR, capsule_destructor);
    }
    if (capsule == NULL) {
        free(block);
        Py_DECREF(owner);
    }
    return capsule;
}

/* ------------------------------------------------------------ import */

/* The holder of an imported tensor: the DeviceArray viewing the memory
 * keeps it as its owner; when it goes away, the producer's deleter runs. */
static void held_destructor(PyObject *held)
{
    const char *name = PyCapsule_GetName(held);
    if (name != NULL && strcmp(name, HELD_V) == 0) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)PyCapsule_GetPointer(held, HELD_V);
        if (m != NULL && m->deleter != NULL)
            m->deleter(m);
    } else if (name != NULL) {
        DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(held, HELD);
        if (m != NULL && m->deleter != NULL)
            m->deleter(m);
    }
}

static PyObject *dims_tuple(const int64_t *dims, int32_t ndim)
{
    PyObject *t = PyTuple_New(ndim);
    int32_t i;
    if (t == NULL)
        return NULL;
    for (i = 0; i < ndim; ++i) {
        PyObject *n = PyLong_FromLongLong((long long)dims[i]);
        if (n == NULL || PyTuple_SetItem(t, i, n) < 0) {
            Py_DECREF(t);
            return NULL;
        }
    }
    return t;
}

/* dlpack_import(capsule) -> (holder, address, shape, strides or None,
 *                            code, bits, device_type, device_id, read_only)
 * Consumes a "dltensor" or "dltensor_versioned" capsule: the tensor is then
 * owned by `holder`, whose destruction calls the producer's deleter.
 * address = data + byte_offset; strides in elements (None: C-contiguous).
 * A capsule already consumed, or not DLPack, is a TypeError; a DLPack major
 * version other than 1, or vector lanes, a BufferError (nothing consumed). */
PyObject *gp_dlpack_import(PyObject *module, PyObject *capsule)
{
    DLTensor *t;
    void *m;
    int versioned, read_only = 0;
    PyObject *held, *shape, *strides, *result;
    (void)module;

    if (PyCapsule_IsValid(capsule, DLTENSOR_V)) {
        DLManagedTensorVersioned *mv = (DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, DLTENSOR_V);
        if (mv->version.major != 1) {
            PyErr_Format(PyExc_BufferError,
                         "the producer gave a DLPack %u.%u tensor; gpuprims reads DLPack 1.x",
                         (unsigned)mv->version.major, (unsigned)mv->version.minor);
            return NULL;
        }
        versioned = 1;
        m = mv;
        t = &mv->dl_tensor;
        read_only = (mv->flags & GP_DLPACK_FLAG_READ_ONLY) != 0;
    } else if (PyCapsule_IsValid(capsule, DLTENSOR)) {
        DLManagedTensor *ml = (DLManagedTensor *)PyCapsule_GetPointer(capsule, DLTENSOR);
        versioned = 0;
        m = ml;
        t = &ml->dl_tensor;
    } else {
        PyErr_SetString(PyExc_TypeError,
                        "not a DLPack capsule, or one already consumed (a capsule from __dlpack__() "
                        "can be consumed once)");
        return NULL;
    }
    if (t->dtype.lanes != 1) {
        PyErr_Format(PyExc_BufferError, "DLPack vector dtypes (%u lanes) are not supported",
                     (unsigned)t->dtype.lanes);
        return NULL;
    }
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL)) {
        PyErr_SetString(PyExc_BufferError, "a DLPack tensor without a shape");
        return NULL;
    }
    shape = dims_tuple(t->shape, t->ndim);
    if (shape == NULL)
        return NULL;
    if (t->strides == NULL) {
        strides = Py_NewRef(Py_None);
    } else if ((strides = dims_tuple(t->strides, t->ndim)) == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    held = PyCapsule_New(m, versioned ? HELD_V : HELD, held_destructor);
    if (held == NULL) {
        Py_DECREF(shape);
        Py_DECREF(strides);
        return NULL;
    }
    /* from here the tensor is ours: the producer's capsule is marked used */
    if (PyCapsule_SetName(capsule, versioned ? USED_DLTENSOR_V : USED_DLTENSOR) < 0) {
        (void)PyCapsule_SetDestructor(held, NULL);
        Py_DECREF(held);
        Py_DECREF(shape);
        Py_DECREF(strides);
        return NULL;
    }
    result = Py_BuildValue("(NKNNiiiiO)", held,
                           (unsigned long long)((uintptr_t)t->data + t->byte_offset), shape,
                           strides, (int)t->dtype.code, (int)t->dtype.bits,
                           (int)t->device.device_type, (int)t->device.device_id,
                           read_only ? Py_True : Py_False);
    return result; /* on failure Py_BuildValue released the N references: held's deleter ran */
}

/* ------------------------------------------------------------ devices */

/* dlpack_device(backend) -> (device_type, device_id) of memory of that
 * backend: an emulator array is host memory, (kDLCPU, 0); a CUDA one is
 * on the current device (gpuprims works on the current device),
 * (kDLCUDA, id). */
PyObject *gp_dlpack_device(PyObject *module, PyObject *args)
{
    const char *backend;
    if (!PyArg_ParseTuple(args, "s:dlpack_device", &backend))
        return NULL;
    if (strcmp(backend, "emulator") == 0)
        return Py_BuildValue("(ii)", GP_DL_CPU, 0);
#ifdef GP_HAVE_CUDA
    if (strcmp(backend, "cuda") == 0) {
        int dev = 0;
        cudaError_t err = gp_runtime_cuda.get_device(&dev);
        if (err != cudaSuccess) {
            (void)gp_runtime_cuda.get_last_error();
            return gp_raise_cuda(module, err, "dlpack device");
        }
        return Py_BuildValue("(ii)", GP_DL_CUDA, dev);
    }
#else
    (void)module;
#endif
    PyErr_Format(PyExc_ValueError, "dlpack_device: no backend %s in this build", backend);
    return NULL;
}
