"""The main job without a GPU: every variant of a family run once on the
emulator backend (the same kernels on the CPU) and checked against NumPy
with the tests' tolerance.  Results, not timings: the only time kept is how
long the CPU took to emulate the kernels, which says nothing about a GPU."""
from __future__ import annotations

import time

import numpy as np

from . import _backend
from ._arrays import to_device
from ._bench import random_input
from ._numerics import exact_sum, scan_reference, scan_tolerance, sum_tolerance
from ._reduce import reduce, result_dtype
from ._registry import variants
from ._scan import scan
from ._transpose import transpose

_ACCUMULATE = {"sum": np.cumsum, "min": np.minimum.accumulate, "max": np.maximum.accumulate}


def _reduce_case(x, op):
    acc = result_dtype(op, x.dtype)
    want = {"sum": np.sum, "min": np.min, "max": np.max}[op](x)
    ref = exact_sum(x) if op == "sum" else float(want)
    tol = sum_tolerance(x, acc, ref) if op == "sum" and acc.kind == "f" else 0.0

    def check(got):
        return bool(abs(float(got) - float(ref)) <= tol), got
    return want, (lambda d, name: reduce(d, op, variant=name)), check


def _scan_case(x, op):
    acc = result_dtype(op, x.dtype)
    want = _ACCUMULATE[op](x.astype(acc))
    if op == "sum" and acc.kind == "f":
        ref, bound = scan_reference(x, True, acc)
        tol = scan_tolerance(x.size, acc, ref, bound)
    else:
        ref, tol = want, 0

    def check(got):
        got = got.get()
        err = np.abs(got.astype(np.float64) - np.asarray(ref, np.float64))
        return bool(got.dtype == acc and np.all(err <= tol)), f"last = {got[-1]}"
    return f"last = {want[-1]}", (lambda d, name: scan(d, op, variant=name)), check


def _transpose_case(x, op):
    del op

    def check(got):
        got = got.get()
        return bool(np.array_equal(got, x.T)), f"{got.shape[0]} x {got.shape[1]}"
    return f"{x.shape[1]} x {x.shape[0]}", (lambda d, name: transpose(d, variant=name)), check


CASES = {"reduce": _reduce_case, "scan": _scan_case, "transpose": _transpose_case}


def emulated_journey(family, *, n=None, shape=None, dtype="float32", op="sum"):
    """Run every device variant of `family` once on the emulator, on n
    elements (reduce, scan) or a rows x cols matrix (transpose), and check
    each result.  Returns (rows, what NumPy gives)."""
    dtype = np.dtype(dtype)
    x = random_input(shape if family == "transpose" else n, dtype)
    want, run, check = CASES[family](x, op)
    size = x.size
    before = _backend.current
    _backend.set_backend("emulator")
    rows = []
    try:
        d = to_device(x)
        for v in variants(family):
            if v.where != "device":
                continue
            row = {"variant": v.name, "title": v.title}
            if "emulator" not in v.backends:
                row["skipped"] = "NVIDIA library code: needs the cuda backend"
            elif v.max_n is not None and size > v.max_n:
                row["skipped"] = f"over its limit (max_n = {v.max_n})"
            elif v.dtypes and dtype.name not in v.dtypes.split(","):
                row["skipped"] = f"takes {v.dtypes}"
            else:
                t0 = time.perf_counter()
                out = run(d, v.name)
                row["cpu_ms"] = (time.perf_counter() - t0) * 1e3
                if family == "transpose" and v.name == "copy":  # the roof: a copy, not a transpose
                    row["ok"], row["result"] = bool(np.array_equal(out.get(), x)), "a copy (the roof)"
                else:
                    row["ok"], row["result"] = check(out)
            rows.append(row)
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
