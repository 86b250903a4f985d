"""Transpose: gpuprims.transpose, gpuprims.transpose_plan, and the transpose Family."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import _backend, _core
from ._arrays import DeviceArray, Operand, _check, _host_array, take, to_device
from ._family import Family, invoke, ready_out, register, take_out
from ._numerics import ulps
from ._registry import Variant, lookup, variants
from ._table import Column, Table

# Any element of 1, 2, 4, 8 or 16 bytes: a transpose only moves bits.  Each
# maps to what the core's params take of it: its size and its name (for a
# variant's dtypes list; numpy computes dtype.name anew on every access).
DTYPES = {np.dtype(t): (np.dtype(t).itemsize, t) for t in (
    "bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32",
    "int64", "uint64", "float64", "complex64", "complex128")}


class _EitherByteOrder(tuple):
    """The supported dtypes, in either byte order: the output keeps the
    input's dtype, byte order included (the elements are only moved)."""

    def __contains__(self, dtype) -> bool:
        try:  # a native dtype first (the common case), then either byte order
            return dtype in DTYPES or np.dtype(dtype).newbyteorder("=") in DTYPES
        except TypeError:
            return False


SUPPORTED = _EitherByteOrder(DTYPES)


def _element(dtype: np.dtype) -> tuple:
    """(size, name) for the core: a byte-swapped dtype is named apart, so
    that a variant limited to some dtypes (cuBLAS computes on floats) does
    not take it for the native one."""
    size, name = DTYPES[dtype.newbyteorder("=")]
    return size, (name if dtype.isnative or size == 1 else f"{name} (byte-swapped)")


# ----------------------------------------------------------------- the plan

@dataclass(frozen=True)
class TransposePlan:
    """What the kernels are given for numpy.transpose(x, axes): the
    input's axes after dropping those of size 1 and fusing those that stay
    adjacent and in the same order in the input and the output (where the
    input's strides allow it).

    shape, strides (in elements) and axes describe the planned problem: its
    output is the C-contiguous array of shape (shape[axes[0]], ...), the
    same bytes as numpy.ascontiguousarray(numpy.transpose(x, axes)).
    groups[k] lists the original axes that planned axis k holds.  fastest
    (the input axis of smallest |stride|) and out_fastest (axes[-1]) are
    the two axes the tiled kernel moves its tiles between; where they are
    the same axis the transpose is a batched copy of runs (kind "copy"),
    else kind "tile"; a rank-2 C-contiguous problem is a "matrix"."""

    shape: tuple
    strides: tuple
    axes: tuple
    groups: tuple
    in_shape: tuple  # the caller's array
    in_axes: tuple  # the caller's axes, normalized

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def fastest(self):
        """The input axis of smallest nonzero |stride| (the last on ties; a
        broadcast axis, stride 0, only where all are): as nd_tiled picks it."""
        if not self.shape:
            return None
        return min(reversed(range(self.rank)), key=lambda k: (self.strides[k] == 0, abs(self.strides[k])))

    @property
    def out_fastest(self):
        return self.axes[-1] if self.axes else None

    @property
    def contiguous(self) -> bool:
        return self.strides == _c_strides(self.shape)

    @property
    def kind(self) -> str:
        if self.rank <= 1 or self.fastest == self.out_fastest:
            return "copy"
        return "matrix" if self.rank == 2 and self.contiguous else "tile"

    @property
    def out_shape(self) -> tuple:
        return tuple(self.in_shape[a] for a in self.in_axes)

    def axis_name(self, k) -> str:
        """Planned axis k as the letters of the original axes it holds
        (i, j, k, ... for axes 0, 1, 2, ...) and its length: "jk:8192"."""
        letters = "ijklmnopqrstuvwxyzabcdefgh"
        return "".join(letters[g % 26] for g in self.groups[k]) + f":{self.shape[k]}"

    def __str__(self) -> str:
        ins = ", ".join(self.axis_name(k) for k in range(self.rank))
        outs = ", ".join(self.axis_name(k) for k in self.axes)
        text = f"({ins}) -> ({outs}), strides {self.strides}: {self.kind}"
        if self.kind != "copy":
            text += f", tiles between {self.axis_name(self.fastest)} and {self.axis_name(self.out_fastest)}"
        elif self.rank:
            text += f" of runs along {self.axis_name(self.fastest)}"
        return text


def _c_strides(shape) -> tuple:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def _normalize_axes(ndim: int, axes) -> tuple:
    """axes as numpy.transpose reads them (None reverses; negative entries
    count from the end), with numpy's own errors: a dummy array of `ndim`
    size-1 axes with distinct strides is transposed by numpy, and its
    strides say where each axis went."""
    dummy = np.lib.stride_tricks.as_strided(np.empty(1, np.uint8), shape=(1,) * ndim,
                                            strides=tuple(range(ndim)), writeable=False)
    return tuple(int(s) for s in np.transpose(dummy, axes).strides)


def transpose_plan(shape, axes=None, strides=None) -> TransposePlan:
    """The plan of numpy.transpose(x, axes) for an x of `shape` (and element
    `strides`, default C-contiguous): size-1 axes dropped, then each run
    of axes that are adjacent and in order in both the input and the
    output fused into one, where the strides allow (stride[a] == stride[b]
    * shape[b] for a followed by b).  Errors for bad axes are numpy's.

    >>> print(gpuprims.transpose_plan((64, 128, 64, 128), (0, 3, 1, 2)))
    (i:64, jk:8192, l:128) -> (i:64, l:128, jk:8192), strides (1048576, 128, 1): tile, tiles between l:128 and jk:8192
    """
    shape = tuple(int(d) for d in shape)
    in_axes = _normalize_axes(len(shape), axes)
    strides = _c_strides(shape) if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match shape {shape}")
    keep = [k for k in range(len(shape)) if shape[k] != 1]
    # runs of the output order whose input axes follow each other
    runs: list = []
    for a in (k for k in in_axes if shape[k] != 1):
        if runs and _next_kept(keep, runs[-1][-1]) == a and strides[runs[-1][-1]] == strides[a] * shape[a]:
            runs[-1].append(a)
        else:
            runs.append([a])
    order = sorted(range(len(runs)), key=lambda r: runs[r][0])  # runs in input order
    rank_of = {r: i for i, r in enumerate(order)}
    p_shape = tuple(math.prod(shape[a] for a in runs[r]) for r in order)
    p_strides = tuple(strides[runs[r][-1]] for r in order)
    p_axes = tuple(rank_of[r] for r in range(len(runs)))
    groups = tuple(tuple(runs[r]) for r in order)
    if any(d == 0 for d in shape):  # an empty array: nothing to move
        p_shape, p_strides, p_axes, groups = (0,), (1,), (0,), (tuple(range(len(shape))),)
    return TransposePlan(p_shape, p_strides, p_axes, groups, shape, in_axes)


@functools.lru_cache(maxsize=256)
def _cached_plan(shape, axes, strides, dtype, offset, span) -> tuple:
    plan = transpose_plan(shape, axes, strides)
    return plan, _params(plan, dtype, offset, span)


def _plan(shape, axes, dtype, strides=None, offset=0, span=None) -> tuple:
    """(transpose_plan, the core's params of it), remembered for the last
    256 calls' (shape, axes, strides, dtype, offset, span): a call on a
    small array spends most of its host time planning, and plans are
    frozen.  Axes other than None or a tuple/list of plain integers go to
    transpose_plan every time, so that NumPy judges them."""
    if axes is not None:
        if not isinstance(axes, (tuple, list)) or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) for k in axes):
            plan = transpose_plan(shape, axes, strides)
            return plan, _params(plan, dtype, offset, span)
        axes = tuple(int(k) for k in axes)
    return _cached_plan(tuple(shape), axes, None if strides is None else tuple(strides), np.dtype(dtype),
                        offset, span)


def _next_kept(keep, a):
    """The kept (not size-1) axis after a, or None."""
    i = keep.index(a)
    return keep[i + 1] if i + 1 < len(keep) else None


# ------------------------------------------------------------ the call


def _params(plan: TransposePlan, dtype, offset=0, span=None) -> tuple:
    """The core's params: (shape, strides or None, axes, element size,
    dtype name, offset, span); None strides: C-contiguous.  offset: elements
    from the buffer's start to x[0, ..., 0]; span: the buffer's elements
    (None: n; -1: a device address, read wherever the strides point)."""
    n = math.prod(plan.shape)
    strides = None if plan.contiguous and offset == 0 and span in (None, n) else plan.strides
    return (plan.shape, strides, plan.axes, *_element(np.dtype(dtype)), int(offset),
            int(n if span is None else span))


def _out_shape(shape, v) -> tuple:
    """(cols, rows); the `copy` variant (the bandwidth roof) keeps the input's shape."""
    rows, cols = shape
    return (rows, cols) if v.name == "copy" else (cols, rows)


def _host_span(a: np.ndarray):
    """(buffer, element strides, offset, span) that read `a` in place: a 1-D
    C-contiguous view of the memory from a's lowest to its highest element,
    the offset of a[0, ..., 0] in it; None where a's strides are not whole
    elements or the span holds more than twice a's elements (then a
    contiguous copy is smaller to move)."""
    item = a.itemsize
    if any(s % item for s in a.strides):
        return None
    strides = tuple(s // item for s in a.strides)
    lo = sum(s * (d - 1) for s, d in zip(strides, a.shape) if s < 0)
    hi = sum(s * (d - 1) for s, d in zip(strides, a.shape) if s > 0)
    span = hi - lo + 1
    if span > 2 * a.size:
        return None
    low = a[tuple(slice(d - 1, d) if s < 0 else slice(0, 1) for s, d in zip(strides, a.shape))]
    buf = np.lib.stride_tricks.as_strided(low, shape=(span,), strides=(item,), writeable=False)
    return buf, strides, -lo, span


def _matrix_error(v: Variant, plan: TransposePlan) -> ValueError:
    auto = lookup("transpose", "auto").name
    return ValueError(
        f"transpose variant '{v.name}' takes matrices (2-D work on a C-contiguous array); this call "
        f"plans to {plan.rank} axes ({plan}); use variant='{auto}' or variant='auto', which take "
        f"any rank and any strides")


# (variant, axes, shape, dtype) -> (the variant's index, the core's params,
# the result's shape), for transposes of DeviceArrays whose kernels write the
# result as it is (see the hot path in transpose)
_PARSED: dict = {}


def _hot_key(variant, axes, x):
    """The _PARSED key of a call on DeviceArray x, or None where its axes
    are not None or a tuple of plain ints (a list, NumPy or bool entries:
    the parsing judges those every time, as NumPy would)."""
    if axes is None or (type(axes) is tuple and all(type(k) is int for k in axes)):
        return variant, axes, x.shape, x.dtype
    return None


def transpose(x, axes=None, *, out=None, variant: str = "auto", progress: bool = False):
    """numpy.ascontiguousarray(numpy.transpose(x, axes)), on the GPU.

    x: a NumPy array or a device array (DeviceArray, CuPy, PyTorch CUDA
    tensor, anything with __cuda_array_interface__) of any rank and any
    strides (negative ones included: read in place, not gathered), of
    elements of 1, 2, 4, 8 or 16 bytes (bool, integers, floats, complex;
    either byte order, kept in the output).  axes as in numpy.transpose:
    None reverses them, negative entries count from the end; a bad or
    repeated axis raises numpy's ValueError (AxisError).  NumPy in, NumPy
    out (C-contiguous); device in, DeviceArray out.  A 0-d x gives a 0-d
    copy (where numpy.ascontiguousarray would give shape (1,)).

    out: an array of the result's shape and dtype on the same side as x
    (NumPy, or a C-contiguous device array) that receives the result;
    nothing is allocated for it.

    `variant` names a step of the journey (gpuprims.variants("transpose"));
    "auto" is the fastest.  The 2-D steps (serial ... tiled_wide, cublas,
    cpu: Variant.matrix) take calls whose plan (gpuprims.transpose_plan) is
    a matrix transpose, on a C-contiguous copy of x; nd_naive and nd_tiled
    take any.  The `copy` variant is the bandwidth roof: it returns a copy
    of x with x's own shape, not the transpose.

    progress: True shows a progress line on stderr for a call on a NumPy
    array expected to take more than 2 s (the host pipeline's tiles);
    Ctrl-C stops such a call between tiles whether or not it is shown.
    """
    hot = type(x) is DeviceArray and x._backend == _backend.current
    if hot:
        # The hot path - a DeviceArray whose (variant, axes, shape, dtype)
        # parsed before - goes straight to the core, into a new DeviceArray
        # or into out= (one of the result's shape and dtype, outside x).
        try:
            key = _hot_key(variant, axes, x)
            fast = None if key is None else _PARSED.get(key)
        except TypeError:  # an unhashable variant: the parsing below says what is wrong
            key = fast = None
        if fast is not None:
            index, params, shape = fast
            if out is None:
                y = DeviceArray._result(x.size, x.dtype, shape)
            else:
                y = out if ready_out(out, x, shape, x.dtype) else None  # else the parsing below
            if y is not None:
                _core.call("transpose", index, x._ptr, y._ptr, params)
                return y
    v = lookup("transpose", variant)
    strided = not v.matrix and v.name != "copy"  # reads through strides
    if not isinstance(x, (np.ndarray, list, tuple, np.generic)):  # device arrays (or TypeError)
        operand = take(x, "transpose", SUPPORTED, strided=strided, allow_0d=True)
        # a device address: the kernels read where the strides point (span -1)
        plan, params = _plan(operand.shape, axes, operand.dtype, operand.strides, 0,
                             None if operand.strides is None else -1)
    else:
        a = _host_array(x, "transpose")
        _check(a.dtype, a.ndim, "transpose", SUPPORTED, allow_0d=True)
        spanned = _host_span(a) if strided and not a.flags.c_contiguous and a.size else None
        if spanned is not None:  # NumPy read in place: the memory its elements span
            buf, strides, offset, span = spanned
            plan, params = _plan(a.shape, axes, a.dtype, strides, offset, span)
            operand = Operand(a.shape, a.dtype, buf, None)
        else:
            plan, params = _plan(a.shape, axes, a.dtype)
            operand = Operand(a.shape, a.dtype, np.ascontiguousarray(a), None)
    if v.matrix and plan.rank > 1 and plan.kind != "matrix":
        raise _matrix_error(v, plan)
    out_shape = operand.shape if v.name == "copy" else plan.out_shape
    target = take_out(out, out_shape, operand.dtype, operand, x, "transpose")
    result = invoke("transpose", v, operand, out_shape, operand.dtype, params, out=target, progress=progress)
    if hot and key is not None and v.where == "device" and x.size:
        if len(_PARSED) >= 256:  # shapes are part of the key: a bounded memory of them
            _PARSED.clear()
        _PARSED[key] = (v.index, params, tuple(out_shape))
    return result


# ------------------------------------------------------- timing any rank


def _any_rank_variants() -> list:
    """The device variants that take any rank, in journey order (not the copy roof)."""
    return [v for v in variants("transpose") if not v.matrix and v.where == "device" and v.name != "copy"]


def compare_permutations(cases, dtype="float32", *, variants=None, repeat: int = 20, warmup: int = 3,
                         check: bool = True, flush: bool = True, peers: bool = True, progress=None) -> Table:
    """Time transposes of any rank on the GPU: one row per (shape, axes)
    case of `cases`, a column of milliseconds per variant (default: those
    that take any rank), the GB/s and % of the copy roof of variant="auto",
    and the plan.  Method as gpuprims.compare: CUDA events around the
    kernel only, `warmup` runs, the median of `repeat`, the L2 flushed and
    the output poisoned before each run, the roof a device-to-device copy
    of the same bytes in this call; every output checked against NumPy
    (check=False: not).  A variant that takes matrices only gets no time
    where the plan is not a matrix transpose.  With peers (the default),
    CuPy's cupy.ascontiguousarray(x.transpose(axes)) and PyTorch's
    x.permute(axes).contiguous() where they are installed, on the same
    device array, timed with their own CUDA events the same way (their
    output allocations included, as their users call them): columns
    `cupy_ms` / `x_cupy` and `torch_ms` / `x_torch` (the peer's median /
    auto's).  Not on the emulator backend, where there is no device array
    for them to read.

    >>> gpuprims.compare_permutations([((512, 256, 512), (2, 1, 0)), ((16,) * 6, None)])
    """
    from . import _bench
    from ._bench import FLUSH_L2_TIMES, Progress, _l2_bytes, copy_roof, random_input

    dtype = np.dtype(dtype)
    chosen = _any_rank_variants() if variants is None else [lookup("transpose", n) for n in variants]
    auto = lookup("transpose", "auto")
    if auto not in chosen:
        chosen.append(auto)
    info = _core.device_info()  # NoDeviceError before any work where there is no GPU
    flush_bytes = FLUSH_L2_TIMES * _l2_bytes() if flush else 0
    cases = [(tuple(shape), axes) for shape, axes in cases]
    others = _bench.transpose_peers(flush) if peers and info.get("backend") != "emulator" else {}
    if progress is True:
        progress = Progress()
    rows = []
    for i, (shape, axes) in enumerate(cases):
        plan = transpose_plan(shape, axes)
        x = random_input(shape, dtype, seed=i)
        d, out = to_device(x), DeviceArray(plan.out_shape, dtype)
        roof = copy_roof(x.nbytes, warmup=warmup, repeat=repeat, flush=flush)
        want = np.transpose(x, plan.in_axes).copy(order="C") if check else None
        row = {"variant": f"{' x '.join(map(str, shape))} {plan.in_axes}", "shape": list(shape),
               "axes": list(plan.in_axes), "dtype": dtype.name, "bytes": 2 * x.nbytes,
               "plan": str(plan), "roof_gbps": roof["gbps"], "matches": None if not check else True}
        for v in chosen:
            if v.matrix and plan.rank > 1 and plan.kind != "matrix":
                continue
            ms, _ = _core.time("transpose", v.index, d.ptr, out.ptr, _params(plan, dtype), int(warmup),
                               int(repeat), int(flush_bytes))
            row[f"{v.name}_ms"] = float(np.median(ms))
            if check:
                row["matches"] = row["matches"] and bool(np.array_equal(out.get(), want))
        row["median_ms"] = row[f"{auto.name}_ms"]
        row["gbps"] = 2 * x.nbytes / (row["median_ms"] * 1e-3) / 1e9
        row["roof_pct"] = 100 * row["gbps"] / roof["gbps"]
        for key, (_, timer, make) in others.items():
            row[f"{key}_ms"] = float(np.median(timer(make(d, plan.in_axes), int(repeat), int(warmup))))
            row[f"x_{key}"] = row[f"{key}_ms"] / row["median_ms"]
        rows.append(row)
        if progress:
            progress(i + 1, len(cases), row["variant"])
    columns = [Column("variant", "shape, axes", align="<")]
    columns += [Column(f"{v.name}_ms", f"{v.name} ms", ".4f") for v in chosen]
    columns += [Column("gbps", f"GB/s ({auto.name})", ".0f"), Column("roof_pct", "% roof", ".1f")]
    for key, (title, _, _) in others.items():
        columns += [Column(f"{key}_ms", f"{title} ms", ".4f"), Column(f"x_{key}", f"x {title.split()[0]}", ".2f")]
    columns += [Column("matches", "ok", align="<"), Column("plan", "plan", align="<")]
    title = (f"transpose of any rank, {dtype.name} - CUDA events, median of {repeat}"
             f"{', L2 flushed' if flush else ''}")
    return Table(rows, columns, title=title, meta={"family": "transpose", "dtype": dtype.name,
                                                   "repeat": repeat, "warmup": warmup,
                                                   "auto": auto.name,
                                                   "peers": [title for title, _, _ in others.values()]})


class TransposeFamily(Family):
    """Transpose: a rows x cols matrix in, its cols x rows transpose out."""

    name = "transpose"
    options = ()
    ndim = 2
    dtypes = tuple(DTYPES)
    sized_by = "shape"
    default_size = (8192, 8192)
    emulated_size = (256, 384)

    def params(self, shape, in_dtype, acc, op, inclusive):
        return _params(transpose_plan(shape), np.dtype(in_dtype))

    def out_shape(self, shape, v):
        return _out_shape(shape, v)

    def input_shape(self, size):
        if not isinstance(size, tuple) or len(size) != 2:
            raise ValueError(f"transpose needs a shape (rows, cols), got {size!r}")
        return tuple(int(s) for s in size)

    def pick_size(self, n=None, shape=None, strict=True):
        if n is not None and strict:
            raise ValueError("transpose takes shape=(rows, cols), not n")
        return shape if shape is not None else self.default_size

    def as_kernel_input(self, x):
        if x.ndim != 2:
            raise ValueError(f"transpose needs a 2-D array here, got {x.ndim}-D; time other ranks "
                             f"with gpuprims.compare_permutations")
        if x.dtype not in DTYPES:
            raise TypeError(f"transpose does not support dtype {x.dtype}")
        return np.ascontiguousarray(x)

    def numpy(self, case):
        return np.ascontiguousarray(case.x.T)

    def reference(self, case):
        return self.numpy(case)

    def check(self, case, got, v):
        want = case.x if v is not None and v.name == "copy" else case.ref
        unit = "ulp" if want.dtype.kind == "f" else "abs"
        got = np.asarray(got).reshape(want.shape)
        if np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"):
            return True, 0.0, unit
        if want.dtype.kind in "fiu":
            return False, ulps(got, want, want.dtype), unit
        return False, float("nan"), "abs"

    def summary(self, got, v):
        if v.name == "copy":
            return "a copy (the roof)"
        got = np.asarray(got)
        return f"{got.shape[0]} x {got.shape[1]}"

    def apply(self, x, variant, op="sum", inclusive=True, progress=False):
        return transpose(x, variant=variant, progress=progress)


FAMILY = register(TransposeFamily())
