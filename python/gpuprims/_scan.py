"""Prefix scan: gpuprims.scan and gpuprims.cumsum, and the scan Family."""
from __future__ import annotations

import numpy as np

from . import _axes, _backend, _core
from ._arrays import DeviceArray, take, to_device
from ._family import Family, invoke, op_code, ready_out, register, take_out
from ._numerics import identity, scan_reference, scan_tolerance, ulps
from ._reduce import CODES, result_dtype

DTYPES = _axes.DTYPES
from ._registry import lookup

_UFUNCS = {"sum": np.add, "min": np.minimum, "max": np.maximum}
# (variant, op, inclusive, dtype) -> the core's arguments and the result
# dtype, for 1-D scans of DeviceArrays whose kernels write the result as it
# is (see the hot path in scan)
_PARSED: dict = {}


def scan(x, op: str = "sum", *, axis=None, inclusive: bool = True, dtype=None, out=None, segments=None,
         determinism: str = "run_to_run", variant: str = "auto", progress: bool = False, _who="scan",
         _carry_in=None):
    """Prefix scan of `x` with `op` ("sum", "min" or "max") along `axis`.

    axis None: the flattened data (C order), as numpy.cumsum; an int: along
    that axis, the output having x's shape.  Inclusive: out[i] = x[0] op ...
    op x[i] (numpy.cumsum, numpy.minimum.accumulate,
    numpy.maximum.accumulate).  Exclusive: out[0] is the identity (0, the
    dtype's largest value for min, its smallest for max) and out[i] = x[0]
    op ... op x[i-1].  dtypes: bool, int8..int64, uint8..uint64,
    float16/32/64, and complex64/128 for sums, either byte order; the
    result dtype follows numpy.cumsum (integer sums accumulate in int64,
    unsigned in uint64; float16 accumulates in float32) unless dtype= says
    otherwise.  out: as numpy's (a NumPy array for NumPy input, a device
    array for device input, of the result's exact shape and dtype).
    segments: k+1 int64 boundaries from 0 to n of the flattened data
    (axis=None) or of each row (axis=-1): the scan restarts at each one.
    NumPy in, NumPy out; device in (DeviceArray, CuPy, PyTorch,
    __cuda_array_interface__; read in place through its strides),
    DeviceArray out.  `variant` names a step of the journey
    (gpuprims.variants("scan")); "auto" is the fastest.
    determinism: "run_to_run" (the default; every variant gives the same
    bits run to run on one GPU), "not_guaranteed" (the same: no faster
    non-deterministic path exists here) or "gpu_to_gpu": a float sum runs
    the reproducible rows (binned accumulators, cuda/rfa.cuh), where
    element i is bitwise gpuprims.sum(x[:i+1], determinism="gpu_to_gpu")
    (exclusive: of x[:i], +0.0 first) on every GPU, launch configuration,
    chunking of a host array and on the emulator; naming a variant that is
    not reproducible is a ValueError.  Integer sums, min and max are exact
    in any order, so every level runs the same kernels.
    progress: True shows a progress line on stderr for a call on a NumPy
    array expected to take more than 2 s (the host pipeline's chunks);
    Ctrl-C stops such a call between chunks whether or not it is shown.
    Errors: TypeError (dtype, object, out's dtype), ValueError (op, variant,
    axis, out's shape, segments).
    """
    if (type(x) is DeviceArray and dtype is None and axis is None and segments is None and _carry_in is None
            and x.size and x._backend == _backend.current
            and (determinism == "run_to_run" or determinism == "not_guaranteed")):
        # The hot path - a DeviceArray whose (variant, op, inclusive, dtype)
        # parsed before - goes straight to the core, into a new DeviceArray
        # or into out= (one of the result's shape and dtype, outside x).
        try:
            fast = _PARSED.get((variant, op, bool(inclusive), x.dtype))
        except TypeError:  # an unhashable variant or op: the parsing below says what is wrong
            fast = None
        if fast is not None:
            index, params, result = fast
            n = x.size
            if out is None:
                y = DeviceArray._result(n, result)
            else:
                y = out if ready_out(out, x, (n,), result) else None  # else the parsing below
            if y is not None:
                _core.call("scan", index, x._ptr, y._ptr, (n,) + params)
                return y
    code = op_code(op)
    v = lookup("scan", variant)
    operand = take(x, _who, DTYPES, strided=True, allow_0d=True)
    plan = _axes.DtypePlan(op, operand.dtype, dtype, _who)
    v = _axes.deterministic_variant("scan", v, op, plan, determinism, _who, variant)
    shape = operand.shape
    ndim = len(shape)
    if isinstance(axis, tuple):
        raise TypeError(f"gpuprims.{_who}: axis must be None or an int, not a tuple")
    ax = None if axis is None else (_axes.normalize_axes(axis, ndim, _who) or (None,))[0]  # 0-d: flattened
    out_shape = (_axes.prod(shape),) if ax is None else shape
    if segments is not None:
        segs = _axes.segment_offsets(segments, shape, ax, plan, _who,
                                     "the segments of a scan must cover the data")
    target = take_out(out, out_shape, plan.result, operand, x, _who)
    in_code, acc_code, res_code = plan.codes(CODES)
    kop = plan.kernel_operand(operand)
    parts = plan.pairs
    kshape = out_shape + ((2,) if parts else ())
    dtype_out = plan.kernel_result
    kout = _axes.kernel_out(target, kshape, dtype_out) if target is not None and plan.direct else None
    if segments is not None:
        kop = _axes.gathered(kop)
        dev_off = to_device(segs.off)
        lay = segs.layout(kop.size, dev_off.ptr)
        v = _axes.batched_variant("scan", v)
    elif ax is None and not parts and not (v.batched and not v.auto):
        lay = None  # the flattened data: the 1-D journey
        kop = _axes.gathered(kop)
        if (type(x) is DeviceArray and kop.device is x and dtype is None and v.where == "device"
                and plan.direct and dtype_out == plan.result and _carry_in is None
                and determinism != "gpu_to_gpu"):
            _PARSED[(variant, op, bool(inclusive), x.dtype)] = (
                v.index, (in_code, acc_code, code, bool(inclusive), None, res_code), plan.result)
    else:
        v = _axes.batched_variant("scan", v)
        if ax is None:  # the flattened data, complex: one problem of n float pairs
            kop = _axes.gathered(kop)
            lay = (1, kop.size // (2 if parts else 1), 2 if parts else 1, 0, 2 if parts else 1,
                   1 if parts else 0, 0)
        else:
            lay = _axes.layout(kop, ax, ax + 1)
            if lay is None:
                kop = _axes.gathered(kop)
                lay = _axes.layout(kop, ax, ax + 1)
    params = (kop.size, in_code, acc_code, code, bool(inclusive), lay, res_code)
    if _carry_in is not None:
        # private (gpuprims.dask): the scan continues from the op of
        # everything before x[0] - a gpu_to_gpu state (gpuprims._rfa.STATE)
        # on the reproducible rows, else one value - uploaded here
        carry = (_carry_state(_carry_in, lay, plan, op, determinism, v, _who) if v.reproducible else
                 _carry_value(_carry_in, lay, plan, operand, _who))
        params += (carry.ptr,)
    result = invoke("scan", v, kop, kshape, dtype_out, params, out=kout, progress=progress,
                    segments=segs.off if segments is not None else None)
    return _axes.deliver(result, plan, out_shape, operand.on_device, target)


def _carry_state(state, lay, plan, op, determinism, v, who) -> DeviceArray:
    """A carry-in state on the device, for a 1-D gpu_to_gpu float sum scan."""
    from . import _rfa

    state = np.asarray(state)
    if (determinism != "gpu_to_gpu" or op != "sum" or lay is not None or not v.reproducible
            or plan.acc not in (np.dtype(np.float32), np.dtype(np.float64))):
        raise ValueError(f"gpuprims.{who}: a carry-in state is for a 1-D float sum scan with "
                         "determinism='gpu_to_gpu'")
    if state.dtype != _rfa.STATE or state.size != 1:
        raise TypeError(f"gpuprims.{who}: a carry-in state is one gpuprims._rfa.STATE record")
    return to_device(np.frombuffer(state.tobytes(), np.uint8).copy())


def _carry_value(value, lay, plan, operand, who) -> DeviceArray:
    """A carry-in value on the device, in the kernels' accumulator dtype,
    for a 1-D scan of a NumPy array (the host pipeline puts it in front of
    the first chunk, as it does each later chunk's carry)."""
    value = np.asarray(value)
    if value.dtype.names is not None:  # a binned state: for the reproducible rows only
        raise ValueError(f"gpuprims.{who}: a carry-in state is for a 1-D float sum scan with "
                         "determinism='gpu_to_gpu'")
    if lay is not None or operand.on_device or plan.flip or plan.complex_part is not None:
        raise ValueError(f"gpuprims.{who}: a carry-in value is for a 1-D scan of a real NumPy array")
    return to_device(value.astype(plan.acc).reshape(1))


def cumsum(x, *, axis=None, dtype=None, out=None, segments=None, determinism: str = "run_to_run",
           variant: str = "auto", progress: bool = False):
    """Inclusive sum scan, as numpy.cumsum(x, axis) (same result dtype); see scan."""
    return scan(x, "sum", axis=axis, inclusive=True, dtype=dtype, out=out, segments=segments,
                determinism=determinism, variant=variant, progress=progress, _who="cumsum")


class ScanFamily(Family):
    """Prefix scan: n elements in, their n prefixes out."""

    name = "scan"
    options = ("op", "inclusive")
    dtypes = _axes.KERNEL_DTYPES  # the journey's tables: the dtypes the kernels compute in
    emulated_size = 1 << 12  # the naive step is O(n^2)

    def result_dtype(self, in_dtype, op, dtype=None):
        return result_dtype(op, np.dtype(in_dtype), dtype)

    def params(self, shape, in_dtype, acc, op, inclusive):
        return (int(np.prod(shape)), CODES[np.dtype(in_dtype)], CODES[acc], op_code(op), bool(inclusive))

    def out_shape(self, shape, v):
        return (int(np.prod(shape)),)

    def numpy(self, case):
        inc = _UFUNCS[case.op].accumulate(case.x, dtype=case.acc)
        if case.inclusive:
            return inc
        first = np.array([identity(case.op, case.acc)], dtype=case.acc)
        return np.concatenate([first, inc[:-1]])

    def reference(self, case):
        """(reference, prefix sums of |x|) of a float sum scan, in a wider
        dtype; (NumPy's answer, None) for the exact cases."""
        if case.op == "sum" and case.acc.kind == "f":
            return scan_reference(case.x, case.inclusive, case.acc)
        return self.numpy(case), None

    def check(self, case, got, v):
        ref, bound = case.ref
        acc = case.acc
        got = np.asarray(got)
        if bound is not None:
            # A float sum scan's rounding grows with the prefix's sum of |x|
            # (near a prefix that cancels to ~0 an ULP of the value itself
            # means nothing): its error is given in ULPs of that sum.
            tol = scan_tolerance(case.n, acc, ref, bound)
            err = np.abs(got.astype(ref.dtype) - ref)
            ok = bool(np.all(err <= tol))
            scale = np.spacing(bound.astype(acc)).astype(ref.dtype)
            with np.errstate(invalid="ignore", divide="ignore"):
                u = np.where(err == 0, 0, err / np.where(scale > 0, scale, np.inf))
            return ok, float(np.max(np.where(np.isnan(u), np.inf, u))) if u.size else 0.0, "ulp(sum|x|)"
        ok = bool(np.array_equal(got, ref, equal_nan=True))
        return ok, ulps(got, ref, acc), "ulp" if acc.kind == "f" else "abs"

    def summary(self, got, v):
        got = np.asarray(got)
        return f"last = {got[-1]}" if got.size else "empty"

    def apply(self, x, variant, op="sum", inclusive=True, progress=False):
        return scan(x, op, inclusive=inclusive, variant=variant, progress=progress)


FAMILY = register(ScanFamily())
