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
from conftest import EMU_MAX_N, random_array

FLOATS = [np.float32, np.float64]
SIZES = [1, 2, 3, 31, 32, 33, 255, 1024, 4097, 65537]


def bits(v):
    return np.asarray(v).tobytes()


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
def test_golden_bits_gpu_large(row):
    """The GPU gives the stored bits at every golden size up to 2^24."""
    before = gpuprims.backend()
    gpuprims.set_backend("cuda")
    try:
        _golden_check(row)
    finally:
        gpuprims.set_backend(before)


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
    with pytest.raises(ValueError, match="run_to_run"):
        gpuprims.cumsum(x, determinism="gpu_to_gpu")
    # a reproducible row by name is fine at every level
    assert bits(gpuprims.sum(x, variant="single_pass_reproducible")) == bits(R.rfa_sum(x))


def test_registry_flag():
    rows = [v for v in gpuprims.variants("reduce") if v.reproducible]
    assert [v.name for v in rows] == ["single_pass_reproducible", "segmented_reproducible"]
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
