"""The look-back scan's optional shapes (cuda/scan/lookback_tuning.cuh:
HOLD, FENCED) on the emulator: tests/scan_shapes_emu.cu, built here with
the host C++ compiler against emu/, checks them against the library's
shapes (same bits) and the host's scan (exact for integers, within the
scan bound for floats)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_hold_and_fenced_shapes_match_the_library(tmp_path):
    cxx = (os.environ.get("CXX") or "c++").split()
    if shutil.which(cxx[0]) is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "scan_shapes_emu"
    cmd = [*cxx, "-std=c++17", "-O1", "-DGP_EMULATOR", "-Iemu/include", "-Icuda", "-x", "c++",
           "emu/runtime.cpp", "cuda/cast.cu", "tests/scan_shapes_emu.cu", "-o", str(exe), "-lpthread"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("all ok"), r.stdout[-3000:]
    assert r.stdout.count("same bits") == 40
