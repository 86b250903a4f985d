"""The scan benchmark (run on the GPU machine).

Times every variant, float32 inclusive sum, at n = 2^28, 2^24, 2^20 and
2048 (where the single-block variants fit) against CUB, the copy roof and
NumPy, in this one run.  Then the batched and segmented section: every row
flagged batched or segmented, on cumsum along axis=-1 and axis=0 of float32
C arrays (2^24, 4), (2^20, 64), (2^14, 2^14), (64, 2^20), (4, 2^24) against
CuPy's cumsum(x, axis) where CuPy is importable, and on segmented inclusive
sums of 2^26 float32 with random segment lengths of mean 4, 64, 1024 and
65536.  Writes bench/results/scan-<gpu>-<date>.md (and a copy under $OUT).

    python bench/bench_scan.py              # both sections
    python bench/bench_scan.py batched      # the batched and segmented section only
    python bench/bench_scan.py batched --rows segmented_adaptive,batched_columns   # only those rows
    python bench/bench_scan.py batched --cases "(64, 1048576) axis=-1|segments"    # only the cases whose title has one of these
    python bench/bench_scan.py --dry        # the batched section on the emulator, tiny shapes, no times
    python bench/bench_scan.py wide         # 8-byte accumulators: decoupled_lookback, cub, cub_deterministic
    python bench/bench_scan.py wide --dtype float64,int32   # the same for some input dtypes
    python bench/bench_scan.py g2g          # gpu_to_gpu: decoupled_lookback_reproducible vs the run-to-run rows
    python bench/bench_scan.py g2g --dtype float32 --sizes 24,28   # some dtypes and sizes (2^24, 2^28)

The `wide` and `g2g` sections write their file after each table (marked
as a run that has not finished until the last), so that a run stopped by a
time limit still leaves the tables it has.

The `wide` section times the look-back scan against both CUB baselines (the
default scan and the run-to-run deterministic one) for inputs whose sums
accumulate in 8 bytes: float64, int64 and int32 (NumPy's cumsum of int32 is
int64), inclusive sums at n = 2^20, 2^24, 2^28, with the copy roof of the
same bytes (input read + output written) from the same run.  Writes
bench/results/scan-wide-<gpu>-<date>.md.

The `g2g` section times the reproducible scan (determinism="gpu_to_gpu":
every element the reproducible sum of its prefix) against the run-to-run
rows it is measured by - decoupled_lookback (what auto runs) and CUB's
run-to-run deterministic scan - and CUB's default scan, float32 and
float64 inclusive sums at n = 2^20, 2^24, 2^28.  Writes
bench/results/scan-g2g-<gpu>-<date>.md.
"""
import json
import sys
import time

import numpy as np

import gpuprims
from gpuprims import _axes, _core
from gpuprims._bench import FLUSH_L2_TIMES, PeerTimer, copy_roof, import_peer

from benchlib import begin, journey_tables, save_progress, save_results

SIZES = [2**28, 2**24, 2**20, 2048]
SHAPES = [(2**24, 4), (2**20, 64), (2**14, 2**14), (64, 2**20), (4, 2**24)]
SEGMENT_MEANS = [4, 64, 1024, 65536]
SEGMENTED_N = 2**26
REPEAT, WARMUP = 10, 2
SLOW_MS = 200  # a variant whose first run takes longer is shown with that run only
WIDE_DTYPES = ["float64", "int64", "int32"]  # sums that accumulate in 8 bytes (int32: NumPy's int64 cumsum)
WIDE_SIZES = [2**20, 2**24, 2**28]
WIDE_ROWS = ["decoupled_lookback", "cub", "cub_deterministic"]
G2G_DTYPES = ["float32", "float64"]
G2G_ROWS = ["decoupled_lookback_reproducible", "decoupled_lookback", "cub_deterministic", "cub"]


def one_d_rows():
    """The 1-D journey: the rows that take one array (the batched and
    segmented rows, given one long problem, would run it on one thread,
    warp or block)."""
    return [v.name for v in gpuprims.variants("scan") if not (v.batched or v.segmented)]


# -------------------------------------------------- batched and segmented

def layout_of(shape, axis):
    """gp_batch's (outer, n, inner, s_outer, s_n, s_inner, offsets) of a
    C-contiguous 2-D array along axis."""
    a, b = shape
    return (a, b, 1, b, 1, 0, 0) if axis in (-1, 1) else (1, a, b, a * b, b, 1, 0)


def segment_offsets(total, mean, rng):
    """Random lengths, uniform in [0, 2 mean] (empty segments included), cut
    to `total` elements: int64 offsets from 0 to total."""
    lengths = rng.integers(0, 2 * mean + 1, size=int(2 * total / max(mean, 1)) + 16)
    ends = np.cumsum(lengths)
    ends = ends[ends < total]
    return np.concatenate([[0], ends, [total]]).astype(np.int64)


def check(got, ref, bound, n):
    """(ok, worst error in units of eps * the prefix's sum of |x|): the
    bound of gpuprims._numerics.scan_tolerance."""
    eps = float(np.finfo(np.float32).eps)
    err = np.abs(got.astype(np.float64) - ref) / (eps * np.maximum(bound, 1e-30))
    worst = float(np.max(err)) if err.size else 0.0
    limit = 2 * np.ceil(np.log2(max(n, 2))) + 33
    return bool(worst <= limit and np.all(np.isfinite(got))), worst


def reference(x, axis, offsets=None):
    """(cumulative sum, cumulative sum of |x|) in the output's C order,
    restarting at every segment start.  Segments are summed over the whole
    array in long double and each segment's start subtracted: the
    cancellation stays far below float32's rounding."""
    if offsets is None:
        x64 = x.astype(np.float64)
        return np.cumsum(x64, axis=axis).ravel(), np.cumsum(np.abs(x64), axis=axis).ravel()
    xl = x.astype(np.longdouble)
    ref, bound = np.cumsum(xl), np.cumsum(np.abs(xl))
    start = offsets[np.searchsorted(offsets, np.arange(x.size), side="right") - 1]  # each element's segment
    has = start > 0
    ref[has] -= ref[start[has] - 1]
    bound[has] -= bound[start[has] - 1]
    return ref.astype(np.float64), bound.astype(np.float64)


class Timer:
    """Times a batched or segmented call of a registry row on device
    buffers (gpuprims._core.time: CUDA events, L2 flushed, output poisoned);
    with dry=True (the emulator) runs it once, untimed."""

    def __init__(self, dry):
        self.dry = dry
        self.flush = 0 if dry else FLUSH_L2_TIMES * int(_core.device_info()["l2_cache_bytes"])
        self.codes = list(_core.dtypes()), list(_core.ops())

    def params(self, total, layout):
        dt, ops = self.codes
        return (total, dt.index("float32"), dt.index("float32"), ops.index("sum"), True, layout)

    def run(self, v, d_in, d_out, total, layout):
        """(median ms or None, first-run ms or None, note)."""
        p = self.params(total, layout)
        if self.dry:
            _core.call("scan", v.index, d_in.ptr, d_out.ptr, p)
            return None, None, "dry run"
        first, _ = _core.time("scan", v.index, d_in.ptr, d_out.ptr, p, 0, 1, self.flush)
        if first[0] > SLOW_MS:
            return None, first[0], f"one run: {first[0]:.1f} ms (over {SLOW_MS} ms, not repeated)"
        ms, _ = _core.time("scan", v.index, d_in.ptr, d_out.ptr, p, WARMUP, REPEAT, self.flush)
        return float(np.median(ms)), first[0], ""


def cupy_cumsum_ms(x, axis, flush):
    """Median ms of cupy.cumsum(x, axis) with CUDA events (gpuprims._bench's
    PeerTimer: the L2 flushed before each run where flush > 0), or (None,
    why) where CuPy is missing or fails."""
    cupy = import_peer("cupy")
    if cupy is None:
        return None, "no CuPy (or no GPU for it)"

    def timed():  # CuPy's arrays die with this frame, before the pool is emptied
        d, last = cupy.asarray(x), {}

        def run():
            last["y"] = cupy.cumsum(d, axis=axis)

        timer = PeerTimer(cupy, int(_core.device_info()["l2_cache_bytes"]), flush=flush > 0)
        times = timer(run, REPEAT, WARMUP)
        y = last["y"]
        return times, np.allclose(cupy.asnumpy(y[-1] if y.ndim else y),
                                  np.cumsum(x.astype(np.float64), axis=axis)[-1],
                                  rtol=1e-3, atol=1e-2 * np.sqrt(x.shape[axis]))

    try:
        times, ok = timed()
        cupy.get_default_memory_pool().free_all_blocks()
        return float(np.median(times)), "" if ok else "CuPy's result differs"
    except Exception as e:  # noqa: BLE001 - report, do not stop the benchmark
        return None, f"CuPy failed: {type(e).__name__}: {e}"[:120]


def batched_section(parts, data, dry=False, only=None, cases_only=None):
    rows_v = [v for v in gpuprims.variants("scan") if (v.batched or v.segmented) and (not only or v.name in only)]
    timer = Timer(dry)
    shapes = [(64, 4), (16, 64), (128, 128), (4, 1024), (2, 4096)] if dry else SHAPES
    means = [4, 64, 1024] if dry else SEGMENT_MEANS
    seg_n = 2**14 if dry else SEGMENTED_N
    parts.append("\n## Batched and segmented scans (float32 inclusive sum)\n\n"
                 "Each row flagged batched or segmented, called with the layout of the shape and axis "
                 "(gp_batch: outer x n x inner problems of a C array; segments by int64 offsets). CUDA "
                 f"events around the kernels, {WARMUP} warm-up runs, median of {REPEAT}, a buffer of "
                 f"{FLUSH_L2_TIMES}x the L2 overwritten before each. GB/s = (bytes read + bytes written) "
                 "/ median, the offsets of segmented rows included (8 bytes a segment, as the reduction "
                 "benchmark counts them); % roof against the GB/s of a device-to-device copy of the "
                 "data in this run; `x CuPy` = cupy.cumsum(x, axis)'s median / the row's. `err` in "
                 "units of eps x the prefix's sum of |x|.\n")
    cases = [(f"({s[0]}, {s[1]}) axis={ax}", s, ax, None) for s in shapes for ax in (-1, 0)]
    cases += [(f"segments of mean length {m}, n = 2^{seg_n.bit_length() - 1}", (seg_n,), None, m) for m in means]
    # Each case draws from a generator of its own (seeded by its place in the
    # whole list), so its data and segment lengths do not depend on which
    # other cases run (--cases).
    cases = [(k,) + c for k, c in enumerate(cases)]
    if cases_only:
        cases = [c for c in cases if any(part in c[1] for part in cases_only)]
    for k, title, shape, axis, mean in cases:
        rng = np.random.default_rng((15, k))
        t0 = time.time()
        total = int(np.prod(shape))
        x = rng.random(total, dtype=np.float32).reshape(shape) * 2 - 1
        nbytes = 2 * x.nbytes
        offsets = None
        extra = ""
        if mean is not None:
            offsets = segment_offsets(total, mean, rng)
            d_offs = gpuprims.to_device(offsets)
            # checked as gpuprims.cumsum(x, segments=offsets) checks them: the
            # layout carries the longest segment's length, as the library's
            plan = _axes.DtypePlan("sum", x.dtype, None, "cumsum")
            segs = _axes.segment_offsets(offsets, (total,), None, plan, "cumsum",
                                         "the segments of a scan must cover the data")
            layout = segs.layout(total, d_offs.ptr)
            extra = f", {offsets.size - 1} segments, offsets {offsets.nbytes / 2**20:.1f} MiB"
            nbytes += offsets.nbytes
            ref, bound = reference(x, None, offsets)
        else:
            layout = layout_of(shape, axis)
            ref, bound = reference(x, axis)
        d_in = gpuprims.to_device(x)
        d_out = gpuprims.to_device(np.empty(total, np.float32))
        roof = None if dry else copy_roof(x.nbytes, warmup=WARMUP, repeat=REPEAT)
        cupy_ms, cupy_note = (None, "segments: CuPy has no segmented cumsum") if mean is not None else \
            ((None, "dry run") if dry else cupy_cumsum_ms(x, axis, timer.flush))
        lines = [f"\n### {title}{extra}\n",
                 "| variant | ms | GB/s | % roof | x CuPy | err | ok | note |",
                 "|:--|--:|--:|--:|--:|--:|:--|:--|"]
        table = {"case": title, "shape": list(shape), "axis": axis, "segment_mean": mean, "bytes": nbytes,
                 "roof_gbps": roof and roof["gbps"], "cupy_ms": cupy_ms, "rows": []}
        for v in rows_v:
            if mean is not None and not v.segmented or mean is None and not v.batched:
                continue
            if dry:  # the timed runs poison the output themselves
                d_out = gpuprims.to_device(np.full(total, np.nan, np.float32))
            ms, first, note = timer.run(v, d_in, d_out, total, layout)
            ok, err = check(d_out.get(), ref, bound, total)
            gbps = nbytes / (ms * 1e-3) / 1e9 if ms else None
            pct = 100 * gbps / roof["gbps"] if gbps and roof else None
            xc = cupy_ms / ms if ms and cupy_ms else None
            fmt = lambda val, f: "" if val is None else format(val, f)  # noqa: E731
            lines.append(f"| {v.name}{' (auto)' if v.auto_batched else ''} | {fmt(ms, '.4f')} | "
                         f"{fmt(gbps, '.0f')} | {fmt(pct, '.1f')} | {fmt(xc, '.2f')} | {err:.3g} | "
                         f"{'yes' if ok else 'NO'} | {note} |")
            table["rows"].append({"variant": v.name, "median_ms": ms, "first_ms": first, "gbps": gbps,
                                  "roof_pct": pct, "x_cupy": xc, "err": err, "matches": ok, "note": note})
        if roof:
            lines.append(f"| copy roof | {roof['median_ms']:.4f} | {roof['gbps']:.0f} | 100.0 | | | | |")
        if mean is None:
            lines.append(f"| cupy.cumsum | {'' if cupy_ms is None else format(cupy_ms, '.4f')} | "
                         f"{'' if not cupy_ms else format(nbytes / (cupy_ms * 1e-3) / 1e9, '.0f')} | "
                         f"{'' if not (cupy_ms and roof) else format(100 * nbytes / (cupy_ms * 1e-3) / 1e9 / roof['gbps'], '.1f')}"
                         f" | 1.00 | | | {cupy_note} |")
        parts.append("\n".join(lines))
        data["tables"].append(table)
        print(parts[-1], f"\n({time.time() - t0:.1f} s)", flush=True)
        del d_in, d_out


def sized_tables(parts, data, dtypes, rows, title, sizes=WIDE_SIZES, progress=None):
    """`rows` for each dtype and size in `sizes`, each table titled
    title(dtype, n) and the copy roof of the same bytes; progress() after
    each table."""
    for dtype in dtypes:
        for n in sizes:
            t = gpuprims.compare("scan", n=n, dtype=dtype, op="sum", variants=rows, baselines=False,
                                 repeat=30, k=3)
            roof_ms = t.meta["bytes"] / (t.meta["roof_gbps"] * 1e9) * 1e3
            t.title = (f"\n## {title(dtype, n)}, n = 2^{n.bit_length() - 1} "
                       f"(copy roof {roof_ms:.4f} ms, {t.meta['roof_gbps']:.0f} GB/s)")
            parts.append(t.to_markdown())
            data["tables"].append(json.loads(t.to_json()))
            print(parts[-1], flush=True)
            if progress is not None:
                progress()


def wide_section(parts, data, dtypes, sizes=WIDE_SIZES, progress=None):
    """8-byte accumulators: WIDE_ROWS for each dtype and size, with the copy
    roof of the same bytes (meta roof_gbps) in each table."""
    sized_tables(parts, data, dtypes, WIDE_ROWS,
                 lambda dtype, n: f"{dtype} -> {np.cumsum(np.zeros(1, dtype)).dtype.name} inclusive sum", sizes,
                 progress)


def g2g_section(parts, data, dtypes=G2G_DTYPES, sizes=WIDE_SIZES, progress=None):
    """gpu_to_gpu against run_to_run: G2G_ROWS for each dtype and size,
    with the copy roof of the same bytes."""
    sized_tables(parts, data, dtypes, G2G_ROWS,
                 lambda dtype, n: f"{dtype} inclusive sum, gpu_to_gpu vs run_to_run", sizes, progress)


def main(argv):
    dry = "--dry" in argv
    if dry:
        gpuprims.set_backend("emulator")
        parts, data = ["# Scan benchmark (dry run on the emulator: no times)"], {"tables": []}
        batched_section(parts, data, dry=True)
        bad = [r["variant"] for t in data["tables"] for r in t["rows"] if not r["matches"]]
        print("MISMATCH:", bad) if bad else print("dry run: every result matches")
        return 1 if bad else 0
    info, date, parts, data = begin(
        "Scan benchmark",
        "CUDA events around the variant's kernels only (gpuprims.compare), 3 warm-up "
        "runs, median of 30 timed runs, a buffer of 4x the L2 overwritten and the output "
        "poisoned before each run. GB/s = (input bytes + output bytes) / median time; the "
        "roof is a device-to-device copy moving the same bytes in this run. `x CUB` = "
        "cub::DeviceScan's median time / the row's. Every output compared with a float64 "
        "cumulative sum (error in ULPs of the prefix's sum of |x|); `distinct` = different "
        "results over 3 more runs.")
    if "g2g" in argv or "wide" in argv:
        g2g = "g2g" in argv
        family = "scan-g2g" if g2g else "scan-wide"
        dtypes = G2G_DTYPES if g2g else WIDE_DTYPES
        if "--dtype" in argv:
            dtypes = argv[argv.index("--dtype") + 1].split(",")
        sizes = WIDE_SIZES  # --sizes 20,24: powers of two
        if "--sizes" in argv:
            sizes = [2**int(k) for k in argv[argv.index("--sizes") + 1].split(",")]
        path = None

        def progress():
            nonlocal path
            path = save_progress(family, info, date, parts, data, path)

        (g2g_section if g2g else wide_section)(parts, data, dtypes, sizes, progress)
        return save_results(family, info, date, parts, data, path=path)
    if "batched" not in argv:
        journey_tables("scan", [(f"\n## float32 inclusive sum, n = {n} (2^{n.bit_length() - 1})", {"n": n})
                                for n in SIZES], parts, data, dtype="float32", op="sum", repeat=30, k=3,
                       variants=one_d_rows())
    batched_section(parts, data, only=argv[argv.index("--rows") + 1].split(",") if "--rows" in argv else None,
                    cases_only=argv[argv.index("--cases") + 1].split("|") if "--cases" in argv else None)
    status = save_results("scan" if "batched" not in argv else "scan-axis", info, date, parts, data)
    bad = [r["variant"] for t in data["tables"] if "case" in t for r in t["rows"] if r["matches"] is False]
    if bad:
        print("MISMATCH (batched):", bad)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
