"""The transpose benchmark (run on the GPU machine, one run, a few minutes).

1. 2-D, the journey's fast end: `tiled_wide`, `auto` (nd_tiled) and cuBLAS
   geam at 4000 x 6000, 8192 x 8192 and 16384 x 16384 for elements of 1, 2,
   4 and 8 bytes (int8, float16, float32, float64), with gpuprims.compare:
   % of the copy roof, x cuBLAS for float32 and float64.
2. Any rank: permutations of 3-, 4- and 6-D arrays for float32 (2^26
   elements), int8 (2^28) and float64 (2^26): every gpuprims transpose
   variant that takes any rank, CuPy's ascontiguousarray(x.transpose(axes))
   and PyTorch's x.permute(axes).contiguous() when installed, each on the
   same device array, all timed with CUDA events after warm-up runs, the L2
   flushed before each run, median of REPEAT; % of a device-to-device copy
   of the same bytes measured in this run, and x CuPy / x PyTorch.

Writes bench/results/transpose-<gpu>-<date>.md (and a copy, with the JSON,
under $OUT).  Exits 1 if any gpuprims result differs from NumPy's.
`--quick` times only the N-D part at a quarter of the sizes (a smoke run).
"""
import math
import sys
import time

import numpy as np

import gpuprims

from benchlib import begin, journey_tables, save_results

SHAPES_2D = [(4000, 6000), (8192, 8192), (16384, 16384)]
DTYPES_2D = ["int8", "float16", "float32", "float64"]
VARIANTS_2D = ["tiled_wide", "nd_tiled", "cublas"]

# (shape, axes) by dtype: float32 and float64 at 2^26 elements, int8 at 2^28.
CASES_ND = {
    "float32": [((512, 256, 512), (2, 1, 0)), ((512, 256, 512), (0, 2, 1)), ((512, 256, 512), (1, 0, 2)),
                ((64, 128, 64, 128), (0, 2, 1, 3)), ((64, 128, 64, 128), (0, 3, 1, 2)),
                ((64, 128, 64, 128), (3, 2, 1, 0)), ((16,) * 6, (5, 4, 3, 2, 1, 0))],
    "int8": [((1024, 512, 512), (2, 1, 0)), ((1024, 512, 512), (0, 2, 1)), ((1024, 512, 512), (1, 0, 2)),
             ((128, 128, 128, 128), (0, 2, 1, 3)), ((128, 128, 128, 128), (0, 3, 1, 2)),
             ((128, 128, 128, 128), (3, 2, 1, 0)), ((32, 32, 32, 32, 16, 16), (5, 4, 3, 2, 1, 0))],
}
CASES_ND["float64"] = CASES_ND["float32"]
REPEAT, WARMUP = 20, 3


def nd_tables(parts, data, dtypes, scale=1):
    """The any-rank tables: gpuprims.compare_permutations (every variant that
    takes any rank, the copy roof, checked against NumPy, and CuPy and
    PyTorch on the same device array where they are installed)."""
    for dtype in dtypes:
        rows, libs = [], None
        for shape, axes in CASES_ND[dtype]:
            shape = (max(1, shape[0] // scale),) + shape[1:]
            t = gpuprims.compare_permutations([(shape, axes)], dtype, repeat=REPEAT, warmup=WARMUP)
            rows.append(t.rows[0])
            libs = ", ".join(t.meta["peers"]) or "CuPy and PyTorch not installed"
        parts.append(nd_markdown(dtype, rows, libs))
        data["tables"].append({"title": f"any rank, {dtype}", "rows": rows})
        print(parts[-1], flush=True)


def nd_markdown(dtype, rows, libs) -> str:
    auto = gpuprims._registry.lookup("transpose", "auto").name
    names = [k[:-3] for k in rows[0] if k.endswith("_ms") and k not in ("median_ms", "cupy_ms", "torch_ms")]
    head = (f"\n## Any rank, {dtype} ({math.prod(rows[0]['shape'])} elements; {libs})\n\n"
            "| shape | axes | " + " | ".join(f"{n} ms" for n in names) +
            f" | {auto} GB/s | % roof | CuPy ms | x CuPy | PyTorch ms | x PyTorch | ok | plan |\n"
            "|---|---|" + "---:|" * (len(names) + 6) + "---|---|\n")
    lines = []
    for r in rows:
        cells = [" x ".join(map(str, r["shape"])), str(tuple(r["axes"]))]
        cells += [f"{r[n + '_ms']:.4f}" for n in names]
        cells += [f"{r['gbps']:.0f}", f"{r['roof_pct']:.1f}"]
        for key in ("cupy_ms", "torch_ms"):
            cells += ([f"{r[key]:.4f}", f"{r[key] / r['median_ms']:.2f}"] if key in r else ["-", "-"])
        cells += ["yes" if r["matches"] else "NO", r["plan"]]
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def main():
    quick = "--quick" in sys.argv
    t0 = time.perf_counter()
    info, date, parts, data = begin(
        "Transpose benchmark",
        f"CUDA events around the kernels only, {WARMUP} warm-up runs, median of {REPEAT} (2-D: 30) "
        "timed runs, a buffer of 4x the L2 overwritten before each run (and, for gpuprims, the "
        "output poisoned). GB/s = (bytes read + bytes written) / median time; the roof is a "
        "device-to-device copy of the same bytes in this run. `x cuBLAS` = cublas<t>geam's "
        "median / the row's; `x CuPy` = cupy.ascontiguousarray(x.transpose(axes))'s median / "
        "auto's, `x PyTorch` = x.permute(axes).contiguous()'s (both on the same device array, "
        "their output allocation from their memory pools included). Every gpuprims output "
        "compared with NumPy's, exactly.")
    if not quick:
        journey_tables("transpose", [(f"\n## 2-D, {dt}, {r} x {c} "
                                      f"({r * c * np.dtype(dt).itemsize / 2**20:.0f} MiB)",
                                      {"shape": (r, c), "dtype": dt})
                                     for dt in DTYPES_2D for r, c in SHAPES_2D],
                       parts, data, variants=VARIANTS_2D, baselines=False, repeat=30, k=1)
    nd_tables(parts, data, ["float32", "int8", "float64"], scale=4 if quick else 1)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return save_results("transpose", info, date, parts, data)


if __name__ == "__main__":
    sys.exit(main())
