"""Batched and segmented scans: every registry row flagged batched or
segmented, called through the core with a layout (gp_batch in
cuda/gpuprims.h), against NumPy.

Batched: the problems (o, i) of an (outer, n, inner) view given by element
strides (C, F, reversed, zero-size), the result in C order.  Segmented:
ragged segments of a contiguous input by int64 offsets, empty ones
included.  Random data (never zeros; NaN for min/max), inclusive and
exclusive, every (op, input, result) combination of the kernels, lengths
0, 1, 31, 32, 33, 1025 and a few multi-tile ones; the input is never
modified.  Runs on the emulator always and on the GPU where there is one.
"""
import numpy as np
import pytest

import gpuprims
from gpuprims import _core

from gpuprims._numerics import identity, scan_reference, scan_tolerance

from conftest import GPU_OK, pack_test_lengths, random_array

SCAN = gpuprims.variants("scan")
BATCHED = [v for v in SCAN if v.batched]
SEGMENTED = [v for v in SCAN if v.segmented]
DTYPES = list(_core.dtypes())
OPS = list(_core.ops())
ACCUMULATE = {"sum": np.add, "min": np.minimum, "max": np.maximum}
# (op, input, result): the combinations the kernels are built for (GP_COMBOS, cuda/common.cuh).
COMBOS = [("sum", "int32", "int64"), ("sum", "int32", "int32"), ("sum", "int64", "int64"),
          ("sum", "float32", "float32"), ("sum", "float32", "float64"), ("sum", "float64", "float64")] + \
         [(op, t, t) for op in ("min", "max") for t in ("int32", "int64", "float32", "float64")]
LENGTHS = [0, 1, 31, 32, 33, 1025]
POISON = {"i": -12345, "f": -777.25}


@pytest.fixture(params=["cuda", "emulator"])
def backend(request):
    if request.param == "cuda" and not GPU_OK:
        pytest.skip("needs a CUDA GPU; none visible here")
    before = gpuprims.backend()
    gpuprims.set_backend(request.param)
    yield request.param
    gpuprims.set_backend(before)


def names(variants):
    return [pytest.param(v, id=v.name) for v in variants]


def random_data(size, dtype, seed, op="sum"):
    x = random_array(size, dtype, seed)
    if op != "sum" and np.dtype(dtype).kind == "f" and size > 7:
        x[size // 3] = np.nan  # min/max propagate NaN as numpy does
    return x


def expected_rows(rows, op, inclusive, acc):
    """NumPy's scan of each row (problems x length) in the result dtype."""
    acc = np.dtype(acc)
    inc = ACCUMULATE[op].accumulate(rows.astype(acc), axis=1) if rows.size else rows.astype(acc)
    if inclusive or rows.shape[1] == 0:
        return inc
    first = np.full((rows.shape[0], 1), identity(op, acc), acc)
    return np.concatenate([first, inc[:, :-1]], axis=1)


def check_problem(got, x, op, inclusive, acc):
    """One problem's result against NumPy: exact for integers and min/max
    (NaN where NumPy has NaN), within the prefix bound for float sums."""
    acc = np.dtype(acc)
    if op != "sum" or acc.kind == "i":
        np.testing.assert_array_equal(got, expected_rows(x[None, :], op, inclusive, acc)[0])
        return
    ref, bound = scan_reference(x, inclusive, acc)
    tol = scan_tolerance(max(x.size, 1), acc, ref, bound)
    bad = np.nonzero(~(np.abs(got.astype(ref.dtype) - ref) <= tol))[0]
    assert bad.size == 0, (bad[:5], got[bad[:5]], ref[bad[:5]])


def run(variant, buf, first, total, op, in_t, acc, inclusive, layout, inside=False):
    """Call the core on a device copy of `buf` (1-D), element 0 of the
    layout at buf[first]; return the result (total elements) on the host
    and check that the input was not modified.  inside=True: a problem
    inside a longer array, its result at out[first:first + total] of a
    poisoned output as long as buf, whose other elements must keep the
    poison."""
    d = gpuprims.to_device(buf)
    acc = np.dtype(acc)
    at = first if inside else 0
    out = gpuprims.to_device(np.full(max(buf.size if inside else total, 1), POISON[acc.kind], acc))
    _core.call("scan", variant.index, d.ptr + first * buf.itemsize, out.ptr + at * acc.itemsize,
               (total, DTYPES.index(np.dtype(in_t).name), DTYPES.index(acc.name), OPS.index(op), inclusive,
                layout))
    np.testing.assert_array_equal(d.get(), buf)  # the input unmodified
    got = out.get()
    around = np.concatenate([got[:at], got[at + total:]])
    np.testing.assert_array_equal(around, np.full(around.size, POISON[acc.kind], acc))  # nothing written around it
    return got[at:at + total]


def view(kind, outer, n, inner, dtype, seed, op):
    """(buffer, element offset of [0, 0, 0], the (outer, n, inner) view) of
    a layout kind: "C", "F", or "reversed" (a C array read back to front
    along n and inner: negative strides)."""
    size = outer * n * inner
    buf = random_data(size, dtype, seed, op)
    if kind == "C":
        v = buf.reshape(outer, n, inner)
    elif kind == "F":
        v = buf.reshape(inner, n, outer).T
    else:
        v = buf.reshape(outer, n, inner)[:, ::-1, ::-1]
    first = (v.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // buf.itemsize if size else 0
    return buf, first, v


def check_batched(variant, kind, outer, n, inner, op, in_t, acc, inclusive, seed=0):
    buf, first, v = view(kind, outer, n, inner, in_t, seed, op)
    s = [st // buf.itemsize for st in v.strides] if v.size else [n * inner, inner, 1]
    got = run(variant, buf, first, v.size, op, in_t, acc, inclusive, (outer, n, inner, s[0], s[1], s[2], 0))
    rows = v.transpose(0, 2, 1).reshape(outer * inner, n)
    got_rows = got.reshape(outer, n, inner).transpose(0, 2, 1).reshape(outer * inner, n)
    for p in range(outer * inner):
        check_problem(got_rows[p], rows[p], op, inclusive, acc)


@pytest.mark.parametrize("variant", names(BATCHED))
@pytest.mark.parametrize("kind", ["C", "F", "reversed"])
@pytest.mark.parametrize("n", LENGTHS)
def test_batched_layouts_and_lengths(backend, variant, kind, n):
    for inclusive in (True, False):
        check_batched(variant, kind, 3, n, 2, "sum", "float32", "float32", inclusive, seed=n)


@pytest.mark.parametrize("variant", names(BATCHED))
@pytest.mark.parametrize("op,in_t,acc", COMBOS)
def test_batched_ops_and_dtypes(backend, variant, op, in_t, acc):
    check_batched(variant, "C", 2, 37, 3, op, in_t, acc, True, seed=1)
    check_batched(variant, "reversed", 3, 33, 1, op, in_t, acc, False, seed=2)


@pytest.mark.parametrize("variant", names(BATCHED))
@pytest.mark.parametrize("shape", [(0, 5, 3), (3, 0, 2), (3, 5, 0), (1, 1, 1)])
def test_batched_zero_size_and_single(backend, variant, shape):
    check_batched(variant, "C", *shape, "sum", "float32", "float32", True)
    check_batched(variant, "C", *shape, "max", "int32", "int32", False)


@pytest.mark.parametrize("variant", names(BATCHED))
@pytest.mark.parametrize("shape", [(2, 9000, 1), (1, 2100, 3), (40, 3, 70), (3, 300, 40)])
def test_batched_multi_tile(backend, variant, shape):
    """Problems over several tiles and tiles over several problems (rows,
    columns with several chunks, short and wide)."""
    if backend == "emulator" and variant.name in ("segmented_block", "segmented_warp", "batched_thread") \
            and shape[0] * shape[2] > 200:
        pytest.skip("emulator: a block or warp per problem over thousands of problems is slow there")
    check_batched(variant, "C", *shape, "sum", "float32", "float32", True, seed=3)
    check_batched(variant, "C", *shape, "sum", "int32", "int64", False, seed=4)


def offsets_of(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def check_segmented(variant, lengths, op, in_t, acc, inclusive, seed=0, window=None):
    """The segments of `lengths` end to end in random data, each against
    NumPy.  window=(a, b): segments a ... b-1 only, inside the data of them
    all: the call's input and output start at segment a's first element (a
    scan's offsets run from 0 to n: cuda/gpuprims.h), and the output before
    and after them must keep the poison."""
    offs = offsets_of(lengths)
    buf = random_data(int(offs[-1]), in_t, seed, op)
    a, b = window or (0, len(lengths))
    first = int(offs[a])
    offs = offs[a:b + 1] - first
    total = int(offs[-1])
    d_offs = gpuprims.to_device(offs)
    got = run(variant, buf, first, total, op, in_t, acc, inclusive, (b - a, total, 1, 0, 1, 0, d_offs.ptr),
              inside=window is not None)
    for s, e in zip(offs[:-1], offs[1:]):
        check_problem(got[s:e], buf[first + s:first + e], op, inclusive, acc)


SEGMENTS = {
    "edge lengths": [0, 1, 31, 32, 33, 1025, 0, 0, 2, 0],
    "random with empties": list(np.random.default_rng(5).integers(0, 9, 300) * (np.arange(300) % 7 != 3)),
    "one segment": [1025],
    "empty first and last": [0, 0, 40, 7, 0],
}


@pytest.mark.parametrize("variant", names(SEGMENTED))
@pytest.mark.parametrize("case", list(SEGMENTS))
def test_segmented_lengths(backend, variant, case):
    for inclusive in (True, False):
        check_segmented(variant, SEGMENTS[case], "sum", "float32", "float32", inclusive, seed=len(case))


@pytest.mark.parametrize("variant", names(SEGMENTED))
@pytest.mark.parametrize("op,in_t,acc", COMBOS)
def test_segmented_ops_and_dtypes(backend, variant, op, in_t, acc):
    check_segmented(variant, [3, 0, 40, 1, 33, 0, 17], op, in_t, acc, True, seed=6)
    check_segmented(variant, [5, 64, 0, 2], op, in_t, acc, False, seed=7)


@pytest.mark.parametrize("variant", names(SEGMENTED))
def test_segmented_multi_tile(backend, variant):
    """Segments across tile boundaries, and a long one over many tiles (the
    look-back's higher levels)."""
    rng = np.random.default_rng(8)
    lengths = list(rng.integers(0, 3000, 12)) + [140000] + list(rng.integers(0, 5, 50))
    check_segmented(variant, lengths, "sum", "float32", "float32", True, seed=8)
    check_segmented(variant, lengths[:13], "min", "float64", "float64", False, seed=9)


# Segments of a mean length (n / count) of 12 ... 8192, input and output
# 16-byte aligned and of one element type: segmented_adaptive scans packs
# of K neighbouring segments a warp (scan_packs; K: the power of two
# covering 1024 / mean, at most 32), cutting out the deferred ones (longer
# than 16x the mean and than 2048 elements), scanned apart in chunks of
# 8192.  Long segments first, last, at pack edges (31, 32, 33) and back to
# back (70, 71), of 2 to 9 chunks; a run of 40 empty segments (90 ... 129)
# and packs of empty segments only; segments over many trips of a warp (512
# float32 elements a trip): 5000 at 100, 2 x 8192 at 200 (deferred where
# the deferral length is below them).  n / count of all segments, and of
# the window (segments 3 ... 397, its first element aligned; 0 and 399 left
# out):
#   mean 0:    lengths 10 ... 50, no long ones; 26, 27: K = 32 (1024 / 26
#              = 39), a pack of empties only (96 ... 127);
#   mean 20:   238, 192: K = 8 (4.3, 5.3), deferral length 3808, 3072:
#              5000 and 16384 deferred too;
#   mean 100:  393, 322: K = 4 (2.6, 3.2), deferral length 6288, 5152:
#              5000 in its pack (10 trips), 16384 deferred (2 chunks);
#   mean 1000: 2203, 1856: K = 1, deferral length 35248, 29696: 5000 and
#              16384 (32 trips) in their packs, the long ones of 9 chunks.
def pack_lengths(mean, seed):
    lengths, long_at = pack_test_lengths(mean, seed, short=(10, 50))
    if mean:
        lengths[200] = 2 * 8192
    lengths[2] += -sum(lengths[:3]) % 4  # the window's first element 16-byte aligned
    # What the adaptive step reads (its mean, n / count) puts these in packs
    # and defers the long ones, in the whole and in the window.
    for a, b in ((0, 400), (3, 398)):
        m = sum(lengths[a:b]) / (b - a)
        assert 12 <= m <= 8192 and all(lengths[at] > max(16 * m, 2048) for at in long_at if a <= at < b)
    return lengths


@pytest.mark.parametrize("variant", names([v for v in SEGMENTED if v.auto_batched]))
@pytest.mark.parametrize("mean", [0, 20, 100, 1000])
def test_segments_packs(backend, variant, mean):
    lengths = pack_lengths(mean, 30 + mean)
    for j, (op, in_t, acc) in enumerate([("sum", "float32", "float32"), ("max", "int32", "int32"),
                                         ("sum", "float64", "float64"), ("min", "int64", "int64"),
                                         ("sum", "int32", "int64")]):  # the last widens: another route
        for inclusive in (True, False):
            check_segmented(variant, lengths, op, in_t, acc, inclusive, seed=40 + j)
            check_segmented(variant, lengths, op, in_t, acc, inclusive, seed=40 + j,
                            window=(3, len(lengths) - 2))  # inside a longer input


# Segments so short (a mean n / count of 2 to 11 for float32: 32 of them
# fill less than 3/4 of a warp's trip of 512) that segmented_adaptive scans
# wide packs of 32 x M segments a warp (scan_wide_packs; K = 2048 / mean
# rounded up to a power of two, at most 512), each lane marking the starts
# of M segments.  A wide pack that holds a deferred segment (longer than
# 2048 here) is taken as M packs of 32.  Float64 (a trip of 256) takes wide
# packs below a mean of 6, narrow ones above.
#   short 0 ... 10, 8 long ones (2049 ... 2053) first, last, at pack edges
#   of 256 (255, 256, 511, 512) and back to back (1500, 1501), and 600
#   empty (2000 ... 2599: the pack 2048 ... 2303 holds nothing): n / count
#   9 (the window 8), K = 256 (M = 8); float64: packs of 32;
#   short 0 ... 6, 4 long ones (0, 511, 512, 5999): 4 (the window 3),
#   K = 512 (M = 16);
#   short 0 ... 8, none long, 400 segments (n <= 2048: nothing can be
#   deferred): 3, K = 512, one pack of 400 segments.
def wide_lengths(short, count, long_at, seed):
    rng = np.random.default_rng(seed)
    lengths = [int(v) for v in rng.integers(0, short + 1, size=count)]
    for at in long_at:
        lengths[at] = 2049 + at % 5
    if count > 2600:
        lengths[2000:2600] = [0] * 600
    lengths[2] += -sum(lengths[:3]) % 4  # the window's first element 16-byte aligned
    for a, b in ((0, count), (3, count - 2)):
        mean = sum(lengths[a:b]) // (b - a)
        assert 2 <= mean and 4 * mean * 32 < 3 * 512
    return lengths


@pytest.mark.parametrize("variant", names([v for v in SEGMENTED if v.auto_batched]))
@pytest.mark.parametrize("short,count,long_at", [(10, 3000, (0, 255, 256, 511, 512, 1500, 1501, 2999)),
                                                 (6, 6000, (0, 511, 512, 5999)), (8, 400, ())],
                         ids=["M8", "M16", "no-deferral"])
def test_segments_wide_packs(backend, variant, short, count, long_at):
    lengths = wide_lengths(short, count, long_at, seed=count)
    for j, (op, in_t, acc) in enumerate([("sum", "float32", "float32"), ("max", "int32", "int32"),
                                         ("sum", "float64", "float64"), ("min", "int64", "int64")]):
        for inclusive in (True, False):
            check_segmented(variant, lengths, op, in_t, acc, inclusive, seed=60 + j)
            check_segmented(variant, lengths, op, in_t, acc, inclusive, seed=60 + j,
                            window=(3, len(lengths) - 2))


# The same segments on pointers that are not 16-byte aligned (a window that
# starts 1 ... 3 elements past an aligned one: input and output both off):
# the packs read 16-byte vectors, so segmented_adaptive takes the flat
# look-back there - the results must not change.
@pytest.mark.parametrize("variant", names([v for v in SEGMENTED if v.auto_batched]))
@pytest.mark.parametrize("shift", [1, 2, 3])
def test_segments_packs_unaligned(backend, variant, shift):
    lengths = pack_lengths(100, 130)
    lengths[2] += shift  # the window's first element `shift` past a multiple of 4
    for op, in_t, acc in [("sum", "float32", "float32"), ("min", "int64", "int64")]:
        if shift % (16 // np.dtype(in_t).itemsize) == 0:
            continue  # int64: 2 a vector, a shift of 2 is aligned
        check_segmented(variant, lengths, op, in_t, acc, True, seed=7, window=(3, len(lengths) - 2))


@pytest.mark.parametrize("variant", names([v for v in BATCHED if v.name in
                                           ("segmented_lookback", "batched_columns")]))
def test_long_axis_many_chunks(backend, variant):
    """An axis cut into more than 32^2 chunks: three levels of the
    look-back's tree."""
    check_batched(variant, "C", 1, 140000, 1, "sum", "float32", "float32", True, seed=10)
    check_batched(variant, "C", 1, 70000, 2, "sum", "int64", "int64", False, seed=11)
    if variant.name == "batched_columns":  # the general kernel (F: columns n apart): 32 columns of 64 rows a tile (8-byte), 1025 chunks
        check_batched(variant, "F", 1, 64 * 1024 + 7, 32, "sum", "int64", "int64", False, seed=12)


@pytest.mark.parametrize("variant", names([v for v in BATCHED if v.segmented]))
def test_deterministic(backend, variant):
    """The same bits every run (float sums over several tiles)."""
    buf, first, v = view("C", 3, 6000, 1, "float32", 12, "sum")
    layout = (3, 6000, 1, 6000, 1, 1, 0)
    runs = [run(variant, buf, first, buf.size, "sum", "float32", "float32", True, layout) for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), runs[0].view(np.uint32))


def test_registry_flags():
    """Exactly one row runs for an axis or segments, and it takes both."""
    auto = [v for v in SCAN if v.auto_batched]
    assert len(auto) == 1 and auto[0].batched and auto[0].segmented
    assert {"batched_thread", "segmented_warp", "segmented_block", "segmented_lookback",
            "batched_columns", "segmented_adaptive"} <= {v.name for v in BATCHED}


@pytest.mark.parametrize("variant", names(BATCHED))
@pytest.mark.parametrize("n", [1, 33, 5000])
def test_one_dimensional_call(backend, variant, n):
    """Without a layout the core gives a row one problem of n elements."""
    x = random_data(n, "float32", 13)
    d = gpuprims.to_device(x)
    out = gpuprims.to_device(np.full(n, np.nan, np.float32))
    _core.call("scan", variant.index, d.ptr, out.ptr,
               (n, DTYPES.index("float32"), DTYPES.index("float32"), OPS.index("sum"), True))
    check_problem(out.get(), x, "sum", True, "float32")
