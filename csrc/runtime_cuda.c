/* runtime_cuda.c - the CUDA backend's runtime table: the CUDA runtime
 * itself, the stream-ordered pool, events, and the kernels nvcc built.
 * Compiled only where nvcc was found (GP_HAVE_CUDA). */
#include "glue.h"

#include <stdio.h>
#include <string.h>

#ifdef GP_HAVE_CUDA
#include <cuda_runtime_api.h>

static cudaError_t cu_device_count(int *count) { return cudaGetDeviceCount(count); }

/* The pool keeps freed memory (release threshold = max) so that repeated
 * calls reuse it instead of mapping and unmapping pages each time. */
static cudaError_t cu_setup(void)
{
    int dev = 0;
    cudaMemPool_t pool;
    uint64_t threshold = UINT64_MAX;
    cudaError_t err;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess)
        return err;
    return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
}

static cudaError_t cu_get_device(int *dev) { return cudaGetDevice(dev); }

static cudaError_t cu_device_props(gp_device_props *out, int dev)
{
    struct cudaDeviceProp p;
    cudaError_t err;
    memset(out, 0, sizeof(*out));
    if ((err = cudaGetDeviceProperties(&p, dev)) != cudaSuccess ||
        (err = cudaDriverGetVersion(&out->driver_version)) != cudaSuccess ||
        (err = cudaRuntimeGetVersion(&out->runtime_version)) != cudaSuccess)
        return err;
    snprintf(out->name, sizeof(out->name), "%s", p.name);
    out->major = p.major;
    out->minor = p.minor;
    out->multiprocessors = p.multiProcessorCount;
    out->total_memory = (unsigned long long)p.totalGlobalMem;
    out->l2_cache_bytes = p.l2CacheSize;
    out->warp_size = p.warpSize;
    out->max_threads_per_block = p.maxThreadsPerBlock;
    out->max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    out->max_blocks_per_multiprocessor = p.maxBlocksPerMultiProcessor;
    out->registers_per_multiprocessor = (unsigned long long)p.regsPerMultiprocessor;
    out->shared_memory_per_multiprocessor = (unsigned long long)p.sharedMemPerMultiprocessor;
    out->memory_bus_width_bits = p.memoryBusWidth;
    return cudaSuccess;
}

static cudaError_t cu_kernel_occupancy(const void *kernel, int block, size_t dynamic_smem,
                                       gp_kernel_occupancy *out)
{
    struct cudaFuncAttributes fa;
    int dev = 0, reserved = 0;
    cudaError_t err;
    memset(out, 0, sizeof(*out));
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev)) !=
            cudaSuccess ||
        (err = cudaFuncGetAttributes(&fa, kernel)) != cudaSuccess)
        return err;
    out->registers_per_thread = fa.numRegs;
    out->static_shared_bytes = (unsigned long long)fa.sharedSizeBytes;
    out->local_bytes = (unsigned long long)fa.localSizeBytes;
    out->max_threads_per_block = fa.maxThreadsPerBlock;
    out->ptx_version = fa.ptxVersion;
    out->binary_version = fa.binaryVersion;
    out->reserved_shared_per_block = reserved;
    if (block > fa.maxThreadsPerBlock)
        return cudaSuccess; /* blocks_per_sm 0: the caller says why */
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out->blocks_per_sm, kernel, block,
                                                         dynamic_smem);
}

static unsigned long long cu_pool_allocations; /* malloc_async calls (pool_stats) */
static cudaError_t cu_malloc_async(void **p, size_t bytes, cudaStream_t s)
{
    cu_pool_allocations++;
    return cudaMallocAsync(p, bytes, s);
}
static cudaError_t cu_free_async(void *p, cudaStream_t s) { return cudaFreeAsync(p, s); }
static cudaError_t cu_malloc_device(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
static cudaError_t cu_host_alloc_mapped(void **p, size_t bytes)
{
    return cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
}
static cudaError_t cu_memcpy_async(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                                   cudaStream_t s)
{
    return cudaMemcpyAsync(dst, src, bytes, kind, s);
}
static cudaError_t cu_memset_async(void *p, int value, size_t bytes, cudaStream_t s)
{
    return cudaMemsetAsync(p, value, bytes, s);
}
static cudaError_t cu_stream_sync(cudaStream_t s) { return cudaStreamSynchronize(s); }

/* Work issued on `waiter` afterwards waits for what `waited` has queued. */
static cudaError_t cu_stream_wait_stream(cudaStream_t waiter, cudaStream_t waited)
{
    cudaEvent_t ev;
    cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) {
        err = cudaEventRecord(ev, waited);
        if (err == cudaSuccess)
            err = cudaStreamWaitEvent(waiter, ev, 0);
        (void)cudaEventDestroy(ev);
    }
    return err;
}
static cudaError_t cu_event_create(cudaEvent_t *e) { return cudaEventCreate(e); }
static cudaError_t cu_event_record(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
static cudaError_t cu_event_elapsed_ms(float *ms, cudaEvent_t a, cudaEvent_t b) { return cudaEventElapsedTime(ms, a, b); }
static cudaError_t cu_event_destroy(cudaEvent_t e) { return cudaEventDestroy(e); }
static cudaError_t cu_get_last_error(void) { return cudaGetLastError(); }
static const char *cu_error_name(cudaError_t err) { return cudaGetErrorName(err); }
/* The runtime says "CUDA driver version is insufficient for CUDA runtime
 * version" both where the driver is too old and where there is none at all
 * (a machine without an NVIDIA GPU): the second, which the driver version
 * 0 tells apart, is said as it is. */
static const char *cu_error_string(cudaError_t err)
{
    int driver = -1;
    if (err == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
        return "no NVIDIA driver (libcuda.so.1 is not installed or not found), so no GPU can be used: "
               "install the NVIDIA driver on a machine with an NVIDIA GPU";
    return cudaGetErrorString(err);
}
static cudaError_t cu_host_alloc(void **p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocPortable); }
static cudaError_t cu_host_free(void *p) { return cudaFreeHost(p); }
static cudaError_t cu_stream_create(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
static cudaError_t cu_stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
static cudaError_t cu_stream_wait_event(cudaStream_t s, cudaEvent_t e) { return cudaStreamWaitEvent(s, e, 0); }
static cudaError_t cu_event_sync(cudaEvent_t e) { return cudaEventSynchronize(e); }
static cudaError_t cu_pool_trim(void)
{
    int dev = 0;
    cudaMemPool_t pool;
    cudaError_t err;
    if ((err = cudaDeviceSynchronize()) != cudaSuccess || (err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess)
        return err;
    return cudaMemPoolTrimTo(pool, 0);
}
/* The default pool's counters (cudaMemPoolGetAttribute); reset sets the
 * high marks to the current values (cudaMemPoolSetAttribute with 0). */
static cudaError_t cu_pool_stats(gp_pool_stats *out, int reset)
{
    int dev = 0;
    cudaMemPool_t pool;
    cudaError_t err;
    unsigned long long v[4] = {0, 0, 0, 0}, zero = 0;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess || (err = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess)
        return err;
    if (reset && ((err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero)) != cudaSuccess ||
                  (err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero)) != cudaSuccess))
        return err;
    if ((err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v[0])) != cudaSuccess ||
        (err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &v[1])) != cudaSuccess ||
        (err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v[2])) != cudaSuccess ||
        (err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &v[3])) != cudaSuccess)
        return err;
    out->used = v[0], out->used_high = v[1], out->reserved = v[2], out->reserved_high = v[3];
    out->allocations = cu_pool_allocations;
    return cudaSuccess;
}
/* Both ends of the range in page-locked host memory (a NumPy array's
 * buffer is one allocation, so its ends tell; a range over two separate
 * registrations would fail its copy with cudaErrorInvalidValue, which the
 * pipeline takes as "not pinned").  Mapped as one piece where the last
 * byte's device address is where the first's offset says. */
static int cu_host_pinned(const void *p, size_t bytes, const void **mapped)
{
    struct cudaPointerAttributes a[2];
    int k;
    if (mapped != NULL)
        *mapped = NULL;
    if (p == NULL || bytes == 0)
        return 0;
    for (k = 0; k < 2; k++) {
        if (cudaPointerGetAttributes(&a[k], (const char *)p + (k ? bytes - 1 : 0)) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        if (a[k].type != cudaMemoryTypeHost)
            return 0;
    }
    if (mapped != NULL && a[0].devicePointer != NULL &&
        (const char *)a[1].devicePointer == (const char *)a[0].devicePointer + (bytes - 1))
        *mapped = a[0].devicePointer;
    return 1;
}
static cudaError_t cu_memcpy2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                     size_t height, enum cudaMemcpyKind kind, cudaStream_t s)
{
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, s);
}
static const char *cu_detail(void) { return NULL; } /* a library's own words: gp_variant.error_detail */

const gp_runtime gp_runtime_cuda = {
    "cuda",
    cu_device_count, cu_setup, cu_get_device, cu_device_props,
    cu_malloc_async, cu_free_async, cu_malloc_device, cu_host_alloc_mapped,
    cu_memcpy_async, cu_memset_async,
    cu_stream_sync, cu_stream_wait_stream,
    cu_event_create, cu_event_record, cu_event_elapsed_ms, cu_event_destroy,
    cu_get_last_error, cu_error_name, cu_error_string, cu_detail, cu_kernel_occupancy,
    gp_cast, gp_combo_supported, gp_variant_reads,
    cu_host_alloc, cu_host_free, cu_stream_create, cu_stream_destroy, cu_stream_wait_event,
    cu_event_sync, cu_pool_trim, cu_pool_stats, cu_host_pinned, cu_memcpy2d_async, gp_copy2d,
};
#else
typedef int gp_no_cuda_backend; /* ISO C wants something in a translation unit */
#endif
