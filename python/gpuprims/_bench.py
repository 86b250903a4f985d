"""Timing helpers: gpuprims.benchmark (one variant) and gpuprims.compare
(a family's whole journey as a Table).

Method: the variant's kernel(s) alone are timed with CUDA events, in the
compiled core (_core.time), after warm-up runs; before every timed run a
buffer of 4x the L2 is overwritten (nothing of the input stays in L2) and
the output is poisoned; the median, min and max of the repetitions are
reported.  Bandwidth counts the ideal bytes (each input read once, each
output written once); the roof is a device-to-device copy moving the same
bytes, measured in the same call.  Host<->device transfers are timed apart
(wall clock).  Every output is checked against a float64 / math.fsum
reference with the package's one tolerance (_numerics), its largest error
given in ULPs for floats, and the variant is run k more times to count
distinct results.  Nothing here knows a family by name: each Family
(_family) says how its inputs, outputs and references look.
"""
from __future__ import annotations

import importlib
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from . import _axes, _backend, _core
from ._arrays import DeviceArray, Operand, take, to_device
from ._errors import NoDeviceError
from ._family import DTYPE_CODES, Case, Family, get as get_family, op_code, random_input
from ._numerics import identity, scan_reference_dtype, scan_tolerance, sum_tolerances, ulps
from ._registry import Variant
from ._table import Column, Table

__all__ = ["Result", "benchmark", "compare", "copy_roof", "random_input"]

FLUSH_L2_TIMES = 4  # the flush buffer, in multiples of the L2
HOST_RUNS = 3  # timed runs of host code (the textbooks' CPU loops, NumPy)


@lru_cache(maxsize=None)
def _l2_bytes() -> int:
    return int(_core.device_info()["l2_cache_bytes"])


def _gpu_first(who: str) -> None:
    """Before any work: NoDeviceError (or ValueError, the emulator selected
    beside a GPU) naming gpuprims.<who>, where there is no GPU to time."""
    try:
        info = _core.device_info()
    except NoDeviceError as e:
        raise NoDeviceError(f"gpuprims.{who}: {e}") from None
    if info.get("backend") == "emulator":
        _backend.require_gpu(who)


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


class PeerTimer:
    """Times a peer library's call with that library's CUDA events (CuPy or
    PyTorch): the L2 flushed (a buffer of FLUSH_L2_TIMES x the L2 written by
    the library; flush=False: not) before each of `repeat` runs, after
    `warmup` runs; returns the milliseconds of every run.  The peer's own
    allocations (its memory pool) are part of what it times, as its users
    see them."""

    def __init__(self, lib, l2_bytes, flush=True):
        self.lib = lib
        n = FLUSH_L2_TIMES * l2_bytes if flush else 1
        self.flush = flush
        if lib.__name__ == "cupy":
            self.flush_buf = lib.empty(n, dtype=lib.uint8)
            self.fill = self.flush_buf.fill
            self.event = lambda: lib.cuda.Event()
            self.elapsed = lib.cuda.get_elapsed_time
            self.sync = lib.cuda.runtime.deviceSynchronize
        else:
            self.flush_buf = lib.empty(n, dtype=lib.uint8, device="cuda")
            self.fill = self.flush_buf.fill_
            self.event = lambda: lib.cuda.Event(enable_timing=True)
            self.elapsed = lambda start, end: start.elapsed_time(end)
            self.sync = lib.cuda.synchronize

    def __call__(self, f, repeat, warmup):
        for _ in range(warmup):
            f()
        ms = []
        for k in range(repeat):
            if self.flush:
                self.fill(k & 0xff)
            start, end = self.event(), self.event()
            start.record()
            f()
            end.record()
            end.synchronize()
            ms.append(float(self.elapsed(start, end)))
        self.sync()
        return ms


def import_peer(name):
    """The module `name` ("cupy", "torch", "cuda.compute") where it imports
    and can use the GPU, else None."""
    try:
        lib = importlib.import_module(name)
        if name == "torch" and not lib.cuda.is_available():
            return None
        if name == "cuda.compute" and not lib._BINDINGS_AVAILABLE:  # installed, but no CUDA driver
            return None
        return lib
    except Exception:  # not installed, or installed without a usable CUDA
        return None


def transpose_peers(flush=True) -> dict:
    """The peers that gpuprims.compare_permutations times beside gpuprims:
    {key: (title, timer, make)} for CuPy (cupy.ascontiguousarray(
    x.transpose(axes))) and PyTorch (x.permute(axes).contiguous()) where
    they import with a GPU; make(d, axes) gives the call on the peer's view
    of the DeviceArray d (no copy: __cuda_array_interface__); the timers
    flush the L2 as `flush` says."""
    peers = {}
    cp, torch = import_peer("cupy"), import_peer("torch")
    if cp is not None:
        def make_cupy(d, axes):
            x = cp.asarray(d)
            return lambda: cp.ascontiguousarray(x.transpose(axes))
        peers["cupy"] = (f"CuPy {cp.__version__}", PeerTimer(cp, _l2_bytes(), flush), make_cupy)
    if torch is not None:
        def make_torch(d, axes):
            x = torch.as_tensor(d, device="cuda")
            return lambda: x.permute(*axes).contiguous()
        peers["torch"] = (f"PyTorch {torch.__version__}", PeerTimer(torch, _l2_bytes(), flush), make_torch)
    return peers


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


def _host_input(family: Family, x_or_n, dtype, seed):
    """(the kernels' host input, the caller's device array or None) from an
    element count or shape (random input), a NumPy array or a device array."""
    device = None
    if isinstance(x_or_n, (int, np.integer)) or (isinstance(x_or_n, tuple) and
                                                 all(isinstance(s, (int, np.integer)) for s in x_or_n)):
        want = np.dtype(dtype or "float32")
        if want not in family.dtypes:
            raise TypeError(f"{family.name} does not support dtype {want}")
        x = random_input(family.input_shape(x_or_n), want, seed)
    else:
        x, device = _caller_array(x_or_n, dtype)
    return family.as_kernel_input(x), device


def _caller_array(x, dtype):
    """(a caller's array on the host, in dtype where given; x as a
    DeviceArray, or None for a host array).  A device array is copied, not
    converted: TypeError where its dtype is not dtype."""
    if hasattr(x, "__cuda_array_interface__"):
        device = to_device(x)
        host = device.get()
        if dtype is not None and np.dtype(dtype) != host.dtype:
            raise TypeError(f"dtype={dtype} differs from the device array's {host.dtype}")
        return host, device
    host = np.asarray(x)
    if dtype is not None and np.dtype(dtype) != host.dtype:
        host = host.astype(dtype)
    return host, None


class _Case(Case):
    """One input of one family, on both sides, with its reference and the
    timing settings: what every row of a comparison shares."""

    def __init__(self, family, x_or_n, *, dtype, op, inclusive, repeat, warmup, k, flush, check=True,
                 seed=0):
        fam = get_family(family)
        self.repeat, self.warmup, self.k = int(repeat), int(warmup), int(k)
        if self.repeat < 1 or self.warmup < 0 or self.k < 0:
            raise ValueError("repeat must be >= 1, warmup and k >= 0")
        fam.check_options(op)
        x, self.device = _host_input(fam, x_or_n, dtype, seed)
        super().__init__(fam, x, op=op, inclusive=inclusive)
        if self.n == 0:
            raise ValueError("benchmarking needs at least one element")
        self.h2d_ms = None
        self.d2h_ms = None
        self.out = None
        self.bytes = fam.ideal_bytes(self)
        self.flush_bytes = FLUSH_L2_TIMES * _l2_bytes() if flush else 0
        self.checking = bool(check)

    def check(self, got, v=None) -> tuple:
        """(matches, max error, unit) of an output against the reference;
        (None, None, "") when checks are off."""
        if not self.checking:
            return None, None, ""
        return super().check(got, v)

    # -- the device side
    def upload(self):
        if self.device is None:
            t0 = time.perf_counter()
            self.device = to_device(self.x)
            self.h2d_ms = (time.perf_counter() - t0) * 1e3
        shape = self.out_shape(self.family.auto)
        self.out = None if shape is None else DeviceArray(shape, self.acc)

    def _out(self, v: Variant):
        """The output buffer of v: the one allocated at upload, in v's shape."""
        shape = self.out_shape(v)
        if shape is None or self.out is None:
            return None
        if shape == self.out.shape:
            return self.out
        return DeviceArray(shape, self.acc, _ptr=self.out.ptr, _owner=self.out)

    def download(self, out):
        """The output buffer as NumPy (the first download is timed: d2h_ms)."""
        t0 = time.perf_counter()
        got = out.get()
        if self.d2h_ms is None:
            self.d2h_ms = (time.perf_counter() - t0) * 1e3
        return got

    def roof(self):
        # The copy moves bytes/2 twice (read + write): the same bytes as the variant.
        return copy_roof(self.bytes // 2, warmup=self.warmup, repeat=self.repeat,
                         flush=bool(self.flush_bytes))

    def time_device(self, v: Variant):
        """(kernel ms per repetition, the output as NumPy) of a device variant."""
        out = self._out(v)
        ms, value = _core.time(self.family.name, v.index, self.device.ptr, None if out is None else out.ptr,
                               self.params, self.warmup, self.repeat, self.flush_bytes)
        return ms, (self.acc.type(value) if out is None else self.download(out))

    def run_device(self, v: Variant):
        """The output of one untimed run of a device variant (determinism)."""
        return self.run(v, self.device.ptr, self._out(v))

    def skip_reason(self, v: Variant) -> str:
        reason = v.skip_reason(self.n, self.x.dtype)
        return f"skipped: {reason}" if reason else ""


# -- axes and segments


def _segmented_scan(x, off, op, inclusive):
    """The scan of each segment [off[i], off[i+1]) of the 1-D x, restarting
    at each boundary (x's dtype).  A Hillis-Steele scan over the whole array
    (Hillis and Steele, CACM 1986): log2 of the longest segment vectorized
    passes, each element adding the one d before it where that is in its own
    segment, so each prefix is a tree of its own elements (no other
    segment's values enter and cancel).  Exclusive: the identity first, the
    last prefix of each segment dropped."""
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    n = x.size
    y = x.copy()
    if n == 0:
        return y
    lengths = np.diff(off)
    start = np.repeat(off[:-1], lengths)  # each element's segment start
    pos = np.arange(n, dtype=np.int64) - start
    d = 1
    longest = int(lengths.max()) if lengths.size else 0
    while d < longest:
        take_ = pos >= d
        y[d:][take_[d:]] = ufunc(y[d:][take_[d:]], y[:-d][take_[d:]])
        d *= 2
    if not inclusive:
        shifted = np.empty_like(y)
        shifted[1:] = y[:-1]
        shifted[pos == 0] = identity(op, x.dtype)
        y = shifted
    return y


def _segmented_reduce(x, off, op, dtype):
    """One value per segment of the 1-D x, in dtype: numpy.<ufunc>.reduceat
    over the starts of the non-empty segments (each runs to the next such
    start; the empty ones between hold no elements), the identity for an
    empty segment (reduceat itself gives the element at its boundary)."""
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    out = np.full(off.size - 1, identity(op, dtype), dtype=dtype)
    full = off[1:] > off[:-1]
    if full.any():
        out[full] = ufunc.reduceat(x[:off[-1]].astype(dtype, copy=False), off[:-1][full])
    return out


class _LayoutCase(_Case):
    """One input of reduce or scan with an axis or segments: the problems
    (outer x len x inner through strides, or ragged segments by offsets) the
    rows flagged batched or segmented take, on both sides, with NumPy's
    answer and the reference every row is checked against."""

    def __init__(self, family, x_or_shape, *, axis, segments, dtype, op, inclusive, repeat, warmup, k, flush,
                 check=True, seed=0, who="compare"):
        fam = get_family(family)
        if not fam.layout_variants():
            raise ValueError(f"gpuprims.{who}: axis= and segments= are for reduce and scan, not {fam.name}")
        self.repeat, self.warmup, self.k = int(repeat), int(warmup), int(k)
        if self.repeat < 1 or self.warmup < 0 or self.k < 0:
            raise ValueError("repeat must be >= 1, warmup and k >= 0")
        fam.check_options(op)
        self.family = fam
        self.op = op
        self.inclusive = bool(inclusive)
        # a reduction gives one value per problem (its family's 1-D output is a value), a scan
        # one per element
        reduces = self.reduces = fam.out_shape((1,), fam.auto) is None
        x, self.device = _layout_input(fam, x_or_shape, dtype, seed, who)
        self.x = x
        self.n = int(x.size)
        if self.n == 0:
            raise ValueError("benchmarking needs at least one element")
        plan = _axes.DtypePlan(op, x.dtype, None, who)
        self.acc = plan.kernel_result  # the kernels' dtypes are NumPy's result (KERNEL_DTYPES in)
        in_code, acc_code, res_code = plan.codes(DTYPE_CODES)
        self.axis, self.offsets = None, None
        if segments is not None:
            cover = "" if reduces else "the segments of a scan must cover the data"
            self.segments = _axes.segment_offsets(segments, x.shape, axis, plan, who, cover)
            self.offsets = self.segments.off
            self.problems = self.offsets.size - 1
            self.out_shape_ = (self.problems,) if reduces else (self.n,)
            self.result_shape = ((x.shape[:-1] + (self.problems // max(_axes.prod(x.shape[:-1]), 1),))
                                 if axis is not None else (self.problems,)) if reduces else \
                (x.shape if axis is not None else (self.n,))
        else:
            if axis is None or isinstance(axis, tuple):
                raise ValueError(f"gpuprims.{who}: axis must be one int (the axis whose problems the "
                                 f"batched rows take), not {axis!r}; axis=None times the 1-D journey")
            self.axis = _axes.normalize_axes(axis, x.ndim, who)[0]
            self.problems = self.n // x.shape[self.axis]
            self.out_shape_ = (self.problems,) if reduces else tuple(x.shape)
            self.result_shape = (x.shape[:self.axis] + x.shape[self.axis + 1:]) if reduces \
                else tuple(x.shape)
        self._codes = (in_code, acc_code, op_code(op))
        self._res_code = res_code
        self.h2d_ms = None
        self.d2h_ms = None
        self.out = None
        self._dev_off = None
        self.ref = None
        self.bytes = int(x.nbytes + _axes.prod(self.out_shape_) * self.acc.itemsize +
                         (self.offsets.nbytes if self.offsets is not None else 0))
        self.flush_bytes = FLUSH_L2_TIMES * _l2_bytes() if flush else 0
        self.checking = bool(check)
        self.params = None  # made at upload: the layout holds device addresses

    @property
    def scalar(self) -> bool:
        return False

    def out_shape(self, v):
        return self.out_shape_

    def title(self) -> str:
        what = self.family.what(self.op, self.inclusive)
        where = f"axis={self.axis}" if self.offsets is None else \
            f"{self.problems} segments of mean length {self.n / max(self.problems, 1):.4g}"
        shape = " x ".join(str(s) for s in self.x.shape)
        return f"{what}, {shape}, {where}, {self.x.dtype.name}"

    def upload(self):
        if self.device is None:
            t0 = time.perf_counter()
            self.device = to_device(self.x)
            self.h2d_ms = (time.perf_counter() - t0) * 1e3
        operand = take(self.device, "compare", _axes.DTYPES, strided=True)
        if self.offsets is not None:
            self._dev_off = to_device(self.offsets)
            lay = self.segments.layout(self.n, self._dev_off.ptr)
            operand = _axes.gathered(operand)
        else:
            lay = _axes.layout(operand, self.axis, self.axis + 1)
            if lay is None:  # axes that do not fuse through their strides: a C copy
                operand = _axes.gathered(operand)
                lay = _axes.layout(operand, self.axis, self.axis + 1)
        self._in_ptr = operand.ptr
        self._operand = operand
        in_code, acc_code, code = self._codes
        self.params = (self.n, in_code, acc_code, code) + \
            ((self.inclusive,) if "inclusive" in self.family.options else ()) + (lay, self._res_code)
        self.out = DeviceArray(self.out_shape_, self.acc)

    def time_device(self, v):
        ms, _ = _core.time(self.family.name, v.index, self._in_ptr, self.out.ptr, self.params, self.warmup,
                           self.repeat, self.flush_bytes)
        return ms, self.download(self.out)

    def run_device(self, v):
        _core.call(self.family.name, v.index, self._in_ptr, self.out.ptr, self.params)
        return self.out.get()

    def skip_reason(self, v) -> str:
        """CUB's segmented reduction reads each problem as a contiguous run
        (cuda/reduce/18_cub_segmented.cu): a column layout is not one."""
        if self.offsets is None and v.is_baseline and v.where == "device":
            operand = take(self.device, "compare", _axes.DTYPES, strided=True) if self.device is not None \
                else Operand(self.x.shape, self.x.dtype, self.x, None)
            lay = _axes.layout(operand, self.axis, self.axis + 1)
            if lay is None or (lay[4] != 1 and lay[1] > 1):
                return "skipped: CUB takes problems of consecutive elements (rows), not columns"
        return ""

    # -- NumPy and the reference
    def _moved(self, a):
        """An axis result of NumPy in the kernels' output order (C order of
        the result's shape: the problems, then for a scan their elements)."""
        return np.ascontiguousarray(a).reshape(self.out_shape_)

    def numpy(self):
        """NumPy's own call for the same problems: x.sum/min/max(axis),
        cumsum / accumulate along the axis, numpy.<ufunc>.reduceat for
        segments (empty segments corrected to the identity).  NumPy has no
        segmented scan: that row is the reference's tree (see
        _segmented_scan)."""
        x, op = self.x, self.op
        ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
        if self.offsets is not None:
            flat = x.reshape(-1)
            if self.reduces:
                return _segmented_reduce(flat, self.offsets, op, self.acc)
            return _segmented_scan(flat.astype(self.acc), self.offsets, op, self.inclusive)
        if self.reduces:
            return self._moved(ufunc.reduce(x, axis=self.axis, dtype=self.acc))
        y = ufunc.accumulate(x, axis=self.axis, dtype=self.acc)
        if not self.inclusive:
            y = np.moveaxis(y, self.axis, -1)
            first = np.full(y.shape[:-1] + (1,), identity(op, self.acc), dtype=self.acc)
            y = np.moveaxis(np.concatenate([first, y[..., :-1]], axis=-1), -1, self.axis)
        return self._moved(y)

    def _reference(self):
        """(reference, tolerance per output element): exact for integers and
        min/max; a float sum against a wider-precision sum within the
        package's bounds (sum_tolerances per problem; scan_tolerance per
        prefix), widened by the reference's own rounding."""
        exact = self.op != "sum" or self.acc.kind != "f"
        if exact:
            return self.numpy(), None
        wide = scan_reference_dtype(self.acc)
        xw = self.x.astype(wide)
        ref_eps = float(np.finfo(wide).eps)
        if self.offsets is not None:
            flat, off = xw.reshape(-1), self.offsets
            longest = int(np.diff(off).max()) if off.size > 1 else 0
            if self.reduces:
                ref = _segmented_reduce(flat, off, "sum", wide)
                ab = _segmented_reduce(np.abs(flat), off, "sum", wide)
                return ref, sum_tolerances(longest, self.acc, ab, ref) + longest * ref_eps * ab
            ref = _segmented_scan(flat, off, "sum", self.inclusive)
            bound = _segmented_scan(np.abs(flat), off, "sum", self.inclusive)
            return ref, scan_tolerance(longest, self.acc, ref, bound)
        ln = self.x.shape[self.axis]
        if self.reduces:
            ref, ab = xw.sum(axis=self.axis), np.abs(xw).sum(axis=self.axis)
            return self._moved(ref), self._moved(sum_tolerances(ln, self.acc, ab, ref) + ln * ref_eps * ab)
        ref, bound = np.cumsum(xw, axis=self.axis), np.cumsum(np.abs(xw), axis=self.axis)
        if not self.inclusive:
            zero = np.zeros_like(np.take(ref, [0], axis=self.axis))
            ref = np.concatenate([zero, np.delete(ref, -1, axis=self.axis)], axis=self.axis)
            bound = np.concatenate([zero, np.delete(bound, -1, axis=self.axis)], axis=self.axis)
        return self._moved(ref), self._moved(scan_tolerance(ln, self.acc, ref, bound))

    def check(self, got, v=None) -> tuple:
        if not self.checking:
            return None, None, ""
        if self.ref is None:
            self.ref = self._reference()
        ref, tol = self.ref
        got = np.asarray(got).reshape(self.out_shape_)
        unit = "ulp" if self.acc.kind == "f" else "abs"
        if tol is None:
            return bool(np.array_equal(got, ref, equal_nan=True)), ulps(got, ref, self.acc), unit
        err = np.abs(got.astype(ref.dtype) - ref)
        return bool(np.all(err <= tol)), ulps(got, ref, self.acc), unit


def _layout_input(fam, x_or_shape, dtype, seed, who):
    """(the host input, N-D, C order; the caller's device array or None)
    from a shape (random input), a NumPy array or a device array."""
    if isinstance(x_or_shape, (int, np.integer)):
        x_or_shape = (int(x_or_shape),)
    if isinstance(x_or_shape, tuple) and all(isinstance(s, (int, np.integer)) for s in x_or_shape):
        want = np.dtype(dtype or "float32")
        if want not in fam.dtypes:
            raise TypeError(f"{fam.name} tables take {', '.join(d.name for d in fam.dtypes)}, not {want}")
        return random_input(tuple(int(s) for s in x_or_shape), want, seed), None
    x, wrapped = _caller_array(x_or_shape, dtype)
    device = None if wrapped is None else x_or_shape
    if x.dtype not in fam.dtypes:
        raise TypeError(f"{fam.name} tables take {', '.join(d.name for d in fam.dtypes)}, not {x.dtype}")
    return np.ascontiguousarray(x), device


# The CUB rows of a determinism level beyond run-to-run, where the build has them.
_DETERMINISTIC_BASELINES = {"gpu_to_gpu": ("cub_reproducible", "cub_deterministic")}


def _float_sum(family, op, dtype) -> bool:
    """Whether a determinism level changes the rows: a float sum (integer
    sums, min and max are exact in any order)."""
    fam = get_family(family)
    acc = fam.result_dtype(np.dtype(dtype or "float32"), op)
    return op == "sum" and acc.kind == "f"


def select_rows(family, variants="all", *, baselines=True, axis=None, segments=None,
                determinism="run_to_run", op="sum", dtype=None, who="compare") -> list:
    """The registry rows a comparison times, in journey order: the 1-D
    journey (axis None, no segments), the rows flagged batched (an axis) or
    segmented (segments); with baselines, the production rows that take the
    same layout (CUB's segmented reduction for an axis or segments).
    determinism="gpu_to_gpu" on a float sum keeps the reproducible rows and
    the CUB rows of that level (cub_reproducible, cub_deterministic) where
    the build has them.  ValueError for a named row that does not take the
    layout or the level, or a level with no row."""
    fam = get_family(family)
    determinism = _axes.check_determinism(determinism, who)
    if segments is not None:
        layout, takes = "segments", (lambda v: v.segmented)
    elif axis is not None:
        layout, takes = "axis", (lambda v: v.batched)
    else:
        layout, takes = None, (lambda v: not (v.batched or v.segmented))
    table = [v for v in fam.layout_variants() if takes(v)] if layout else fam.variants()
    strict = determinism == "gpu_to_gpu" and _float_sum(family, op, dtype)
    det_names = _DETERMINISTIC_BASELINES.get(determinism, ()) if strict else ()

    def level_ok(v):
        return not strict or v.reproducible or v.name in det_names

    if variants == "all":
        chosen = [v for v in table if (baselines or not v.is_baseline) and level_ok(v)
                  and (not strict or not v.is_baseline or v.name in det_names)]
    else:
        names = [variants] if isinstance(variants, str) else list(variants)
        chosen = []
        for nm in names:
            v = fam.lookup(nm)
            if v not in table:
                what = {"axis": "an axis", "segments": "segments", None: "one whole array"}[layout]
                fits = ", ".join(r.name for r in table if not r.is_baseline)
                raise ValueError(f"gpuprims.{who}: {family} variant {v.name!r} does not take {what}; "
                                 f"choose among: {fits}")
            if not level_ok(v):
                fits = ", ".join(r.name for r in table if level_ok(r))
                raise ValueError(f"gpuprims.{who}: {family} variant {v.name!r} is not gpu_to_gpu "
                                 f"reproducible for a float sum; choose among: {fits or 'none yet'}, "
                                 f"or determinism='run_to_run'")
            chosen.append(v)
        if baselines:
            chosen += [v for v in table if v.is_baseline and v not in chosen and level_ok(v)
                       and (not strict or v.name in det_names)]
        order = {v.name: i for i, v in enumerate(table)}
        chosen.sort(key=lambda v: order[v.name])
    if not any(not v.is_baseline for v in chosen) and variants == "all" and strict:
        raise ValueError(f"gpuprims.{who}: determinism='gpu_to_gpu' is not available for a float {family}"
                         f"{'' if layout is None else ' with ' + layout} yet; use determinism='run_to_run'")
    return chosen


def _layout_baseline(family, chosen) -> str | None:
    """The row the x-baseline column divides by: the production row among
    the chosen ones (CUB's segmented or reproducible rows where the layout
    or the level excludes plain CUB), or None."""
    names = [v.name for v in chosen if v.is_baseline and v.where == "device"]
    lib = get_family(family).library.name
    return lib if lib in names else (names[0] if names else None)


def _host_times(fn, runs):
    ms, outs = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        ms.append((time.perf_counter() - t0) * 1e3)
        outs.append(out)
    return ms, outs


def _measure(case: _Case, name, title, *, where, run_timed=None, run_once=None, host_fn=None,
             baseline=False, roof=None, variant=None) -> Result:
    """One row: time, check, count distinct results over k runs."""
    r = Result(case.family.name, name, title, tuple(case.x.shape), case.x.dtype.name, case.op, where,
               bytes=case.bytes,
               k=case.k, baseline=baseline)
    if where == "device":
        ms, out = run_timed()
        outs = [run_once() for _ in range(case.k)]
    else:
        # host code: wall clock, at most HOST_RUNS runs (the textbook's CPU
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
    r.matches, r.max_error, r.error_unit = case.check(out, variant)
    if outs:
        r.distinct = _count_distinct(outs)
        r.k = len(outs)
    r.h2d_ms, r.d2h_ms = case.h2d_ms, case.d2h_ms
    return r


# CUB rows that need CCCL 3.5's determinism requirements (cuda/cub_env.cuh)
_NEEDS_CCCL_3_5 = ("cub_deterministic", "cub_reproducible")


def _variant_row(case: _Case, v: Variant, roof) -> Result:
    reason = case.skip_reason(v)
    if not reason and v.name in _NEEDS_CCCL_3_5 and (_backend.cccl_version() or 0) < 3005000:
        reason = f"skipped: needs CCCL 3.5 or newer; this build's CUB: {_backend.cccl() or 'none'}"
    if reason:
        return Result(case.family.name, v.name, v.title, tuple(case.x.shape), case.x.dtype.name, case.op,
                      v.where, bytes=case.bytes, baseline=v.is_baseline, note=reason)
    if v.where == "host":
        return _measure(case, v.name, v.title, where="host", host_fn=lambda: case.run_host(v),
                        baseline=v.is_baseline, roof=roof, variant=v)
    return _measure(case, v.name, v.title, where="device", run_timed=lambda: case.time_device(v),
                    run_once=lambda: case.run_device(v), baseline=v.is_baseline, roof=roof, variant=v)


def _extra_row(case: _Case, name, fn, roof) -> Result:
    """A caller's own function f(device input) -> result, timed by wall clock
    (it returns when its work is done) and checked like every variant."""
    def once():
        got = fn(case.device)
        if hasattr(got, "__cuda_array_interface__"):
            got = to_device(got).get()
        return got if case.scalar else np.asarray(got)

    r = _measure(case, name, f"{name} (caller's function, wall clock)", where="host",
                 host_fn=once, roof=roof)
    r.where = "device (wall clock)"
    return r


def benchmark(family: str, variant: str, x_or_n=None, *, dtype=None, op: str = "sum",
              inclusive: bool = True, axis=None, segments=None, determinism: str = "run_to_run",
              repeat: int = 30, warmup: int = 3, k: int = 5, flush: bool = True,
              check: bool = True) -> Result:
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

    axis (one int) or segments (k+1 boundaries, as gpuprims.sum's; with
    axis=-1 those of each row) time a reduce or scan row that takes that
    layout (x_or_n: an array or a shape; "auto" is the row the public call
    runs).  determinism="gpu_to_gpu" on a float sum takes the reproducible
    rows only ("auto": the reproducible one).
    """
    fam = get_family(family)
    v = fam.lookup(variant)
    layout = axis is not None or segments is not None
    if layout or determinism != "run_to_run":
        determinism = _axes.check_determinism(determinism, "benchmark")
        if variant == "auto":
            rows = select_rows(family, "all", baselines=False, axis=axis, segments=segments,
                               determinism=determinism, op=op, dtype=dtype, who="benchmark")
            v = next((r for r in rows if r.auto or r.auto_batched), rows[0])
        else:
            select_rows(family, [v.name], baselines=False, axis=axis, segments=segments,
                        determinism=determinism, op=op, dtype=dtype, who="benchmark")
    if x_or_n is None:
        x_or_n = fam.default_size if not layout else (1 << 12, 1 << 12)
    _gpu_first("benchmark")
    if layout:
        case = _LayoutCase(family, x_or_n, axis=axis, segments=segments, dtype=dtype, op=op,
                           inclusive=inclusive, repeat=repeat, warmup=warmup, k=k, flush=flush, check=check,
                           who="benchmark")
    else:
        case = _Case(family, x_or_n, dtype=dtype, op=op, inclusive=inclusive, repeat=repeat,
                     warmup=warmup, k=k, flush=flush, check=check)
    reason = case.skip_reason(v)
    if reason:
        raise ValueError(f"{family} variant {v.name!r}: {reason[len('skipped: '):]}; "
                         f"use variant='auto' ({fam.auto.name})")
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
            inclusive: bool = True, axis=None, segments=None, determinism: str = "run_to_run",
            variants="all", repeat: int = 30, warmup: int = 3, k: int = 5,
            flush: bool = True, check: bool = True, baselines: bool = True, extra: dict | None = None,
            progress=None) -> Table:
    """Time a family's journey on one input and return a Table.

    Rows in journey (registry) order - variants="all" or a list of names -,
    then, with baselines=True, the production library rows (CUB / cuBLAS /
    copy / the textbook's CPU code), the copy roof and NumPy on the CPU.
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

    axis (one int) or segments (k+1 boundaries; with axis=-1 those of each
    row): reduce and scan on that layout - the rows flagged batched (an
    axis) or segmented (segments), CUB's segmented reduction as the
    reduce's baseline, the copy roof of the same bytes and NumPy's own call
    (x.sum(axis), numpy.cumsum(x, axis), numpy.add.reduceat with empty
    segments given the identity); x, or shape= for a random input (default
    4096 x 4096; with segments, n= elements).  The bytes count the offsets.
    determinism="gpu_to_gpu" on a float sum keeps the reproducible rows and
    CUB's rows of that level (cub_reproducible, cub_deterministic) where
    the build has them; "run_to_run" and "not_guaranteed" time every row
    (each is run-to-run deterministic).
    """
    fam = get_family(family)
    layout = axis is not None or segments is not None
    chosen = select_rows(family, variants, baselines=baselines, axis=axis, segments=segments,
                         determinism=determinism, op=op, dtype=dtype if x is None else getattr(x, "dtype", dtype))
    if layout:
        if x is None:
            x = shape if shape is not None else (n if n is not None else (1 << 12, 1 << 12))
        elif shape is not None or n is not None:
            raise ValueError("gpuprims.compare: give x, or shape (n for segments) for a random input, not both")
    elif x is None:
        x = fam.pick_size(n, shape)
    _gpu_first("compare")
    if layout:
        case = _LayoutCase(family, x, axis=axis, segments=segments, dtype=dtype, op=op, inclusive=inclusive,
                           repeat=repeat, warmup=warmup, k=k, flush=flush, check=check)
    else:
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
            progress(done, steps, f"{fam.name} {label}")

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
        if layout and case.offsets is not None and not case.reduces:
            row.note = "NumPy has no segmented scan: a vectorized Hillis-Steele scan (the reference's)"
        rows.append(row.to_dict())
        tick("numpy")
    base = _layout_baseline(family, chosen) if (layout or determinism == "gpu_to_gpu") else fam.library.name
    _speedups(rows, base)
    title = f"{case.title()} - CUDA events, median of {repeat}{', L2 flushed' if flush else ''}"
    if determinism != "run_to_run":
        title += f", determinism={determinism}"
    meta = {"family": fam.name, "op": case.op,
            "inclusive": inclusive if "inclusive" in fam.options else None, "dtype": case.x.dtype.name,
            "shape": list(case.x.shape), "n": case.n, "bytes": case.bytes, "repeat": repeat,
            "warmup": warmup, "k": k, "flush_bytes": case.flush_bytes, "roof_gbps": roof["gbps"],
            "h2d_ms": case.h2d_ms, "d2h_ms": case.d2h_ms, "baseline": base,
            "axis": getattr(case, "axis", None), "segments": getattr(case, "problems", None) if segments is not None
            else None, "determinism": determinism}
    footer = _transfer_line(case)
    label = fam.library_label if base == fam.library.name or base is None else base
    return Table(rows, _columns(label), title=title, meta=meta, footer=footer)


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
