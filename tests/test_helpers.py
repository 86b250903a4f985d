"""The timing helpers (benchmark, compare, Table), the CLI, occupancy and
profile.

Runs anywhere: Table formatting / JSON / HTML / plot, the compare pipeline
fed by a fake timing source (formatting and bookkeeping only: its times are
made up), CLI parsing and --json, the occupancy report, profile() against
a fake ncu.  Needs a GPU: the same helpers timing the real kernels, a
planted wrong variant showing as a mismatch, occupancy from the CUDA API,
profile() under the real ncu.
"""
import importlib.util
import json
import math
import os
import stat
import subprocess
import sys
import types

import numpy as np
import pytest

import gpuprims
from gpuprims import _bench
from gpuprims._numerics import ulps
from gpuprims._occupancy import occupancy_report
from gpuprims._table import Column, Table

from conftest import GPU_OK

gpu = pytest.mark.gpu
FAMILIES = ("reduce", "scan", "transpose")
ROW_KEYS = {"variant", "title", "median_ms", "min_ms", "max_ms", "times_ms", "gbps", "roof_pct",
            "x_prev", "x_first", "x_baseline", "matches", "max_error", "error_unit", "distinct",
            "bytes", "note"}


def registry_names(family, baselines=True):
    """The 1-D journey's names (the tables of all elements), baselines last."""
    return [v.name for v in gpuprims.variants(family)
            if (baselines or not v.is_baseline) and not (v.batched or v.segmented)]


def perturbed(family):
    """A planted wrong variant: the family's auto variant, one output
    element changed (a sum off by 1), through the same compare machinery."""
    def reduce_wrong(d):
        return gpuprims.sum(d) + np.float32(1.0)

    def scan_wrong(d):
        out = gpuprims.cumsum(d).get()
        out[len(out) // 2] += 1
        return out

    def transpose_wrong(d):
        out = gpuprims.transpose(d).get()
        out[0, -1], out[-1, 0] = out[-1, 0] + 1, out[0, -1]
        return out

    return {"reduce": reduce_wrong, "scan": scan_wrong, "transpose": transpose_wrong}[family]


def passthrough(family):
    """The auto variant through the same wrapper path: must match."""
    return {"reduce": lambda d: gpuprims.sum(d), "scan": lambda d: gpuprims.cumsum(d),
            "transpose": lambda d: gpuprims.transpose(d)}[family]


def size_kw(family, n):
    return {"shape": (n // 64, 64)} if family == "transpose" else {"n": n}


# ----------------------------------------------------------- Table

def sample_table():
    cols = [Column("variant", "variant", align="<"), Column("median_ms", "ms", ".4f"),
            Column("gbps", "GB/s", ".0f"), Column("matches", "ok", align="<")]
    rows = [{"variant": "a<b>", "median_ms": 1.5, "gbps": 100.0, "matches": True},
            {"variant": "slow", "note": "skipped: n > max_n 65536"},
            {"variant": "bad", "median_ms": 0.25, "gbps": float("nan"), "matches": False}]
    return Table(rows, cols, title="demo", meta={"roof_gbps": 200.0, "x": float("inf")}, footer="foot")


def test_table_text_markdown_html():
    t = sample_table()
    text = str(t)
    lines = text.splitlines()
    assert lines[0] == "demo" and lines[1].split() == ["variant", "ms", "GB/s", "ok"]
    assert "1.5000" in text and "NO" in text and "yes" in text and lines[-1] == "foot"
    assert any(line.startswith("slow") and "skipped: n > max_n 65536" in line for line in lines)
    md = t.to_markdown()
    assert "| a<b> | 1.5000 | 100 | yes |" in md and "|---|---:|---:|---|" in md
    html = t._repr_html_()
    assert "a&lt;b&gt;" in html and "<table>" in html and 'colspan="3"' in html


def test_table_json_and_dicts_are_plain():
    t = sample_table()
    doc = json.loads(t.to_json())
    assert set(doc) == {"title", "meta", "columns", "rows"}
    assert doc["columns"] == ["variant", "median_ms", "gbps", "matches"]
    assert doc["rows"][2]["gbps"] is None and doc["meta"]["x"] is None  # NaN / inf -> null
    assert t.to_dicts()[0]["variant"] == "a<b>" and len(t) == 3
    assert t["bad"]["matches"] is False and t[0]["gbps"] == 100.0
    with pytest.raises(KeyError):
        t["nope"]


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        sample_table().plot()


def test_plot_draws_a_bar_per_measured_row():
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (optional)")
    import matplotlib
    matplotlib.use("Agg")
    ax = sample_table().plot()
    assert len(ax.patches) == 1  # only the row with a finite GB/s
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a<b>"]


# ------------------------------------------- compare, fed by a fake timer

@pytest.fixture
def fake_gpu(monkeypatch):
    """Stand-ins for the device side of compare: made-up kernel times
    (1 ms x registry position) and NumPy's own output as the kernels'
    result.  Everything else - rows, skips, checks, determinism counts,
    speed-ups, the extra rows, JSON - is the real code."""
    real = _bench._core
    fake_core = types.SimpleNamespace(
        device_info=lambda: {"l2_cache_bytes": 50 << 20, "name": "Fake GPU", "multiprocessors": 1,
                             "total_memory": 1 << 30, "compute_capability": (9, 0)},
        call=real.call)

    def upload(self):
        self.device = self.x
        self.h2d_ms = 0.5
        self.out = None

    def roof(self):
        return {"median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0, "times_ms": [1.0],
                "gbps": self.bytes / 1e6}

    def time_device(self, v):
        t = 1.0 + v.index
        return [t * 1.1, t, t * 0.9], (self.x if v.name == "copy" else self.numpy())

    monkeypatch.setattr(_bench, "_core", fake_core)
    monkeypatch.setattr(_bench._Case, "upload", upload)
    monkeypatch.setattr(_bench._Case, "roof", roof)
    monkeypatch.setattr(_bench._Case, "time_device", time_device)
    monkeypatch.setattr(_bench._Case, "run_device", lambda self, v: self.numpy())
    _bench._l2_bytes.cache_clear()
    yield fake_core
    _bench._l2_bytes.cache_clear()


def check_table_shape(t, family, extra=()):
    names = t.names()
    journey = registry_names(family, baselines=False)
    baselines = [n for n in registry_names(family) if n not in journey]
    assert names == journey + list(extra) + baselines + ["copy roof", "numpy"]
    doc = json.loads(t.to_json())
    assert doc["meta"]["family"] == family and doc["meta"]["roof_gbps"] > 0
    for r in doc["rows"]:
        assert set(r) >= {"variant", "median_ms", "note"}
        if r["median_ms"] is not None and r["variant"] != "copy roof":
            assert ROW_KEYS <= set(r), ROW_KEYS - set(r)
    first = next(r for r in t if r.get("median_ms"))
    assert first["x_first"] == 1.0 and first["x_prev"] is None


@pytest.mark.parametrize("family", FAMILIES)
def test_compare_pipeline_rows_checks_and_planted_mismatch(fake_gpu, family):
    t = gpuprims.compare(family, **size_kw(family, 4096), repeat=3, k=3,
                         extra={"planted_wrong": perturbed_host(family)})
    check_table_shape(t, family, extra=["planted_wrong"])
    bad = t["planted_wrong"]
    assert bad["matches"] is False and bad["max_error"] > 0
    for r in t:
        if r["variant"] not in ("planted_wrong", "copy roof") and r.get("median_ms"):
            assert r["matches"] is True, r
            assert r["distinct"] == 1
    base = t[next(v.name for v in gpuprims.variants(family) if v.library)]
    assert base["x_baseline"] == pytest.approx(1.0)
    assert "planted_wrong" in str(t) and "NO" in str(t)


def perturbed_host(family):
    """The planted wrong variant for the fake device (input as NumPy)."""
    def f(x):
        x = np.asarray(x)
        if family == "reduce":
            return np.float32(x.sum(dtype=np.float64) + 1.0)
        if family == "scan":
            out = np.cumsum(x, dtype=np.float32)
            out[3] += 1
            return out
        out = np.ascontiguousarray(x.T).copy()
        out[0, 0] += 1
        return out
    return f


def test_compare_marks_variants_over_their_limit(fake_gpu):
    t = gpuprims.compare("scan", n=100_000, repeat=2, k=1)
    assert t["naive"]["note"] == "skipped: n > max_n 65536" and t["naive"]["median_ms"] is None
    assert t["blelloch"]["note"] == "skipped: n > max_n 2048"
    assert "skipped: n > max_n 1024" in str(t)
    assert t["warp_shuffle"]["matches"] is True


def test_compare_integer_and_exclusive_and_a_chosen_subset(fake_gpu):
    t = gpuprims.compare("scan", n=3000, dtype="int32", op="max", inclusive=False,
                         variants=["warp_shuffle", "naive"], repeat=2, k=2)
    assert t.names() == ["naive", "warp_shuffle", "cub", "cub_deterministic", "cpu", "copy roof", "numpy"]
    assert all(r["matches"] for r in t if r.get("median_ms") and r["variant"] != "copy roof")
    assert t["naive"]["error_unit"] == "abs" and t["naive"]["max_error"] == 0
    t = gpuprims.compare("reduce", n=1000, variants=["cub"], baselines=False, repeat=2, k=0)
    assert t.names() == ["cub"] and t["cub"]["distinct"] is None


def test_compare_rejects_bad_arguments(fake_gpu):
    with pytest.raises(ValueError, match="unknown reduce variant"):
        gpuprims.compare("reduce", n=10, variants=["nope"])
    with pytest.raises(ValueError, match="unknown op"):
        gpuprims.compare("reduce", n=10, op="prod")
    with pytest.raises(ValueError, match="unknown family"):
        gpuprims.compare("sort", n=10)
    with pytest.raises(TypeError):
        gpuprims.compare("scan", n=10, dtype="int8")


def test_benchmark_result_record(fake_gpu):
    r = gpuprims.benchmark("reduce", "interleaved", 5000, repeat=3, k=2)
    assert isinstance(r, gpuprims.Result) and r.times_ms and r.min_ms <= r.median_ms <= r.max_ms
    assert r.matches is True and r.bytes == 5000 * 4 and r.h2d_ms == 0.5 and r.distinct == 1
    assert "interleaved" in str(r) and r.to_dict()["shape"] == [5000]
    with pytest.raises(ValueError, match="max_n"):
        gpuprims.benchmark("scan", "blelloch", 4096)


def test_without_gpu_helpers_raise_nodeviceerror():
    if GPU_OK:
        pytest.skip("checks the no-GPU path; a GPU is visible here")
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.compare("reduce", n=100)
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.benchmark("reduce", "auto", 100)
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.occupancy("reduce", "auto")


def test_ulps():
    assert ulps(np.float32(1.0), 1.0, np.float32) == 0
    assert ulps(np.float32(1.0) + np.spacing(np.float32(1.0)), 1.0, np.float32) == 1
    assert ulps(np.array([1, 2]), np.array([1, 5]), np.int64) == 3
    assert math.isinf(ulps(np.float32("nan"), 1.0, np.float32))
    assert ulps(np.float32("nan"), np.nan, np.float32) == 0


# ------------------------------------------------------------ the CLI

def test_cli_shapes_and_bad_arguments(capsys):
    from gpuprims.__main__ import main, shape
    assert shape("8192x8192") == (8192, 8192) and shape("4000,6000") == (4000, 6000)
    assert shape("2**12x2^13") == (4096, 8192)
    with pytest.raises(SystemExit):
        main(["--family", "scan", "--dtype", "int8"])
    assert "scan takes --dtype" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--family", "sort"])
    with pytest.raises(SystemExit):
        main(["--shape", "12"])


def test_cli_json_and_progress_on_the_fake_gpu(fake_gpu, monkeypatch, tmp_path, capsys):
    import gpuprims.__main__ as cli
    monkeypatch.setattr(cli, "_core", types.SimpleNamespace(
        cuda_status=lambda: (True, 1), device_info=fake_gpu.device_info))
    monkeypatch.setattr(cli, "_backend", types.SimpleNamespace(current="cuda", set_backend=None))
    monkeypatch.setattr(cli, "copy_roof", lambda nbytes, repeat: {
        "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0, "gbps": 2 * nbytes / 1e6})
    out = tmp_path / "r.json"
    assert cli.main(["--family", "reduce", "--family", "transpose", "--n", "2**12",
                     "--shape", "64x32", "--repeat", "2", "--k", "1", "--no-numpy-in", "--json", str(out)]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("GPU: Fake GPU (sm_90), 1 SMs")
    assert "reduce sum, n = 4096" in cap.out and "transpose, 64 x 32" in cap.out
    assert "] " in cap.err and "/" in cap.err  # the progress bar
    doc = json.loads(out.read_text())
    assert set(doc) == {"gpu", "roof", "roof_bytes", "tables"}
    assert [t["meta"]["family"] for t in doc["tables"]] == ["reduce", "transpose"]
    assert doc["tables"][0]["rows"][0]["variant"] == registry_names("reduce")[0]


def test_cli_plot_file(fake_gpu, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (optional)")
    import gpuprims.__main__ as cli
    monkeypatch.setattr(cli, "_core", types.SimpleNamespace(
        cuda_status=lambda: (True, 1), device_info=fake_gpu.device_info))
    monkeypatch.setattr(cli, "_backend", types.SimpleNamespace(current="cuda", set_backend=None))
    monkeypatch.setattr(cli, "copy_roof", lambda nbytes, repeat: {
        "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0, "gbps": 1.0})
    png = tmp_path / "p.png"
    assert cli.main(["--family", "scan", "--n", "1000", "--repeat", "1", "--k", "0",
                     "--no-progress", "--no-numpy-in", "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


# ---------------------------------------------------------- occupancy

H100_LIKE = dict(blocks_per_sm=4, block_size=512, registers_per_thread=32, static_shared_bytes=2048,
                 dynamic_shared_bytes=0, local_bytes=0, max_threads_per_block=1024, ptx_version=90,
                 binary_version=90, sm_count=132, threads_per_sm=2048, max_blocks_per_sm=32,
                 registers_per_sm=65536, shared_memory_per_sm=233472, reserved_shared_per_block=1024,
                 warp_size=32, compute_capability=(9, 0))


def test_occupancy_report_names_the_limit():
    r = occupancy_report(H100_LIKE)
    assert r["limited_by"] == "threads" and r["model_agrees"] and r["occupancy"] == 1.0
    assert r["warps_per_sm"] == 64 and r["resident_threads"] == 132 * 2048
    heavy = dict(H100_LIKE, registers_per_thread=128, blocks_per_sm=1)
    r = occupancy_report(heavy)  # 128 x 512 = 64K registers: one block
    assert r["limited_by"] == "registers" and r["model_agrees"] and r["occupancy"] == 0.25
    big_smem = dict(H100_LIKE, block_size=128, dynamic_shared_bytes=100_000, blocks_per_sm=2)
    r = occupancy_report(big_smem)
    assert r["limited_by"] == "shared memory" and r["model_agrees"]
    wrong = dict(H100_LIKE, blocks_per_sm=3)
    assert occupancy_report(wrong)["model_agrees"] is False


@pytest.mark.parametrize("family,name", [("reduce", "cub"), ("reduce", "cpu"), ("scan", "cub"),
                                         ("transpose", "copy"), ("transpose", "cublas")])
def test_occupancy_not_available_for_library_and_host_rows(family, name):
    with pytest.raises(ValueError, match="occupancy is not available"):
        gpuprims.occupancy(family, name)


def test_occupancy_bad_block_size():
    with pytest.raises(ValueError, match="block_size"):
        gpuprims.occupancy("reduce", "interleaved", block_size=2048)


# ------------------------------------------------------------ profile

def fake_ncu(tmp_path, body):
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


NCU_CSV = '''==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(2048, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nanosecond","12,000"
"0","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(2048, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct","%","96.5"
"0","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(2048, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum.per_second","byte/second","2,500,000,000,000"
"0","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(2048, 1, 1)","0","9.0","Command line profiler metrics","smsp__warp_issue_stalled_barrier_per_warp_active.pct","%","20.5"
"0","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(2048, 1, 1)","0","9.0","Command line profiler metrics","smsp__warp_issue_stalled_membar_per_warp_active.pct","%","0.5"
"1","1","python3","h","void (anonymous namespace)::reduce_interleaved<float, gp::Sum<float>>(const T1 *, T2::type *, T2::type *, long)","1","7","(512, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nanosecond","3,000"
'''


@pytest.fixture
def profile_sees_a_gpu(monkeypatch):
    """profile() checks for a GPU first; these tests feed it a fake ncu."""
    monkeypatch.setattr(gpuprims._profile, "require_gpu", lambda who: None)


def test_profile_table_from_ncu_csv(tmp_path, profile_sees_a_gpu):
    ncu = fake_ncu(tmp_path, "cat <<'EOF'\n" + NCU_CSV + "EOF\n")
    t = gpuprims.profile("reduce", ["interleaved", "neighbored"], n=1 << 20, ncu=ncu,
                         metrics=["gld_efficiency", "dram_read_throughput", "stall_sync"])
    assert t.names() == ["interleaved", "interleaved", "neighbored", "neighbored"]
    r = t[0]
    assert r["kernel"] == "reduce_interleaved<float, Sum<float>>" and r["duration_us"] == 12.0
    assert r["gld_efficiency"] == 96.5 and r["dram_read_throughput"] == pytest.approx(2500.0)
    assert r["stall_sync"] == pytest.approx(21.0)  # barrier + membar, as the nvprof metric
    assert t[1]["gld_efficiency"] is None and t[1]["stall_sync"] is None and "gld eff %" in str(t)
    json.loads(t.to_json())


def test_profile_skips_variants_over_their_limit(tmp_path, profile_sees_a_gpu):
    ncu = fake_ncu(tmp_path, "cat <<'EOF'\n" + NCU_CSV + "EOF\n")
    t = gpuprims.profile("scan", ["blelloch"], n=1 << 20, ncu=ncu, metrics="bank_conflicts")
    assert t[0]["note"] == "skipped: n > max_n 2048"


def test_profile_errors_say_why(tmp_path, monkeypatch, profile_sees_a_gpu):
    perm = fake_ncu(tmp_path, "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission'; exit 1\n")
    with pytest.raises(gpuprims.ProfilerError, match="not permitted.*ERR_NVGPUCTRPERM"):
        gpuprims.profile("reduce", ["interleaved"], ncu=perm)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("GPUPRIMS_NCU", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nocuda"))
    if os.path.exists("/usr/local/cuda/bin/ncu"):
        pytest.skip("an ncu is installed at /usr/local/cuda/bin/ncu")
    with pytest.raises(gpuprims.ProfilerError, match="not installed"):
        gpuprims.profile("reduce", ["interleaved"])
    with pytest.raises(ValueError, match="unknown metric"):
        gpuprims._profile.metric_list(["gld_eff"])


# ------------------------------------------------------- on the GPU

@gpu
@pytest.mark.parametrize("family", FAMILIES)
def test_gpu_compare_times_every_variant_and_matches(family):
    t = gpuprims.compare(family, **size_kw(family, 1 << 16), repeat=5, k=3,
                         extra={"planted_wrong": perturbed(family), "auto_wrapped": passthrough(family)})
    check_table_shape(t, family, extra=["planted_wrong", "auto_wrapped"])
    for r in t:
        if r["variant"] in ("planted_wrong", "copy roof") or r.get("median_ms") is None:
            continue
        assert r["matches"] is True, r
        assert r["median_ms"] > 0 and r["gbps"] > 0 and r["roof_pct"] > 0
        if r["where"] == "device" and r["variant"] != "cub":  # CUB's float scan may vary
            assert r["distinct"] == 1, r
    assert t["planted_wrong"]["matches"] is False and t["planted_wrong"]["max_error"] > 0
    assert t["auto_wrapped"]["matches"] is True
    assert t.meta["h2d_ms"] > 0 and t.meta["roof_gbps"] > 0


@gpu
def test_gpu_benchmark_record():
    r = gpuprims.benchmark("reduce", "single_pass", 1 << 22, repeat=7, k=3)
    assert len(r.times_ms) == 7 and r.min_ms <= r.median_ms <= r.max_ms
    assert r.matches and r.distinct == 1 and r.k == 3 and r.h2d_ms > 0
    assert r.gbps == pytest.approx(r.bytes / (r.median_ms * 1e-3) / 1e9)
    assert 5 < r.roof_pct < 200
    d = gpuprims.to_device(np.random.default_rng(1).random((300, 500), dtype=np.float32))
    r = gpuprims.benchmark("transpose", "tiled_padded", d, repeat=3)
    assert r.matches and r.h2d_ms is None and r.d2h_ms > 0 and r.bytes == 2 * 300 * 500 * 4


@gpu
def test_gpu_compare_notes_the_limit():
    t = gpuprims.compare("scan", n=100_000, repeat=3, k=1)
    assert t["naive"]["note"] == "skipped: n > max_n 65536"
    assert t["warp_shuffle"]["matches"] is True


@gpu
@pytest.mark.parametrize("family", FAMILIES)
def test_gpu_occupancy_of_every_kernel(family):
    t = gpuprims.occupancy(family, "all")
    for r in t:
        if "note" in r:
            continue
        assert r["blocks_per_sm"] >= 1 and r["registers_per_thread"] > 0, r
        assert r["threads_per_sm"] <= r["max_threads_per_sm"]
        assert r["model_agrees"], (r["variant"], r["blocks_per_sm"], r["model_blocks_per_sm"], r["blocks_by"])
    r = gpuprims.occupancy("reduce", "interleaved", block_size=128)
    assert r["block_size"] == 128 and r["limited_by"] in ("threads", "blocks", "registers", "shared memory")


@gpu
def test_gpu_main_job_cli(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    cmd = [sys.executable, "-m", "gpuprims", "--n", "2**20", "--shape", "1024x2048", "--repeat", "5",
           "--k", "2", "--json", str(out)]
    if importlib.util.find_spec("matplotlib") is not None:
        cmd += ["--plot", str(png)]
    else:
        png = None
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.startswith("GPU: ") and "copy roof" in r.stdout.splitlines()[0]
    for what in ("reduce sum, n = 1048576", "scan sum inclusive, n = 1048576", "transpose, 1024 x 2048"):
        assert what in r.stdout
    assert "/" in r.stderr  # progress
    doc = json.loads(out.read_text())
    assert [t["meta"]["family"] for t in doc["tables"]] == list(FAMILIES)
    assert png is None or png.stat().st_size > 1000


@gpu
def test_gpu_profile_under_ncu():
    try:
        gpuprims._profile.find_ncu()
    except gpuprims.ProfilerError as e:
        pytest.skip(str(e))
    try:
        t = gpuprims.profile("reduce", ["neighbored", "interleaved"], n=1 << 20)
    except gpuprims.ProfilerError as e:
        if "ERR_NVGPUCTRPERM" in str(e):
            pytest.skip(str(e))
        raise
    rows = {}
    for r in t:  # each variant's first launch: the pass over the whole input
        rows.setdefault(r["variant"], r)
    assert set(rows) == {"neighbored", "interleaved"}
    for r in rows.values():
        assert 0 < r["gld_efficiency"] <= 100 and r["duration_us"] > 0
    # the textbook's lesson: interleaved pairs load coalesced, neighbored ones do not
    assert rows["interleaved"]["gld_efficiency"] > rows["neighbored"]["gld_efficiency"]
