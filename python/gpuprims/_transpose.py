"""Transpose: gpuprims.transpose, and the transpose Family."""
from __future__ import annotations

import numpy as np

from ._arrays import take
from ._family import Family, invoke, register
from ._numerics import ulps
from ._registry import lookup

# Any numeric element of 1, 2, 4 or 8 bytes: a transpose only moves bits.
# Each maps to what the core's params take of it: its size and its name (for
# a variant's dtypes list; numpy computes dtype.name anew on every access).
DTYPES = {np.dtype(t): (np.dtype(t).itemsize, t) for t in (
    "bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32", "float32",
    "int64", "uint64", "float64", "complex64")}


def _params(shape, dtype) -> tuple:
    rows, cols = shape
    return (rows, cols, *DTYPES[dtype])


def _out_shape(shape, v) -> tuple:
    """(cols, rows); the `copy` variant (the bandwidth roof) keeps the input's shape."""
    rows, cols = shape
    return (rows, cols) if v.name == "copy" else (cols, rows)


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
    return invoke("transpose", v, operand, _out_shape(operand.shape, v), operand.dtype,
                  _params(operand.shape, operand.dtype))


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
        return _params(shape, np.dtype(in_dtype))

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
            raise ValueError(f"transpose needs a 2-D array, got {x.ndim}-D")
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

    def apply(self, x, variant, op="sum", inclusive=True):
        return transpose(x, variant=variant)


FAMILY = register(TransposeFamily())
