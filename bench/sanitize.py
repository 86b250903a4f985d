"""Run every device variant of every family at edge sizes, checking each
result, so that compute-sanitizer (memcheck, racecheck, synccheck) watches
every kernel.  Exits 1 on a wrong result.

    compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/sanitize.py [FAMILY ...]

With names (reduce, scan, scan-batched: the scan rows flagged batched or
segmented on axes and segments, transpose, staged: NumPy arrays through
the core's staging), only those parts run.
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


# (outer, n, inner) of the batched scans: short and long rows, columns over
# several chunks, fewer columns than a warp; segment lengths with empty ones
# and one over several tiles.
BATCHED_SHAPES = [(3, 5000, 1), (40, 3, 70), (1, 300, 40), (2, 1025, 3), (5, 33, 1),
                  # the dense mappings of auto: rows of 4 and 64 floats, columns of a
                  # power-of-two count, a few long rows
                  (1, 9000, 4), (1, 3000, 64), (1, 4, 70000)]
# The narrow inputs the rows flagged narrow_in read as they are.
NARROW = ("bool", "int8", "uint8", "int16", "uint16", "uint32", "uint64", "float16")
SEGMENT_LENGTHS = [0, 1, 31, 32, 33, 1025, 0, 9000, 2, 0, 4097, 5]
# Segments of a long mean (the scan's tiles a segment: scan_long), empty and
# short ones among them.
LONG_SEGMENT_LENGTHS = [20000, 0, 3, 16389, 1, 12000, 7, 30000]
# Short segments (the scan's wide packs), one of them deferred.
SHORT_SEGMENT_LENGTHS = [int(v) for v in np.random.default_rng(3).integers(0, 7, 3000)]
SHORT_SEGMENT_LENGTHS[700] = 5000
# The same with nothing long, called with its bound on the lengths (gp_batch's
# longest, as the library's calls pass it): nothing deferred.
SHORT_ONLY_LENGTHS = SHORT_SEGMENT_LENGTHS[:700] + SHORT_SEGMENT_LENGTHS[701:]


def batched_scans():
    """Every scan row flagged batched or segmented, called through the core
    with a layout (gp_batch) on device arrays: C arrays along their middle
    axis, one of them read back to front (negative strides), and segments."""
    from gpuprims import _core
    dtypes, ops = list(_core.dtypes()), list(_core.ops())
    bad = 0
    rng = np.random.default_rng(5)
    for v in gpuprims.variants("scan"):
        if v.where != "device" or not (v.batched or v.segmented):
            continue
        for dtype in ("float32", "int64"):
            params = lambda n, layout: (n, dtypes.index(dtype), dtypes.index(dtype), ops.index("sum"), True,  # noqa: E731
                                        layout)
            cases, keep = [], []
            if v.batched:
                for (o, n, i) in BATCHED_SHAPES:
                    x = (rng.integers(-1000, 1000, (o, n, i)) if dtype == "int64" else rng.random((o, n, i)) - 0.5
                         ).astype(dtype)
                    cases.append((x, 0, (o, n, i, n * i, i, 1, 0), np.cumsum(x, axis=1).ravel()))
                    r = x[:, ::-1, :]  # element (0, 0, 0) at x[0, n-1, 0]: s_n = -inner
                    cases.append((x, (n - 1) * i, (o, n, i, n * i, -i, 1, 0),
                                  np.cumsum(r, axis=1).ravel()))
            for lengths, longest in ((SEGMENT_LENGTHS, 0), (SHORT_SEGMENT_LENGTHS, 0),
                                     (SHORT_ONLY_LENGTHS, max(SHORT_ONLY_LENGTHS)),
                                     (LONG_SEGMENT_LENGTHS, max(LONG_SEGMENT_LENGTHS))) if v.segmented else ():
                offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
                x = (rng.integers(-1000, 1000, offs[-1]) if dtype == "int64" else rng.random(offs[-1]) - 0.5
                     ).astype(dtype)
                want = np.concatenate([np.cumsum(x[a:b]) for a, b in zip(offs[:-1], offs[1:])])
                keep.append(gpuprims.to_device(offs))  # alive while the cases run
                cases.append((x, 0, (len(lengths), x.size, 1, 0, 1, 0, keep[-1].ptr, longest), want))
            for x, first, layout, want in cases:
                d = gpuprims.to_device(x)
                out = gpuprims.to_device(np.full(x.size, -1, dtype))
                _core.call("scan", v.index, d.ptr + first * x.itemsize, out.ptr, params(x.size, layout))
                if not np.allclose(out.get(), want, rtol=1e-4, atol=1e-2):
                    print(f"WRONG batched scan {v.name} {dtype} layout {layout[:6]}")
                    bad += 1
        print(f"scan-batched {v.name}: done", flush=True)
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
        for dtype in NARROW if v.narrow_in else ():
            for n in SIZES:
                x = rng.integers(0, 2 if dtype == "bool" else 100, n)
                x = (x / 1000 if dtype == "float16" else x).astype(dtype)  # float16 sums stay finite
                d = gpuprims.to_device(x)
                # from the second element: a head before the first 16-byte boundary
                view = gpuprims.DeviceArray((n - 1,), x.dtype, _ptr=d.ptr + x.itemsize, _owner=d)
                for op in ("sum", "min", "max"):
                    for arr, ref in ((d, x), (view, x[1:])):
                        if ref.size == 0:
                            continue
                        got = gpuprims.reduce(arr, op, variant=v.name)
                        want = getattr(np, op)(ref.astype(np.float64))
                        if not np.isclose(float(got), want, rtol=1e-2):
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


def batched_reductions():
    """Every reduce row flagged batched or segmented, through the public
    call: each axis of C arrays (a CuPy view read back to front where CuPy
    is installed: negative strides), and ragged segments."""
    bad = 0
    rng = np.random.default_rng(6)
    try:
        import cupy
    except ImportError:
        cupy = None
    offs = np.concatenate([[0], np.cumsum(SEGMENT_LENGTHS)]).astype(np.int64)
    for v in gpuprims.variants("reduce"):
        if v.where != "device" or gpuprims.backend() not in v.backends or not (v.batched or v.segmented):
            continue
        for dtype in ("float32", "int64"):
            for (o, n, i) in BATCHED_SHAPES if v.batched else []:
                x = (rng.integers(-1000, 1000, (o, n, i)) if dtype == "int64" else rng.random((o, n, i)) - 0.5
                     ).astype(dtype)
                views = [(gpuprims.to_device(x), x)]
                if cupy is not None:
                    views.append((cupy.asarray(x)[:, ::-1, :], x[:, ::-1, :]))
                for dev, host in views:
                    for axis in (0, 1, 2):
                        try:
                            got = gpuprims.sum(dev, axis=axis, variant=v.name)
                        except (ValueError, gpuprims.CudaError) as e:  # a layout the row does not take
                            if "cub" in v.name:
                                continue
                            raise e
                        got = got.get() if hasattr(got, "get") else np.asarray(got)
                        if not np.allclose(got, host.sum(axis=axis), rtol=1e-4, atol=1e-2):
                            print(f"WRONG batched reduce {v.name} {dtype} {x.shape} axis {axis}")
                            bad += 1
            if v.segmented:
                x = (rng.integers(-1000, 1000, offs[-1]) if dtype == "int64" else rng.random(offs[-1]) - 0.5
                     ).astype(dtype)
                got = gpuprims.sum(gpuprims.to_device(x), segments=offs, variant=v.name).get()
                want = np.array([x[a:b].sum() for a, b in zip(offs[:-1], offs[1:])])
                if not np.allclose(got, want, rtol=1e-4, atol=1e-2):
                    print(f"WRONG segmented reduce {v.name} {dtype}")
                    bad += 1
        print(f"reduce-batched {v.name}: done", flush=True)
    return bad


def nd_transposes():
    """The any-rank transposes on permutations of ranks 3 to 6, contiguous
    and (with CuPy) strided device inputs read in place."""
    bad = 0
    rng = np.random.default_rng(7)
    try:
        import cupy
    except ImportError:
        cupy = None
    # the last three take the 16-byte tiles: int8's 256 x 128 tile, the batch in groups
    cases = [((33, 17, 65), (2, 1, 0)), ((33, 17, 65), (0, 2, 1)), ((9, 8, 7, 66), (0, 3, 1, 2)),
             ((5,) * 6, None), ((3, 130, 2, 67), (3, 2, 1, 0)), ((48, 32, 512), (2, 1, 0)),
             ((16, 2, 16, 16, 2, 16), None), ((16, 2, 16, 16, 2, 16), (4, 0, 2, 1, 5, 3))]
    for v in gpuprims.variants("transpose"):
        if v.where != "device" or v.matrix or v.baseline:  # the copy roof copies
            continue
        for dtype in ("int8", "float16", "float32", "complex128"):
            for shape, axes in cases:
                x = (rng.standard_normal(shape) * 100).astype(dtype)
                views = [(gpuprims.to_device(x), x)]
                if cupy is not None:
                    views.append((cupy.asarray(x)[::-1, ..., ::2], x[::-1, ..., ::2]))
                for dev, host in views:
                    got = gpuprims.transpose(dev, axes, variant=v.name).get()
                    if not np.array_equal(got, np.ascontiguousarray(np.transpose(host, axes))):
                        print(f"WRONG transpose {v.name} {dtype} {shape} {axes}")
                        bad += 1
        print(f"transpose-nd {v.name}: done", flush=True)
    return bad


FAMILIES = {"transpose": transposes, "transpose-nd": nd_transposes, "reduce-batched": batched_reductions, "scan": scans, "scan-batched": batched_scans, "reduce": reductions,
            "staged": staged}


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
