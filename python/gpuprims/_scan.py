"""Prefix scan: gpuprims.scan and gpuprims.cumsum."""
from __future__ import annotations

import numpy as np

from . import _core
from ._arrays import DeviceArray, take, to_device
from ._reduce import CODES, OPS, result_dtype
from ._registry import check_limit, lookup


def scan(x, op: str = "sum", *, inclusive: bool = True, variant: str = "auto", dtype=None):
    """Prefix scan of all elements of `x` (flattened in C order) with `op`
    ("sum", "min" or "max").

    Inclusive: out[i] = x[0] op ... op x[i] (numpy.cumsum,
    numpy.minimum.accumulate, numpy.maximum.accumulate).  Exclusive:
    out[0] is the identity (0, the dtype's largest value for min, its
    smallest for max) and out[i] = x[0] op ... op x[i-1].  The result dtype
    follows numpy.cumsum (int32 sums accumulate in int64) unless dtype=
    says otherwise.  NumPy in, NumPy out; device in (DeviceArray, CuPy,
    PyTorch, __cuda_array_interface__), DeviceArray out.  `variant` names a
    step of the journey (gpuprims.variants("scan")); "auto" is the fastest.
    """
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"unknown op {op!r}; choose one of: {', '.join(OPS)}")
    v = lookup("scan", variant)
    operand = take(x, "scan", CODES)
    acc = result_dtype(op, operand.dtype, dtype)
    n = operand.size
    check_limit(v, n)
    args = (n, CODES[operand.dtype], CODES[acc], OPS[op], bool(inclusive))
    if v.where == "host":
        out = np.empty(n, dtype=acc)
        _core.scan_host(v.index, operand.to_host(), out, *args)
        return to_device(out) if operand.on_device else out
    src = operand.to_device()
    out = DeviceArray((n,), acc)
    _core.scan(v.index, src.ptr, out.ptr, *args)
    return out if operand.on_device else out.get()


def cumsum(x, *, variant: str = "auto", dtype=None):
    """Inclusive sum scan, as numpy.cumsum(x) (flattened, same result dtype)."""
    return scan(x, "sum", inclusive=True, variant=variant, dtype=dtype)
