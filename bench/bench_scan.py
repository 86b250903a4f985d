"""The scan benchmark (run on the GPU machine).

Times every variant, float32 inclusive sum, at n = 2^28, 2^24, 2^20 and
2048 (where the single-block variants fit) against CUB, the copy roof and
NumPy, in this one run.  Writes bench/results/scan-<gpu>-<date>.md (and a
copy under $OUT).
"""
import datetime
import sys

import gpuprims
from benchlib import save_results
from gpuprims._journey import format_table, scan_journey

SIZES = [2**28, 2**24, 2**20, 2048]


def main():
    info = gpuprims.device_info()
    date = datetime.date.today().isoformat()
    parts = [f"# Scan benchmark\n\nGPU: {info['name']}, {info['multiprocessors']} SMs, "
             f"driver {info['driver_version']}, runtime {info['runtime_version']}; date {date}\n\n"
             "Method: CUDA events around the variant's kernels only, 3 warm-up runs, median of 30 "
             "timed runs (min/max shown), a buffer of 4x the L2 overwritten and the output "
             "poisoned before each run. GB/s = (input bytes + output bytes) / median time; the "
             "roof is a device-to-device copy moving the same bytes in this run. `x vs CUB` = "
             "cub::DeviceScan's median time / the row's. Every output compared with numpy."]
    data = {"gpu": info, "date": date, "tables": []}
    for n in SIZES:
        rows, roof = scan_journey(n)
        parts.append(format_table(rows, roof, title=f"\n## float32 inclusive sum, n = {n} "
                                                    f"(2^{n.bit_length() - 1})\n"))
        data["tables"].append({"n": n, "rows": rows, "roof": roof})
        print(parts[-1], flush=True)
    return save_results("scan", info, date, parts, data)

if __name__ == "__main__":
    sys.exit(main())
