"""The host pipeline (csrc/pipeline.c): NumPy operands of device variants
moved in chunks through the pinned ring.  A private hook makes the chunks
tiny (CHUNK bytes) so that sizes around the chunk boundaries, many chunks
and a tail run in seconds on the emulator; the same tests run on the GPU."""
import signal

import numpy as np
import pytest

import gpuprims
from gpuprims import _core
from gpuprims._numerics import exact_sum, identity, scan_reference, scan_tolerance, sum_tolerance

CHUNK = 4096  # bytes per chunk, through the test hook


@pytest.fixture
def small_chunks(backend):
    """Every host operand through the pipeline, in chunks of CHUNK bytes;
    the settings restored after."""
    before = _core.pipeline_config()
    _core.pipeline_config(threshold=0, chunk_bytes=CHUNK)
    yield backend
    _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"],
                          interrupt_after=-1, progress_s=before["progress_s"])
    gpuprims.set_device_memory_limit(None if before["device_limit"] < 0 else before["device_limit"])


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed + 7919 * int(np.prod(shape)))
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "u":
        return rng.integers(1, 200, size=shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


def sizes(dtype):
    """Chunk - 1, chunk, chunk + 1, many chunks and a tail, in elements
    (the scan's chunk holds one element fewer: its carry)."""
    c = CHUNK // np.dtype(dtype).itemsize
    return [1, c - 2, c - 1, c, c + 1, 5 * c + 7]


def check_sum(got, x, acc):
    acc = np.dtype(acc)
    if acc.kind == "f":
        ref = exact_sum(x)
        assert abs(float(got) - ref) <= sum_tolerance(x, acc, ref), (got, ref)
    else:
        assert got == np.sum(x, dtype=acc)


def check_scan(got, x, inclusive, acc):
    acc = np.dtype(acc)
    if acc.kind == "f":
        ref, bound = scan_reference(x.ravel(), inclusive, acc)
        tol = scan_tolerance(x.size, acc, ref, bound)
        if got.dtype != acc:  # the accumulator's value rounded once more to the result dtype
            tol = tol + np.spacing(np.abs(ref).astype(got.dtype)).astype(ref.dtype)
        assert np.all(np.abs(got.astype(ref.dtype) - ref) <= tol)
    else:
        inc = np.cumsum(x.ravel(), dtype=acc)
        ref = inc if inclusive else np.concatenate([[identity("sum", acc)], inc[:-1]]).astype(acc)
        np.testing.assert_array_equal(got, ref)


DTYPES = ["float32", "float64", "int32", "int64", "uint8", "int16", "bool", "float16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_around_chunks(small_chunks, dtype):
    for n in sizes(dtype):
        x = rand(n, dtype)
        x.setflags(write=False)
        before = x.copy()
        calls = _core.pipeline_stats()["calls"]
        got = gpuprims.sum(x)
        assert _core.pipeline_stats()["calls"] == calls + 1  # it went through the pipeline
        check_sum(got, x, np.sum(x).dtype if x.dtype != np.float16 else np.float16)
        assert gpuprims.min(x) == x.min() and gpuprims.max(x) == x.max()
        assert gpuprims.min(x).dtype == x.dtype
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_around_chunks(small_chunks, dtype, inclusive):
    for n in sizes(dtype):
        x = rand(n, dtype, seed=1)
        before = x.copy()
        got = gpuprims.scan(x, inclusive=inclusive)
        assert got.dtype == np.cumsum(x).dtype
        check_scan(got, x, inclusive, got.dtype if got.dtype != np.float16 else np.float32)
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("op", ["min", "max"])
def test_scan_min_max(small_chunks, op):
    x = rand(3 * 1024 + 5, "float32", seed=2)
    ufunc = np.minimum if op == "min" else np.maximum
    np.testing.assert_array_equal(gpuprims.scan(x, op), ufunc.accumulate(x))
    exc = gpuprims.scan(x, op, inclusive=False)
    assert exc[0] == identity(op, np.float32)
    np.testing.assert_array_equal(exc[1:], ufunc.accumulate(x)[:-1])


# (op, dtype, carry): integer sums and min/max are exact, so the carried
# scan must equal NumPy's scan of the carry followed by x, element for
# element (the carry's own element dropped, or kept first for exclusive).
CARRIES = [("sum", "int32", -123456), ("sum", "int8", 5000), ("sum", "uint16", 2**40), ("min", "int64", -3),
           ("max", "int16", 300), ("max", "bool", True), ("min", "float64", 0.25), ("max", "float32", -0.5)]


@pytest.mark.parametrize("op,dtype,carry", CARRIES, ids=str)
@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_carry_in_value(small_chunks, op, dtype, carry, inclusive):
    """The private carry-in value of a 1-D scan of a NumPy array
    (gpuprims.dask's chunks): the scan continues from it, as if it were an
    element in front of x, across the pipeline's chunks."""
    from gpuprims import _axes
    from gpuprims._scan import scan
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    plan = _axes.DtypePlan(op, np.dtype(dtype), None, "scan")
    for n in sizes(dtype):
        x = rand(n, dtype, seed=3)
        before = x.copy()
        got = scan(x, op, inclusive=inclusive, _carry_in=carry)
        full = ufunc.accumulate(np.concatenate([np.asarray(carry).astype(plan.acc).reshape(1), x.astype(plan.acc)]))
        want = (full[1:] if inclusive else full[:-1]).astype(plan.result)
        assert got.dtype == plan.result
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(x, before)


def test_scan_carry_in_float_sum(small_chunks):
    """A float sum continuing from a carry: within the scan's bound of the
    float64 scan of the carry followed by x."""
    from gpuprims._scan import scan
    x = rand(5 * 1024 + 3, "float32", seed=4)
    before = x.copy()
    got = scan(x, _carry_in=np.float32(1000.5))
    ref = np.cumsum(np.concatenate([[1000.5], x.astype(np.float64)]))[1:]
    # any order of float32 additions of these n + 1 terms is within n eps (sum of |terms|)
    assert np.max(np.abs(got - ref)) <= x.size * np.finfo(np.float32).eps * (1000.5 + np.abs(x).sum())
    np.testing.assert_array_equal(x, before)


def test_scan_carry_in_value_refused(backend):
    """Only a 1-D scan of a real NumPy array takes a carry-in value."""
    from gpuprims._scan import scan
    x = rand(100, "float32", seed=5)
    with pytest.raises(ValueError, match="carry-in value"):
        scan(gpuprims.to_device(x), _carry_in=1.0)
    with pytest.raises(ValueError, match="carry-in value"):
        scan(x.reshape(10, 10), axis=1, _carry_in=1.0)
    with pytest.raises(ValueError, match="carry-in value"):
        scan(x.astype(np.complex64), _carry_in=1.0)
    with pytest.raises(ValueError, match="carry-in value"):  # a host row would not continue from it
        scan(x, variant="cpu", _carry_in=1.0)
    # an empty scan has nothing to continue: an empty result of the result's dtype
    got = scan(x[:0], _carry_in=1.0)
    assert got.shape == (0,) and got.dtype == np.float32


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int64", "complex128"])
@pytest.mark.parametrize("shape", [(1, 5000), (37, 1100), (1023, 3), (64, 64)])
def test_transpose_2d(small_chunks, dtype, shape):
    x = rand(shape, "float64").astype(dtype)
    before = x.copy()
    np.testing.assert_array_equal(gpuprims.transpose(x), x.T)
    np.testing.assert_array_equal(gpuprims.transpose(x[::-1, ::2]), x[::-1, ::2].T)
    np.testing.assert_array_equal(gpuprims.transpose(np.asfortranarray(x)), x.T)
    np.testing.assert_array_equal(x, before)


def test_transpose_nd(small_chunks):
    x = rand((6, 35, 41), "float32")
    for axes in [(2, 0, 1), (1, 2, 0), (2, 1, 0)]:
        np.testing.assert_array_equal(gpuprims.transpose(x, axes), np.transpose(x, axes))


@pytest.mark.parametrize("make", [lambda x: x[::3], lambda x: x[::-1], lambda x: x[::-2],
                                  lambda x: np.asfortranarray(x.reshape(50, -1))])
def test_strided_inputs(small_chunks, make):
    base = rand(50 * 97, "float32", seed=3)
    x = make(base)
    x.setflags(write=False)
    before = x.copy()
    check_sum(gpuprims.sum(x), np.ascontiguousarray(x), np.float32)
    assert gpuprims.max(x) == x.max()
    check_scan(gpuprims.cumsum(x), np.ascontiguousarray(x), True, np.float32)
    np.testing.assert_array_equal(x, before)


def test_strided_int_exact(small_chunks):
    x = rand((300, 41), "int32", seed=4)[::-1, ::3]
    assert gpuprims.sum(x) == np.sum(x)
    np.testing.assert_array_equal(gpuprims.cumsum(x), np.cumsum(x))


def test_numpy_out(small_chunks):
    x = rand(5000, "float64", seed=5)
    out = np.empty(5000)
    assert gpuprims.cumsum(x, out=out) is out
    check_scan(out, x, True, np.float64)
    a = rand((70, 90), "int16")
    out = np.empty((90, 70), np.int16)
    assert gpuprims.transpose(a, out=out) is out
    np.testing.assert_array_equal(out, a.T)
    fout = np.empty((90, 70), np.int16, order="F")
    gpuprims.transpose(a, out=fout)
    np.testing.assert_array_equal(fout, a.T)


def test_run_to_run_bits(small_chunks):
    x = rand(7 * 1024 + 3, "float32", seed=6)
    s = [gpuprims.sum(x) for _ in range(3)]
    assert s[0].tobytes() == s[1].tobytes() == s[2].tobytes()
    c = [gpuprims.cumsum(x) for _ in range(3)]
    assert c[0].tobytes() == c[1].tobytes() == c[2].tobytes()


def test_out_of_core(small_chunks):
    """Arrays 4x the device-memory cap, every op; the pipeline's device
    allocation stays under the cap."""
    cap = 64 << 10
    _core.pipeline_config(chunk_bytes=0)  # the cap alone chooses the chunks
    gpuprims.set_device_memory_limit("64K")
    assert gpuprims.device_memory_limit() == cap
    x = rand(4 * cap // 4, "float32", seed=7)
    check_sum(gpuprims.sum(x), x, np.float32)
    assert _core.pipeline_stats()["last_device_bytes"] <= cap
    check_scan(gpuprims.cumsum(x), x, True, np.float32)
    assert _core.pipeline_stats()["last_device_bytes"] <= cap
    a = x.reshape(256, 256)
    np.testing.assert_array_equal(gpuprims.transpose(a), a.T)
    assert _core.pipeline_stats()["last_device_bytes"] <= cap
    # layouts split into calls that fit: axis reductions and scans, an N-D transpose
    m = rand((64, 1024), "int32", seed=8)
    np.testing.assert_array_equal(gpuprims.sum(m, axis=0), m.sum(axis=0))
    np.testing.assert_array_equal(gpuprims.sum(m, axis=1), m.sum(axis=1))
    np.testing.assert_array_equal(gpuprims.cumsum(m, axis=1), np.cumsum(m, axis=1))
    one = rand((1, 40000), "int32", seed=9)
    np.testing.assert_array_equal(gpuprims.cumsum(one, axis=0), np.cumsum(one, axis=0))
    t = rand((16, 32, 64), "float32", seed=10)
    np.testing.assert_array_equal(gpuprims.transpose(t, (2, 0, 1)), np.transpose(t, (2, 0, 1)))
    gpuprims.set_device_memory_limit(None)
    assert gpuprims.device_memory_limit() is None


def test_too_small_cap(small_chunks):
    gpuprims.set_device_memory_limit(100)
    with pytest.raises(ValueError, match="device-memory limit"):
        gpuprims.sum(rand(10000, "float32"))
    gpuprims.set_device_memory_limit(None)
    assert gpuprims.sum(np.ones(10, np.int32)) == 10


@pytest.mark.parametrize("what", ["sum", "cumsum", "transpose"])
def test_interrupt(small_chunks, what):
    """Ctrl-C between chunks (simulated by the hook: SIGINT's flag set
    after 2 chunks): KeyboardInterrupt, nothing held, the next call works."""
    x = rand(20 * 1024, "float32", seed=11)
    fn = {"sum": gpuprims.sum, "cumsum": gpuprims.cumsum,
          "transpose": lambda a: gpuprims.transpose(a.reshape(160, 128))}[what]
    fn(x)  # the ring allocated (an earlier test may have freed it, or used the other backend's)
    stats = _core.pipeline_stats()
    # the hook simulates SIGINT, which Python only turns into KeyboardInterrupt
    # while its own handler is installed: a process started in the background
    # by a shell inherits SIGINT ignored
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    _core.pipeline_config(interrupt_after=2)
    try:
        with pytest.raises(KeyboardInterrupt):
            fn(x)
    finally:
        _core.pipeline_config(interrupt_after=-1)
        signal.signal(signal.SIGINT, handler)
    after = _core.pipeline_stats()
    assert after["interrupted"] == stats["interrupted"] + 1
    assert after["allocations"] == stats["allocations"]  # the ring kept, not leaked or regrown
    check_sum(gpuprims.sum(x), x, np.float32)
    assert _core.pipeline_stats()["allocations"] == stats["allocations"]


PROGRESS_CALLS = {
    "sum": lambda x, p: gpuprims.sum(x, progress=p),
    "min": lambda x, p: gpuprims.min(x, progress=p),
    "max": lambda x, p: gpuprims.max(x, progress=p),
    "reduce": lambda x, p: gpuprims.reduce(x, "max", progress=p),
    "cumsum": lambda x, p: gpuprims.cumsum(x, progress=p),
    "scan": lambda x, p: gpuprims.scan(x, "min", inclusive=False, progress=p),
    "transpose": lambda x, p: gpuprims.transpose(x.reshape(160, 128), progress=p),
}


def numpy_answer(what, x):
    return {"sum": lambda: None, "min": lambda: np.min(x), "max": lambda: np.max(x),
            "reduce": lambda: np.max(x), "cumsum": lambda: None,
            "scan": lambda: np.concatenate([[np.inf], np.minimum.accumulate(x)[:-1]]).astype(x.dtype),
            "transpose": lambda: np.ascontiguousarray(x.reshape(160, 128).T)}[what]()


@pytest.mark.parametrize("what", list(PROGRESS_CALLS))
def test_progress_line(small_chunks, capsys, what):
    """progress=True on a call the pipeline expects to take longer than its
    threshold (forced to 0 s through the hook) prints the line on stderr,
    ending in the done line; progress=False (the default) prints nothing;
    the result is the same either way."""
    x = rand(20 * 1024, "float32", seed=21)
    before = x.copy()
    _core.pipeline_config(progress_s=0.0)
    quiet = PROGRESS_CALLS[what](x, False)
    assert capsys.readouterr().err == ""
    shown = PROGRESS_CALLS[what](x, True)
    err = capsys.readouterr().err
    fam = {"sum": "reduce", "min": "reduce", "max": "reduce", "cumsum": "scan"}.get(what, what)
    assert f"gpuprims {fam}: " in err and "% of 20480 elements" in err
    assert err.endswith("\n") and f"gpuprims {fam}: done, 20480 elements in " in err.splitlines()[-1].split("\r")[-1]
    np.testing.assert_array_equal(np.asarray(shown), np.asarray(quiet))  # the same bits
    want = numpy_answer(what, x)
    if want is not None:
        np.testing.assert_array_equal(np.asarray(shown), want)
    elif what == "sum":
        check_sum(shown, x, np.float32)
    else:
        check_scan(shown, x, True, np.float32)
    np.testing.assert_array_equal(x, before)


def test_progress_not_shown_for_a_short_call(small_chunks, capsys):
    """progress=True on a call expected to take less than the threshold
    (the default 2 s; a few ms here) prints nothing."""
    x = rand(20 * 1024, "float32", seed=22)
    assert _core.pipeline_config()["progress_s"] == 2.0
    check_sum(gpuprims.sum(x, progress=True), x, np.float32)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress_s"):
        _core.pipeline_config(progress_s=-1.0)


def test_ring_bounded_and_freed(small_chunks):
    x = rand(3000, "float32", seed=12)
    gpuprims.sum(x)
    s0 = _core.pipeline_stats()
    for _ in range(1000):
        gpuprims.sum(x)
    s1 = _core.pipeline_stats()
    assert s1["allocations"] == s0["allocations"] and s1["calls"] == s0["calls"] + 1000
    assert s1["pinned_bytes"] <= _core.pipeline_config()["pinned_limit"]
    gpuprims.free_memory()
    s2 = _core.pipeline_stats()
    assert s2["pinned_bytes"] == 0 and s2["frees"] == s2["allocations"]
    check_sum(gpuprims.sum(x), x, np.float32)  # comes back on the next call
    assert _core.pipeline_stats()["allocations"] == s2["allocations"] + 4


def test_pinned_limit_setting(small_chunks):
    before = _core.pipeline_config()["pinned_limit"]
    try:
        gpuprims.set_pinned_limit("64K")
        x = rand(30000, "float64", seed=13)
        check_sum(gpuprims.sum(x), x, np.float64)
        assert _core.pipeline_stats()["pinned_bytes"] <= 64 << 10
        with pytest.raises(ValueError):
            gpuprims.set_pinned_limit(10)
        with pytest.raises(ValueError, match="not a byte count"):
            gpuprims.set_device_memory_limit("lots")
        with pytest.raises(TypeError):
            gpuprims.set_device_memory_limit(1.5)
    finally:
        gpuprims.set_pinned_limit(before)


def test_to_device_get(small_chunks):
    for n in [1, 1023, 1024, 1025, 9999]:
        x = rand(n, "float32", seed=14)
        d = gpuprims.to_device(x)
        np.testing.assert_array_equal(d.get(), x)
        np.testing.assert_array_equal(gpuprims.to_device(x[::-2]).get(), x[::-2])


def test_parse_bytes():
    from gpuprims._arrays import parse_bytes
    assert parse_bytes("64M", "t") == 64 << 20 and parse_bytes("2G", "t") == 2 << 30
    assert parse_bytes("512KiB", "t") == 512 << 10 and parse_bytes(4096, "t") == 4096
    assert parse_bytes("1.5K", "t") == 1536


def test_small_call_stays_single_shot(backend):
    """Below the threshold a NumPy call takes the single-shot path."""
    calls = _core.pipeline_stats()["calls"]
    x = rand(1 << 12, "float32")
    check_sum(gpuprims.sum(x), x, np.float32)
    assert _core.pipeline_stats()["calls"] == calls


@pytest.mark.gpu
@pytest.mark.slow
def test_larger_than_the_gpu(cuda):
    """A host array larger than the GPU's memory: sum and cumsum."""
    total = gpuprims.device_info()["total_memory"]
    n = (total + (4 << 30)) // 4
    x = np.ones(n, np.float32)
    x[::7] = 2.0
    assert gpuprims.sum(x, dtype=np.float64) == float(n + (n + 6) // 7)
    xi = np.ones(n, np.int32)
    assert gpuprims.sum(xi) == n


# -- calls over the device-memory cap that the pipeline does not chunk by itself

CAP = 64 << 10


@pytest.fixture
def capped(small_chunks, monkeypatch):
    """A 64 KiB device-memory cap (the inputs below are 4x it); every core
    call recorded: (params, bytes of its host operands, the pipeline's
    device bytes after it)."""
    _core.pipeline_config(chunk_bytes=0)  # the cap alone chooses the chunks
    gpuprims.set_device_memory_limit(CAP)
    calls = []
    real = _core.call

    def call(family, index, src, dst, params, *rest):
        before = _core.pipeline_stats()["calls"]
        value = real(family, index, src, dst, params, *rest)
        piped = _core.pipeline_stats()["calls"] > before
        nbytes = sum(a.nbytes for a in (src, dst) if isinstance(a, np.ndarray))
        calls.append((params, nbytes, _core.pipeline_stats()["last_device_bytes"] if piped else None))
        return value

    monkeypatch.setattr(_core, "call", call)
    yield calls
    gpuprims.set_device_memory_limit(None)


def within_cap(calls):
    """Every call fits the cap: a pipelined one by its device allocation,
    a single-shot one by its host operands (in + out, all on the device)."""
    assert len(calls) > 1  # split
    for params, nbytes, device in calls:
        assert (device if device is not None else nbytes) <= CAP, (params, nbytes, device)


def twice(fn):
    """fn() run twice: the same bits (run to run), the first returned."""
    a, b = np.asarray(fn()), np.asarray(fn())
    assert a.tobytes() == b.tobytes()
    return a


N4 = 4 * CAP // 4  # float32 elements of an array 4x the cap


@pytest.mark.parametrize("shape,axis", [((1, N4), 1), ((N4, 1), 0), ((2, N4), -1), ((N4 // 2, 2), 0)])
def test_one_problem_longer_than_the_cap(capped, shape, axis):
    """A reduce or scan along an axis whose one problem (a row, or a column
    with outer = inner = 1) is over the cap: each problem through the
    pipeline as 1-D data, within the cap; results against NumPy."""
    x = rand(shape, "float32", seed=31)
    xi = rand(shape, "int32", seed=32)
    before = x.copy()
    got = twice(lambda: gpuprims.sum(x, axis=axis))
    within_cap(capped)
    for g, col in zip(got.ravel(), np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])):
        check_sum(g, col, np.float32)
    capped.clear()
    np.testing.assert_array_equal(twice(lambda: gpuprims.max(xi, axis=axis)), xi.max(axis=axis))
    np.testing.assert_array_equal(twice(lambda: gpuprims.cumsum(xi, axis=axis)), np.cumsum(xi, axis=axis))
    within_cap(capped)
    got = twice(lambda: gpuprims.cumsum(x, axis=axis))
    for g, col in zip(np.moveaxis(got, axis, -1).reshape(-1, x.shape[axis]),
                      np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])):
        check_scan(g, col, True, np.float32)
    np.testing.assert_array_equal(x, before)


def test_full_reductions_chunk(capped):
    """A 1-D array and every axis of a contiguous N-D array: one pipelined
    call, chunked to the cap."""
    x = rand((64, 32, 32), "float32", seed=33)
    for axis in (None, (0, 1, 2)):
        capped.clear()
        check_sum(twice(lambda: gpuprims.sum(x, axis=axis)), x, np.float32)
        assert len(capped) == 2 and all(device is not None and device <= CAP for _, _, device in capped)
    capped.clear()
    check_scan(gpuprims.cumsum(x), x, True, np.float32)
    assert len(capped) == 1 and capped[0][2] is not None and capped[0][2] <= CAP


def ragged(n, long_at, rng):
    """Segment boundaries over n elements: short ones, runs of empty ones,
    and one longer than the cap (at long_at)."""
    cuts = [0]
    while cuts[-1] < n:
        if len(cuts) == long_at:
            step = CAP // 4 + 1001
        else:
            step = int(rng.choice([0, 0, 1, 7, 300, 2000]))
        cuts.append(min(n, cuts[-1] + step))
    return np.array(cuts, dtype=np.int64)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_segmented_reduce_over_the_cap(capped, dtype):
    rng = np.random.default_rng(34)
    x = rand(N4, dtype, seed=35)
    before = x.copy()
    seg = ragged(N4, 5, rng)
    inner = seg[3:-2]  # segments that leave data out at both ends
    for s in (seg, inner):
        capped.clear()
        got = twice(lambda: gpuprims.sum(x, segments=s))
        within_cap(capped)
        assert got.shape == (s.size - 1,)
        for g, a, b in zip(got, s[:-1], s[1:]):
            if dtype == "int32":
                assert g == x[a:b].sum(dtype=np.int64)
            else:
                check_sum(g, x[a:b], np.float32)
        nonempty = np.flatnonzero(np.diff(s))
        mx = twice(lambda: gpuprims.max(x, segments=s))
        np.testing.assert_array_equal(mx[nonempty], [x[s[i]:s[i + 1]].max() for i in nonempty])
    # segments of each row (axis=-1)
    m = x.reshape(4, N4 // 4)
    rowseg = np.array([0, 5, 5, N4 // 8, N4 // 4 - 1, N4 // 4], dtype=np.int64)
    capped.clear()
    got = twice(lambda: gpuprims.min(m, axis=-1, segments=rowseg))
    within_cap(capped)
    want = np.array([[r[a:b].min() if b > a else got[i, j] for j, (a, b) in enumerate(zip(rowseg[:-1], rowseg[1:]))]
                     for i, r in enumerate(m)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("inclusive", [True, False])
def test_segmented_scan_over_the_cap(capped, inclusive):
    rng = np.random.default_rng(36)
    x = rand(N4, "int32", seed=37)
    seg = ragged(N4, 4, rng)
    got = twice(lambda: gpuprims.scan(x, "sum", inclusive=inclusive, segments=seg))
    within_cap(capped)
    want = np.empty(N4, np.int64)
    for a, b in zip(seg[:-1], seg[1:]):
        inc = np.cumsum(x[a:b], dtype=np.int64)
        want[a:b] = inc if inclusive else np.concatenate([[0], inc[:-1]])
    np.testing.assert_array_equal(got, want)
    xf = rand(N4, "float32", seed=38)
    capped.clear()
    got = twice(lambda: gpuprims.cumsum(xf, segments=seg))
    within_cap(capped)
    for a, b in zip(seg[:-1], seg[1:]):
        if b > a:
            check_scan(got[a:b], xf[a:b], True, np.float32)


@pytest.mark.parametrize("view", ["contiguous", "reversed", "fortran"])
def test_nd_transpose_over_the_cap(capped, view):
    """An N-D transpose 4x the cap, also of an input read in place through
    its strides (a span): split along the output's first axis."""
    t = rand((16, 64, 64), "float32", seed=39)
    a = {"contiguous": t, "reversed": t[:, ::-1, :], "fortran": np.asfortranarray(t)}[view]
    before = a.copy()
    for axes in [(2, 0, 1), (1, 2, 0), None]:
        capped.clear()
        got = twice(lambda: gpuprims.transpose(a, axes))
        within_cap(capped)
        np.testing.assert_array_equal(got, np.ascontiguousarray(np.transpose(a, axes)))
    np.testing.assert_array_equal(a, before)


# ---------------------------------------------------------------- the trace (the timeline notebook)
# pipeline_config(trace=N) records each chunk's stages; serial=True waits after each one.
# Device stages share the event clock exactly; host stages (pack, unpack) sit on the
# same axis to within the origin's wait, ALIGN_MS.
ALIGN_MS = 0.05
DEVICE = ("in", "kernel", "out")


@pytest.fixture
def traced(small_chunks):
    yield small_chunks
    _core.pipeline_config(trace=0, serial=False)


def trace_cases():
    """(name, call, input, stages a chunk has): a reduction, a scan, a 2-D
    transpose, each a few chunks and a tail."""
    x = rand(5 * (CHUNK // 4) + 7, "float32", seed=50)
    t = rand((37, 301), "float64", seed=51)
    return [("sum", gpuprims.sum, x, ("pack", "in", "kernel")),
            ("cumsum", gpuprims.cumsum, x, ("pack", "in", "kernel", "out", "unpack")),
            ("exclusive", lambda a: gpuprims.scan(a, inclusive=False), x,
             ("pack", "in", "kernel", "out", "unpack")),
            ("transpose", gpuprims.transpose, t, ("pack", "in", "kernel", "out", "unpack"))]


def by_chunk(records):
    chunks = {}
    for r in records:
        chunks.setdefault(r["chunk"], {})
        assert r["stage"] not in chunks[r["chunk"]], r  # one record of each stage per chunk
        chunks[r["chunk"]][r["stage"]] = r
    return chunks


def assert_causal(stages):
    """pack -> in -> kernel -> out -> unpack, each ending before the next starts."""
    order = [s for s in ("pack", "in", "kernel", "out", "unpack") if s in stages]
    for a, b in zip(order, order[1:]):
        slack = 0.0 if a in DEVICE and b in DEVICE else ALIGN_MS
        assert stages[a]["end_ms"] <= stages[b]["start_ms"] + slack, (stages[a], stages[b])
    for r in stages.values():
        assert 0.0 <= r["start_ms"] <= r["end_ms"], r


@pytest.mark.parametrize("case", range(4), ids=lambda k: ["sum", "cumsum", "exclusive", "transpose"][k])
def test_trace_one_record_set_per_chunk(traced, case):
    name, fn, x, want = trace_cases()[case]
    before = x.copy()
    plain = fn(x)
    _core.pipeline_config(trace=10000)
    chunks0 = _core.pipeline_stats()["chunks"]
    got = fn(x)
    nchunks = _core.pipeline_stats()["chunks"] - chunks0
    records = _core.pipeline_trace()
    assert nchunks > 3
    chunks = by_chunk(records)
    assert sorted(chunks) == list(range(nchunks))
    streams = {"pack": "host", "unpack": "host", "in": "h2d", "kernel": "compute", "out": "d2h"}
    for k, stages in chunks.items():
        assert tuple(s for s in ("pack", "in", "kernel", "out", "unpack") if s in stages) == want, (k, stages)
        assert all(r["stream"] == streams[r["stage"]] for r in stages.values())
        assert_causal(stages)
    assert min(r["start_ms"] for r in records) == 0.0
    # the same bits as without the trace
    np.testing.assert_array_equal(np.asarray(got), np.asarray(plain))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("case", range(4), ids=lambda k: ["sum", "cumsum", "exclusive", "transpose"][k])
def test_serial_stages_do_not_overlap(traced, case):
    name, fn, x, _ = trace_cases()[case]
    plain = fn(x)
    _core.pipeline_config(trace=10000, serial=True)
    got = fn(x)
    records = sorted(_core.pipeline_trace(), key=lambda r: r["start_ms"])
    assert len(records) > 3
    for a, b in zip(records, records[1:]):
        slack = 0.0 if a["stage"] in DEVICE and b["stage"] in DEVICE else ALIGN_MS
        assert a["end_ms"] <= b["start_ms"] + slack, (a, b)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(plain))
    _core.pipeline_config(trace=0)
    np.testing.assert_array_equal(np.asarray(fn(x)), np.asarray(plain))  # serial, untraced: the same bits


def test_trace_off_records_nothing(traced):
    x = rand(4 * (CHUNK // 4) + 3, "float32", seed=52)
    _core.pipeline_config(trace=10000)
    gpuprims.sum(x)
    assert _core.pipeline_trace()
    _core.pipeline_config(trace=0)
    assert _core.pipeline_config()["trace"] == 0
    calls = _core.pipeline_stats()["calls"]
    gpuprims.cumsum(x)
    assert _core.pipeline_stats()["calls"] == calls + 1
    assert _core.pipeline_trace() == []


def test_trace_keeps_at_most_n_records(traced):
    x = rand(9 * (CHUNK // 4) + 3, "float32", seed=53)
    _core.pipeline_config(trace=5)
    gpuprims.cumsum(x)
    records = _core.pipeline_trace()
    assert len(records) == 5
    assert [r["chunk"] for r in records[:3]] == [0, 0, 0]  # the first ones, in the order taken
    with pytest.raises(ValueError, match="trace"):
        _core.pipeline_config(trace=-1)


def test_trace_pipeline_timeline(backend):
    from gpuprims._pipeline_trace import STREAMS, trace_pipeline
    x = rand(6 * (CHUNK // 4) + 1, "float32", seed=54)
    settings = _core.pipeline_config()
    over = trace_pipeline(gpuprims.cumsum, x, chunk_bytes=CHUNK, label="cumsum")
    serial = trace_pipeline(gpuprims.cumsum, x, chunk_bytes=CHUNK, serial=True)
    assert _core.pipeline_config() == settings  # restored
    check_scan(over.result, x, True, np.float32)
    np.testing.assert_array_equal(over.result, serial.result)
    assert over.chunks == serial.chunks == 7 and not over.serial and serial.serial
    lines = over.text(width=60).splitlines()
    assert len(lines) == 2 + len(STREAMS) and "7 chunks" in lines[0]
    assert ("emulator" in lines[0]) == (gpuprims.backend() == "emulator")
    assert all(len(line) == len(lines[1]) for line in lines[1:-1])  # the stream rows line up
    assert serial.overlap() <= 1.05 and over.span_ms > 0  # no overlap, to within the clocks' alignment
    with pytest.raises(ValueError, match="did not go through the host pipeline"):
        trace_pipeline(gpuprims.sum, gpuprims.to_device(x))
    assert _core.pipeline_config() == settings


def test_timeline_plot(backend, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib is not installed")
    from gpuprims._pipeline_trace import trace_pipeline
    x = rand(3 * (CHUNK // 4) + 1, "float32", seed=55)
    t = trace_pipeline(gpuprims.cumsum, x, chunk_bytes=CHUNK)
    ax = t.plot()
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["host", "h2d", "compute", "d2h"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"pack", "in", "kernel", "out", "unpack"}
    plt.close(ax.figure)


def test_timeline_text_drawing():
    """The text drawing of hand-made records: 1 ms per column over 10 ms."""
    from gpuprims._pipeline_trace import Timeline

    def rec(chunk, stage, stream, a, b):
        return {"chunk": chunk, "stage": stage, "stream": stream, "start_ms": a, "end_ms": b}
    records = [rec(0, "pack", "host", 0, 1), rec(0, "in", "h2d", 1, 3), rec(0, "kernel", "compute", 3, 5),
               rec(0, "out", "d2h", 5, 6), rec(1, "pack", "host", 1, 2), rec(1, "in", "h2d", 3, 5),
               rec(1, "kernel", "compute", 5, 8), rec(1, "out", "d2h", 8, 9), rec(0, "unpack", "host", 6, 7),
               rec(1, "unpack", "host", 9, 10), rec(27, "in", "h2d", 9, 9.2)]
    t = Timeline(records, 11.0, None, False, "cuda", label="demo")
    lines = t.text(width=10).splitlines()
    assert lines[0] == "demo: 3 chunks, overlapped, 10.000 ms"
    assert lines[1:5] == ["    host |AB    a  b|",
                          "     h2d | AABB    B|",  # chunk 27: B again (the letters cycle), one column at least
                          " compute |   AABBB  |",
                          "     d2h |     A  B |"]
    assert lines[5].split() == ["0", "ms", "10.000", "ms"]
    assert t.busy_ms("h2d") == pytest.approx(4.2) and t.span_ms == 10.0
    assert t.overlap() == pytest.approx((1 + 2 + 2 + 1 + 1 + 2 + 3 + 1 + 1 + 1 + 0.2) / 10)


def test_packing_threads_in_a_forked_child(emulator):
    """The packing threads are started once and kept; a child forked after
    they started has none of them, and its pipeline starts its own (a child
    of a process that used the CUDA backend cannot use CUDA at all, so this
    runs on the emulator)."""
    import os
    import warnings
    before = _core.pipeline_config()
    _core.pipeline_config(threshold=0, chunk_bytes=4 << 20)
    try:
        x = rand(3 << 20, "float32", seed=21)  # 12 MiB: several threads a chunk
        want = gpuprims.sum(x)
        with warnings.catch_warnings():  # Python 3.12 warns of fork() in a process with threads: ours are idle
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: exit status 0 only for the same bits, through the pipeline
            try:
                calls = _core.pipeline_stats()["calls"]
                ok = gpuprims.sum(x).tobytes() == want.tobytes() and _core.pipeline_stats()["calls"] == calls + 1
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert gpuprims.sum(x).tobytes() == want.tobytes()  # the parent's threads still work
    finally:
        _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"])
