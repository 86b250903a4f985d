/* pipeline.h - a call as call.c validated it, and the host pipeline that
 * runs a device variant on host operands in chunks (pipeline.c). */
#ifndef GPUPRIMS_PIPELINE_H
#define GPUPRIMS_PIPELINE_H

#include "family.h"

/* An operand as the caller passed it: a device address or a host buffer
 * (an input's buffer may be strided where the pipeline takes it). */
typedef struct {
    int host;
    Py_buffer view; /* host == 1 */
    uintptr_t addr; /* host == 0 */
} gp_operand;

/* One call being validated, prepared, run. */
typedef struct gp_job {
    PyObject *module;
    const gp_runtime *rt;
    const gp_family *fam;
    const gp_variant *v;
    gp_call c;
    gp_operand in, out;
    int has_out;    /* out was given (not None) */
    int cast_from;  /* the input's gp_dtype when it is converted to c.out_t first, else -1 */
    void *block;    /* the pool allocation, or NULL */
    gp_thread_res *res;
    int progress;   /* show a progress line on stderr for a long pipelined call */
    /* the pipeline's: the input / output buffer is page-locked host memory,
     * copied from / into in place (no staging through the ring) */
    int in_pinned, out_pinned;
    /* a transpose's page-locked output as the device addresses it (mapped:
     * runtime host_pinned's mapped address), where pitched tiles are stored by a
     * kernel (runtime copy2d), or NULL */
    char *out_mapped;
} gp_job;

/* call.c: the CudaError of a failed step (NULL returned). */
PyObject *gp_job_raise_failed(gp_job *j, cudaError_t err, const char *step);
/* call.c: the Py_buffers given back. */
void gp_job_release(gp_job *j);

/* Whether a validated device call on host operands goes through the
 * pipeline: 1 yes, 0 no (the single-shot path), -1 with an exception (the
 * call cannot run under the device-memory limit). */
int gp_pipeline_wanted(gp_job *j);
/* Whether the pipeline takes a strided (non C-contiguous) host input of
 * this family and layout. */
int gp_pipeline_takes_strided(const gp_job *j);
/* Run the call through the pipeline; releases the job's buffers.  The
 * value (a scalar family) or None, or NULL with an exception. */
PyObject *gp_pipeline_run(gp_job *j);
/* host <-> device copies of `bytes` through the pinned ring (module.c's
 * htod/dtoh, to_device and DeviceArray.get): 1 done, 0 not taken (small: the
 * caller copies directly), -1 with an exception. */
int gp_pipeline_copy(PyObject *module, const gp_runtime *rt, void *dst, const void *src,
                     size_t bytes, int to_device);

PyObject *gp_pipeline_config_py(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *gp_pipeline_stats_py(PyObject *module, PyObject *noargs);
PyObject *gp_pipeline_trace_py(PyObject *module, PyObject *noargs);
PyObject *gp_free_memory_py(PyObject *module, PyObject *noargs);
PyObject *gp_time_host_copy_py(PyObject *module, PyObject *args);
/* The pinned ring and the pipeline's streams given back (module teardown). */
void gp_pipeline_teardown(void);

#endif
