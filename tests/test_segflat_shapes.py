"""The flat segmented reduction's other tile shapes (cuda/reduce/
segmented_flat.cuh: the ones bench/tune_segflat.cu times besides the
library's, and the register path) on the emulator: tests/segflat_shapes_emu.cu,
built here with the host C++ compiler against emu/, checks each against the
host's sums (exact for integers and min/max, within the tests' bound for
float sums) on ragged segments, empty runs, long spans, a misaligned input
and rows."""
from conftest import run_emulator_program


def test_flat_shapes_match_the_host(tmp_path):
    out = run_emulator_program(tmp_path, "segflat_shapes_emu.cu")
    assert out.rstrip().endswith("(264 checks)"), out[-3000:]
    assert "all ok" in out
