"""The column scan's three forms (cuda/scan/11_batched_columns.cu): the
rows scan (rows_lookback.cuh), taken where every row is one aligned 16-byte
vector, end to end, with no widening sum; the vector tiles, taken where the
columns are contiguous and every row is whole aligned 16-byte vectors; and
the general kernel every other layout falls back to.  Called through the
core with an (outer, n, inner) layout as test_scan_batched.py does, against
NumPy (exact for integers and min/max, within the prefix bound of
scan_tolerance for float sums): edge lengths at the tiles' row boundaries
(a vector tile is 2048 rows of one vector, 256 rows of 8 vectors; a rows
tile 544 rows), rows of 1 to 33 vectors (partly
filled tiles across), chunks over two and three levels of the look-back,
negative and padded row strides, misaligned starts, every (op, input,
result) combination, inclusive and exclusive, the same bits every run, the
input unmodified; and cumsum along axis 0 / a middle axis through the
public API."""
import numpy as np
import pytest

import gpuprims

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
    """Lengths at the vector tiles' row boundaries: 4 columns (one vector a
    row: tiles of 2048 rows; two problems, since one alone takes the rows
    scan) and 32 (8 vectors: 256 rows), a short axis (the tile widened
    across)."""
    buf, v = c_array(2 if inner == 4 else 1, n, inner, "float32", n + inner)
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


ROWS_TILE = 17 * 32  # RowTiling: rows a tile (a warp's 32 lanes x 17 rows)


@pytest.mark.parametrize("n", [1, 2, 16, 17, 18, ROWS_TILE - 1, ROWS_TILE, ROWS_TILE + 1, 7 * ROWS_TILE + 13])
def test_rows_lengths(backend, n):
    """Rows of one 16-byte vector, end to end (a C (n, 4) float32 array
    along axis 0: the rows scan, rows_lookback.cuh): lengths at a lane's
    run of rows and at the tile's boundaries, inclusive and exclusive."""
    buf, v = c_array(1, n, 4, "float32", n + 7)
    for inclusive in (True, False):
        check_view(buf, v, "sum", "float32", "float32", inclusive)


@pytest.mark.parametrize("op,in_t,acc", [c for c in COMBOS if np.dtype(c[1]).itemsize == np.dtype(c[2]).itemsize])
def test_rows_ops_and_dtypes(backend, op, in_t, acc):
    """Every combination whose sums do not widen, on rows of one vector:
    4 int32/float32 columns or 2 int64/float64 ones (16-byte totals in
    four flagged quarters, whatever the element)."""
    inner = 16 // np.dtype(in_t).itemsize
    for inclusive, n in ((True, 3 * ROWS_TILE + 101), (False, 2 * ROWS_TILE - 3)):
        buf, v = c_array(1, n, inner, in_t, n, op)
        check_view(buf, v, op, in_t, acc, inclusive)


def test_rows_levels_and_bits(backend):
    """More than 32^2 tiles (three levels of the look-back's tree), and the
    same bits in two runs."""
    buf, v = c_array(1, 1025 * ROWS_TILE + 17, 4, "float32", 23)
    first = check_view(buf, v, "sum", "float32", "float32", True)
    again = check_view(buf, v, "sum", "float32", "float32", True)
    np.testing.assert_array_equal(first.view(np.uint32), again.view(np.uint32))


def test_look_back_levels(backend):
    """The vector tiles over more than 32 chunks (a level-1 total folded by
    the 32nd of a block of chunks; two problems of one vector a row), more
    than 32^2 (three levels of the look-back's tree), and prefixes of more
    than 32 level totals (two rounds of polls)."""
    buf, v = c_array(2, 33 * 2048 + 11, 4, "float32", 21)
    check_view(buf, v, "sum", "float32", "float32", True)
    buf, v = c_array(1, 1025 * 256 + 3, 16, "int64", 22)  # 8 vectors a row: 256 rows a tile
    check_view(buf, v, "sum", "int64", "int64", False)
    # float32 rows of 8 vectors: 256 rows a tile, 130 chunks.  The prefixes
    # of chunks 95, 126 and 127 fold 33 or 34 level totals: two rounds of
    # the block's polls (32 items a round).
    buf, v = c_array(1, 129 * 256 + 7, 32, "float32", 24)
    check_view(buf, v, "sum", "float32", "float32", False)


def test_general_look_back_levels(backend):
    """The general kernel's look-back (each lane its column's) over more
    than 32^2 chunks: int32 summed into int64 along a (2^19 + 517, 4) axis,
    tiles of 8 warps x 8 row groups x 8 rows (512 rows), 1025 of them down
    the axis - prefixes folded from three levels of totals."""
    buf, v = c_array(1, 1024 * 512 + 517, 4, "int32", 23)
    check_view(buf, v, "sum", "int32", "int64", True)


@pytest.mark.parametrize("op,in_t,acc", [("sum", "float32", "float32"), ("max", "int64", "int64")])
def test_many_tiles_across(backend, op, in_t, acc):
    """Rows of 64 and 63 tiles across (512 and 504 vectors) over more than
    32 chunks, inclusive and exclusive: every tile's own scan, its prefix
    (gathered while that scan runs) added on the way out."""
    vec = 16 // np.dtype(in_t).itemsize
    for inclusive, n, vectors in ((True, 33 * 256 + 7, 512), (False, 40 * 256 - 1, 512), (True, 35 * 256, 504)):
        buf, v = c_array(1, n, vectors * vec, in_t, n, op)
        check_view(buf, v, op, in_t, acc, inclusive)


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


def check_float32_cumsum(got, x, axis):
    """A float32 cumsum of x along axis against a float64 one, within the
    prefix bound: (2 ceil(log2 n) + 32) eps x the prefix's sum |x|, plus a
    rounding of the result."""
    assert got.shape == x.shape and got.dtype == np.float32
    x64 = x.astype(np.float64)
    ref = np.cumsum(x64, axis=axis)
    bound = np.cumsum(np.abs(x64, out=x64), axis=axis)
    eps = float(np.finfo(np.float32).eps)
    depth = 2 * int(np.ceil(np.log2(x.shape[axis]))) + 32
    assert np.all(np.abs(got - ref) <= depth * eps * bound + eps * np.abs(ref))


@pytest.mark.parametrize("shape,axis", [((5000, 4), 0), ((700, 64), 0), ((4, 300, 8), 1), ((3, 5, 1200, 4), 2)])
def test_public_cumsum(backend, shape, axis):
    """gpuprims.cumsum along axis 0 / a middle axis (what auto runs there)
    and the named variant, against NumPy; the input unmodified."""
    x = random_data(int(np.prod(shape)), "float32", 50).reshape(shape)
    keep = x.copy()
    for variant in ("auto", "batched_columns"):
        check_float32_cumsum(gpuprims.cumsum(x, axis=axis, variant=variant), x, axis)
    np.testing.assert_array_equal(x, keep)


def test_public_cumsum_long_axis_many_columns(cuda):
    """auto along axis 0 of (512, 2^18) float32 in (0, 1]: enough columns for
    a thread each, an axis long enough that auto takes the column kernel's
    tree of sums (a thread's one-after-another sums of same-signed values
    err 14 eps x sum|x| here against the tiles' 1.2, and 83 at n = 512 for
    correlated values, past the bound's 50: bench/results/tune-colscan-axes-
    nvidia-h200-2026-11-24.md); within the bound, the input unmodified.
    2^27 elements: the GPU only."""
    shape = (512, 2**18)
    x = (1 - np.random.default_rng(51).random(shape, dtype=np.float64)).astype(np.float32)
    keep = x.copy()
    got = gpuprims.cumsum(x, axis=0)
    np.testing.assert_array_equal(x, keep)
    check_float32_cumsum(got, x, 0)
