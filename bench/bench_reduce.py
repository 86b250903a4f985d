"""The reduction benchmark (run on the GPU machine).

Times every variant at n = 2^28, 2^24 and 2^20 (float32 sum) against CUB,
the copy roof and NumPy, measured in this one run; then the host overhead
of a call on a DeviceArray.  Writes bench/results/reduce-<gpu>-<date>.md
(and a copy under $OUT when set) and prints the tables.
"""
import statistics
import sys
import time

import gpuprims
from benchlib import begin, journey_tables, save_results
from gpuprims import _core
from gpuprims._bench import random_input

SIZES = [2**28, 2**24, 2**20]


def call_overhead(n, calls=2000):
    """Wall time of gpuprims.sum(DeviceArray) minus its kernel time (events),
    medians of many calls, in microseconds."""
    d = gpuprims.to_device(random_input(n, "float32", seed=5))
    for _ in range(50):
        gpuprims.sum(d)
    wall = []
    for _ in range(calls):
        t0 = time.perf_counter()
        gpuprims.sum(d)
        wall.append(time.perf_counter() - t0)
    auto = next(v for v in gpuprims.variants("reduce") if v.name == "single_pass")
    code = _core.dtypes().index("float32")
    params = (n, code, code, _core.ops().index("sum"))
    core = []
    for _ in range(calls):
        t0 = time.perf_counter()
        _core.call("reduce", auto.index, d.ptr, None, params)
        core.append(time.perf_counter() - t0)
    ms, _ = _core.time("reduce", auto.index, d.ptr, None, params, 50, calls // 4, 0)
    w = statistics.median(wall) * 1e6
    c = statistics.median(core) * 1e6
    k = statistics.median(ms) * 1e3
    return {"n": n, "wall_us": w, "core_us": c, "kernel_us": k, "overhead_us": w - k}


def rounds_vs_cub(n, rounds=5):
    """auto and CUB timed alternately in several rounds (each a median of
    30 runs): the spread shows what a difference of a few tenths of a
    percent is worth."""
    x = random_input(n, "float32", seed=9)
    out = []
    for _ in range(rounds):
        t = gpuprims.compare("reduce", x=x, variants=["single_pass", "cub"], baselines=False,
                             repeat=30, k=0, check=False)
        out.append(t["cub"]["median_ms"] / t["single_pass"]["median_ms"])
    return out


def main():
    info, date, parts, data = begin(
        "Reduction benchmark",
        "CUDA events around the variant's "
        "kernel(s) only (gpuprims.compare), 3 warm-up runs, median of 30 timed runs, a buffer "
        "of 4x the L2 overwritten and the output poisoned before each run. GB/s = input bytes / "
        "median time; the roof is a device-to-device copy moving the same bytes (read + write) "
        "in this run. `x CUB` = CUB's median time / the row's (above 1: faster than CUB); "
        "`x prev` / `x first` the same against the previous and the first row. Each result "
        "checked against math.fsum (error in ULPs); `distinct` = different results over 5 "
        "more runs.")
    cases = [(f"\n## float32 sum, n = 2^{n.bit_length() - 1} ({n * 4 / 2**20:.0f} MiB)", {"n": n})
             for n in SIZES]
    journey_tables("reduce", cases, parts, data, dtype="float32", op="sum", repeat=30, k=5)
    ratios = rounds_vs_cub(2**28)
    parts.append("\n## auto vs CUB, float32 sum, n = 2^28, 5 alternating rounds\n\n"
                 "x vs CUB per round: " + ", ".join(f"{r:.4f}" for r in ratios) +
                 f" (median {statistics.median(ratios):.4f})")
    data["rounds_vs_cub_2^28"] = ratios
    print(parts[-1], flush=True)
    ov = [call_overhead(n) for n in (2**20, 2**24)]
    lines = ["\n## Host overhead of gpuprims.sum(DeviceArray) (auto)\n",
             "Medians of 2000 calls: the whole call, the compiled core's call alone (no Python "
             "layer), and the kernel timed with events.\n",
             "| n | gpuprims.sum (us) | _core.call (us) | kernel (us) | overhead (us) |",
             "|---:|---:|---:|---:|---:|"]
    lines += [f"| 2^{o['n'].bit_length() - 1} | {o['wall_us']:.1f} | {o['core_us']:.1f} | "
              f"{o['kernel_us']:.1f} | {o['overhead_us']:.1f} |" for o in ov]
    parts.append("\n".join(lines))
    data["overhead"] = ov
    print(parts[-1])

    return save_results("reduce", info, date, parts, data)

if __name__ == "__main__":
    sys.exit(main())
