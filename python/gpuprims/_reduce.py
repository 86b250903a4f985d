"""Reduction: gpuprims.reduce, sum, min, max."""
from __future__ import annotations

import numpy as np

from . import _backend, _core
from ._arrays import DeviceArray, take
from ._registry import check_limit, lookup

CODES = {np.dtype(t): i for i, t in enumerate(("int32", "int64", "float32", "float64"))}  # gp_dtype
DTYPES = tuple(CODES)
OPS = {"sum": 0, "min": 1, "max": 2}  # gp_op
_NUMPY_NAMES = {"sum": "add", "min": "minimum", "max": "maximum"}
# (variant, op, dtype) -> the core's arguments, for DeviceArray calls that
# passed every check once (see the hot path in reduce)
_VALIDATED: dict = {}


def result_dtype(op: str, in_dtype: np.dtype, dtype=None) -> np.dtype:
    """numpy's rule: sum of an integer type accumulates in int64 (the
    platform integer); float sums keep their type; min/max keep the input
    type.  dtype= overrides it."""
    if dtype is not None:
        d = np.dtype(dtype)
        if d not in DTYPES:
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
        # The hot path - a DeviceArray with a (variant, op, dtype) seen
        # before - skips the checks those already passed: a few hundred ns
        # instead of a few us per call.
        try:
            fast = _VALIDATED.get((variant, op, x.dtype))
        except TypeError:  # an unhashable variant or op: the checks below say what is wrong
            fast = None
        if fast is not None:
            n = x.size
            if n or op == "sum":
                index, in_code, acc_code, op_code, acc_type = fast
                return acc_type(_core.reduce(index, x._ptr, n, in_code, acc_code, op_code))
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"unknown op {op!r}; choose one of: {', '.join(OPS)}")
    v = lookup("reduce", variant)
    operand = take(x, op, CODES)
    acc = result_dtype(op, operand.dtype, dtype)
    n = operand.size
    if v.limits:
        check_limit(v, n)
    if n == 0 and op != "sum":
        raise ValueError(
            f"zero-size array to reduction operation {_NUMPY_NAMES[op]} which has no identity"
        )
    args = (n, CODES[operand.dtype], CODES[acc], OPS[op])
    if v.where == "host":
        value = _core.reduce_host(v.index, operand.to_host(), *args)
    else:
        value = _core.reduce(v.index, operand.to_device().ptr, *args)
        if type(x) is DeviceArray and dtype is None and not v.limits:
            _VALIDATED[(variant, op, x.dtype)] = (v.index, *args[1:], acc.type)
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
