"""Reduction: gpuprims.reduce, sum, min, max, and the reduce Family."""
from __future__ import annotations

import numpy as np

from . import _backend, _core
from ._arrays import DeviceArray, take
from ._family import DTYPE_CODES, OP_CODES, Family, invoke, op_code, register
from ._numerics import exact_sum, sum_tolerance, ulps
from ._registry import lookup

CODES = DTYPE_CODES  # numpy dtype -> the core's dtype code
DTYPES = tuple(CODES)
OPS = OP_CODES  # op name -> the core's op code
_NUMPY_NAMES = {"sum": "add", "min": "minimum", "max": "maximum"}
# (variant, op, dtype) -> the core's arguments, for DeviceArray calls whose
# arguments parsed once (see the hot path in reduce)
_PARSED: dict = {}


def result_dtype(op: str, in_dtype: np.dtype, dtype=None) -> np.dtype:
    """numpy's rule: sum of an integer type accumulates in int64 (the
    platform integer); float sums keep their type; min/max keep the input
    type.  dtype= overrides it."""
    if dtype is not None:
        d = np.dtype(dtype)
        if d not in CODES:
            names = ", ".join(t.name for t in DTYPES)
            raise TypeError(f"dtype={d} is not supported; choose one of: {names}")
        return d
    if op == "sum" and in_dtype.kind == "i":
        return np.dtype(np.int64)
    return in_dtype


def reduce(x, op: str = "sum", *, variant: str = "auto", dtype=None):
    """Reduce all elements of `x` with `op` ("sum", "min" or "max").

    x: a NumPy array (any shape, any strides) or a device array (DeviceArray,
    CuPy, PyTorch CUDA tensor, anything with __cuda_array_interface__), used
    in place.  Returns a NumPy scalar of numpy's result dtype (see
    result_dtype), whatever the input.  `variant` names a step of the
    journey (gpuprims.variants("reduce")); "auto" is the fastest.
    """
    if type(x) is DeviceArray and dtype is None and x.shape and x._backend == _backend.current:
        # The hot path - a DeviceArray with a (variant, op, dtype) parsed
        # before - goes straight to the core: a few hundred ns of Python.
        try:
            fast = _PARSED.get((variant, op, x.dtype))
        except TypeError:  # an unhashable variant or op: the parsing below says what is wrong
            fast = None
        if fast is not None:
            n = x.size
            if n or op == "sum":
                index, in_code, acc_code, code, acc_type = fast
                return acc_type(_core.call("reduce", index, x._ptr, None, (n, in_code, acc_code, code)))
    code = op_code(op)
    v = lookup("reduce", variant)
    operand = take(x, op, CODES)
    acc = result_dtype(op, operand.dtype, dtype)
    n = operand.size
    if n == 0 and op != "sum":
        raise ValueError(
            f"zero-size array to reduction operation {_NUMPY_NAMES[op]} which has no identity"
        )
    params = (n, CODES[operand.dtype], CODES[acc], code)
    value = invoke("reduce", v, operand, None, acc, params)
    if type(x) is DeviceArray and dtype is None and v.where == "device":
        _PARSED[(variant, op, x.dtype)] = (v.index, *params[1:], acc.type)
    return acc.type(value)  # exact: the core returns the accumulator's value


def sum(x, *, variant: str = "auto", dtype=None):  # noqa: A001 - the public name
    """Sum of all elements (numpy.sum's result dtype)."""
    return reduce(x, "sum", variant=variant, dtype=dtype)


def min(x, *, variant: str = "auto", dtype=None):  # noqa: A001
    """Smallest element; NaN if any element is NaN (as numpy.min)."""
    return reduce(x, "min", variant=variant, dtype=dtype)


def max(x, *, variant: str = "auto", dtype=None):  # noqa: A001
    """Largest element; NaN if any element is NaN (as numpy.max)."""
    return reduce(x, "max", variant=variant, dtype=dtype)


class ReduceFamily(Family):
    """Reduction: one value from n elements."""

    name = "reduce"
    options = ("op",)
    dtypes = DTYPES
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

    def apply(self, x, variant, op="sum", inclusive=True):
        return reduce(x, op, variant=variant)


FAMILY = register(ReduceFamily())
