"""Columns of a C array of 2 or 4 columns scanned along axis 0 as one 1-D
scan whose elements are the rows (cuda/scan/vector_scan.cuh's tuples,
combined column by column): what segmented_adaptive runs for 16-byte rows
(4 4-byte columns, 2 8-byte ones) and 8-byte rows (2 4-byte columns) where
the input's dtype is the result's and the input and output are aligned to
a row; a stack of such arrays (a 3-D array along axis 1) where each
array's rows are whole tiles (cuda/scan/12_segmented_adaptive.cu,
TupleColumns).  The tiles of the large shapes (lookback_tuning.cuh,
TupleTuning and PairTupleTuning): 192 rows of 16 bytes, 512 of 8.

The cases: lengths of one row, under a tile, around 2048, and over 32
tiles (the look-back's second level); sums, min and max (NaN in one
column), inclusive and exclusive, against NumPy with test_scan_batched.py's
checks (which also check that the input is unmodified); stacks of whole
tiles and of not whole ones (the columns kernel); an input or output one
element off a row's alignment (the columns kernel, with the scratch asked
for before the pointers were known); the same bits on three runs; and
gpuprims.cumsum along axis 0 of a NumPy array."""
import numpy as np
import pytest

import gpuprims
from gpuprims import _core

from test_scan_batched import DTYPES, OPS, POISON, check_batched, check_problem, random_data, run

ADAPTIVE = next(v for v in gpuprims.variants("scan") if v.name == "segmented_adaptive")

TILE = {16: 192, 8: 512}  # rows a tile of the large shape, by a row's bytes

# (op, dtype, columns): every dtype that keeps its type, each row width.
CASES = [("sum", "float32", 4), ("sum", "float32", 2), ("sum", "int32", 4), ("sum", "int32", 2),
         ("min", "float32", 4), ("max", "int32", 4), ("max", "float32", 2),
         ("sum", "float64", 2), ("sum", "int64", 2), ("max", "float64", 2), ("min", "int64", 2)]


def row_bytes(dtype, columns):
    return np.dtype(dtype).itemsize * columns


def case_id(c):
    return f"{c[0]}-{c[1]}-x{c[2]}"


@pytest.mark.parametrize("op,dtype,columns", CASES, ids=[case_id(c) for c in CASES])
def test_lengths(backend, op, dtype, columns):
    """One array: one row, a warp's worth, around 2048 rows (tiles of 192 or
    512 rows: several, a small or large shape), and 40 tiles and a few rows
    (tiles past the first 32 read the look-back's second level)."""
    tile = TILE[row_bytes(dtype, columns)]
    for n in (1, 31, 2047, 2048, 2049, 40 * tile + 5):
        for inclusive in (True, False):
            check_batched(ADAPTIVE, "C", 1, n, columns, op, dtype, dtype, inclusive, seed=n)


STACKS = [("sum", "float32", 4), ("sum", "float32", 2), ("max", "int32", 4), ("sum", "float64", 2), ("min", "int64", 2)]


@pytest.mark.parametrize("op,dtype,columns", STACKS, ids=[case_id(c) for c in STACKS])
@pytest.mark.parametrize("tiles", [1, 2, 34])
def test_stacks(backend, op, dtype, columns, tiles):
    """A 3-D C array along axis 1: arrays of whole tiles (the tuple scan,
    every array at once, a look-back tree each), and of a row more (the
    columns kernel)."""
    n = tiles * TILE[row_bytes(dtype, columns)]
    check_batched(ADAPTIVE, "C", 3, n, columns, op, dtype, dtype, True, seed=tiles)
    check_batched(ADAPTIVE, "C", 2, n, columns, op, dtype, dtype, False, seed=tiles + 1)
    check_batched(ADAPTIVE, "C", 3, n + 1, columns, op, dtype, dtype, True, seed=tiles + 2)


def test_widening_sum_keeps_its_route(backend):
    """int32 columns summed into int64 (NumPy's cumsum) are not rows of one
    type: the columns kernel, exact."""
    for n in (2049, 40 * 192 + 5):
        check_batched(ADAPTIVE, "C", 1, n, 4, "sum", "int32", "int64", True, seed=n)
        check_batched(ADAPTIVE, "C", 1, n, 2, "sum", "int32", "int64", False, seed=n)


def run_at(buf, in_at, out_at, n, columns, op, dtype, inclusive):
    """The scan of the (n, columns) array at buf[in_at:], written at element
    out_at of a poisoned device buffer; the result, and the input checked
    unmodified."""
    d = gpuprims.to_device(buf)
    dt = np.dtype(dtype)
    total = n * columns
    out = gpuprims.to_device(np.full(total + out_at, POISON[dt.kind], dt))
    code = DTYPES.index(dt.name)
    _core.call("scan", ADAPTIVE.index, d.ptr + in_at * dt.itemsize, out.ptr + out_at * dt.itemsize,
               (total, code, code, OPS.index(op), inclusive, (1, n, columns, n * columns, columns, 1, 0)))
    np.testing.assert_array_equal(d.get(), buf)
    return out.get()[out_at:]


UNALIGNED = [("sum", "float32", 4), ("sum", "float32", 2), ("sum", "float64", 2), ("max", "int32", 4)]


@pytest.mark.parametrize("op,dtype,columns", UNALIGNED, ids=[case_id(c) for c in UNALIGNED])
@pytest.mark.parametrize("in_at,out_at", [(1, 0), (0, 1)])
def test_unaligned(backend, op, dtype, columns, in_at, out_at):
    """Input or output one element off a row's alignment: not read as
    tuples (the columns kernel), and still right - with the scratch asked
    for before the pointers were known, which must cover that route too."""
    n = 40 * TILE[row_bytes(dtype, columns)] + 5
    buf = random_data(n * columns + in_at, dtype, seed=n, op=op)
    x = buf[in_at:].reshape(n, columns)
    for inclusive in (True, False):
        got = run_at(buf, in_at, out_at, n, columns, op, dtype, inclusive).reshape(n, columns)
        for c in range(columns):
            check_problem(got[:, c], x[:, c], op, inclusive, dtype)


@pytest.mark.parametrize("outer,columns", [(1, 4), (1, 2), (3, 4)])
def test_same_bits(backend, outer, columns):
    """Float32 sums over two levels of the tree: the same bits on three runs
    (the look-back's tree is fixed), the input unmodified (run checks)."""
    n = 40 * TILE[4 * columns] + (5 if outer == 1 else 0)
    buf = random_data(outer * n * columns, "float32", seed=40 + columns)
    layout = (outer, n, columns, n * columns, columns, 1, 0)
    runs = [run(ADAPTIVE, buf, 0, buf.size, "sum", "float32", "float32", True, layout) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))


def test_public_cumsum(backend):
    """gpuprims.cumsum(x, axis=0) of a (4099, 4) float32 NumPy array (the
    tuple scan, through the host copy) against a float64 cumsum.  Each
    result is a sum through a tree of additions at most about 30 deep (a
    tile total: 3 pairwise levels over a lane's 6 vectors and a warp's 5;
    the 5 of the warp tree over the 22 tiles' totals; in the tile, the
    warp scan's 5, the carry over its 6 rounds, the prefix and the write),
    so |error| <= 30 eps sum|x| over the prefix bounds it; 4 log2(4099) =
    48 eps sum|x|, plus one rounding of the result, allows that."""
    rng = np.random.default_rng(41)
    x = rng.standard_normal((4099, 4)).astype(np.float32)
    before = x.copy()
    got = np.asarray(gpuprims.cumsum(x, axis=0))
    want = np.cumsum(x.astype(np.float64), axis=0)
    eps = np.finfo(np.float32).eps
    bound = 4 * np.log2(x.shape[0]) * eps * np.cumsum(np.abs(x.astype(np.float64)), axis=0)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.all(np.abs(got - want) <= bound + eps * np.abs(want))
    np.testing.assert_array_equal(x, before)
