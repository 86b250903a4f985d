"""Shared-memory bank conflicts, measured with Nsight Compute.

Without arguments: runs blelloch and blelloch_padded (a 2048-element scan)
and tiled and tiled_padded (a 4096 x 4096 float32 transpose) once each, for
ncu to profile (bench/gpu_run.sh ncu):

    ncu --clock-control none --csv --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,... \\
        -k regex:'blelloch|tiled' python3 bench/bank_conflicts.py > ncu.csv

With --table FILE: turns ncu's CSV into a markdown table.
"""
import csv
import sys
from collections import defaultdict

import numpy as np


def run():
    import gpuprims
    rng = np.random.default_rng(0)
    x = gpuprims.to_device(rng.random(2048, dtype=np.float32))
    for v in ("blelloch", "blelloch_padded"):
        gpuprims.cumsum(x, variant=v)
    a = gpuprims.to_device(rng.random((4096, 4096), dtype=np.float32))
    for v in ("tiled", "tiled_padded"):
        gpuprims.transpose(a, variant=v)


def table(path):
    rows = defaultdict(dict)
    order = []
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"])
        if key not in rows:
            order.append(key)
        rows[key][r["Metric Name"]] = r["Metric Value"]
    names = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "load bank conflicts",
             "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "store bank conflicts",
             "smsp__inst_executed_op_shared_ld.sum": "shared load instructions"}
    out = ["| kernel | " + " | ".join(names.values()) + " |", "|---|" + "---:|" * len(names)]
    for key in order:
        kernel = key[1].split("(")[0].replace("void ", "")
        out.append(f"| `{kernel}` | " + " | ".join(rows[key].get(m, "?") for m in names) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(sys.argv[2]))
    else:
        run()
