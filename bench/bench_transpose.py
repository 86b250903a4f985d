"""The transpose benchmark (run on the GPU machine).

Times every variant, float32, at 1024 x 1024 (where even the one-thread
variant fits its limit), 4000 x 6000, 8192 x 8192 and 16384 x 16384
against cuBLAS geam, the copy roof and NumPy, measured in this one run.
Writes bench/results/transpose-<gpu>-<date>.md (and a copy under $OUT).
"""
import datetime
import json
import sys

import gpuprims
from benchlib import save_results

SHAPES = [(1024, 1024), (4000, 6000), (8192, 8192), (16384, 16384)]


def main():
    info = gpuprims.device_info()
    date = datetime.date.today().isoformat()
    parts = [f"# Transpose benchmark\n\nGPU: {info['name']}, {info['multiprocessors']} SMs, "
             f"driver {info['driver_version']}, runtime {info['runtime_version']}; date {date}\n\n"
             "Method: CUDA events around the variant's kernel only (gpuprims.compare), 3 warm-up "
             "runs, median of 30 timed runs, a buffer of 4x the L2 overwritten and the output "
             "poisoned before each run. GB/s = (bytes read + bytes written) / median time; the "
             "roof is a device-to-device copy of the matrix in this run. `x cuBLAS` = "
             "cublasSgeam's median time / the row's. Every output compared with numpy, exactly; "
             "`distinct` = different results over 3 more runs."]
    data = {"gpu": info, "date": date, "tables": []}
    for rows_, cols in SHAPES:
        t = gpuprims.compare("transpose", shape=(rows_, cols), dtype="float32", repeat=30, k=3)
        t.title = f"\n## float32, {rows_} x {cols} ({rows_ * cols * 4 / 2**20:.0f} MiB)"
        parts.append(t.to_markdown())
        data["tables"].append(json.loads(t.to_json()))
        print(parts[-1], flush=True)
    return save_results("transpose", info, date, parts, data)

if __name__ == "__main__":
    sys.exit(main())
