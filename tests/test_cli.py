"""The main job's argument parsing and its no-GPU path (runs anywhere)."""
import argparse
import json
import subprocess
import sys

import pytest

import gpuprims
from gpuprims.__main__ import measure_numpy_in, numpy_in_table, size
from gpuprims._family import FAMILIES

from conftest import GPU_OK


@pytest.mark.parametrize("text,n", [("1000", 1000), ("1_000_000", 10**6), ("2**24", 2**24), ("2^20", 2**20)])
def test_sizes(text, n):
    assert size(text) == n


@pytest.mark.parametrize("text", ["abc", "2**x", "0", "-5", "__import__('os')"])
def test_bad_sizes(text):
    with pytest.raises(argparse.ArgumentTypeError):
        size(text)


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU path; a GPU is visible here")
def test_main_job_without_gpu_runs_the_journey_emulated():
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--n", "2**12"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("No CUDA GPU visible") and "emulator" in lines[0] and "no GPU timings" in lines[0]
    assert "GB/s" not in r.stdout and "roof |" not in r.stdout
    titles = [i for i, line in enumerate(lines) if line.endswith("(emulated)")]
    assert [lines[i].split()[0].rstrip(",") for i in titles] == ["reduce", "scan", "transpose"]
    for start, end in zip(titles, titles[1:] + [len(lines)]):
        family = lines[start].split()[0].rstrip(",")
        table = [line for line in lines[start:end] if line.startswith("| ")][1:]  # past the header
        names = [v.name for v in gpuprims.variants(family)
                 if v.where == "device" and not (v.batched or v.segmented)]
        cuda_only = {v.name for v in gpuprims.variants(family) if "emulator" not in v.backends}
        assert [row.split(" | ")[0][2:] for row in table] == names + ["numpy"]
        for row in table:
            if row.split(" | ")[0][2:] in cuda_only:  # cub, cub_segmented, cublas
                assert "needs the cuda backend" in row
            elif "over its limit" in row:
                assert family == "scan", row  # the single-block scans at 4096 elements
            elif not row.startswith("| numpy "):
                assert "| yes |" in row, row


def test_main_job_on_the_emulator_when_asked():
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--backend", "emulator", "--n", "1000",
                        "--dtype", "int32", "--op", "max"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "emulated" in r.stdout and "| single_pass |" in r.stdout


# -- the NumPy-in tables

@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU path; a GPU is visible here")
def test_numpy_in_skipped_on_the_emulator(tmp_path):
    """On the emulator the NumPy-in tables say why they are skipped, in the
    text and in --json; no times are reported."""
    path = tmp_path / "job.json"
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--backend", "emulator", "--family", "reduce",
                        "--n", "1000", "--json", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "NumPy-in tables skipped" in r.stdout and "no GPU timings" in r.stdout
    doc = json.loads(path.read_text())
    assert "emulator" in doc["numpy_in"]["skipped"] and "median_ms" not in json.dumps(doc["numpy_in"])
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--backend", "emulator", "--family", "reduce",
                        "--n", "1000", "--no-numpy-in"], capture_output=True, text=True)
    assert r.returncode == 0 and "NumPy-in" not in r.stdout


def test_numpy_in_table_from_times():
    """The table's ratios from given times: the bus roof is the slower
    pinned one-way copy; % roof and x NumPy are time ratios; GB/s the bytes
    a row moves over its median."""
    times = {"gpuprims": [30.0, 20.0, 40.0], "numpy": [100.0, 90.0, 110.0], "h2d": [10.0, 10.0, 10.0],
             "d2h": [16.0, 16.0, 16.0], "pageable": [25.0, 25.0, 25.0]}
    t = numpy_in_table(FAMILIES["scan"], "scan", times, 4 << 20, 8 << 20, True, 0.5)
    assert t.names() == ["gpuprims", "numpy", "pinned h2d", "pinned d2h", "pageable h2d"]
    tp = numpy_in_table(FAMILIES["scan"], "scan", dict(times, pinned=[20.0, 18.0, 22.0]), 4 << 20, 8 << 20, True)
    assert tp.names() == ["gpuprims", "gpuprims, pinned in", "numpy", "pinned h2d", "pinned d2h", "pageable h2d"]
    assert tp["gpuprims, pinned in"]["roof_pct"] == pytest.approx(100 * 16 / 20)
    g = t["gpuprims"]
    assert g["median_ms"] == 30.0 and g["roof_pct"] == pytest.approx(100 * 16 / 30)
    assert g["x_numpy"] == pytest.approx(100 / 30) and g["gbps"] == pytest.approx((12 << 20) / 30e-3 / 1e9)
    assert t["pinned h2d"]["gbps"] == pytest.approx((4 << 20) / 10e-3 / 1e9)
    assert t.meta["bus_roof_ms"] == 16.0 and t.meta["speedup_vs_numpy"] == pytest.approx(100 / 30)
    doc = json.loads(t.to_json())
    assert doc["meta"]["family"] == "scan" and len(doc["rows"]) == 5
    # a reduction: no output copy, the roof is the input's copy
    times.pop("d2h")
    t = numpy_in_table(FAMILIES["reduce"], "reduce", dict(times, d2h=None), 4 << 20, 0, False)
    assert "pinned d2h" not in t.names() and t.meta["bus_roof_ms"] == 10.0
    assert t["gpuprims"]["matches"] is False and "NO" in str(t)


@pytest.mark.parametrize("name,size", [("reduce", 3001), ("scan", 3001), ("transpose", (37, 53))])
def test_numpy_in_measured_on_any_backend(backend, name, size):
    """The measuring code path runs (on the emulator here: its times are
    not reported anywhere) and checks the public call against NumPy."""
    t = measure_numpy_in(FAMILIES[name], size, "float32", "sum", 2, False)
    assert t["gpuprims"]["matches"] is True
    assert all(len(r["times_ms"]) == 2 and r["median_ms"] > 0 for r in t)
    assert ("pinned d2h" in t.names()) == (name != "reduce") and "gpuprims, pinned in" in t.names()


@pytest.mark.gpu
def test_numpy_in_tables_on_the_gpu(tmp_path):
    path = tmp_path / "job.json"
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--family", "reduce", "--family", "scan", "--n", "2**22",
                        "--repeat", "3", "--k", "1", "--json", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("NumPy in: ") == 2
    doc = json.loads(path.read_text())
    assert [h["meta"]["family"] for h in doc["numpy_in"]] == ["reduce", "scan"]
    assert all(h["rows"][0]["matches"] for h in doc["numpy_in"])
