"""The main job's argument parsing and its no-GPU path (runs anywhere)."""
import argparse
import subprocess
import sys

import pytest

import gpuprims
from gpuprims.__main__ import size

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
        assert [row.split(" | ")[0][2:] for row in table] == names + ["numpy"]
        for row in table:
            if row.startswith(("| cub ", "| cublas ")):
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
