"""gpuprims.compare and gpuprims.benchmark with axis= and segments= (and
determinism=): the rows chosen from the registry's flags, the argument
checks, and - without a GPU - the whole comparison run on the emulator
through a stand-in timer (the kernels' outputs are real, the times made
up), so that every row's output is checked against NumPy's.  With a GPU the
same tables are timed for real and every row must match."""
import types

import numpy as np
import pytest

import gpuprims
from gpuprims import _bench, _core

from conftest import GPU_OK

REDUCE = gpuprims.variants("reduce")
SCAN = gpuprims.variants("scan")


def names(rows):
    return [v.name for v in rows]


# ------------------------------------------------- row selection (no GPU)

def test_axis_rows_are_the_batched_ones_with_cub_segmented():
    rows = _bench.select_rows("reduce", axis=0)
    assert names(rows) == [v.name for v in REDUCE if v.batched]
    assert "cub_segmented" in names(rows) and "cub" not in names(rows)
    assert names(_bench.select_rows("reduce", axis=0, baselines=False)) == \
        [v.name for v in REDUCE if v.batched and not v.baseline]


def test_segment_rows_are_the_segmented_ones():
    rows = _bench.select_rows("reduce", segments=[0, 3, 9])
    assert names(rows) == [v.name for v in REDUCE if v.segmented]
    assert "batched_columns" not in names(rows)  # columns only
    rows = _bench.select_rows("scan", segments=[0, 9])
    assert names(rows) == [v.name for v in SCAN if v.segmented] and all(not v.baseline for v in rows)


def test_one_d_rows_unchanged():
    assert names(_bench.select_rows("reduce")) == names(gpuprims._family.get("reduce").variants())


def test_gpu_to_gpu_picks_the_reproducible_rows():
    rows = _bench.select_rows("reduce", determinism="gpu_to_gpu")
    assert all(v.reproducible or v.name in ("cub_reproducible",) for v in rows)
    assert "single_pass_reproducible" in names(rows) and "cub_reproducible" in names(rows)
    assert "single_pass" not in names(rows) and "cub" not in names(rows)
    rows = _bench.select_rows("reduce", axis=-1, determinism="gpu_to_gpu")
    assert names(rows) == [v.name for v in REDUCE if v.batched and v.reproducible]
    # integers and min/max are exact in any order: every row gives the same bits
    assert names(_bench.select_rows("reduce", determinism="gpu_to_gpu", op="max")) == \
        names(_bench.select_rows("reduce"))
    assert names(_bench.select_rows("reduce", determinism="gpu_to_gpu", dtype="int32")) == \
        names(_bench.select_rows("reduce"))


def test_gpu_to_gpu_without_reproducible_rows_says_so():
    if any(v.reproducible for v in SCAN):
        pytest.skip("this build has reproducible scans")
    with pytest.raises(ValueError, match="not available for a float scan"):
        _bench.select_rows("scan", determinism="gpu_to_gpu")


def test_named_rows_must_take_the_layout_and_level():
    with pytest.raises(ValueError, match="does not take an axis"):
        _bench.select_rows("reduce", ["single_pass"], axis=0)
    with pytest.raises(ValueError, match="does not take segments"):
        _bench.select_rows("reduce", ["batched_columns"], segments=[0, 5])
    with pytest.raises(ValueError, match="does not take one whole array"):
        _bench.select_rows("scan", ["segmented_adaptive"])
    with pytest.raises(ValueError, match="not gpu_to_gpu reproducible"):
        _bench.select_rows("reduce", ["segmented_warp"], axis=1, determinism="gpu_to_gpu")
    with pytest.raises(ValueError, match="determinism must be one of"):
        _bench.select_rows("reduce", determinism="bitwise")
    rows = _bench.select_rows("reduce", ["segmented_warp", "batched_thread"], axis=1)
    assert names(rows) == ["batched_thread", "segmented_warp", "cub_segmented"]  # journey order


def test_without_gpu_layout_helpers_raise_nodeviceerror():
    if GPU_OK:
        pytest.skip("checks the no-GPU path; a GPU is visible here")
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.compare("reduce", shape=(64, 8), axis=0)
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.benchmark("scan", "auto", (64, 8), axis=-1)
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.compare("reduce", n=100, segments=[0, 50, 100], determinism="gpu_to_gpu")


def test_bad_layout_arguments_before_any_gpu_work():
    with pytest.raises(ValueError, match="does not take an axis"):
        gpuprims.benchmark("reduce", "single_pass", (64, 8), axis=0)
    with pytest.raises(ValueError, match="not gpu_to_gpu"):
        gpuprims.benchmark("reduce", "segmented_warp", (64, 8), axis=0, determinism="gpu_to_gpu")
    with pytest.raises(ValueError, match="determinism must be one of"):
        gpuprims.compare("scan", shape=(8, 8), axis=0, determinism="same")


# --------------------------- the whole comparison on the emulator (no GPU)

@pytest.fixture
def emulated_timer(monkeypatch):
    """The device side of compare on the emulator: _core.time runs the row
    once through _core.call (its real output) and returns made-up times
    (1 ms x registry position); the copy roof is made up too."""
    if GPU_OK:
        pytest.skip("the stand-in timer is for machines without a GPU")
    before = gpuprims.backend()
    gpuprims.set_backend("emulator")

    def stand_in(family, index):
        """CUB's rows run on the GPU only: the layout's auto row stands in."""
        v = gpuprims.variants(family)[index]
        if "emulator" in v.backends:
            return index
        return next(r.index for r in gpuprims.variants(family) if r.auto_batched)

    def fake_time(family, index, src, out, params, warmup, repeat, flush):
        value = _core.call(family, stand_in(family, index), src, out, params)
        t = 1.0 + index
        return [t] * repeat, value

    def fake_call(family, index, src, out, params, *rest):
        return _core.call(family, stand_in(family, index), src, out, params, *rest)

    fake = types.SimpleNamespace(
        device_info=lambda: {"l2_cache_bytes": 1 << 20, "name": "emulated"},
        time=fake_time, call=fake_call,
        time_copy=lambda nbytes, warmup, repeat, flush: [0.5] * repeat)
    monkeypatch.setattr(_bench, "_core", fake)
    _bench._l2_bytes.cache_clear()
    yield
    _bench._l2_bytes.cache_clear()
    gpuprims.set_backend(before)


def check_rows(t, expect):
    assert t.names() == expect + ["copy roof", "numpy"], t.names()
    for r in t:
        if r["variant"] == "copy roof":
            continue
        if r["note"].startswith("skipped"):
            assert r["median_ms"] is None
            continue
        assert r["matches"] is True, r
        assert r["distinct"] == 1, r


@pytest.mark.parametrize("family", ["reduce", "scan"])
@pytest.mark.parametrize("shape,axis", [((300, 7), -1), ((300, 7), 0), ((5, 33, 17), 1), ((1, 1000), 1)])
def test_emulated_axis_tables(emulated_timer, family, shape, axis):
    t = gpuprims.compare(family, shape=shape, axis=axis, repeat=2, k=2)
    rows = [v.name for v in gpuprims.variants(family) if v.batched and not v.baseline]
    base = [v.name for v in gpuprims.variants(family) if v.batched and v.baseline]
    check_rows(t, rows + base)
    assert t.meta["axis"] == axis % len(shape) and t.meta["bytes"] > 0
    if family == "reduce":
        cub = t["cub_segmented"]
        rows_of_consecutive = axis % len(shape) == len(shape) - 1 or all(n == 1 for n in shape[axis + 1:])
        assert cub["note"].startswith("skipped") != rows_of_consecutive, cub  # CUB takes rows only
        if rows_of_consecutive:
            assert cub["x_baseline"] == pytest.approx(1.0)


@pytest.mark.parametrize("family", ["reduce", "scan"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_emulated_segment_tables(emulated_timer, family, dtype, op):
    off = np.array([0, 0, 1, 40, 40, 41, 300, 1000, 1200], np.int64)
    t = gpuprims.compare(family, n=1200, dtype=dtype, op=op, segments=off, repeat=2, k=1,
                         inclusive=(op != "max"))
    rows = [v.name for v in gpuprims.variants(family) if v.segmented and not v.baseline]
    base = [v.name for v in gpuprims.variants(family) if v.segmented and v.baseline]
    check_rows(t, rows + base)
    assert t.meta["segments"] == off.size - 1


def test_emulated_rows_segments_and_a_planted_error(emulated_timer):
    """A wrong output is caught: an extra row off by one in one segment."""
    off = np.array([0, 10, 10, 64], np.int64)
    x = np.random.default_rng(3).random(64).astype(np.float32)

    def wrong(d):
        y = gpuprims.sum(d, segments=off).get()
        y[2] += 1
        return y

    t = gpuprims.compare("reduce", x=x, segments=off, repeat=2, k=1, extra={"wrong": wrong})
    assert t["wrong"]["matches"] is False
    assert t["segmented_adaptive"]["matches"] is True
    # empty segments give the identity in the NumPy row too (reduceat's differs)
    assert t["numpy"]["matches"] is True


def test_emulated_per_row_segments_and_reproducible(emulated_timer):
    x = np.random.default_rng(5).random((40, 30)) - 0.5
    t = gpuprims.compare("reduce", x=x, axis=-1, segments=[0, 0, 7, 30], repeat=2, k=2,
                         determinism="gpu_to_gpu")
    assert t.names() == ["segmented_reproducible", "copy roof", "numpy"]
    assert t["segmented_reproducible"]["matches"] is True
    assert t.meta["determinism"] == "gpu_to_gpu" and "gpu_to_gpu" in t.title


def test_emulated_benchmark_layouts(emulated_timer):
    r = gpuprims.benchmark("scan", "auto", (50, 9), axis=0, inclusive=False, repeat=3, k=2)
    assert r.variant == next(v.name for v in SCAN if v.auto_batched)
    assert r.matches is True and r.distinct == 1 and r.bytes == 2 * 50 * 9 * 4
    r = gpuprims.benchmark("reduce", "segmented_warp", np.arange(1, 101, dtype=np.int64),
                           segments=[0, 50, 50, 100], op="min", repeat=2, k=1)
    assert r.matches is True and r.bytes == 100 * 8 + 3 * 8 + 4 * 8
    r = gpuprims.benchmark("reduce", "auto", (64, 6), axis=1, determinism="gpu_to_gpu", repeat=2, k=1)
    assert r.variant == "segmented_reproducible" and r.matches is True


def test_emulated_reference_helpers():
    """The segmented references against per-segment NumPy loops."""
    rng = np.random.default_rng(9)
    x = rng.random(500) - 0.5
    off = np.concatenate([[0], np.sort(rng.integers(0, 500, 30)), [500]]).astype(np.int64)
    for inclusive in (True, False):
        got = _bench._segmented_scan(x, off, "sum", inclusive)
        want = np.concatenate([np.cumsum(x[a:b]) if inclusive else
                               np.concatenate([[0.0], np.cumsum(x[a:b])[:-1]])[: b - a]
                               for a, b in zip(off[:-1], off[1:])])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    got = _bench._segmented_reduce(x, off, "max", np.float64)
    want = [x[a:b].max() if b > a else -np.inf for a, b in zip(off[:-1], off[1:])]
    assert np.array_equal(got, want)
    short = np.array([2, 2, 5], np.int64)  # segments not covering the data
    assert np.array_equal(_bench._segmented_reduce(x, short, "sum", np.float64), [0.0, x[2:5].sum()])


# ------------------------------------------------------------ on the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("family", ["reduce", "scan"])
@pytest.mark.parametrize("axis", [0, -1])
def test_gpu_axis_tables_match(cuda, family, axis):
    t = gpuprims.compare(family, shape=(1 << 12, 96), axis=axis, repeat=3, k=2)
    for r in t:
        if r["variant"] != "copy roof" and not r["note"].startswith("skipped"):
            assert r["matches"] is True and r["median_ms"] > 0, r
    assert t["copy roof"]["gbps"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("family", ["reduce", "scan"])
def test_gpu_segment_tables_match(cuda, family):
    rng = np.random.default_rng(1)
    n = 1 << 18
    off = np.concatenate([[0], np.sort(rng.integers(0, n, 999)), [n]]).astype(np.int64)
    t = gpuprims.compare(family, n=n, segments=off, repeat=3, k=2)
    for r in t:
        if r["variant"] != "copy roof":
            assert r["matches"] is True, r
    if family == "reduce":
        assert t["cub_segmented"]["x_baseline"] == pytest.approx(1.0)


@pytest.mark.gpu
def test_gpu_reproducible_distinct(cuda):
    t = gpuprims.compare("reduce", n=1 << 20, determinism="gpu_to_gpu", repeat=3, k=3)
    for r in t:
        if r["variant"] not in ("copy roof", "numpy") and r.get("median_ms"):
            assert r["matches"] is True and r["distinct"] == 1, r
