"""Time a family's whole journey on the GPU and lay it out as a table.

Method (../shared/DESIGN.md, "Timing and benchmarks"): CUDA events around
the variant's kernel(s) only; warm-up runs first; L2 overwritten and the
output poisoned before every timed run; median (and min/max) of the
repetitions.  Bandwidth counts the ideal bytes (the input read once); the
roof is a device-to-device copy of the same number of bytes measured in the
same run.  Every row's result is checked against NumPy.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np

from . import _core
from ._arrays import DeviceArray, to_device
from ._reduce import CODES, OPS, result_dtype
from ._registry import variants


def _summary(ms):
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}


def copy_roof(nbytes, *, warmup=5, repeat=50, flush_bytes=0):
    """Median time and GB/s (bytes read + written) of a device-to-device copy."""
    ms = _core.time_copy(int(nbytes), warmup, repeat, int(flush_bytes))
    row = _summary(ms)
    row["gbps"] = 2 * nbytes / (row["median_ms"] * 1e-3) / 1e9
    return row


def random_input(n, dtype, seed=0):
    """Random test data, never zeros: small signed integers, floats in [-1, 1)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, size=n, dtype=dtype)
    return (rng.random(n, dtype=np.float32 if dtype.itemsize == 4 else np.float64) * 2 - 1).astype(dtype)


def reduce_journey(n, *, dtype="float32", op="sum", repeat=30, warmup=3, x=None, names=None):
    """Time every device variant of the reduction family (or `names`) on one
    random input of n elements, plus the copy roof and NumPy on the CPU.

    Returns (rows, roof): one dict per variant in journey order with
    median/min/max ms, GB/s, % of roof, speed vs CUB and whether the result
    matched NumPy.
    """
    dtype = np.dtype(dtype)
    x = random_input(n, dtype) if x is None else x
    acc = result_dtype(op, dtype)
    d = to_device(x)
    nbytes = x.nbytes
    l2 = _core.device_info()["l2_cache_bytes"]
    flush = 4 * l2  # overwritten before every timed run: nothing of the input stays in L2
    roof = copy_roof(nbytes // 2, warmup=warmup, repeat=repeat, flush_bytes=flush)  # same bytes moved
    numpy_fn = {"sum": np.sum, "min": np.min, "max": np.max}[op]
    want = numpy_fn(x)
    if op == "sum" and acc.kind == "f":
        tol = 4 * (math.ceil(math.log2(max(n, 2))) + 1) * np.finfo(acc).eps * float(np.abs(x).sum(dtype=np.float64))
    else:
        tol = 0.0

    rows = []
    for v in variants("reduce"):
        if v.where != "device" or (names is not None and v.name not in names):
            continue
        ms, value = _core.time_reduce(v.index, d.ptr, n, CODES[dtype], CODES[acc], OPS[op],
                                    warmup, repeat, flush)
        got = acc.type(value)
        row = {"variant": v.name, "title": v.title, **_summary(ms)}
        row["gbps"] = nbytes / (row["median_ms"] * 1e-3) / 1e9
        row["roof_pct"] = 100 * row["gbps"] / roof["gbps"]
        row["ok"] = bool(abs(float(got) - float(want)) <= tol)
        rows.append(row)

    t = []
    for _ in range(max(3, min(repeat, 10))):
        t0 = time.perf_counter()
        numpy_fn(x)
        t.append((time.perf_counter() - t0) * 1e3)
    cpu = {"variant": "numpy (CPU)", "title": f"numpy.{op} on the host", **_summary(t)}
    cpu["gbps"] = nbytes / (cpu["median_ms"] * 1e-3) / 1e9
    cpu["roof_pct"] = 100 * cpu["gbps"] / roof["gbps"]
    cpu["ok"] = True
    rows.append(cpu)

    _versus(rows, "cub")
    return rows, roof


def _versus(rows, baseline):
    """x_vs_baseline = the baseline's median time / the row's (above 1: faster)."""
    base = next((r for r in rows if r["variant"] == baseline and "median_ms" in r), None)
    for r in rows:
        r["x_vs_baseline"] = (base["median_ms"] / r["median_ms"]
                              if base and "median_ms" in r else float("nan"))


def transpose_journey(rows_, cols, *, dtype="float32", repeat=30, warmup=3, names=None):
    """Time every device transpose variant on one random rows_ x cols matrix,
    plus the copy roof and NumPy on the CPU.  Variants over their declared
    limit get a row that says so instead of a time."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((rows_, cols)) * 1000).astype(dtype)
    want = np.ascontiguousarray(x.T)
    d = to_device(x)
    out = DeviceArray((cols, rows_), dtype)
    nbytes = 2 * x.nbytes  # read once, write once
    flush = 4 * _core.device_info()["l2_cache_bytes"]
    roof = copy_roof(x.nbytes, warmup=warmup, repeat=repeat, flush_bytes=flush)
    rows = []
    for v in variants("transpose"):
        if v.where != "device" or (names is not None and v.name not in names):
            continue
        if (v.max_n is not None and x.size > v.max_n) or (v.dtypes and dtype.name not in v.dtypes):
            rows.append({"variant": v.name, "title": v.title, "skipped": f"over its limit (max_n = {v.max_n})"
                         if v.max_n is not None and x.size > v.max_n else f"takes {', '.join(v.dtypes)} only"})
            continue
        ms = _core.time_transpose(v.index, d.ptr, out.ptr, rows_, cols, dtype.itemsize,
                                  warmup, repeat, flush)
        row = {"variant": v.name, "title": v.title, **_summary(ms)}
        row["gbps"] = nbytes / (row["median_ms"] * 1e-3) / 1e9
        row["roof_pct"] = 100 * row["gbps"] / roof["gbps"]
        got = out.get()
        row["ok"] = bool(np.array_equal(got.reshape(x.shape), x) if v.name == "copy"
                         else np.array_equal(got, want))
        rows.append(row)
    t = []
    for _ in range(3):
        t0 = time.perf_counter()
        np.ascontiguousarray(x.T)
        t.append((time.perf_counter() - t0) * 1e3)
    cpu = {"variant": "numpy (CPU)", "title": "numpy.ascontiguousarray(x.T)", **_summary(t), "ok": True}
    cpu["gbps"] = nbytes / (cpu["median_ms"] * 1e-3) / 1e9
    cpu["roof_pct"] = 100 * cpu["gbps"] / roof["gbps"]
    rows.append(cpu)
    _versus(rows, "cublas")
    return rows, roof


def scan_journey(n, *, dtype="float32", op="sum", inclusive=True, repeat=30, warmup=3, names=None):
    """Time every device scan variant on one random input of n elements,
    plus the copy roof and NumPy on the CPU.  Variants over their declared
    limit get a row that says so instead of a time."""
    dtype = np.dtype(dtype)
    x = random_input(n, dtype)
    acc = result_dtype(op, dtype)
    d = to_device(x)
    out = DeviceArray((n,), acc)
    nbytes = x.nbytes + n * acc.itemsize  # read once, write once
    flush = 4 * _core.device_info()["l2_cache_bytes"]
    roof = copy_roof(nbytes // 2, warmup=warmup, repeat=repeat, flush_bytes=flush)
    accumulate = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    want = accumulate.accumulate(x.astype(acc))
    if not inclusive:
        raise ValueError("the journey table times inclusive scans")
    tol = (np.cumsum(np.abs(x.astype(np.float64))) * (2 * math.log2(max(n, 2)) + 32 + n / 8192)
           * float(np.finfo(acc).eps)) if acc.kind == "f" and op == "sum" else 0
    rows = []
    for v in variants("scan"):
        if v.where != "device" or (names is not None and v.name not in names):
            continue
        if v.max_n is not None and n > v.max_n:
            rows.append({"variant": v.name, "title": v.title,
                         "skipped": f"over its limit (max_n = {v.max_n})"})
            continue
        ms = _core.time_scan(v.index, d.ptr, out.ptr, n, CODES[dtype], CODES[acc], OPS[op],
                             inclusive, warmup, repeat, flush)
        row = {"variant": v.name, "title": v.title, **_summary(ms)}
        row["gbps"] = nbytes / (row["median_ms"] * 1e-3) / 1e9
        row["roof_pct"] = 100 * row["gbps"] / roof["gbps"]
        got = out.get()
        row["ok"] = bool(np.all(np.abs(got.astype(np.float64) - want) <= tol)) if acc.kind == "f" \
            else bool(np.array_equal(got, want))
        rows.append(row)
    t = []
    for _ in range(3):
        t0 = time.perf_counter()
        accumulate.accumulate(x, dtype=acc)
        t.append((time.perf_counter() - t0) * 1e3)
    cpu = {"variant": "numpy (CPU)", "title": f"numpy.{accumulate.__name__}.accumulate", **_summary(t), "ok": True}
    cpu["gbps"] = nbytes / (cpu["median_ms"] * 1e-3) / 1e9
    cpu["roof_pct"] = 100 * cpu["gbps"] / roof["gbps"]
    rows.append(cpu)
    _versus(rows, "cub")
    return rows, roof


def emulated_reduce_journey(n, *, dtype="float32", op="sum", x=None):
    """Run every reduction variant once on the emulator backend (the CPU)
    and check it against NumPy: the journey without a GPU.  No GPU times
    and no bandwidth: the only time kept is how long the CPU took to
    emulate the kernels, which says nothing about a GPU."""
    from . import _backend
    from ._reduce import reduce

    dtype = np.dtype(dtype)
    x = random_input(n, dtype) if x is None else x
    acc = result_dtype(op, dtype)
    want = {"sum": np.sum, "min": np.min, "max": np.max}[op](x)
    tol = (4 * (math.ceil(math.log2(max(n, 2))) + 1) * np.finfo(acc).eps * float(np.abs(x).sum(dtype=np.float64))
           if op == "sum" and acc.kind == "f" else 0.0)
    before = _backend.current
    _backend.set_backend("emulator")
    rows = []
    try:
        d = to_device(x)
        for v in variants("reduce"):
            if v.where != "device":
                continue
            if "emulator" not in v.backends:
                rows.append({"variant": v.name, "title": v.title, "skipped": "NVIDIA library code: needs the cuda backend"})
                continue
            t0 = time.perf_counter()
            got = reduce(d, op, variant=v.name)
            cpu_ms = (time.perf_counter() - t0) * 1e3
            rows.append({"variant": v.name, "title": v.title, "result": got, "cpu_ms": cpu_ms,
                         "ok": bool(abs(float(got) - float(want)) <= tol)})
    finally:
        _backend.set_backend(before)
    return rows, want


def format_emulated_table(rows, want, *, title=""):
    """Markdown table of an emulated journey: results, not timings."""
    lines = [title] if title else []
    lines += ["| variant | what it does | result (emulated) | matches NumPy | CPU ms to emulate (not a GPU time) |",
              "|---|---|---:|:---:|---:|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['variant']} | {r['title']} | {r['skipped']} | | |")
            continue
        lines.append(f"| {r['variant']} | {r['title']} | {r['result']!s} | {'yes' if r['ok'] else 'NO'} | "
                     f"{r['cpu_ms']:.1f} |")
    lines.append(f"| numpy | the host reference | {want!s} | | |")
    return "\n".join(lines)


def format_table(rows, roof, *, title="", baseline="CUB"):
    """Markdown table of a journey's rows."""
    lines = [title] if title else []
    lines += [
        f"| variant | median ms | min ms | max ms | GB/s | % of copy roof | x vs {baseline} | matches NumPy |",
        "|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['variant']} | {r['skipped']} | | | | | | |")
            continue
        lines.append(
            f"| {r['variant']} | {r['median_ms']:.4f} | {r['min_ms']:.4f} | {r['max_ms']:.4f} | "
            f"{r['gbps']:.0f} | {r['roof_pct']:.1f} | {r['x_vs_baseline']:.2f} | {'yes' if r['ok'] else 'NO'} |"
        )
    lines.append(
        f"| copy roof (device-to-device) | {roof['median_ms']:.4f} | {roof['min_ms']:.4f} | "
        f"{roof['max_ms']:.4f} | {roof['gbps']:.0f} | 100.0 | | |"
    )
    return "\n".join(lines)
