"""Every dtype against the roof, and what a small call costs (run on the GPU
machine, one run, about 3 minutes).

1. Reductions of 2^28 elements of the kernels' own dtypes (float32/64,
   int32/64; sum, and min/max): `auto`, CUB's DeviceReduce and, for float
   sums, the gpu_to_gpu rows, timed with gpuprims.compare (CUDA events around
   the kernels, warm-up, median of 20, L2 flushed); % of a device-to-device
   copy of the same input bytes measured in the same call.  The other dtypes
   (1 GiB each) by wall clock per call beside CuPy's.
   The narrow dtypes that `auto` reads as they are (bool, int8, uint8,
   int16, uint16, uint32, uint64, float16 sums) at 2^24 and 2^28 elements,
   timed by the core as compare times (CUDA events around the kernel,
   warm-up, median of 20, L2 flushed) against the copy roof of the same
   bytes measured beside each, float32 as the reference row.
2. The host cost of a small call: wall-clock per call of sum, cumsum (2^10
   elements) and transpose (32 x 32) on device arrays, each call waited for
   (the result usable on the host or by the next kernel), medians of 2000
   calls, beside CuPy's and PyTorch's same calls on the same data when they
   are installed; then the same for sum and cumsum of 2^20 float32, float64
   and int32 and a 1024 x 1024 transpose.  gpuprims with and without out=.

Writes bench/results/dtypes-<gpu>-<date>.md (and JSON under $OUT).
`--narrow`: the narrow tables only (the events table and the wall clock
beside CuPy), about a minute.  `--calls`: the tables of calls alone (the
small ones, and sum / cumsum of 2^20 float32, float64 and int32 and a
1024 x 1024 transpose), to bench/results/calls-<gpu>-<date>.md.
"""
import statistics
import sys
import time

import numpy as np

import gpuprims
from gpuprims._bench import import_peer
from gpuprims._family import random_input

from benchlib import begin, save_results, wall_ms

N = 2**28
# The dtypes the kernels take directly, timed with events (gpuprims.compare);
# the others (converted on the way in, or read by a wider accumulator) by
# wall clock per call, 1 GiB of input each.
REDUCE_CASES = [("float32", "sum"), ("float64", "sum"), ("int32", "sum"), ("int64", "sum"),
                ("float64", "max"), ("int64", "min")]
WALL_CASES = [("float16", "sum"), ("int8", "sum"), ("uint8", "sum"), ("int16", "sum"), ("uint16", "sum"),
              ("bool", "sum"), ("uint32", "sum"), ("uint64", "sum"), ("int8", "max"), ("float16", "min")]
# The narrow inputs read without a conversion first (GP_NARROW_COMBOS), by
# events: % of the roof of their own bytes.
NARROW_SUMS = ["float32", "bool", "int8", "uint8", "int16", "uint16", "uint32", "uint64", "float16"]
NARROW_SIZES = [2**24, 2**28]
WALL_BYTES = 2**30
CALLS = 2000


def reduce_table(parts, data):
    variants = gpuprims.variants("reduce")
    auto = next(v.name for v in variants if v.auto)
    reproducible = [v.name for v in variants if getattr(v, "reproducible", False) and not v.batched
                    and not v.segmented]
    lines = [f"\n## Reductions of 2^28 elements, by dtype (auto = {auto})\n",
             "| dtype | op | result | variant | ms | GB/s | % roof | x CUB | ok |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    rows = []
    for dt, op in REDUCE_CASES:
        names = [auto, "cub"]
        if op == "sum" and dt in ("float32", "float64"):
            names = list(dict.fromkeys(names + reproducible + ["cub_reproducible"]))
        x = random_input(N, dt, seed=3)
        t = gpuprims.compare("reduce", x=x, op=op, variants=names, baselines=False, repeat=20, k=1)
        result = np.dtype(gpuprims._reduce.result_dtype(op, x.dtype)).name
        cub = next((r for r in t.rows if r["variant"] == "cub" and r.get("median_ms")), None)
        for r in t.rows:
            if not r.get("median_ms"):
                continue
            xc = cub["median_ms"] / r["median_ms"] if cub else None
            rows.append({"dtype": dt, "op": op, "result": result, **{k: r.get(k) for k in (
                "variant", "median_ms", "gbps", "roof_pct", "matches")}, "x_cub": xc})
            lines.append(f"| {dt} | {op} | {result} | {r['variant']} | {r['median_ms']:.4f} | "
                         f"{r['gbps']:.0f} | {r['roof_pct']:.1f} | "
                         f"{'' if xc is None else f'{xc:.2f}'} | {'yes' if r['matches'] else 'NO'} |")
            print(lines[-1], flush=True)
        del x
    parts.append("\n".join(lines))
    data["tables"].append({"title": "reductions by dtype", "rows": rows})


def narrow_table(parts, data):
    """Sums of the narrow dtypes by `auto`, timed by the core on a device
    array (_core.time: what compare runs for each row), the accumulator
    NumPy's (DtypePlan), beside a copy of the same bytes."""
    from gpuprims import _core
    from gpuprims._axes import DtypePlan
    from gpuprims._bench import FLUSH_L2_TIMES, _l2_bytes, copy_roof
    from gpuprims._family import DTYPE_CODES, op_code
    auto = next(v for v in gpuprims.variants("reduce") if v.auto)
    flush = FLUSH_L2_TIMES * _l2_bytes()
    lines = [f"\n## Narrow sums read as they are (auto = {auto.name}): CUDA events, L2 flushed\n",
             "GB/s = input bytes / median time; % roof: of a device-to-device copy of the same bytes "
             "(read + written) timed beside it.\n",
             "| n | dtype | result | ms | GB/s | % roof | ok |",
             "|---|---|---|---:|---:|---:|---|"]
    rows = []
    for n in NARROW_SIZES:
        for dt in NARROW_SUMS:
            x = random_input(n, dt, seed=7)
            d = gpuprims.to_device(x)
            plan = DtypePlan("sum", x.dtype)
            in_code, acc_code, _ = plan.codes(DTYPE_CODES)
            ms, value = _core.time("reduce", auto.index, d.ptr, None, (n, in_code, acc_code, op_code("sum")),
                                   3, 20, flush)
            med = statistics.median(ms)
            roof = copy_roof(x.nbytes // 2, warmup=3, repeat=20)
            got, want = plan.scalar(value), np.sum(x)
            ok = bool(np.isclose(float(got), float(np.sum(x, dtype=np.float64)), rtol=1e-3) if x.dtype.kind == "f"
                      else got == want) and np.asarray(got).dtype == np.asarray(want).dtype
            gbps = x.nbytes / (med * 1e-3) / 1e9
            pct = 100 * gbps / roof["gbps"]
            rows.append({"n": n, "dtype": dt, "result": want.dtype.name, "median_ms": med, "gbps": gbps,
                         "roof_gbps": roof["gbps"], "roof_pct": pct, "matches": ok})
            lines.append(f"| 2^{n.bit_length() - 1} | {dt} | {want.dtype.name} | {med:.4f} | {gbps:.0f} | "
                         f"{pct:.1f} | {'yes' if ok else 'NO'} |")
            print(lines[-1], flush=True)
            d = x = None
    parts.append("\n".join(lines))
    data["tables"].append({"title": "narrow sums, events", "rows": rows})


def wall_table(parts, data):
    """Dtypes outside compare's: gpuprims.sum/min/max(DeviceArray) by wall
    clock per call (the call returns when its kernels are done), 4x the L2
    of other data read before each, beside CuPy's same call followed by a
    synchronize."""
    from gpuprims._bench import FLUSH_L2_TIMES, _l2_bytes, copy_roof
    cp = import_peer("cupy")
    flush = gpuprims.to_device(np.ones(FLUSH_L2_TIMES * _l2_bytes(), np.uint8))  # see timed()
    lines = ["\n## Other dtypes, 1 GiB of input: wall clock per call (includes the call's host cost, "
             "~10-20 us)\n",
             "| dtype | op | result | gpuprims ms | GB/s | % roof | CuPy ms | x CuPy | ok |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    rows = []
    roof = copy_roof(WALL_BYTES // 2)
    for dt, op in WALL_CASES:
        x = random_input(WALL_BYTES // np.dtype(dt).itemsize, dt, seed=6)
        d = gpuprims.to_device(x)
        fn = getattr(gpuprims, op)

        def timed(f, sync=None):  # reading 4x the L2 of other data before each call evicts the input
            return wall_ms(f, 12, sync, pre=lambda: gpuprims.max(flush))

        ms = timed(lambda: fn(d))
        got, want = fn(d), getattr(np, op)(x)
        if x.dtype.kind == "f" and op == "sum":  # against the float64 sum, rounded to the result dtype
            ok = np.isclose(float(got), float(want.dtype.type(np.sum(x, dtype=np.float64))), rtol=1e-3)
        else:
            ok = got == want
        ok = bool(ok and np.asarray(got).dtype == np.asarray(want).dtype)
        c_ms = None
        if cp is not None:
            c = cp.asarray(x)
            c_ms = timed(lambda: getattr(c, op)(), cp.cuda.Device().synchronize)
            del c
        gbps = WALL_BYTES / (ms * 1e-3) / 1e9
        res = np.asarray(want).dtype.name
        rows.append({"dtype": dt, "op": op, "result": res, "ms": ms, "gbps": gbps,
                     "roof_pct": 100 * gbps / roof["gbps"], "cupy_ms": c_ms, "matches": ok})
        lines.append(f"| {dt} | {op} | {res} | {ms:.3f} | {gbps:.0f} | {100 * gbps / roof['gbps']:.1f} | "
                     + (f"{c_ms:.3f} | {c_ms / ms:.2f}" if c_ms else "- | -") + f" | {'yes' if ok else 'NO'} |")
        print(lines[-1], flush=True)
        d = x = None  # freed before the next dtype's gigabyte
    parts.append("\n".join(lines))
    data["tables"].append({"title": "other dtypes, wall clock", "rows": rows})


def per_call(fn, sync, calls=CALLS):
    """Median wall-clock microseconds of fn() followed by sync(), after 50
    such calls."""
    return 1e3 * wall_ms(fn, calls, sync, warmup=50)


def _peer_calls(cp, torch, op, x):
    """{peer: (call, sync)} of op ("sum", "cumsum", "transpose") on the
    peers' own device copies of x, as their users call them."""
    calls = {}
    if cp is not None:
        c = cp.asarray(x)
        f = {"sum": lambda: c.sum(), "cumsum": lambda: cp.cumsum(c),
             "transpose": lambda: cp.ascontiguousarray(c.T)}[op]
        calls["CuPy"] = (f, cp.cuda.Device().synchronize)
    if torch is not None:
        t = torch.as_tensor(x, device="cuda")
        f = {"sum": lambda: t.sum(), "cumsum": lambda: torch.cumsum(t, 0),
             "transpose": lambda: t.t().contiguous()}[op]
        calls["PyTorch"] = (f, torch.cuda.synchronize)
    return calls


def _gp_calls(op, x):
    """gpuprims' op on a DeviceArray copy of x, and the same with out= (the
    result's memory made once, outside the timed calls)."""
    d = gpuprims.to_device(x)
    f = {"sum": gpuprims.sum, "cumsum": gpuprims.cumsum, "transpose": gpuprims.transpose}[op]
    want = np.asarray(getattr(np, op)(x[:2, :2] if op == "transpose" else x[:2]))
    shape = x.shape[::-1] if op == "transpose" else (() if op == "sum" else x.shape)
    out = gpuprims.DeviceArray(shape, want.dtype)
    return (lambda: f(d)), (lambda: f(d, out=out))


# The small calls: (label, op, shape, dtype).  The set (2^20 sums and
# cumsums of float32, float64 and int32; a 1024^2 transpose) after the
# host-cost ones (2^10, 32 x 32).
SMALL_CALLS = [("sum, 2^10 float32", "sum", (2**10,), "float32"),
               ("cumsum, 2^10 float32", "cumsum", (2**10,), "float32"),
               ("transpose, 32 x 32 float32", "transpose", (32, 32), "float32")]
CALLS_2_20 = [(f"{op}, 2^20 {dt}", op, (2**20,), dt) for op in ("sum", "cumsum")
              for dt in ("float32", "float64", "int32")] + \
             [("transpose, 1024 x 1024 float32", "transpose", (1024, 1024), "float32")]


def overhead_table(parts, data, cases=SMALL_CALLS, title="Host cost of a small call on device arrays"):
    cp, torch = import_peer("cupy"), import_peer("torch")
    none = lambda: None  # noqa: E731 - gpuprims calls return when their work is done
    names = [n for n, lib in (("CuPy", cp), ("PyTorch", torch)) if lib is not None]
    lines = [f"\n## {title} (wall-clock per call, us)\n",
             f"Medians of {CALLS} calls, each waited for (gpuprims returns when its work is done; "
             "CuPy and PyTorch are followed by a device synchronize); `out=`: gpuprims writing into "
             "a DeviceArray made once. `x best`: the fastest peer's time / gpuprims'.\n",
             "| " + " | ".join(["call", "gpuprims", "gpuprims out="] + names + ["x best"]) + " |",
             "|---|---:|---:|" + "---:|" * len(names) + "---:|"]
    out = []
    for seed, (label, op, shape, dtype) in enumerate(cases):
        x = random_input(shape, dtype, seed=4 + seed)
        plain, into = _gp_calls(op, x)
        g, g_out = per_call(plain, none), per_call(into, none)
        peers = _peer_calls(cp, torch, op, x)
        others = {n: per_call(*peers[n]) for n in names}
        best = min(others.values()) / g if others else None
        out.append({"call": label, "gpuprims_us": g, "gpuprims_out_us": g_out,
                    **{f"{n}_us": t for n, t in others.items()}, "x_best": best})
        cells = [label, f"{g:.1f}", f"{g_out:.1f}"] + [f"{others[n]:.1f}" for n in names] + \
            ["" if best is None else f"{best:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    parts.append("\n".join(lines))
    data["tables"].append({"title": title, "rows": out})
    print(parts[-1], flush=True)


def main():
    t0 = time.perf_counter()
    info, date, parts, data = begin(
        "Every dtype at the roof; the cost of a small call",
        "reductions: CUDA events around the kernels only (gpuprims.compare), 3 warm-up runs, "
        "median of 20 timed runs, a buffer of 4x the L2 overwritten and the output poisoned "
        "before each run; GB/s = input bytes / median time; the roof is a device-to-device copy "
        "of the same bytes in the same call; every result checked against NumPy. Small calls: "
        "wall-clock (time.perf_counter) per call including the wait for its result.")
    narrow_only = "--narrow" in sys.argv[1:]
    if "--calls" in sys.argv[1:]:  # the small calls alone
        overhead_table(parts, data)
        overhead_table(parts, data, CALLS_2_20, "Calls of 2^20 elements on device arrays")
        return save_results("calls", info, date, parts, data)
    if not narrow_only:
        reduce_table(parts, data)
    narrow_table(parts, data)
    wall_table(parts, data)
    if not narrow_only:
        overhead_table(parts, data)
        overhead_table(parts, data, CALLS_2_20, "Calls of 2^20 elements on device arrays")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    # the narrow tables alone go to a file of their own, beside the whole script's
    return save_results("dtypes-narrow" if narrow_only else "dtypes", info, date, parts, data)


if __name__ == "__main__":
    sys.exit(main())
