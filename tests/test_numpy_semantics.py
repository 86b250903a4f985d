"""reduce / sum / min / max / scan / cumsum as NumPy's: axis, keepdims,
dtype, out, segments, every numeric dtype, any layout.  Everything is
compared with NumPy (integers exactly, floats within the bound of
recursive summation: a sum of m terms accumulated in a dtype of epsilon eps
is within m * eps * sum|x| of the exact sum, Higham, "Accuracy and
Stability of Numerical Algorithms", 2nd ed., section 4.2; a float16 result
adds its own final rounding), on the active backend: the emulator in CI,
the GPU where there is one."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import gpuprims
from gpuprims._family import random_input

UFUNC = {"sum": np.add, "min": np.minimum, "max": np.maximum}
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]


def data(shape, dtype, seed=0):
    """Random data of any dtype, never all zeros: unsigned values up to
    2^62 for uint64 (so that sums wrap as NumPy's do)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if not dtype.isnative:
        return data(shape, dtype.newbyteorder("="), seed).astype(dtype)
    if dtype == np.uint64:
        return rng.integers(1, 1 << 62, size=shape, dtype=np.uint64)
    return random_input(shape, dtype, seed)


def acc_eps(dtype):
    d = np.dtype(dtype)
    if d.kind == "c":
        d = np.dtype(f"f{d.itemsize // 2}")
    return float(np.finfo(np.float32 if d == np.float16 else d).eps)


def numpy_reduce(op, x, axis=None, keepdims=False, dtype=None):
    if op == "sum":
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)
    return getattr(np, op)(x, axis=axis, keepdims=keepdims)


def assert_reduced(got, x, op, axis=None, keepdims=False, dtype=None):
    want = numpy_reduce(op, x, axis, keepdims, dtype)
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, (got_a.dtype, want_a.dtype)
    assert got_a.shape == want_a.shape, (got_a.shape, want_a.shape)
    if want_a.dtype.kind not in "fc" or op != "sum":
        assert np.array_equal(got_a, want_a, equal_nan=True)
        return
    n = max(x.size // max(want_a.size, 1), 1)
    wide = np.complex128 if want_a.dtype.kind == "c" else np.float64
    mag = np.sum(np.abs(x.astype(wide)), axis=axis, keepdims=keepdims)
    tol = n * acc_eps(want_a.dtype) * np.abs(mag) + (
        np.abs(want_a.astype(np.float64 if want_a.dtype.kind == "f" else np.complex128)) * 2.0 ** -10
        if want_a.dtype == np.float16 else 0)
    exact = np.sum(x.astype(wide), axis=axis, keepdims=keepdims)
    assert np.all(np.abs(got_a.astype(exact.dtype) - exact) <= tol + 1e-300)


def numpy_scan(op, x, axis=None, dtype=None):
    if op == "sum":
        return np.cumsum(x, axis=axis, dtype=dtype)
    a = x.ravel() if axis is None else x
    return UFUNC[op].accumulate(a, axis=0 if axis is None else axis)


def assert_scanned(got, x, op, axis=None, dtype=None):
    want = numpy_scan(op, x, axis, dtype)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind not in "fc" or op != "sum":
        assert np.array_equal(got, want, equal_nan=True)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    exact = np.cumsum(x.astype(wide), axis=axis)
    mag = np.cumsum(np.abs(x.astype(wide)), axis=axis)
    n = x.size if axis is None else x.shape[axis]
    tol = n * acc_eps(want.dtype) * mag + (np.abs(exact) * 2.0 ** -10 if want.dtype == np.float16 else 0)
    assert np.all(np.abs(got.astype(wide) - exact) <= tol + 1e-300)


# -- dtypes ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL + [">f4", ">i8", "<u2"])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_every_dtype_reduces_and_scans_like_numpy(dtype, op):
    if op != "sum" and np.dtype(dtype).kind == "c":
        with pytest.raises(TypeError, match="complex"):
            gpuprims.reduce(data(5, dtype), op)
        return
    for n in (1, 33, 1000):
        x = data(n, dtype, seed=n)
        before = x.copy()
        assert_reduced(gpuprims.reduce(x, op), x, op)
        assert_scanned(gpuprims.scan(x, op), x, op)
        assert np.array_equal(x, before)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float32", "float16", "complex64"])
def test_dtype_argument_as_numpy(dtype):
    x = data((17, 5), dtype)
    for to in ("int64", "float64", "int16", "uint32", "complex128"):
        if np.dtype(dtype).kind == "c" and np.dtype(to).kind != "c":
            with pytest.raises(TypeError, match="imaginary"):
                gpuprims.sum(x, dtype=to)
            continue
        assert_reduced(gpuprims.sum(x, dtype=to), x, "sum", dtype=to)
        assert_reduced(gpuprims.sum(x, axis=0, dtype=to), x, "sum", axis=0, dtype=to)
        assert_scanned(gpuprims.cumsum(x, dtype=to), x, "sum", dtype=to)


def test_sum_of_bool_counts_and_uint64_wraps():
    b = data(1001, "bool")
    assert gpuprims.sum(b) == np.sum(b) and gpuprims.sum(b).dtype == np.int64
    u = np.array([2**63, 2**63 + 5, 7], dtype=np.uint64)
    assert gpuprims.sum(u) == np.sum(u) == 12
    assert gpuprims.min(u) == 7 and gpuprims.max(u) == 2**63 + 5
    assert np.array_equal(gpuprims.cumsum(u), np.cumsum(u))


# -- axis, keepdims -----------------------------------------------------------

SHAPES = [(1,), (7, 1), (1, 7), (33, 65, 17), (0, 5), (5, 0), (2**12 + 3, 2), (2, 2**12 + 3)]


def layouts(x):
    """x in C order, Fortran order, sliced with steps, reversed."""
    yield "C", x
    yield "F", np.asfortranarray(x)
    big = np.repeat(x, 2, axis=0)
    yield "step", big[::2]
    yield "reversed", x[::-1]


def axes_of(ndim):
    yield None
    for a in range(ndim):
        yield a
        yield a - ndim
    if ndim >= 2:
        yield (0, ndim - 1)
        yield tuple(range(ndim))
    if ndim >= 3:
        yield (0, 2)
        yield (-1, 1)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_axis_and_keepdims(shape, op):
    x0 = data(shape, "float32")
    for name, x in layouts(x0):
        before = x.copy()
        for axis, keepdims in itertools.product(axes_of(x.ndim), (False, True)):
            try:
                want = numpy_reduce(op, x, axis, keepdims)
            except ValueError:
                with pytest.raises(ValueError, match="zero-size array"):
                    gpuprims.reduce(x, op, axis=axis, keepdims=keepdims)
                continue
            got = gpuprims.reduce(x, op, axis=axis, keepdims=keepdims)
            assert_reduced(got, x, op, axis, keepdims)
            assert type(got) is type(want) or isinstance(got, np.ndarray) == isinstance(want, np.ndarray), \
                (name, axis, keepdims)
        assert np.array_equal(x, before)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_scan_along_every_axis(shape, op, dtype):
    x0 = data(shape, dtype)
    for name, x in layouts(x0):
        before = x.copy()
        for axis in [None] + [a for a in range(x.ndim)] + [-1]:
            assert_scanned(gpuprims.scan(x, op, axis=axis), x, op, axis)
            if op == "sum":
                assert_scanned(gpuprims.cumsum(x, axis=axis), x, "sum", axis)
        assert np.array_equal(x, before)


def test_exclusive_scan_along_an_axis():
    x = data((9, 13), "int64")
    got = gpuprims.scan(x, "sum", axis=1, inclusive=False)
    want = np.concatenate([np.zeros((9, 1), np.int64), np.cumsum(x, axis=1)[:, :-1]], axis=1)
    assert np.array_equal(got, want)


def test_complex_along_axes():
    x = data((6, 7, 3), "complex64")
    for axis in (None, 0, 1, 2, (0, 2)):
        assert_reduced(gpuprims.sum(x, axis=axis), x, "sum", axis)
    for axis in (None, 0, 1, 2):
        assert_scanned(gpuprims.cumsum(x, axis=axis), x, "sum", axis)


def test_device_input_gives_device_output():
    x = data((40, 3), "float32")
    d = gpuprims.to_device(x)
    got = gpuprims.sum(d, axis=0)
    assert isinstance(got, gpuprims.DeviceArray)
    assert_reduced(got.get(), x, "sum", 0)
    c = gpuprims.cumsum(d, axis=1)
    assert isinstance(c, gpuprims.DeviceArray)
    assert_scanned(c.get(), x, "sum", 1)
    assert np.array_equal(d.get(), x)


def test_bad_axes():
    x = data((3, 4), "float32")
    with pytest.raises(ValueError):
        gpuprims.sum(x, axis=2)
    with pytest.raises(ValueError):
        gpuprims.sum(x, axis=-3)
    with pytest.raises(ValueError, match="repeated axis"):
        gpuprims.sum(x, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be"):
        gpuprims.sum(x, axis=1.0)
    with pytest.raises(TypeError, match="tuple"):
        gpuprims.cumsum(x, axis=(0, 1))
    with pytest.raises(ValueError):
        gpuprims.cumsum(x, axis=2)


# -- out= -------------------------------------------------------------------

def test_out_numpy_is_written_and_returned():
    x = data((20, 30), "float32")
    out = np.full(30, np.nan, np.float32)
    got = gpuprims.sum(x, axis=0, out=out)
    assert got is out
    assert_reduced(out, x, "sum", 0)
    strided = np.full((30, 2), np.nan, np.float32)[:, 0]
    assert gpuprims.max(x, axis=0, out=strided) is strided
    assert np.array_equal(strided, x.max(axis=0))
    c = np.empty_like(x)
    assert gpuprims.cumsum(x, axis=1, out=c) is c
    assert_scanned(c, x, "sum", 1)
    z = np.empty((), np.float32)
    assert gpuprims.min(x, out=z) is z and z == x.min()
    k = np.empty((1, 30), np.float32)
    assert gpuprims.sum(x, axis=0, keepdims=True, out=k) is k
    cx = data((8, 3), "complex128")
    co = np.empty(3, np.complex128)
    assert gpuprims.sum(cx, axis=0, out=co) is co
    assert_reduced(co, cx, "sum", 0)


def test_out_device_is_written_and_returned():
    x = data((20, 30), "int32")
    d = gpuprims.to_device(x)
    out = gpuprims.to_device(np.zeros(20, np.int64))
    assert gpuprims.sum(d, axis=1, out=out) is out
    assert np.array_equal(out.get(), x.sum(axis=1))
    c = gpuprims.to_device(np.zeros((20, 30), np.int64))
    assert gpuprims.cumsum(d, axis=0, out=c) is c
    assert np.array_equal(c.get(), np.cumsum(x, axis=0))


def test_bad_out():
    x = data((4, 5), "float32")
    with pytest.raises(ValueError, match="shape"):
        gpuprims.sum(x, axis=0, out=np.empty(4, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        gpuprims.sum(x, axis=0, out=np.empty(5, np.float64))
    ro = np.empty(5, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gpuprims.sum(x, axis=0, out=ro)
    with pytest.raises(ValueError, match="overlaps"):
        gpuprims.cumsum(x, axis=1, out=x)
    with pytest.raises(TypeError, match="device array"):
        gpuprims.sum(gpuprims.to_device(x), axis=0, out=np.empty(5, np.float32))
    with pytest.raises(TypeError, match="NumPy array"):
        gpuprims.sum(x, axis=0, out=gpuprims.to_device(np.empty(5, np.float32)))
    with pytest.raises(TypeError):
        gpuprims.sum(x, axis=0, out=[0.0] * 5)


# -- segments -----------------------------------------------------------------

def random_offsets(rng, lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_segmented_reduce_and_scan(op, dtype):
    rng = np.random.default_rng(3)
    lengths = [1, 0, 31, 32, 33, 1025, 0, 7] + list(rng.integers(0, 70, size=40))
    off = random_offsets(rng, lengths)
    x = data(int(off[-1]), dtype)
    before = x.copy()
    got = gpuprims.reduce(x, op, segments=off)
    ident = {"sum": 0, "min": np.inf, "max": -np.inf} if x.dtype.kind == "f" else \
        {"sum": 0, "min": np.iinfo(x.dtype).max, "max": np.iinfo(x.dtype).min}
    want = [numpy_reduce(op, x[a:b]) if b > a else ident[op] for a, b in zip(off[:-1], off[1:])]
    want = np.array(want, dtype=np.asarray(numpy_reduce(op, x)).dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    for (a, b), g, w in zip(zip(off[:-1], off[1:]), got, want):
        if x.dtype.kind == "f" and op == "sum":
            assert abs(g - w) <= (b - a) * acc_eps(x.dtype) * np.abs(x[a:b]).astype(np.float64).sum()
        else:
            assert g == w
    s = gpuprims.scan(x, op, segments=off)
    for a, b in zip(off[:-1], off[1:]):
        assert_scanned(s[a:b], x[a:b], op)
    assert np.array_equal(x, before)
    if op == "sum" and np.all(np.diff(off) > 0):
        assert np.allclose(got, np.add.reduceat(x, off[:-1]))


def test_segments_of_each_row():
    x = data((6, 40), "float64")
    off = np.array([0, 3, 3, 20, 40])
    got = gpuprims.sum(x, axis=-1, segments=off)
    want = np.stack([np.array([x[r, a:b].sum() for a, b in zip(off[:-1], off[1:])]) for r in range(6)])
    assert got.shape == (6, 4) and np.allclose(got, want, rtol=1e-12, atol=1e-12)
    c = gpuprims.cumsum(x, axis=-1, segments=off)
    for a, b in zip(off[:-1], off[1:]):
        assert np.allclose(c[:, a:b], np.cumsum(x[:, a:b], axis=1), rtol=1e-12, atol=1e-12)


def test_segments_longest_bound():
    """The checked segments carry the longest one's length (gp_batch.longest:
    the core skips its deferral of long segments where none can be long),
    per row where the segments split each row; calls with many short
    segments (nothing deferred though n passes the deferral length) and
    with one long one among them give NumPy's values, input unchanged; a
    layout's bound must be >= 0 and only with offsets."""
    from gpuprims import _axes, _core
    plan = _axes.DtypePlan("sum", np.dtype("float32"), None, "sum")
    segs = _axes.segment_offsets([0, 3, 3, 10, 40], (6, 40), -1, plan, "sum")
    assert (segs.rows, segs.k, segs.longest) == (6, 4, 30) and segs.off[-1] == 240
    assert segs.layout(240, 1234) == (24, 240, 1, 0, 1, 0, 1234, 30)
    assert _axes.segment_offsets([0], (0,), None, plan, "sum").longest == 0
    rng = np.random.default_rng(5)
    for long in (0, 50_000):
        lengths = rng.integers(0, 9, 20_000)
        lengths[7_000] += long
        off = np.concatenate([[0], np.cumsum(lengths)])
        x = data(int(off[-1]), "float32", seed=3)
        before = x.copy()
        got = gpuprims.sum(x, segments=off)
        want = np.array([x[a:b].astype(np.float64).sum() for a, b in zip(off[:-1], off[1:])])
        bound = [8 * (b - a + 1) * np.finfo(np.float32).eps * np.abs(x[a:b]).astype(np.float64).sum()
                 for a, b in zip(off[:-1], off[1:])]
        assert np.all(np.abs(got - want) <= bound)
        c = gpuprims.cumsum(x, segments=off)
        for a, b in zip(off[6_990:7_010], off[6_991:7_011]):
            assert_scanned(c[a:b], x[a:b], "sum")
        assert np.array_equal(x, before)
    v = next(r for r in gpuprims.variants("reduce") if r.auto_batched)
    f, add = _core.dtypes().index("float32"), _core.ops().index("sum")
    x = gpuprims.to_device(data(16, "float32"))
    d = gpuprims.to_device(np.array([0, 8, 16], dtype=np.int64))
    y = gpuprims.DeviceArray((2,), np.float32)
    for lay in ((2, 16, 1, 0, 1, 0, d.ptr, -1), (2, 8, 1, 8, 1, 0, 0, 8)):
        with pytest.raises(ValueError, match="bad layout"):
            _core.call("reduce", v.index, x.ptr, y.ptr, (16, f, f, add, lay))
    _core.call("reduce", v.index, x.ptr, y.ptr, (16, f, f, add, (2, 16, 1, 0, 1, 0, d.ptr, 8)))
    assert np.allclose(y.get(), x.get().reshape(2, 8).sum(axis=1), rtol=1e-6)


def test_bad_segments():
    x = data(10, "float32")
    with pytest.raises(ValueError, match="non-decreasing"):
        gpuprims.sum(x, segments=[0, 5, 3, 10])
    with pytest.raises(ValueError, match="lie in"):
        gpuprims.sum(x, segments=[0, 11])
    with pytest.raises(ValueError, match="integers"):
        gpuprims.sum(x, segments=np.array([0.0, 10.0]))
    with pytest.raises(ValueError, match="1-D"):
        gpuprims.sum(x, segments=np.array([[0, 10]]))
    with pytest.raises(ValueError, match="cover"):
        gpuprims.cumsum(x, segments=[2, 10])
    with pytest.raises(ValueError, match="keepdims"):
        gpuprims.sum(x, segments=[0, 10], keepdims=True)
    with pytest.raises(ValueError, match="axis"):
        gpuprims.sum(data((3, 4), "float32"), axis=0, segments=[0, 3])


@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int8"])
def test_many_short_columns(op, dtype):
    """Thousands of columns of a few rows (a thread per column; four
    neighbouring columns a thread where the rows are 16-byte aligned), and the
    same through a view that starts one element in (unaligned rows)."""
    x = data((3, 4100), dtype, seed=11)
    for view in (x, x[:, 1:4099], x[::-1]):
        assert_reduced(gpuprims.reduce(view, op, axis=0), view, op, 0)
        assert_scanned(gpuprims.scan(view, op, axis=0), view, op, 0)


@pytest.mark.parametrize("kw", [{}, {"axis": ()}, {"keepdims": True}, {"axis": (), "keepdims": True},
                                {"axis": 0}, {"axis": -1, "keepdims": True}])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_a_0d_input_keeps_numpys_shape(op, kw):
    x = np.array(np.float32(2.75) + np.float32(np.random.default_rng(3).random()), dtype=np.float32)
    before = x.copy()
    want = getattr(np, op)(x, **kw)
    got = getattr(gpuprims, op)(x, **kw)
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.asarray(got)[()] == np.asarray(want)[()]
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": -1}, {"axis": None}])
def test_a_0d_input_scans_as_numpy_does(kw):
    x = np.array(np.float32(1.25) + np.float32(np.random.default_rng(5).random()), dtype=np.float32)
    want = np.cumsum(x, **kw)
    got = gpuprims.cumsum(x, **kw)
    assert got.shape == want.shape == (1,) and got.dtype == want.dtype and got[0] == want[0]
    with pytest.raises(np.exceptions.AxisError):
        gpuprims.cumsum(x, axis=1)
