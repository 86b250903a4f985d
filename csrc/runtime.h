/* runtime.h - the backends of gpuprims._core.
 *
 * The glue never calls the CUDA runtime directly: it calls the active
 * backend's table.  csrc/runtime_cuda.c implements it with the CUDA runtime
 * (built only where nvcc is), emu/runtime.cpp with the emulator, which runs
 * the same kernels on the CPU.  Both speak cudaError_t with CUDA's numbers.
 * A backend also carries its own conversion kernel: the emulated kernels
 * are separate objects (names ending in _emu); the registries of both
 * builds are in the family table (csrc/families.c).
 */
#ifndef GPUPRIMS_RUNTIME_H
#define GPUPRIMS_RUNTIME_H

#include "../cuda/gpuprims.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gp_device_props {
    char name[256];
    int major, minor;
    int multiprocessors;
    unsigned long long total_memory;
    int l2_cache_bytes;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_multiprocessor;
    int max_blocks_per_multiprocessor;
    unsigned long long registers_per_multiprocessor;
    unsigned long long shared_memory_per_multiprocessor;
    int memory_bus_width_bits;
    int driver_version, runtime_version;
} gp_device_props;

/* What the CUDA occupancy API says of one kernel at one block size
 * (gpuprims.occupancy). */
typedef struct gp_kernel_occupancy {
    int blocks_per_sm;            /* resident blocks per multiprocessor */
    int registers_per_thread;
    unsigned long long static_shared_bytes, local_bytes;
    int max_threads_per_block;    /* the kernel's: launch bounds, registers */
    int ptx_version, binary_version;
    int reserved_shared_per_block; /* the device's, per block */
} gp_kernel_occupancy;

typedef struct gp_pool_stats {
    unsigned long long used, used_high, reserved, reserved_high, allocations;
} gp_pool_stats;

typedef struct gp_runtime {
    const char *name; /* "cuda" or "emulator" */
    /* devices */
    cudaError_t (*device_count)(int *count);
    cudaError_t (*setup)(void); /* once, before the first allocation */
    cudaError_t (*get_device)(int *dev);
    cudaError_t (*device_props)(gp_device_props *p, int dev);
    /* memory: stream-ordered pool, plain device memory, host memory the device writes */
    cudaError_t (*malloc_async)(void **p, size_t bytes, cudaStream_t s);
    cudaError_t (*free_async)(void *p, cudaStream_t s);
    cudaError_t (*malloc_device)(void **p, size_t bytes);
    cudaError_t (*host_alloc_mapped)(void **p, size_t bytes);
    cudaError_t (*memcpy_async)(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                                cudaStream_t s);
    cudaError_t (*memset_async)(void *p, int value, size_t bytes, cudaStream_t s);
    /* streams and events */
    cudaError_t (*stream_sync)(cudaStream_t s);
    cudaError_t (*stream_wait_stream)(cudaStream_t waiter, cudaStream_t waited);
    cudaError_t (*event_create)(cudaEvent_t *e);
    cudaError_t (*event_record)(cudaEvent_t e, cudaStream_t s);
    cudaError_t (*event_elapsed_ms)(float *ms, cudaEvent_t start, cudaEvent_t end);
    cudaError_t (*event_destroy)(cudaEvent_t e);
    /* errors */
    cudaError_t (*get_last_error)(void);
    const char *(*error_name)(cudaError_t err);
    const char *(*error_string)(cudaError_t err);
    const char *(*detail)(void); /* what went wrong in the last failed call, or NULL */
    /* occupancy of a kernel (a registry row's kernel()) for `block` threads
     * and `dynamic_smem` bytes; the emulator answers cudaErrorNotSupported */
    cudaError_t (*kernel_occupancy)(const void *kernel, int block, size_t dynamic_smem,
                                    gp_kernel_occupancy *out);
    /* the backend's kernels */
    cudaError_t (*cast)(const void *in, gp_dtype from, void *out, gp_dtype to, int64_t n,
                        cudaStream_t stream);
    int (*combo_supported)(gp_op op, gp_dtype in_t, gp_dtype acc_t);
    /* whether a row of this backend's registry reads the combination as it
     * is (gp_variant_reads); where not, the caller converts the input first */
    int (*variant_reads)(const gp_variant *v, gp_op op, gp_dtype in_t, gp_dtype acc_t);
    /* the host pipeline (csrc/pipeline.c): page-locked host memory the copy
     * engines read and write at the bus's speed, streams of its own, events
     * that order one stream behind another; the emulator's are plain host
     * memory and no-op streams (everything it does is synchronous) */
    cudaError_t (*host_alloc)(void **p, size_t bytes);
    cudaError_t (*host_free)(void *p);
    cudaError_t (*stream_create)(cudaStream_t *s); /* non-blocking */
    cudaError_t (*stream_destroy)(cudaStream_t s);
    cudaError_t (*stream_wait_event)(cudaStream_t s, cudaEvent_t e);
    cudaError_t (*event_sync)(cudaEvent_t e);
    /* the stream-ordered pool's cached memory given back to the device */
    cudaError_t (*pool_trim)(void);
    /* the pool's statistics: bytes in use and reserved (now and their high
     * marks since the last reset) and malloc_async calls so far; reset:
     * the high marks start again from the current values */
    cudaError_t (*pool_stats)(gp_pool_stats *out, int reset);
    /* whether the host range [p, p + bytes) is page-locked memory the copy
     * engines read and write in place (cudaHostAlloc'd or registered: the
     * caller's own pinned arrays, gpuprims.empty_pinned): 1 yes, 0 no; the
     * emulator answers yes for its own host_alloc blocks.  mapped (unless
     * NULL) receives the address at which kernels reach p where the whole
     * range is mapped into the device's address space as one piece, else
     * NULL */
    int (*host_pinned)(const void *p, size_t bytes, const void **mapped);
    /* a pitched copy: `height` rows of `width` bytes, `spitch` apart in src
     * and `dpitch` apart in dst */
    cudaError_t (*memcpy2d_async)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                  size_t height, enum cudaMemcpyKind kind, cudaStream_t s);
    /* a pitched copy made by `blocks` blocks (0: the tuned number) of a
     * kernel on stream s (gp_copy2d), for a destination kernels write:
     * mapped page-locked host memory */
    cudaError_t (*copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                          unsigned blocks, cudaStream_t s);
} gp_runtime;

/* The emulator is always built; the CUDA backend where nvcc was found. */
extern const gp_runtime gp_runtime_emu;
#ifdef GP_HAVE_CUDA
extern const gp_runtime gp_runtime_cuda;
#endif

/* The emulator's report to the glue at the start of every launch
 * (blocks_done 0) and then about every 50 ms between blocks. */
typedef struct gp_emu_progress {
    const char *kernel;
    unsigned long long blocks, blocks_done;
    unsigned threads_per_block;
    double elapsed_s; /* since the launch began */
} gp_emu_progress;
/* Defined by the glue (csrc/emulator.c).  Nonzero stops the launch before
 * its next block: it fails with cudaErrorLaunchFailure, and the exception
 * the glue has set (KeyboardInterrupt) is what the caller sees. */
int gp_emu_poll(const gp_emu_progress *p);

/* Explain mode (emulator only, emu/runtime.cpp): record shared memory and
 * the kernel's writable pointer arguments at every block barrier. */
typedef struct gp_trace_region {
    const char *name;     /* "shared" or "arg<i>" */
    int itemsize;         /* element size, 1 for shared memory */
    size_t bytes;
    const unsigned char *data; /* contents at the step */
    const int *writer;    /* per byte: the thread (linear id) that changed it since the last step, or -1 */
} gp_trace_region;
typedef struct gp_trace_step {
    const char *kernel;
    int launch;           /* which launch of the traced call, from 0 */
    unsigned block[3];
    unsigned block_dim[3];
    int barrier;          /* index of the barrier in the block; -1: the block's end */
    int nregions;
    const gp_trace_region *regions;
} gp_trace_step;
void gp_emu_trace_start(size_t max_bytes);
int gp_emu_trace_stop(void); /* stops recording; returns the number of steps kept */
const gp_trace_step *gp_emu_trace_step(int i);
void gp_emu_trace_clear(void);
const char *gp_emu_trace_error(void); /* why recording stopped early, or NULL */

#ifdef __cplusplus
}
#endif
#endif
