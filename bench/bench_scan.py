"""The scan benchmark (run on the GPU machine).

Times every variant, float32 inclusive sum, at n = 2^28, 2^24, 2^20 and
2048 (where the single-block variants fit) against CUB, the copy roof and
NumPy, in this one run.  Writes bench/results/scan-<gpu>-<date>.md (and a
copy under $OUT).
"""
import sys

from benchlib import begin, journey_tables, save_results

SIZES = [2**28, 2**24, 2**20, 2048]


def main():
    info, date, parts, data = begin(
        "Scan benchmark",
        "CUDA events around the variant's kernels only (gpuprims.compare), 3 warm-up "
        "runs, median of 30 timed runs, a buffer of 4x the L2 overwritten and the output "
        "poisoned before each run. GB/s = (input bytes + output bytes) / median time; the "
        "roof is a device-to-device copy moving the same bytes in this run. `x CUB` = "
        "cub::DeviceScan's median time / the row's. Every output compared with a float64 "
        "cumulative sum (error in ULPs of the prefix's sum of |x|); `distinct` = different "
        "results over 3 more runs.")
    journey_tables("scan", [(f"\n## float32 inclusive sum, n = {n} (2^{n.bit_length() - 1})", {"n": n})
                            for n in SIZES], parts, data, dtype="float32", op="sum", repeat=30, k=3)
    return save_results("scan", info, date, parts, data)


if __name__ == "__main__":
    sys.exit(main())
