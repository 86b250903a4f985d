"""The main job without a GPU: every reduction variant run once on the
emulator backend (the same kernels on the CPU) and checked against NumPy.
Results, not timings: the only time kept is how long the CPU took to
emulate the kernels, which says nothing about a GPU."""
from __future__ import annotations

import time

import numpy as np

from . import _backend
from ._arrays import to_device
from ._bench import random_input
from ._numerics import exact_sum, sum_tolerance
from ._reduce import reduce, result_dtype
from ._registry import variants


def emulated_reduce_journey(n, *, dtype="float32", op="sum", x=None):
    dtype = np.dtype(dtype)
    x = random_input(n, dtype) if x is None else x
    acc = result_dtype(op, dtype)
    want = {"sum": np.sum, "min": np.min, "max": np.max}[op](x)
    exact = exact_sum(x) if op == "sum" else None
    tol = sum_tolerance(x, acc, exact) if op == "sum" and acc.kind == "f" else 0.0
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
            ref = exact if op == "sum" else float(want)
            rows.append({"variant": v.name, "title": v.title, "result": got, "cpu_ms": cpu_ms,
                         "ok": bool(abs(float(got) - float(ref)) <= tol)})
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
