"""Shared-memory bank conflicts, measured with Nsight Compute.

Without arguments: runs blelloch and blelloch_padded (a 2048-element scan)
and tiled and tiled_padded (a 4096 x 4096 float32 transpose) once each, for
ncu to profile (bench/gpu_run.sh ncu):

    ncu --clock-control none --csv --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,... \\
        -k regex:'blelloch|tiled' python3 bench/bank_conflicts.py > ncu.csv

With --table FILE: turns ncu's CSV into a markdown table.
"""
import sys

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
    from gpuprims._profile import METRICS, PRESETS, parse_ncu_csv, short_kernel_name
    with open(path, newline="") as f:
        kernels = parse_ncu_csv(f.read())
    names = {METRICS[m][0]: METRICS[m][1] for m in PRESETS["bank_conflicts"]}
    out = ["| kernel | " + " | ".join(names.values()) + " |", "|---|" + "---:|" * len(names)]
    for k in kernels:
        cells = []
        for m in names:
            v = k["metrics"].get(m, ("?", ""))[0]
            cells.append(f"{v:.0f}" if isinstance(v, float) else str(v))
        out.append(f"| `{short_kernel_name(k['kernel'])}` | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(sys.argv[2]))
    else:
        run()
