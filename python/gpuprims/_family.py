"""A family of variants as one object.

Each family module (_reduce, _scan, _transpose) defines one Family and
registers it here.  A Family holds everything that is particular to it: the
parsing of its public call's arguments into the core's `params` tuple, its
result dtype and output shape, NumPy's answer, the reference and the check
of an output, random inputs and default sizes, and the text of its tables.
The benchmark, the emulated main job, trace, profile, occupancy and the CLI
iterate over FAMILIES and ask the Family; none of them knows a family by
name.  Validation of limits, dtypes and codes happens once, in the core's
_core.call.
"""
from __future__ import annotations

import math

import numpy as np

from . import _axes, _backend, _core
from ._arrays import DeviceArray, c_contiguous_strides, check_backend, piece_budget, to_device
from ._registry import Variant, lookup, variants

# The core's codes: position in _core.dtypes() / _core.ops().
DTYPE_CODES = {np.dtype(name): code for code, name in enumerate(_core.dtypes())}
OP_CODES = {name: code for code, name in enumerate(_core.ops())}

FAMILIES: dict = {}  # name -> Family, in the order of _core.families()


def register(family: "Family") -> "Family":
    FAMILIES[family.name] = family
    order = _core.families()
    ranked = sorted(FAMILIES.items(), key=lambda item: order.index(item[0]))
    FAMILIES.clear()
    FAMILIES.update(ranked)
    return family


def get(name) -> "Family":
    """The Family called `name`; ValueError listing the known ones."""
    fam = FAMILIES.get(name) if isinstance(name, str) else None
    if fam is None:
        raise ValueError(f"unknown family {name!r}; known: {', '.join(_core.families())}")
    return fam


def op_code(op) -> int:
    """The core's code of an op name; ValueError for an unknown one."""
    code = OP_CODES.get(op) if isinstance(op, str) else None
    if code is None:
        raise ValueError(f"unknown op {op!r}; choose one of: {', '.join(OP_CODES)}")
    return code


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


class Out:
    """A validated out= argument (take_out): `buffer` is what the core
    writes (a NumPy array or a device address), `result` what the call
    returns (the caller's out)."""

    __slots__ = ("buffer", "result", "on_device", "_host")

    def __init__(self, buffer, result, on_device, host=None):
        self.buffer, self.result, self.on_device, self._host = buffer, result, on_device, host

    def finish(self):
        """The caller's out, once the core has written `buffer`."""
        if self._host is not None:  # a non-contiguous NumPy out: written through a C-ordered copy
            np.copyto(self._host, self.buffer)
        return self.result


def ready_out(out, x: DeviceArray, shape: tuple, dtype) -> bool:
    """Whether the hot paths (a DeviceArray x whose call parsed before) may
    write `out` as it is: a writable DeviceArray of x's backend, of that
    shape and dtype, not overlapping x.  Anything else goes through the
    full parsing (take_out), which says what is wrong with it."""
    return (type(out) is DeviceArray and out.shape == shape and out.dtype == dtype and not out._readonly
            and out._backend == x._backend
            and not (out._ptr < x._ptr + x.nbytes and x._ptr < out._ptr + out.nbytes))


def take_out(out, shape, dtype, operand, x, who: str):
    """Validate out= before any GPU work: on the same side as the input
    (NumPy for NumPy, a device array for a device input), the result's
    exact shape and dtype, writable, not overlapping the input.  A device
    out must be C-contiguous; a NumPy out may have any strides.  Returns
    None for out=None, else an Out.  TypeError or ValueError otherwise."""
    if out is None:
        return None
    shape, dtype = tuple(shape), np.dtype(dtype)
    device = hasattr(out, "__cuda_array_interface__") or isinstance(out, DeviceArray)
    if not device and not isinstance(out, np.ndarray):
        raise TypeError(f"gpuprims.{who}: out must be a NumPy array or a device array, "
                        f"not {type(out).__name__}")
    if device != operand.on_device:
        raise TypeError(f"gpuprims.{who}: the input is " +
                        ("on the device: out must be a device array too" if operand.on_device
                         else "a NumPy array: out must be a NumPy array too") +
                        f" (got {type(out).__name__})")
    if not device:
        if type(out) is not np.ndarray and isinstance(out, np.ma.MaskedArray):
            raise TypeError(f"gpuprims.{who}: out may not be a masked array")
        got_shape, got_dtype = out.shape, out.dtype
    else:
        cai = out.__cuda_array_interface__ if not isinstance(out, DeviceArray) or out.backend == "cuda" else None
        got_shape = tuple(out.shape) if cai is None else tuple(int(n) for n in cai["shape"])
        got_dtype = out.dtype if cai is None else np.dtype(cai["typestr"])
    if got_dtype != dtype:
        raise TypeError(f"gpuprims.{who}: out has dtype {got_dtype}, the result's dtype is {dtype} "
                        f"(dtype= chooses another)")
    if got_shape != shape:
        raise ValueError(f"gpuprims.{who}: out has shape {got_shape}, the result's shape is {shape}")
    if not device:
        if not out.flags.writeable:
            raise ValueError(f"gpuprims.{who}: out is read-only")
        if isinstance(x, np.ndarray) and np.may_share_memory(out, x):
            raise ValueError(f"gpuprims.{who}: out overlaps the input; pass a separate array")
        if out.flags.c_contiguous:
            return Out(out, out, False)
        return Out(np.empty(shape, dtype), out, False, host=out)
    if isinstance(out, DeviceArray):
        check_backend(out)
        if out._readonly:
            raise ValueError(f"gpuprims.{who}: out is read-only")
        ptr = out.ptr
    else:
        if _backend.current != "cuda":
            raise TypeError(f"gpuprims.{who}: the {_backend.current} backend cannot write GPU memory "
                            f"({type(out).__name__})")
        if cai["data"][1]:
            raise ValueError(f"gpuprims.{who}: out is read-only")
        strides = cai.get("strides")
        if strides is not None and math.prod(shape) > 1 and \
                tuple(strides) != c_contiguous_strides(shape, dtype.itemsize):
            raise ValueError(f"gpuprims.{who}: a device out must be C-contiguous")
        ptr = cai["data"][0] or 0
    nbytes = math.prod(shape) * dtype.itemsize
    lo, hi = operand.span()
    if nbytes and operand.size and ptr < operand.ptr + hi and operand.ptr + lo < ptr + nbytes:
        raise ValueError(f"gpuprims.{who}: out overlaps the input; pass a separate array")
    return Out(ptr, out, True)


def invoke(family: str, v: Variant, operand, out_shape, out_dtype, params, out: Out | None = None,
           progress: bool = False, segments=None):
    """One _core.call of variant v on an Operand (_arrays.take).  A device
    input on a device variant stays in place (its address; its strides are
    in `params` where the family reads them) and the output is `out` or a
    new DeviceArray; otherwise NumPy buffers go in and the output is `out`
    or a new NumPy array, uploaded if the caller's input was on the device.
    NumPy buffers cross through the core's host pipeline (pinned staging in
    chunks, csrc/pipeline.c), which reads a strided NumPy input of a 1-D
    reduction or scan through its strides; the layouts it does not split
    are split here into calls that fit the device-memory cap (_split).
    out_shape None: the core's return value is the result (a reduction's).
    progress: a long call on NumPy arrays shows a progress line.
    segments: the host's copy of a segmented call's offsets (the layout
    holds their device address), so that a call over the cap splits by
    whole segments."""
    if operand.on_device and v.where == "device":
        if out_shape is None:
            return _core.call(family, v.index, operand.ptr, None, params)
        if out is not None:
            _core.call(family, v.index, operand.ptr, out.buffer, params)
            return out.finish()
        result = DeviceArray(out_shape, out_dtype, _synced=False)  # the call waits for the stream
        _core.call(family, v.index, operand.ptr, result.ptr, params)
        return result
    host = None
    if out_shape is not None:
        host = out.buffer if out is not None and not out.on_device else np.empty(out_shape, dtype=out_dtype)
    # one problem of the flattened data (a value, or a layout slot left None): read through strides
    flat = out_shape is None or (len(params) > 5 and params[5] is None)
    src = operand.host_input() if flat and v.where == "device" and not operand.on_device \
        else operand.to_host()
    if not (v.where == "device" and host is not None and
            _split(family, v, src, host, params, progress, segments)):
        value = _core.call(family, v.index, src, host, params, bool(progress))
        if out_shape is None:
            return value
    if out is not None:
        if out.on_device:  # a host variant on device data: its output uploaded into out
            if host.nbytes:
                _core.htod(out.buffer, host)
            return out.result
        return out.finish()
    return to_device(host) if operand.on_device else host


def _flat_variant(family, v) -> Variant:
    """The 1-D row that runs one problem of layout row v through the
    pipeline's chunks: the reproducible 1-D row for a reproducible v, else
    the family's auto row."""
    rows = variants(family)
    if v.reproducible:
        flat = next((r for r in rows if r.reproducible and not (r.batched or r.segmented)), None)
        if flat is not None:
            return flat
    return next(r for r in rows if r.auto)


def _one_problem(family, v, x1, y1, params, k, progress):
    """One problem of a layout call (k: the layout's place in params) as a
    1-D call through the pipeline, which chunks it to the cap: x1 its
    elements (1-D, any strides); a scan writes y1 (1-D, C-contiguous), a
    reduction returns its value (the accumulator's, exact)."""
    fv = _flat_variant(family, v)
    if y1 is not None:  # a scan
        p1 = (x1.size,) + params[1:k] + (None,) + params[k + 1:]
        _core.call(family, fv.index, x1, y1, p1, bool(progress))
        return None
    return _core.call(family, fv.index, x1, None, (x1.size,) + params[1:k], bool(progress))


def _split(family, v, src, dst, params, progress, segments=None) -> bool:
    """A call the core's pipeline does not chunk (an axis layout, segments,
    an N-D transpose) on host arrays over the device-memory cap, run as
    several calls each within it: along the problems (outer, then inner) of
    a reduce or scan layout, a problem longer than the cap as a 1-D call
    the pipeline chunks; segments in groups of whole segments (offsets
    rebased), one longer than the cap alone as a 1-D call (a reduction's
    chunks combined in their order, a scan's carried); a transpose along
    the output's first axis.  Pieces are fixed by the sizes and the cap
    (the same bits run to run).  False where nothing is over the cap or
    the call cannot be split so (one call then)."""
    budget = piece_budget()
    if budget is None or src.nbytes + dst.nbytes <= budget:
        return False
    if isinstance(params[0], tuple):  # a planned transpose: (shape, strides, axes, ..., offset, span)
        return _split_transpose(family, v, src, dst, params, progress, budget)
    # (n, codes..., layout, ...): the layout is the params' one tuple
    k = next((i for i, p in enumerate(params) if isinstance(p, tuple)), None)
    if k is None or not src.flags.c_contiguous or not dst.flags.c_contiguous:
        return False
    if segments is not None:
        return _split_segments(family, v, src.reshape(-1), dst.reshape(-1), params, k, segments, progress, budget,
                               isinstance(params[k - 1], bool))
    outer, ln, inner, so, sn, si, off = params[k]
    # C order over (outer, ln, inner); a stride of an axis of one element is never used
    if off or (si != 1 and inner > 1) or (sn != inner and ln > 1) or (so != ln * inner and outer > 1) or \
            src.size != outer * ln * inner:
        return False
    so, sn, si = ln * inner, inner, 1
    scan = isinstance(params[k - 1], bool)  # the inclusive flag before the layout: an output per element
    x = src.reshape(outer, ln, inner)
    y = dst.reshape((outer, ln, inner) if scan else (outer, inner))
    row = (x[0].nbytes + y[0].nbytes) if outer else 1
    if row <= budget:
        step = max(1, budget // row)
        for o0 in range(0, outer, step):
            o1 = min(outer, o0 + step)
            piece = (((o1 - o0) * ln * inner,) + params[1:k] +
                     ((o1 - o0, ln, inner, so, sn, si, 0),) + params[k + 1:])
            _core.call(family, v.index, x[o0:o1], y[o0:o1], piece, bool(progress))
        return True
    cols = max(1, budget * inner // max(1, row))
    if cols == 1 and ln * (x.itemsize + (y.itemsize if scan else 0)) > budget:
        # one problem is over the cap: each through the pipeline, as 1-D data
        for o in range(outer):
            for i in range(inner):
                if scan:
                    yo = y[o, :, i]
                    target = yo if yo.flags.c_contiguous else np.empty(ln, y.dtype)
                    _one_problem(family, v, x[o, :, i], target, params, k, progress)
                    if target is not yo:
                        yo[...] = target
                else:
                    y[o, i] = _one_problem(family, v, x[o, :, i], None, params, k, progress)
        return True
    for o in range(outer):
        for i0 in range(0, inner, cols):
            i1 = min(inner, i0 + cols)
            xp = np.ascontiguousarray(x[o, :, i0:i1])
            yp = np.empty(y[o][..., i0:i1].shape, dst.dtype)
            w = i1 - i0
            piece = (xp.size,) + params[1:k] + ((1, ln, w, ln * w, w, 1, 0),) + params[k + 1:]
            _core.call(family, v.index, xp, yp, piece, bool(progress))
            y[o][..., i0:i1] = yp
    return True


def _split_segments(family, v, x, y, params, k, off, progress, budget, scan) -> bool:
    """A segmented call over the cap (x, y flat; off the k+1 host offsets):
    consecutive segments grouped while their data (and a reduction's
    values) fit the budget, each group one call on its slice with offsets
    rebased to it; a segment longer than the budget alone, as a 1-D call
    the pipeline chunks.  scan: an output per element (else per segment)."""
    off = np.asarray(off, dtype=np.int64)
    longest = params[k][7] if len(params[k]) > 7 else 0  # a bound for every group too
    per = x.itemsize + (y.itemsize if scan else 0)
    cap = max(1, budget // per)  # data elements of a piece
    most = max(1, budget // (2 * (8 + (0 if scan else y.itemsize))))  # segments of a piece
    nseg = off.size - 1
    s = 0
    while s < nseg:
        b = int(off[s])
        if int(off[s + 1]) - b > cap:  # one segment longer than a piece
            seg = x[b:int(off[s + 1])]
            if scan:
                _one_problem(family, v, seg, y[b:int(off[s + 1])], params, k, progress)
            else:
                y[s] = _one_problem(family, v, seg, None, params, k, progress)
            s += 1
            continue
        e = int(np.searchsorted(off, b + cap, side="right")) - 1  # off[e] <= b + cap
        e = min(max(e, s + 1), s + most, nseg)
        rebased = off[s:e + 1] - b
        dev = to_device(rebased)
        m = int(off[e]) - b
        lay = _axes.Segments(rebased, 1, e - s, longest).layout(m, dev.ptr)
        piece = (m,) + params[1:k] + (lay,) + params[k + 1:]
        _core.call(family, v.index, x[b:b + m], y[b:b + m] if scan else y[s:e], piece, bool(progress))
        del dev
        s = e
    return True


def _split_transpose(family, v, src, dst, params, progress, budget) -> bool:
    """An N-D transpose over the cap, along the output's first axis: each
    piece a C-contiguous copy of the input's slices that make that many
    rows of the output (an input read in place through its strides - a
    span - is sliced through them)."""
    shape, strides, perm = params[0], params[1], params[2]
    if len(shape) <= 2:
        return False  # the pipeline tiles a matrix itself
    if strides is None:
        if not src.flags.c_contiguous:
            return False
        x = src.reshape(shape)
    else:  # the span's buffer: x[0, ..., 0] at params[5], element strides
        x = np.lib.stride_tricks.as_strided(src[params[5]:], shape=shape,
                                            strides=tuple(s * src.itemsize for s in strides), writeable=False)
    y = dst.reshape(tuple(shape[p] for p in perm))
    a0 = perm[0]
    step = max(1, budget * shape[a0] // max(1, 2 * x.size * x.itemsize))
    for j0 in range(0, shape[a0], step):
        j1 = min(shape[a0], j0 + step)
        piece = np.ascontiguousarray(np.take(x, np.arange(j0, j1), axis=a0))
        sub = list(shape)
        sub[a0] = j1 - j0
        _core.call(family, v.index, piece, y[j0:j1], (tuple(sub), None, *params[2:5], 0, piece.size),
                   bool(progress))
    return True


class Case:
    """One input of a family with its options, on the host: the kernel's
    view of it (`x`, C-contiguous), the result dtype, the core's params, and
    the reference its outputs are checked against."""

    def __init__(self, family: "Family", x: np.ndarray, *, op="sum", inclusive=True):
        self.family = family
        self.op = op if "op" in family.options else None
        self.inclusive = bool(inclusive)
        self.x = np.ascontiguousarray(x)
        self.n = int(self.x.size)
        self.acc = family.result_dtype(self.x.dtype, op)
        self.params = family.params(self.x.shape, self.x.dtype, self.acc, op, self.inclusive)
        self.ref = None  # family.reference(self), on the first check

    def out_shape(self, v: Variant):
        return self.family.out_shape(self.x.shape, v)

    @property
    def scalar(self) -> bool:
        """Whether the family's result is the core's return value (no output buffer)."""
        return self.out_shape(self.family.auto) is None

    def numpy(self):
        """NumPy's answer on the host: the CPU baseline."""
        return self.family.numpy(self)

    def check(self, got, v: Variant | None = None) -> tuple:
        """(matches, largest error, its unit) of an output against the reference."""
        if self.ref is None:
            self.ref = self.family.reference(self)
        return self.family.check(self, got, v)

    def run(self, v: Variant, src, out):
        """One _core.call on this case's params: src and out are device
        addresses (out a DeviceArray or None) or NumPy buffers; returns the
        result (the value, or the output as NumPy)."""
        value = _core.call(self.family.name, v.index, src,
                           out.ptr if isinstance(out, DeviceArray) else out, self.params)
        if out is None:
            return self.acc.type(value)  # exact: the core returns the accumulator's value
        return out.get() if isinstance(out, DeviceArray) else out

    def run_host(self, v: Variant):
        """The output of one run of a host variant (or of any variant, staged)."""
        shape = self.out_shape(v)
        out = None if shape is None else np.empty(shape, dtype=self.acc)
        return self.run(v, self.x, out)

    def title(self) -> str:
        """"reduce sum, n = 1024, float32": what the tables say they hold."""
        return f"{self.family.what(self.op, self.inclusive)}, {size_text(self.x.shape)}, {self.x.dtype.name}"


def size_text(shape) -> str:
    """"n = 1024" for a vector, "64 x 32" for a matrix."""
    return f"n = {shape[0]}" if len(shape) == 1 else " x ".join(str(s) for s in shape)


class Family:
    """What one family is: subclassed once per family module."""

    name = ""
    options = ("op", "inclusive")  # the public call's options among op, inclusive
    ndim = None  # the dimensions the kernels take (None: any, flattened)
    dtypes: tuple = ()  # the input dtypes the family takes (numpy dtypes)
    sized_by = "n"  # how the CLI, compare and profile give a size: "n" or "shape"
    default_size = 1 << 24  # compare, benchmark and the CLI: far past L2, seconds for a journey
    emulated_size = 1 << 12  # the emulated main job: seconds on one CPU core

    # -- the registry
    def variants(self) -> list:
        """The 1-D journey, what the tables of all elements show: the rows
        without a layout (the axis and segment steps are `layout_variants`)."""
        return [v for v in variants(self.name) if not (v.batched or v.segmented)]

    def layout_variants(self) -> list:
        """The steps for an axis or segments (gp_batch), in journey order."""
        return [v for v in variants(self.name) if v.batched or v.segmented]

    def lookup(self, name) -> Variant:
        return lookup(self.name, name)

    @property
    def auto(self) -> Variant:
        return next(v for v in variants(self.name) if v.auto)

    @property
    def library(self) -> Variant:
        """The production library the journey is measured against."""
        return next(v for v in variants(self.name) if v.library)

    @property
    def library_label(self) -> str:
        """"CUB", "cuBLAS": the first word of the library row's title."""
        return self.library.title.split()[0]

    # -- parsing
    def check_options(self, op) -> None:
        if "op" in self.options:
            op_code(op)

    def result_dtype(self, in_dtype, op, dtype=None) -> np.dtype:
        return np.dtype(in_dtype)

    def params(self, shape, in_dtype, acc, op, inclusive) -> tuple:
        raise NotImplementedError

    def out_shape(self, shape, v: Variant):
        """The output's shape for an input of `shape`, or None (a value)."""
        return tuple(shape)

    def input_shape(self, size) -> tuple:
        """The shape of a random input of `size` (an element count or a shape)."""
        if isinstance(size, tuple):
            size = size[0]
        return (int(size),)

    def pick_size(self, n=None, shape=None, strict=True):
        """The size compare and profile use: n or shape, else the default
        (strict: a ValueError for the keyword the family does not take)."""
        return n if n is not None else self.default_size

    def as_kernel_input(self, x: np.ndarray) -> np.ndarray:
        """x as the kernels see it (C order, flattened); TypeError for a dtype the family does not take."""
        if x.dtype not in self.dtypes:
            raise TypeError(f"{self.name} does not support dtype {x.dtype}; "
                            f"supported: {', '.join(d.name for d in self.dtypes)}")
        return np.ascontiguousarray(x).ravel()

    # -- numerics
    def numpy(self, case: Case):
        raise NotImplementedError

    def reference(self, case: Case):
        raise NotImplementedError

    def check(self, case: Case, got, v) -> tuple:
        raise NotImplementedError

    def ideal_bytes(self, case: Case) -> int:
        """Each input read once, each output written once."""
        shape = case.out_shape(self.auto)
        return int(case.x.nbytes + (0 if shape is None else math.prod(shape) * case.acc.itemsize))

    def summary(self, got, v: Variant) -> str:
        """A short text of a result, for the emulated tables."""
        return str(got)

    # -- the public call
    def apply(self, x, variant, op="sum", inclusive=True, progress=False):
        """The public call on x (NumPy in, NumPy out; device in, device out)."""
        raise NotImplementedError

    def what(self, op, inclusive) -> str:
        """"scan sum inclusive": the family and its options, for titles."""
        text = self.name
        if "op" in self.options:
            text += f" {op}"
        if "inclusive" in self.options:
            text += " inclusive" if inclusive else " exclusive"
        return text
