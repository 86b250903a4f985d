/* occupancy.c - what the CUDA occupancy API says of a variant's main kernel
 * (gpuprims.occupancy): its registers and shared memory, and how many of its
 * blocks fit on one multiprocessor, with the device limits that decide it. */
#include "family.h"

/* occupancy(family, index, block_size) -> dict.  block_size 0: the
 * variant's own (registry) block size. */
PyObject *gp_occupancy(PyObject *module, PyObject *args)
{
    const char *family;
    int index, block, count, dev = 0;
    const gp_variant *rows, *v;
    const gp_family *f;
    const gp_runtime *rt = gp_rt(module);
    gp_kernel_occupancy k;
    gp_device_props p;
    size_t dynamic = 0;
    cudaError_t err;

    if (!PyArg_ParseTuple(args, "sii:occupancy", &family, &index, &block) ||
        (f = gp_family_named(family)) == NULL)
        return NULL;
    rows = gp_family_rows(f, rt, &count);
    if (index < 0 || index >= count) {
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
    if (gp_require_gpu(module, "gpuprims.occupancy (the CUDA occupancy API)") < 0)
        return NULL;
    if (v->dynamic_smem != NULL)
        dynamic = v->dynamic_smem(block);
    if ((err = rt->get_device(&dev)) != cudaSuccess || (err = rt->device_props(&p, dev)) != cudaSuccess ||
        (err = rt->kernel_occupancy(v->kernel(), block, dynamic, &k)) != cudaSuccess)
        return gp_raise_cuda(module, err, "occupancy: the kernel's attributes and resident blocks");
    if (block > k.max_threads_per_block) {
        PyErr_Format(PyExc_ValueError,
                     "%s variant %s's kernel takes at most %d threads per block (its launch "
                     "bounds or registers), not %d",
                     family, v->name, k.max_threads_per_block, block);
        return NULL;
    }
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:K,s:K,s:K,s:i,s:i,s:i,s:i,s:i,s:i,s:K,s:K,s:i,s:i,s:(ii)}",
        "blocks_per_sm", k.blocks_per_sm, "block_size", block, "registers_per_thread",
        k.registers_per_thread, "static_shared_bytes", k.static_shared_bytes,
        "dynamic_shared_bytes", (unsigned long long)dynamic, "local_bytes", k.local_bytes,
        "max_threads_per_block", k.max_threads_per_block, "ptx_version", k.ptx_version,
        "binary_version", k.binary_version, "sm_count", p.multiprocessors,
        "threads_per_sm", p.max_threads_per_multiprocessor,
        "max_blocks_per_sm", p.max_blocks_per_multiprocessor,
        "registers_per_sm", p.registers_per_multiprocessor,
        "shared_memory_per_sm", p.shared_memory_per_multiprocessor,
        "reserved_shared_per_block", k.reserved_shared_per_block, "warp_size", p.warp_size,
        "compute_capability", p.major, p.minor);
}
