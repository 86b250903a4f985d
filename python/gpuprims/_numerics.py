"""References and error bounds: the one copy that the tests, the timing
helpers and the benchmarks share.

- integers compare exactly;
- a float sum is compared with the correctly rounded sum (math.fsum), within
  a bound that grows with sum|x| and log2(n) (sum_tolerance);
- a float scan is compared element by element with a wider-precision
  cumulative sum, within a per-element prefix bound (scan_tolerance);
- errors are reported in ULPs of the result dtype at the reference value.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

_CHUNK = 1 << 20


def exact_sum(x) -> float:
    """The correctly rounded sum of x's elements (math.fsum), streamed in
    chunks so that it needs no list of all the elements at once."""
    flat = np.asarray(x).ravel()
    chunks = (flat[i:i + _CHUNK].astype(np.float64).tolist() for i in range(0, flat.size, _CHUNK))
    return math.fsum(itertools.chain.from_iterable(chunks))


def sum_tolerance(x, acc_dtype, exact) -> float:
    """Bound on |computed - exact| for a float sum of x accumulated in
    acc_dtype.  A reduction tree of depth ceil(log2 n) rounds each element's
    contribution at most that many times: error <= depth * eps * sum|x|.  The
    variants also run sequential per-thread loops before their trees
    (unrolling, the grid-stride loop of single_pass, CUB's tiles), so the
    bound allows four times the tree depth, plus one rounding of the result
    (and of the input conversion, when acc_dtype is wider than x)."""
    x = np.asarray(x)
    return float(sum_tolerances(int(x.size), acc_dtype, float(np.abs(x.astype(np.float64)).sum()), exact))


def sum_tolerances(n, acc_dtype, abs_sums, exact):
    """sum_tolerance of many problems at once (an axis, segments): problems
    of at most n elements whose sums of |x| and exact sums are the arrays
    abs_sums and exact."""
    eps = float(np.finfo(acc_dtype).eps)
    depth = math.ceil(math.log2(max(int(n), 1))) + 1
    return 4 * depth * eps * np.asarray(abs_sums) + eps * np.abs(exact)


def scan_reference_dtype(acc_dtype) -> np.dtype:
    """The dtype a float scan's reference is accumulated in: float64 for
    float32 results, long double for float64 ones."""
    return np.dtype(np.float64 if np.dtype(acc_dtype).itemsize < 8 else np.longdouble)


def scan_reference(x, inclusive, acc_dtype):
    """(reference, prefix sums of |x|) of a float sum scan, in the wider
    scan_reference_dtype; shifted by one (0 first) for an exclusive scan."""
    xl = np.asarray(x).ravel().astype(scan_reference_dtype(acc_dtype))
    ref = np.cumsum(xl)
    bound = np.cumsum(np.abs(xl))
    if not inclusive and xl.size:
        ref = np.concatenate([[0], ref[:-1]]).astype(xl.dtype)
        bound = np.concatenate([[0], bound[:-1]]).astype(xl.dtype)
    return ref, bound


def scan_tolerance(n, acc_dtype, ref, bound):
    """Per-element bound on |computed_i - reference_i| of a float sum scan.
    A scan combines the elements of prefix i through a tree of depth
    <= 2 log2(n) after per-thread runs of up to 32, so
    |error_i| <= depth * eps * sum_{k<=i}|x_k|.  (decoupled_lookback's
    deepest paths stay within it at every n: within a tile, the vector's
    serial scan, the warp scan, the carry over the tile's 16 rounds and
    the write, at most 26; from earlier tiles, a tile total summed in
    trees (11), a warp tree per base-32 level above it (5 each), the
    digit's tree (5), the levels folded in order and the write: 6 L + 12
    for L levels of tiles (7 at most).  Measured errors are far below the
    bound: 0.625 ulp of sum|x| at 2^28, bench/results/scan-*.)
    The reference's own error (n roundings in its wider dtype) and one
    rounding of the result are added."""
    n = max(int(n), 2)
    depth = 2 * math.ceil(math.log2(n)) + 32
    eps = float(np.finfo(acc_dtype).eps)
    ref_eps = float(np.finfo(np.asarray(ref).dtype).eps) if np.asarray(ref).dtype.kind == "f" else 0.0
    return (depth * eps + n * ref_eps) * bound + eps * np.abs(ref)


def identity(op, dtype):
    """The identity of op in dtype: what an exclusive scan puts first (0 for
    sum; +inf / the largest value for min; -inf / the smallest for max)."""
    dtype = np.dtype(dtype)
    if op == "sum":
        return dtype.type(0)
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def ulps(got, ref, dtype) -> float:
    """The largest |got - ref| in units in the last place of `dtype` at the
    reference values (0 where they agree; inf where one is NaN and the other
    not).  For integers, the largest absolute difference."""
    dtype = np.dtype(dtype)
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.size == 0:
        return 0.0
    if dtype.kind != "f":
        return float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    wide = ref.dtype if ref.dtype.kind == "f" and ref.dtype.itemsize > dtype.itemsize else np.float64
    diff = np.abs(got.astype(wide) - ref.astype(wide))
    spacing = np.spacing(np.abs(ref.astype(dtype))).astype(wide)
    both_nan = np.isnan(got) & np.isnan(ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(both_nan | (diff == 0), 0, diff / spacing)
    u = np.where(np.isnan(u), np.inf, u)
    return float(np.max(u))
