"""Run every device reduction variant at edge sizes, checking each result,
so that compute-sanitizer (memcheck, racecheck, synccheck) watches every
kernel.  Exits 1 on a wrong result.

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/sanitize_reduce.py
"""
import sys

import numpy as np

import gpuprims

SIZES = [1, 31, 33, 257, 1025, 4097, 2**16 + 3]


def main():
    bad = 0
    rng = np.random.default_rng(1)
    for v in gpuprims.variants("reduce"):
        if v.where != "device":
            continue
        for dtype in ("float32", "int64"):
            for n in SIZES:
                x = (rng.integers(-1000, 1000, n) if dtype == "int64" else rng.random(n) - 0.5).astype(dtype)
                d = gpuprims.to_device(x)
                view = gpuprims.DeviceArray((n - 1,), x.dtype, _ptr=d.ptr + x.itemsize, _owner=d)
                for op in ("sum", "max"):
                    for arr, ref in ((d, x), (view, x[1:])):
                        if ref.size == 0:
                            continue
                        got = gpuprims.reduce(arr, op, variant=v.name)
                        want = getattr(np, op)(ref)
                        if not np.isclose(got, want, rtol=1e-4, atol=1e-3):
                            print(f"WRONG {v.name} {op} {dtype} n={ref.size}: {got} != {want}")
                            bad += 1
        print(f"{v.name}: done", flush=True)
    print("all results right" if not bad else f"{bad} wrong results")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
