"""The column scan's three forms (cuda/scan/11_batched_columns.cu): the rows
form (cuda/scan/column_rows.cuh), taken by a C array's axis 0 with few
columns - a power of two up to 256 bytes a row, contiguous rows, both
pointers 16-byte aligned, no widening sum - and scanned as one 1-D scan of
its rows; the vector tiles, taken where the columns are contiguous and
every row is whole aligned 16-byte vectors with no widening sum; and the
general kernel every other layout falls back to.  Called through the core
with an (outer, n, inner) layout as test_scan_batched.py does, against
NumPy (exact for integers and min/max, within the prefix bound of
scan_tolerance for float sums): edge lengths at the tiles' row boundaries
(a rows-form tile is 2048 elements of 4 bytes or 768 of 8, 2048 / C rows;
a vector tile 2048 rows of one vector, 256 rows of 8 vectors), one row,
rows of 1 to 64 columns (powers of two and not), rows of 1 to 33 vectors
(partly filled tiles across), chunks over two and three levels of the
look-back, negative and padded row strides, misaligned starts, every (op,
input, result) combination, inclusive and exclusive, the same bits every
run, the input unmodified; which threads write which rows (gpuprims.trace);
and cumsum along axis 0 / a middle axis through the public API, narrow
and wide dtypes included."""
import numpy as np
import pytest

import gpuprims

from test_numpy_semantics import assert_scanned, data
from test_scan_batched import COMBOS, check_problem, random_data, run

COLUMNS = [v for v in gpuprims.variants("scan") if v.name == "batched_columns"][0]


def check_view(buf, v, op, in_t, acc, inclusive, variant=COLUMNS):
    """Scan the (outer, n, inner) view v of the 1-D buffer buf along n."""
    outer, n, inner = v.shape
    first = (v.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // buf.itemsize if v.size else 0
    s = [st // buf.itemsize for st in v.strides]
    got = run(variant, buf, first, v.size, op, in_t, acc, inclusive, (outer, n, inner, s[0], s[1], s[2], 0))
    rows = v.transpose(0, 2, 1).reshape(outer * inner, n)
    got_rows = got.reshape(outer, n, inner).transpose(0, 2, 1).reshape(outer * inner, n)
    for p in range(outer * inner):
        check_problem(got_rows[p], rows[p], op, inclusive, acc)
    return got


def c_array(outer, n, inner, dtype, seed, op="sum"):
    buf = random_data(outer * n * inner, dtype, seed, op)
    return buf, buf.reshape(outer, n, inner)


@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 2047, 2048, 2049, 3 * 2048 + 5])
@pytest.mark.parametrize("inner", [4, 32])
def test_tile_row_boundaries(backend, n, inner):
    """Lengths at the tile's row boundaries: 4 columns (one vector a row:
    tiles of 2048 rows) and 32 (8 vectors: 256 rows), a short axis (the
    tile widened across)."""
    buf, v = c_array(1, n, inner, "float32", n + inner)
    for inclusive in (True, False):
        check_view(buf, v, "sum", "float32", "float32", inclusive)


@pytest.mark.parametrize("inner", [4, 8, 12, 20, 36, 64, 132])
def test_partly_filled_tiles_across(backend, inner):
    """Rows of 1, 2, 3, 5, 9, 16 and 33 vectors: the last tile across a row
    only partly filled; several problems (outer) and chunks down."""
    buf, v = c_array(3, 700, inner, "float32", inner)
    check_view(buf, v, "sum", "float32", "float32", True)
    buf, v = c_array(2, 300, inner, "int32", inner)
    check_view(buf, v, "max", "int32", "int32", False)


@pytest.mark.parametrize("op,in_t,acc", COMBOS)
def test_ops_and_dtypes(backend, op, in_t, acc):
    """Every combination: 8-byte ones (two a vector, fence-free paired
    slots), 4-byte ones, and the widening sums (the general kernel)."""
    buf, v = c_array(2, 1100, 8, in_t, 5, op)
    check_view(buf, v, op, in_t, acc, True)
    buf, v = c_array(1, 600, 12, in_t, 6, op)
    check_view(buf, v, op, in_t, acc, False)


def test_look_back_levels(backend):
    """More than 32 chunks (a prefix published at each multiple of 32) and
    more than 32^2 (three levels of the look-back's tree)."""
    buf, v = c_array(1, 33 * 2048 + 11, 4, "float32", 21)
    check_view(buf, v, "sum", "float32", "float32", True)
    buf, v = c_array(1, 1025 * 256 + 3, 16, "int64", 22)  # 8 vectors a row: 256 rows a tile
    check_view(buf, v, "sum", "int64", "int64", False)


@pytest.mark.parametrize("case", ["reversed rows", "padded rows", "misaligned", "column slice", "every other row"])
def test_layouts(backend, case):
    """Negative row strides and padded rows keep the tiles; a misaligned
    start, a row of a non-whole number of vectors and an odd row stride
    take the general kernel - the same results either way."""
    base = random_data(4 * 2100 * 12 + 4, "float32", 30)
    if case == "reversed rows":  # s_n < 0, s_inner == 1
        buf = base[: 3 * 2100 * 12]
        v = buf.reshape(3, 2100, 12)[:, ::-1, :]
    elif case == "padded rows":  # s_n = 12 for rows of 8
        buf = base[: 3 * 2100 * 12]
        v = buf.reshape(3, 2100, 12)[:, :, :8]
    elif case == "misaligned":  # starts 4 bytes in
        buf = base[: 3 * 2100 * 12 + 1]
        v = buf[1:].reshape(3, 2100, 12)
    elif case == "column slice":  # rows of 5 columns (not whole vectors)
        buf = base[: 3 * 2100 * 12]
        v = buf.reshape(3, 2100, 12)[:, :, 2:7]
    else:  # s_n = 24: every other row of rows of 12
        buf = base[: 3 * 2100 * 12]
        v = buf.reshape(3, 1050, 24)[:, :, :12]
    for inclusive in (True, False):
        check_view(buf, v, "sum", "float32", "float32", inclusive)


def test_deterministic(backend):
    """The same bits every run (float sums over many chunks)."""
    buf, v = c_array(2, 9000, 12, "float32", 40)
    runs = [check_view(buf, v, "sum", "float32", "float32", True) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))


@pytest.mark.parametrize("shape,axis", [((5000, 4), 0), ((700, 64), 0), ((4, 300, 8), 1), ((3, 5, 1200, 4), 2)])
def test_public_cumsum(backend, shape, axis):
    """gpuprims.cumsum along axis 0 / a middle axis (what auto runs there)
    and the named variant, against NumPy; the input unmodified."""
    x = random_data(int(np.prod(shape)), "float32", 50).reshape(shape)
    keep = x.copy()
    ref = np.cumsum(x.astype(np.float64), axis=axis)
    bound = np.cumsum(np.abs(x.astype(np.float64)), axis=axis)
    eps = float(np.finfo(np.float32).eps)
    depth = 2 * int(np.ceil(np.log2(shape[axis]))) + 32
    for variant in ("auto", "batched_columns"):
        got = gpuprims.cumsum(x, axis=axis, variant=variant)
        assert got.shape == x.shape and got.dtype == np.float32
        assert np.all(np.abs(got - ref) <= depth * eps * bound + eps * np.abs(ref))
    np.testing.assert_array_equal(x, keep)


# -- the rows form: few columns along axis 0 -----------------------------------

def rows_a_tile(columns, itemsize=4):
    """Rows of a rows-form tile: a warp's 2048 elements of 4 bytes
    (lookback::Tuning) or 768 of 8 (WideTuning); for a column count the
    form does not take, those of 4 columns (lengths near a boundary all
    the same)."""
    c = columns if columns & (columns - 1) == 0 else 4
    return (2048 if itemsize == 4 else 768) // c


@pytest.mark.parametrize("columns", [1, 2, 3, 4, 5, 8, 16, 64])
@pytest.mark.parametrize("where", ["one row", "tile-1", "tile", "tile+1", "several tiles"])
def test_few_columns_tile_boundaries(backend, columns, where):
    """A C array (n, C) along axis 0, n at the rows form's tile boundaries:
    C a power of two takes the rows form, C = 3 and 5 the general kernel
    (the results alike)."""
    tile = rows_a_tile(columns)
    n = {"one row": 1, "tile-1": tile - 1, "tile": tile, "tile+1": tile + 1, "several tiles": 5 * tile + 3}[where]
    buf, v = c_array(1, n, columns, "float32", n + columns)
    for inclusive in (True, False):
        check_view(buf, v, "sum", "float32", "float32", inclusive)


@pytest.mark.parametrize("columns", [2, 4, 16, 64])
@pytest.mark.parametrize("op,in_t,acc", COMBOS)
def test_few_columns_ops_and_dtypes(backend, columns, op, in_t, acc):
    """Every combination over several tiles: 4-byte values (PE = C or 4
    columns a vector), 8-byte ones (768-element tiles, paired slots; 64
    float64 columns are past the form's 256 bytes a row and take the vector
    tiles), the widening sums (the general kernel)."""
    n = 3 * rows_a_tile(columns, np.dtype(acc).itemsize) + 5
    buf, v = c_array(1, n, columns, in_t, columns, op)
    check_view(buf, v, op, in_t, acc, True)
    check_view(buf, v, op, in_t, acc, False)


@pytest.mark.parametrize("columns,n,dtype", [
    (2, 1025 * 1024 + 3, "float32"),   # 1026 tiles of 1024 rows: three levels of the tree
    (64, 1100 * 32 + 1, "float32"),    # 1101 tiles of 32 rows, two columns a lane in the look-back
    (32, 33 * 24 + 1, "float64"),      # 34 tiles of 24 rows: a prefix published at tile 32
    (4, 1030 * 192 + 7, "int64"),      # 1031 tiles of 192 rows, 8-byte paired slots
])
def test_few_columns_look_back_levels(backend, columns, n, dtype):
    """More than 32 and more than 32^2 tiles: level totals published by
    the tiles that end a block, prefixes at the multiples of 32."""
    buf, v = c_array(1, n, columns, dtype, columns)
    check_view(buf, v, "sum", dtype, dtype, True)
    if columns <= 4:
        check_view(buf, v, "max", dtype, dtype, False)


@pytest.mark.parametrize("columns", [2, 4, 16])
def test_few_columns_misaligned(backend, columns):
    """A C array starting one element in (not 16-byte aligned) falls back
    to the general kernel: the same results."""
    n = 2 * rows_a_tile(columns) + 9
    base = random_data(n * columns + 1, "float32", columns)
    v = base[1:].reshape(1, n, columns)
    for inclusive in (True, False):
        check_view(base, v, "sum", "float32", "float32", inclusive)


@pytest.mark.parametrize("columns", [1, 4, 64])
def test_few_columns_deterministic(backend, columns):
    """The same bits every run (float sums over more than 32 tiles)."""
    buf, v = c_array(1, 40 * rows_a_tile(columns) + 3, columns, "float32", 60)
    runs = [check_view(buf, v, "sum", "float32", "float32", True) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))


@pytest.mark.parametrize("shape,owner", [
    ((8, 2), lambda e: e // 4),   # rows form: lane l writes the 16-byte vector l (elements 4l ... 4l+3)
    ((4, 4), lambda e: e // 4),
    ((16, 1), lambda e: e // 4),
    ((5, 3), lambda e: e % 3),    # three columns, not whole vectors: the general kernel's lane per column
])
def test_few_columns_owners(shape, owner):
    """Which thread writes each output element (gpuprims.trace on the
    emulator): the rows form scans the array as one run of 16-byte
    vectors, lane l the l-th."""
    x = (np.random.default_rng(7).random(shape) + 0.5).astype(np.float32)
    t = gpuprims.trace("scan", "batched_columns", x, axis=0)
    np.testing.assert_allclose(t.result, np.cumsum(x.astype(np.float64), axis=0), rtol=1e-6)
    assert [(o[1], o[2]) for o in t.owners()] == [(0, owner(e)) for e in range(x.size)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("columns", [1, 2, 3, 4, 8, 64])
def test_few_columns_public_dtypes(backend, dtype, columns):
    """gpuprims.cumsum along axis 0 of (n, C) arrays of narrow and wide
    dtypes (float16 and the small integers converted first, then the
    rows form where the converted result is 4 or 8 bytes and C fits),
    auto and the named variant, as NumPy; the input unmodified."""
    x = data((2 * rows_a_tile(columns) + 3, columns), dtype, seed=columns)
    keep = x.copy()
    for variant in ("auto", "batched_columns"):
        assert_scanned(gpuprims.cumsum(x, axis=0, variant=variant), x, "sum", axis=0)
    assert_scanned(gpuprims.scan(x, "max", axis=0), x, "max", axis=0)
    np.testing.assert_array_equal(x, keep)
