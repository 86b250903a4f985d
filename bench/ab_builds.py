"""Two builds of gpuprims in one process, interleaved, so that both see the
same GPU, clocks and noise: the host overhead per call (blocks of calls
alternating between the builds) and the kernel time of the scan on the same
device buffers (each build's core timing them in turn).

The other build is imported as `oldgp`: build it for the GPU into a folder
of its own and rename its package, e.g. for a base commit BASE:

    git archive BASE | tar -x -C /tmp/base
    (cd /tmp/base && GPUPRIMS_CUDA_ARCH=90 pip install --no-build-isolation --no-deps --target /tmp/old .)
    mkdir -p /tmp/oldpkg && cp -r /tmp/old/gpuprims /tmp/oldpkg/oldgp
    python bench/ab_builds.py /tmp/oldpkg

Its core must have the call(...) / time(...) entry points, or the
per-family ones of the releases before them (reduce, time_scan).
"""
import statistics
import sys
import time

import numpy as np

import gpuprims as new


def block(fn, calls=200):
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def ab(label, fa, fb, rounds=20):
    for _ in range(50):
        fa()
        fb()
    a, b = [], []
    for r in range(rounds):
        for fn, acc in ((fa, a), (fb, b)) if r % 2 == 0 else ((fb, b), (fa, a)):
            acc += block(fn)
    ma, mb = statistics.median(a) * 1e6, statistics.median(b) * 1e6
    print(f"| {label} | {ma:.2f} | {mb:.2f} | {mb - ma:+.2f} |", flush=True)


def core_reduce(lib, index, d, n):
    if hasattr(lib._core, "call"):
        return lambda: lib._core.call("reduce", index, d.ptr, None, (n, 2, 2, 0))
    return lambda: lib._core.reduce(index, d.ptr, n, 2, 2, 0)


def time_scan(lib, index, d, out, n, flush):
    if hasattr(lib._core, "time"):
        return lib._core.time("scan", index, d.ptr, out.ptr, (n, 2, 2, 0, True), 3, 100, flush)[0]
    return lib._core.time_scan(index, d.ptr, out.ptr, n, 2, 2, 0, True, 3, 100, flush)


def main(path):
    sys.path.insert(0, path)
    import oldgp as old

    rng = np.random.default_rng(5)
    x = rng.random(1 << 10, dtype=np.float32)
    a2 = rng.random((1024, 1024), dtype=np.float32)
    do, dn = old.to_device(x), new.to_device(x)
    to, tn = old.to_device(a2), new.to_device(a2)
    print(f"\n### host overhead, interleaved ({new.device_info()['name']}), medians of 4000 calls, us\n")
    print("| call | oldgp | this tree | difference |\n|---|---:|---:|---:|")
    ab("sum(DeviceArray), n = 2^10", lambda: old.sum(do), lambda: new.sum(dn))
    ab("cumsum(DeviceArray), n = 2^10", lambda: old.cumsum(do), lambda: new.cumsum(dn))
    ab("transpose(DeviceArray), 1024 x 1024", lambda: old.transpose(to), lambda: new.transpose(tn))
    ab("sum(NumPy), n = 2^10", lambda: old.sum(x), lambda: new.sum(x))
    ab("cumsum(NumPy), n = 2^10", lambda: old.cumsum(x), lambda: new.cumsum(x))
    index = lambda lib, fam, name: next(v for v in lib.variants(fam) if v.name == name).index  # noqa: E731
    ab("the core's call alone: reduce, n = 2^10", core_reduce(old, index(old, "reduce", "single_pass"), do, x.size),
       core_reduce(new, index(new, "reduce", "single_pass"), dn, x.size))

    l2 = new.device_info()["l2_cache_bytes"]
    print("\n### scan kernels on the same device buffers, timed by each core in turn, median ms\n")
    print("| case | oldgp's core | this tree's core | this / old |\n|---|---:|---:|---:|")
    for n in (1 << 20, 1 << 24):
        d = new.to_device(rng.random(n, dtype=np.float32) * 2 - 1)
        out = new.DeviceArray((n,), np.float32)
        for name in ("decoupled_lookback", "cub"):
            for flush in (4 * l2, 0):
                a = [statistics.median(time_scan(old, index(old, "scan", name), d, out, n, flush)) for _ in range(6)]
                b = [statistics.median(time_scan(new, index(new, "scan", name), d, out, n, flush)) for _ in range(6)]
                ma, mb = statistics.median(a), statistics.median(b)
                print(f"| {name}, n = 2^{n.bit_length() - 1}, L2 {'flushed' if flush else 'warm'} | "
                      f"{ma:.5f} | {mb:.5f} | {mb / ma:.3f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/oldpkg")
