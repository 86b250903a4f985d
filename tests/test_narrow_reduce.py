"""1-D sum/min/max of the narrow dtypes (bool, int8, int16, uint8, uint16,
uint32, uint64, float16), which single_pass (what variant="auto" runs)
reads as they are and widens in registers to NumPy's accumulator (int64
sums, int32/int64 min/max, float32 for float16), without a conversion
kernel first.

Against NumPy: integer sums, every min/max and bool counts exactly; float16
sums within the bound of recursive summation in float32 plus the float16
result's own rounding (Higham, "Accuracy and Stability of Numerical
Algorithms", 2nd ed., section 4.2), as tests/test_numpy_semantics.py.
Sizes around the 16-byte vectors (15, 16, 17, 31, 33), primes, device views
that start 1..15 bytes past a 16-byte boundary (the kernel's scalar head),
NumPy views at odd byte offsets, strided and negatively strided inputs,
the host pipeline in small chunks; the input is never modified.  The
emulator's launch trace shows that no conversion kernel runs for these
inputs on single_pass, while a step that does not opt in still converts.
"""
import numpy as np
import pytest

import gpuprims
from gpuprims import _core


NARROW = ["bool", "int8", "int16", "uint8", "uint16", "uint32", "uint64", "float16"]
OPS = ["sum", "min", "max"]
SIZES = [1, 15, 16, 17, 31, 33, 1009, 65537]
BIG = 1000003  # a prime: several blocks, every lane of the grid-stride loop, a scalar tail


def narrow_data(n, dtype, seed=0):
    """Random values over the dtype's whole range (floats: [-1, 1) with
    random magnitudes), never all zeros, read-only."""
    rng = np.random.default_rng(seed + 7919 * n)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        x = rng.random(n) < 0.5
    elif dtype == np.float16:
        x = ((rng.random(n) * 2 - 1) * 2.0 ** rng.integers(-6, 4, n)).astype(np.float16)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=dtype)
    x.setflags(write=False)
    return x


def assert_like_numpy(got, x, op):
    want = getattr(np, op)(x)
    got_a = np.asarray(got)
    assert got_a.dtype == np.asarray(want).dtype, (got_a.dtype, np.asarray(want).dtype)
    if op == "sum" and x.dtype == np.float16:
        exact = float(np.sum(x, dtype=np.float64))
        mag = float(np.sum(np.abs(x.astype(np.float64))))
        tol = x.size * float(np.finfo(np.float32).eps) * mag + abs(exact) * 2.0 ** -10
        assert abs(float(got) - exact) <= tol + 1e-300, (float(got), exact, tol)
    else:
        assert np.array_equal(got_a, want, equal_nan=True), (got, want)


def device_view(d, byte_offset, n, dtype):
    """A device array of n elements of dtype starting byte_offset bytes into
    DeviceArray d (a view that keeps d alive, as a CuPy slice is)."""
    return gpuprims.DeviceArray((n,), dtype, _ptr=d.ptr + byte_offset, _owner=d)


@pytest.mark.parametrize("variant", ["single_pass", "auto"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", NARROW)
def test_narrow_reductions_like_numpy(backend, dtype, op, variant):
    fn = getattr(gpuprims, op)
    sizes = SIZES + [BIG] if backend == "cuda" or variant == "auto" else SIZES
    for n in sizes:
        x = narrow_data(n, dtype, seed=1)
        before = x.copy()
        assert_like_numpy(fn(x, variant=variant), x, op)  # NumPy in: staged or pipelined
        d = gpuprims.to_device(x)
        assert_like_numpy(fn(d, variant=variant), x, op)  # device in: read in place
        assert np.array_equal(d.get(), before) and np.array_equal(x, before)
    empty = np.zeros(0, dtype)
    if op == "sum":
        got = gpuprims.sum(gpuprims.to_device(empty), variant=variant)
        assert got == 0 and np.asarray(got).dtype == np.sum(empty).dtype
    else:
        with pytest.raises(ValueError):
            fn(empty, variant=variant)


@pytest.mark.parametrize("dtype", NARROW)
def test_misaligned_device_views(backend, dtype):
    """Views that start 1..15 bytes past a 16-byte boundary: up to 15
    elements before the first whole vector (at offsets that are a multiple
    of the element size; the others are refused as unaligned)."""
    size = np.dtype(dtype).itemsize
    x = narrow_data(4099, dtype, seed=2)
    d = gpuprims.to_device(x)
    assert d.ptr % 16 == 0
    for off in range(1, 16):
        for n in (1, 7, 16, 17, 200):
            view = device_view(d, off, n, dtype)
            if off % size:
                with pytest.raises(ValueError, match="aligned"):
                    gpuprims.sum(view)
                continue
            part = x[off // size: off // size + n]
            for op in OPS:
                for variant in ("single_pass", "auto"):
                    assert_like_numpy(getattr(gpuprims, op)(view, variant=variant), part, op)
    assert np.array_equal(d.get(), x)


@pytest.mark.parametrize("dtype", NARROW)
def test_host_views_at_any_byte_offset_and_stride(backend, dtype):
    size = np.dtype(dtype).itemsize
    base = narrow_data(3 * 1031 + 16, dtype, seed=3)
    x = base[:1031]
    for off in (1, 3, 8, 15):  # an odd byte offset: not aligned to the element for 2-byte and wider dtypes
        raw = np.zeros(1031 * size + 16, np.uint8)
        unaligned = np.ndarray((1031,), dtype=dtype, buffer=raw.data, offset=off)
        unaligned[...] = x
        unaligned.setflags(write=False)
        for op in OPS:
            assert_like_numpy(getattr(gpuprims, op)(unaligned), x, op)
        assert np.array_equal(unaligned, x)
    for view in (base[::3], base[::-1], base[-2::-2], base[5:1000:7]):
        before = base.copy()
        for op in OPS:
            for variant in ("single_pass", "auto"):
                assert_like_numpy(getattr(gpuprims, op)(view, variant=variant), view, op)
        assert np.array_equal(base, before)


def test_uint64_sums_wrap_as_numpy(backend):
    rng = np.random.default_rng(4)
    x = rng.integers(1 << 63, (1 << 64) - 1, size=1001, dtype=np.uint64, endpoint=True)
    want = np.sum(x)  # wraps modulo 2^64
    assert int(want) != int(sum(int(v) for v in x))
    for variant in ("single_pass", "auto"):
        for operand in (x, gpuprims.to_device(x)):
            got = gpuprims.sum(operand, variant=variant)
            assert got.dtype == np.uint64 and got == want
            assert gpuprims.min(operand, variant=variant) == x.min()
            assert gpuprims.max(operand, variant=variant) == x.max()


def test_bool_counts_nonzero_bytes(backend):
    """A bool array counts its true elements; one whose bytes are not 0/1
    (a view of other data) counts its nonzero bytes, as NumPy's sum does."""
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 256, size=4111, dtype=np.uint8)
    raw[rng.random(raw.size) < 0.4] = 0
    x = raw.view(np.bool_)
    for n in (1, 16, 17, 4111):
        part = x[:n]
        want = int(np.count_nonzero(raw[:n]))
        for variant in ("single_pass", "auto"):
            for operand in (part, gpuprims.to_device(part)):
                got = gpuprims.sum(operand, variant=variant)
                assert got.dtype == np.int64 and got == want == np.sum(part)
                assert gpuprims.max(operand, variant=variant) == np.max(part)
                assert gpuprims.min(operand, variant=variant) == np.min(part)


@pytest.mark.parametrize("op", ["min", "max"])
def test_float16_nan_inf_and_signed_zeros(backend, op):
    """float16 min/max compared in float32: NaN wins wherever it is, the
    infinities and the extremes of float16 come back exactly."""
    fn, ref = getattr(gpuprims, op), getattr(np, op)
    rng = np.random.default_rng(6)
    x = narrow_data(1000, "float16", seed=6).copy()
    x[rng.integers(0, x.size, 3)] = np.float16(65504)
    x[rng.integers(0, x.size, 3)] = np.float16(-65504)
    x[17] = np.float16(6e-8)  # the smallest subnormal
    for special in (np.inf, -np.inf):
        y = x.copy()
        y[500] = special
        assert fn(y) == ref(y) and fn(gpuprims.to_device(y)) == ref(y)
    assert fn(x) == ref(x)
    for where in (0, 5, 16, 999):
        y = x.copy()
        y[where] = np.nan
        assert np.isnan(fn(y)) and np.isnan(fn(gpuprims.to_device(y), variant="single_pass"))
    z = np.array([0.0, -0.0] * 9, np.float16)
    assert fn(z) == 0 and fn(z).dtype == np.float16


def test_host_pipeline_chunks(backend):
    """NumPy operands through the host pipeline in chunks of 4 KiB: each
    chunk read as it is by the variant, partials combined."""
    before = _core.pipeline_config()
    _core.pipeline_config(threshold=0, chunk_bytes=4096)
    try:
        for dtype in NARROW:
            x = narrow_data(20011, dtype, seed=7)
            for op in OPS:
                for variant in ("single_pass", "auto", "warp_shuffle"):
                    assert_like_numpy(getattr(gpuprims, op)(x, variant=variant), x, op)
            for view in (x[::-3], x[1:]):
                assert_like_numpy(gpuprims.sum(view), view, "sum")
    finally:
        _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"],
                              interrupt_after=-1)


def kernels_run(call):
    """The kernels an emulated call launches (the emulator's trace)."""
    _core.emu_trace(True, 1 << 26)
    try:
        call()
    finally:
        steps, error = _core.emu_trace(False, 0)
    assert not error
    return {s["kernel"] for s in steps}


@pytest.mark.parametrize("dtype", NARROW)
def test_no_conversion_kernel_on_single_pass(emulator, dtype):
    v = {w.name: w for w in gpuprims.variants("reduce")}
    assert v["single_pass"].narrow_in and v["single_pass"].auto
    assert not v["warp_shuffle"].narrow_in
    x = narrow_data(300, dtype, seed=8)
    d = gpuprims.to_device(x)
    for op in OPS:
        fn = getattr(gpuprims, op)
        for variant in ("single_pass", "auto"):
            for operand in (x, d):
                ran = kernels_run(lambda: fn(operand, variant=variant))
                assert not any("cast" in k for k in ran) and any("single_pass" in k for k in ran), ran
        # a step that does not opt in converts first (what the trace would show if single_pass did)
        ran = kernels_run(lambda: fn(d, variant="warp_shuffle"))
        if not (dtype == "uint64" and op != "sum"):  # uint64 min/max: int64 with the sign bit flipped
            assert any("cast" in k for k in ran), ran


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW)
def test_large_narrow_sums_on_the_gpu(cuda, dtype):
    """2^27 + 5 elements: a full persistent grid, many vectors per thread."""
    n = (1 << 27) + 5
    x = narrow_data(n, dtype, seed=9)
    d = gpuprims.to_device(x)
    for op in OPS:
        assert_like_numpy(getattr(gpuprims, op)(d), x, op)
    assert np.array_equal(d.get(), x)
