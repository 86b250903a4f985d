"""bench/benchlib.py: a run's results files never overwrite another (a run that writes its file as it
goes keeps one), and the wall clock of a call; the benchmarks' peers by module name; the ratios and
columns of bench_dtypes' calls tables."""
import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def benchlib():
    spec = importlib.util.spec_from_file_location("benchlib_under_test", BENCH / "benchlib.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_results_path_takes_the_next_free_run(tmp_path):
    b = benchlib()
    first = b.results_path("scan-g2g", "NVIDIA H200", "2026-11-24", tmp_path)
    assert first == tmp_path / "scan-g2g-nvidia-h200-2026-11-24.md"
    first.write_text("run 1")
    second = b.results_path("scan-g2g", "NVIDIA H200", "2026-11-24", tmp_path)
    assert second.name == "scan-g2g-nvidia-h200-2026-11-24-run2.md"
    # a JSON file alone holds the name too
    second.with_suffix(".json").write_text("{}")
    third = b.results_path("scan-g2g", "NVIDIA H200", "2026-11-24", tmp_path)
    assert third.name == "scan-g2g-nvidia-h200-2026-11-24-run3.md"
    # other families, GPUs and days are not counted
    assert b.results_path("scan", "NVIDIA H200", "2026-11-24", tmp_path).name == "scan-nvidia-h200-2026-11-24.md"
    assert b.results_path("scan-g2g", "NVIDIA H100 80GB HBM3", "2026-11-24", tmp_path).name == \
        "scan-g2g-nvidia-h100-80gb-hbm3-2026-11-24.md"


def test_write_results_keeps_both_runs_and_copies_them_under_out(tmp_path, monkeypatch):
    b = benchlib()
    kept, out = tmp_path / "results", tmp_path / "out"
    kept.mkdir()
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    info = {"name": "NVIDIA H200"}
    p1 = b.write_results("host", info, "2026-11-24", "first\n", '{"run": 1}', results=kept)
    p2 = b.write_results("host", info, "2026-11-24", "second\n", '{"run": 2}', results=kept)
    assert (p1.name, p2.name) == ("host-nvidia-h200-2026-11-24.md", "host-nvidia-h200-2026-11-24-run2.md")
    assert p1.read_text() == "first\n" and p2.read_text() == "second\n"
    assert p1.with_suffix(".json").read_text() == '{"run": 1}'
    assert p2.with_suffix(".json").read_text() == '{"run": 2}'
    for p in (p1, p2):
        assert (out / p.name).read_text() == p.read_text()
        assert (out / p.with_suffix(".json").name).read_text() == p.with_suffix(".json").read_text()
    # keep=False (a dry run) writes only the copies under $OUT
    p3 = b.write_results("host", info, "2026-11-24", "dry\n", "{}", keep=False, results=kept)
    assert not p3.exists() and (out / p3.name).read_text() == "dry\n"


def test_progress_keeps_one_file_until_the_finished_run_writes_over_it(tmp_path, monkeypatch):
    """A long run writes its tables as they come (save_progress, marked as
    unfinished) and finishes in the same file (save_results with its path);
    the next run takes the next name."""
    import json
    b = benchlib()
    monkeypatch.delenv("OUT", raising=False)
    info = {"name": "NVIDIA H200"}
    parts, data = ["# Scan benchmark", "| table 1 |"], {"tables": [{"rows": [{"variant": "a", "matches": True}]}]}
    p1 = b.save_progress("scan-g2g", info, "2026-11-25", parts, data, results=tmp_path)
    assert p1.name == "scan-g2g-nvidia-h200-2026-11-25.md"
    assert "has not finished" in p1.read_text() and json.loads(p1.with_suffix(".json").read_text())["unfinished"]
    parts.append("| table 2 |")
    data["tables"].append({"rows": [{"variant": "b", "matches": True}]})
    p2 = b.save_progress("scan-g2g", info, "2026-11-25", parts, data, path=p1, results=tmp_path)
    assert p2 == p1 and "| table 2 |" in p1.read_text()
    assert b.save_results("scan-g2g", info, "2026-11-25", parts, data, path=p1, results=tmp_path) == 0
    assert p1.read_text() == "# Scan benchmark\n| table 1 |\n| table 2 |\n"
    assert json.loads(p1.with_suffix(".json").read_text()) == data  # no "unfinished" key
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan-g2g-nvidia-h200-2026-11-25.json",
                                                          "scan-g2g-nvidia-h200-2026-11-25.md"]
    assert "unfinished" not in data  # the caller's document is not changed
    # the next run of the day gets a file of its own
    assert b.save_progress("scan-g2g", info, "2026-11-25", parts, data, results=tmp_path).name == \
        "scan-g2g-nvidia-h200-2026-11-25-run2.md"


def test_scan_g2g_leaves_its_tables_after_each_one(tmp_path, monkeypatch):
    """bench_scan.py g2g --dtype --sizes: the tables asked for, the file
    written after each (so that a run cut short leaves them), one file at
    the end.  gpuprims.compare is replaced by a stand-in (no GPU here): this
    checks the script's files, not its times."""
    import json
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.delenv("OUT", raising=False)
    import benchlib as lib
    import bench_scan
    free_name = lib.results_path
    monkeypatch.setattr(lib, "results_path", lambda family, gpu, date, results=None: free_name(family, gpu, date,
                                                                                              tmp_path))
    monkeypatch.setattr(bench_scan, "begin", lambda title, method: ({"name": "Test GPU"}, "2026-11-25",
                                                                    ["# Scan benchmark"], {"tables": []}))
    on_disk = []

    class Table:
        def __init__(self, n, dtype):
            self.meta, self.title, self.text = {"bytes": 8 * n, "roof_gbps": 100.0}, "", f"| {dtype} {n} |"
            on_disk.append([p.read_text() for p in sorted(tmp_path.glob("*.md"))])

        def to_markdown(self):
            return self.title + "\n" + self.text

        def to_json(self):
            return json.dumps({"rows": [{"variant": "decoupled_lookback_reproducible", "matches": True}]})

    monkeypatch.setattr(bench_scan.gpuprims, "compare", lambda family, n, dtype, **kw: Table(n, dtype))
    assert bench_scan.main(["g2g", "--dtype", "float32", "--sizes", "10,12"]) == 0
    files = sorted(tmp_path.glob("*.md"))
    assert [f.name for f in files] == ["scan-g2g-test-gpu-2026-11-25.md"]
    text = files[0].read_text()
    assert "| float32 1024 |" in text and "| float32 4096 |" in text and "has not finished" not in text
    assert len(json.loads(files[0].with_suffix(".json").read_text())["tables"]) == 2
    # before the first table nothing; before the second, the first, marked unfinished
    assert on_disk[0] == []
    assert len(on_disk[1]) == 1 and "| float32 1024 |" in on_disk[1][0] and "has not finished" in on_disk[1][0]


def test_wall_ms_warms_up_syncs_each_call_and_leaves_pre_untimed(monkeypatch):
    lib = benchlib()
    calls = []
    clock = [0.0]

    def fn():
        calls.append("fn")
        clock[0] += 0.002  # 2 ms a call

    def sync():
        calls.append("sync")

    def pre():
        calls.append("pre")
        clock[0] += 1.0  # 1 s that must not be timed

    monkeypatch.setattr(lib.time, "perf_counter", lambda: clock[0])
    ms = lib.wall_ms(fn, repeat=3, sync=sync, warmup=2, pre=pre)
    assert abs(ms - 2.0) < 1e-9
    assert calls == ["fn", "sync"] * 2 + ["pre", "fn", "sync"] * 3


def test_import_peer_takes_dotted_names_and_misses_quietly():
    """The benchmarks' peers by module name: a dotted name gives the module
    itself (cuda.compute, not the `cuda` package), a missing one None."""
    import os.path
    from gpuprims._bench import import_peer
    assert import_peer("os.path") is os.path
    assert import_peer("gpuprims_no_such_peer") is None
    assert import_peer("gpuprims_no_such_peer.compute") is None


def bench_dtypes():
    """bench/bench_dtypes.py as a module (it imports benchlib from bench/)."""
    import sys
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_dtypes_under_test", BENCH / "bench_dtypes.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_calls_tables_ratios_and_columns():
    """The calls tables' ratios: `x best` the fastest one-shot peer (CuPy,
    PyTorch, cuda.compute's function - not its prebuilt object) over
    gpuprims; `x prebuilt` the prebuilt object over gpuprims with out= (over
    gpuprims in the events table, which has no out= column); a missing
    peer's cell is '-', its ratio left out."""
    b = bench_dtypes()
    wall = {"gpuprims": 20.0, "out=": 16.0, "CuPy": 30.0, "PyTorch": 25.0, "cuda.compute": 50.0, "prebuilt": 8.0}
    assert b._ratios(wall) == (25.0 / 20.0, 8.0 / 16.0)
    assert b._ratios({"gpuprims": 20.0, "out=": 16.0}) == (None, None)
    parts, data = [], {"tables": []}
    rows = [{"call": "cumsum", "us": wall}, {"call": "transpose", "us": {"gpuprims": 10.0, "out=": 9.0,
                                                                          "PyTorch": 12.0}}]
    b._table(parts, data, "wall", "", ["CuPy", "PyTorch", "cuda.compute", "prebuilt"], rows)
    lines = parts[-1].splitlines()
    assert "| call | gpuprims | gpuprims out= | CuPy | PyTorch | cuda.compute | prebuilt | x best | x prebuilt |" \
        in lines
    assert "| cumsum | 20.0 | 16.0 | 30.0 | 25.0 | 50.0 | 8.0 | 1.25 | 0.50 |" in lines
    assert "| transpose | 10.0 | 9.0 | - | 12.0 | - | - | 1.20 |  |" in lines
    events = [{"call": "cumsum", "us": {"gpuprims": 11.0, "library": 10.0, "PyTorch": 11.0, "prebuilt": 9.9}}]
    b._table(parts, data, "events", "", ["library", "PyTorch", "prebuilt"], events, events=True)
    lines = parts[-1].splitlines()
    assert "| call | gpuprims | library | PyTorch | prebuilt | x best | x prebuilt |" in lines
    assert "| cumsum | 11.0 | 10.0 | 11.0 | 9.9 | 1.00 | 0.90 |" in lines
    assert [t["title"] for t in data["tables"]] == ["wall", "events"]
