"""The prototype segmented scan by packs of segments (bench/packs_scan.cuh,
which bench/tune_segscan.cu times; not a library variant: it has no
deferral of long segments) on the emulator: tests/packs_scan_emu.cu, built
here with the host C++ compiler against emu/, checks three shapes,
inclusive and exclusive, float32/float64/int32/int64 sums and int32 max on
random segments with empty runs, a far longer segment and segments inside a
longer input (elements outside every segment untouched) against the host."""
from conftest import run_emulator_program


def test_packs_scan_matches_the_host(tmp_path):
    out = run_emulator_program(tmp_path, "packs_scan_emu.cu")
    assert out.rstrip().endswith("(150 checks)"), out[-3000:]
    assert "all ok" in out
