"""The look-back scan's optional shapes (cuda/scan/lookback_tuning.cuh:
HOLD, FENCED) on the emulator: tests/scan_shapes_emu.cu, built here with
the host C++ compiler against emu/, checks them against the library's
shapes (same bits) and the host's scan (exact for integers, within the
scan bound for floats)."""
from conftest import run_emulator_program


def test_hold_and_fenced_shapes_match_the_library(tmp_path):
    out = run_emulator_program(tmp_path, "scan_shapes_emu.cu")
    assert out.rstrip().endswith("all ok"), out[-3000:]
    assert out.count("same bits") == 40
