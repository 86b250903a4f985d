"""C rows whose length is a whole number of the 1-D look-back scan's tiles:
segmented_adaptive scans them all in one grid with the 1-D kernel, each
row's tiles with a look-back tree of their own (cuda/scan/
12_segmented_adaptive.cu's RowsAtOnce, lookback::Rows).  The tiles of its
large shapes: 2048 elements for 4-byte inputs summed into 4 bytes, 768 for
8-byte ones and for 4-byte inputs summed into 8.  The cases: one tile a
row (no look-back), a few, more than 32 (the second level of the tree),
one row (the 1-D scan itself); inclusive and exclusive, sums, min and max;
against NumPy with test_scan_batched.py's checks, the input unmodified,
and the same bits on a second run.  Rows that are not whole tiles take
the other routes (test_scan_batched.py, test_scan_flat_tiles.py)."""
import numpy as np
import pytest

import gpuprims

from test_scan_batched import check_batched, run

ADAPTIVE = next(v for v in gpuprims.variants("scan") if v.name == "segmented_adaptive")

F32_TILE, WIDE_TILE = 2048, 768


@pytest.mark.parametrize("outer,tiles", [(5, 1), (3, 2), (2, 7), (2, 33), (1, 40)])
def test_float32_rows(backend, outer, tiles):
    n = tiles * F32_TILE
    check_batched(ADAPTIVE, "C", outer, n, 1, "sum", "float32", "float32", True, seed=tiles)
    check_batched(ADAPTIVE, "C", outer, n, 1, "sum", "float32", "float32", False, seed=tiles + 1)


@pytest.mark.parametrize("op,in_t,acc,tile", [("sum", "int32", "int64", WIDE_TILE),
                                              ("sum", "float64", "float64", WIDE_TILE),
                                              ("max", "float64", "float64", WIDE_TILE),
                                              ("min", "int32", "int32", F32_TILE)])
@pytest.mark.parametrize("tiles", [3, 34])
def test_other_types(backend, op, in_t, acc, tile, tiles):
    check_batched(ADAPTIVE, "C", 3, tiles * tile, 1, op, in_t, acc, True, seed=tiles)
    check_batched(ADAPTIVE, "C", 2, tiles * tile, 1, op, in_t, acc, False, seed=tiles + 5)


def test_same_bits_and_input_kept(backend):
    """Rows over two levels of the tree: the same bits on every run, and
    the input untouched."""
    rng = np.random.default_rng(31)
    outer, n = 3, 34 * F32_TILE
    buf = rng.standard_normal(outer * n).astype(np.float32)
    before = buf.copy()
    layout = (outer, n, 1, n, 1, 1, 0)
    runs = [run(ADAPTIVE, buf, 0, buf.size, "sum", "float32", "float32", True, layout) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))
    np.testing.assert_array_equal(buf, before)


def test_public_cumsum(backend):
    """gpuprims.cumsum along the last axis of a C array of whole-tile rows
    (what auto runs through segmented_adaptive), against a float64 cumsum:
    each element is a sum of at most n float32 values, so |error| <=
    n eps sum|x| bounds it loosely; the look-back's tree of pairwise totals
    keeps it near log2(n) eps sum|x|, which the tolerance below allows
    (4 log2(n) eps over the prefix's sum of |x|)."""
    rng = np.random.default_rng(32)
    x = rng.standard_normal((4, 5 * F32_TILE)).astype(np.float32)
    before = x.copy()
    _check_cumsum_rows(x, np.asarray(gpuprims.cumsum(x, axis=-1)))
    np.testing.assert_array_equal(x, before)


def _check_cumsum_rows(x, got):
    """got against a float64 cumsum of x along its last axis, within the
    bound test_public_cumsum explains."""
    x64 = x.astype(np.float64)
    want = np.cumsum(x64, axis=-1)
    n = max(x.shape[-1], 2)
    bound = 4 * np.log2(n) * np.finfo(np.float32).eps * np.cumsum(np.abs(x64), axis=-1)
    assert got.shape == x.shape and got.dtype == np.float32
    assert np.all(np.abs(got - want) <= bound + np.finfo(np.float32).eps * np.abs(want))


def test_public_cumsum_3d_with_out(backend):
    """A 3-D C array along its last axis (its 6 rows are whole tiles) into
    a preallocated out=: written there, returned, the input untouched."""
    rng = np.random.default_rng(33)
    x = rng.standard_normal((2, 3, 2 * F32_TILE)).astype(np.float32)
    before = x.copy()
    out = np.empty_like(x)
    got = gpuprims.cumsum(x, axis=-1, out=out)
    assert got is out
    _check_cumsum_rows(x, out)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("layout", ["fortran", "reversed", "strided"])
def test_public_cumsum_rows_not_contiguous(backend, layout):
    """Rows of whole-tile length that do not lie end to end (an F array, a
    reversed view, every other column) take the other routes: still
    NumPy's answer, the input untouched."""
    rng = np.random.default_rng(34)
    base = rng.standard_normal((3, 2 * F32_TILE * (2 if layout == "strided" else 1))).astype(np.float32)
    x = {"fortran": np.asfortranarray(base), "reversed": base[:, ::-1], "strided": base[:, ::2]}[layout]
    before = x.copy()
    got = np.asarray(gpuprims.cumsum(x, axis=-1))
    _check_cumsum_rows(np.ascontiguousarray(x), got)
    np.testing.assert_array_equal(x, before)


def test_public_cumsum_no_rows(backend):
    """No rows of whole-tile length: an empty result of NumPy's shape."""
    x = np.empty((0, F32_TILE), np.float32)
    got = np.asarray(gpuprims.cumsum(x, axis=-1))
    assert got.shape == (0, F32_TILE) and got.dtype == np.float32
