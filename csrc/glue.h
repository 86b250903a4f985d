/* glue.h - what the C files of gpuprims._core share. */
#ifndef GPUPRIMS_GLUE_H
#define GPUPRIMS_GLUE_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000 /* the stable ABI of Python 3.11 */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "runtime.h"

typedef struct {
    PyObject *CudaError;
    PyObject *NoDeviceError;
    PyObject *DeviceBuffer;
    PyObject *PinnedBuffer;
    int device_ready;      /* the CUDA backend's device is set up */
    const gp_runtime *rt;  /* the active backend: &gp_runtime_cuda or &gp_runtime_emu */
    int auto_pending;      /* "auto" chosen and not decided yet: decided at the backend's first use */
    const char *auto_why;  /* "auto" decided for the emulator: why no GPU is usable; else NULL */
} gp_state;

static inline gp_state *gp_get_state(PyObject *module)
{
    return (gp_state *)PyModule_GetState(module);
}

/* module.c: the "auto" backend decided now (see there). */
void gp_decide_auto(gp_state *st);

/* The active backend of the module ("auto" decided at this first use). */
static inline const gp_runtime *gp_rt(PyObject *module)
{
    gp_state *st = gp_get_state(module);
    if (st->auto_pending)
        gp_decide_auto(st);
    return st->rt;
}

/* module.c */
PyObject *gp_raise_cuda(PyObject *module, cudaError_t err, const char *where);
int gp_ensure_device(PyObject *module);
/* For what measures the GPU itself (timings, occupancy): on the cuda backend
 * gp_ensure_device; on the emulator NoDeviceError where no GPU is usable,
 * else ValueError (select the cuda backend).  0, or -1 with an exception. */
int gp_require_gpu(PyObject *module, const char *what);
cudaError_t gp_sync(const gp_runtime *rt, cudaStream_t stream);

/* Per host thread and device: a zeroed counter word for launchers that take
 * a grid-wide ticket (gp_reduce_args.counter), a small pinned, mapped host
 * buffer that kernels write a scalar result into directly, and a small
 * device scratch that calls needing little use instead of the pool (one
 * allocation and one free fewer per call).  All three are only touched by
 * work on the thread's own stream, which every call waits for before it
 * returns.  Allocated on first use and kept for the thread's life.  Also
 * the look-back slots of the thread's small scans (gp_lookback_cache,
 * gpuprims.h): zeroed once, then tagged call by call instead of zeroed
 * before each scan. */
#define GP_SMALL_SCRATCH_BYTES (64 * 1024)
typedef struct {
    const gp_runtime *rt;
    int device;
    unsigned *counter;
    void *result; /* 64 bytes, host memory the GPU writes */
    void *scratch; /* GP_SMALL_SCRATCH_BYTES of device memory */
    gp_lookback_cache lookback; /* GP_LOOKBACK_CACHE_BYTES of device memory */
} gp_thread_res;
gp_thread_res *gp_thread_resources(PyObject *module);

static inline size_t gp_align256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* emulator.c */
PyObject *gp_emu_trace(PyObject *module, PyObject *args);

/* families.c, call.c: the families and their one call path */
PyObject *gp_families_py(PyObject *module, PyObject *noargs);
PyObject *gp_dtypes_py(PyObject *module, PyObject *noargs);
PyObject *gp_ops_py(PyObject *module, PyObject *noargs);
PyObject *gp_variants(PyObject *module, PyObject *args);
PyObject *gp_call_py(PyObject *module, PyObject *args);
PyObject *gp_time_py(PyObject *module, PyObject *args);
PyObject *gp_raise_not_on_backend(PyObject *module, const char *family, const gp_variant *v);

/* timing.c: a timed operation is fn(ctx, GP_PREPARE), which poisons its
 * output, then fn(ctx, GP_RUN), the work that is timed. */
enum { GP_PREPARE = 0, GP_RUN = 1 };
typedef cudaError_t (*gp_timed_fn)(void *ctx, int phase);
PyObject *gp_time_runs(PyObject *module, gp_timed_fn fn, void *ctx, int warmup, int repeat,
                       unsigned long long flush_bytes, const char *where);
PyObject *gp_time_copy(PyObject *module, PyObject *args);

/* occupancy.c */
PyObject *gp_occupancy(PyObject *module, PyObject *args);

#endif
