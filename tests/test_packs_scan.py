"""The segmented scan by packs of segments (cuda/scan/packs.cuh, the route of
the adaptive scan for segments of a mean of 2 ... 8192; bench/tune_segscan.cu
times it) on the emulator: tests/packs_scan_emu.cu, built here with the host
C++ compiler against emu/, checks four shapes (wide packs of up to 512
segments a warp included), inclusive and exclusive,
float32/float64/int32/int64 sums and int32 max on random segments with empty
runs, far longer (deferred) segments and segments inside a longer input
(elements outside every segment untouched) against the host."""
from conftest import run_emulator_program


def test_packs_scan_matches_the_host(tmp_path):
    out = run_emulator_program(tmp_path, "packs_scan_emu.cu")
    assert out.rstrip().endswith("(800 checks)"), out[-3000:]
    assert "all ok" in out
