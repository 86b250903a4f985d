"""Batched and segmented reductions: every registry row flagged batched or
segmented, called through the core with a layout, against NumPy.

The core takes a layout (outer, len, inner, s_outer, s_len, s_inner,
offsets address) after the usual (n, in, acc, op) params: problem (o, i)
is in[o*s_outer + k*s_len + i*s_inner], k < len, written to out[o*inner + i];
segment o is in[offsets[o] .. offsets[o+1] - 1], written to out[o].  The
inputs are device arrays (host memory on the emulator) addressed through
their strides, so any view of a buffer - C, F, steps, negative or zero
strides - is read in place.  Runs on the emulator always and on the GPU
where there is one.
"""
import math

import numpy as np
import pytest

import gpuprims
from gpuprims import _core
from gpuprims._numerics import identity

from conftest import need, pack_test_lengths, random_array

VARIANTS = gpuprims.variants("reduce")
BATCHED = [v for v in VARIANTS if v.batched]
SEGMENTED = [v for v in VARIANTS if v.segmented]
DTYPES = _core.dtypes()
OPS = _core.ops()
gpu = pytest.mark.gpu


def ids(v):
    return v.name


# ---------------------------------------------------------------- helpers

def layout_of(a, axis):
    """(outer, len, inner, s_outer, s_len, s_inner) of a view `a` reduced
    over `axis`: outer and inner are the axes before and after it, which
    must each collapse to one stride (true of the views made here)."""
    isz = a.itemsize
    st = [s // isz for s in a.strides]
    sh = list(a.shape)
    before, after = sh[:axis], sh[axis + 1:]

    def collapse(shape, strides):
        n = int(np.prod(shape)) if shape else 1
        if not shape:
            return n, 0
        for k in range(len(shape) - 1):
            assert shape[k] <= 1 or strides[k] == strides[k + 1] * shape[k + 1], "axes do not collapse"
        return n, strides[-1]

    outer, s_outer = collapse(before, st[:axis])
    inner, s_inner = collapse(after, st[axis + 1:])
    return outer, sh[axis], inner, s_outer, st[axis], s_inner


def element0_offset(a, base):
    """Bytes from base's first element to a's element (0, ..., 0)."""
    return a.__array_interface__["data"][0] - base.__array_interface__["data"][0]


def call(v, d_ptr, n_total, layout, in_dtype, acc_dtype, op, out_n):
    """Run variant v through the core on a device input at d_ptr; returns
    the output as NumPy (poisoned first, so unwritten outputs show)."""
    out = gpuprims.to_device(poison(max(out_n, 1), acc_dtype))
    params = (n_total, DTYPES.index(np.dtype(in_dtype).name), DTYPES.index(np.dtype(acc_dtype).name),
              OPS.index(op), layout)
    _core.call("reduce", v.index, d_ptr, out.ptr, params)
    return out.get()[:out_n]


def poison(n, dtype):
    dtype = np.dtype(dtype)
    return np.full(n, np.nan if dtype.kind == "f" else np.iinfo(dtype).max - 7, dtype)


def reference(rows, op, acc):
    """(want, tolerance) per problem: `rows` is a 2-D array (a problem per
    row) or a list of 1-D arrays.  Float sums: the longdouble sum, within
    _numerics.sum_tolerance's bound applied to each problem (4 (log2 len + 1)
    eps sum|x| + eps |sum|); everything else exact; identities for empty
    problems."""
    acc = np.dtype(acc)
    if isinstance(rows, np.ndarray):
        count, n = rows.shape
        if n == 0:
            return np.full(count, identity(op, acc), np.longdouble if acc.kind == "f" else acc), np.zeros(count)
        if op != "sum":
            want = (rows.min(axis=1) if op == "min" else rows.max(axis=1)).astype(acc)
            return (want.astype(np.longdouble) if acc.kind == "f" else want), np.zeros(count)
        if acc.kind != "f":
            return rows.sum(axis=1, dtype=acc), np.zeros(count)
        want = rows.astype(np.longdouble).sum(axis=1)
        eps = float(np.finfo(acc).eps)
        depth = math.ceil(math.log2(n)) + 1
        tol = 4 * depth * eps * np.abs(rows.astype(np.float64)).sum(axis=1) + eps * np.abs(want.astype(np.float64))
        return want, tol
    parts = [reference(np.asarray(r).reshape(1, -1), op, acc) for r in rows]
    if not parts:
        return np.empty(0, np.longdouble if acc.kind == "f" else acc), np.empty(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def check(got, want, tol, acc):
    acc = np.dtype(acc)
    assert got.shape == want.shape, (got.shape, want.shape)
    if acc.kind == "f":
        nan = np.isnan(want.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(got), nan)
        with np.errstate(invalid="ignore"):  # inf - inf where both are the identity
            err = np.abs(got.astype(np.longdouble) - want)
        bad = np.flatnonzero(~nan & ~(err <= tol))
        same_inf = np.isinf(got) & (got.astype(np.longdouble) == want)
        bad = [b for b in bad if not same_inf[b]]
        assert not bad, [(int(b), got[b], want[b], tol[b]) for b in bad[:5]]
    else:
        np.testing.assert_array_equal(got, want)


def data(n, dtype, seed):
    """Random, never zeros (conftest.random_array)."""
    return random_array(n, dtype, seed=seed).copy()


def run_axis(v, a, base, d, axis, op, acc):
    """Reduce view `a` (of host `base`, uploaded as d) over `axis` with v."""
    layout = layout_of(a, axis)
    outer, n, inner = layout[:3]
    got = call(v, d.ptr + element0_offset(a, base), outer * n * inner, layout + (0,), a.dtype, acc, op,
               outer * inner)
    rows = np.moveaxis(a, axis, -1).reshape(outer * inner, n)
    want, tol = reference(rows, op, acc)
    check(got, want, tol, acc)


# ------------------------------------------------------------- registry

def test_batched_and_segmented_rows():
    names = [v.name for v in VARIANTS]
    journey = [v for v in VARIANTS if (v.batched or v.segmented) and not v.baseline]
    assert journey, "no batched or segmented steps"
    # after the 1-D journey, before the baselines
    assert all(names.index(v.name) > names.index("single_pass") for v in journey)
    assert all(names.index(v.name) < names.index("cub") for v in journey)
    auto = [v for v in VARIANTS if v.auto_batched]
    assert len(auto) == 1 and auto[0].batched and auto[0].segmented and not auto[0].baseline
    cub = next(v for v in VARIANTS if v.name == "cub_segmented")
    assert cub.baseline and cub.title.startswith("CUB") and cub.backends == ("cuda",)


# --------------------------------------------------------------- an axis

SHAPES = [(1, 1), (31, 33), (32, 1025), (1025, 3), (0, 5), (5, 0)]


LAYOUTS = ["C", "F", "steps", "negative"]


def view(layout, shape, dtype, seed=1):
    """(view, base): `shape` as a C, F, every-other-element-with-an-offset or
    reversed (negative strides) view of a random buffer `base`."""
    r, c = shape
    if layout in ("C", "F"):
        base = data(r * c, dtype, seed)
        return (base.reshape(r, c) if layout == "C" else base.reshape(c, r).T), base
    base = data((2 * r + 1) * (3 * c + 2), dtype, seed + 1)
    big = base.reshape(2 * r + 1, 3 * c + 2)
    return (big[1::2, 2::3] if layout == "steps" else big[::-2, ::-3][:r, :c]), base


# (op, input dtype, accumulator dtype), one per layout
LAYOUT_OPS = [("sum", "float32", "float32"), ("max", "int32", "int32"), ("min", "float64", "float64"),
              ("sum", "int32", "int64")]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("v", BATCHED, ids=ids)
def test_axis_layouts(backend, v, shape):
    need(backend, v)
    for layout, (op, dtype, acc) in zip(LAYOUTS, LAYOUT_OPS):
        a, base = view(layout, shape, dtype)
        base.setflags(write=False)
        d = gpuprims.to_device(base)
        for axis in (0, 1):
            if v.name == "cub_segmented" and layout_of(a, axis)[4] != 1 and a.shape[axis] > 1:
                continue  # CUB reads contiguous problems only (the row's description)
            run_axis(v, a, base, d, axis, op, acc)
        np.testing.assert_array_equal(d.get(), base)  # the input is not modified


# Every (op, input, accumulator) combination the kernels are built for
# (GP_COMBOS in cuda/common.cuh).
COMBOS = [("sum", "int32", "int64"), ("sum", "int32", "int32"), ("sum", "int64", "int64"),
          ("sum", "float32", "float32"), ("sum", "float32", "float64"), ("sum", "float64", "float64"),
          ("min", "int32", "int32"), ("min", "int64", "int64"), ("min", "float32", "float32"),
          ("min", "float64", "float64"), ("max", "int32", "int32"), ("max", "int64", "int64"),
          ("max", "float32", "float32"), ("max", "float64", "float64")]


@pytest.mark.parametrize("v", BATCHED, ids=ids)
@pytest.mark.parametrize("combo", COMBOS, ids="-".join)
def test_axis_dtypes(backend, v, combo):
    need(backend, v)
    op, dtype, acc = combo
    base = data(9 * 33 * 7, dtype, 3)
    d = gpuprims.to_device(base)
    a = base.reshape(9, 33, 7)
    for axis in (0, 1, 2):
        layout = layout_of(a, axis)
        if v.name == "cub_segmented" and layout[4] != 1:
            continue
        run_axis(v, a, base, d, axis, op, acc)


@pytest.mark.parametrize("v", BATCHED, ids=ids)
def test_axis_zero_stride_and_host_buffers(backend, v):
    need(backend, v)
    row = data(37, "float64", 4)
    d = gpuprims.to_device(row)
    a = np.broadcast_to(row, (19, 37))  # s_len == 0 along axis 0
    if v.name != "cub_segmented":
        run_axis(v, a, row, d, 0, "max", "float64")
        run_axis(v, a, row, d, 0, "sum", "float64")
    run_axis(v, a, row, d, 1, "sum", "float64")
    # Host buffers go through the core's staging: a C array, both axes.
    x = data(29 * 41, "int32", 5).reshape(29, 41)
    for axis in (0, 1):
        layout = layout_of(x, axis)
        if v.name == "cub_segmented" and layout[4] != 1:
            continue
        out = poison(layout[0] * layout[2], "int64")
        _core.call("reduce", v.index, x, out, (x.size, DTYPES.index("int32"), DTYPES.index("int64"),
                                                OPS.index("sum"), layout + (0,)))
        np.testing.assert_array_equal(out, x.sum(axis=axis))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("v", BATCHED, ids=ids)
def test_axis_nan_propagates(backend, v, op):
    need(backend, v)
    base = data(40 * 70, "float32", 6)
    base[[5, 1234, 2799]] = np.nan
    d = gpuprims.to_device(base)
    a = base.reshape(40, 70)
    for axis in (0, 1):
        if v.name == "cub_segmented" and axis == 0:
            continue
        run_axis(v, a, base, d, axis, op, "float32")


@pytest.mark.parametrize("v", BATCHED, ids=ids)
def test_one_dimensional_call(backend, v):
    """The rows also take a 1-D call (params without a layout): one problem."""
    need(backend, v)
    f32 = DTYPES.index("float32")
    for n in (0, 1, 1025, 4099):
        x = data(n, "float32", 7)
        d = gpuprims.to_device(x)  # held: the core reads it at d.ptr
        got = _core.call("reduce", v.index, d.ptr, None, (n, f32, f32, OPS.index("sum")))
        want, tol = reference([x], "sum", "float32")
        check(np.array([got], np.float32), want, tol, "float32")


# -------------------------------------------------------------- segments

def segment_cases():
    rng = np.random.default_rng(11)
    cases = {
        "edge lengths": [0, 1, 31, 32, 33, 1025, 0, 0, 2, 1025, 33],
        "all empty": [0] * 9,
        "one": [4099],
        "none": [],
        "runs of empties at the start, middle and end": [0] * 200 + [3, 1] + [0] * 300 + [33] + [0] * 250,
    }
    for mean in (1, 4, 40, 300):
        cases[f"random mean {mean}"] = list(rng.integers(0, 2 * mean + 1, size=max(1000 // (mean + 1), 3)))
    return cases


SEGMENTS = segment_cases()


def segment_reference(x, offsets, op, acc):
    """reference() of each segment x[offsets[j]:offsets[j+1]], vectorized
    with ufunc.reduceat over the non-empty ones (adjacent in x)."""
    acc = np.dtype(acc)
    offsets = np.asarray(offsets, np.int64)
    lengths = np.diff(offsets)
    full = lengths > 0
    k = lengths.size
    want = np.full(k, identity(op, acc), np.longdouble if acc.kind == "f" else acc)
    tol = np.zeros(k)
    if not full.any():
        return want, tol
    starts = offsets[:-1][full]
    part = x[:offsets[-1]]
    if op != "sum":
        got = (np.minimum if op == "min" else np.maximum).reduceat(part, starts).astype(acc)
        want[full] = got
        return want, tol
    if acc.kind != "f":
        want[full] = np.add.reduceat(part.astype(acc), starts)
        return want, tol
    sums = np.add.reduceat(part.astype(np.longdouble), starts)
    abs_sums = np.add.reduceat(np.abs(part.astype(np.float64)), starts)
    eps = float(np.finfo(acc).eps)
    depth = np.ceil(np.log2(lengths[full])) + 1
    want[full] = sums
    tol[full] = 4 * depth * eps * abs_sums + eps * np.abs(sums.astype(np.float64))
    return want, tol


def run_segments(v, x, d, offsets, op, acc):
    offs = gpuprims.to_device(np.asarray(offsets, np.int64))
    k = len(offsets) - 1
    got = call(v, d.ptr, x.size, (k, x.size, 1, 0, 1, 0, offs.ptr), x.dtype, acc, op, k)
    want, tol = segment_reference(x, offsets, op, acc)
    check(got, want, tol, acc)
    np.testing.assert_array_equal(offs.get(), offsets)


@pytest.mark.parametrize("case", list(SEGMENTS), ids=str)
@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
def test_segments(backend, v, case):
    need(backend, v)
    lengths = SEGMENTS[case]
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    n = int(offsets[-1])
    for j, (op, dtype, acc) in enumerate([("sum", "float32", "float32"), ("min", "int32", "int32"),
                                          ("max", "float64", "float64"), ("sum", "int32", "int64")]):
        x = data(n, dtype, 8 + j)
        if op != "sum" and dtype.startswith("float") and n > 2000:
            x[[17, n // 2]] = np.nan  # min/max propagate NaN as numpy does
        d = gpuprims.to_device(x)
        run_segments(v, x, d, offsets, op, acc)
        np.testing.assert_array_equal(d.get(), x)


@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
def test_segments_inside_a_longer_input(backend, v):
    """offsets[0] > 0 and offsets[-1] < n: elements outside every segment
    are not read into any result."""
    need(backend, v)
    x = data(3000, "float64", 9)
    d = gpuprims.to_device(x)
    offsets = np.array([100, 100, 101, 700, 2000, 2003], np.int64)
    run_segments(v, x, d, offsets, "sum", "float64")
    run_segments(v, x, d, offsets, "min", "float64")
    run_segments(v, x, d, np.array([1500], np.int64), "sum", "float64")  # no segment at all


# Segments against fixed tiles (segmented_flat reads 4096 4-byte or 2048
# 8-byte elements a block): boundaries on and beside tile edges, a segment
# over ten tiles, one segment of the whole input, runs of empty segments at
# a tile edge (more than a tile stages); each also on an input that starts
# 4 or 8 bytes past a 16-byte boundary (read element by element).
TILED = {
    "edges": [4095, 1, 4096, 0, 0, 4097, 8190, 2, 1, 2047, 2049],
    "ten tiles": [5, 10 * 4096 + 3, 6],
    "whole": [3 * 4096 + 7],
    "empties at an edge": [4096] + [0] * 300 + [4096] + [0] * 2100 + [2],
}


@pytest.mark.parametrize("case", list(TILED), ids=str)
@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
def test_segments_across_tiles(backend, v, case):
    need(backend, v)
    lengths = TILED[case]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    for j, (op, dtype, acc) in enumerate([("sum", "float32", "float32"), ("max", "int32", "int32"),
                                          ("sum", "float64", "float64"), ("sum", "int32", "int64")]):
        base = data(n + 1, dtype, 20 + j)
        base.setflags(write=False)
        d = gpuprims.to_device(base)
        for shift in (0, 1):  # 16-byte aligned, then one element on
            x = base[shift:shift + n]
            offs = gpuprims.to_device(offsets)
            got = call(v, d.ptr + shift * base.itemsize, n, (len(lengths), n, 1, 0, 1, 0, offs.ptr), dtype, acc,
                       op, len(lengths))
            want, tol = segment_reference(x, offsets, op, acc)
            check(got, want, tol, acc)
        np.testing.assert_array_equal(d.get(), base)


@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
@pytest.mark.parametrize("combo", COMBOS, ids="-".join)
def test_segments_dtypes(backend, v, combo):
    """Every (op, input, accumulator) of the kernels on ragged segments over
    a few tiles, empty ones among them."""
    need(backend, v)
    op, dtype, acc = combo
    rng = np.random.default_rng(21)
    lengths = np.concatenate([rng.integers(0, 81, size=150), [0] * 40, rng.integers(0, 3000, size=3)])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = data(int(offsets[-1]), dtype, 22)
    d = gpuprims.to_device(x)
    run_segments(v, x, d, offsets, op, acc)
    np.testing.assert_array_equal(d.get(), x)


# Segment lengths far from their mean: the adaptive step defers the long
# ones of each mapping (groups of lanes, a warp, blocks) to its chunked pass.
SKEWED = {
    "lanes + outlier": [1, 4, 0, 7, 3] * 200 + [5000] + [2, 5] * 100 + [300, 129, 128],
    "warp + outlier": [100, 90, 140, 0] * 50 + [5000, 2049, 2048] + [64] * 20,
    "blocks + outliers": [200, 0, 150] * 16 + [40000, 8193, 8192 * 3 + 1],
}


@pytest.mark.parametrize("case", list(SKEWED), ids=str)
@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
def test_segments_skewed(backend, v, case):
    need(backend, v)
    if backend == "emulator" and v.name in ("batched_thread", "segmented_subwarp") and "blocks" in case:
        pytest.skip("emulator: a lane's sequential loop over 40000 elements is slow there")
    lengths = SKEWED[case]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = data(int(offsets[-1]), "float32", 15)
    d = gpuprims.to_device(x)
    run_segments(v, x, d, offsets, "sum", "float32")
    run_segments(v, x, d, offsets, "max", "float32")
    if v.auto_batched:  # the same bits on every call, deferral and all
        offs = gpuprims.to_device(offsets)
        layout = (len(lengths), x.size, 1, 0, 1, 0, offs.ptr)
        bits = {call(v, d.ptr, x.size, layout, "float32", "float32", "sum", len(lengths)).tobytes()
                for _ in range(3)}
        assert len(bits) == 1


# Segments of a mean length of 64 ... 4096 on an aligned input: the adaptive
# step reads packs of K neighbouring segments a warp (reduce_packs; K: the
# power of two covering 2048 / mean, at most 32; the cases below give K = 32,
# 16, 8 and 1), cutting out the deferred ones (longer than 16x the mean and
# than 4096 elements): long segments first, last, at pack edges (32, 33) and
# back to back; runs of empty segments; a pack of empty segments only; one
# segment over many trips of the warp.  mean 0: no long segments, lengths
# 50 ... 110.
def pack_lengths(mean, seed):
    lengths, long_at = pack_test_lengths(mean, seed, short=(50, 110))
    # What the adaptive step reads (its mean, n / count) puts these in packs
    # and defers the long ones.
    m = sum(lengths) / len(lengths)
    assert 64 <= m <= 4096 and all(lengths[at] > max(16 * m, 4096) for at in long_at)
    return lengths


@pytest.mark.parametrize("mean", [0, 20, 100, 1000])
@pytest.mark.parametrize("v", [v for v in SEGMENTED if v.auto_batched], ids=ids)
def test_segments_packs(backend, v, mean):
    need(backend, v)
    lengths = pack_lengths(mean, 30 + mean)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    for j, (op, dtype, acc) in enumerate([("sum", "float32", "float32"), ("max", "int32", "int32"),
                                          ("sum", "float64", "float64"), ("min", "int64", "int64")]):
        x = data(int(offsets[-1]), dtype, 40 + j)
        d = gpuprims.to_device(x)
        run_segments(v, x, d, offsets, op, acc)
        run_segments(v, x, d, offsets[3:-2], op, acc)  # inside a longer input
        np.testing.assert_array_equal(d.get(), x)


@pytest.mark.parametrize("v", [v for v in SEGMENTED if not v.baseline], ids=ids)
def test_segments_deterministic(backend, v):
    need(backend, v)
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 2000, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    x = data(int(offsets[-1]), "float32", 10)
    d = gpuprims.to_device(x)
    offs = gpuprims.to_device(offsets)
    layout = (len(lengths), x.size, 1, 0, 1, 0, offs.ptr)
    bits = {call(v, d.ptr, x.size, layout, "float32", "float32", "sum", len(lengths)).tobytes()
            for _ in range(3)}
    assert len(bits) == 1


# ------------------------------------------------------- the GPU's sizes

BIG_SHAPES = [(4, 2**20 + 3), (2**20 + 3, 4), (64, 2**16 + 1), (2**12 + 1, 2**12)]


@gpu
@pytest.mark.parametrize("shape", BIG_SHAPES, ids=str)
@pytest.mark.parametrize("v", BATCHED, ids=ids)
def test_axis_large(v, shape):
    before = gpuprims.backend()
    gpuprims.set_backend("cuda")
    try:
        base = data(shape[0] * shape[1], "float32", 13)
        d = gpuprims.to_device(base)
        a = base.reshape(shape)
        for axis in (0, 1):
            if v.name == "cub_segmented" and axis == 0:
                continue
            run_axis(v, a, base, d, axis, "sum", "float32")
            run_axis(v, a, base, d, axis, "max", "float32")
    finally:
        gpuprims.set_backend(before)


@gpu
@pytest.mark.parametrize("mean", [4, 64, 1024, 65536])
@pytest.mark.parametrize("v", SEGMENTED, ids=ids)
def test_segments_large(v, mean):
    before = gpuprims.backend()
    gpuprims.set_backend("cuda")
    try:
        rng = np.random.default_rng(mean)
        lengths = rng.integers(0, 2 * mean + 1, size=max(2**22 // mean, 4))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        x = data(int(offsets[-1]), "float32", 14)
        run_segments(v, x, gpuprims.to_device(x), offsets, "sum", "float32")
    finally:
        gpuprims.set_backend(before)
