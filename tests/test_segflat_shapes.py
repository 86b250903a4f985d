"""The flat segmented reduction's other tile shapes (cuda/reduce/
segmented_flat.cuh: the ones bench/tune_segflat.cu times besides the
library's, and the register path) on the emulator: tests/segflat_shapes_emu.cu,
built here with the host C++ compiler against emu/, checks each against the
host's sums (exact for integers and min/max, within the tests' bound for
float sums) on ragged segments, empty runs, long spans, a misaligned input
and rows."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_flat_shapes_match_the_host(tmp_path):
    cxx = (os.environ.get("CXX") or "c++").split()
    if shutil.which(cxx[0]) is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "segflat_shapes_emu"
    cmd = [*cxx, "-std=c++17", "-O1", "-DGP_EMULATOR", "-Iemu/include", "-Icuda", "-x", "c++",
           "emu/runtime.cpp", "cuda/cast.cu", "tests/segflat_shapes_emu.cu", "-o", str(exe), "-lpthread"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("(264 checks)"), r.stdout[-3000:]
    assert "all ok" in r.stdout
