"""Reduction: gpuprims.reduce, sum, min, max, and the reduce Family."""
from __future__ import annotations

import numpy as np

from . import _axes, _backend, _core
from ._arrays import DeviceArray, take, to_device
from ._family import DTYPE_CODES, OP_CODES, Family, invoke, op_code, ready_out, register, take_out
from ._numerics import exact_sum, sum_tolerance, ulps
from ._registry import lookup

CODES = DTYPE_CODES  # numpy dtype -> the core's dtype code
DTYPES = _axes.DTYPES
OPS = OP_CODES  # op name -> the core's op code
# (variant, op, dtype) -> the core's arguments, for DeviceArray calls whose
# arguments parsed once (see the hot path in reduce)
_PARSED: dict = {}


def result_dtype(op: str, in_dtype: np.dtype, dtype=None) -> np.dtype:
    """numpy's rule: a sum of bool or a signed integer type accumulates in
    int64 (the platform integer), of an unsigned one in uint64; float and
    complex sums keep their type; min/max keep the input type.  dtype=
    overrides it."""
    return _axes.DtypePlan(op, in_dtype, dtype).result


def reduce(x, op: str = "sum", *, axis=None, keepdims=False, dtype=None, out=None, segments=None,
           determinism: str = "run_to_run", variant: str = "auto", progress: bool = False, _who="reduce"):
    """Reduce `x` with `op` ("sum", "min" or "max") over `axis`, as numpy.

    x: a NumPy array (any shape, any strides) or a device array (DeviceArray,
    CuPy, PyTorch CUDA tensor, anything with __cuda_array_interface__), read
    in place through its strides.  dtypes: bool, int8..int64, uint8..uint64,
    float16/32/64, and complex64/128 for sums, either byte order.
    axis: None (all), an int or a tuple of ints, negatives from the end.
    keepdims, dtype, out: as numpy's (out: a NumPy array for NumPy input, a
    device array for device input, of the result's exact shape and dtype;
    written and returned).  segments: k+1 int64 boundaries of ragged
    segments of the flattened data (axis=None) or of each row (axis=-1):
    one value per segment, the identity for an empty one; with boundaries
    that cover the data and no empty segment this is
    numpy.add.reduceat(x, segments[:-1]).
    determinism: CCCL's names.  "run_to_run" (the default): the same input
    gives the same bits on the same GPU, every variant.  "gpu_to_gpu": the
    same bits on every GPU, launch configuration and chunking and on the
    emulator; for a float sum (float16/32/64, complex as pairs) this runs
    the reproducible rows (binned accumulators, cuda/rfa.cuh), whose error
    is at most n 2^-42 max|x| (float32; float64 n 2^-52 max|x|) plus one
    rounding: never worse than a plain float sum's bound; a named variant
    that is not reproducible is a ValueError.  Integer sums, min and max are
    exact in any order: every level runs the same kernels.
    "not_guaranteed": the same as "run_to_run" (no faster non-deterministic
    path exists here).
    Returns a NumPy scalar for a full reduction without keepdims/out, else an
    array: NumPy for NumPy input, DeviceArray for device input.  The result
    dtype follows numpy (see result_dtype).  `variant` names a step of the
    journey (gpuprims.variants("reduce")); "auto" is the fastest.
    progress: True shows a progress line on stderr for a call on a NumPy
    array expected to take more than 2 s (the host pipeline's chunks);
    Ctrl-C stops such a call between chunks whether or not it is shown.
    Errors: TypeError (dtype, object, out's dtype), ValueError (op, variant,
    axis, out's shape, segments, min/max of an empty array).
    """
    if (type(x) is DeviceArray and dtype is None and axis is None and segments is None
            and not keepdims and x.shape and x._backend == _backend.current
            and (determinism == "run_to_run" or determinism == "not_guaranteed")):
        # The hot path - a DeviceArray with a (variant, op, dtype) parsed
        # before - goes straight to the core: a few hundred ns of Python.
        # With out= a 0-d DeviceArray of the result dtype (where that is the
        # kernels' own, so nothing converts it) outside x: the kernels write
        # the value there.
        try:
            fast = _PARSED.get((variant, op, x.dtype))
        except TypeError:  # an unhashable variant or op: the parsing below says what is wrong
            fast = None
        if fast is not None:
            n = x.size
            if n or op == "sum":
                index, in_code, acc_code, code, plan = fast
                params = (n, in_code, acc_code, code)
                if out is None:
                    return plan.scalar(_core.call("reduce", index, x._ptr, None, params))
                if plan.acc_is_result and ready_out(out, x, (), plan.result):
                    _core.call("reduce", index, x._ptr, out._ptr, params)
                    return out
    code = op_code(op)
    v = lookup("reduce", variant)
    operand = take(x, _who, DTYPES, strided=True, allow_0d=True)
    plan = _axes.DtypePlan(op, operand.dtype, dtype, _who)
    v = _axes.deterministic_variant("reduce", v, op, plan, determinism, _who, variant)
    cacheable = determinism != "gpu_to_gpu"
    shape = operand.shape
    if segments is not None:
        return _segmented(x, operand, plan, code, op, axis, keepdims, out, segments, v, _who, progress)
    axes = _axes.normalize_axes(axis, len(shape), _who)
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape)) if keepdims else \
        tuple(n for i, n in enumerate(shape) if i not in axes)
    if op != "sum" and _axes.prod(shape[i] for i in axes) == 0 and _axes.prod(kept) > 0:
        raise _axes.identity_error(op, _who)
    target = take_out(out, kept, plan.result, operand, x, _who)
    one_value = len(axes) == len(shape) and not plan.pairs and not (v.batched and not v.auto)
    if one_value and v.narrow_in:
        plan.native_uint64()
    kop = plan.kernel_operand(operand)
    in_code, acc_code, res_code = plan.codes(CODES)
    if one_value:
        # every element into one value: the 1-D journey
        kop = _axes.gathered(kop)
        params = (kop.size, in_code, acc_code, code)
        if target is not None and target.on_device and kop.on_device and v.where == "device" and plan.acc_is_result:
            # the kernels' value written into the device out itself: no trip through the host
            _core.call("reduce", v.index, kop.ptr, target.buffer, params)
            return target.result
        value = plan.scalar(invoke("reduce", v, kop, None, plan.acc, params, progress=progress))
        if type(x) is DeviceArray and dtype is None and v.where == "device" and kop.device is x and cacheable:
            _PARSED[(variant, op, x.dtype)] = (v.index, in_code, acc_code, code, plan)
        if target is None and not kept:
            return value
        return _axes.deliver(np.full(kept, value, plan.result), plan, kept, operand.on_device, target,
                             converted=True)
    bv = _axes.batched_variant("reduce", v)
    runs = _axes.blocks(axes) or [(0, 0)]
    cur = kop
    for i, (a, b) in enumerate(reversed(runs)):  # the innermost first: earlier axes keep their numbers
        last = i == len(runs) - 1
        lay = _axes.layout(cur, a, b)
        if lay is None:
            cur = _axes.gathered(cur)
            lay = _axes.layout(cur, a, b)
        out_shape = cur.shape[:a] + cur.shape[b:]
        direct = last and target is not None and plan.direct
        dtype_out = plan.kernel_result if last else plan.acc
        params = (cur.size, CODES[cur.dtype], acc_code, code, lay,
                  res_code if last else acc_code)
        result = invoke("reduce", bv, cur, out_shape, dtype_out, params,
                        out=_axes.kernel_out(target, out_shape, dtype_out) if direct else None,
                        progress=progress)
        cur = _axes.as_operand(result) if not last else None
    result = _axes.deliver(result, plan, kept, operand.on_device, target)
    if target is None and not kept:  # every axis reduced: a NumPy scalar, as numpy gives
        return (result.get() if isinstance(result, DeviceArray) else result)[()]
    return result


def _segmented(x, operand, plan, code, op, axis, keepdims, out, segments, v, who, progress=False):
    """Ragged segments of the flattened data (axis None) or of each row
    (the last axis): one value per segment."""
    shape = operand.shape
    if keepdims:
        raise ValueError(f"gpuprims.{who}: keepdims has no meaning with segments")
    segs = _axes.segment_offsets(segments, shape, axis, plan, who)
    off, rows, k = segs.off, segs.rows, segs.k
    out_shape = (shape[:-1] + (k,)) if axis is not None else (k,)
    target = take_out(out, out_shape, plan.result, operand, x, who)
    kop = _axes.gathered(plan.kernel_operand(operand))
    in_code, acc_code, res_code = plan.codes(CODES)
    dev_off = to_device(off)
    bv = _axes.batched_variant("reduce", v)
    params = (kop.size, in_code, acc_code, code, segs.layout(kop.size, dev_off.ptr), res_code)
    direct = target is not None and plan.direct
    dtype_out = plan.kernel_result
    result = invoke("reduce", bv, kop, (rows * k,), dtype_out, params,
                    out=_axes.kernel_out(target, (rows * k,), dtype_out) if direct else None,
                    progress=progress, segments=off)
    return _axes.deliver(result, plan, out_shape, operand.on_device, target)


def sum(x, *, axis=None, keepdims=False, dtype=None, out=None, segments=None,  # noqa: A001
        determinism: str = "run_to_run", variant: str = "auto", progress: bool = False):
    """Sum over axis (numpy.sum's semantics and result dtype); see reduce.
    determinism="gpu_to_gpu" gives a float sum the same bits on every GPU,
    grid and chunking and on the emulator (see reduce)."""
    return reduce(x, "sum", axis=axis, keepdims=keepdims, dtype=dtype, out=out, segments=segments,
                  determinism=determinism, variant=variant, progress=progress, _who="sum")


def min(x, *, axis=None, keepdims=False, out=None, segments=None,  # noqa: A001
        determinism: str = "run_to_run", variant: str = "auto", progress: bool = False):
    """Smallest element over axis; NaN if any element is NaN (as numpy.min); see reduce.
    Exact in any order: every determinism level gives the same bits."""
    return reduce(x, "min", axis=axis, keepdims=keepdims, out=out, segments=segments,
                  determinism=determinism, variant=variant, progress=progress, _who="min")


def max(x, *, axis=None, keepdims=False, out=None, segments=None,  # noqa: A001
        determinism: str = "run_to_run", variant: str = "auto", progress: bool = False):
    """Largest element over axis; NaN if any element is NaN (as numpy.max); see reduce.
    Exact in any order: every determinism level gives the same bits."""
    return reduce(x, "max", axis=axis, keepdims=keepdims, out=out, segments=segments,
                  determinism=determinism, variant=variant, progress=progress, _who="max")


class ReduceFamily(Family):
    """Reduction: one value from n elements."""

    name = "reduce"
    options = ("op",)
    dtypes = _axes.KERNEL_DTYPES  # the journey's tables: the dtypes the kernels compute in
    emulated_size = 1 << 16

    def result_dtype(self, in_dtype, op, dtype=None):
        return result_dtype(op, np.dtype(in_dtype), dtype)

    def params(self, shape, in_dtype, acc, op, inclusive):
        return (int(np.prod(shape)), CODES[np.dtype(in_dtype)], CODES[acc], op_code(op))

    def out_shape(self, shape, v):
        return None  # the core returns the value

    def numpy(self, case):
        x, acc = case.x, case.acc
        return np.sum(x, dtype=acc) if case.op == "sum" else getattr(np, case.op)(x)

    def reference(self, case):
        """(reference, tolerance): a float sum against the correctly rounded
        sum within sum_tolerance; everything else exactly."""
        x, acc = case.x, case.acc
        if case.op == "sum" and acc.kind == "f":
            ref = exact_sum(x)
            return ref, sum_tolerance(x, acc, ref)
        return self.numpy(case).astype(acc), 0.0

    def check(self, case, got, v):
        ref, tol = case.ref
        acc = case.acc
        unit = "ulp" if acc.kind == "f" else "abs"
        got = acc.type(got)
        if acc.kind == "f" and case.op == "sum":
            ok = bool(abs(float(got) - ref) <= tol)
            return ok, ulps(np.float64(float(got)), np.float64(ref), acc), unit
        ok = bool(got == ref or (np.isnan(got) and np.isnan(ref)))
        return ok, ulps(got, ref, acc), unit

    def apply(self, x, variant, op="sum", inclusive=True, progress=False):
        return reduce(x, op, variant=variant, progress=progress)


FAMILY = register(ReduceFamily())
