"""Device arrays and how inputs are taken in: memory of the other backend,
ndarray subclasses, the dtypes to_device takes, __array__, DLPack.

What once killed the interpreter (a DeviceArray of the other backend read
by the active one; object arrays copied as raw pointers) runs in a
subprocess, so that a crash fails its test instead of ending pytest.  The
DLPack tests run on the emulator, whose memory is host memory (NumPy is the
other side); the CuPy and PyTorch exchanges need a GPU.
"""
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import gpuprims

gpu = pytest.mark.gpu
PYTHONPATH = os.path.dirname(os.path.dirname(os.path.abspath(gpuprims.__file__)))
NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]


def rand(shape, dtype="float64", seed=0):
    """Random data of any numeric dtype, never all zeros."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(shape) - 0.5 + 1j * (rng.random(shape) - 0.5)).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


def run_isolated(code, backend="emulator"):
    """Run `code` in a fresh interpreter on `backend`; its stdout.  A crash
    (a signal) or an exception fails the calling test with what it said."""
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, GPUPRIMS_BACKEND=backend)
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"exit status {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


# ------------------------------------------------ memory of the other backend

def test_cuda_memory_is_never_read_by_the_emulator():
    """A DeviceArray of CUDA memory met on the emulator: the operations
    refuse it with ValueError before any copy, and get() asks the CUDA
    runtime (never the emulator's memcpy, which killed the process)."""
    out = run_isolated("""
        import inspect, numpy as np, gpuprims
        from gpuprims import DeviceArray
        # an address the emulator must never dereference
        d = DeviceArray((4,), np.float32, _ptr=0x10, _backend="cuda")
        e = gpuprims.to_device(np.arange(4, dtype=np.float32) + 1)
        calls = [gpuprims.sum, gpuprims.min, gpuprims.max, gpuprims.reduce, gpuprims.cumsum,
                 gpuprims.scan, lambda d: gpuprims.transpose(
                     DeviceArray((2, 2), np.float32, _ptr=0x10, _backend="cuda"))]
        if "out" in inspect.signature(gpuprims.cumsum).parameters:
            calls.append(lambda d: gpuprims.cumsum(e, out=d))
        for call in calls:
            try:
                call(d)
            except ValueError as err:
                assert "cuda memory" in str(err) and "emulator" in str(err), err
            else:
                raise AssertionError(f"{call} took memory of the other backend")
        for call in (d.get, lambda: gpuprims.to_device(d)):
            try:
                call()  # no CUDA here: ValueError; a GPU build: the CUDA runtime's error
            except (ValueError, gpuprims.CudaError) as err:
                pass
            else:
                raise AssertionError("read a bogus CUDA address")
        print("ok")
    """)
    assert out.strip() == "ok"


@gpu
def test_cross_backend_get_and_to_device():
    """On a GPU: an array of each backend is read by .get() whichever is
    active, copied over by to_device, and refused by the operations."""
    out = run_isolated("""
        import inspect, numpy as np, gpuprims
        x = np.random.default_rng(1).random(1000)
        x0 = x.copy()
        gpuprims.set_backend("cuda")
        dc = gpuprims.to_device(x)
        gpuprims.set_backend("emulator")
        de = gpuprims.to_device(x)
        assert np.array_equal(dc.get(), x)                    # CUDA memory, emulator active
        bads = [lambda: gpuprims.sum(dc)]
        if "out" in inspect.signature(gpuprims.cumsum).parameters:
            bads.append(lambda: gpuprims.cumsum(de, out=dc))
        for bad in bads:
            try:
                bad()
            except ValueError:
                pass
            else:
                raise AssertionError("an operation took CUDA memory on the emulator")
        moved = gpuprims.to_device(dc)
        assert moved.backend == "emulator" and np.array_equal(moved.get(), x)
        gpuprims.set_backend("cuda")
        assert np.array_equal(de.get(), x)                    # emulator memory, cuda active
        try:
            gpuprims.sum(de)
        except ValueError:
            pass
        else:
            raise AssertionError("an operation took emulator memory on the cuda backend")
        moved = gpuprims.to_device(de)
        assert moved.backend == "cuda" and np.array_equal(moved.get(), x)
        assert np.array_equal(x, x0)
        print("ok")
    """, backend="cuda")
    assert out.strip() == "ok"


def test_to_device_of_this_backend_is_the_same_array(emulator):
    d = gpuprims.to_device(rand(17))
    assert gpuprims.to_device(d) is d


# ------------------------------------------------------- ndarray subclasses

def _masked():
    x = rand((6, 5), seed=2)
    mask = np.zeros(x.shape, dtype=bool)
    mask[1, 2] = mask[4, 0] = True
    return np.ma.array(x, mask=mask)


class Tagged(np.ndarray):
    """A subclass gpuprims knows nothing of (like a unit-carrying array)."""


OPERATIONS = {
    "sum": gpuprims.sum,
    "min": gpuprims.min,
    "max": gpuprims.max,
    "reduce": lambda x: gpuprims.reduce(x, "max"),
    "cumsum": gpuprims.cumsum,
    "scan": lambda x: gpuprims.scan(x, "min", inclusive=False),
    "transpose": gpuprims.transpose,
    "to_device": gpuprims.to_device,
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_masked_arrays_are_refused(backend, name):
    m = _masked()
    data, mask = m.data.copy(), m.mask.copy()
    with pytest.raises(TypeError, match="masked"):
        OPERATIONS[name](m)
    assert np.array_equal(m.data, data) and np.array_equal(m.mask, mask)


def test_masked_sum_is_not_the_unmasked_sum():
    """The bug: the mask was dropped (6.0 where NumPy says 4.0)."""
    m = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    assert np.ma.sum(m) == 4.0
    with pytest.raises(TypeError, match="filled"):
        gpuprims.sum(m)
    assert gpuprims.sum(m.filled(0.0)) == 4.0 and gpuprims.sum(m.compressed()) == 4.0


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_unknown_subclasses_are_refused(backend, name):
    t = rand((6, 5), seed=3).view(Tagged)
    with pytest.raises(TypeError, match=r"numpy\.asarray"):
        OPERATIONS[name](t)
    OPERATIONS[name](np.asarray(t))  # the way out the message gives


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_matrix_and_memmap_are_read_as_plain_arrays(backend, tmp_path):
    x = rand((6, 5), seed=4)
    mat = np.matrix(x)
    got = gpuprims.transpose(mat)
    assert type(got) is np.ndarray and np.array_equal(got, x.T)
    assert np.isclose(gpuprims.sum(mat), x.sum())
    assert np.allclose(gpuprims.cumsum(mat), np.cumsum(x))
    mm = np.memmap(tmp_path / "x.bin", dtype=x.dtype, mode="w+", shape=x.shape)
    mm[:] = x
    assert gpuprims.max(mm) == x.max()
    assert np.array_equal(gpuprims.to_device(mm).get(), x)
    assert np.array_equal(mat, x) and np.array_equal(mm, x)


# ------------------------------------------------------- to_device's dtypes

@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("dtype", NUMERIC)
def test_to_device_takes_the_numeric_dtypes(backend, dtype, order):
    dt = np.dtype(dtype).newbyteorder(order)
    x = rand((7, 3), dtype, seed=5).astype(dt)
    x0 = x.copy()
    d = gpuprims.to_device(x)
    assert d.dtype == dt and d.shape == x.shape
    got = d.get()
    assert got.dtype == dt and np.array_equal(got, x)
    assert np.array_equal(x, x0)


@pytest.mark.parametrize("value", [np.float32(-2.5), np.array(7, dtype=np.int64), np.array(3.0 + 1j)],
                         ids=["scalar", "0-d int64", "0-d complex"])
def test_to_device_keeps_a_0d_array_0d(backend, value):
    """A NumPy scalar or 0-d array stays 0-d on the device (as cupy.asarray
    gives), round trip included."""
    d = gpuprims.to_device(value)
    assert d.shape == () and d.dtype == np.asarray(value).dtype and d.size == 1
    got = d.get()
    assert got.shape == () and got == value


REFUSED = {
    "object": np.array([1.5, 2.5], dtype=object),
    "str": np.array(["ab", "c"]),
    "bytes": np.array([b"ab", b"c"]),
    "void": np.zeros(2, dtype="V8"),
    "structured": np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]),
    "datetime": np.array(["2024-01-01", "2024-06-30"], dtype="datetime64[s]"),
    "timedelta": np.array([1, 2], dtype="timedelta64[ns]"),
}
if np.dtype(np.longdouble).itemsize > 8:
    REFUSED["longdouble"] = np.ones(2, dtype=np.longdouble)
    REFUSED["clongdouble"] = np.ones(2, dtype=np.clongdouble)


@pytest.mark.parametrize("name", list(REFUSED))
def test_to_device_refuses_what_no_operation_takes(backend, name):
    with pytest.raises(TypeError, match=r"float32.*either byte order"):
        gpuprims.to_device(REFUSED[name])
    with pytest.raises(TypeError):
        gpuprims.DeviceArray((2,), REFUSED[name].dtype)


def test_object_arrays_never_reach_device_memory():
    """The bug: to_device of an object array copied its pointers without
    references, and get() repeated a few times crashed."""
    out = run_isolated("""
        import gc, numpy as np, gpuprims
        for _ in range(50):
            try:
                gpuprims.to_device(np.array([1.5, 2.5], dtype=object)).get()
            except TypeError:
                pass
            else:
                raise AssertionError("an object array went to the device")
            gc.collect()
        print("ok")
    """)
    assert out.strip() == "ok"


class FakeCAI:
    """A device array of a given typestr (never read: refused first)."""

    def __init__(self, typestr):
        self.__cuda_array_interface__ = {"shape": (2,), "typestr": typestr, "data": (0x10, False),
                                         "strides": None, "version": 3}


@pytest.mark.parametrize("typestr", ["|O8", "<U1", "|S4", "|V8", "<M8[s]", "<m8[ns]"])
def test_cuda_array_interface_with_other_typestrs_is_refused(backend, typestr):
    for call in (gpuprims.to_device, gpuprims.sum, gpuprims.cumsum):
        with pytest.raises(TypeError):
            call(FakeCAI(typestr))


# ------------------------------------------------------------- __array__

def test_no_implicit_conversion_to_numpy(backend):
    x = rand(10, seed=6)
    d = gpuprims.to_device(x)
    for convert in (np.asarray, np.array, lambda d: np.sum(d), lambda d: np.asarray(d, dtype=float)):
        with pytest.raises(TypeError, match=r"\.get\(\)"):
            convert(d)
    assert np.array_equal(d.get(), x)
    assert ".get()" in gpuprims.DeviceArray.__doc__ and "numpy.asarray" in gpuprims.DeviceArray.__doc__


# ---------------------------------------------------- DLPack on the emulator

@pytest.mark.parametrize("shape", [(0,), (1,), (33,), (7, 5), (3, 0, 2), (2, 3, 4)])
@pytest.mark.parametrize("dtype", NUMERIC)
def test_numpy_from_dlpack_of_a_device_array(emulator, dtype, shape):
    x = rand(shape, dtype, seed=7)
    d = gpuprims.to_device(x)
    assert d.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(d)
    assert y.dtype == x.dtype and y.shape == x.shape and np.array_equal(y, x)


def test_numpy_from_dlpack_views_device_memory(emulator):
    x = rand(64, seed=8)
    d = gpuprims.to_device(x)
    y = np.from_dlpack(d)
    assert y.__array_interface__["data"][0] == d.ptr  # no copy
    y[3] = 42.0  # the emulator's memory is host memory: the view writes it
    assert d.get()[3] == 42.0 and x[3] != 42.0


def test_capsule_names_and_versions(emulator):
    d = gpuprims.to_device(rand(5, seed=9))
    assert '"dltensor"' in repr(d.__dlpack__())
    assert '"dltensor"' in repr(d.__dlpack__(max_version=(0, 8)))
    assert '"dltensor_versioned"' in repr(d.__dlpack__(max_version=(1, 0)))
    assert '"dltensor_versioned"' in repr(d.__dlpack__(max_version=(1, 3)))


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_capsule_is_consumed_once(emulator, max_version):
    x = rand(9, seed=10)
    d = gpuprims.to_device(x)
    capsule = d.__dlpack__(max_version=max_version)

    class Once:
        def __dlpack_device__(self):
            return d.__dlpack_device__()

        def __dlpack__(self, **kwargs):
            return capsule

    view = gpuprims.from_dlpack(Once())
    assert view.ptr == d.ptr and np.array_equal(view.get(), x)
    assert "used_dltensor" in repr(capsule)
    with pytest.raises(TypeError, match="consumed"):
        gpuprims.from_dlpack(Once())
    with pytest.raises(TypeError, match="consumed"):
        gpuprims._core.dlpack_import(capsule)


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_deleter_keeps_the_array_alive_then_frees_it(emulator, max_version):
    d = gpuprims.to_device(rand(100, seed=11))
    alive = weakref.ref(d)
    capsule = d.__dlpack__(max_version=max_version)  # unconsumed: the capsule calls the deleter
    del d
    gc.collect()
    assert alive() is not None
    del capsule
    gc.collect()
    assert alive() is None

    d = gpuprims.to_device(rand(100, seed=12))
    alive = weakref.ref(d)
    y = np.from_dlpack(d)  # consumed: NumPy calls the deleter when its array goes away
    del d
    gc.collect()
    assert alive() is not None and y.sum() != 0
    del y
    gc.collect()
    assert alive() is None


def test_from_dlpack_keeps_the_producer_alive(emulator):
    x = rand((40, 3), seed=13)
    x0 = x.copy()
    alive = weakref.ref(x)
    before = sys.getrefcount(x)
    d = gpuprims.from_dlpack(x)
    assert sys.getrefcount(x) > before
    assert d.backend == "emulator" and d.ptr == x.__array_interface__["data"][0]  # no copy
    assert np.array_equal(d.get(), x0)
    assert np.isclose(gpuprims.sum(d), x0.sum()) and np.allclose(gpuprims.cumsum(d).get(), np.cumsum(x0))
    assert np.array_equal(gpuprims.transpose(d).get(), x0.T)
    assert np.array_equal(x, x0)
    del x
    gc.collect()
    assert alive() is not None
    del d
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("dtype", NUMERIC)
def test_from_dlpack_dtypes(emulator, dtype):
    x = rand((5, 4), dtype, seed=14)
    d = gpuprims.from_dlpack(x)
    assert d.dtype == x.dtype and np.array_equal(d.get(), x)


def test_from_dlpack_strided_and_copies(emulator):
    x = rand((12, 10), seed=15)
    for view in (x[:, ::3], x[::-2], x.T, x[3:4, 1:2]):
        d = gpuprims.from_dlpack(view)
        assert d.shape == view.shape and np.array_equal(d.get(), view)
    with pytest.raises(BufferError, match="copy=False"):
        gpuprims.from_dlpack(x[:, ::3], copy=False)
    assert gpuprims.from_dlpack(x, copy=False).ptr == x.__array_interface__["data"][0]
    c = gpuprims.from_dlpack(x, copy=True)
    assert c.ptr != x.__array_interface__["data"][0] and np.array_equal(c.get(), x)


def test_read_only_producers(emulator):
    x = rand(8, seed=16)
    x.setflags(write=False)
    d = gpuprims.from_dlpack(x)
    assert d._readonly and np.array_equal(d.get(), x)
    with pytest.raises(BufferError, match="read-only"):
        d.__dlpack__()  # DLPack before 1.0 cannot say read-only
    y = np.from_dlpack(d)  # NumPy asks for 1.0: read-only is carried
    assert not y.flags.writeable and np.array_equal(y, x)


def test_dlpack_arguments(emulator):
    x = rand((4, 6), seed=17)
    d = gpuprims.to_device(x)
    with pytest.raises(ValueError, match="stream=None"):
        d.__dlpack__(stream=2)  # host memory has no stream
    with pytest.raises(TypeError, match="stream"):
        d.__dlpack__(stream="2")
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(2, 0))
    d.__dlpack__(dl_device=(1, 0), copy=False)
    copied = np.from_dlpack(_Exporter(d.__dlpack__(max_version=(1, 0), copy=True)))
    copied[0, 0] = 7.0  # a copy: the array is untouched
    assert np.array_equal(d.get(), x)
    swapped = gpuprims.to_device(x.astype(">f8"))
    with pytest.raises(BufferError, match="byte order"):
        swapped.__dlpack__()


class _Exporter:
    """Hands a prepared capsule to a consumer (host memory)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        return self.capsule


class _DLPackOnly:
    """An array that speaks DLPack only (as a JAX array does)."""

    def __init__(self, x):
        self.x = x

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)


def test_dlpack_only_host_objects(emulator):
    """Host memory through DLPack: refused by the operations on every
    backend (numpy.from_dlpack says how), copied by to_device."""
    x = rand(50, seed=18)
    for call in (gpuprims.sum, gpuprims.cumsum):
        with pytest.raises(TypeError, match=r"numpy\.from_dlpack"):
            call(_DLPackOnly(x))
    d = gpuprims.to_device(_DLPackOnly(x))
    assert d.ptr != x.__array_interface__["data"][0] and np.array_equal(d.get(), x)


def test_emulator_refuses_gpu_dlpack_before_export(emulator):
    class OnGPU:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("exported although the emulator cannot read it")

    for call in (gpuprims.from_dlpack, gpuprims.sum, gpuprims.to_device):
        with pytest.raises(TypeError, match="emulator"):
            call(OnGPU())
    with pytest.raises(TypeError, match="__dlpack__"):
        gpuprims.from_dlpack([1.0, 2.0])

    class NoDevice:
        def __dlpack__(self, **kwargs):
            raise AssertionError("exported although its device is unknown")

    with pytest.raises(TypeError, match="__dlpack_device__"):
        gpuprims.from_dlpack(NoDevice())


def test_unsupported_dlpack_dtype_is_refused_and_released(emulator):
    owner = rand(4, seed=19)
    before = sys.getrefcount(owner)
    ptr = owner.__array_interface__["data"][0]
    # a bfloat16 tensor (DLPack code 4): no NumPy dtype
    capsule = gpuprims._core.dlpack_export(owner, ptr, (4,), 4, 16, 1, 0, True, 0)
    assert sys.getrefcount(owner) == before + 1
    with pytest.raises(TypeError, match="code 4"):
        gpuprims.from_dlpack(_Exporter(capsule))
    gc.collect()
    assert sys.getrefcount(owner) == before  # consumed, then the deleter ran


# ---------------------------------------------------------- DLPack on a GPU

@gpu
def test_cuda_dlpack_device_and_host_export(cuda):
    x = rand((30, 7), seed=20)
    d = gpuprims.to_device(x)
    kind, dev = d.__dlpack_device__()
    assert kind == 2 and dev == gpuprims.device_info()["device"]
    for stream in (None, -1, 1, 2):
        d.__dlpack__(stream=stream)
    with pytest.raises(ValueError):
        d.__dlpack__(stream=0)
    y = np.from_dlpack(d, device="cpu")  # a host copy (dl_device=(kDLCPU, 0))
    assert np.array_equal(y, x)
    with pytest.raises(BufferError):
        np.from_dlpack(d, device="cpu", copy=False)
    with pytest.raises(TypeError, match=r"to_device\(numpy\.from_dlpack"):
        gpuprims.from_dlpack(x)
    with pytest.raises(TypeError, match=r"numpy\.from_dlpack"):
        gpuprims.sum(_DLPackOnly(x))
    back = gpuprims.from_dlpack(d)
    assert back.ptr == d.ptr and np.array_equal(back.get(), x)


@gpu
def test_cupy_exchange(cuda):
    cupy = pytest.importorskip("cupy")
    x = rand((300, 17), "float32", seed=21)
    d = gpuprims.to_device(x)
    c = cupy.from_dlpack(d)
    assert c.data.ptr == d.ptr and np.array_equal(cupy.asnumpy(c), x)
    alive = weakref.ref(d)
    del d
    gc.collect()
    assert alive() is not None  # CuPy holds it through the capsule
    del c
    gc.collect()
    assert alive() is None

    a = cupy.asarray(rand((64, 40), "float64", seed=22))
    a0 = cupy.asnumpy(a)
    g = gpuprims.from_dlpack(a)
    assert g.ptr == a.data.ptr and np.array_equal(g.get(), a0)
    s = gpuprims.from_dlpack(a[:, ::3])
    assert np.array_equal(s.get(), a0[:, ::3])
    only = _DLPackOnly(a)  # a DLPack-only GPU array: taken in place
    assert np.isclose(gpuprims.sum(only), a0.sum())
    assert np.allclose(gpuprims.cumsum(_DLPackOnly(a[::2, 1::2])).get(), np.cumsum(a0[::2, 1::2]))
    assert np.array_equal(gpuprims.transpose(only).get(), a0.T)
    assert np.array_equal(cupy.asnumpy(a), a0)


@gpu
def test_torch_exchange(cuda):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    x = rand((129, 5), "float32", seed=23)
    d = gpuprims.to_device(x)
    t = torch.from_dlpack(d)
    assert t.is_cuda and t.data_ptr() == d.ptr and np.array_equal(t.cpu().numpy(), x)
    u = torch.from_numpy(rand((50, 8), "float64", seed=24)).cuda()
    u0 = u.cpu().numpy()
    g = gpuprims.from_dlpack(u)
    assert g.ptr == u.data_ptr() and np.array_equal(g.get(), u0)
    assert np.array_equal(gpuprims.from_dlpack(u.t()).get(), u0.T)
    assert np.isclose(gpuprims.sum(_DLPackOnly(u)), u0.sum())
    assert np.array_equal(u.cpu().numpy(), u0)
