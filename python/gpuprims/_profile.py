"""gpuprims.profile: hardware metrics of the variants from Nsight Compute.

The textbook measured its reduction kernels with nvprof (gld_efficiency, stall_sync,
...), which no longer runs on GPUs since Volta.  Each nvprof metric below
is mapped to the Nsight Compute metric that the Nsight Compute CLI's
"nvprof transition guide" gives for it, and profile() runs `ncu` on a
small driver (python -m gpuprims._profile_driver) that runs one variant
once, so every kernel ncu reports belongs to that variant.
"""
from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from ._backend import require_gpu
from ._family import get as get_family, size_text
from ._table import Column, Table


class ProfilerError(RuntimeError):
    """Nsight Compute is missing, not permitted to read the counters, or failed."""


# nvprof name -> (ncu metric, or a tuple of them to add up, header, scale
# from ncu's base unit, format)
METRICS = {
    "gld_efficiency": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
                       "gld eff %", 1.0, ".1f"),
    "gst_efficiency": ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
                       "gst eff %", 1.0, ".1f"),
    "gld_throughput": ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second",
                       "gld GB/s", 1e-9, ".1f"),
    "inst_per_warp": ("smsp__average_inst_executed_per_warp.ratio", "inst/warp", 1.0, ".1f"),
    "dram_read_throughput": ("dram__bytes_read.sum.per_second", "DRAM read GB/s", 1e-9, ".1f"),
    "stall_sync": (("smsp__warp_issue_stalled_barrier_per_warp_active.pct",
                    "smsp__warp_issue_stalled_membar_per_warp_active.pct"),
                   "sync stall %", 1.0, ".1f"),
    "branch_efficiency": ("smsp__sass_average_branch_targets_threads_uniform.pct",
                          "branch eff %", 1.0, ".1f"),
    "achieved_occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",
                           "occupancy %", 1.0, ".1f"),
    "warp_execution_efficiency": ("smsp__thread_inst_executed_per_inst_executed.ratio",
                                  "threads/inst", 1.0, ".1f"),
    "shared_ld_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                 "smem ld conflicts", 1.0, ".0f"),
    "shared_st_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                                 "smem st conflicts", 1.0, ".0f"),
    "shared_ld_instructions": ("smsp__inst_executed_op_shared_ld.sum", "smem ld inst", 1.0, ".0f"),
}
DURATION = "gpu__time_duration.sum"  # always collected: the kernel's time (ns)

PRESETS = {
    # the reduction tables of Cheng, Grossman and McKercher, Professional
    # CUDA C Programming, chapter 3 (time, gld/gst efficiency, instructions
    # per warp, DRAM read throughput, barrier stalls) plus the divergence and
    # occupancy the text discusses
    "seed": ("gld_efficiency", "gst_efficiency", "inst_per_warp", "dram_read_throughput",
             "stall_sync", "branch_efficiency", "achieved_occupancy"),
    "memory": ("gld_efficiency", "gst_efficiency", "gld_throughput", "dram_read_throughput"),
    "divergence": ("branch_efficiency", "warp_execution_efficiency", "inst_per_warp"),
    "bank_conflicts": ("shared_ld_bank_conflicts", "shared_st_bank_conflicts",
                       "shared_ld_instructions"),
    "occupancy": ("achieved_occupancy", "stall_sync"),
}


def metric_list(metrics) -> list:
    """A preset name, or nvprof names / ncu metric names -> [(key, ncu name,
    header, scale, fmt)].  Unknown nvprof-style names raise ValueError."""
    names = PRESETS[metrics] if isinstance(metrics, str) and metrics in PRESETS else \
        ([metrics] if isinstance(metrics, str) else list(metrics))
    out = []
    for m in names:
        if m in METRICS:
            ncu, head, scale, fmt = METRICS[m]
            out.append((m, ncu, head, scale, fmt))
        elif "__" in m:  # a raw ncu metric name, shown as it is
            out.append((m, m, m, 1.0, ".4g"))
        else:
            raise ValueError(f"unknown metric {m!r}; use a preset ({', '.join(PRESETS)}), one of "
                             f"{', '.join(METRICS)}, or an ncu metric name (unit__counter.rollup)")
    return out


def _parts(ncu_name) -> tuple:
    return ncu_name if isinstance(ncu_name, tuple) else (ncu_name,)


def find_ncu(ncu=None) -> str:
    """The ncu executable: `ncu`, $GPUPRIMS_NCU, ncu on PATH, or the CUDA
    toolkit's; ProfilerError saying so where there is none."""
    cands = [ncu, os.environ.get("GPUPRIMS_NCU"), shutil.which("ncu")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands.append(str(Path(home) / "bin" / "ncu"))
    for c in cands:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    raise ProfilerError(
        "Nsight Compute (ncu) is not installed or not found: put ncu on PATH, set GPUPRIMS_NCU "
        "or CUDA_HOME, or pass ncu=... (it ships with the CUDA toolkit as nsight-compute)")


def parse_ncu_csv(text: str) -> list:
    """ncu --csv output -> one dict per profiled kernel launch, in order:
    {"id", "kernel", "block", "grid", "metrics": {name: (value, unit)}}.
    Values are floats where they parse (thousands separators dropped)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    kernels, by_id = [], {}
    for r in csv.DictReader(lines):
        if "Metric Name" not in r or r.get("ID") in (None, "ID"):
            continue
        k = by_id.get(r["ID"])
        if k is None:
            k = by_id[r["ID"]] = {"id": r["ID"], "kernel": r.get("Kernel Name", ""),
                                  "block": r.get("Block Size", ""), "grid": r.get("Grid Size", ""),
                                  "metrics": {}}
            kernels.append(k)
        raw = (r.get("Metric Value") or "").replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            value = r.get("Metric Value")
        k["metrics"][r["Metric Name"]] = (value, r.get("Metric Unit", ""))
    return kernels


def short_kernel_name(name: str) -> str:
    """'void (anonymous namespace)::reduce_unroll<8, float, gp::Sum<float>>(const float *, ...)'
    -> 'reduce_unroll<8, float, Sum<float>>'."""
    name = name.replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[len("void "):]
    name = name.split("(")[0]
    for prefix in ("gp::transpose::", "gp::reduce::", "gp::scan::", "gp::"):
        name = name.replace(prefix, "")
    return name.strip()


def _check_output(proc, variant):
    text = (proc.stdout or "") + "\n" + (proc.stderr or "")
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfilerError(
            "ncu is not permitted to read the GPU's performance counters (ERR_NVGPUCTRPERM): "
            "run as root, or have the administrator allow it (NVreg_RestrictProfilingToAdminUsers=0; "
            "https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    errors = [line for line in text.splitlines() if line.startswith("==ERROR==")]
    if errors or proc.returncode != 0:
        tail = "\n".join(errors or text.strip().splitlines()[-10:])
        raise ProfilerError(f"ncu failed on variant {variant!r} (exit {proc.returncode}):\n{tail}")


def profile(family: str, variants="all", *, n=None, shape=None, dtype="float32", op="sum",
            metrics="seed", ncu=None, timeout=600) -> Table:
    """Run Nsight Compute on the chosen variants of `family` and return a
    Table: one row per kernel launch (a multi-pass variant has several),
    with its duration and the requested metrics.

    variants: "all" (every device kernel of gpuprims, journey order) or a
    list of names.  metrics: a preset ("seed": the textbook's nvprof metrics;
    "memory", "divergence", "bank_conflicts", "occupancy"), or a list of
    nvprof names (gld_efficiency, gst_efficiency, gld_throughput,
    inst_per_warp, dram_read_throughput, stall_sync, branch_efficiency,
    achieved_occupancy, warp_execution_efficiency, shared_ld_bank_conflicts,
    shared_st_bank_conflicts, shared_ld_instructions) or ncu metric names.
    Each variant runs once, in its own process under ncu (--clock-control
    none, so clocks are as in the timings).

    Raises ValueError (unknown family, variant or metric; the emulator
    selected while a GPU is visible), gpuprims.NoDeviceError (no GPU
    visible: checked first), ProfilerError (ncu missing, not permitted to
    read the counters - ERR_NVGPUCTRPERM -, or failing).
    """
    fam = get_family(family)
    chosen = [v for v in fam.variants() if not v.is_baseline and v.where == "device"] \
        if variants == "all" else [fam.lookup(v) for v in ([variants] if isinstance(variants, str)
                                                            else variants)]
    mlist = metric_list(metrics)
    require_gpu("profile")  # before looking for ncu: without a GPU it has nothing to measure
    exe = find_ncu(ncu)
    in_shape = fam.input_shape(fam.pick_size(n, shape, strict=False))
    size_arg = "x".join(str(s) for s in in_shape)
    count = math.prod(in_shape)
    env = dict(os.environ)
    pkg_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    names = ",".join([DURATION] + [n for m in mlist for n in _parts(m[1])])
    rows = []
    for v in chosen:
        reason = v.skip_reason(count, np.dtype(dtype))
        if reason:
            rows.append({"variant": v.name, "note": f"skipped: {reason}"})
            continue
        cmd = [exe, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics", names,
               sys.executable, "-m", "gpuprims._profile_driver", family, v.name, size_arg, dtype, op]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        _check_output(proc, v.name)
        kernels = parse_ncu_csv(proc.stdout)
        if not kernels:
            raise ProfilerError(f"ncu reported no kernel for variant {v.name!r}; its output ends:\n"
                                + "\n".join(proc.stdout.strip().splitlines()[-5:]))
        for k in kernels:
            row = {"variant": v.name, "kernel": short_kernel_name(k["kernel"]), "block": k["block"],
                   "grid": k["grid"]}
            dur = k["metrics"].get(DURATION, (None, ""))[0]
            row["duration_us"] = dur / 1e3 if isinstance(dur, float) else None
            for key, ncu_name, _, scale, _ in mlist:
                values = [k["metrics"].get(part, (None, ""))[0] for part in _parts(ncu_name)]
                row[key] = (sum(values) * scale if all(isinstance(x, float) for x in values)
                            else (values[0] if len(values) == 1 else None))
            rows.append(row)
    cols = [Column("variant", "variant", align="<"), Column("kernel", "kernel", align="<"),
            Column("duration_us", "us", ".1f")]
    cols += [Column(key, head, fmt) for key, _, head, _, fmt in mlist]
    what = fam.what(op, True)
    return Table(rows, cols, title=f"{what}, {size_text(in_shape)}, {dtype}: Nsight Compute metrics",
                 meta={"family": fam.name, "metrics": {k: " + ".join(_parts(m)) for k, m, *_ in mlist},
                       "ncu": exe},
                 plot_key="duration_us", plot_label="kernel time (us, under ncu)")
