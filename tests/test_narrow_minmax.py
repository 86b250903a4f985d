"""min/max scans and segmented reductions of the narrow dtypes (bool, int8,
int16, uint8, uint16, uint32), which the kernels compute in a wider integer
accumulator (int32, int64) and convert back.  The identity of an exclusive
scan's first element and of an empty segment (the accumulator's largest or
smallest value) must become the narrow dtype's own: its largest value for
min, its smallest for max (True / False for bool), as the exclusive scan
defined by NumPy's accumulate with that identity in front.

Every narrow dtype x min/max x inclusive/exclusive, through every way a call
reaches the kernels: a device array (1-D), a NumPy array (the host pipeline,
in chunks of a few KB through its test hook), an axis of N-D arrays in C,
Fortran and negatively strided layouts, segments of the flattened data and
of each row (empty segments included), each row that takes an axis or
segments by name, and the segmented reduction with empty segments.  The
references are written here from numpy.minimum/maximum.accumulate.
"""
import numpy as np
import pytest

import gpuprims
from gpuprims import _core

NARROW = ["bool", "int8", "int16", "uint8", "uint16", "uint32"]
OPS = ["min", "max"]
UFUNC = {"min": np.minimum, "max": np.maximum}
CHUNK = 4096  # bytes per chunk of the host pipeline, through its test hook


def ident(op, dtype):
    """The identity of op in dtype: min's is the largest value, max's the smallest."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.bool_(op == "min")
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def reference_scan(x, op, inclusive, axis=None):
    """NumPy's inclusive scan along axis (None: flattened); exclusive: the
    identity in front, the last prefix dropped."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    inc = UFUNC[op].accumulate(x, axis=axis)
    if inclusive or x.shape[axis] == 0:
        return inc
    inc = np.moveaxis(inc, axis, -1)
    first = np.full(inc.shape[:-1] + (1,), ident(op, x.dtype), dtype=x.dtype)
    return np.moveaxis(np.concatenate([first, inc[..., :-1]], axis=-1), -1, axis)


def reference_segmented_scan(x, op, inclusive, off):
    """Each segment [off[i], off[i+1]) scanned on its own (an empty one adds nothing)."""
    flat = x.reshape(-1)
    parts = [reference_scan(flat[a:b], op, inclusive) for a, b in zip(off[:-1], off[1:])]
    return np.concatenate(parts) if parts else flat[:0].copy()


def reference_segmented_reduce(x, op, off):
    flat = x.reshape(-1)
    return np.array([UFUNC[op].reduce(flat[a:b]) if b > a else ident(op, x.dtype)
                     for a, b in zip(off[:-1], off[1:])], dtype=x.dtype)


def narrow_data(shape, dtype, seed=0):
    """Random values over the dtype's whole range (never all zeros), both
    ends included somewhere, read-only (the calls must not write it)."""
    rng = np.random.default_rng(seed + 104729 * int(np.prod(shape)))
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        x = rng.integers(0, 2, size=shape).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True, dtype=np.int64).astype(dtype)
    if x.size > 4:
        flat = x.reshape(-1)
        flat[x.size // 3] = ident("max", dtype)  # the dtype's smallest value inside the data
        flat[x.size // 2] = ident("min", dtype)  # and its largest
    x.setflags(write=False)
    return x


def check(got, ref):
    got = got.get() if isinstance(got, gpuprims.DeviceArray) else np.asarray(got)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert np.array_equal(got, ref), f"first mismatch at {np.argwhere(got != ref)[:3].tolist()}: " \
                                     f"{got.reshape(-1)[:6]} vs {ref.reshape(-1)[:6]}"


@pytest.fixture
def small_chunks(backend):
    """NumPy operands through the host pipeline in chunks of CHUNK bytes."""
    before = _core.pipeline_config()
    _core.pipeline_config(threshold=0, chunk_bytes=CHUNK)
    yield backend
    _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"],
                          interrupt_after=-1)


def test_the_reported_case(backend):
    """The numbers of the report: int8 1..5, exclusive."""
    x = np.arange(1, 6, dtype=np.int8)
    check(gpuprims.scan(x, "max", inclusive=False), np.array([-128, 1, 2, 3, 4], np.int8))
    check(gpuprims.scan(x, "min", inclusive=False), np.array([127, 1, 1, 1, 1], np.int8))
    b = np.array([True, False, True])
    check(gpuprims.scan(b, "max", inclusive=False), np.array([False, True, True]))
    check(gpuprims.scan(b, "min", inclusive=False), np.array([True, True, False]))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("n", [1, 2, 33, 1025])
def test_flat_device(backend, dtype, op, inclusive, n):
    x = narrow_data((n,), dtype)
    d = gpuprims.to_device(x)
    check(gpuprims.scan(d, op, inclusive=inclusive), reference_scan(x, op, inclusive))
    check(d, x)  # the input is untouched


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
def test_flat_host_pipeline_chunks(small_chunks, dtype, op, inclusive):
    """A NumPy input in chunks: the first chunk holds the identity, every
    chunk's result is converted back on its own."""
    per_chunk = CHUNK // 8  # elements of the int64 accumulator; int32 ones fit twice as many
    for n in (per_chunk - 1, 2 * per_chunk + 3, 5 * per_chunk + 17):
        x = narrow_data((n,), dtype, seed=n)
        check(gpuprims.scan(x, op, inclusive=inclusive), reference_scan(x, op, inclusive))


def layouts(dtype):
    """(name, array) N-D inputs: C, Fortran, negative strides, steps, 0-size."""
    base = narrow_data((7, 33, 5), dtype, seed=3)
    return [("C", base), ("F", np.asfortranarray(base)), ("reversed", base[::-1, :, ::-2]),
            ("sliced", base[1::2, ::3]), ("zero-size", base[:, :0])]


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_axis_layouts(backend, dtype, op, inclusive, axis):
    for name, x in layouts(dtype):
        ref = reference_scan(x, op, inclusive, axis)
        check(gpuprims.scan(x, op, axis=axis, inclusive=inclusive), ref)
        check(gpuprims.scan(gpuprims.to_device(np.ascontiguousarray(x)), op, axis=axis, inclusive=inclusive), ref)


SCAN_LAYOUT_ROWS = [v for v in gpuprims.variants("scan") if v.batched or v.segmented]


@pytest.mark.parametrize("variant", [pytest.param(v.name, id=v.name) for v in SCAN_LAYOUT_ROWS])
@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
def test_every_layout_row_exclusive(backend, variant, dtype, op):
    """Each row that takes an axis or segments, by name: exclusive (the
    identity written) along both axes and over segments with empty ones."""
    v = gpuprims._registry.lookup("scan", variant)
    x = narrow_data((9, 40), dtype, seed=5)
    if v.batched:
        for axis in (0, 1):
            check(gpuprims.scan(x, op, axis=axis, inclusive=False, variant=variant),
                  reference_scan(x, op, False, axis))
    if v.segmented:
        off = np.array([0, 0, 1, 1, 33, 200, 200, 360], np.int64)
        check(gpuprims.scan(x, op, inclusive=False, segments=off, variant=variant),
              reference_segmented_scan(x, op, False, off))


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
def test_segments(backend, dtype, op, inclusive):
    """Segments of the flattened data (empty ones produce nothing) and the
    same segments in every row (axis=-1)."""
    x = narrow_data((5, 64), dtype, seed=7)
    n = x.size
    rng = np.random.default_rng(11)
    cuts = np.sort(rng.integers(0, n, size=20))
    for off in (np.array([0, n], np.int64), np.array([0, 0, 1, 1, 2, n, n], np.int64),
                np.concatenate([[0], cuts, [n]]).astype(np.int64),
                np.arange(0, n + 1, dtype=np.int64)):
        ref = reference_segmented_scan(x, op, inclusive, off)
        check(gpuprims.scan(x, op, inclusive=inclusive, segments=off), ref)
        check(gpuprims.scan(gpuprims.to_device(x), op, inclusive=inclusive, segments=off).get(), ref)
    row = np.array([0, 0, 3, 3, 40, 64], np.int64)
    ref = np.stack([reference_segmented_scan(r, op, inclusive, row) for r in x])
    check(gpuprims.scan(x, op, axis=-1, inclusive=inclusive, segments=row), ref)


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", OPS)
def test_segmented_reduce_empty_segments(backend, dtype, op):
    """An empty segment of a min/max reduction gives the dtype's identity."""
    x = narrow_data((3, 50), dtype, seed=13)
    off = np.array([0, 0, 7, 7, 7, 120, 150, 150], np.int64)
    ref = reference_segmented_reduce(x, op, off)
    check(gpuprims.reduce(x, op, segments=off), ref)
    check(gpuprims.reduce(gpuprims.to_device(x), op, segments=off), ref)
    row = np.array([0, 0, 20, 20, 50], np.int64)
    ref = np.stack([reference_segmented_reduce(r, op, row) for r in x])
    check(gpuprims.reduce(x, op, axis=-1, segments=row), ref)
    for v in gpuprims.variants("reduce"):
        if v.segmented and (backend == "cuda" or "emulator" in v.backends):  # CUB's rows: GPU only
            check(gpuprims.reduce(x, op, segments=off, variant=v.name),
                  reference_segmented_reduce(x, op, off))
