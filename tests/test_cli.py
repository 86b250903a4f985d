"""The main job's argument parsing and its no-GPU path (runs anywhere)."""
import argparse
import subprocess
import sys

import pytest

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
def test_main_job_without_gpu_says_so_in_one_line():
    r = subprocess.run([sys.executable, "-m", "gpuprims", "--n", "2**12"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("No CUDA GPU visible") and "numpy" in lines[0]
