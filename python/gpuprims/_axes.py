"""How a NumPy-style call of reduce or scan becomes calls of the core.

Three things are decided here, once for both families:

- the dtypes (`DtypePlan`): NumPy's result dtype, the accumulator the
  kernels compute in (int32, int64, float32 or float64) and the dtype an
  array result is converted to afterwards.  Complex data is computed as
  its real and imaginary parts: a trailing axis of 2 floats;
- the axes (`normalize_axes`, `layout`): an axis of an N-D array is
  `outer x len x inner` problems read through the input's strides
  (gpuprims.h, gp_batch); several axes that are not one block are reduced
  one block after another;
- the segments (`take_segments`, `segment_offsets`): k+1 int64
  boundaries, checked, and the longest segment's length, which the
  checking finds anyway: the core skips its work for long segments where
  none can be long (gpuprims.h, gp_batch.longest).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._arrays import DeviceArray, Operand, c_contiguous_strides, to_device

try:  # NumPy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - older NumPy
    AxisError = np.AxisError

KERNEL_DTYPES = tuple(np.dtype(t) for t in ("int32", "int64", "float32", "float64"))
# The input dtypes reduce and scan take: NumPy's numeric ones.
DTYPES = tuple(np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))
_NUMPY_NAMES = {"sum": "add", "min": "minimum", "max": "maximum"}


class DtypePlan:
    """The dtypes of one call: `result` (NumPy's), `acc` (the kernels'),
    `complex_part` (the float dtype of a complex result's parts, or None),
    `pairs` (the input is complex: read as a trailing axis of 2 floats),
    `direct` (the kernels' output is the result's memory) and `flip`
    (uint64 min/max: computed on int64 with the sign bit flipped, which maps
    unsigned order onto signed order)."""

    __slots__ = ("result", "acc", "complex_part", "pairs", "flip", "kernel_in")

    def __init__(self, op: str, in_dtype, dtype=None, who="reduce"):
        in_dtype = np.dtype(in_dtype).newbyteorder("=")  # the kernels read native order (to_kernel)
        result = _result_dtype(op, in_dtype, dtype, who)
        self.result = result
        self.complex_part = None
        self.pairs = in_dtype.kind == "c"
        self.flip = False
        self.kernel_in = in_dtype
        if result.kind == "c":
            if in_dtype.kind == "c":
                self.kernel_in = np.dtype(f"f{in_dtype.itemsize // 2}")
            self.complex_part = np.dtype(f"f{result.itemsize // 2}")
            self.acc = self.complex_part
        elif op == "sum":
            self.acc = {"b": np.dtype("int64"), "i": np.dtype("int64"), "u": np.dtype("int64"),
                        "f": np.dtype("float64") if result == np.float64 else np.dtype("float32")}[result.kind]
            if result == np.int32:
                self.acc = result
        elif result == np.uint64:
            self.acc, self.flip, self.kernel_in = np.dtype("int64"), True, np.dtype("int64")
        elif result.kind == "f":
            self.acc = np.dtype("float64") if result == np.float64 else np.dtype("float32")
        else:
            self.acc = np.dtype("int64") if result.itemsize == 8 or result == np.uint32 else np.dtype("int32")
        if in_dtype.kind == "c" and result.kind != "c":
            raise TypeError(f"gpuprims.{who}: dtype={result} would drop the imaginary part of a "
                            f"{in_dtype} input; pass a complex dtype")

    def native_uint64(self) -> "DtypePlan":
        """For a variant that reads uint64 min/max as they are (narrow_in):
        the uint64 accumulator instead of int64 with the sign bit flipped
        (no conversion on the host)."""
        if self.flip:
            self.acc, self.flip, self.kernel_in = np.dtype("uint64"), False, np.dtype("uint64")
        return self

    def codes(self, codes: dict) -> tuple:
        """(input code, accumulator code, result code) for the core's params."""
        return codes[self.kernel_in], codes[self.acc], codes[self.kernel_result]

    def to_kernel(self, x: np.ndarray) -> np.ndarray:
        """A host input as the kernels read it: in native byte order, a
        complex one as float pairs, a uint64 one for min/max with its sign
        bit flipped."""
        if not x.dtype.isnative:
            x = x.astype(x.dtype.newbyteorder("="))
        if self.pairs:
            x = np.ascontiguousarray(x).view(self.kernel_in).reshape(x.shape + (2,))
        elif self.flip:
            x = np.ascontiguousarray(x).view(np.int64) ^ np.int64(-(1 << 63))
        return x

    def from_kernel(self, y):
        """A host result of the kernels (a NumPy array) in the result dtype."""
        if self.complex_part is not None and self.pairs:
            y = np.ascontiguousarray(y)
            return y.view(self.result).reshape(y.shape[:-1])
        if self.complex_part is not None:
            return np.asarray(y).astype(self.result)
        if self.flip:
            return (np.asarray(y, dtype=np.int64) ^ np.int64(-(1 << 63))).view(np.uint64)
        return y

    @property
    def direct(self) -> bool:
        """Whether the kernels' output can be the result's memory (no
        conversion after them on the host)."""
        return not self.flip and (self.complex_part is None or self.pairs)

    @property
    def acc_is_result(self) -> bool:
        """Whether the kernels' accumulator is the result as it is (no
        conversion at all): a full reduction's value can be written into a
        device out by the kernels."""
        return self.acc == self.result and self.direct

    @property
    def kernel_result(self) -> np.dtype:
        """The dtype the kernels' final output is written in."""
        return self.result if self.direct and self.complex_part is None else (
            self.complex_part if self.complex_part is not None else self.acc)

    def scalar(self, value):
        """The core's value of a full reduction as a NumPy scalar of the
        result dtype (uint64 sums wrap as NumPy's do)."""
        a = np.asarray(value, dtype=self.acc)
        if self.flip:
            return (a ^ np.int64(-(1 << 63))).view(np.uint64)[()]
        return a.astype(self.result)[()]

    def host_only(self, operand) -> bool:
        """Whether a device input must be brought to the host first: a
        conversion only done there (non-native byte order, uint64 min/max)."""
        return self.flip or not operand.dtype.isnative

    def kernel_operand(self, operand: Operand) -> Operand:
        """The operand as the kernels read it: complex data as a trailing axis
        of 2 floats (a view on the device), the host conversions applied."""
        if operand.strided_host is not None and operand._host is None and not self.pairs and \
                not self.host_only(operand):
            return operand  # NumPy read through its strides (the host pipeline packs it)
        if operand.host is not None or self.host_only(operand):
            a = self.to_kernel(operand.to_host())
            return Operand(a.shape, a.dtype, a, None)
        if not self.pairs:
            return operand
        shape = operand.shape + (2,)
        st = tuple(2 * s for s in operand.element_strides()) + (1,)
        if st == c_contiguous_strides(shape, 1):
            st = None
        return Operand(shape, self.kernel_in, None, None, ptr=operand.ptr, strides=st, owner=operand)


def _result_dtype(op, in_dtype, dtype, who) -> np.dtype:
    """NumPy's rule: a sum of bool or of a signed integer type accumulates in
    int64 (the platform integer), of an unsigned one in uint64; float and
    complex sums keep their type; min/max keep the input type.  dtype=
    overrides it."""
    if in_dtype not in DTYPES:
        raise TypeError(f"gpuprims.{who} does not support dtype {in_dtype}; supported: "
                        f"{', '.join(d.name for d in DTYPES)}")
    if op != "sum" and in_dtype.kind == "c":
        raise TypeError(f"gpuprims.{who}: {op} of complex numbers is not supported (NumPy's "
                        f"ordering of complex numbers is lexicographic; compare .real and .imag)")
    if dtype is not None:
        d = np.dtype(dtype)
        if d not in DTYPES or (op == "sum" and d == np.bool_):
            names = ", ".join(t.name for t in DTYPES if not (op == "sum" and t == np.bool_))
            raise TypeError(f"gpuprims.{who}: dtype={d} is not supported; choose one of: {names}")
        if op != "sum" and d != in_dtype:
            raise TypeError(f"gpuprims.{who}: {op} keeps the input's dtype; dtype={d} would "
                            f"change it (convert the input first)")
        return d
    if op == "sum" and in_dtype.kind in "bi":
        return np.dtype("int64")
    if op == "sum" and in_dtype.kind == "u":
        return np.dtype("uint64")
    return in_dtype.newbyteorder("=")


def normalize_axes(axis, ndim: int, who: str) -> tuple:
    """axis (None, an int or a tuple of ints, negatives counting from the
    end) as a sorted tuple of axis numbers; NumPy's AxisError (a
    ValueError) for one out of range, ValueError for a repeated one."""
    if axis is None:
        return tuple(range(ndim))
    if ndim == 0 and not isinstance(axis, (tuple, bool, np.bool_)) and axis in (0, -1):
        return ()  # NumPy's reductions take an int axis 0 or -1 for a 0-d array
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"gpuprims.{who}: axis must be None, an int or a tuple of ints, "
                            f"not {type(a).__name__}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"gpuprims.{who}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def fuse(shape, strides):
    """A group of axes as one (length, stride), or None if their strides do
    not make them one: each axis's stride is the next one's times its
    length (C order)."""
    length, stride = 1, None
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 1:
            continue
        if stride is None:
            stride = s
        elif s != stride * length:
            return None
        length *= n
    return length, (stride if stride is not None else 0)


def layout(operand: Operand, first: int, last: int):
    """The gp_batch layout for the problems along axes [first, last) of the
    operand: (outer, len, inner, s_outer, s_len, s_inner, 0), or None where
    a group of axes cannot be fused through its strides."""
    shape, strides = operand.shape, operand.element_strides()
    groups = [fuse(shape[:first], strides[:first]), fuse(shape[first:last], strides[first:last]),
              fuse(shape[last:], strides[last:])]
    if any(g is None for g in groups):
        return None
    (outer, so), (n, sn), (inner, si) = groups
    return (outer, n, inner, so, sn, si, 0)


def blocks(axes: tuple) -> list:
    """Consecutive runs of axis numbers: (0, 1, 3) -> [(0, 2), (3, 4)]."""
    runs = []
    for a in axes:
        if runs and runs[-1][1] == a:
            runs[-1][1] = a + 1
        else:
            runs.append([a, a + 1])
    return [tuple(r) for r in runs]


def take_segments(segments, n: int, who: str, cover: str = "") -> tuple[np.ndarray, int]:
    """k+1 segment boundaries as a C-contiguous int64 NumPy array: integers,
    1-D, non-decreasing, within [0, n] (and from 0 to n where `cover` says
    why they must cover the data); and the longest segment's length.
    ValueError saying which rule a bad one breaks."""
    if hasattr(segments, "__cuda_array_interface__") or isinstance(segments, DeviceArray):
        segments = to_device(segments).get()
    off = np.asarray(segments)
    if off.dtype.kind not in "iu" or off.dtype == np.uint64 and off.size and off.max() > n:
        raise ValueError(f"gpuprims.{who}: segments must be integers (int64 boundaries), "
                         f"not {off.dtype}")
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"gpuprims.{who}: segments must be a 1-D array of k+1 boundaries, "
                         f"got shape {off.shape}")
    off = np.ascontiguousarray(off, dtype=np.int64)
    lengths = np.diff(off)
    if lengths.size and lengths.min() < 0:
        raise ValueError(f"gpuprims.{who}: segment boundaries must be non-decreasing")
    if off[0] < 0 or off[-1] > n:
        raise ValueError(f"gpuprims.{who}: segment boundaries must lie in [0, {n}], "
                         f"got {int(off[0])} .. {int(off[-1])}")
    if cover and (off[0] != 0 or off[-1] != n):
        raise ValueError(f"gpuprims.{who}: {cover}: boundaries from 0 to {n}, "
                         f"got {int(off[0])} .. {int(off[-1])}")
    return off, int(lengths.max()) if lengths.size else 0


class Segments(NamedTuple):
    """The segments of a call: `off` the k+1 boundaries over all the data
    (int64), `rows` rows of `k` segments each, `longest` the longest
    segment's length."""
    off: np.ndarray
    rows: int
    k: int
    longest: int

    def layout(self, n: int, ptr: int) -> tuple:
        """The core's layout for these segments of n elements, the offsets
        at device address ptr (gpuprims.h, gp_batch: the longest length
        is its bound on every segment)."""
        return (self.off.size - 1, n, 1, 0, 1, 0, ptr, self.longest)


def segment_offsets(segments, shape, axis, plan: DtypePlan, who: str, cover: str = "") -> Segments:
    """The segments of a reduce or a scan call - of the flattened data (axis
    None) or of each row (the last axis) - as boundaries over all the data
    (Segments), k segments a row.  Each row's segments must cover the row
    (and all segments the data where `cover` says why).  ValueError for
    another axis or bad boundaries, TypeError for complex data."""
    ndim = len(shape)
    if axis is not None and normalize_axes(axis, ndim, who) != (ndim - 1,):
        raise ValueError(f"gpuprims.{who}: segments split the flattened data (axis=None) or each "
                         f"row (axis=-1), not axis {axis!r}")
    if plan.pairs:
        raise TypeError(f"gpuprims.{who}: segments of complex data are not supported; pass .real "
                        f"and .imag")
    row = shape[-1] if axis is not None else prod(shape)
    rows = prod(shape[:-1]) if axis is not None else 1
    off, longest = take_segments(segments, row, who,
                                 cover or ("segments of each row must cover the row" if rows > 1 else ""))
    k = off.size - 1
    if rows > 1:  # each row's segments (they cover the row), as segments of all the data
        off = np.append((off[None, :-1] + (np.arange(rows, dtype=np.int64) * row)[:, None]).ravel(),
                        np.int64(rows * row))
    return Segments(off, rows, k, longest)


def identity_error(op, who):
    """NumPy's error for min/max of nothing, naming the function called."""
    return ValueError(f"gpuprims.{who}: zero-size array to reduction operation {_NUMPY_NAMES[op]} "
                      f"which has no identity")


def prod(shape) -> int:
    return math.prod(shape)


def batched_variant(family: str, v):
    """The row that runs an axis or segments: v itself if it takes a layout,
    else the family's auto_batched row when v is the auto one (the
    reproducible batched row when v is the reproducible 1-D one)."""
    from ._registry import variants
    if v.batched or v.segmented:
        return v
    if v.auto:
        return next(r for r in variants(family) if r.auto_batched)
    if v.reproducible:
        return next(r for r in variants(family) if r.reproducible and (r.batched or r.segmented))
    return v  # a 1-D row: the core refuses the layout, naming the one to use


DETERMINISM = ("not_guaranteed", "run_to_run", "gpu_to_gpu")


def check_determinism(determinism, who: str) -> str:
    """determinism, checked: one of CCCL's names (DETERMINISM)."""
    if not isinstance(determinism, str) or determinism not in DETERMINISM:
        raise ValueError(f"gpuprims.{who}: determinism must be one of {', '.join(map(repr, DETERMINISM))}, "
                         f"not {determinism!r}")
    return determinism


def deterministic_variant(family: str, v, op: str, plan: DtypePlan, determinism: str, who: str,
                          name: str = "auto"):
    """The row that gives `determinism` for this call.  Only a float sum
    needs another row for "gpu_to_gpu" (integer sums, min and max are exact
    in any order, and every row is run-to-run deterministic; no faster
    non-deterministic path exists, so "not_guaranteed" runs what
    "run_to_run" runs): variant="auto" becomes the family's reproducible
    row; a named row (`name`, as the caller gave it) that is not
    reproducible is a ValueError naming the one that is."""
    determinism = check_determinism(determinism, who)
    if determinism != "gpu_to_gpu" or op != "sum" or np.dtype(plan.acc).kind != "f" or v.reproducible:
        return v
    from ._registry import variants
    rows = [r for r in variants(family) if r.reproducible]
    if not rows:
        raise ValueError(f"gpuprims.{who}: determinism='gpu_to_gpu' is not available for a float {family} "
                         f"yet; use determinism='run_to_run'")
    if name == "auto":
        return next(r for r in rows if not (r.batched or r.segmented))
    names = " or ".join(repr(r.name) for r in rows)
    raise ValueError(f"gpuprims.{who}: variant {v.name!r} is not gpu_to_gpu reproducible for a float sum; "
                     f"use variant={names} or 'auto', or determinism='run_to_run'")


def as_operand(result) -> Operand:
    """A pass's output (NumPy or DeviceArray) as the next pass's input."""
    if isinstance(result, DeviceArray):
        return Operand(result.shape, result.dtype, None, result)
    return Operand(result.shape, result.dtype, result, None)


def gathered(kop: Operand) -> Operand:
    """kop with C-contiguous elements (a strided device input gathered)."""
    if kop.strides is None:
        return kop
    d = kop.to_device()
    return Operand(d.shape, d.dtype, None, d)


def kernel_out(target, shape, dtype):
    """An Out writing the kernels' result (shape, dtype) straight into the
    caller's out: the same memory seen as the kernels' shape (keepdims'
    size-1 axes dropped, complex as float pairs)."""
    from ._family import Out
    if target.on_device:
        return target
    view = target.buffer.view(dtype).reshape(shape)
    return Out(view, target.result, False, host=target._host)


def deliver(result, plan: DtypePlan, shape, on_device: bool, target, converted=False):
    """The kernels' final output (NumPy or DeviceArray; converted: a NumPy
    array already in the result dtype) as the call's result: in the result
    dtype and shape, where the input was, or written into the caller's
    out."""
    from ._core import htod
    if target is not None and result is target.result:  # written there by the kernels
        return result
    if isinstance(result, DeviceArray) and plan.complex_part is not None and plan.pairs:
        result = DeviceArray(shape, plan.result, _ptr=result.ptr, _owner=result)
    elif isinstance(result, DeviceArray) and not plan.direct:  # converted on the host
        result = to_device(np.ascontiguousarray(plan.from_kernel(result.get())).reshape(shape))
    elif isinstance(result, DeviceArray):
        result = DeviceArray(shape, result.dtype, _ptr=result.ptr, _owner=result) \
            if result.shape != tuple(shape) else result
    else:
        result = np.ascontiguousarray(result if converted else plan.from_kernel(result)).reshape(shape)
    if target is not None:
        if target.on_device:
            host = result.get() if isinstance(result, DeviceArray) else result
            if host.nbytes:
                htod(target.buffer, np.ascontiguousarray(host))
            return target.result
        np.copyto(target.buffer, result.get() if isinstance(result, DeviceArray) else result)
        return target.finish()
    if on_device and not isinstance(result, DeviceArray):
        return to_device(result)
    return result
