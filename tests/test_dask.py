"""gpuprims.dask: sum / min / max / reduce, cumsum / scan and transpose of
dask arrays, on dask's synchronous and threaded schedulers (the emulator in
CI, the GPU where there is one), against NumPy: integers and min/max
exactly, float sums within _numerics.sum_tolerance of the correctly rounded
sum (math.fsum) of each output element, float scans within
_numerics.scan_tolerance of a wider-precision scan, transposes exactly.
Chunkings of 1, 2 and 7 chunks, uneven and empty chunks, 1-D to 3-D.
determinism="gpu_to_gpu" float sums: the bits of one
gpuprims.sum(whole_array, determinism="gpu_to_gpu") call and of
tests/rfa_reference.py (written from the definition), for every chunking,
split_every and scheduler.

The last tests need a GPU (CuPy chunks) or 2 GPUs and dask-cuda: a
LocalCUDACluster with 2 workers gives the single-GPU results."""
from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import gpuprims
from gpuprims._numerics import exact_sum, scan_reference, scan_tolerance, sum_tolerance

import rfa_reference as R
from conftest import GPU_OK

dask = pytest.importorskip("dask", reason="dask is not installed (pip install \"gpuprims[dask]\")")
da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpuprims.dask")

SCHEDULERS = ["sync", "threads"]
UFUNC = {"sum": np.add, "min": np.minimum, "max": np.maximum}

# (shape, chunks): 1, 2 and 7 chunks, uneven chunks, an empty chunk, 1-D to 3-D
CASES = [
    ((1000,), 1000),
    ((1000,), 500),
    ((1000,), ((100, 1, 333, 17, 250, 200, 99),)),
    ((1000,), ((400, 0, 600),)),
    ((37, 23), -1),
    ((37, 23), (20, 23)),
    ((37, 23), ((5, 9, 3, 20), (1, 22))),
    ((13, 8, 6), (5, 3, 4)),
]
IDS = ["1d-1", "1d-2", "1d-7uneven", "1d-empty", "2d-1", "2d-2", "2d-8uneven", "3d"]


def data(shape, dtype, seed=0):
    """Random, never zeros: signed integers in [-1000, 1000), unsigned in
    [1, 1000), bools, floats in [-1, 1)."""
    rng = np.random.default_rng(seed + 7919 * int(np.prod(shape)))
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(1, 1000, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(shape) * 2 - 1 + 1j * (rng.random(shape) * 2 - 1)).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


def frozen(a):
    """a made read-only, with a copy to check it against afterwards."""
    a.setflags(write=False)
    return a, a.copy()


def compute(lazy, scheduler):
    with dask.config.set(scheduler=scheduler):
        return lazy.compute()


def check_sum(got, a, axes, keepdims):
    """Each output element of a float sum within sum_tolerance of the
    correctly rounded sum of its elements; integers exactly."""
    want = np.sum(a, axis=axes, keepdims=keepdims)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        assert np.array_equal(got, want)
        return
    axes = tuple(range(a.ndim)) if axes is None else tuple(ax % a.ndim for ax in np.atleast_1d(axes))
    kept = [i for i in range(a.ndim) if i not in axes]
    rows = np.transpose(a, kept + list(axes)).reshape(int(np.prod([a.shape[i] for i in kept])), -1)
    flat = got.reshape(-1)
    for i, row in enumerate(rows):
        ref = exact_sum(row)
        assert abs(float(flat[i]) - ref) <= sum_tolerance(row, want.dtype if want.dtype != np.float16
                                                          else np.float32, ref) + float(np.spacing(
                                                              want.dtype.type(ref))), (i, flat[i], ref)


# ------------------------------------------------------------ import


def test_import_gpuprims_does_not_import_dask():
    code = "import sys, gpuprims; assert 'dask' not in sys.modules; import gpuprims.dask; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_attribute_access_imports_the_submodule():
    assert gpuprims.dask is gd


# ------------------------------------------------------------ reductions


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("shape,chunks", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_sum_every_axis_against_numpy(shape, chunks, dtype, scheduler):
    a, before = frozen(data(shape, dtype))
    x = da.from_array(a, chunks=chunks)
    ndim = len(shape)
    axes_list = [None, 0, -1] + ([(0, ndim - 1), (-1, -ndim)] if ndim > 1 else [(0,)])
    for axes in axes_list:
        for keepdims in (False, True):
            lazy = gd.sum(x, axis=axes, keepdims=keepdims)
            want = np.sum(a, axis=axes, keepdims=keepdims)
            assert lazy.shape == want.shape and lazy.dtype == want.dtype
            got = compute(lazy, scheduler)
            assert type(np.asarray(got)) is np.ndarray
            check_sum(got, a, axes, keepdims)
    assert np.array_equal(a, before)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("shape,chunks", CASES, ids=IDS)
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "uint64", "bool"])
def test_min_max_exactly_as_numpy(shape, chunks, op, dtype, scheduler):
    a, before = frozen(data(shape, dtype, seed=1))
    x = da.from_array(a, chunks=chunks)
    for axes in (None, -1, 0, tuple(range(len(shape)))):
        for keepdims in (False, True):
            want = getattr(np, op)(a, axis=axes, keepdims=keepdims)
            lazy = gd.reduce(x, op, axis=axes, keepdims=keepdims)
            assert lazy.dtype == want.dtype and lazy.shape == want.shape
            got = np.asarray(compute(lazy, scheduler))
            assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(a, before)


def test_min_max_propagate_a_nan_from_one_chunk():
    a = data((1000,), "float32", seed=3)
    a[617] = np.nan
    x = da.from_array(a, chunks=((100, 1, 333, 17, 250, 200, 99),))
    assert np.isnan(compute(gd.min(x), "sync")) and np.isnan(compute(gd.max(x), "threads"))


@pytest.mark.parametrize("dtype,sum_dtype", [
    ("int32", None), ("int8", None), ("uint8", None), ("bool", None), ("uint64", None),
    ("int32", "int8"), ("int64", "float64"), ("float32", "float64"), ("float16", None),
    ("complex64", None), ("complex128", None)])
def test_sum_result_dtypes_as_numpy_and_the_single_array_call(dtype, sum_dtype):
    a = data((37, 23), dtype, seed=2)
    x = da.from_array(a, chunks=((5, 9, 3, 20), (1, 22)))
    want = np.sum(a, axis=0, dtype=sum_dtype)
    single = gpuprims.sum(a, axis=0, dtype=sum_dtype)
    lazy = gd.sum(x, axis=0, dtype=sum_dtype)
    assert lazy.dtype == want.dtype == single.dtype
    got = compute(lazy, "threads")
    assert got.dtype == want.dtype
    if want.dtype.kind in "biu":
        assert np.array_equal(got, want) and np.array_equal(got, single)
    elif want.dtype.kind == "c":
        for part in ("real", "imag"):
            check_sum(getattr(got, part), getattr(a, part).astype(got.real.dtype), 0, False)
    elif want.dtype == np.float16:  # accumulated in float32 like the single call; one rounding to float16
        check_sum(got, a, 0, False)
    else:
        check_sum(got, a.astype(want.dtype), 0, False)


def test_full_reduction_of_many_chunks_with_a_deep_tree():
    a, before = frozen(data((4099,), "float32", seed=4))
    x = da.from_array(a, chunks=61)
    for split_every in (2, 3, None):
        got = compute(gd.sum(x, split_every=split_every), "threads")
        check_sum(got, a, None, False)
    assert np.array_equal(a, before)


@pytest.mark.parametrize("op", ["sum", "min"])
def test_run_to_run_bitwise_for_a_fixed_chunking(op):
    a = data((301, 77), "float32", seed=5)
    x = da.from_array(a, chunks=((100, 1, 150, 50), (30, 47)))
    runs = [compute(gd.reduce(x, op, axis=ax), s).tobytes()
            for s in SCHEDULERS for ax in (None,) for _ in range(3)]
    assert len(set(runs)) == 1
    scans = [compute(gd.scan(x, op, axis=0, method=m), s).tobytes()
             for s in SCHEDULERS for m in ("sequential",) for _ in range(2)]
    assert len(set(scans)) == 1
    sums = [compute(gd.sum(x, axis=1, determinism="not_guaranteed"), s).tobytes() for s in SCHEDULERS]
    assert len(set(sums)) == 1


# ------------------------------------------------------------ scans


def check_scan(got, a, op, axis, inclusive):
    """A float sum scan within scan_tolerance of a wider scan, along each
    line of the axis; everything else exactly as NumPy's accumulate."""
    flat = axis is None
    b = a.reshape(-1) if flat else np.moveaxis(a, axis, -1)
    g = np.asarray(got).reshape(-1) if flat else np.moveaxis(np.asarray(got), axis, -1)
    want_dtype = np.cumsum(a[:0] if a.ndim else a).dtype if op == "sum" else a.dtype
    assert np.asarray(got).dtype == want_dtype
    assert g.shape == b.shape
    for line in range(int(np.prod(b.shape[:-1]))):
        row, grow = b.reshape(-1, b.shape[-1])[line], g.reshape(-1, b.shape[-1])[line]
        if op == "sum" and want_dtype.kind == "f":
            ref, bound = scan_reference(row, inclusive, want_dtype)
            tol = scan_tolerance(row.size, want_dtype, ref, bound)
            assert np.all(np.abs(grow.astype(ref.dtype) - ref) <= tol), line
            continue
        inc = UFUNC[op].accumulate(row, dtype=want_dtype)
        if not inclusive:
            first = np.array([gd._identity(op, want_dtype)], dtype=want_dtype)
            inc = np.concatenate([first, inc[:-1]])
        assert np.array_equal(grow, inc), line


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("shape,chunks", CASES, ids=IDS)
@pytest.mark.parametrize("method", ["sequential", "blelloch"])
def test_cumsum_and_exclusive_scans_against_numpy(shape, chunks, method, scheduler):
    for dtype, op in (("float32", "sum"), ("int32", "sum"), ("float64", "min"), ("int32", "max")):
        a, before = frozen(data(shape, dtype, seed=6))
        x = da.from_array(a, chunks=chunks)
        for axis in [None, 0, -1] + ([1] if len(shape) > 2 else []):
            for inclusive in (True, False):
                lazy = gd.scan(x, op, axis=axis, inclusive=inclusive, method=method)
                want_shape = (a.size,) if axis is None else a.shape
                assert lazy.shape == want_shape
                if axis is not None:
                    assert lazy.chunks == x.chunks
                check_scan(compute(lazy, scheduler), a, op, axis, inclusive)
        assert np.array_equal(a, before)


@pytest.mark.parametrize("op,dtype", [("sum", "int32"), ("sum", "uint8"), ("min", "int16"), ("max", "float64")])
@pytest.mark.parametrize("inclusive", [True, False])
def test_numpy_chunks_scan_from_their_carries(op, dtype, inclusive):
    """A 1-D scan of NumPy chunks (method="sequential") scans each chunk on
    from the op of the chunks before it (the host pipeline's carry-in), so
    no output is combined with its carry afterwards: the graph holds the
    carried tasks, and the result is NumPy's, exactly for these ops."""
    a, before = frozen(data((2000,), dtype, seed=8))
    x = da.from_array(a, chunks=((700, 0, 1, 1200, 99),))
    lazy = gd.scan(x, op, inclusive=inclusive)
    assert any("carried" in str(k) for k in lazy.__dask_graph__().keys())
    check_scan(compute(lazy, "sync"), a, op, None, inclusive)
    assert np.array_equal(a, before)


@pytest.mark.parametrize("dtype,scan_dtype", [("int8", None), ("uint16", None), ("bool", None),
                                              ("float16", None), ("int32", "float64"), ("int64", "int16")])
def test_cumsum_result_dtypes_as_numpy(dtype, scan_dtype):
    a = data((300,), dtype, seed=7)
    x = da.from_array(a, chunks=((100, 1, 150, 49),))
    want = np.cumsum(a, dtype=scan_dtype)
    lazy = gd.cumsum(x, dtype=scan_dtype)
    assert lazy.dtype == want.dtype == gpuprims.cumsum(a, dtype=scan_dtype).dtype
    got = compute(lazy, "sync")
    if want.dtype.kind in "iu":
        assert np.array_equal(got, want)
    elif want.dtype == np.float16:
        ref = np.cumsum(a.astype(np.float64))
        assert np.all(np.abs(got.astype(np.float64) - ref) <= 2 * np.spacing(np.abs(ref).astype(np.float16)))
    else:
        check_scan(got, a.astype(want.dtype), "sum", None, True)


def test_scan_of_a_0d_array_is_that_of_its_one_element():
    a = np.array(2.5, dtype=np.float32)
    got = compute(gd.cumsum(da.from_array(a)), "sync")
    assert np.array_equal(got, np.cumsum(a)) and got.dtype == np.cumsum(a).dtype


# ------------------------------------------------------------ transpose


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("shape,chunks,axes", [
    ((37, 23), ((5, 9, 3, 20), (1, 22)), None),
    ((37, 23), -1, (1, 0)),
    ((37, 23), (20, 7), (-1, -2)),
    ((13, 8, 6), (5, 3, 4), (2, 0, 1)),
    ((13, 8, 6), ((13,), (1, 7), (6,)), (1, 2, 0)),
    ((13, 8, 6), (5, 3, 4), None),
    ((1000,), ((143,) * 6 + (142,),), None),
    ((5, 0, 3), 2, (2, 1, 0)),
])
@pytest.mark.parametrize("dtype", ["float32", "int8", "complex128"])
def test_transpose_exactly_numpy(shape, chunks, axes, dtype, scheduler):
    a, before = frozen(data(shape, dtype, seed=8))
    x = da.from_array(a, chunks=chunks)
    lazy = gd.transpose(x, axes)
    want = np.transpose(a, axes)
    assert lazy.shape == want.shape and lazy.dtype == want.dtype
    assert lazy.chunks == da.transpose(x, axes).chunks
    got = compute(lazy, scheduler)
    assert type(got) is np.ndarray and got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(a, before)


# ------------------------------------------------------------ page-locked chunks


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_pin_gives_page_locked_chunks_and_the_same_results(scheduler):
    """pin(x): the same values in page-locked NumPy chunks (copied to the
    device in place by the host pipeline); sums, scans and transposes of
    them have the bits of those of x."""
    a, before = frozen(data((1000,), "float32", seed=11))
    x = da.from_array(a, chunks=((100, 1, 333, 17, 250, 200, 99),))
    p = gd.pin(x)
    assert p.chunks == x.chunks and p.dtype == x.dtype
    with dask.config.set(scheduler=scheduler):
        parts = dask.compute(*p.to_delayed().ravel())  # the chunks as the tasks made them
    assert all(type(b) is np.ndarray and gpuprims.is_pinned(b) for b in parts)
    assert np.array_equal(np.concatenate(parts), a)
    assert compute(gd.sum(p), scheduler).tobytes() == compute(gd.sum(x), scheduler).tobytes()
    assert compute(gd.cumsum(p), scheduler).tobytes() == compute(gd.cumsum(x), scheduler).tobytes()
    m = da.from_array(data((37, 23), "int16", seed=12), chunks=(20, 23))
    assert np.array_equal(compute(gd.transpose(gd.pin(m)), scheduler), m.compute().T)
    assert np.array_equal(a, before)
    with pytest.raises(TypeError, match="dask.array.Array"):
        gd.pin(a)
    with pytest.raises(TypeError, match="mask"):
        gd.pin(da.ma.masked_greater(x, 0.5))


# ------------------------------------------------------------ errors


def raises_like(single, lazy_call):
    """lazy_call raises (when called, or at compute()) the exception type
    and message that the single-array call `single` raises."""
    with pytest.raises(Exception) as want:
        single()
    with pytest.raises(want.type) as got:
        r = lazy_call()
        compute(r, "sync")
    assert str(got.value) == str(want.value)


def test_errors_are_those_of_the_single_array_calls():
    a = data((37, 23), "float32")
    x = da.from_array(a, chunks=(10, 10))
    c = da.from_array(data((10,), "complex64"), chunks=4)
    e = da.from_array(np.empty((0, 3), np.float32), chunks=2)
    raises_like(lambda: gpuprims.sum(a, axis=5), lambda: gd.sum(x, axis=5))
    raises_like(lambda: gpuprims.sum(a, axis=(0, -2)), lambda: gd.sum(x, axis=(0, -2)))
    raises_like(lambda: gpuprims.sum(a, axis=1.5), lambda: gd.sum(x, axis=1.5))
    raises_like(lambda: gpuprims.sum(a, dtype=np.bool_), lambda: gd.sum(x, dtype=np.bool_))
    raises_like(lambda: gpuprims.min(c.compute()), lambda: gd.min(c))
    raises_like(lambda: gpuprims.reduce(a, "prod"), lambda: gd.reduce(x, "prod"))
    raises_like(lambda: gpuprims.min(np.empty((0, 3), np.float32), axis=0), lambda: gd.min(e, axis=0))
    raises_like(lambda: gpuprims.max(np.empty((0, 3), np.float32)), lambda: gd.max(e))
    raises_like(lambda: gpuprims.cumsum(a, axis=(0,)), lambda: gd.cumsum(x, axis=(0,)))
    raises_like(lambda: gpuprims.cumsum(a, axis=-3), lambda: gd.cumsum(x, axis=-3))
    raises_like(lambda: gpuprims.scan(a, "prod"), lambda: gd.scan(x, "prod"))
    raises_like(lambda: gpuprims.transpose(a, (0, 0)), lambda: gd.transpose(x, (0, 0)))
    raises_like(lambda: gpuprims.transpose(a, (0, 1, 2)), lambda: gd.transpose(x, (0, 1, 2)))
    s = da.from_array(np.array(["ab", "cd"]), chunks=1)
    raises_like(lambda: gpuprims.sum(np.array(["ab", "cd"])), lambda: gd.sum(s))
    raises_like(lambda: gpuprims.transpose(np.array(["ab", "cd"])), lambda: gd.transpose(s))
    # min/max of an empty array whose result is empty too is no error (as numpy)
    assert compute(gd.min(e, axis=1), "sync").shape == (0,)


def test_an_error_in_one_chunk_surfaces_at_compute_as_the_single_call_raises():
    """Chunk 1 of 3 is a masked array (which gpuprims refuses: its mask
    would be ignored); the others are plain."""
    a = data((30,), "float32")

    def block(b, block_info=None):
        return np.ma.masked_greater(b, 0.5) if block_info[0]["chunk-location"] == (1,) else b

    x = da.from_array(a, chunks=10).map_blocks(block, dtype=np.float32, meta=np.empty(0, np.float32))
    masked = np.ma.masked_greater(a[10:20], 0.5)
    for scheduler in SCHEDULERS:
        for single, lazy in ((lambda: gpuprims.sum(masked), lambda: gd.sum(x)),
                             (lambda: gpuprims.sum(masked, determinism="gpu_to_gpu"),
                              lambda: gd.sum(x, axis=0, determinism="gpu_to_gpu")),
                             (lambda: gpuprims.cumsum(masked), lambda: gd.cumsum(x)),
                             (lambda: gpuprims.transpose(masked), lambda: gd.transpose(x))):
            with pytest.raises(TypeError) as want:
                single()
            with pytest.raises(TypeError) as got:
                compute(lazy(), scheduler)
            assert str(got.value).replace("gpuprims.transpose", "gpuprims.X") == \
                str(want.value).replace("gpuprims.transpose", "gpuprims.X")


def test_argument_errors_say_what_to_do():
    x = da.from_array(data((10,), "float32"), chunks=3)
    with pytest.raises(TypeError, match="takes a dask.array.Array"):
        gd.sum(np.ones(3))
    with pytest.raises(ValueError, match="method must be 'sequential' or 'blelloch'"):
        gd.cumsum(x, method="hillis")
    with pytest.raises(ValueError, match="determinism must be one of"):
        gd.sum(x, determinism="bitwise")
    with pytest.raises(ValueError, match="gpu_to_gpu.*float sum scan.*run_to_run"):
        gd.cumsum(da.from_array(data((10, 3), "float32"), chunks=3), axis=0, determinism="gpu_to_gpu")
    m = da.ma.masked_greater(x, 0.5)
    with pytest.raises(TypeError, match="masked arrays"):
        gd.sum(m)


# ------------------------------------------------------------ gpu_to_gpu


def wide(shape, dtype, seed=0):
    """Random values over 12 decades with both signs, never zeros: their
    float sum depends on the order of the additions, so equal bits across
    chunkings say something.  Complex: both parts so."""
    rng = np.random.default_rng(seed + 104729 * int(np.prod(shape)))
    dtype = np.dtype(dtype)

    def part():
        return rng.choice([-1.0, 1.0], size=shape) * 10.0 ** rng.uniform(-6, 6, size=shape)
    if dtype.kind == "c":
        return (part() + 1j * part()).astype(dtype)
    with np.errstate(over="ignore"):
        return part().astype(dtype)


def bits(v):
    v = np.asarray(v)
    return v.dtype, v.shape, v.tobytes()


def g2g(lazy_or_array, scheduler="sync", **kw):
    """The gpu_to_gpu sum: of a dask array, computed; of a NumPy array, the single-array call."""
    if isinstance(lazy_or_array, da.Array):
        return compute(gd.sum(lazy_or_array, determinism="gpu_to_gpu", **kw), scheduler)
    return gpuprims.sum(lazy_or_array, determinism="gpu_to_gpu", **kw)


def reference(a, dtype=None):
    """tests/rfa_reference.py's gpu_to_gpu sum of all of a: float16 input
    accumulated in float32 and rounded once more; complex part by part."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        part = np.dtype(f"f{a.dtype.itemsize // 2}")
        return np.complex128(complex(R.rfa_sum(a.real, part), R.rfa_sum(a.imag, part))).astype(a.dtype)
    if a.dtype == np.float16:
        return np.float16(R.rfa_sum(a, np.float32))
    return R.rfa_sum(a, dtype)


# (shape, chunkings): 1, 2, 7 chunks, uneven, an empty chunk; 1-D to 3-D
G2G = [
    ((1000,), [1000, 500, ((100, 1, 333, 17, 250, 200, 99),), ((400, 0, 600),), 37]),
    ((37, 23), [-1, (20, 23), ((5, 9, 3, 20), (1, 22)), (7, 5), (1, 23)]),
    ((13, 8, 6), [-1, (5, 3, 4), ((13,), (1, 7), (1, 2, 3))]),
]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("shape,chunkings", G2G, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_to_gpu_sum_has_the_single_call_bits_for_every_chunking(shape, chunkings, dtype, scheduler):
    a, before = frozen(wide(shape, dtype, seed=20))
    ndim = len(shape)
    axes_list = [None, 0, -1] + ([(0, ndim - 1), (-1, -ndim)] if ndim > 1 else [()]) + \
        ([(0, 2), 1, ()] if ndim > 2 else [])
    full = reference(a)
    for axes in axes_list:
        for keepdims in (False, True):
            want = bits(g2g(a, axis=axes, keepdims=keepdims))
            if axes is None:
                assert want[2] == np.asarray(full).tobytes()  # the single call is the reference's
            for chunks in chunkings:
                x = da.from_array(a, chunks=chunks)
                for split_every in ((None, 2) if axes is None or isinstance(axes, tuple) else (None,)):
                    got = g2g(x, scheduler, axis=axes, keepdims=keepdims, split_every=split_every)
                    assert bits(got) == want, (axes, keepdims, chunks, split_every)
    assert np.array_equal(a, before)


def test_gpu_to_gpu_full_sum_of_a_deep_tree_is_the_reference_for_any_tree():
    """4099 elements in chunks of 13 to 4099 and trees of 2 to 64 inputs a
    node: one set of bits, the reference's; run_to_run's bits do move with
    the chunking on this data (what gpu_to_gpu is for)."""
    a, before = frozen(wide((4099,), "float32", seed=21))
    want = np.asarray(reference(a)).tobytes()
    seen, plain = set(), set()
    for chunks in (4099, 2050, 61, 13):
        x = da.from_array(a, chunks=chunks)
        for split_every in (2, 5, 64):
            seen.add(np.asarray(g2g(x, "threads", split_every=split_every)).tobytes())
        plain.add(np.asarray(compute(gd.sum(x), "sync")).tobytes())
    assert seen == {want}
    assert len(plain) > 1
    assert np.array_equal(a, before)


@pytest.mark.parametrize("dtype,sum_dtype", [
    ("float16", None), ("complex64", None), ("complex128", None), ("float32", "float64"),
    ("int32", "float32"), ("bool", "float64"), ("complex64", "complex128"), ("int16", "complex64"),
    ("float64", "float16")])
def test_gpu_to_gpu_float16_complex_and_dtype_as_the_single_call(dtype, sum_dtype):
    a = wide((37, 23), dtype, seed=22) if np.dtype(dtype).kind in "fc" else data((37, 23), dtype, seed=22)
    if sum_dtype == "float16":
        a = a * 1e-4  # sums within float16's range
    a, before = frozen(a)
    for axes in (None, 0, 1):
        want = bits(g2g(a, axis=axes, dtype=sum_dtype))
        assert want[0] == np.sum(a[:0], dtype=sum_dtype).dtype
        if axes is None and sum_dtype is None:
            assert want[2] == np.asarray(reference(a)).tobytes()
        for chunks in (-1, ((5, 9, 3, 20), (1, 22)), (1, 7)):
            got = g2g(da.from_array(a, chunks=chunks), "threads", axis=axes, dtype=sum_dtype, split_every=3)
            assert bits(got) == want, (axes, chunks)
    assert np.array_equal(a, before)


@pytest.mark.parametrize("kind", R.GOLDEN_KINDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_to_gpu_nan_inf_subnormals_and_overflow_as_the_reference(kind, dtype):
    """The reference's special inputs (NaN or infinities in one chunk,
    subnormals, sums that overflow to +-Inf, cancellation)."""
    a = R.golden_input(kind, 1000, dtype, seed=23)
    a.setflags(write=False)
    before = a.tobytes()  # NaNs compare by their bits
    want = R.rfa_sum_bits(a)
    uint = R.UINT[np.dtype(dtype)]
    for chunks in (1000, ((100, 1, 333, 17, 250, 200, 99),), 13):
        got = g2g(da.from_array(a, chunks=chunks), split_every=2)
        assert int(np.asarray(got).view(uint)) == want, chunks
    assert np.asarray(g2g(a)).tobytes() == np.asarray(want, uint).tobytes()
    assert a.tobytes() == before


def test_gpu_to_gpu_empty_0d_and_signed_zero_as_the_single_call():
    for a, axes, chunks in [(np.empty((0,), np.float32), None, 1), (np.empty((0, 3), np.float64), 0, 2),
                            (np.empty((5, 0), np.float32), 1, (2, 1)), (np.empty((5, 0), np.float32), 0, 2),
                            (np.array(-0.0, np.float32), None, ()), (np.array(2.5, np.float64), (), ()),
                            (np.full(7, -0.0, np.float32), None, 3), (np.full(7, -0.0, np.float32), (), 3)]:
        want = bits(g2g(a, axis=axes))
        assert bits(g2g(da.from_array(a, chunks=chunks), axis=axes)) == want, (a.shape, axes)
    assert g2g(np.full(7, -0.0, np.float32)).tobytes() == np.float32(0.0).tobytes()  # numpy.sum's +0.0


def test_gpu_to_gpu_strided_fortran_reversed_and_big_endian_chunks():
    base = wide((60, 41), "float32", seed=24)
    for a in (base[::-1, ::2], np.asfortranarray(base), base.T, base.astype(">f4"), base[5:45:3, ::-3]):
        a, before = frozen(a)
        for axes in (None, 0, 1):
            want = bits(g2g(a, axis=axes))
            for chunks in ((7, 5), -1):
                assert bits(g2g(da.from_array(a, chunks=chunks), "threads", axis=axes)) == want, axes
        assert np.array_equal(a, before)


@pytest.mark.parametrize("op,dtype", [("sum", "int32"), ("sum", "uint8"), ("sum", "bool"), ("min", "float32"),
                                      ("max", "float64"), ("max", "int64")])
def test_gpu_to_gpu_integer_sums_min_max_and_their_scans_are_the_run_to_run_graph(op, dtype):
    a, before = frozen(data((37, 23), dtype, seed=25))
    x = da.from_array(a, chunks=((5, 9, 3, 20), (1, 22)))
    for axes in (None, 0, 1):
        lazy = gd.reduce(x, op, axis=axes, determinism="gpu_to_gpu")
        assert lazy.name == gd.reduce(x, op, axis=axes).name  # the same graph, token and all
        got = compute(lazy, "threads")
        want = getattr(np, op)(a, axis=axes)
        assert bits(got) == bits(want)
    for axis in (None, 0, 1):
        got = compute(gd.scan(x, op, axis=axis, determinism="gpu_to_gpu"), "sync")
        want = UFUNC[op].accumulate(a.reshape(-1) if axis is None else a, axis=0 if axis is None else axis,
                                    dtype=np.cumsum(a[:0]).dtype if op == "sum" else a.dtype)
        assert bits(got) == bits(want)
    assert np.array_equal(a, before)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gpu_to_gpu_float_sum_scans_have_the_single_call_bits_for_every_chunking(dtype, scheduler):
    """A 1-D (or flattened) float sum scan with determinism="gpu_to_gpu":
    every element has the bits of the single-array call, whatever the
    chunks (empty ones too), inclusive and exclusive, sequential or
    blelloch (the same graph: chunk states, then each chunk scanned on)."""
    a = wide((6007,), dtype, seed=31)
    before = a.copy()
    for inclusive in (True, False):
        want = gpuprims.scan(a, inclusive=inclusive, determinism="gpu_to_gpu")
        for chunks in (6007, 3000, 701, (1, 6006), (2000, 0, 4007)):
            x = da.from_array(a, chunks=(chunks,) if isinstance(chunks, tuple) else chunks)
            for method in ("sequential", "blelloch"):
                got = compute(gd.scan(x, inclusive=inclusive, method=method, determinism="gpu_to_gpu"), scheduler)
                assert got.dtype == want.dtype and bits(got) == bits(want), (inclusive, chunks, method)
    m = a[:6000].reshape(60, 100)
    got = compute(gd.cumsum(da.from_array(m, chunks=(7, 30)), determinism="gpu_to_gpu"), scheduler)
    assert bits(got) == bits(gpuprims.cumsum(m, determinism="gpu_to_gpu"))  # axis=None: flattened
    assert np.array_equal(a, before)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_gpu_to_gpu_float_sum_scans_along_an_axis_or_of_complex_are_refused(dtype):
    x = da.from_array(data((10, 4), dtype), chunks=3)
    calls = [lambda: gd.cumsum(x, axis=0, determinism="gpu_to_gpu"),
             lambda: gd.scan(x, "sum", axis=1, inclusive=False, method="blelloch", determinism="gpu_to_gpu")]
    if dtype == "complex64":
        calls.append(lambda: gd.cumsum(x, determinism="gpu_to_gpu"))
    for call in calls:
        with pytest.raises(ValueError, match="gpu_to_gpu.*float sum scan.*1-D") as e:
            call()
        assert "determinism='run_to_run'" in str(e.value)


def test_gpu_to_gpu_graph_survives_pickling_and_errors_are_the_single_calls():
    a = wide((300, 7), "float64", seed=26)
    x = da.from_array(a, chunks=(41, 3))
    lazy = gd.sum(x, axis=0, determinism="gpu_to_gpu")
    again = pickle.loads(pickle.dumps(lazy))
    assert bits(compute(again, "sync")) == bits(g2g(a, axis=0))
    raises_like(lambda: gpuprims.sum(a, axis=2, determinism="gpu_to_gpu"),
                lambda: gd.sum(x, axis=2, determinism="gpu_to_gpu"))
    raises_like(lambda: gpuprims.sum(np.array(["a"]), determinism="gpu_to_gpu"),
                lambda: gd.sum(da.from_array(np.array(["a"])), determinism="gpu_to_gpu"))
    assert gd.sum(x, determinism="gpu_to_gpu").name != gd.sum(x).name


# ------------------------------------------------------------ GPUs


def _gpu_count() -> int:
    if not GPU_OK:
        return 0
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no CuPy: ask nvidia-smi
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
            return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            return 1


@pytest.mark.gpu
def test_cupy_chunks_give_cupy_chunks_and_the_numpy_chunks_results(cuda):
    cupy = pytest.importorskip("cupy")
    a = data((4099, 33), "float32", seed=9)
    xn = da.from_array(a, chunks=(1000, 20))
    xc = xn.map_blocks(cupy.asarray, meta=cupy.empty((0, 0), np.float32))
    for fn in (lambda x: gd.sum(x, axis=0), lambda x: gd.min(x), lambda x: gd.cumsum(x, axis=0),
               lambda x: gd.scan(x, axis=1, inclusive=False, method="blelloch"),
               lambda x: gd.transpose(x)):
        lazy = fn(xc)
        assert type(lazy._meta).__module__.startswith("cupy")
        got = compute(lazy, "threads")
        assert type(got).__module__.startswith("cupy")
        want = compute(fn(xn), "sync")  # NumPy chunks: the host pipeline, whose sums may round apart
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-5, atol=1e-3)


@pytest.mark.gpu
def test_gpu_to_gpu_of_cupy_chunks_is_the_single_call_and_the_numpy_chunks_bits(cuda):
    cupy = pytest.importorskip("cupy")
    a = wide((4099, 33), "float32", seed=27)
    whole = cupy.asarray(a)
    for axes in (None, 0, 1):
        single = gpuprims.sum(whole, axis=axes, determinism="gpu_to_gpu")
        want = np.asarray(single.get() if hasattr(single, "get") else single).tobytes()
        assert want == np.asarray(g2g(a, axis=axes)).tobytes()  # host and device agree
        if axes is None:
            assert want == np.asarray(reference(a)).tobytes()
        for chunks in ((1000, 20), -1, (7, 33), ((4000, 99), (1, 32))):
            xn = da.from_array(a, chunks=chunks)
            xc = xn.map_blocks(cupy.asarray, meta=cupy.empty((0, 0), np.float32))
            got = compute(gd.sum(xc, axis=axes, determinism="gpu_to_gpu", split_every=3), "threads")
            assert type(got).__module__.startswith("cupy")
            assert cupy.asnumpy(got).tobytes() == want, (axes, chunks)
            assert np.asarray(g2g(xn, "threads", axis=axes)).tobytes() == want


@pytest.mark.gpu
def test_local_cuda_cluster_with_two_workers_gives_the_single_gpu_results():
    if _gpu_count() < 2:
        pytest.skip("needs 2 GPUs")
    dask_cuda = pytest.importorskip("dask_cuda", reason="dask-cuda is not installed")
    distributed = pytest.importorskip("distributed")
    a = data((1 << 20,), "float32", seed=10)
    b = data((1000, 700), "int32", seed=11)
    x = da.from_array(a, chunks=1 << 17)
    y = da.from_array(b, chunks=(300, 256))
    cases = [gd.sum(x), gd.max(x), gd.cumsum(x), gd.cumsum(x, method="blelloch"),
             gd.sum(y, axis=0), gd.scan(y, "min", axis=1, inclusive=False), gd.transpose(y)]
    single = [compute(c, "sync") for c in cases]  # this process, one GPU
    # gpu_to_gpu: the bits of one single-array call, whatever the chunking and the workers
    c = wide((3000, 257), "float64", seed=12)
    reproducible = [gd.sum(x, determinism="gpu_to_gpu"), gd.sum(da.from_array(a, chunks=3 << 15),
                                                                 determinism="gpu_to_gpu", split_every=2),
                    gd.sum(da.from_array(c, chunks=(1000, 100)), axis=0, determinism="gpu_to_gpu"),
                    gd.sum(da.from_array(c, chunks=(7, 257)), axis=0, determinism="gpu_to_gpu")]
    want = [g2g(a), g2g(a), g2g(c, axis=0), g2g(c, axis=0)]
    with dask_cuda.LocalCUDACluster(n_workers=2, threads_per_worker=1) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = client.compute(cases, sync=True)
        got_reproducible = client.compute(reproducible, sync=True)
    for g, s in zip(got, single):
        assert np.asarray(g).tobytes() == np.asarray(s).tobytes()  # same chunking, same bits
    for g, w in zip(got_reproducible, want):
        assert bits(g) == bits(w)
    assert np.asarray(want[0]).tobytes() == np.asarray(reference(a)).tobytes()
    assert got[0] == pytest.approx(exact_sum(a), abs=sum_tolerance(a, np.float32, exact_sum(a)))
    assert np.array_equal(got[4], b.sum(axis=0)) and np.array_equal(got[6], b.T)
