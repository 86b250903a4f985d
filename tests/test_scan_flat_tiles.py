"""The flat look-back scan (segmented_lookback) on contiguous problems: its
tiles are a warp's (float32: 1024 elements for segments and for rows that
do not divide 2048, 2048 for rows that do; cuda/scan/10_segmented_lookback.cu's
FlatTuning and RowTuning give the others),
its heads computed from the row length or marked from the offsets, so the
cases here sit at those edges: rows shorter than a 16-byte
vector (1, 2, 3), rows that do not divide a warp's round of vectors, rows
starting mid-tile over many tiles (the look-back's second level), an input
not 16-byte aligned, segments with runs of empty ones at tile boundaries
and offsets past the last tile, segments of a long mean (scan_long: a
look-back tree a segment); inclusive and exclusive, against NumPy.
The checks are test_scan_batched.py's."""
import numpy as np
import pytest

import gpuprims

from test_scan_batched import check_batched, check_segmented, run

FLAT = next(v for v in gpuprims.variants("scan") if v.name == "segmented_lookback")


@pytest.mark.parametrize("outer,n", [(700, 1), (501, 2), (333, 3), (211, 5), (40, 127), (33, 129), (3, 2047),
                                     (2, 2049), (4, 1023), (3, 1025), (5, 4099), (1, 70001)])
def test_rows(backend, outer, n):
    check_batched(FLAT, "C", outer, n, 1, "sum", "float32", "float32", True, seed=n)
    check_batched(FLAT, "C", outer, n, 1, "sum", "int32", "int64", False, seed=n + 1)
    check_batched(FLAT, "C", outer, n, 1, "max", "float64", "float64", False, seed=n + 2)


def test_rows_over_many_tiles(backend):
    """Rows of 3 * 2^15 + 5 floats: each starts mid-tile and spans 48 tiles
    (level-1 totals of 32 tiles in every row's prefix)."""
    check_batched(FLAT, "C", 3, 3 * 2 ** 15 + 5, 1, "sum", "float32", "float32", True, seed=21)
    check_batched(FLAT, "C", 2, 3 * 2 ** 15 + 5, 1, "min", "int32", "int32", False, seed=22)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_unaligned_input(backend, dtype):
    """Element 0 of the rows one element into the buffer: no 16-byte vectors."""
    rng = np.random.default_rng(23)
    n, outer = 301, 17
    buf = rng.standard_normal(outer * n + 1).astype(dtype) if dtype == "float32" else \
        rng.integers(-1000, 1000, outer * n + 1).astype(dtype)
    got = run(FLAT, buf, 1, outer * n, "sum", dtype, dtype, True, (outer, n, 1, n, 1, 1, 0))
    want = np.cumsum(buf[1:].reshape(outer, n), axis=1, dtype=dtype).ravel()
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4 * np.sqrt(n))
    else:
        np.testing.assert_array_equal(got, want)


SEGMENTS = {
    "empties at tile edges": [2048, 0, 0, 0, 1, 2047, 0, 2048, 0, 1023, 1025, 0],
    "empties at 1024-element edges": [1024, 0, 0, 1023, 0, 1, 1024, 0, 0, 511, 513, 0, 0],
    "short ones over many tiles": list(np.random.default_rng(24).integers(0, 9, 20000)),
    "one element each": [1] * 5000,
    "long then short": [70001] + list(np.random.default_rng(25).integers(0, 70, 300)),
}


# Segments of a mean of 8192 elements or more (float32 tiles of 1024,
# float64 and int32 -> int64 of 512) take scan_long: a look-back tree a
# segment on one grid of tiles, a tile where segments meet scanned once a
# part.  The cases put offsets on tile edges, runs of empty segments and
# short segments between long ones inside one tile, and segments over more
# than 32 tiles (level-1 totals).
LONG = {
    "tile edges and empties": [1024 * 20, 0, 0, 1024 * 5, 1, 1023, 0, 100000, 7, 1024 * 3 - 7, 0, 1024 * 12],
    "short between long": [60000, 1, 2, 3, 0, 5, 60000, 1, 70000, 0],
    "over 32 tiles": [1024 * 33 + 5, 1024 * 40 - 5, 3],
    "one segment": [1024 * 8 + 1],
}


@pytest.mark.parametrize("case", list(SEGMENTS) + list(LONG))
def test_segments(backend, case):
    lengths = SEGMENTS[case] if case in SEGMENTS else LONG[case]
    check_segmented(FLAT, lengths, "sum", "float32", "float32", True, seed=26)
    check_segmented(FLAT, lengths, "sum", "int32", "int64", False, seed=27)
    check_segmented(FLAT, lengths, "max", "float64", "float64", True, seed=28)


def test_long_segments_unaligned(backend):
    """The call's data starting one segment in (not 16-byte aligned): the
    copies element by element, the output around it untouched."""
    lengths = [3] + LONG["tile edges and empties"] + [5]
    check_segmented(FLAT, lengths, "sum", "float32", "float32", True, seed=35, window=(1, len(lengths) - 1))
    check_segmented(FLAT, lengths, "min", "int64", "int64", False, seed=36, window=(1, len(lengths) - 1))


def test_long_segments_short_of_the_data(backend):
    """Offsets that end before the data (gpuprims.h asks a scan's caller for
    offsets from 0 to n; the Python calls check it): the long path returns,
    the segments right, whatever the elements past the last offset hold."""
    rng = np.random.default_rng(37)
    buf = rng.standard_normal(40000).astype(np.float32)
    offs = np.array([0, 20000, 30000], dtype=np.int64)
    d_offs = gpuprims.to_device(offs)
    got = run(FLAT, buf, 0, buf.size, "sum", "float32", "float32", True, (2, buf.size, 1, 0, 1, 0, d_offs.ptr))
    for a, b in zip(offs[:-1], offs[1:]):
        np.testing.assert_allclose(got[a:b], np.cumsum(buf[a:b], dtype=np.float64), rtol=1e-4, atol=1e-3)


def test_segments_deterministic(backend):
    """The same bits every run for ragged segments over many tiles."""
    rng = np.random.default_rng(29)
    lengths = list(rng.integers(0, 5000, 40))
    offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    buf = rng.standard_normal(int(offs[-1])).astype(np.float32)
    d_offs = gpuprims.to_device(offs)
    layout = (len(lengths), buf.size, 1, 0, 1, 0, d_offs.ptr)
    runs = [run(FLAT, buf, 0, buf.size, "sum", "float32", "float32", True, layout) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))


# ------------------------------------------------------ at the GPU's sizes
# Thousands of tiles in flight, a problem starting in a tile every few
# tiles or within every tile: the flat look-back publishes every tile's
# flagged total as the tile lands, so no warp waiting for a prefix holds
# back a total another warp waits for.  Checked vectorised against float64:
# the suite's float32 bound (4 (ceil(log2 len) + 1) eps sum|x| + eps |s|,
# the running sum of |x| and the longest problem's depth) plus the float64
# reference's own error where it subtracts a segment's start (4 x 2^-52 of
# the whole array's sum of |x|).
def check_scanned(got, x, starts):
    x64 = x.astype(np.float64)
    seg = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    c, m = np.cumsum(x64), np.cumsum(np.abs(x64))
    before = np.concatenate([[0.0], c])[starts[:-1]][seg]
    before_m = np.concatenate([[0.0], m])[starts[:-1]][seg]
    want, run_abs = c - before, m - before_m
    depth = np.ceil(np.log2(max(int(np.diff(starts).max()), 2))) + 1
    eps = 2.0 ** -24
    bound = 4 * depth * eps * run_abs + eps * np.abs(want) + 4 * 2.0 ** -52 * m[-1]
    bad = np.abs(got.astype(np.float64) - want) > bound
    assert not bad.any(), (np.flatnonzero(bad)[:5], got[bad][:5], want[bad][:5])


@pytest.mark.parametrize("variant", ["auto", "segmented_lookback"])
@pytest.mark.parametrize("shape", [(64, 2 ** 20), (6, 3 * 2 ** 20 + 7)], ids=str)
def test_long_rows_at_gpu_sizes(cuda, variant, shape):
    x = np.random.default_rng(31).standard_normal(shape).astype(np.float32)
    got = gpuprims.cumsum(gpuprims.to_device(x), axis=-1, variant=variant).get()
    check_scanned(got.ravel(), x.ravel(), np.arange(shape[0] + 1, dtype=np.int64) * shape[1])


@pytest.mark.parametrize("mean", [4, 64, 1024, 16384, 65536, 2 ** 20])
def test_segments_at_gpu_sizes(cuda, mean):
    rng = np.random.default_rng(mean)
    lengths = rng.integers(0, 2 * mean + 1, 2 ** 24 // mean)
    offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = rng.standard_normal(int(offs[-1])).astype(np.float32)
    got = gpuprims.cumsum(gpuprims.to_device(x), segments=offs).get()
    check_scanned(got, x, offs)


@pytest.mark.parametrize("mean", [2 ** 14, 2 ** 20])
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_long_segments_at_gpu_sizes_wide(cuda, dtype, mean):
    """8-byte results of long segments (scan_long's 512-element tiles; at a
    mean of 2^20 segments of over 1024 tiles, the look-back's level 2):
    int32 summed into int64 exactly as NumPy, float64 within the suite's
    bound at float64's eps, against each segment's prefix sums in extended
    precision (numpy.longdouble)."""
    rng = np.random.default_rng(mean + 1)
    lengths = rng.integers(0, 2 * mean + 1, 2 ** 24 // mean)
    offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offs[-1])
    x = rng.integers(-1000, 1000, n).astype(np.int32) if dtype == "int32" else rng.standard_normal(n)
    keep = x.copy()
    got = gpuprims.cumsum(gpuprims.to_device(x), segments=offs).get()
    np.testing.assert_array_equal(x, keep)
    if dtype == "int32":
        assert got.dtype == np.int64
        want = np.concatenate([np.cumsum(x[a:b], dtype=np.int64) for a, b in zip(offs[:-1], offs[1:])])
        np.testing.assert_array_equal(got, want)
    else:  # each segment's prefix sums in extended precision, and of |x|
        parts = [(np.cumsum(x[a:b], dtype=np.longdouble), np.cumsum(np.abs(x[a:b])))
                 for a, b in zip(offs[:-1], offs[1:])]
        want = np.concatenate([p[0] for p in parts])
        run_abs = np.concatenate([p[1] for p in parts])
        eps = 2.0 ** -53
        depth = np.ceil(np.log2(max(int(lengths.max()), 2))) + 1
        bound = 4 * depth * eps * run_abs + eps * np.abs(want.astype(np.float64))
        assert not (np.abs(got - want) > bound).any()
