"""Reduction: every registered variant against NumPy.

Runs everywhere: the registry, argument validation and error paths, and the
host variant (`cpu`).  Needs a GPU (skipped with the reason elsewhere): the
device variants, determinism, device inputs, the >2^31 case (--runslow).
"""
import functools

import numpy as np
import pytest

import gpuprims
from gpuprims._numerics import exact_sum, sum_tolerance

from conftest import GPU_OK, device_cases, gpuless_cuda_backend, need, random_array, read_only_cases

VARIANTS = gpuprims.variants("reduce")
# The 1-D rows; the rows for an axis or segments (batched, segmented) have
# their own tests (test_reduce_batched.py): given one long problem, some of
# them run it on one thread or one warp, by design.
DEVICE = [v.name for v in VARIANTS if v.where == "device" and not (v.batched or v.segmented)]
BY_NAME = {v.name: v for v in VARIANTS}
HOST = [v.name for v in VARIANTS if v.where == "host"]
SIZES = [1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097, 2**17 + 1, 2**20 + 3, 2**24]
DTYPES = ["int32", "int64", "float32", "float64"]
OPS = ["sum", "min", "max"]
NUMPY = {"sum": np.sum, "min": np.min, "max": np.max}
gpu = pytest.mark.gpu


host_case = read_only_cases()
device_case = device_cases(host_case)


_EXACT = {}  # id(x) -> (x, exact sum); holding x keeps its id its own


def exact(x):
    """exact_sum(x), remembered for large arrays (math.fsum of 2^24 floats
    takes seconds and the same cached input meets every variant)."""
    hit = _EXACT.get(id(x))
    if hit is not None and hit[0] is x:
        return hit[1]
    value = exact_sum(x)
    if x.size >= 2**16:
        _EXACT[id(x)] = (x, value)
    return value


def check_result(op, x, got, dtype=None):
    """got must have numpy's result dtype and value; float sums within the
    rounding bound of conftest.sum_tolerance, everything else exactly."""
    want = NUMPY[op](x, dtype=dtype) if op == "sum" else NUMPY[op](x)
    if dtype is not None and op != "sum":
        want = want.astype(dtype)
    assert isinstance(got, np.generic), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if op == "sum" and want.dtype.kind == "f":
        ref = exact(x)
        tol = sum_tolerance(x, want.dtype, ref)
        assert abs(float(got) - ref) <= tol, (float(got), ref, tol)
    else:
        assert got == want, (got, want)


# ------------------------------------------------------------- registry

def test_registry_holds_the_journey_in_order():
    # The names the reduction issue asks for, in journey order.
    assert [v.name for v in VARIANTS] == [
        "neighbored", "neighbored_less", "interleaved", "unroll2", "unroll4", "unroll8",
        "unroll_warp8", "complete_unroll_warp8", "complete_unroll_template", "warp_shuffle",
        "single_pass", "batched_thread", "segmented_block", "segmented_warp", "segmented_subwarp",
        "segmented_split", "batched_columns", "segmented_adaptive", "single_pass_reproducible",
        "segmented_reproducible", "segmented_flat", "cub", "cub_segmented", "cub_reproducible", "cpu",
    ]


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.name)
def test_registry_rows_are_complete(v):
    assert v.family == "reduce"
    assert v.name.isidentifier() and v.name == v.name.lower()
    assert v.title and v.source and len(v.description) > 40
    assert v.where in ("device", "host")
    assert all(isinstance(k, str) and isinstance(val, int) for k, val in v.limits.items())


def test_auto_is_a_registered_general_variant():
    from gpuprims._registry import lookup
    v = lookup("reduce", "auto")
    assert v.auto and v.name == "single_pass" and v.max_n is None and v.where == "device"


def test_unknown_family():
    with pytest.raises(ValueError, match="unknown family"):
        gpuprims.variants("sort")


# ---------------------------------------------------- the host variant

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_cpu_variant_matches_numpy(op, dtype, n):
    x = host_case(n, dtype)
    check_result(op, x, gpuprims.reduce(x, op, variant="cpu"))


def test_cpu_variant_sum_of_empty_is_zero():
    for dtype in DTYPES:
        got = gpuprims.sum(np.empty(0, dtype), variant="cpu")
        assert got == 0 and got.dtype == np.sum(np.empty(0, dtype)).dtype


@pytest.mark.parametrize("dtype,acc", [("int32", "int32"), ("float32", "float64"),
                                       ("int64", "float64"), ("float64", "float32")])
def test_cpu_variant_dtype_override(dtype, acc):
    x = host_case(4097, dtype)
    check_result("sum", x, gpuprims.sum(x, variant="cpu", dtype=acc), dtype=acc)


def test_cpu_variant_int32_sum_wraps_like_numpy():
    x = np.full(3, 2**30 + 7, dtype=np.int32)
    assert gpuprims.sum(x, variant="cpu", dtype=np.int32) == np.sum(x, dtype=np.int32)
    assert gpuprims.sum(x, variant="cpu") == np.sum(x)  # int64: no wrap


def test_cpu_variant_noncontiguous_and_2d():
    base = random_array(3 * 4099, "float64").reshape(3, 4099)
    for x in (base[:, ::3], base.T, base[::-1]):
        check_result("sum", x, gpuprims.sum(x, variant="cpu"))
        check_result("max", x, gpuprims.max(x, variant="cpu"))


@pytest.mark.parametrize("op", ["min", "max"])
def test_cpu_variant_nan_propagates_like_numpy(op):
    x = random_array(1000, "float32")
    x[517] = np.nan
    assert np.isnan(gpuprims.reduce(x, op, variant="cpu")) and np.isnan(NUMPY[op](x))


# ------------------------------------------------ validation and errors
# These run before any CUDA work, so they pass the same with or without a GPU.

BAD_OBJECTS = [None, "abc", b"abc", {"a": 1}, object(), 3.5]


@pytest.mark.parametrize("bad", BAD_OBJECTS, ids=lambda b: type(b).__name__)
def test_unsupported_objects_raise_typeerror(bad):
    with pytest.raises(TypeError, match="NumPy array or a device array"):
        gpuprims.sum(bad)


@pytest.mark.parametrize("dtype", ["U3", "O", "S2", "datetime64[s]", "timedelta64[s]", "V4"])
def test_unsupported_dtypes_raise_typeerror(dtype):
    x = np.array(["a", "b"], dtype=dtype) if dtype in ("U3", "O", "S2") else np.zeros(5, dtype=dtype)
    with pytest.raises(TypeError, match="does not support dtype .*convert first"):
        gpuprims.sum(x)


def test_string_list_raises_typeerror():
    with pytest.raises(TypeError, match="does not support dtype"):
        gpuprims.max(["a", "b"])


def test_zero_d_reduces_like_numpy():
    for x in (np.array(3.5), np.float64(-2.25), np.array(7, np.int16)):
        for op in ("sum", "min", "max"):
            got = gpuprims.reduce(x, op)
            want = NUMPY[op](x)
            assert got == want and np.asarray(got).dtype == np.asarray(want).dtype


def test_unknown_op_raises_valueerror():
    with pytest.raises(ValueError, match="unknown op 'prod'; choose one of: sum, min, max"):
        gpuprims.reduce(np.ones(3, np.float32), "prod")


def test_unknown_variant_raises_valueerror_listing_the_names():
    with pytest.raises(ValueError, match="unknown reduce variant 'fastest'.*auto.*neighbored"):
        gpuprims.sum(np.ones(3, np.float32), variant="fastest")
    with pytest.raises(TypeError, match="variant must be a string"):
        gpuprims.sum(np.ones(3, np.float32), variant=3)
    fake = gpuprims.DeviceArray((3,), np.float32, _ptr=256)  # never dereferenced: the checks fail first
    with pytest.raises(TypeError, match="variant must be a string"):
        gpuprims.sum(fake, variant=["auto"])
    with pytest.raises(ValueError, match="unknown op"):
        gpuprims.reduce(fake, ["sum"])


def test_unsupported_result_dtype_raises_typeerror():
    with pytest.raises(TypeError, match="dtype=bool is not supported"):
        gpuprims.sum(np.ones(3, np.float32), dtype=np.bool_)
    with pytest.raises(TypeError, match="dtype=<U2 is not supported"):
        gpuprims.sum(np.ones(3, np.float32), dtype="U2")
    with pytest.raises(TypeError, match="min keeps the input's dtype"):
        gpuprims.reduce(np.ones(3, np.float32), "min", dtype=np.float64)


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("variant", ["auto", "cpu"])
def test_min_max_of_empty_raise_like_numpy(op, variant):
    with pytest.raises(ValueError, match="zero-size array to reduction operation"):
        gpuprims.reduce(np.empty(0, np.float32), op, variant=variant)
    with pytest.raises(ValueError):
        NUMPY[op](np.empty(0, np.float32))


def test_limit_check_names_the_limit_and_a_variant_without_it():
    # No reduction variant declares a limit; the core's one check, which
    # every family shares, is exercised on a limited scan step without a
    # multi-block form (so the error names the auto variant).
    naive = next(v for v in gpuprims.variants("scan") if v.name == "naive")
    assert naive.max_n is not None and naive.instead is None
    gpuprims.cumsum(np.ones(naive.max_n, np.float32), variant="naive")
    with pytest.raises(ValueError, match=rf"scan variant 'naive' handles at most max_n = {naive.max_n} "
                                         rf"elements, got {naive.max_n + 1}; use variant='auto' "
                                         rf"\(decoupled_lookback\), which has no such limit"):
        gpuprims.cumsum(np.ones(naive.max_n + 1, np.float32), variant="naive")


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU error; a GPU is visible here")
def test_without_gpu_device_variants_raise_nodeviceerror():
    x = random_array(100, "float32")
    with pytest.raises(gpuprims.NoDeviceError) as info:
        gpuprims.set_backend("cuda")
    assert gpuprims.backend() == "emulator"
    if "cuda" not in gpuprims.backends():  # built without nvcc
        assert "built without CUDA" in str(info.value)
        return
    with gpuless_cuda_backend():
        with pytest.raises(gpuprims.NoDeviceError, match="no CUDA GPU is visible") as info:
            gpuprims.sum(x)
        assert "\n" not in str(info.value)
        assert isinstance(info.value, gpuprims.CudaError) and isinstance(info.value, RuntimeError)
        with pytest.raises(gpuprims.NoDeviceError):
            gpuprims.device_info()
    assert gpuprims.gpu_available() is False


# ------------------------------------------------------ device variants

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("variant", DEVICE)
def test_device_variant_matches_numpy(backend, variant, op, dtype, n):
    need(backend, BY_NAME[variant], n)
    x = host_case(n, dtype)
    got = gpuprims.reduce(device_case(n, dtype), op, variant=variant)
    check_result(op, x, got)


@pytest.mark.parametrize("variant", DEVICE)
def test_numpy_input_is_uploaded_and_unmodified(backend, variant):
    need(backend, BY_NAME[variant])
    x = random_array(4097, "float32")
    before = x.copy()
    check_result("sum", x, gpuprims.sum(x, variant=variant))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("variant", DEVICE)
def test_device_input_is_unmodified(backend, variant):
    need(backend, BY_NAME[variant], 2**20 + 3)
    x = random_array(2**20 + 3, "int32")
    d = gpuprims.to_device(x)
    for op in OPS:
        check_result(op, x, gpuprims.reduce(d, op, variant=variant))
    np.testing.assert_array_equal(d.get(), x)


@pytest.mark.parametrize("variant", DEVICE)
def test_deterministic_over_ten_runs(backend, variant):
    need(backend, BY_NAME[variant], 2**20 + 3)
    x = device_case(2**20 + 3, "float32")
    bits = {gpuprims.sum(x, variant=variant).tobytes() for _ in range(10)}
    assert len(bits) == 1, bits


@pytest.mark.parametrize("variant", DEVICE)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_of_empty_device_array_is_zero(backend, variant, dtype):
    need(backend, BY_NAME[variant])
    got = gpuprims.sum(gpuprims.to_device(np.empty(0, dtype)), variant=variant)
    assert got == 0 and got.dtype == np.sum(np.empty(0, dtype)).dtype


@pytest.mark.parametrize("variant", DEVICE)
@pytest.mark.parametrize("dtype,acc", [("int32", "int32"), ("float32", "float64"),
                                       ("int64", "float64"), ("float64", "float32"),
                                       ("int32", "float32")])
def test_device_dtype_override(backend, variant, dtype, acc):
    need(backend, BY_NAME[variant])
    x = host_case(4097, dtype)
    check_result("sum", x, gpuprims.sum(device_case(4097, dtype), variant=variant, dtype=acc), dtype=acc)


@pytest.mark.parametrize("variant", DEVICE)
@pytest.mark.parametrize("offset", [1, 2, 3])
def test_unaligned_device_view(backend, variant, offset):
    need(backend, BY_NAME[variant])
    # A view starting 4, 8 or 12 bytes past a 16-byte boundary, as x[1:]
    # of a CuPy or PyTorch array would: the vector loads must not assume it.
    x = random_array(4100, "float32")
    d = gpuprims.to_device(x)
    view = gpuprims.DeviceArray((4100 - offset,), np.float32, _ptr=d.ptr + 4 * offset, _owner=d)
    check_result("sum", x[offset:], gpuprims.sum(view, variant=variant))
    check_result("min", x[offset:], gpuprims.min(view, variant=variant))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("variant", DEVICE)
def test_nan_propagates_like_numpy(backend, variant, op):
    need(backend, BY_NAME[variant])
    x = random_array(5000, "float64")
    x[4321] = np.nan
    assert np.isnan(gpuprims.reduce(x, op, variant=variant))


def test_noncontiguous_and_2d_input(backend):
    base = random_array(3 * 4099, "float32").reshape(3, 4099)
    for x in (base[:, ::3], base.T, base[::-1]):
        check_result("sum", x, gpuprims.sum(x))
        check_result("min", x, gpuprims.min(x))


def test_device_array_basics(backend):
    x = random_array(1000, "int64").reshape(10, 100)
    d = gpuprims.to_device(x)
    assert d.shape == (10, 100) and d.dtype == np.int64 and d.nbytes == x.nbytes and len(d) == 10
    np.testing.assert_array_equal(d.get(), x)
    assert d.backend == backend
    if backend == "emulator":  # host memory: not handed to CUDA libraries
        assert not hasattr(d, "__cuda_array_interface__")
        assert gpuprims.to_device(d) is d
        return
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (10, 100) and cai["typestr"] == "<i8"
    assert cai["data"][0] == d.ptr and cai["strides"] is None
    assert gpuprims.to_device(d) is d
    np.testing.assert_array_equal(gpuprims.to_device(x.T).get(), x.T)


@gpu
def test_device_memory_is_freed_when_the_array_goes():
    total = gpuprims.device_info()["total_memory"]
    chunk = 1 << 32  # 4 GiB at a time: more than the GPU holds, unless each is freed
    for _ in range(total // chunk + 4):
        d = gpuprims.DeviceArray((chunk // 4,), np.float32)
        assert d.nbytes == chunk
        del d


@gpu
def test_device_info():
    info = gpuprims.device_info()
    assert info["multiprocessors"] > 0 and info["total_memory"] > 0 and info["name"]


@gpu
def test_cupy_input_used_in_place():
    cp = pytest.importorskip("cupy")
    x = random_array(2**20 + 3, "float32")
    c = cp.asarray(x)
    check_result("sum", x, gpuprims.sum(c))
    check_result("max", x[5:], gpuprims.max(c[5:]))
    check_result("sum", x[::2], gpuprims.sum(c[::2]))  # strided: gathered first
    np.testing.assert_array_equal(cp.asnumpy(c), x)
    back = cp.asarray(gpuprims.to_device(x))  # DeviceArray into CuPy, no copy
    np.testing.assert_array_equal(cp.asnumpy(back), x)


@gpu
def test_torch_input_used_in_place():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    x = random_array(4097, "int32")
    t = torch.as_tensor(x, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # a tensor whose interface names a stream
        t2 = t * 1
        check_result("sum", x, gpuprims.sum(t2))
    check_result("min", x, gpuprims.min(t))
    assert torch.equal(t.cpu(), torch.as_tensor(x))


@gpu
@pytest.mark.slow
@pytest.mark.parametrize("variant", DEVICE)
def test_over_two_to_the_31_elements(variant):
    need("cuda", BY_NAME[variant])
    x = big_case()
    d = big_device_case()
    assert gpuprims.sum(d, variant=variant) == big_sum()
    assert gpuprims.max(d, variant=variant) == x.max()


@functools.lru_cache(maxsize=None)
def big_case():
    n = 2**31 + 17
    x = np.random.default_rng(31).integers(-100, 100, size=n, dtype=np.int8).astype(np.int32)
    x[-1] = 101  # the maximum sits at the very end
    return x


@functools.lru_cache(maxsize=None)
def big_device_case():
    return gpuprims.to_device(big_case())


@functools.lru_cache(maxsize=None)
def big_sum():
    return np.sum(big_case(), dtype=np.int64)
