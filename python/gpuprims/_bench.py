"""Timing helpers: gpuprims.benchmark (one variant) and gpuprims.compare
(a family's whole journey as a Table).

Method (../shared/DESIGN.md, "Timing and benchmarks"): CUDA events around
the variant's kernel(s) only, in the compiled core (timing.c); warm-up runs
first; before every timed run a buffer of 4x the L2 is overwritten (nothing
of the input stays in L2) and the output is poisoned; median, min and max of
the repetitions.  Bandwidth counts the ideal bytes (each input read once,
each output written once); the roof is a device-to-device copy moving the
same bytes, measured in the same call.  Host<->device transfers are timed
apart (wall clock).  Every output is checked against NumPy with the
package's one tolerance (_numerics), its largest error given in ULPs for
floats, and the variant is run k more times to count distinct results.
"""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from . import _core
from ._arrays import DeviceArray, to_device
from ._numerics import exact_sum, identity, scan_reference, scan_tolerance, sum_tolerance, ulps
from ._reduce import CODES, OPS, result_dtype
from ._registry import AUTO, Variant, lookup
from ._registry import variants as registry_variants
from ._table import Column, Table
from ._transpose import DTYPES as TRANSPOSE_DTYPES

# The production baseline of each family: "x vs" divides by its time.
BASELINE = {"reduce": "cub", "scan": "cub", "transpose": "cublas"}
BASELINE_TITLE = {"cub": "CUB", "cublas": "cuBLAS"}
# The main job's default sizes: big enough to be far past L2 (an H100/H200
# has 50-60 MB), small enough that every journey runs in seconds.
DEFAULT_N = 1 << 24
DEFAULT_SHAPE = (8192, 8192)
FLUSH_L2_TIMES = 4  # the flush buffer, in multiples of the L2
HOST_RUNS = 3  # timed runs of host code (the seed's CPU loops, NumPy)


def random_input(shape, dtype, seed=0) -> np.ndarray:
    """Random test data, never zeros: integers in [-1000, 1000), floats in
    [-1, 1).  `shape` is n or a tuple."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(-1000, info.min), min(1000, info.max), size=shape, dtype=dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(shape) * 2 - 1 + 1j * (rng.random(shape) * 2 - 1)).astype(dtype)
    return (rng.random(shape, dtype=np.float64) * 2 - 1).astype(dtype)


@lru_cache(maxsize=None)
def _l2_bytes() -> int:
    return int(_core.device_info()["l2_cache_bytes"])


def _summary(ms) -> dict:
    ms = [float(t) for t in ms]
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}


def copy_roof(nbytes, *, warmup=5, repeat=50, flush=True) -> dict:
    """The roof: a device-to-device copy of nbytes (nbytes read + nbytes
    written), timed like the variants.  {"median_ms", "min_ms", "max_ms",
    "times_ms", "gbps" (bytes read + written / median)}."""
    flush_bytes = FLUSH_L2_TIMES * _l2_bytes() if flush else 0
    ms = _core.time_copy(int(max(nbytes, 1)), int(warmup), int(repeat), int(flush_bytes))
    row = _summary(ms)
    row["times_ms"] = list(ms)
    row["gbps"] = 2 * nbytes / (row["median_ms"] * 1e-3) / 1e9
    return row


def _count_distinct(outs) -> int:
    """How many different results (bit for bit) a list of outputs holds."""
    kept = []
    for o in outs:
        b = np.ascontiguousarray(np.asarray(o)).reshape(-1).view(np.uint8)
        if not any(k.size == b.size and np.array_equal(k, b) for k in kept):
            kept.append(b)
    return len(kept)


@dataclass
class Result:
    """One variant's measurement (gpuprims.benchmark; a row of compare)."""

    family: str
    variant: str
    title: str
    shape: tuple
    dtype: str
    op: str | None
    where: str  # "device" (CUDA events) or "host" (wall clock)
    times_ms: list = field(default_factory=list)  # every timed repetition
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    bytes: int = 0  # ideal bytes: each input read once, each output written once
    gbps: float | None = None  # bytes / median time
    roof_gbps: float | None = None  # the copy of the same bytes, this call
    roof_pct: float | None = None
    h2d_ms: float | None = None  # host -> device copy of the input (wall clock), apart
    d2h_ms: float | None = None  # device -> host copy of the output (wall clock), apart
    matches: bool | None = None  # output within the project's tolerance of NumPy
    max_error: float | None = None  # largest |error| vs the float64 / fsum reference
    error_unit: str = ""  # "ulp" (floats) or "abs" (integers)
    distinct: int | None = None  # distinct results over k runs (1 = deterministic)
    k: int = 0
    baseline: bool = False
    note: str = ""  # why it was skipped, or what is special

    @property
    def n(self) -> int:
        return int(np.prod(self.shape))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d

    def __str__(self) -> str:
        if self.median_ms is None:
            return f"{self.family}/{self.variant}: {self.note}"
        err = "" if self.max_error is None else f", max error {self.max_error:g} {self.error_unit}"
        return (f"{self.family}/{self.variant} {self.op or ''} {self.dtype} {self.shape}: "
                f"median {self.median_ms:.4f} ms (min {self.min_ms:.4f}, max {self.max_ms:.4f}, "
                f"{len(self.times_ms)} runs), {self.gbps:.0f} GB/s = {self.roof_pct:.0f}% of the copy "
                f"roof ({self.roof_gbps:.0f} GB/s); matches NumPy: "
                f"{'not checked' if self.matches is None else ('yes' if self.matches else 'NO')}"
                f"{err}; {self.distinct} distinct of {self.k} runs")


class _Case:
    """One input of one family, on both sides, with its reference: what
    every row of a comparison shares."""

    def __init__(self, family, x_or_n, *, dtype, op, inclusive, repeat, warmup, k, flush, check=True,
                 seed=0):
        if family not in BASELINE:
            raise ValueError(f"unknown family {family!r}; known: {', '.join(BASELINE)}")
        self.family, self.op, self.inclusive = family, op, bool(inclusive)
        self.repeat, self.warmup, self.k = int(repeat), int(warmup), int(k)
        if self.repeat < 1 or self.warmup < 0 or self.k < 0:
            raise ValueError("repeat must be >= 1, warmup and k >= 0")
        if family != "transpose" and op not in OPS:
            raise ValueError(f"unknown op {op!r}; choose one of: {', '.join(OPS)}")
        self.h2d_ms = None
        self.d2h_ms = None
        self.device = None
        if isinstance(x_or_n, (int, np.integer)) or (isinstance(x_or_n, tuple) and
                                                     all(isinstance(s, (int, np.integer)) for s in x_or_n)):
            shape = (int(x_or_n),) if not isinstance(x_or_n, tuple) else tuple(int(s) for s in x_or_n)
            want = np.dtype(dtype or "float32")
            if want not in (TRANSPOSE_DTYPES if family == "transpose" else CODES):
                raise TypeError(f"{family} does not support dtype {want}")
            if family == "transpose" and len(shape) != 2:
                raise ValueError(f"transpose needs a shape (rows, cols), got {x_or_n!r}")
            self.x = random_input(shape if family == "transpose" else shape[0], dtype or "float32", seed)
        elif hasattr(x_or_n, "__cuda_array_interface__"):
            self.device = to_device(x_or_n)
            self.x = self.device.get()
            if dtype is not None and np.dtype(dtype) != self.x.dtype:
                raise TypeError(f"dtype={dtype} differs from the device array's {self.x.dtype}")
        else:
            self.x = np.ascontiguousarray(np.asarray(x_or_n))
            if dtype is not None and np.dtype(dtype) != self.x.dtype:
                self.x = self.x.astype(dtype)
        x = self.x
        if family == "transpose":
            if x.ndim != 2:
                raise ValueError(f"transpose needs a 2-D array, got {x.ndim}-D")
            if x.dtype not in TRANSPOSE_DTYPES:
                raise TypeError(f"transpose does not support dtype {x.dtype}")
        else:
            x = self.x = x.ravel()
            if x.dtype not in CODES:
                raise TypeError(f"{family} does not support dtype {x.dtype}; "
                                f"supported: {', '.join(d.name for d in CODES)}")
        self.n = int(x.size)
        if self.n == 0:
            raise ValueError("benchmarking needs at least one element")
        self.acc = x.dtype if family == "transpose" else result_dtype(op, x.dtype)
        # ideal bytes: the input read once, the output written once (a
        # reduction's one result word is not counted)
        self.bytes = int(x.nbytes) if family == "reduce" else int(x.nbytes + self.n * self.acc.itemsize)
        self.flush_bytes = FLUSH_L2_TIMES * _l2_bytes() if flush else 0
        self.checking = bool(check)
        self.ref = None  # computed on the first check

    # -- the reference and the check
    def _reference(self):
        x, acc, op = self.x, self.acc, self.op
        if self.family == "reduce":
            if op == "sum" and acc.kind == "f":
                self.ref = exact_sum(x)
                self.tol = sum_tolerance(x, acc, self.ref)
            else:
                self.ref = (np.sum(x, dtype=acc) if op == "sum" else getattr(np, op)(x)).astype(acc)
                self.tol = 0.0
        elif self.family == "scan":
            if op == "sum" and acc.kind == "f":
                self.ref, self._bound = scan_reference(x, self.inclusive, acc)
                self.tol = None  # per variant: scan_tolerance
            else:
                self.ref = self.numpy()
                self.tol = 0
        else:
            self.ref = np.ascontiguousarray(x.T)
            self.tol = 0

    def check(self, got, variant_name) -> tuple:
        """(matches, max error, unit) of an output against the reference;
        (None, None, "") when checks are off."""
        if not self.checking:
            return None, None, ""
        if self.ref is None:
            self._reference()
        unit = "ulp" if self.acc.kind == "f" else "abs"
        if self.family == "transpose":
            want = self.x if variant_name == "copy" else self.ref
            got = np.asarray(got).reshape(want.shape)
            ok = bool(np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"))
            if ok:
                return True, 0.0, unit
            if want.dtype.kind in "fiu":
                return False, ulps(got, want, want.dtype), unit
            return False, float("nan"), "abs"
        if self.family == "reduce":
            got = self.acc.type(got)
            if self.acc.kind == "f" and self.op == "sum":
                ok = bool(abs(float(got) - self.ref) <= self.tol)
                return ok, ulps(np.float64(float(got)), np.float64(self.ref), self.acc), unit
            ok = bool(got == self.ref or (np.isnan(got) and np.isnan(self.ref)))
            return ok, ulps(got, self.ref, self.acc), unit
        got = np.asarray(got)
        if self.tol is None:
            # A float sum scan's rounding grows with the prefix's sum of |x|
            # (near a prefix that cancels to ~0 an ULP of the value itself
            # means nothing): its error is given in ULPs of that sum.
            tol = scan_tolerance(self.n, self.acc, self.ref, self._bound)
            err = np.abs(got.astype(self.ref.dtype) - self.ref)
            ok = bool(np.all(err <= tol))
            scale = np.spacing(self._bound.astype(self.acc)).astype(self.ref.dtype)
            with np.errstate(invalid="ignore", divide="ignore"):
                u = np.where(err == 0, 0, err / np.where(scale > 0, scale, np.inf))
            return ok, float(np.max(np.where(np.isnan(u), np.inf, u))) if u.size else 0.0, "ulp(sum|x|)"
        ok = bool(np.array_equal(got, self.ref, equal_nan=True))
        return ok, ulps(got, self.ref, self.acc), unit

    # -- the device side
    def upload(self):
        if self.device is None:
            t0 = time.perf_counter()
            self.device = to_device(self.x)
            self.h2d_ms = (time.perf_counter() - t0) * 1e3
        if self.family == "reduce":
            self.out = None
        else:
            shape = (self.n,) if self.family == "scan" else (self.x.shape[1], self.x.shape[0])
            self.out = DeviceArray(shape, self.acc)

    def download(self, shape=None):
        """The output buffer as NumPy (the first download is timed: d2h_ms)."""
        t0 = time.perf_counter()
        got = self.out.get()
        if self.d2h_ms is None:
            self.d2h_ms = (time.perf_counter() - t0) * 1e3
        return got if shape is None else got.reshape(shape)

    def roof(self):
        # The copy moves bytes/2 twice (read + write): the same bytes as the variant.
        return copy_roof(self.bytes // 2, warmup=self.warmup, repeat=self.repeat,
                         flush=bool(self.flush_bytes))

    def _codes(self):
        return CODES[self.x.dtype], CODES[self.acc], OPS[self.op]

    def time_device(self, v: Variant):
        """(kernel ms per repetition, the output as NumPy) of a device variant."""
        d = self.device
        if self.family == "reduce":
            ms, value = _core.time_reduce(v.index, d.ptr, self.n, *self._codes(),
                                          self.warmup, self.repeat, self.flush_bytes)
            return ms, value
        if self.family == "scan":
            ms = _core.time_scan(v.index, d.ptr, self.out.ptr, self.n, *self._codes(), self.inclusive,
                                 self.warmup, self.repeat, self.flush_bytes)
            return ms, self.download()
        rows, cols = self.x.shape
        ms = _core.time_transpose(v.index, d.ptr, self.out.ptr, rows, cols, self.x.dtype.itemsize,
                                  self.warmup, self.repeat, self.flush_bytes)
        return ms, self.download()

    def run_device(self, v: Variant):
        """The output of one untimed run of a device variant (determinism)."""
        d = self.device
        if self.family == "reduce":
            return _core.reduce(v.index, d.ptr, self.n, *self._codes())
        if self.family == "scan":
            _core.scan(v.index, d.ptr, self.out.ptr, self.n, *self._codes(), self.inclusive)
            return self.out.get()
        rows, cols = self.x.shape
        _core.transpose(v.index, d.ptr, self.out.ptr, rows, cols, self.x.dtype.itemsize)
        return self.out.get()

    def run_host(self, v: Variant):
        """The output of one run of a host variant (the seed's CPU code)."""
        x = self.x
        if self.family == "reduce":
            return _core.reduce_host(v.index, x, self.n, *self._codes())
        if self.family == "scan":
            out = np.empty(self.n, dtype=self.acc)
            _core.scan_host(v.index, x, out, self.n, *self._codes(), self.inclusive)
            return out
        rows, cols = x.shape
        out = np.empty((cols, rows), dtype=x.dtype)
        _core.transpose_host(v.index, x, out, rows, cols, x.dtype.itemsize)
        return out

    def numpy(self):
        """NumPy's answer on the host: the CPU baseline."""
        x, acc, op = self.x, self.acc, self.op
        if self.family == "transpose":
            return np.ascontiguousarray(x.T)
        if self.family == "reduce":
            return np.sum(x, dtype=acc) if op == "sum" else getattr(np, op)(x)
        ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
        inc = ufunc.accumulate(x, dtype=acc)
        if self.inclusive:
            return inc
        first = np.array([identity(op, acc)], dtype=acc)
        return np.concatenate([first, inc[:-1]])

    def skip_reason(self, v: Variant) -> str:
        if v.dtypes is not None and self.x.dtype.name not in v.dtypes:
            return f"skipped: takes {', '.join(v.dtypes)} only"
        if v.max_n is not None and self.n > v.max_n:
            return f"skipped: n > max_n {v.max_n}"
        return ""


def _host_times(fn, runs):
    ms, outs = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        ms.append((time.perf_counter() - t0) * 1e3)
        outs.append(out)
    return ms, outs


def _measure(case: _Case, name, title, *, where, run_timed=None, run_once=None, host_fn=None,
             baseline=False, roof=None) -> Result:
    """One row: time, check, count distinct results over k runs."""
    r = Result(case.family, name, title, tuple(case.x.shape), case.x.dtype.name,
               None if case.family == "transpose" else case.op, where, bytes=case.bytes,
               k=case.k, baseline=baseline)
    if where == "device":
        ms, out = run_timed()
        outs = [run_once() for _ in range(case.k)]
    else:
        # host code: wall clock, at most HOST_RUNS runs (the seed's CPU
        # transpose of 8192 x 8192 takes a second); they are also the runs
        # whose results are counted for determinism (k = their number)
        ms, outs = _host_times(host_fn, max(1, min(case.repeat, HOST_RUNS)))
        out = outs[-1]
    r.times_ms = [float(t) for t in ms]
    r.median_ms, r.min_ms, r.max_ms = _summary(ms).values()
    r.gbps = case.bytes / (r.median_ms * 1e-3) / 1e9 if r.median_ms > 0 else float("inf")
    if roof is not None:
        r.roof_gbps = roof["gbps"]
        r.roof_pct = 100 * r.gbps / roof["gbps"]
    r.matches, r.max_error, r.error_unit = case.check(out, name)
    if outs:
        r.distinct = _count_distinct(outs)
        r.k = len(outs)
    r.h2d_ms, r.d2h_ms = case.h2d_ms, case.d2h_ms
    return r


def _variant_row(case: _Case, v: Variant, roof) -> Result:
    reason = case.skip_reason(v)
    if reason:
        return Result(case.family, v.name, v.title, tuple(case.x.shape), case.x.dtype.name,
                      None if case.family == "transpose" else case.op, v.where, bytes=case.bytes,
                      baseline=v.is_baseline, note=reason)
    if v.where == "host":
        return _measure(case, v.name, v.title, where="host", host_fn=lambda: case.run_host(v),
                        baseline=v.is_baseline, roof=roof)
    return _measure(case, v.name, v.title, where="device", run_timed=lambda: case.time_device(v),
                    run_once=lambda: case.run_device(v), baseline=v.is_baseline, roof=roof)


def _extra_row(case: _Case, name, fn, roof) -> Result:
    """A caller's own function f(device input) -> result, timed by wall clock
    (it returns when its work is done) and checked like every variant."""
    def once():
        got = fn(case.device)
        if hasattr(got, "__cuda_array_interface__"):
            got = to_device(got).get()
        return np.asarray(got) if case.family != "reduce" else got

    r = _measure(case, name, f"{name} (caller's function, wall clock)", where="host",
                 host_fn=once, roof=roof)
    r.where = "device (wall clock)"
    return r


def benchmark(family: str, variant: str, x_or_n=None, *, dtype=None, op: str = "sum",
              inclusive: bool = True, repeat: int = 30, warmup: int = 3, k: int = 5,
              flush: bool = True, check: bool = True) -> Result:
    """Time one variant of `family` and check its output.

    x_or_n: an element count (random input; transpose: a (rows, cols)
    shape), a NumPy array or a device array; default 2^24 elements or
    8192 x 8192.  dtype (default float32 for
    random input) and op ("sum", "min", "max"; not for transpose) as in
    the family's function.  The kernel(s) are timed with CUDA events,
    `repeat` times after `warmup` runs, with the L2 flushed and the output
    poisoned before each (flush=False keeps the L2 warm).  Returns a Result:
    times_ms (raw), median/min/max, ideal bytes, GB/s, % of a copy of the
    same bytes timed in this call, host<->device transfer times apart,
    whether the output matched NumPy and its largest error (ULPs for
    floats), and how many distinct results k further runs gave.
    check=False skips the comparison with NumPy (matches is None).
    """
    v = lookup(family, variant)
    if x_or_n is None:
        x_or_n = DEFAULT_SHAPE if family == "transpose" else DEFAULT_N
    _core.device_info()  # NoDeviceError before any work where there is no GPU
    case = _Case(family, x_or_n, dtype=dtype, op=op, inclusive=inclusive, repeat=repeat,
                 warmup=warmup, k=k, flush=flush, check=check)
    reason = case.skip_reason(v)
    if reason:
        raise ValueError(f"{family} variant {v.name!r}: {reason[len('skipped: '):]}; "
                         f"use variant='auto' ({AUTO[family]})")
    case.upload()
    roof = case.roof()
    return _variant_row(case, v, roof)


# -- compare


def _columns(baseline_title: str) -> list:
    return [
        Column("variant", "variant", align="<"),
        Column("median_ms", "ms", ".4f"),
        Column("gbps", "GB/s", ".0f"),
        Column("roof_pct", "% roof", ".1f"),
        Column("x_prev", "x prev", ".2f"),
        Column("x_first", "x first", ".2f"),
        Column("x_baseline", f"x {baseline_title}", ".2f"),
        Column("max_error", "max err", ".3g"),
        Column("error_unit", "unit", align="<"),
        Column("distinct", "distinct"),
        Column("matches", "ok", align="<"),
    ]


class Progress:
    """A one-line progress bar on stderr: [#####.....] 5/13 reduce unroll8."""

    def __init__(self, stream=None, width=24):
        self.stream = stream or sys.stderr
        self.width = width

    def __call__(self, done, total, label=""):
        fill = self.width * done // max(total, 1)
        end = "\n" if done >= total else ""
        self.stream.write(f"\r[{'#' * fill}{'.' * (self.width - fill)}] {done}/{total} {label:<40.40}{end}")
        self.stream.flush()


def compare(family: str, *, n=None, shape=None, x=None, dtype=None, op: str = "sum",
            inclusive: bool = True, variants="all", repeat: int = 30, warmup: int = 3, k: int = 5,
            flush: bool = True, check: bool = True, baselines: bool = True, extra: dict | None = None,
            progress=None) -> Table:
    """Time a family's journey on one input and return a Table.

    Rows in journey (registry) order - variants="all" or a list of names -,
    then, with baselines=True, the production library rows (CUB / cuBLAS /
    copy / the seed's CPU code), the copy roof and NumPy on the CPU.
    Columns: ms (median), GB/s, % of the copy roof, speed-up over the
    previous row and over the first, x vs the production baseline, the
    largest error vs a float64 / math.fsum reference (ULPs for floats), the
    number of distinct results over k runs, and whether it matched NumPy.
    A variant whose declared limit the input exceeds gets a row saying so.

    n (reduce, scan) or shape (transpose), or x (an array); dtype defaults
    to float32.  extra={"label": f} adds rows for your own functions
    f(device_input) -> result (timed by wall clock, checked the same way).
    progress: True for a bar on stderr, or a callable(done, total, label).
    check=False skips the comparison with NumPy (for repeated timings).
    """
    names = variants
    if x is None:
        x = (shape if shape is not None else DEFAULT_SHAPE) if family == "transpose" \
            else (n if n is not None else DEFAULT_N)
    if family == "transpose" and isinstance(x, tuple) and n is not None:
        raise ValueError("transpose takes shape=(rows, cols), not n")
    table = registry_variants(family)
    if names == "all":
        chosen = [v for v in table if baselines or not v.is_baseline]
    else:
        names = [names] if isinstance(names, str) else list(names)
        chosen = [lookup(family, nm) for nm in names]
        if baselines:
            chosen += [v for v in table if v.is_baseline and v not in chosen]
        order = {v.name: i for i, v in enumerate(table)}
        chosen.sort(key=lambda v: order[v.name])
    _core.device_info()  # NoDeviceError before any work where there is no GPU
    case = _Case(family, x, dtype=dtype, op=op, inclusive=inclusive, repeat=repeat, warmup=warmup,
                 k=k, flush=flush, check=check)
    extra = dict(extra or {})
    steps = len(chosen) + len(extra) + 1 + (1 if baselines else 0)
    if progress is True:
        progress = Progress()
    done = 0

    def tick(label):
        nonlocal done
        done += 1
        if progress:
            progress(done, steps, f"{family} {label}")

    case.upload()
    roof = case.roof()
    tick("copy roof")
    rows = []
    journey = [v for v in chosen if not v.is_baseline]
    for v in journey:
        rows.append(_variant_row(case, v, roof))
        tick(v.name)
    for name, fn in extra.items():
        rows.append(_extra_row(case, name, fn, roof))
        tick(name)
    for v in chosen:
        if v.is_baseline:
            rows.append(_variant_row(case, v, roof))
            tick(v.name)
    rows = [r.to_dict() for r in rows]
    if baselines:
        rows.append({"variant": "copy roof", "title": "device-to-device copy of the same bytes",
                     "where": "device", "baseline": True, "bytes": case.bytes,
                     **{key: roof[key] for key in ("median_ms", "min_ms", "max_ms", "times_ms", "gbps")},
                     "roof_gbps": roof["gbps"], "roof_pct": 100.0,
                     "note": "the bandwidth roof (reads + writes the same bytes)"})
        row = _measure(case, "numpy", "NumPy on the CPU", where="host", host_fn=case.numpy,
                       baseline=True, roof=roof)
        rows.append(row.to_dict())
        tick("numpy")
    _speedups(rows, BASELINE[family])
    shape_text = f"{case.x.shape[0]} x {case.x.shape[1]}" if family == "transpose" else f"n = {case.n}"
    what = "transpose" if family == "transpose" else \
        f"{family} {op}" + ("" if family == "reduce" else (" inclusive" if inclusive else " exclusive"))
    title = (f"{what}, {shape_text}, {case.x.dtype.name} - CUDA events, median of {repeat}"
             f"{', L2 flushed' if flush else ''}")
    meta = {"family": family, "op": None if family == "transpose" else op,
            "inclusive": inclusive if family == "scan" else None, "dtype": case.x.dtype.name,
            "shape": list(case.x.shape), "n": case.n, "bytes": case.bytes, "repeat": repeat,
            "warmup": warmup, "k": k, "flush_bytes": case.flush_bytes, "roof_gbps": roof["gbps"],
            "h2d_ms": case.h2d_ms, "d2h_ms": case.d2h_ms, "baseline": BASELINE[family]}
    footer = _transfer_line(case)
    return Table(rows, _columns(BASELINE_TITLE[BASELINE[family]]), title=title, meta=meta, footer=footer)


def _transfer_line(case) -> str:
    parts = []
    if case.h2d_ms is not None:
        parts.append(f"host->device {case.h2d_ms:.2f} ms ({case.x.nbytes / case.h2d_ms / 1e6:.1f} GB/s)")
    if case.d2h_ms is not None:
        nbytes = case.n * case.acc.itemsize
        parts.append(f"device->host {case.d2h_ms:.2f} ms ({nbytes / case.d2h_ms / 1e6:.1f} GB/s)")
    return ("transfers, not in the times above: " + ", ".join(parts)) if parts else ""


def _speedups(rows, baseline):
    """x_prev / x_first / x_baseline: the other row's median time / this
    row's (above 1: this row is faster).  Rows without a time get none."""
    timed = [r for r in rows if r.get("median_ms")]
    base = next((r for r in timed if r["variant"] == baseline), None)
    first = timed[0] if timed else None
    prev = None
    for r in rows:
        t = r.get("median_ms")
        if not t:
            r["x_prev"] = r["x_first"] = r["x_baseline"] = None
            continue
        r["x_prev"] = prev["median_ms"] / t if prev else None
        r["x_first"] = first["median_ms"] / t
        r["x_baseline"] = base["median_ms"] / t if base else None
        prev = r
