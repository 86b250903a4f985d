"""The main job without a GPU: every variant of a family run once on the
emulator backend (the same kernels on the CPU) and checked against NumPy
with the tests' tolerance.  Results, not timings: the only time kept is how
long the CPU took to emulate the kernels, which says nothing about a GPU."""
from __future__ import annotations

import time

import numpy as np

from . import _backend
from ._arrays import DeviceArray, to_device
from ._family import Case, get as get_family, random_input


def emulated_journey(family, *, n=None, shape=None, dtype="float32", op="sum", inclusive=True, progress=None):
    """Run every device variant of `family` once on the emulator, on n
    elements or a rows x cols matrix (the family's default size if neither
    is given), and check each result.  Returns (rows, the text of NumPy's
    answer).  progress: a callable(done, total, label), told after each
    variant."""
    fam = get_family(family)
    size = fam.pick_size(n, shape, strict=False)
    case = Case(fam, random_input(fam.input_shape(size), np.dtype(dtype)), op=op, inclusive=inclusive)
    rows = []
    device = [v for v in fam.variants() if v.where == "device"]
    with _backend.emulating():
        d = to_device(case.x)
        for i, v in enumerate(device):
            if progress:
                progress(i, len(device), f"{fam.name} {v.name} (emulated)")
            row = {"variant": v.name, "title": v.title}
            if "emulator" not in v.backends:
                row["skipped"] = "NVIDIA library code: needs the cuda backend"
            elif reason := v.skip_reason(case.n, case.x.dtype):
                row["skipped"] = f"over its limit ({reason})"
            else:
                shape_out = case.out_shape(v)
                out = None if shape_out is None else DeviceArray(shape_out, case.acc)
                t0 = time.perf_counter()
                got = case.run(v, d.ptr, out)
                row["cpu_ms"] = (time.perf_counter() - t0) * 1e3
                row["ok"] = bool(case.check(got, v)[0])
                row["result"] = fam.summary(got, v)
            rows.append(row)
    if progress:
        progress(len(device), len(device), f"{fam.name} (emulated)")
    return rows, fam.summary(case.numpy(), fam.auto)


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
