"""A call with out= on device arrays allocates nothing: sum/min/max/cumsum
along an axis, the input and the output DeviceArrays, after a warm-up
call; the active backend's stream-ordered pool (_core.pool_stats: the
used bytes' high mark since a reset and the count of its allocations) does
not move.  The emulator counts its own pool allocations; on the GPU the
numbers are cudaMemPoolGetAttribute's of the default pool.

One exception, at the GPU sizes: a scan along an axis of 2^26 elements
needs look-back scratch (the tiles' status words, 0.1-5 MiB) beyond the
thread's preallocated 64 KiB, and takes it from the pool, stream-ordered;
there the check is that the pool reserves no new device memory, that
nothing stays in use after the call and that the extra is scratch-sized,
not an output."""
import numpy as np
import pytest

import gpuprims
from gpuprims import _core

from conftest import random_array


def calls(x, axis):
    """(function, out) pairs for x along axis, the outs preallocated."""
    red = np.sum(np.empty(x.shape, np.int8), axis=axis).shape
    dt = x.dtype
    return [(gpuprims.sum, gpuprims.to_device(np.full(red, 7, dt))),
            (gpuprims.min, gpuprims.to_device(np.full(red, 7, dt))),
            (gpuprims.max, gpuprims.to_device(np.full(red, 7, dt))),
            (gpuprims.cumsum, gpuprims.to_device(np.full(x.shape, 7, dt)))]


SCAN_SCRATCH_BYTES = 8 << 20  # the most look-back scratch a scan of the GPU sizes takes


def assert_no_allocation(host, axis, scan_scratch=False):
    x = gpuprims.to_device(host)
    for fn, out in calls(host, axis):
        got = fn(x, axis=axis, out=out)  # the warm-up: whatever a first call sets up
        assert got is out
        before = _core.pool_stats(True)
        fn(x, axis=axis, out=out)
        after = _core.pool_stats()
        what = (fn.__name__, axis, before, after)
        if scan_scratch and fn is gpuprims.cumsum:
            assert after["reserved_high_bytes"] == before["reserved_bytes"], what
            assert after["used_bytes"] == before["used_bytes"], what
            assert after["used_high_bytes"] - before["used_bytes"] <= SCAN_SCRATCH_BYTES, what
        else:
            assert after["allocations"] == before["allocations"], what
            assert after["used_high_bytes"] <= before["used_bytes"], what
        want = {"sum": np.sum, "min": np.min, "max": np.max, "cumsum": np.cumsum}[fn.__name__](
            host.astype(np.float64), axis=axis)
        np.testing.assert_allclose(out.get(), want, rtol=1e-4, atol=1e-3 * np.abs(host).sum())
    np.testing.assert_array_equal(x.get(), host)


@pytest.mark.parametrize("shape", [(1000, 64), (64, 1000), (4097, 4), (3, 4100), (33, 65), (1, 7)], ids=str)
@pytest.mark.parametrize("axis", [0, -1])
def test_out_allocates_nothing(backend, shape, axis):
    assert_no_allocation(random_array(shape[0] * shape[1], "float32", seed=31).reshape(shape), axis)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2**24, 4), (2**20, 64), (64, 2**20), (4, 2**24)], ids=str)
@pytest.mark.parametrize("axis", [0, -1])
def test_out_allocates_nothing_gpu_sizes(cuda, shape, axis):
    """The benchmark's shapes."""
    assert_no_allocation(random_array(shape[0] * shape[1], "float32", seed=32).reshape(shape), axis,
                         scan_scratch=True)


def test_pool_stats_counts(backend):
    """The statistics move where memory is taken: a new device array is an
    allocation of the pool."""
    before = _core.pool_stats(True)
    x = gpuprims.to_device(random_array(1 << 16, "float32", seed=33))
    after = _core.pool_stats()
    assert after["allocations"] == before["allocations"] + 1
    assert after["used_high_bytes"] >= before["used_bytes"] + x.nbytes
    assert set(after) == {"used_bytes", "used_high_bytes", "reserved_bytes", "reserved_high_bytes", "allocations"}


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("float64", "sum"), ("int32", "sum"), ("float16", "sum"),
                                      ("int8", "max"), ("uint64", "sum"), ("float32", "min")])
@pytest.mark.parametrize("keepdims", [False, True])
def test_full_reduction_out(backend, dtype, op, keepdims):
    """Every element into one value with out= (a device array of one
    element, the result's dtype): written there and returned, nothing
    allocated after a warm-up call, the same value as the call without out
    (which returns a NumPy scalar), the input unchanged.  Where the result
    dtype is the kernels' own (float32/64 and int64 sums, ...) the kernels
    write it into out, else the value goes in through the host."""
    ints = np.dtype(dtype).kind in "iu"
    host = ((random_array(3000, "int32", seed=34) % 100).astype(dtype) if ints else
            random_array(3000, dtype, seed=34)).reshape(3, 1000)
    x = gpuprims.to_device(host)
    fn = getattr(gpuprims, op)
    want = fn(x)
    shape = (1, 1) if keepdims else ()
    out = gpuprims.to_device(np.full(shape, 7, want.dtype))
    assert fn(x, out=out, keepdims=keepdims) is out  # the warm-up
    before = _core.pool_stats(True)
    assert fn(x, out=out, keepdims=keepdims) is out
    after = _core.pool_stats()
    assert after["allocations"] == before["allocations"], (dtype, op, before, after)
    assert out.get().shape == shape and out.get().dtype == want.dtype
    assert out.get().reshape(()) == want
    np.testing.assert_array_equal(x.get(), host)
    with pytest.raises(TypeError, match="dtype"):
        fn(x, out=gpuprims.DeviceArray(shape, np.complex64), keepdims=keepdims)
    with pytest.raises(ValueError, match="overlaps"):
        fn(x, out=gpuprims.DeviceArray(shape, want.dtype, _ptr=x.ptr, _owner=x), keepdims=keepdims)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16", "uint8"])
@pytest.mark.parametrize("inclusive", [True, False])
def test_repeated_1d_scans(backend, dtype, inclusive):
    """A 1-D scan of a DeviceArray called again (the second call takes the
    parsed arguments straight to the core): the same values as the first
    and as NumPy, into a new array or into out= (nothing allocated then),
    exclusive and inclusive kept apart, a bad out still refused, the input
    unchanged."""
    ints = np.dtype(dtype).kind in "iu"
    host = ((random_array(2 * 1500, "int32", seed=35) % 50).astype(dtype) if ints else
            random_array(2 * 1500, dtype, seed=35)).reshape(2, 1500)
    x = gpuprims.to_device(host)
    first = gpuprims.scan(x, inclusive=inclusive)
    again = gpuprims.scan(x, inclusive=inclusive)
    other = gpuprims.scan(x, inclusive=not inclusive)
    flat = host.ravel().astype(np.float64)
    want = np.cumsum(flat) if inclusive else np.concatenate([[0.0], np.cumsum(flat)[:-1]])
    assert first.shape == again.shape == (host.size,) and first.dtype == np.cumsum(host).dtype
    np.testing.assert_array_equal(again.get(), first.get())
    np.testing.assert_allclose(first.get().astype(np.float64), want, rtol=2e-3 if dtype == "float16" else 1e-5,
                               atol=1e-2 * np.abs(flat).sum() if dtype == "float16" else 1e-3)
    assert not np.array_equal(other.get(), first.get())
    out = gpuprims.to_device(np.full(host.size, 7, first.dtype))
    assert gpuprims.scan(x, inclusive=inclusive, out=out) is out
    before = _core.pool_stats(True)
    assert gpuprims.scan(x, inclusive=inclusive, out=out) is out
    after = _core.pool_stats()
    assert after["allocations"] == before["allocations"], (before, after)
    np.testing.assert_array_equal(out.get(), first.get())
    with pytest.raises(ValueError, match="shape"):
        gpuprims.scan(x, inclusive=inclusive, out=gpuprims.DeviceArray((host.size - 1,), first.dtype))
    with pytest.raises(TypeError, match="dtype"):
        gpuprims.scan(x, inclusive=inclusive, out=gpuprims.DeviceArray((host.size,), np.complex64))
    np.testing.assert_array_equal(x.get(), host)
