"""Run every device variant of every family at edge sizes, checking each
result, so that compute-sanitizer (memcheck, racecheck, synccheck) watches
every kernel.  Exits 1 on a wrong result.

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/sanitize.py [FAMILY ...]

With names (reduce, scan, transpose, staged: NumPy arrays through the
core's staging), only those parts run.
"""
import sys

import numpy as np

import gpuprims

SIZES = [1, 31, 33, 257, 1025, 4097, 2**16 + 3]
# The last three have both sides multiples of 16: tiled_wide's 16-byte path
# (partial 64 x 64 float32 tiles; partial 128 x 128 int8 tiles).
SHAPES = [(1, 1), (1, 7), (7, 1), (33, 31), (65, 130), (300, 17), (48, 80), (64, 64), (272, 144)]


def device_variants(family):
    """The family's device variants, each reported done once checked."""
    for v in gpuprims.variants(family):
        if v.where == "device":
            yield v
            print(f"{family} {v.name}: done", flush=True)


def transposes():
    bad = 0
    rng = np.random.default_rng(2)
    for v in device_variants("transpose"):
        for dtype in ("int8", "float32", "float64"):
            if v.dtypes and dtype not in v.dtypes:
                continue
            for shape in SHAPES:
                x = (rng.standard_normal(shape) * 100).astype(dtype)
                got = gpuprims.transpose(gpuprims.to_device(x), variant=v.name).get()
                want = x if v.name == "copy" else x.T
                if not np.array_equal(got, want):
                    print(f"WRONG transpose {v.name} {dtype} {shape}")
                    bad += 1
    return bad


def scans():
    bad = 0
    rng = np.random.default_rng(3)
    for v in device_variants("scan"):
        for dtype in ("float32", "int64"):
            for n in SIZES + [1024, 2048, 4096 * 3 + 5]:
                if v.max_n is not None and n > v.max_n:
                    continue
                x = (rng.integers(-1000, 1000, n) if dtype == "int64" else rng.random(n) - 0.5).astype(dtype)
                for op, inclusive in (("sum", True), ("max", False)):
                    got = gpuprims.scan(gpuprims.to_device(x), op, inclusive=inclusive, variant=v.name).get()
                    acc = np.maximum.accumulate(x) if op == "max" else np.cumsum(x)
                    if not inclusive:
                        lowest = -np.inf if dtype == "float32" else np.iinfo(np.int64).min
                        acc = np.concatenate([[lowest], acc[:-1]]).astype(got.dtype)
                    if not np.allclose(got, acc, rtol=1e-4, atol=1e-2):
                        print(f"WRONG scan {v.name} {op} {dtype} n={n}")
                        bad += 1
    return bad


def reductions():
    bad = 0
    rng = np.random.default_rng(1)
    for v in device_variants("reduce"):
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
    return bad


def staged():
    """NumPy inputs and outputs: the core stages them through device memory
    in the same call (copy in, convert, launch, copy out)."""
    bad = 0
    rng = np.random.default_rng(4)
    for n in SIZES:
        x = (rng.integers(-1000, 1000, n)).astype(np.int32)  # int32 -> int64: the conversion kernel too
        if gpuprims.sum(x) != x.sum() or not np.array_equal(gpuprims.cumsum(x), np.cumsum(x)):
            print(f"WRONG staged sum/cumsum int32 n={n}")
            bad += 1
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(np.float32)
        if not np.array_equal(gpuprims.transpose(a), a.T):
            print(f"WRONG staged transpose {shape}")
            bad += 1
    print("staged: done", flush=True)
    return bad


FAMILIES = {"transpose": transposes, "scan": scans, "reduce": reductions, "staged": staged}


def main(argv):
    unknown = [f for f in argv if f not in FAMILIES]
    if unknown:
        print(f"unknown families {unknown}; choose from {sorted(FAMILIES)}")
        return 2
    bad = sum(FAMILIES[f]() for f in (argv or FAMILIES))
    print("all results right" if not bad else f"{bad} wrong results")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
