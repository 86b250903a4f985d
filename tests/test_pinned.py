"""Page-locked host arrays (gpuprims.empty_pinned) and the host pipeline's
copies in place: a pinned input is copied to the device from where it lies,
a pinned output written where it lies, chunk by chunk, with no pack into the
staging ring.  The chunking is the same either way, so the results must have
the same bits as the staged path's (pipeline_config(direct=False)), besides
matching NumPy.  On the emulator the backend's own host blocks count as
page-locked, so every path here runs in CI; the same tests run on the GPU."""
import resource

import numpy as np
import pytest

import gpuprims
from gpuprims import _core
from gpuprims._numerics import exact_sum, scan_reference, scan_tolerance, sum_tolerance

CHUNK = 4096  # bytes per chunk, through the test hook


@pytest.fixture
def small_chunks(backend):
    before = _core.pipeline_config()
    _core.pipeline_config(threshold=0, chunk_bytes=CHUNK)
    yield backend
    _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"], direct=True)


def pinned_copy(x, order="C"):
    p = gpuprims.empty_pinned(x.shape, x.dtype, order=order)
    p[...] = x
    return p


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed + 7919 * int(np.prod(shape)))
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 100, size=shape).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


def counts():
    s = _core.pipeline_stats()
    return s["direct_in"], s["direct_out"]


def staged(fn):
    """fn() with copies in place switched off: the ring's path."""
    _core.pipeline_config(direct=False)
    try:
        return fn()
    finally:
        _core.pipeline_config(direct=True)


@pytest.mark.parametrize("shape,dtype,order", [((3, 5), "float32", "C"), (7, "int16", "C"),
                                               ((4, 6, 2), "complex128", "F"), ((0, 3), "float64", "C")])
def test_empty_pinned(backend, shape, dtype, order):
    a = gpuprims.empty_pinned(shape, dtype, order=order)
    want = np.empty(shape, dtype, order=order)
    assert type(a) is np.ndarray and a.shape == want.shape and a.dtype == want.dtype
    assert a.flags.writeable and a.flags.c_contiguous == want.flags.c_contiguous
    assert a.flags.f_contiguous == want.flags.f_contiguous
    a[...] = 3
    assert np.all(a == 3)
    assert gpuprims.is_pinned(a) == (a.size > 0)  # an empty array has no memory to lock


def test_is_pinned_views_and_pageable(backend):
    a = gpuprims.empty_pinned((64, 32), np.float32)
    assert gpuprims.is_pinned(a) and gpuprims.is_pinned(a[::-3, 5:]) and gpuprims.is_pinned(a.T)
    assert not gpuprims.is_pinned(np.ones((64, 32), np.float32))
    assert not gpuprims.is_pinned(a.copy())


def test_empty_pinned_errors(backend):
    with pytest.raises(ValueError, match="negative"):
        gpuprims.empty_pinned((3, -1))
    with pytest.raises(ValueError, match="order"):
        gpuprims.empty_pinned(3, order="K")
    with pytest.raises(TypeError):
        gpuprims.empty_pinned(3, dtype="not a dtype")
    for dtype in (object, [("a", "i4"), ("b", "O")]):
        with pytest.raises(TypeError, match="Python objects"):
            gpuprims.empty_pinned(3, dtype=dtype)


def test_pinned_memory_given_back(backend):
    """Each array's page-locked block is freed with the array: 64 rounds of
    8 MiB written and dropped leave the peak resident size well below their
    512 MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for k in range(64):
        a = gpuprims.empty_pinned(1 << 21, np.float32)
        a[...] = k
        del a
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 128 << 10


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_reduce_from_pinned(small_chunks, dtype):
    c = CHUNK // np.dtype(dtype).itemsize
    for n in [1, c - 1, c, 5 * c + 7]:
        x = pinned_copy(rand(n, dtype))
        before = x.copy()
        d_in, _ = counts()
        chunks = _core.pipeline_stats()["chunks"]
        got = gpuprims.sum(x)
        assert counts()[0] - d_in == _core.pipeline_stats()["chunks"] - chunks >= -(-n // c)  # every chunk in place
        assert got.tobytes() == staged(lambda: gpuprims.sum(x)).tobytes()
        acc = np.float64 if dtype == "float64" else np.float32 if dtype == "float32" else np.int64
        if np.dtype(dtype).kind == "f":
            ref = exact_sum(x)
            assert abs(float(got) - ref) <= sum_tolerance(x, acc, ref)
        else:
            assert got == np.sum(x, dtype=np.uint64 if dtype == "uint8" else np.int64)
        assert gpuprims.max(x) == x.max()
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("pin_in,pin_out", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype,inclusive", [("float32", True), ("float64", False), ("int32", True)])
def test_scan_pinned(small_chunks, pin_in, pin_out, dtype, inclusive):
    acc = np.dtype(np.int64 if dtype == "int32" else dtype)
    for n in [1, 1000, 1023, 1024, 5 * 1024 + 7]:
        x = rand(n, dtype, seed=2)
        if pin_in:
            x = pinned_copy(x)
        before = x.copy()
        out = gpuprims.empty_pinned(n, acc) if pin_out else np.empty(n, acc)
        d_in, d_out = counts()
        got = gpuprims.scan(x, inclusive=inclusive, out=out)
        assert got is out
        now = counts()
        assert (now[0] > d_in) == pin_in and (now[1] > d_out) == pin_out
        ref_bits = staged(lambda: gpuprims.scan(x, inclusive=inclusive)).tobytes()
        assert got.tobytes() == ref_bits
        if acc.kind == "f":
            ref, bound = scan_reference(np.asarray(before), inclusive, acc)
            assert np.all(np.abs(got - ref) <= scan_tolerance(n, acc, ref, bound))
        else:
            inc = np.cumsum(before, dtype=acc)
            np.testing.assert_array_equal(got, inc if inclusive else np.concatenate([[0], inc[:-1]]))
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("shape", [(1, 5000), (37, 1100), (1023, 3), (64, 64)])
@pytest.mark.parametrize("dtype", ["float32", "int8", "complex128"])
def test_transpose_pinned(small_chunks, shape, dtype):
    a = rand(shape, "float64", seed=3).astype(dtype)
    x = pinned_copy(a)
    out = gpuprims.empty_pinned(shape[::-1], dtype)
    d_in, d_out = counts()
    assert gpuprims.transpose(x, out=out) is out
    assert counts()[0] > d_in and counts()[1] > d_out
    np.testing.assert_array_equal(out, a.T)
    np.testing.assert_array_equal(gpuprims.transpose(x), a.T)  # a pageable result
    np.testing.assert_array_equal(x, a)


@pytest.mark.parametrize("variant", ["nd_naive", "tiled_wide", "per_element"])
def test_transpose_pinned_named_variants(small_chunks, variant):
    """A variant that reads strides (nd_*) reads a page-locked input's tiles
    in place; a matrix-only one (the 2-D journey) gets them copied in dense."""
    a = rand((37, 1100), "float32", seed=9)
    x = pinned_copy(a)
    view = x[::-1, 5:]
    for src in (x, view):
        want = np.ascontiguousarray(src.T)
        np.testing.assert_array_equal(gpuprims.transpose(src, variant=variant), want)
        out = gpuprims.empty_pinned(want.shape, want.dtype)
        np.testing.assert_array_equal(gpuprims.transpose(src, variant=variant, out=out), want)


@pytest.mark.parametrize("shape,dtype", [((5000, 3), "int8"), ((3001, 2), "float16"), ((1023, 3), "float32"),
                                         ((4096, 5), "float32"), ((700, 3), "float64"), ((333, 7), "complex64"),
                                         ((1023, 3), "complex128")])
def test_transpose_pinned_out_stored_by_kernel(small_chunks, shape, dtype):
    """A page-locked input, a tile shorter than the output's rows: blocks
    of input rows come in as one run and a kernel stores each tile's pitched
    output rows into a mapped output (stored_out), or the host threads
    scatter them into a pageable one.  The shapes give every element size
    and the kernel's every access width (runs of an odd number of bytes:
    1-byte accesses; pitches of 8 modulo 16: 8-byte)."""
    a = rand(shape, "float64", seed=11).astype(dtype)
    for x in (pinned_copy(a), pinned_copy(np.pad(a, ((0, 0), (1, 2))))[:, 1:-2]):  # dense; rows with gaps
        want = np.ascontiguousarray(x.T)
        out = gpuprims.empty_pinned(want.shape, dtype)
        out[...] = 0
        stored = _core.pipeline_stats()["stored_out"]
        assert gpuprims.transpose(x, out=out) is out
        assert _core.pipeline_stats()["stored_out"] > stored
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(x, a)
        assert staged(lambda: gpuprims.transpose(x, out=gpuprims.empty_pinned(want.shape, dtype))).tobytes() == \
            out.tobytes()
        # a pageable result: the same tiles, scattered by the host threads
        np.testing.assert_array_equal(gpuprims.transpose(x), want)


def test_transpose_pinned_rows_with_gaps(small_chunks):
    """A column range of a pinned array: its tiles are rows with gaps
    between them, copied as pitched rows."""
    a = pinned_copy(rand((300, 257), "float32", seed=4))
    view = a[:, 3:200]
    d_in = counts()[0]
    np.testing.assert_array_equal(gpuprims.transpose(view), view.T)
    assert counts()[0] > d_in
    np.testing.assert_array_equal(gpuprims.transpose(a[::-1, ::2]), a[::-1, ::2].T)  # strided: packed


def test_strided_pinned_input_is_packed(small_chunks):
    x = pinned_copy(rand(9000, "float32", seed=5))
    view = x[::-2]
    d_in = counts()[0]
    got = gpuprims.cumsum(view)
    assert counts()[0] == d_in  # a strided run is packed, not copied in place
    ref, bound = scan_reference(np.ascontiguousarray(view), True, np.float32)
    assert np.all(np.abs(got - ref) <= scan_tolerance(view.size, np.float32, ref, bound))


def test_direct_switch(small_chunks):
    x = pinned_copy(rand(9000, "float32", seed=6))
    _core.pipeline_config(direct=False)
    d = counts()
    gpuprims.sum(x)
    assert counts() == d
    assert _core.pipeline_config()["direct"] is False
    _core.pipeline_config(direct=True)
    gpuprims.sum(x)
    assert counts()[0] > d[0]


def test_to_device_and_get_into_pinned(small_chunks):
    for n in [1, 1023, 1024, 1025, 9999]:
        x = pinned_copy(rand(n, "float32", seed=7))
        d_in, d_out = counts()
        d = gpuprims.to_device(x)
        out = gpuprims.empty_pinned(n, np.float32)
        assert d.get(out=out) is out
        np.testing.assert_array_equal(out, x)
        if n * 4 >= CHUNK:  # below the threshold a copy is the single shot (in place anyway)
            assert counts() == (d_in + 1, d_out + 1)
        np.testing.assert_array_equal(d.get(out=np.empty(n, np.float32)), x)


def test_get_out_errors(backend):
    d = gpuprims.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(ValueError, match="shape"):
        d.get(out=np.empty((4, 3), np.float32))
    with pytest.raises(ValueError, match="dtype"):
        d.get(out=np.empty((3, 4), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        d.get(out=np.empty((3, 4), np.float32, order="F"))
    ro = np.empty((3, 4), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        d.get(out=ro)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        d.get(out=[0] * 12)
    np.testing.assert_array_equal(d.get(out=np.empty((3, 4), np.float32)), np.arange(12).reshape(3, 4))
