"""The reduction benchmark (run on the GPU machine).

Times every 1-D variant at n = 2^28, 2^24 and 2^20 (float32 sum) against
CUB, the copy roof and NumPy, measured in this one run; then the host
overhead of a call on a DeviceArray; then the axis and segment steps
(every row flagged batched or segmented) on the shapes of issue 15, with
CUB's segmented reduction and CuPy's x.sum(axis) where CuPy is importable.
Writes bench/results/reduce-<gpu>-<date>.md (and a copy under $OUT when
set) and prints the tables.

    python bench/bench_reduce.py          # everything (about 3 minutes)
    python bench/bench_reduce.py --axis   # the axis and segment tables only
    python bench/bench_reduce.py --axis --segments   # the segment tables only
"""
import math
import statistics
import sys
import time

import numpy as np

import gpuprims
from benchlib import begin, journey_tables, save_results, wall_ms
from gpuprims import _axes, _core
from gpuprims._bench import FLUSH_L2_TIMES, copy_roof, random_input

SIZES = [2**28, 2**24, 2**20]

# The axis and segment tables (issue 15): float32 C arrays of 2^26 elements,
# reduced along axis -1 and axis 0, and segmented sums over 2^26 elements
# with random lengths (uniform in [0, 2 * mean]) of these means.
AXIS_SHAPES = [(2**24, 4), (2**20, 64), (2**14, 2**14), (64, 2**20), (4, 2**24)]
SEGMENT_MEANS = [4, 64, 1024, 65536]
SEGMENT_N = 2**26
BUDGET_S = 0.5  # at most this much timed work per row: slow mappings get fewer runs


def call_overhead(n, calls=2000):
    """Wall time of gpuprims.sum(DeviceArray) minus its kernel time (events),
    medians of many calls, in microseconds."""
    d = gpuprims.to_device(random_input(n, "float32", seed=5))
    w = 1e3 * wall_ms(lambda: gpuprims.sum(d), calls, warmup=50)
    auto = next(v for v in gpuprims.variants("reduce") if v.name == "single_pass")
    code = _core.dtypes().index("float32")
    params = (n, code, code, _core.ops().index("sum"))
    c = 1e3 * wall_ms(lambda: _core.call("reduce", auto.index, d.ptr, None, params), calls, warmup=0)
    ms, _ = _core.time("reduce", auto.index, d.ptr, None, params, 50, calls // 4, 0)
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
    one_d = [v.name for v in gpuprims.variants("reduce")
             if not v.baseline and not v.batched and not v.segmented]
    journey_tables("reduce", cases, parts, data, variants=one_d, dtype="float32", op="sum", repeat=30,
                   k=5)
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

    axis_tables(parts, data)
    return save_results("reduce", info, date, parts, data)


# ------------------------------------------------------ axes and segments

def _batched_rows():
    return [v for v in gpuprims.variants("reduce")
            if (v.batched or v.segmented) and "cuda" in v.backends]


def _time_core(v, d_ptr, out_ptr, params, flush_bytes):
    """Median, min (ms) of variant v through _core.time: one run first,
    then as many as BUDGET_S allows (at most 20)."""
    first, _ = _core.time("reduce", v.index, d_ptr, out_ptr, params, 1, 1, flush_bytes)
    repeat = max(1, min(20, int(BUDGET_S * 1e3 / max(first[0], 1e-3))))
    if repeat == 1:
        return first[0], first[0], 1
    ms, _ = _core.time("reduce", v.index, d_ptr, out_ptr, params, 2, repeat, flush_bytes)
    return statistics.median(ms), min(ms), repeat


def _cupy_times(cp, x, axis, flush_bytes, repeat=20):
    """(event ms, wall ms) medians of CuPy's x.sum(axis) on a device array,
    the L2 flushed before each run (outside the timed window)."""
    flush = cp.empty(max(flush_bytes // 4, 1), cp.float32)
    x.sum(axis=axis)
    cp.cuda.Device().synchronize()
    ev, wall = [], []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(repeat):
        flush.fill(1)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        start.record()
        x.sum(axis=axis)
        stop.record()
        stop.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        ev.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(ev), statistics.median(wall)


def _bad(got, rows_ref, rows_abs, n, extra=0.0):
    """Problems whose float32 sum is outside the tests' bound (4 (log2 n + 1)
    eps sum|x| + eps |sum|, _numerics.sum_tolerance per problem), plus
    `extra` for the reference's own error."""
    eps = float(np.finfo(np.float32).eps)
    tol = 4 * (math.ceil(math.log2(max(n, 2))) + 1) * eps * rows_abs + eps * np.abs(rows_ref) + extra
    return int(np.count_nonzero(~(np.abs(got.astype(np.float64) - rows_ref) <= tol)))


def _row_lines(v, ms, mn, reps, nbytes, roof_gbps, cub_ms, bad):
    gbps = nbytes / (ms * 1e-3) / 1e9
    x_cub = f"{cub_ms / ms:.2f}" if cub_ms else ""
    return (f"| {v} | {ms:.4f} | {mn:.4f} | {reps} | {gbps:.0f} | {100 * gbps / roof_gbps:.1f} | "
            f"{x_cub} | {'ok' if bad == 0 else f'{bad} wrong'} |")


HEAD = ["| variant | ms (median) | ms (min) | runs | GB/s | % roof | x CUB | check |",
        "|---|---:|---:|---:|---:|---:|---:|---|"]


def axis_tables(parts, data, shapes=AXIS_SHAPES):
    """Every batched / segmented row on AXIS_SHAPES (both axes) and on the
    segment means, float32 sum: kernel time by events (_core.time, L2
    flushed, output poisoned), GB/s = (input + output [+ offsets]) bytes /
    median, % of the copy roof of the input's bytes measured here, x CUB =
    cub_segmented's time / the row's; CuPy's x.sum(axis) (events and wall
    clock) where CuPy is importable."""
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no GPU for it: the tables go without it
        cp = None
        why = f"{type(e).__name__}: {e}"
    rows = _batched_rows()
    f32 = _core.dtypes().index("float32")
    op = _core.ops().index("sum")
    flush_bytes = FLUSH_L2_TIMES * int(_core.device_info()["l2_cache_bytes"])
    roof = copy_roof(4 * SEGMENT_N)  # every case reads 2^26 float32
    lines = ["\n## Axes and segments, float32 sum, 2^26 elements (256 MiB)\n",
             "Each batched or segmented variant through the core (`_core.time`: CUDA events around "
             "its kernels, the L2 flushed and the output poisoned before each run; median of up to "
             f"20 runs, fewer where one run takes long: {BUDGET_S} s of timed work per row). GB/s = "
             "(input + output + offsets) bytes / median; % roof against a device-to-device copy of "
             f"the input's bytes, {roof['gbps']:.0f} GB/s (read + write) in this run. `x CUB` = "
             "`cub_segmented`'s time / the row's (CUB takes rows and segments only, not columns). "
             "`check`: every problem within the tests' float32 bound. "
             + ("CuPy: `x.sum(axis)` on a CuPy array, events and wall clock (medians of 20, its "
                "output allocation included)." if cp else f"CuPy not measured ({why})."),
             ]
    data["axis"] = {"roof_gbps": roof["gbps"], "cases": []}
    # the reference: the same 2^26 floats reduced whole (axis=None) by the 1-D kernel
    one = next(v for v in gpuprims.variants("reduce") if v.name == "single_pass")
    x = random_input(SEGMENT_N, "float32", seed=20)
    d = gpuprims.to_device(x)
    ms, mn, reps = _time_core(one, d.ptr, None, (x.size, f32, f32, op), flush_bytes)  # a scalar: no out
    got = np.array([gpuprims.sum(d, variant=one.name)], np.float32)
    lines += ["\n### The same 2^26 float32 whole (axis=None): the 1-D reference\n"] + HEAD
    lines.append(_row_lines(one.name, ms, mn, reps, x.nbytes, roof["gbps"], None,
                            _bad(got, np.array([x.astype(np.float64).sum()]),
                                 np.array([np.abs(x.astype(np.float64)).sum()]), x.size)))
    data["axis"]["one_d"] = {"variant": one.name, "median_ms": ms, "min_ms": mn, "runs": reps}
    del d
    for shape in shapes:
        x = random_input(shape[0] * shape[1], "float32", seed=21).reshape(shape)
        d = gpuprims.to_device(x)
        for axis in (1, 0):
            outer, n, inner = (shape[0], shape[1], 1) if axis == 1 else (1, shape[0], shape[1])
            layout = (outer, n, inner, shape[1] if axis == 1 else 0, 1 if axis == 1 else shape[1],
                      0 if axis == 1 else 1, 0)
            params = (x.size, f32, f32, op, layout)
            count = outer * inner
            out = gpuprims.DeviceArray((count,), np.float32)
            x64 = x.astype(np.float64)
            ref, ab = x64.sum(axis=axis), np.abs(x64).sum(axis=axis)
            del x64
            nbytes = x.nbytes + 4 * count
            lines += [f"\n### {shape} axis={-1 if axis == 1 else 0}: {count} problems of {n}\n"] + HEAD
            case = {"shape": list(shape), "axis": axis, "rows": []}
            timed = []
            for v in rows:
                if v.name == "cub_segmented" and axis == 0:
                    continue  # columns: not a layout CUB's segmented reduction takes
                if not v.batched:
                    continue
                ms, mn, reps = _time_core(v, d.ptr, out.ptr, params, flush_bytes)
                timed.append((v.name, ms, mn, reps, _bad(out.get(), ref, ab, n)))
            cub_ms = next((t[1] for t in timed if t[0] == "cub_segmented"), None)
            for name, ms, mn, reps, bad in timed:
                lines.append(_row_lines(name, ms, mn, reps, nbytes, roof["gbps"], cub_ms, bad))
                case["rows"].append({"variant": name, "median_ms": ms, "min_ms": mn, "runs": reps,
                                     "gbps": nbytes / (ms * 1e-3) / 1e9, "wrong": bad})
            if cp is not None:
                cx = cp.asarray(x)
                ev, wall = _cupy_times(cp, cx, axis, flush_bytes)
                gbps = nbytes / (ev * 1e-3) / 1e9
                lines.append(f"| CuPy x.sum(axis) | {ev:.4f} | wall {wall:.4f} | 20 | {gbps:.0f} | "
                             f"{100 * gbps / roof['gbps']:.1f} | {cub_ms / ev:.2f} | |"
                             if cub_ms else
                             f"| CuPy x.sum(axis) | {ev:.4f} | wall {wall:.4f} | 20 | {gbps:.0f} | "
                             f"{100 * gbps / roof['gbps']:.1f} | | |")
                case["cupy"] = {"event_ms": ev, "wall_ms": wall}
                del cx
            data["axis"]["cases"].append(case)
            print("\n".join(lines[-len(case["rows"]) - 3 - (cp is not None):]), flush=True)
        del d
    rng = np.random.default_rng(22)
    plan = _axes.DtypePlan("sum", np.dtype(np.float32), None, "sum")
    x = random_input(SEGMENT_N, "float32", seed=23)
    d = gpuprims.to_device(x)
    csum = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
    cabs = np.concatenate([[0.0], np.cumsum(np.abs(x), dtype=np.float64)])
    for mean in SEGMENT_MEANS:
        lengths = rng.integers(0, 2 * mean + 1, size=SEGMENT_N // mean)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        offsets = offsets[offsets <= SEGMENT_N]
        k = offsets.size - 1
        offs = gpuprims.to_device(offsets)
        # checked as gpuprims.sum(x, segments=offsets) checks them: the layout
        # carries the longest segment's length, as the library's
        segs = _axes.segment_offsets(offsets, (SEGMENT_N,), None, plan, "sum")
        params = (SEGMENT_N, f32, f32, op, segs.layout(SEGMENT_N, offs.ptr))
        out = gpuprims.DeviceArray((max(k, 1),), np.float32)
        ref = csum[offsets[1:]] - csum[offsets[:-1]]
        ab = cabs[offsets[1:]] - cabs[offsets[:-1]]
        nbytes = 4 * int(offsets[-1] - offsets[0]) + 4 * k + 8 * (k + 1)
        lines += [f"\n### segments of mean length {mean}: {k} segments\n"] + HEAD
        case = {"segments_mean": mean, "segments": k, "rows": []}
        timed = []
        for v in rows:
            if not v.segmented:
                continue
            ms, mn, reps = _time_core(v, d.ptr, out.ptr, params, flush_bytes)
            # the reference is a difference of float64 cumulative sums: its own
            # error, a few eps of the running sum of |x|, widens the bound
            bad = _bad(out.get()[:k], ref, ab, 2 * mean + 1,
                       extra=4 * np.finfo(np.float64).eps * cabs[offsets[1:]])
            timed.append((v.name, ms, mn, reps, bad))
        cub_ms = next((t[1] for t in timed if t[0] == "cub_segmented"), None)
        for name, ms, mn, reps, bad in timed:
            lines.append(_row_lines(name, ms, mn, reps, nbytes, roof["gbps"], cub_ms, bad))
            case["rows"].append({"variant": name, "median_ms": ms, "min_ms": mn, "runs": reps,
                                 "gbps": nbytes / (ms * 1e-3) / 1e9, "wrong": bad})
        data["axis"]["cases"].append(case)
        print("\n".join(lines[-len(case["rows"]) - 3:]), flush=True)
    parts.append("\n".join(lines))
    bad = [(c.get("shape") or c.get("segments_mean"), r["variant"]) for c in data["axis"]["cases"]
           for r in c["rows"] if r["wrong"]]
    if bad:
        print("AXIS MISMATCH:", bad)
        data["tables"].append({"rows": [{"variant": f"{b[1]} {b[0]}", "matches": False} for b in bad]})


def main_axis():
    info, date, parts, data = begin("Reduction benchmark: axes and segments",
                                    "see the section's own method line")
    axis_tables(parts, data, () if "--segments" in sys.argv[1:] else AXIS_SHAPES)
    return save_results("reduce-axis", info, date, parts, data)


if __name__ == "__main__":
    sys.exit(main_axis() if "--axis" in sys.argv[1:] else main())
