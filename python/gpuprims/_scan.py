"""Prefix scan: gpuprims.scan and gpuprims.cumsum, and the scan Family."""
from __future__ import annotations

import numpy as np

from ._arrays import take
from ._family import Family, invoke, op_code, register
from ._numerics import identity, scan_reference, scan_tolerance, ulps
from ._reduce import CODES, DTYPES, result_dtype
from ._registry import lookup

_UFUNCS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


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
    code = op_code(op)
    v = lookup("scan", variant)
    operand = take(x, "scan", CODES)
    acc = result_dtype(op, operand.dtype, dtype)
    n = operand.size
    params = (n, CODES[operand.dtype], CODES[acc], code, bool(inclusive))
    return invoke("scan", v, operand, (n,), acc, params)


def cumsum(x, *, variant: str = "auto", dtype=None):
    """Inclusive sum scan, as numpy.cumsum(x) (flattened, same result dtype)."""
    return scan(x, "sum", inclusive=True, variant=variant, dtype=dtype)


class ScanFamily(Family):
    """Prefix scan: n elements in, their n prefixes out."""

    name = "scan"
    options = ("op", "inclusive")
    dtypes = DTYPES
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

    def apply(self, x, variant, op="sum", inclusive=True):
        return scan(x, op, inclusive=inclusive, variant=variant)


FAMILY = register(ScanFamily())
