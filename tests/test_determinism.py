"""determinism=: the levels, and the properties that define gpu_to_gpu.

The expected bits come from tests/rfa_reference.py (NumPy, written from the
definition of the binned sum) or from its stored golden file, never from the
code under test; the properties (permutation, grid, segments, layouts) are
checked bitwise."""
import json
import math

import numpy as np
import pytest

import gpuprims
from gpuprims._numerics import exact_sum, sum_tolerance

import rfa_reference as R
from conftest import EMU_MAX_N, bits, random_array

FLOATS = [np.float32, np.float64]
SIZES = [1, 2, 3, 31, 32, 33, 255, 1024, 4097, 65537]


def g2g(x, **kw):
    return gpuprims.sum(x, determinism="gpu_to_gpu", **kw)


def _golden_rows():
    with open(R.GOLDEN) as f:
        return json.load(f)["cases"]


def _golden_params(limit):
    return [pytest.param(r, id=f"{r['dtype']}-{r['kind']}-{r['n']}") for r in _golden_rows()
            if r["n"] <= limit]


def _golden_check(row):
    x = R.golden_input(row["kind"], row["n"], row["dtype"], row["seed"])
    before = x.copy()
    got = g2g(x)
    want = np.array([int(row["bits"], 16)], dtype=R.UINT[np.dtype(row["dtype"])]).view(row["dtype"])[0]
    assert bits(got) == bits(want), (got, want)
    assert bits(x) == bits(before)


@pytest.mark.parametrize("row", _golden_params(EMU_MAX_N * 4))
def test_golden_bits_emulator(row, backend):
    """The stored bits of the reference, on every backend (cuda: skipped
    without a GPU)."""
    _golden_check(row)


@pytest.mark.gpu
@pytest.mark.parametrize("row", _golden_params(1 << 24))
def test_golden_bits_gpu_large(cuda, row):
    """The GPU gives the stored bits at every golden size up to 2^24."""
    _golden_check(row)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_golden_file_is_the_reference(dtype):
    """The golden file matches the reference as it is now (small cases), so
    it cannot drift from the definition."""
    for row in _golden_rows():
        if row["dtype"] == dtype and row["n"] <= 4097:
            x = R.golden_input(row["kind"], row["n"], row["dtype"], row["seed"])
            assert R.rfa_sum_bits(x) == int(row["bits"], 16)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES + [EMU_MAX_N + 7])
def test_matches_reference_and_permutations(dtype, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)).astype(dtype)
    want = R.rfa_sum(x)
    got = g2g(x)
    assert bits(got) == bits(want)
    for perm in (x[::-1].copy(), rng.permutation(x), np.sort(x)):
        assert bits(g2g(perm)) == bits(want)
    # strided and negative-stride views of the same multiset
    y = np.empty(2 * n, dtype)
    y[::2] = x
    y[1::2] = np.nan
    assert bits(g2g(y[::2])) == bits(want)
    assert bits(g2g(y[-2::-2])) == bits(want)


@pytest.mark.parametrize("grid", ["1", "2", "3", "17", "1000"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_launch_configuration_does_not_change_bits(monkeypatch, dtype, grid):
    x = random_array(100_003, dtype, seed=5) * dtype(1e3)
    m = random_array(12 * 5000, dtype, seed=6).reshape(12, 5000)
    want = R.rfa_sum(x)
    rows = [R.rfa_sum(r) for r in m]
    cols = [R.rfa_sum(c) for c in m.T[:50]]
    monkeypatch.setenv("GPUPRIMS_TEST_GRID", grid)
    assert bits(g2g(x)) == bits(want)
    assert bits(g2g(m, axis=1)) == bits(np.array(rows, dtype))
    assert bits(g2g(m, axis=0)[:50]) == bits(np.array(cols, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((7, 13), 1), ((7, 13), 0), ((3, 4, 5000), 2), ((3, 5000, 4), 1),
                                        ((5000, 3), 0), ((0, 5), 1), ((5, 0), 1)])
@pytest.mark.parametrize("order", ["C", "F", "neg"])
def test_axis_equals_per_problem_sums(dtype, shape, axis, order):
    base = random_array(int(np.prod(shape)), dtype, seed=len(shape)).reshape(shape)
    x = np.asfortranarray(base) if order == "F" else base
    if order == "neg":
        x = base[::-1]
    before = x.copy()
    got = g2g(x, axis=axis)
    moved = np.moveaxis(x, axis, -1)
    want = np.array([R.rfa_sum(r) for r in moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])], dtype).reshape(moved.shape[:-1])
    assert got.dtype == dtype and got.shape == want.shape
    assert bits(got) == bits(want)
    assert bits(x) == bits(before)


@pytest.mark.parametrize("dtype", FLOATS)
def test_segments_equal_per_segment_calls_in_any_order(dtype):
    rng = np.random.default_rng(3)
    n = 20_000
    x = random_array(n, dtype, seed=9) * dtype(1e4)
    cuts = np.sort(rng.integers(0, n, 40))
    off = np.concatenate([[0], cuts, cuts[:3], [n]]).astype(np.int64)
    off.sort()  # some empty segments
    got = g2g(x, segments=off)
    want = [g2g(x[a:b]) if b > a else dtype(0) for a, b in zip(off[:-1], off[1:])]
    assert bits(got) == bits(np.array(want, dtype))
    # the same segments in another order of the data
    order = rng.permutation(len(off) - 1)
    parts = [x[off[i]:off[i + 1]] for i in order]
    y = np.concatenate(parts)
    off2 = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
    assert bits(g2g(y, segments=off2)) == bits(got[order])


@pytest.mark.parametrize("dtype", FLOATS)
def test_float16_and_complex(dtype):
    x = random_array(3001, np.float32, seed=2)
    h = x.astype(np.float16)
    assert bits(g2g(h)) == bits(np.float16(R.rfa_sum(h, np.float32)))
    c = (random_array(3001, dtype, seed=3) + 1j * random_array(3001, dtype, seed=4))
    got = g2g(c)
    assert bits(got.real) == bits(R.rfa_sum(c.real)) and bits(got.imag) == bits(R.rfa_sum(c.imag))


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(dtype):
    big = np.finfo(dtype).max
    cases = [
        ([1.0, np.nan, 2.0], "nan"), ([np.inf, 1.0], np.inf), ([-np.inf, 5.0], -np.inf),
        ([np.inf, -np.inf], "nan"), ([big, big], np.inf), ([-big, -big], -np.inf),
        ([big, big, -big], big), ([-0.0, -0.0], 0.0), ([-0.0], 0.0), ([0.0, -0.0], 0.0),
        ([1.0, -1.0, -0.0], 0.0), ([np.finfo(dtype).smallest_subnormal] * 3, 3 * np.finfo(dtype).smallest_subnormal),
    ]
    for vals, want in cases:
        x = np.array(vals, dtype)
        got = g2g(x)
        if want == "nan":
            assert np.isnan(got), vals
            assert bits(got) == bits(np.array(R.QNAN[np.dtype(dtype)], R.UINT[np.dtype(dtype)]).view(dtype))
        else:
            assert bits(got) == bits(dtype(want)), (vals, got)
        assert bits(got) == bits(R.rfa_sum(x))
        for order in (x[::-1], np.roll(x, 1)):
            assert bits(g2g(order.copy())) == bits(got)
    assert bits(g2g(np.zeros(0, dtype))) == bits(dtype(0))
    # numpy agrees where the sum is exact (its sums start from +0.0)
    for vals in ([-0.0, -0.0], [-0.0], [np.inf, -np.inf], [1.0, np.nan], [np.inf, 2.0]):
        x = np.array(vals, dtype)
        assert bits(g2g(x)) == bits(np.sum(x)) or (np.isnan(g2g(x)) and np.isnan(np.sum(x)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["normal", "cancel", "mixed", "subnormal"])
@pytest.mark.parametrize("n", [1000, 65537])
def test_accuracy_within_run_to_run_bound(dtype, kind, n):
    x = R.golden_input(kind, n, dtype, 99)
    ref = exact_sum(x)
    got = float(g2g(x))
    tol = sum_tolerance(x, np.dtype(dtype), ref)
    assert abs(got - ref) <= tol
    # and the documented bound: n 2^-(K-1)W max|x| + one rounding
    p = R.PARAMS[np.dtype(dtype)]
    bound = n * 2.0 ** (-(p["K"] - 1) * p["W"]) * float(np.max(np.abs(x))) + 2.0 ** -p["P"] * abs(ref)
    assert abs(got - ref) <= bound * (1 + 1e-12) + math.ulp(0.0)


@pytest.mark.parametrize("level", ["not_guaranteed", "run_to_run", "gpu_to_gpu"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_exact_ops_same_kernels_every_level(level, dtype):
    x = random_array(5000, dtype, seed=1)
    for f in (gpuprims.min, gpuprims.max):
        assert bits(f(x, determinism=level)) == bits(f(x))
    if np.dtype(dtype).kind == "i":
        assert gpuprims.sum(x, determinism=level) == np.sum(x)
        assert gpuprims.sum(x, determinism=level, variant="single_pass") == np.sum(x)
        assert np.array_equal(gpuprims.cumsum(x, determinism=level), np.cumsum(x))


def test_not_guaranteed_is_run_to_run():
    x = random_array(10_001, np.float32, seed=4)
    assert bits(gpuprims.sum(x, determinism="not_guaranteed")) == bits(gpuprims.sum(x))


def test_errors():
    x = random_array(100, np.float32)
    for bad in ("gpu-to-gpu", "", None, 1, "GPU_TO_GPU"):
        with pytest.raises(ValueError, match="determinism must be one of"):
            gpuprims.sum(x, determinism=bad)
        with pytest.raises(ValueError, match="determinism must be one of"):
            gpuprims.cumsum(x, determinism=bad)
    with pytest.raises(ValueError, match="single_pass_reproducible"):
        gpuprims.sum(x, determinism="gpu_to_gpu", variant="single_pass")
    with pytest.raises(ValueError, match="segmented_reproducible"):
        gpuprims.sum(x.reshape(10, 10), axis=1, determinism="gpu_to_gpu", variant="segmented_adaptive")
    with pytest.raises(ValueError, match="decoupled_lookback_reproducible"):
        gpuprims.cumsum(x, determinism="gpu_to_gpu", variant="decoupled_lookback")
    with pytest.raises(ValueError, match="segmented_reproducible"):
        gpuprims.cumsum(x.reshape(10, 10), axis=1, determinism="gpu_to_gpu", variant="segmented_adaptive")
    # a reproducible row by name is fine at every level
    assert bits(gpuprims.sum(x, variant="single_pass_reproducible")) == bits(R.rfa_sum(x))


def test_registry_flag():
    rows = [v for v in gpuprims.variants("reduce") if v.reproducible]
    assert [v.name for v in rows] == ["single_pass_reproducible", "segmented_reproducible"]
    assert rows[1].batched and rows[1].segmented and not rows[0].batched
    rows = [v for v in gpuprims.variants("scan") if v.reproducible]
    assert [v.name for v in rows] == ["decoupled_lookback_reproducible", "segmented_reproducible"]
    assert rows[1].batched and rows[1].segmented and not rows[0].batched


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("chunks", [1, 2, 7, 64])
def test_host_states_merge_to_single_call_bits(dtype, chunks):
    """gpuprims._rfa: sum chunks to states, merge in any order, finalize:
    the bits of one gpu_to_gpu call, whatever the chunking."""
    from gpuprims import _rfa
    rng = np.random.default_rng(chunks)
    x = (random_array(30_011, dtype, seed=8) * 10.0 ** rng.uniform(-20, 20, 30_011)).astype(dtype)
    x[rng.integers(0, x.size)] *= dtype(1e6)  # a late new largest magnitude
    cuts = np.sort(rng.integers(0, x.size, chunks - 1))
    parts = np.split(x, cuts)
    states = [_rfa.sum_states(p) for p in parts]
    rng.shuffle(states)
    acc = states[0]
    for s in states[1:]:
        acc = _rfa.merge(s, acc)
    assert bits(_rfa.finalize(acc, dtype)) == bits(g2g(x))
    # per row, over an axis
    m = x[:30_000].reshape(100, 300)
    s = _rfa.merge(_rfa.sum_states(m[:, :150], axis=1), _rfa.sum_states(m[:, 150:], axis=1))
    assert bits(_rfa.finalize(s, dtype)) == bits(g2g(m, axis=1))
    # specials travel in the flags
    y = np.array([1.0, np.inf], dtype)
    z = np.array([-np.inf], dtype)
    assert np.isnan(_rfa.finalize(_rfa.merge(_rfa.sum_states(y), _rfa.sum_states(z)), dtype))


@pytest.fixture
def pipeline_restored(backend):
    """The host pipeline's settings restored after the test."""
    from gpuprims import _core
    before = _core.pipeline_config()
    yield _core
    _core.pipeline_config(threshold=before["threshold"], chunk_bytes=before["chunk_bytes"])
    gpuprims.set_device_memory_limit(None if before["device_limit"] < 0 else before["device_limit"])


CHUNK_BYTES = [0, 4096, 12288, 40000, 1 << 20]  # 0: the ring's slot


@pytest.mark.parametrize("dtype", FLOATS)
def test_host_pipeline_chunks_do_not_change_sum_bits(pipeline_restored, dtype):
    """A NumPy array through the host pipeline: one state per chunk, merged
    and rounded once on the device, so every chunk size (and a device-memory
    cap that forces small chunks) gives the reference's bits, those of the
    single call on a DeviceArray."""
    core = pipeline_restored
    rng = np.random.default_rng(11)
    n = 100_003
    x = (random_array(n, dtype, seed=12) * 10.0 ** rng.uniform(-12, 12, n)).astype(dtype)
    x[n - 5] = dtype(3e15)  # a new largest magnitude in the last chunk
    before = x.copy()
    want = R.rfa_sum(x)
    assert bits(np.asarray(g2g(gpuprims.to_device(x)))) == bits(want)
    for cb in CHUNK_BYTES:
        core.pipeline_config(threshold=0, chunk_bytes=cb)
        chunks = core.pipeline_stats()["chunks"]
        assert bits(g2g(x)) == bits(want), cb
        assert core.pipeline_stats()["chunks"] - chunks >= (2 if 0 < cb < x.nbytes else 1)
        # strided and reversed views go through the same packing
        assert bits(g2g(x[::-1])) == bits(want), cb
    core.pipeline_config(threshold=0, chunk_bytes=0)
    gpuprims.set_device_memory_limit(1 << 17)
    assert bits(g2g(x)) == bits(want)
    gpuprims.set_device_memory_limit(None)
    # float16 is cast per chunk and accumulated in float32
    h = (random_array(n, np.float32, seed=13) * 100).astype(np.float16)
    core.pipeline_config(threshold=0, chunk_bytes=4096)
    assert bits(g2g(h)) == bits(R.rfa_sum(h.astype(np.float32)).astype(np.float16))
    assert bits(x) == bits(before)


# ------------------------------------------------------------------ scans
# Element i of a gpu_to_gpu inclusive scan is bitwise the gpu_to_gpu sum of
# x[:i+1] (exclusive: of x[:i], +0.0 first).  The expected bits come from
# rfa_reference at sampled indices (every tile boundary of the kernels'
# 2048-element tiles among them) and from the 1-D sum calls.

SCAN_SIZES = [1, 2, 7, 33, 2047, 2048, 2049, 4096 + 5, 20_011]


def g2g_scan(x, inclusive=True, **kw):
    return gpuprims.scan(x, inclusive=inclusive, determinism="gpu_to_gpu", **kw)


def sample_indices(n, rng, extra=24):
    idx = {0, n - 1, n // 2}
    for b in range(2048, n + 1, 2048):
        idx.update({b - 1, b, b + 1})
    idx.update(rng.integers(0, n, extra).tolist())
    return sorted(i for i in idx if 0 <= i < n)


def check_prefixes(x, inc, exc, rng, acc=None):
    acc = np.dtype(acc or x.dtype)
    for i in sample_indices(x.size, rng):
        assert bits(inc[i]) == bits(R.rfa_sum(x[:i + 1], acc)), i
        want = R.rfa_sum(x[:i], acc) if i > 0 else acc.type(0.0)
        assert bits(exc[i]) == bits(want), i


def wild(n, dtype, seed):
    """Random data over many magnitudes, with a late new largest one."""
    rng = np.random.default_rng(seed)
    x = (random_array(n, dtype, seed=seed) * 10.0 ** rng.uniform(-10, 10, n)).astype(dtype)
    if n > 3:
        x[n - 3] = dtype(7e14)
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SCAN_SIZES)
def test_scan_elements_are_prefix_sums(dtype, n, backend):
    rng = np.random.default_rng(n)
    x = wild(n, dtype, n)
    before = x.copy()
    inc, exc = g2g_scan(x), g2g_scan(x, inclusive=False)
    assert inc.dtype == dtype and inc.shape == (n,) and exc.shape == (n,)
    check_prefixes(x, inc, exc, rng)
    for i in rng.integers(0, n, 4):  # the 1-D sum call itself
        assert bits(inc[i]) == bits(g2g(x[:i + 1]))
    assert bits(gpuprims.cumsum(x, determinism="gpu_to_gpu")) == bits(inc)
    # the documented bound (cuda/rfa.cuh, ERROR BOUND) of each prefix:
    # (i+1) 2^-(2W) max|x[:i+1]| + one rounding; fsum is exact
    step = 2.0 ** (-42 if dtype == np.float32 else -52)
    for i in sample_indices(n, rng, 8):
        exact = math.fsum(x[:i + 1].astype(np.float64))
        bound = (i + 1) * step * float(np.max(np.abs(x[:i + 1]))) + np.finfo(dtype).eps * abs(exact)
        assert abs(float(inc[i]) - exact) <= bound, i
    assert bits(x) == bits(before)


def test_scan_empty_and_device_arrays(backend):
    assert g2g_scan(np.zeros(0, np.float32)).shape == (0,)
    x = wild(5000, np.float32, 3)
    d = gpuprims.to_device(x)
    assert bits(g2g_scan(d).get()) == bits(g2g_scan(x))
    assert bits(g2g_scan(d, inclusive=False).get()) == bits(g2g_scan(x, inclusive=False))


@pytest.mark.parametrize("grid", ["1", "2", "3", "17", "1000"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_launch_configuration_does_not_change_bits(monkeypatch, dtype, grid):
    x = wild(30_011, dtype, 5)
    m = wild(12 * 700, dtype, 6).reshape(12, 700)
    want = g2g_scan(x), g2g_scan(x, inclusive=False), g2g_scan(m, axis=1), g2g_scan(m, axis=0)
    monkeypatch.setenv("GPUPRIMS_TEST_GRID", grid)
    got = g2g_scan(x), g2g_scan(x, inclusive=False), g2g_scan(m, axis=1), g2g_scan(m, axis=0)
    for a, b in zip(got, want):
        assert bits(a) == bits(b)
    check_prefixes(x, got[0], got[1], np.random.default_rng(1))


@pytest.mark.parametrize("dtype,acc", [(np.float32, np.float32), (np.float64, np.float64),
                                       (np.float32, np.float64)])
def test_scan_chunks_and_tiles_give_the_same_bits(monkeypatch, dtype, acc):
    # 300_007 elements are 5 float32 chunks of 32 tiles of the kernel that
    # scans a chunk's tiles with each warp's running state (64 Ki elements
    # each; float64: 10 of 32 Ki), the last one partial.  The grid (the
    # resident blocks the launcher plans for) picks the chunk size: the
    # largest with at least half as many chunks as blocks, then chunks of 4
    # tiles where there are at least half (float32) or an eighth (float64)
    # as many, then the kernel that chains every tile.  float32: grids 2,
    # 15, 30 and 60 run chunks of 32, 16, 8 and 4 tiles (5, 10, 19 and 37
    # chunks), 1000 the tile kernel; float64: 2, 30, 60, 100 (10, 19, 37,
    # 74 chunks) and 1000.  All must give every prefix's reproducible sum.
    # dtype=float64 on float32 data: the chunked kernel reads float32 and
    # accumulates float64 (its elements converted one by one, not read as
    # 16-byte runs of the accumulator's type).
    x = wild(300_007, dtype, 8)
    x[200_000] = dtype(-3e15)  # a new largest magnitude inside a chunk
    before = x.copy()
    kw = {} if acc is dtype else {"dtype": acc}
    got = {}
    grids = ("2", "15", "30", "60", "1000") if acc is np.float32 else ("2", "30", "60", "100", "1000")
    for grid in grids:
        monkeypatch.setenv("GPUPRIMS_TEST_GRID", grid)
        got[grid] = g2g_scan(x, **kw), g2g_scan(x, inclusive=False, **kw)
    assert bits(x) == bits(before)
    first = got.pop("2")
    for other in got.values():
        for a, b in zip(first, other):
            assert a.dtype == b.dtype == acc and bits(a) == bits(b)
    check_prefixes(x, first[0], first[1], np.random.default_rng(2), acc=acc)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((7, 13), 1), ((7, 13), 0), ((3, 4, 3000), 2), ((3, 3000, 4), 1),
                                        ((5000, 3), 0), ((0, 5), 1), ((5, 0), 1), ((3000, 40), 0)])
@pytest.mark.parametrize("order", ["C", "F", "neg"])
def test_scan_axis_equals_per_problem_calls(dtype, shape, axis, order):
    base = wild(int(np.prod(shape)), dtype, len(shape)).reshape(shape)
    x = np.asfortranarray(base) if order == "F" else (base[::-1] if order == "neg" else base)
    before = x.copy()
    for inclusive in (True, False):
        got = g2g_scan(x, inclusive, axis=axis)
        assert got.shape == x.shape and got.dtype == dtype
        moved, gm = np.moveaxis(x, axis, -1), np.moveaxis(got, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1]) if moved.size else []
        grows = gm.reshape(-1, gm.shape[-1]) if gm.size else []
        for r in range(0, len(rows), max(1, len(rows) // 6)):
            assert bits(grows[r]) == bits(g2g_scan(np.ascontiguousarray(rows[r]), inclusive)), r
    assert bits(x) == bits(before)


@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_segments_equal_per_segment_calls_in_any_order(dtype):
    rng = np.random.default_rng(4)
    n = 20_000
    x = wild(n, dtype, 9)
    cuts = np.sort(rng.integers(0, n, 40))
    off = np.sort(np.concatenate([[0], cuts, cuts[:3], [n]])).astype(np.int64)  # some empty
    for inclusive in (True, False):
        got = g2g_scan(x, inclusive, segments=off)
        for a, b in zip(off[:-1], off[1:]):
            if b > a:
                assert bits(got[a:b]) == bits(g2g_scan(x[a:b], inclusive))
        order = rng.permutation(len(off) - 1)
        y = np.concatenate([x[off[i]:off[i + 1]] for i in order])
        got2 = g2g_scan(y, inclusive, segments=np.concatenate(
            [[0], np.cumsum([off[i + 1] - off[i] for i in order])]).astype(np.int64))
        assert bits(got2) == bits(np.concatenate([got[off[i]:off[i + 1]] for i in order]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_host_pipeline_chunks_do_not_change_bits(pipeline_restored, dtype):
    """A NumPy array scanned through the host pipeline: the running state
    is carried from chunk to chunk, so every chunk size gives the bits of
    the single call on a DeviceArray."""
    core = pipeline_restored
    x = wild(30_011, dtype, 10)
    before = x.copy()
    d = gpuprims.to_device(x)
    want = g2g_scan(d).get(), g2g_scan(d, inclusive=False).get()
    check_prefixes(x, want[0], want[1], np.random.default_rng(2))
    for cb in CHUNK_BYTES:
        core.pipeline_config(threshold=0, chunk_bytes=cb)
        chunks = core.pipeline_stats()["chunks"]
        assert bits(g2g_scan(x)) == bits(want[0]), cb
        assert bits(g2g_scan(x, inclusive=False)) == bits(want[1]), cb
        assert core.pipeline_stats()["chunks"] - chunks >= (4 if 0 < cb < x.nbytes else 2)
        r = x[::-1]  # strided: packed per chunk
        assert bits(g2g_scan(r)) == bits(g2g_scan(np.ascontiguousarray(r))), cb
    core.pipeline_config(threshold=0, chunk_bytes=0)
    gpuprims.set_device_memory_limit(1 << 17)
    assert bits(g2g_scan(x)) == bits(want[0])
    gpuprims.set_device_memory_limit(None)
    core.pipeline_config(threshold=0, chunk_bytes=4096)
    h = (random_array(10_007, np.float32, seed=14) * 100).astype(np.float16)
    want16 = g2g_scan(gpuprims.to_device(h)).get()
    assert want16.dtype == np.float16 and bits(g2g_scan(h)) == bits(want16)
    assert bits(x) == bits(before)


@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_float16_and_complex(dtype):
    rng = np.random.default_rng(5)
    h = (random_array(5003, np.float32, seed=2) * 50).astype(np.float16)
    got = g2g_scan(h)
    assert got.dtype == np.float16  # numpy.cumsum's result dtype; accumulated in float32
    for i in sample_indices(h.size, rng, 8):
        assert bits(got[i]) == bits(np.float16(R.rfa_sum(h[:i + 1], np.float32)))
    c = wild(4099, dtype, 3) + 1j * wild(4099, dtype, 4)
    got = g2g_scan(c)
    inc_r, inc_i = g2g_scan(np.ascontiguousarray(c.real)), g2g_scan(np.ascontiguousarray(c.imag))
    assert bits(got.real.copy()) == bits(inc_r) and bits(got.imag.copy()) == bits(inc_i)


@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_special_values(dtype):
    x = random_array(5000, dtype, seed=7)
    y = x.copy()
    y[3000] = np.nan
    got = g2g_scan(y)
    assert bits(got[:3000]) == bits(g2g_scan(x)[:3000])
    assert np.all(np.isnan(got[3000:]))
    assert bits(got[3000:]) == bits(np.full(2000, R.rfa_sum(y)))  # the one quiet NaN
    z = x.copy()
    z[100], z[4000] = np.inf, -np.inf
    got = g2g_scan(z)
    assert np.all(got[100:4000] == np.inf) and np.all(np.isnan(got[4000:]))
    ex = g2g_scan(z, inclusive=False)
    assert ex[100] != np.inf and ex[101] == np.inf and np.isnan(ex[4001])
    big = np.finfo(dtype).max
    w = np.array([big, big, -big, 1], dtype)
    assert list(g2g_scan(w)) == [big, np.inf, big, big]  # the exact sums, rounded once each


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_continues_from_a_carry_in_state(pipeline_restored, dtype, inclusive):
    """gpuprims.scan(x[c:], _carry_in=sum_states(x[:c])) has the bits of the
    whole scan's elements from c on (the chunked scans of gpuprims.dask),
    on device arrays and through the host pipeline's chunks."""
    from gpuprims import _rfa
    core = pipeline_restored
    x = wild(20_011, dtype, 4)
    before = x.copy()
    whole = g2g_scan(gpuprims.to_device(x), inclusive=inclusive).get()
    for cut in (1, 2048, 9999, 20_010):
        st = _rfa.sum_states(x[:cut])
        dev = gpuprims.scan(gpuprims.to_device(x[cut:]), inclusive=inclusive, determinism="gpu_to_gpu",
                            _carry_in=st).get()
        assert bits(dev) == bits(whole[cut:]), cut
        core.pipeline_config(threshold=0, chunk_bytes=4096)
        host = gpuprims.scan(x[cut:], inclusive=inclusive, determinism="gpu_to_gpu", _carry_in=st)
        core.pipeline_config(threshold=0, chunk_bytes=0)
        assert bits(host) == bits(whole[cut:]), cut
    assert bits(x) == bits(before)


def test_a_carry_in_state_is_refused_where_it_means_nothing(backend):
    from gpuprims import _core, _rfa, _registry
    x = random_array(600, np.float32, seed=3)
    st = _rfa.sum_states(x[:5])
    for kw in (dict(determinism="run_to_run"), dict(determinism="gpu_to_gpu", axis=0),
               dict(determinism="gpu_to_gpu", segments=np.array([0, 300, 600]))):
        arr = x.reshape(20, 30) if "axis" in kw else x
        with pytest.raises(ValueError, match="carry-in"):
            gpuprims.scan(arr, _carry_in=st, **kw)
    with pytest.raises(ValueError, match="carry-in"):
        gpuprims.scan(np.arange(1, 9, dtype=np.int32), determinism="gpu_to_gpu", _carry_in=st)
    with pytest.raises(TypeError, match="STATE"):
        gpuprims.scan(x, determinism="gpu_to_gpu", _carry_in=np.zeros(2, _rfa.STATE))
    # the core checks it too: a carry on a row that is not reproducible
    f = _core.dtypes().index("float32")
    d, o = gpuprims.to_device(x), gpuprims.DeviceArray((600,), np.float32)
    carry = gpuprims.to_device(np.frombuffer(st.tobytes(), np.uint8).copy())
    row = _registry.lookup("scan", "decoupled_lookback")
    with pytest.raises(ValueError, match="carry-in"):
        _core.call("scan", row.index, d.ptr, o.ptr, (600, f, f, _core.ops().index("sum"), True, None, -1,
                                                     carry.ptr))


def rounding_paths(kind, n, dtype, rng):
    """Data whose prefix sums take each way the 1-D scan rounds an element
    (cuda/scan/reproducible.cuh, Frame::round): float32 counts beyond 64
    bits (float64's need some 2^28 elements), sums that overflow to Inf,
    subnormal sums after a cancellation (only below the fast path's bins,
    whose frames are normal), top bins that grow (or never grow) along the
    array, and elements that are each a tie at the lowest kept quantum (odd
    multiples of half of it, after a first element that fixes the top bin),
    whose counts round to even."""
    finfo = np.finfo(dtype)
    if kind == "ties":
        p = R.PARAMS[np.dtype(dtype)]
        lead = np.array([0.75], dtype)
        e_m = p["E0"] + (R.top_index(lead, dtype) - p["K"] + 1) * p["W"]
        odd = 2 * rng.integers(1 << (p["P"] - 4), 1 << (p["P"] - 3), n) + 1  # below 2^(P-2): exact in dtype
        x = (rng.choice([-1.0, 1.0], n) * odd * 2.0 ** (e_m - 1)).astype(dtype)
        x[0] = lead[0]
        return x
    u = rng.uniform(0.5, 1.0, n)
    if kind == "bin_top":  # near the top of bin 7 (float32) / 41 (float64)
        return (u * (2.0 ** 18 if dtype == np.float32 else 2.0 ** 15)).astype(dtype)
    if kind == "overflow":
        return (u * float(finfo.max) / 8).astype(dtype)
    if kind == "subnormal":
        x = (rng.integers(-40, 41, n) * float(finfo.smallest_subnormal)).astype(dtype)
        # the largest magnitude low enough that bin 0 (the subnormals') stays kept
        big = dtype(2.0 ** -90 if dtype == np.float32 else 2.0 ** -1000)
        for i in (0, n // 2):
            x[i], x[i + 3] = big, -big
        return x
    mags = np.sort(np.abs(random_array(n, dtype, seed=n)) * 10.0 ** rng.uniform(-12, 12, n)).astype(dtype)
    return mags if kind == "increasing" else mags[::-1].copy()


@pytest.mark.parametrize("grid", ["2", "1000"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["bin_top", "overflow", "subnormal", "increasing", "decreasing", "ties"])
def test_scan_rounding_paths(monkeypatch, dtype, kind, grid, backend):
    # n: two tiles and a part, for every tile shape.  A grid of 2 blocks
    # runs the kernel that scans chunks of tiles with each warp's running
    # state, whose fast steps round float32's elements from 64-bit counts
    # where they fit; a grid of 1000 the kernel that chains every tile.
    n = 9001
    monkeypatch.setenv("GPUPRIMS_TEST_GRID", grid)
    rng = np.random.default_rng(19)
    x = rounding_paths(kind, n, dtype, rng)
    assert np.count_nonzero(x) > n // 2
    before = x.copy()
    inc, exc = g2g_scan(x), g2g_scan(x, inclusive=False)
    check_prefixes(x, inc, exc, rng)
    for i in range(0, n, 97):  # warp and thread boundaries of any shape, densely
        assert bits(inc[i]) == bits(R.rfa_sum(x[:i + 1])), i
    if kind == "overflow":
        assert np.isinf(inc[-1]) and np.isfinite(inc[0])
    if kind == "subnormal":
        tiny = np.abs(inc) < np.finfo(dtype).tiny
        assert np.count_nonzero(tiny & (inc != 0)) > n // 4
    assert bits(x) == bits(before)
