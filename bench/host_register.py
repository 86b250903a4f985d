"""What registering the caller's buffer (cudaHostRegister) costs, beside the staged path.

For each size: cudaHostRegister and cudaHostUnregister of a NumPy array (wall clock), a host->device
cudaMemcpy from it once registered, the three together (what a call that registered the caller's
buffer would pay), gpuprims.to_device (the pinned ring) and a pageable cudaMemcpy; medians of 5.
Needs CuPy.  python bench/host_register.py
"""
import statistics
import time

import cupy
import numpy as np
from cupy.cuda import runtime as rt

import gpuprims


def med(f, k=5):
    ts = []
    for _ in range(k):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)


print("| MiB | register ms | unregister ms | H2D from registered GB/s | register+copy+unregister GB/s | gpuprims.to_device GB/s | pageable cudaMemcpy GB/s |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for mib in (16, 64, 256, 1024):
    a = np.random.default_rng(0).random(mib * 2**20 // 8)
    d = cupy.empty(a.nbytes, dtype=np.uint8)
    reg = med(lambda: (rt.hostRegister(a.ctypes.data, a.nbytes, 0), rt.hostUnregister(a.ctypes.data)))
    rt.hostRegister(a.ctypes.data, a.nbytes, 0)
    cp_ms = med(lambda: (rt.memcpy(d.data.ptr, a.ctypes.data, a.nbytes, 1), rt.deviceSynchronize()))
    rt.hostUnregister(a.ctypes.data)
    t = time.perf_counter(); rt.hostRegister(a.ctypes.data, a.nbytes, 0); t1 = time.perf_counter()
    rt.hostUnregister(a.ctypes.data); t2 = time.perf_counter()
    whole = med(lambda: (rt.hostRegister(a.ctypes.data, a.nbytes, 0), rt.memcpy(d.data.ptr, a.ctypes.data, a.nbytes, 1),
                         rt.deviceSynchronize(), rt.hostUnregister(a.ctypes.data)))
    gp = med(lambda: gpuprims.to_device(a))
    pg = med(lambda: (rt.memcpy(d.data.ptr, a.ctypes.data, a.nbytes, 1), rt.deviceSynchronize()))
    print(f"| {mib} | {(t1-t)*1e3:.2f} | {(t2-t1)*1e3:.2f} | {a.nbytes/cp_ms/1e9:.1f} | {a.nbytes/whole/1e9:.1f} | {a.nbytes/gp/1e9:.1f} | {a.nbytes/pg/1e9:.1f} |", flush=True)
