"""The transpose benchmark (run on the GPU machine).

Times every variant, float32, at 1024 x 1024 (where even the one-thread
variant fits its limit), 4000 x 6000, 8192 x 8192 and 16384 x 16384
against cuBLAS geam, the copy roof and NumPy, measured in this one run.
Writes bench/results/transpose-<gpu>-<date>.md (and a copy under $OUT).
"""
import sys

from benchlib import begin, journey_tables, save_results

SHAPES = [(1024, 1024), (4000, 6000), (8192, 8192), (16384, 16384)]


def main():
    info, date, parts, data = begin(
        "Transpose benchmark",
        "CUDA events around the variant's kernel only (gpuprims.compare), 3 warm-up "
        "runs, median of 30 timed runs, a buffer of 4x the L2 overwritten and the output "
        "poisoned before each run. GB/s = (bytes read + bytes written) / median time; the "
        "roof is a device-to-device copy of the matrix in this run. `x cuBLAS` = "
        "cublasSgeam's median time / the row's. Every output compared with numpy, exactly; "
        "`distinct` = different results over 3 more runs.")
    journey_tables("transpose", [(f"\n## float32, {r} x {c} ({r * c * 4 / 2**20:.0f} MiB)", {"shape": (r, c)})
                                 for r, c in SHAPES], parts, data, dtype="float32", repeat=30, k=3)
    return save_results("transpose", info, date, parts, data)


if __name__ == "__main__":
    sys.exit(main())
