/* glue.h - what the C files of gpuprims._core share. */
#ifndef GPUPRIMS_GLUE_H
#define GPUPRIMS_GLUE_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000 /* the stable ABI of Python 3.11 */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../cuda/gpuprims.h"

typedef struct {
    PyObject *CudaError;
    PyObject *NoDeviceError;
    PyObject *DeviceBuffer;
    int device_ready;
} gp_state;

static inline gp_state *gp_get_state(PyObject *module)
{
    return (gp_state *)PyModule_GetState(module);
}

/* module.c */
PyObject *gp_raise_cuda(PyObject *module, cudaError_t err, const char *where);
int gp_ensure_device(PyObject *module);
cudaError_t gp_sync(cudaStream_t stream);

/* Per host thread and device: a zeroed counter word for launchers that take
 * a grid-wide ticket (gp_reduce_args.counter), a small pinned, mapped host
 * buffer that kernels write a scalar result into directly, and a small
 * device scratch that calls needing little use instead of the pool (one
 * allocation and one free fewer per call).  All three are only touched by
 * work on the thread's own stream, which every call waits for before it
 * returns.  Allocated on first use and kept for the thread's life. */
#define GP_SMALL_SCRATCH_BYTES (64 * 1024)
typedef struct {
    int device;
    unsigned *counter;
    void *result; /* 64 bytes, host memory the GPU writes */
    void *scratch; /* GP_SMALL_SCRATCH_BYTES of device memory */
} gp_thread_res;
gp_thread_res *gp_thread_resources(PyObject *module);

/* reduce.c */
PyObject *gp_variants(PyObject *module, PyObject *args);
PyObject *gp_reduce(PyObject *module, PyObject *args);
PyObject *gp_reduce_host(PyObject *module, PyObject *args);
PyObject *gp_time_reduce(PyObject *module, PyObject *args);
PyObject *gp_time_copy(PyObject *module, PyObject *args);

#endif
