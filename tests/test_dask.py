"""gpuprims.dask: sum / min / max / reduce, cumsum / scan and transpose of
dask arrays, on dask's synchronous and threaded schedulers (the emulator in
CI, the GPU where there is one), against NumPy: integers and min/max
exactly, float sums within _numerics.sum_tolerance of the correctly rounded
sum (math.fsum) of each output element, float scans within
_numerics.scan_tolerance of a wider-precision scan, transposes exactly.
Chunkings of 1, 2 and 7 chunks, uneven and empty chunks, 1-D to 3-D.

The last tests need 2 GPUs and dask-cuda: a LocalCUDACluster with 2
workers gives the single-GPU results."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gpuprims
from gpuprims._numerics import exact_sum, scan_reference, scan_tolerance, sum_tolerance

from conftest import GPU_OK, GPU_WHY

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
    with pytest.raises(ValueError, match="gpu_to_gpu"):
        gd.sum(x, determinism="gpu_to_gpu")
    with pytest.raises(ValueError, match="gpu_to_gpu"):
        gd.cumsum(x, determinism="gpu_to_gpu")
    m = da.ma.masked_greater(x, 0.5)
    with pytest.raises(TypeError, match="masked arrays"):
        gd.sum(m)


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
def test_cupy_chunks_give_cupy_chunks_and_the_numpy_chunks_results():
    if not GPU_OK:
        pytest.skip(f"needs a CUDA GPU ({GPU_WHY})")
    cupy = pytest.importorskip("cupy")
    a = data((4099, 33), "float32", seed=9)
    xn = da.from_array(a, chunks=(1000, 20))
    xc = xn.map_blocks(cupy.asarray, meta=cupy.empty((0, 0), np.float32))
    before = gpuprims.backend()
    gpuprims.set_backend("cuda")
    try:
        for fn in (lambda x: gd.sum(x, axis=0), lambda x: gd.min(x), lambda x: gd.cumsum(x, axis=0),
                   lambda x: gd.scan(x, axis=1, inclusive=False, method="blelloch"),
                   lambda x: gd.transpose(x)):
            lazy = fn(xc)
            assert type(lazy._meta).__module__.startswith("cupy")
            got = compute(lazy, "threads")
            assert type(got).__module__.startswith("cupy")
            want = compute(fn(xn), "sync")  # NumPy chunks: the host pipeline, whose sums may round apart
            np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-5, atol=1e-3)
    finally:
        gpuprims.set_backend(before)


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
    with dask_cuda.LocalCUDACluster(n_workers=2, threads_per_worker=1) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = client.compute(cases, sync=True)
    for g, s in zip(got, single):
        assert np.asarray(g).tobytes() == np.asarray(s).tobytes()  # same chunking, same bits
    assert got[0] == pytest.approx(exact_sum(a), abs=sum_tolerance(a, np.float32, exact_sum(a)))
    assert np.array_equal(got[4], b.sum(axis=0)) and np.array_equal(got[6], b.T)
