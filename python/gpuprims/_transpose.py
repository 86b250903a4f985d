"""Transpose: gpuprims.transpose."""
from __future__ import annotations

import numpy as np

from . import _core
from ._arrays import DeviceArray, take, to_device
from ._registry import check_limit, lookup

# Any numeric element of 1, 2, 4 or 8 bytes: a transpose only moves bits.
DTYPES = {np.dtype(t): None for t in (
    "bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32",
    "int64", "uint64", "float64", "complex64")}


def transpose(a, *, variant: str = "auto"):
    """The transpose of a 2-D array, out of place.

    a: a NumPy array (any strides) or a device array (DeviceArray, CuPy,
    PyTorch CUDA tensor, anything with __cuda_array_interface__), of any
    numeric dtype whose elements are 1, 2, 4 or 8 bytes.  NumPy in, NumPy
    out (C-contiguous, shape (cols, rows)); device in, DeviceArray out.
    `variant` names a step of the journey (gpuprims.variants("transpose"));
    "auto" is the fastest.  The `copy` variant is the bandwidth roof: it
    returns a copy of `a` with a's own shape, not the transpose.
    """
    v = lookup("transpose", variant)
    operand = take(a, "transpose", DTYPES, ndim=2)
    rows, cols = operand.shape
    check_limit(v, rows * cols, operand.dtype)
    out_shape = operand.shape if v.name == "copy" else (cols, rows)
    itemsize = operand.dtype.itemsize
    if v.where == "host":
        out = np.empty(out_shape, dtype=operand.dtype)
        _core.transpose_host(v.index, operand.to_host(), out, rows, cols, itemsize)
        return to_device(out) if operand.on_device else out
    src = operand.to_device()
    out = DeviceArray(out_shape, operand.dtype)
    _core.transpose(v.index, src.ptr, out.ptr, rows, cols, itemsize)
    return out if operand.on_device else out.get()
