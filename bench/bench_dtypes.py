"""Every dtype against the roof, and what a small call costs (run on the GPU
machine, one run, about 3 minutes).

1. Reductions of 2^24 and 2^28 elements of the kernels' own dtypes
   (float32/64, int32/64; sum, and min/max): `auto`, CUB's DeviceReduce
   and, for float sums, the gpu_to_gpu rows, timed with gpuprims.compare (CUDA events around
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
   calls, beside CuPy's, PyTorch's and NVIDIA's cuda.compute's (the
   cuda-cccl package: its one-shot functions and its prebuilt objects) same
   calls on the same data when they are installed; then the same for sum
   and cumsum of 2^20 float32, float64 and int32 and a 1024 x 1024
   transpose, by wall clock and by CUDA events around each call (its device
   side: events_table).  gpuprims with and without out=.

Writes bench/results/dtypes-<gpu>-<date>.md (and JSON under $OUT).
`--narrow`: the narrow tables only (the events table and the wall clock
beside CuPy), about a minute.  `--reduce`: the reductions of the kernels'
own dtypes alone, to bench/results/dtypes-reduce-<gpu>-<date>.md.  `--calls`: the tables of calls alone (the
small ones, and sum / cumsum of 2^20 float32, float64 and int32 and a
1024 x 1024 transpose, wall clock and events), to
bench/results/calls-<gpu>-<date>.md.
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
REDUCE_SIZES = [2**24, 2**28]  # the issue's sizes for the kernels' own dtypes
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
    for n in REDUCE_SIZES:
        lines = [f"\n## Reductions of 2^{n.bit_length() - 1} elements, by dtype (auto = {auto})\n",
                 "| dtype | op | result | variant | ms | GB/s | % roof | x CUB | ok |",
                 "|---|---|---|---|---:|---:|---:|---:|---|"]
        rows = []
        for dt, op in REDUCE_CASES:
            names = [auto, "cub"]
            if op == "sum" and dt in ("float32", "float64"):
                names = list(dict.fromkeys(names + reproducible + ["cub_reproducible"]))
            x = random_input(n, dt, seed=3)
            t = gpuprims.compare("reduce", x=x, op=op, variants=names, baselines=False, repeat=20, k=1)
            result = np.dtype(gpuprims._reduce.result_dtype(op, x.dtype)).name
            cub = next((r for r in t.rows if r["variant"] == "cub" and r.get("median_ms")), None)
            for r in t.rows:
                if not r.get("median_ms"):
                    continue
                xc = cub["median_ms"] / r["median_ms"] if cub else None
                rows.append({"n": n, "dtype": dt, "op": op, "result": result, **{k: r.get(k) for k in (
                    "variant", "median_ms", "gbps", "roof_pct", "matches")}, "x_cub": xc})
                lines.append(f"| {dt} | {op} | {result} | {r['variant']} | {r['median_ms']:.4f} | "
                             f"{r['gbps']:.0f} | {r['roof_pct']:.1f} | "
                             f"{'' if xc is None else f'{xc:.2f}'} | {'yes' if r['matches'] else 'NO'} |")
                print(lines[-1], flush=True)
            del x
        parts.append("\n".join(lines))
        data["tables"].append({"title": f"reductions of {n} elements by dtype", "rows": rows})


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


def _cuda_compute_calls(cc, cp, op, x):
    """NVIDIA's cuda.compute (the cuda-cccl package) on a CuPy copy of x, as
    its documentation calls it: {"cuda.compute": (call, sync)} - the
    one-shot function (reduce_into / inclusive_scan: it builds or finds the
    algorithm, sizes and allocates its temporary storage, runs), the result
    array made in the call - and {"prebuilt": (call, sync)}: the object of
    make_reduce_into / make_inclusive_scan, called with temporary storage and
    result made once (the `out=` of its API).  Sums accumulate in NumPy's
    result dtype (h_init / init_value of that dtype: int32 into int64).  It
    has no transpose: {} then, as without CuPy or cuda.compute.  Each call's
    result is checked against NumPy once, after a first call."""
    if cc is None or cp is None or op == "transpose":
        return {}
    c = cp.asarray(x)
    n = x.size
    acc = (np.sum(x[:1]) if op == "sum" else np.cumsum(x[:1])).dtype
    exact = acc.kind in "iu"
    want = (np.sum if op == "sum" else np.cumsum)(x, dtype=acc if exact else np.float64)
    init = np.zeros(1, acc)
    plus = cc.OpKind.PLUS
    size = 1 if op == "sum" else n
    out = cp.empty(size, acc)
    if op == "sum":
        def one_shot():
            o = cp.empty(1, acc)
            cc.reduce_into(d_in=c, d_out=o, num_items=n, op=plus, h_init=init)
            return o
        algo = cc.make_reduce_into(d_in=c, d_out=out, op=plus, h_init=init)
        run = lambda tmp: algo(temp_storage=tmp, d_in=c, d_out=out, num_items=n, op=plus,  # noqa: E731
                               h_init=init)
    else:
        def one_shot():
            o = cp.empty(n, acc)
            cc.inclusive_scan(d_in=c, d_out=o, op=plus, init_value=init, num_items=n)
            return o
        algo = cc.make_inclusive_scan(d_in=c, d_out=out, op=plus, init_value=init)
        run = lambda tmp: algo(temp_storage=tmp, d_in=c, d_out=out, op=plus,  # noqa: E731
                               init_value=init, num_items=n)
    tmp = cp.empty(max(int(run(None)), 1), np.uint8)
    sync = cp.cuda.Device().synchronize
    for label, got in (("cuda.compute", one_shot), ("prebuilt", lambda: (run(tmp), out)[1])):
        r = cp.asnumpy(got()).reshape(np.shape(want))
        # integers exact; floats within 1e-5 of the sum of |x| (a float32 sum
        # or scan of 2^20 errs by about eps * log2(n) = 1.2e-6 of it)
        if exact:
            ok = np.array_equal(r, want)
        else:
            ok = np.all(np.abs(r - want) <= 1e-5 * np.sum(np.abs(x), dtype=np.float64))
        if not ok:
            raise AssertionError(f"cuda.compute {label} {op} of {x.dtype} differs from NumPy's")
    return {"cuda.compute": (one_shot, sync), "prebuilt": (lambda: run(tmp), sync)}


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


def _libraries():
    """CuPy, PyTorch and cuda.compute where they import with a GPU (None
    where not), and the column names of the peers found."""
    cp, torch, cc = import_peer("cupy"), import_peer("torch"), import_peer("cuda.compute")
    names = [n for n, lib in (("CuPy", cp), ("PyTorch", torch)) if lib is not None]
    if cc is not None and cp is not None:
        names += ["cuda.compute", "prebuilt"]
    return cp, torch, cc, names


def _versions(cp, torch, cc):
    """The peers' versions, for a table's text."""
    from importlib.metadata import version
    found = [f"CuPy {cp.__version__}" if cp else "", f"PyTorch {torch.__version__}" if torch else "",
             f"cuda.compute of cuda-cccl {version('cuda-cccl')}" if cc and cp else ""]
    return "Peers: " + (", ".join(v for v in found if v) or "none installed") + ". "


def _all_calls(cp, torch, cc, op, x):
    """{column: (call, sync)}: gpuprims (its calls return when their work is
    done: no sync), gpuprims with out=, and the peers."""
    none = lambda: None  # noqa: E731
    plain, into = _gp_calls(op, x)
    return {"gpuprims": (plain, none), "out=": (into, none), **_other_calls(cp, torch, cc, op, x)}


def _other_calls(cp, torch, cc, op, x):
    """{column: (call, sync)} of the peers: CuPy, PyTorch, cuda.compute."""
    try:
        nvidia = _cuda_compute_calls(cc, cp, op, x)
    except Exception as e:  # a version whose API differs: its columns stay empty, the reason printed
        print(f"cuda.compute, {op} of {x.dtype}: {type(e).__name__}: {e}", flush=True)
        nvidia = {}
    return {**_peer_calls(cp, torch, op, x), **nvidia}


def _ratios(t, into="out="):
    """x best: the fastest one-shot peer's time over gpuprims' (CuPy,
    PyTorch, cuda.compute's one-shot function); x prebuilt: cuda.compute's
    prebuilt object's time over gpuprims' column `into` (with out=: both
    write into memory made once)."""
    one_shot = [t[n] for n in ("CuPy", "PyTorch", "cuda.compute") if n in t]
    best = min(one_shot) / t["gpuprims"] if one_shot and "gpuprims" in t else None
    pre = t["prebuilt"] / t[into] if "prebuilt" in t and into in t else None
    return best, pre


def _table(parts, data, title, intro, names, rows, events=False):
    """A table of calls: gpuprims' columns (with and without out=; one
    column for events, where both run the same launches), then `names`."""
    mine = ["gpuprims"] if events else ["gpuprims", "out="]
    cols = mine + names
    heads = ["gpuprims"] if events else ["gpuprims", "gpuprims out="]
    lines = [f"\n## {title}\n", intro,
             "| " + " | ".join(["call"] + heads + names + ["x best", "x prebuilt"]) + " |",
             "|---|" + "---:|" * (len(cols) + 2)]
    for r in rows:
        t = r["us"]
        best, pre = _ratios(t, mine[-1])
        r.update(x_best=best, x_prebuilt=pre)
        cells = [r["call"]] + [f"{t[c]:.1f}" if c in t else "-" for c in cols] + \
            ["" if v is None else f"{v:.2f}" for v in (best, pre)]
        lines.append("| " + " | ".join(cells) + " |")
    parts.append("\n".join(lines))
    data["tables"].append({"title": title, "rows": rows})
    print(parts[-1], flush=True)


COLUMNS = ("`out=`: gpuprims writing into a DeviceArray made once; `cuda.compute`: its one-shot function "
           "(reduce_into / inclusive_scan, the result made in the call); `prebuilt`: its make_reduce_into / "
           "make_inclusive_scan object with temporary storage and result made once. `x best`: the fastest "
           "one-shot peer's time / gpuprims'; `x prebuilt`: prebuilt's time / gpuprims' with out= (in the events "
           "table, where both would time the same launches, / gpuprims').\n")


def overhead_table(parts, data, cases=SMALL_CALLS, title="Host cost of a small call on device arrays"):
    cp, torch, cc, names = _libraries()
    rows = []
    for seed, (label, op, shape, dtype) in enumerate(cases):
        x = random_input(shape, dtype, seed=4 + seed)
        calls = _all_calls(cp, torch, cc, op, x)
        rows.append({"call": label, "us": {n: per_call(*c) for n, c in calls.items()}})
    _table(parts, data, f"{title} (wall-clock per call, us)",
           f"Medians of {CALLS} calls, each waited for (gpuprims returns when its work is done; the peers are "
           "followed by a device synchronize). " + _versions(cp, torch, cc) + COLUMNS, names, rows)


# A kernel that holds its stream for `ns` nanoseconds: queued before a call,
# it keeps the GPU busy while the host makes the call, so that the events
# around the call time its device work and not its host work.
_HOLD = r"""extern "C" __global__ void hold(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}"""
HOLD_NS = 1_000_000
EVENT_CALLS = 100


def device_us(cp, fn, flush, hold):
    """Median microseconds between two CUDA events recorded on the legacy
    default stream (the peers' stream) around fn(), each call after a write
    of `flush` (4x the L2: the input leaves the L2) and a kernel that holds
    the stream for HOLD_NS, queued before the first event: the host makes
    the call while the GPU waits, so the interval is the call's work on the
    GPU.  A call whose host side took more than half the hold is left out
    (its interval would hold host time); None where most were."""
    stream = cp.cuda.Stream.null
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for i in range(EVENT_CALLS + 5):
        with stream:
            flush.fill(i & 0xff)
            hold((1,), (1,), (np.uint64(HOLD_NS),))
        start.record(stream)
        t0 = time.perf_counter()
        fn()
        host_ns = 1e9 * (time.perf_counter() - t0)
        end.record(stream)
        end.synchronize()
        if i >= 5 and host_ns < HOLD_NS / 2:
            times.append(1e3 * cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times) if len(times) > EVENT_CALLS // 2 else None


# gpuprims.compare's rows for a call: the family, and the rows beside auto.
_COMPARED = {"sum": ("reduce", ["auto", "cub"]), "cumsum": ("scan", ["auto", "cub"]),
             "transpose": ("transpose", ["auto", "cublas"])}


def events_table(parts, data, cases=CALLS_2_20):
    """The calls' device side, CUDA events: gpuprims' `auto` and the C
    library rows (CUB, cuBLAS) as gpuprims.compare times them (events
    around the launches, L2 overwritten before each); the peers' calls by
    device_us.  (A gpuprims call returns when its work is done, so events
    around it from outside would hold its host time: compare times the same
    launches the call makes.)"""
    cp, torch, cc, names = _libraries()
    if cp is None:
        return
    from gpuprims._bench import FLUSH_L2_TIMES, _l2_bytes
    flush = cp.empty(FLUSH_L2_TIMES * _l2_bytes(), np.uint8)
    hold = cp.RawKernel(_HOLD, "hold")
    rows = []
    for seed, (label, op, shape, dtype) in enumerate(cases):
        x = random_input(shape, dtype, seed=4 + seed)
        family, compared = _COMPARED[op]
        t = gpuprims.compare(family, x=x, variants=compared, baselines=False, repeat=EVENT_CALLS, k=1)
        auto = next(v.name for v in gpuprims.variants(family) if v.auto)
        timed = {r["variant"]: r for r in t.rows if r.get("median_ms")}
        us = {col: 1e3 * timed[name]["median_ms"] for col, name in (("gpuprims", auto), ("library", compared[1]))
              if name in timed}
        ok = all(timed[name].get("matches") is not False for name in (auto, compared[1]) if name in timed)
        for n, (f, _) in _other_calls(cp, torch, cc, op, x).items():
            v = device_us(cp, f, flush, hold)
            if v is not None:
                us[n] = v
        rows.append({"call": label, "us": us, "gpuprims_matches": ok})
    _table(parts, data, "Calls of 2^20 elements: device time per call (CUDA events, us)",
           f"Medians of {EVENT_CALLS} runs. gpuprims (`auto`) and `library` (CUB's DeviceReduce / DeviceScan "
           f"from the build's CCCL, cuBLAS geam for the transpose) as gpuprims.compare times them: events "
           f"around the launches, {FLUSH_L2_TIMES}x the L2 overwritten before each. The peers: events on "
           f"the legacy default stream around the call as their users make it, after a write of "
           f"{FLUSH_L2_TIMES}x the L2 and a kernel holding the stream for {HOLD_NS // 1000} us, so the host "
           "makes the call while the GPU waits and the interval is the call's work on the GPU. "
           + _versions(cp, torch, cc) + COLUMNS, ["library"] + names, rows, events=True)


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
    if "--reduce" in sys.argv[1:]:  # the kernels' own dtypes alone, at 2^24 and 2^28
        reduce_table(parts, data)
        return save_results("dtypes-reduce", info, date, parts, data)
    if "--calls" in sys.argv[1:]:  # the small calls alone
        overhead_table(parts, data)
        overhead_table(parts, data, CALLS_2_20, "Calls of 2^20 elements on device arrays")
        events_table(parts, data)
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
