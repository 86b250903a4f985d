"""Where a 16384^2 float32 NumPy transpose spends its time, by operand kind
(page-locked or pageable input and output), with the host pipeline's trace:
wall clock per call (median of 5), then per stage the chunks' count, mean
and summed duration (ms).  Needs a GPU.

    python bench/host_transpose_trace.py
"""
import statistics

import numpy as np

import gpuprims
from benchlib import wall_ms
from gpuprims._pipeline_trace import trace_pipeline

side = 16384
ap = gpuprims.empty_pinned((side, side), np.float32); ap[...] = 1.5
op = gpuprims.empty_pinned((side, side), np.float32); op[...] = 0
an = np.full((side, side), 1.5, np.float32)
on = np.zeros((side, side), np.float32)

for name, x, o in [("pinned in+out", ap, op), ("pinned in, pageable out", ap, on), ("pageable in, pinned out", an, op),
                   ("pageable in+out", an, on)]:
    ms = wall_ms(lambda: gpuprims.transpose(x, out=o))
    t = trace_pipeline(gpuprims.transpose, x, out=o)
    by = {}
    for r in t.records:
        by.setdefault(r["stage"], []).append(r["end_ms"] - r["start_ms"])
    parts = ", ".join(f"{s} {len(v)}x mean {statistics.mean(v):.2f} sum {sum(v):.1f}" for s, v in by.items())
    print(f"| {name} | {ms:.1f} ms | traced {t.wall_ms:.1f} ms | {parts} |", flush=True)
    assert np.array_equal(o[:3, :5], x[:5, :3].T)
