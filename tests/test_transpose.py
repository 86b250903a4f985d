"""Transpose: every registered variant against numpy.transpose.

Runs everywhere: the registry, validation and errors, the host variant.
Needs a GPU: the device variants (exact equality), device inputs.
"""
import functools

import numpy as np
import pytest

import gpuprims

from conftest import EMU_MAX_TRANSPOSE, GPU_OK, device_cases, gpuless_cuda_backend, need

VARIANTS = gpuprims.variants("transpose")
DEVICE = [v for v in VARIANTS if v.where == "device"]
BY_NAME = {v.name: v for v in VARIANTS}
SHAPES = [(1, 1), (1, 7), (7, 1), (31, 33), (32, 32), (33, 31), (64, 64), (1000, 1),
          (1025, 4097), (4000, 6000), (8191, 8193)]
DTYPES = ["int8", "float16", "float32", "int64", "float64", "complex128"]
gpu = pytest.mark.gpu


@functools.lru_cache(maxsize=None)
def host_case(shape, dtype):
    """Random, never zeros, every element distinct where the dtype allows:
    a misplaced element shows."""
    rng = np.random.default_rng(shape[0] * 100003 + shape[1])
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        x = (rng.standard_normal(shape) * 1000).astype(dtype)
    x.setflags(write=False)
    return x


@functools.lru_cache(maxsize=None)
def expected(shape, dtype):
    return np.ascontiguousarray(host_case(shape, dtype).T)


device_case = device_cases(host_case)


def within_limits(v, shape, dtype):
    n = shape[0] * shape[1]
    return (v.max_n is None or n <= v.max_n) and (v.dtypes is None or dtype in v.dtypes)


def cases():
    for v in DEVICE:
        for dtype in DTYPES:
            for shape in SHAPES:
                if within_limits(v, shape, dtype):
                    yield pytest.param(v.name, dtype, shape, id=f"{v.name}-{dtype}-{shape[0]}x{shape[1]}")


# ------------------------------------------------------------- registry

def test_registry_holds_the_journey_in_order():
    # The names the transpose issue asks for, in journey order.
    assert [v.name for v in VARIANTS] == [
        "serial", "per_row", "per_element", "tiled", "tiled_padded", "tiled_coarsened",
        "tiled_wide", "nd_naive", "nd_tiled", "copy", "cublas", "cpu",
    ]
    from gpuprims._registry import lookup
    assert lookup("transpose", "auto").name == "nd_tiled"
    # the 2-D journey and its baselines take matrices; the N-D steps any rank
    assert [v.name for v in VARIANTS if not v.matrix] == ["nd_naive", "nd_tiled", "copy"]


def test_slow_variants_declare_their_limits():
    limits = {v.name: v.max_n for v in VARIANTS}
    assert limits["serial"] is not None and limits["per_row"] is not None
    assert limits["tiled_wide"] is None


# ---------------------------------------------------- the host variant

@pytest.mark.parametrize("dtype", DTYPES + ["bool", "complex64", "uint16"])
@pytest.mark.parametrize("shape", SHAPES[:9])
def test_cpu_variant_matches_numpy(shape, dtype):
    x = host_case(shape, dtype) if dtype in DTYPES else host_case(shape, "int64").astype(dtype)
    got = gpuprims.transpose(x, variant="cpu")
    assert got.shape == (shape[1], shape[0]) and got.dtype == x.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, x.T)


def test_cpu_variant_noncontiguous_input_unmodified():
    base = host_case((64, 64), "float32")
    for x in (base[::2, 1::3], base.T, base[::-1, ::-1]):
        before = x.copy()
        np.testing.assert_array_equal(gpuprims.transpose(x, variant="cpu"), x.T)
        np.testing.assert_array_equal(x, before)


# ------------------------------------------------ validation and errors

@pytest.mark.parametrize("variant", [v.name for v in VARIANTS if v.matrix and v.name != "cublas"])
def test_matrix_variants_refuse_nd_work_naming_one_that_takes_it(variant):
    x = host_case((6, 20), "float32").reshape(2, 3, 4, 5)
    with pytest.raises(ValueError, match=rf"variant '{variant}' takes matrices.*4 axes.*variant='nd_tiled'"):
        gpuprims.transpose(x, (1, 0, 3, 2), variant=variant)
    # a plan that fuses to a matrix transpose is 2-D work: (2*3, 4*5) -> (4*5, 2*3)
    np.testing.assert_array_equal(gpuprims.transpose(x, (2, 3, 0, 1), variant="cpu"), x.transpose(2, 3, 0, 1))


@pytest.mark.parametrize("dtype", ["clongdouble", "O", "U3", "V8"])
def test_unsupported_element_raises_typeerror(dtype):
    x = np.zeros((3, 3), dtype=dtype) if dtype != "O" else np.array([[None, 1], [2, 3]], dtype=object)
    with pytest.raises(TypeError, match="does not support dtype"):
        gpuprims.transpose(x)


@pytest.mark.parametrize("bad", [None, "abc", 3, {"a": 1}], ids=lambda b: type(b).__name__)
def test_unsupported_objects_raise_typeerror(bad):
    with pytest.raises(TypeError, match="NumPy array or a device array"):
        gpuprims.transpose(bad)


def test_unknown_variant_raises_valueerror():
    with pytest.raises(ValueError, match="unknown transpose variant 'fast'.*tiled_wide"):
        gpuprims.transpose(np.ones((2, 2)), variant="fast")


def test_over_the_limit_names_it_and_a_variant_without_it():
    serial = next(v for v in VARIANTS if v.name == "serial")
    x = np.ones((serial.max_n // 1000 + 1, 1000), np.float32)
    with pytest.raises(ValueError, match=rf"at most max_n = {serial.max_n}.*variant='auto' \(nd_tiled\)"):
        gpuprims.transpose(x, variant="serial")


def test_cublas_refuses_non_floats_naming_an_alternative():
    with pytest.raises(TypeError, match="takes only float32, float64, not int32.*variant='auto'"):
        gpuprims.transpose(np.ones((4, 4), np.int32), variant="cublas")


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU error; a GPU is visible here")
@pytest.mark.skipif("cuda" not in gpuprims.backends(), reason="built without CUDA: no cuda backend")
def test_without_gpu_device_variants_raise_nodeviceerror():
    with gpuless_cuda_backend():
        with pytest.raises(gpuprims.NoDeviceError, match="no CUDA GPU is visible"):
            gpuprims.transpose(np.ones((4, 4), np.float32))


# ------------------------------------------------------ device variants

@pytest.mark.parametrize("variant,dtype,shape", list(cases()))
def test_device_variant_matches_numpy(backend, variant, dtype, shape):
    need(backend, BY_NAME[variant], shape[0] * shape[1], EMU_MAX_TRANSPOSE)
    x = host_case(shape, dtype)
    got = gpuprims.transpose(device_case(shape, dtype), variant=variant)
    assert isinstance(got, gpuprims.DeviceArray) and got.dtype == x.dtype
    if variant == "copy":  # the roof copies, it does not transpose
        assert got.shape == shape
        np.testing.assert_array_equal(got.get(), x)
    else:
        assert got.shape == (shape[1], shape[0])
        np.testing.assert_array_equal(got.get(), expected(shape, dtype))


@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.name != "copy"])
def test_numpy_in_numpy_out_input_unmodified(backend, variant):
    need(backend, BY_NAME[variant])
    x = host_case((33, 31), "float32")[::-1]  # non-contiguous: made contiguous first
    before = x.copy()
    got = gpuprims.transpose(x, variant=variant)
    assert isinstance(got, np.ndarray) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, x.T)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.name != "copy"
                                     and within_limits(v, (1025, 4097), "float32")])
def test_device_input_unmodified(backend, variant):
    need(backend, BY_NAME[variant], 1025 * 4097, EMU_MAX_TRANSPOSE)
    d = device_case((1025, 4097), "float32")
    gpuprims.transpose(d, variant=variant)
    np.testing.assert_array_equal(d.get(), host_case((1025, 4097), "float32"))


@gpu
def test_cupy_and_torch_inputs():
    x = host_case((1025, 4097), "float32")
    cp = pytest.importorskip("cupy")
    c = cp.asarray(x)
    np.testing.assert_array_equal(gpuprims.transpose(c).get(), x.T)
    np.testing.assert_array_equal(gpuprims.transpose(c[:, 1:]).get(), x[:, 1:].T)
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(x.copy(), device="cuda")  # a writable copy: torch warns on read-only arrays
    out = torch.as_tensor(gpuprims.transpose(t), device="cuda")
    assert torch.equal(out, t.T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_wide_path_and_its_fallback(backend, dtype):
    # tiled_wide moves 16-byte vectors when rows, columns and pointers allow;
    # a view starting one element in (unaligned) and odd shapes take the
    # scalar path.  Both must give numpy's answer.
    x = host_case((64, 64), dtype)
    np.testing.assert_array_equal(gpuprims.transpose(x).T, x)
    flat = gpuprims.to_device(host_case((1, 4097), dtype))
    view = gpuprims.DeviceArray((64, 64), x.dtype, _ptr=flat.ptr + x.itemsize, _owner=flat)
    want = host_case((1, 4097), dtype)[0, 1:4097].reshape(64, 64)
    np.testing.assert_array_equal(gpuprims.transpose(view).get(), want.T)
    y = host_case((33, 31), dtype)
    np.testing.assert_array_equal(gpuprims.transpose(y), y.T)
