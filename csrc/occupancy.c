/* occupancy.c - what the CUDA occupancy API says of a variant's main kernel
 * (gpuprims.occupancy): its registers and shared memory, and how many of its
 * blocks fit on one multiprocessor, with the device limits that decide it. */
#include "glue.h"

/* occupancy(family, index, block_size) -> dict.  block_size 0: the
 * variant's own (registry) block size. */
PyObject *gp_occupancy(PyObject *module, PyObject *args)
{
    const char *family;
    int index, block, count, dev = 0, blocks = 0;
    const gp_variant *rows, *v;
    const void *kernel;
    struct cudaFuncAttributes fa;
    struct cudaDeviceProp p;
    size_t dynamic = 0;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "sii:occupancy", &family, &index, &block))
        return NULL;
    rows = gp_family_rows(family, &count);
    if (rows == NULL || index < 0 || index >= count) {
        PyErr_Format(PyExc_ValueError, "%s variant index %d out of range", family, index);
        return NULL;
    }
    v = &rows[index];
    if (v->kernel == NULL) {
        PyErr_Format(PyExc_ValueError,
                     "occupancy is not available for %s variant %s: it is not a kernel of "
                     "gpuprims (host code or a library call)",
                     family, v->name);
        return NULL;
    }
    if (block == 0)
        block = v->block_size;
    if (block < 1 || block > 1024) {
        PyErr_Format(PyExc_ValueError, "block_size must be 1..1024 threads, got %d", block);
        return NULL;
    }
    if (gp_ensure_device(module) < 0)
        return NULL;
    kernel = v->kernel();
    if (v->dynamic_smem != NULL)
        dynamic = v->dynamic_smem(block);
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaGetDeviceProperties(&p, dev)) != cudaSuccess ||
        (err = cudaFuncGetAttributes(&fa, kernel)) != cudaSuccess)
        return gp_raise_cuda(module, err, "occupancy: reading the kernel's attributes");
    if (block > fa.maxThreadsPerBlock) {
        PyErr_Format(PyExc_ValueError,
                     "%s variant %s's kernel takes at most %d threads per block (its launch "
                     "bounds or registers), not %d",
                     family, v->name, fa.maxThreadsPerBlock, block);
        return NULL;
    }
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, dynamic);
    if (err != cudaSuccess)
        return gp_raise_cuda(module, err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:K,s:K,s:K,s:i,s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:i,s:i,s:(ii)}",
        "blocks_per_sm", blocks, "block_size", block, "registers_per_thread", fa.numRegs,
        "static_shared_bytes", (unsigned long long)fa.sharedSizeBytes,
        "dynamic_shared_bytes", (unsigned long long)dynamic,
        "local_bytes", (unsigned long long)fa.localSizeBytes,
        "max_threads_per_block", fa.maxThreadsPerBlock, "ptx_version", fa.ptxVersion,
        "binary_version", fa.binaryVersion, "sm_count", p.multiProcessorCount,
        "threads_per_sm", p.maxThreadsPerMultiProcessor,
        "max_blocks_per_sm", p.maxBlocksPerMultiProcessor,
        "registers_per_sm", (unsigned long long)p.regsPerMultiprocessor,
        "shared_memory_per_sm", (unsigned long long)p.sharedMemPerMultiprocessor,
        "reserved_shared_per_block", (int)p.reservedSharedMemPerBlock, "warp_size", p.warpSize,
        "compute_capability", p.major, p.minor);
}
