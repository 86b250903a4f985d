"""Scan: every registered variant against numpy.cumsum / minimum.accumulate /
maximum.accumulate (inclusive) and their shifted forms (exclusive).

Runs everywhere: the registry, validation and errors, the host variant.
Needs a GPU: the device variants, determinism, device inputs, >2^31 (slow).
"""
import functools
import threading

import numpy as np
import pytest

import gpuprims

from gpuprims._numerics import identity, scan_reference, scan_tolerance

from conftest import GPU_OK, device_cases, gpuless_cuda_backend, need, random_array, read_only_cases

VARIANTS = gpuprims.variants("scan")
# The 1-D journey's device rows.  The batched and segmented rows also take a
# call without a layout (one problem), but scan it with one thread, warp or
# block where that is their mapping: tests/test_scan_batched.py covers them.
DEVICE = [v for v in VARIANTS if v.where == "device" and not (v.batched or v.segmented)]
BY_NAME = {v.name: v for v in VARIANTS}
SIZES = [0, 1, 2, 31, 32, 33, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4097, 2**17 + 1,
         2**20 + 7, 2**24]
DTYPES = ["int32", "int64", "float32", "float64"]
OPS = ["sum", "min", "max"]
ACCUMULATE = {"sum": np.add, "min": np.minimum, "max": np.maximum}
gpu = pytest.mark.gpu


host_case = read_only_cases(seed=4)
device_case = device_cases(host_case)


def expected(x, op, inclusive, acc):
    """numpy's scan in the result dtype, shifted for exclusive."""
    inc = ACCUMULATE[op].accumulate(x.ravel().astype(acc))
    if inclusive or x.size == 0:
        return inc
    return np.concatenate([[identity(op, acc)], inc[:-1]]).astype(acc)


def check(x, got, op, inclusive, variant, dtype=None):
    acc = np.cumsum(x[:0], dtype=dtype).dtype if op == "sum" else np.dtype(dtype or x.dtype)
    assert got.dtype == acc and got.shape == (x.size,), (got.dtype, got.shape)
    if op != "sum" or acc.kind == "i":
        np.testing.assert_array_equal(got, expected(x, op, inclusive, acc))
        return
    # Float sums: per element, the prefix error bound of
    # gpuprims._numerics.scan_tolerance, against a wider reference.
    ref, bound = scan_reference(x, inclusive, acc)
    tol = scan_tolerance(x.size, acc, ref, bound)
    err = np.abs(got.astype(ref.dtype) - ref)
    bad = np.nonzero(err > tol)[0]
    assert bad.size == 0, (bad[:5], got[bad[:5]], ref[bad[:5]], tol[bad[:5]])


def within(v, n):
    return v.max_n is None or n <= v.max_n


def device_cases():
    for v in DEVICE:
        for n in SIZES:
            if within(v, n):
                yield pytest.param(v.name, n, id=f"{v.name}-{n}")


# ------------------------------------------------------------- registry

def test_registry_holds_the_journey_in_order():
    # The names the scan issue asks for, in journey order.
    assert [v.name for v in VARIANTS] == [
        "naive", "hillis_steele", "hillis_steele_double_buffer", "blelloch", "blelloch_padded",
        "hillis_steele_multiblock", "blelloch_multiblock", "warp_shuffle", "decoupled_lookback",
        # the batched and segmented journey (tests/test_scan_batched.py)
        "batched_thread", "segmented_warp", "segmented_block", "segmented_lookback", "batched_columns",
        "segmented_adaptive",
        # the reproducible rows (tests/test_determinism.py)
        "decoupled_lookback_reproducible", "segmented_reproducible",
        "cub", "cub_deterministic", "cpu",
    ]
    from gpuprims._registry import lookup
    assert lookup("scan", "auto").name == "decoupled_lookback"


def test_single_block_variants_declare_one_block():
    limits = {v.name: v.max_n for v in VARIANTS}
    assert limits["hillis_steele"] == limits["hillis_steele_double_buffer"] == 1024
    assert limits["blelloch"] == limits["blelloch_padded"] == 2048
    assert limits["naive"] is not None
    for name in ("hillis_steele_multiblock", "blelloch_multiblock", "warp_shuffle", "decoupled_lookback"):
        assert limits[name] is None


# ---------------------------------------------------- the host variant

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("inclusive", [True, False])
def test_cpu_variant_matches_numpy(op, dtype, n, inclusive):
    x = host_case(n, dtype)
    check(x, gpuprims.scan(x, op, inclusive=inclusive, variant="cpu"), op, inclusive, "cpu")


def test_cumsum_is_numpy_cumsum_on_the_host_reference():
    x = host_case(4097, "int32")
    got = gpuprims.cumsum(x, variant="cpu")
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert got.dtype == np.cumsum(x).dtype == np.int64
    assert gpuprims.cumsum(x, variant="cpu", dtype=np.int32).dtype == np.int32


def test_cpu_variant_2d_and_noncontiguous_flatten_like_numpy():
    base = random_array(3 * 4099, "float64").reshape(3, 4099)
    for x in (base, base[:, ::3], base.T):
        check(np.ascontiguousarray(x), gpuprims.cumsum(x, variant="cpu"), "sum", True, "cpu")


# ------------------------------------------------ validation and errors

def test_over_a_single_block_names_the_limit_and_the_multiblock_variant():
    x = np.ones(1025, np.float32)
    with pytest.raises(ValueError, match=r"at most max_n = 1024.*'hillis_steele_multiblock'"):
        gpuprims.cumsum(x, variant="hillis_steele")
    with pytest.raises(ValueError, match=r"max_n = 1024.*'hillis_steele_multiblock'"):
        gpuprims.cumsum(x, variant="hillis_steele_double_buffer")
    with pytest.raises(ValueError, match=r"at most max_n = 2048.*'blelloch_multiblock'"):
        gpuprims.cumsum(np.ones(2049, np.float32), variant="blelloch_padded")
    with pytest.raises(ValueError, match=r"max_n = 65536.*variant='auto'"):
        gpuprims.cumsum(np.ones(65537, np.float32), variant="naive")


@pytest.mark.parametrize("bad", [None, "abc", {"a": 1}, object()], ids=lambda b: type(b).__name__)
def test_unsupported_objects_raise_typeerror(bad):
    with pytest.raises(TypeError, match="NumPy array or a device array"):
        gpuprims.cumsum(bad)


@pytest.mark.parametrize("dtype", ["O", "U2", "datetime64[s]"])
def test_unsupported_dtypes_raise_typeerror(dtype):
    with pytest.raises(TypeError, match="does not support dtype"):
        gpuprims.scan(np.ones(4, dtype=dtype))


def test_bad_op_variant_and_shape():
    with pytest.raises(ValueError, match="unknown op 'prod'"):
        gpuprims.scan(np.ones(4, np.float32), "prod")
    with pytest.raises(ValueError, match="unknown scan variant 'sklansky'"):
        gpuprims.scan(np.ones(4, np.float32), variant="sklansky")
    with pytest.raises(TypeError, match="dtype=bool is not supported"):
        gpuprims.cumsum(np.ones(4, np.float32), dtype=np.bool_)


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU error; a GPU is visible here")
@pytest.mark.skipif("cuda" not in gpuprims.backends(), reason="built without CUDA: no cuda backend")
def test_without_gpu_device_variants_raise_nodeviceerror():
    with gpuless_cuda_backend():
        with pytest.raises(gpuprims.NoDeviceError, match="no CUDA GPU is visible"):
            gpuprims.cumsum(np.ones(4, np.float32))


# ------------------------------------------------------ device variants

@pytest.mark.parametrize("variant,n", list(device_cases()))
def test_device_variant_matches_numpy(backend, variant, n):
    need(backend, BY_NAME[variant], n)
    for dtype in DTYPES:
        x = host_case(n, dtype)
        d = device_case(n, dtype)
        for op in OPS:
            for inclusive in (True, False):
                got = gpuprims.scan(d, op, inclusive=inclusive, variant=variant)
                assert isinstance(got, gpuprims.DeviceArray)
                check(x, got.get(), op, inclusive, variant)


# cub is left out: cub::DeviceScan's look-back combines whichever prefixes are
# published when it looks, so float sums differ run to run (seen on an H200:
# 10 different results in 10 runs).  Its results are checked against numpy
# like every other variant's.
@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.name != "cub"])
def test_deterministic_over_ten_runs_and_input_unmodified(backend, variant):
    need(backend, BY_NAME[variant])
    n = min(2**20 + 7, next(v for v in DEVICE if v.name == variant).max_n or 2**20 + 7)
    if backend == "emulator":  # a multi-tile size within the emulator's budget
        n = min(n, 3 * 8192 + 7)
    x = host_case(n, "float32")
    before = x.copy()
    d = gpuprims.to_device(x)
    runs = {gpuprims.cumsum(d, variant=variant).get().tobytes() for _ in range(10)}
    assert len(runs) == 1
    np.testing.assert_array_equal(d.get(), before)
    got = gpuprims.cumsum(x, variant=variant)  # NumPy in, NumPy out
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("dtype,acc", [("float64", None), ("int64", None), ("int32", None),
                                       ("float32", "float64")])
def test_8_byte_accumulators_deterministic_across_tiles(backend, dtype, acc, size):
    # decoupled_lookback's shapes for 8-byte accumulators (SmallWideTuning,
    # SmallWideningTuning: 768-element tiles, a tile a warp, up to 1584
    # tiles on 132 SMs; WideTuning, WideningTuning: 1024-element tiles taken
    # from the counter): many tiles, a ragged end, the same bits every run,
    # within the scan bound of the reference.
    if backend == "cuda":
        n = 2**20 + 7 if size == "small" else 2**22 + 7
    else:
        n = 9 * 1024 + 7 if size == "small" else 37 * 1024 + 5
    x = host_case(n, dtype)
    d = gpuprims.to_device(x)
    runs = {gpuprims.cumsum(d, dtype=acc, variant="decoupled_lookback").get().tobytes() for _ in range(5)}
    assert len(runs) == 1
    got = gpuprims.cumsum(d, dtype=acc, variant="decoupled_lookback").get()
    check(x, got, "sum", True, "decoupled_lookback", dtype=acc)
    np.testing.assert_array_equal(d.get(), x)


@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.max_n is None])
@pytest.mark.parametrize("dtype,acc", [("int32", "int32"), ("float32", "float64"),
                                       ("int64", "float64"), ("int32", "float32")])
def test_dtype_override(backend, variant, dtype, acc):
    need(backend, BY_NAME[variant])
    x = host_case(4097, dtype)
    got = gpuprims.cumsum(device_case(4097, dtype), variant=variant, dtype=acc).get()
    check(x, got, "sum", True, variant, dtype=acc)


# An input one element past a 16-byte boundary: no 16-byte vector loads or
# stores, so every tile takes the per-element paths (for the 8-byte scans'
# runs: stored from registers, not through the tile buffer), small and
# large inputs.
@pytest.mark.parametrize("n", [5003, 2**17 + 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.max_n is None])
def test_unaligned_device_view(backend, variant, dtype, n):
    need(backend, BY_NAME[variant])
    x = host_case(n, dtype)
    d = gpuprims.to_device(x)
    view = gpuprims.DeviceArray((n - 1,), x.dtype, _ptr=d.ptr + x.itemsize, _owner=d)
    for inclusive in (True, False):
        got = gpuprims.scan(view, "sum", inclusive=inclusive, variant=variant)
        check(x[1:], got.get(), "sum", inclusive, variant)
    np.testing.assert_array_equal(d.get(), x)


# ------------------------------------------- look-back slots across calls
# A small 1-D look-back scan (every tile a warp of the first fills)
# publishes its tile totals in the thread's slots that outlive the call,
# tagged with the thread's next tag, instead of zeroing slots first
# (gp_lookback_cache, cuda/scan/lookback.cuh).  lookback_tag() reads the
# tag of the thread's last such scan.  Up to 16 tiles (1536 elements a tile
# for 4-byte sums, 768 for 8-byte ones) every GPU and the emulator (2 SMs)
# scan that way.
SMALL_TAGGED = {"float32": 16 * 1536, "int32": 16 * 768, "float64": 16 * 768, "int64": 16 * 768}


def lookback_tag():
    return gpuprims._core.lookback_tag()


def small_scan_sizes(dtype):
    """Sizes of one to 16 tiles, largest first and then up again, so that
    each call meets slots a larger one left (older tags)."""
    m = SMALL_TAGGED[dtype]
    return [m, m // 2 + 3, 1, 37, m // 16 + 1, m - 5, 2 * m // 3]


def test_small_scans_take_a_tag_each_over_slots_left_by_others(backend):
    for dtype in DTYPES:
        for n in small_scan_sizes(dtype):
            x = host_case(n, dtype)
            d = device_case(n, dtype)
            for op in OPS:
                for inclusive in (True, False):
                    before = lookback_tag()
                    got = gpuprims.scan(d, op, inclusive=inclusive, variant="decoupled_lookback").get()
                    assert lookback_tag() == before + 1, (dtype, n, op, inclusive)
                    check(x, got, op, inclusive, "decoupled_lookback")
            np.testing.assert_array_equal(d.get(), x)
    # the other slot form over what these left: float32 summed into float64
    x = host_case(SMALL_TAGGED["float64"] - 9, "float32")
    before = lookback_tag()
    got = gpuprims.cumsum(gpuprims.to_device(x), dtype=np.float64, variant="decoupled_lookback").get()
    assert lookback_tag() == before + 1
    check(x, got, "sum", True, "decoupled_lookback", dtype="float64")


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_two_to_the_20_takes_a_tag_on_a_full_size_gpu(cuda, dtype):
    # 2^20 + 7 elements: 683 tiles of float32, 1366 of 8-byte sums - three
    # look-back levels - within the first fills of a GPU of 114 SMs or more.
    if gpuprims.device_info()["multiprocessors"] < 114:
        pytest.skip("fewer than 114 SMs: 2^20 elements are not a small scan there")
    n = 2**20 + 7
    x = host_case(n, dtype)
    d = device_case(n, dtype)
    firsts = set()
    for _ in range(3):
        before = lookback_tag()
        got = gpuprims.cumsum(d, variant="decoupled_lookback").get()
        assert lookback_tag() == before + 1
        check(x, got, "sum", True, "decoupled_lookback")
        firsts.add(got.tobytes())
    assert len(firsts) == 1


def test_the_tag_wraps_to_zeroed_slots(backend):
    # In a new thread (slots of its own, tag 0): a scan at tag 1 leaves its
    # totals tagged 1; after the tag is moved to 2**32 - 1 the next scan
    # wraps to tag 1 again - right only if the slots were zeroed first: on
    # a GPU a tile that polls a predecessor's slot before it is published
    # would take the other input's tag-1 total for it.  (The emulator runs
    # the tiles in order, every slot written before it is read, so there
    # only the tags and the results are checked.)
    full = backend == "cuda" and gpuprims.device_info()["multiprocessors"] >= 114
    n = 2**20 + 7 if full else 10 * 768 + 3
    a, b = host_case(n, "int64"), -3 * host_case(n, "int64") + 5
    out = {}

    def body():
        try:
            da, db = gpuprims.to_device(a), gpuprims.to_device(b)
            out["first"] = lookback_tag()
            out["a"] = gpuprims.cumsum(da, variant="decoupled_lookback").get()
            out["after_a"] = lookback_tag()
            gpuprims._core.lookback_tag(2**32 - 1)
            out["b"] = gpuprims.cumsum(db, variant="decoupled_lookback").get()
            out["after_b"] = lookback_tag()
            out["b_again"] = gpuprims.cumsum(db, variant="decoupled_lookback").get()
            out["last"] = lookback_tag()
        except BaseException as e:  # surfaced in the test's thread
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    assert (out["first"], out["after_a"], out["after_b"], out["last"]) == (0, 1, 1, 2)
    np.testing.assert_array_equal(out["a"], np.cumsum(a))
    np.testing.assert_array_equal(out["b"], np.cumsum(b))
    np.testing.assert_array_equal(out["b_again"], np.cumsum(b))


def test_the_tag_only_moves_forward(backend):
    gpuprims.cumsum(device_case(33, "float32"), variant="decoupled_lookback")
    now = lookback_tag()
    assert now >= 1
    with pytest.raises(ValueError, match="not in"):
        gpuprims._core.lookback_tag(now - 1)
    with pytest.raises(ValueError, match="not in"):
        gpuprims._core.lookback_tag(2**32)
    with pytest.raises(TypeError):
        gpuprims._core.lookback_tag(1.5)
    assert lookback_tag() == now
    assert gpuprims._core.lookback_tag(now) == now  # the same tag: no move, allowed


@gpu
def test_cupy_and_torch_inputs():
    x = host_case(4097, "int32")
    cp = pytest.importorskip("cupy")
    np.testing.assert_array_equal(gpuprims.cumsum(cp.asarray(x)).get(), np.cumsum(x))
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(x.copy(), device="cuda")
    np.testing.assert_array_equal(gpuprims.scan(t, "max").get(), np.maximum.accumulate(x))


@gpu
@pytest.mark.slow
@pytest.mark.parametrize("variant", [v.name for v in DEVICE if v.max_n is None])
def test_over_two_to_the_31_elements(variant):
    need("cuda", BY_NAME[variant])
    got = gpuprims.cumsum(big_device_case(), variant=variant).get()
    np.testing.assert_array_equal(got, big_expected())


@functools.lru_cache(maxsize=None)
def big_case():
    n = 2**31 + 33
    return np.random.default_rng(33).integers(-100, 100, size=n, dtype=np.int8).astype(np.int32)


@functools.lru_cache(maxsize=None)
def big_device_case():
    return gpuprims.to_device(big_case())


@functools.lru_cache(maxsize=None)
def big_expected():
    return np.cumsum(big_case(), dtype=np.int64)
