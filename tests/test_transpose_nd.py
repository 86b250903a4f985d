"""Transpose of any rank: gpuprims.transpose(x, axes) against
numpy.ascontiguousarray(numpy.transpose(x, axes)), exactly.

Every variant that takes any rank (the registry's rows without the matrix
flag) x element sizes 1, 2, 4, 8, 16 x ranks 0-6: every permutation up to
rank 4, a random sample for 5 and 6, shapes with odd sizes, size-1 and
size-0 axes, tile and vector boundaries; strided, negative-strided and
broadcast inputs; the plan; bad axes.  On the emulator always, on the GPU
where there is one (bigger shapes there only).
"""
import itertools
import math
import re

import numpy as np
import pytest

import gpuprims

from conftest import need

VARIANTS = gpuprims.variants("transpose")
ND = [v for v in VARIANTS if not v.matrix and v.where == "device" and v.name != "copy"]
BY_NAME = {v.name: v for v in VARIANTS}
ELEMENTS = ["int8", "float16", "float32", "float64", "complex128"]  # 1, 2, 4, 8, 16 bytes
gpu = pytest.mark.gpu

# Shapes by rank: odd sizes, size-1 and size-0 axes, and (for nd_tiled)
# sides shorter and longer than a tile, whole and partial 16-byte vectors.
SHAPES = {
    0: [()],
    1: [(7,), (0,), (33,)],
    2: [(5, 7), (1, 9), (33, 130), (144, 160)],
    3: [(3, 5, 7), (2, 1, 9), (17, 33, 16), (4, 32, 48), (2, 144, 160), (3, 0, 2)],
    4: [(3, 1, 5, 4), (2, 3, 4, 5), (8, 16, 2, 16), (16, 8, 16, 8)],
    5: [(2, 3, 1, 4, 5), (3, 2, 3, 2, 3), (2, 16, 3, 16, 32)],
    6: [(2, 3, 2, 1, 3, 2), (4, 2, 2, 3, 2, 16)],
}
SAMPLE = 6  # permutations drawn for ranks 5 and 6


def perms(rank, seed=0):
    if rank <= 4:
        return list(itertools.permutations(range(rank)))
    rng = np.random.default_rng(seed + rank)
    drawn = {tuple(range(rank)), tuple(reversed(range(rank)))}
    while len(drawn) < SAMPLE:
        drawn.add(tuple(int(a) for a in rng.permutation(rank)))
    return sorted(drawn)


def random_array(shape, dtype, seed=0):
    """Random, never zeros, read-only: a misplaced element shows, and a
    variant writing into its input raises."""
    rng = np.random.default_rng(seed + 7919 * math.prod(shape) + len(shape))
    dtype = np.dtype(dtype)
    if not dtype.isnative:  # the same values, stored byte-swapped
        x = random_array(shape, dtype.newbyteorder("="), seed).astype(dtype)
        x.setflags(write=False)
        return x
    if dtype.kind == "b":
        x = rng.integers(0, 2, size=shape).astype(dtype)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    elif dtype.kind == "c":
        x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * 1000).astype(dtype)
    x.setflags(write=False)
    return x


def expect(x, axes):
    """numpy.ascontiguousarray(numpy.transpose(x, axes)), but a 0-d x stays
    0-d (ascontiguousarray would make it 1-D)."""
    return np.transpose(x, axes).copy(order="C")


def check(got, x, axes):
    want = expect(x, axes)
    assert isinstance(got, np.ndarray) and got.flags.c_contiguous
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))  # bits


def cases():
    for v in ND:
        for dtype in ELEMENTS:
            for rank, shapes in SHAPES.items():
                for shape in shapes:
                    yield pytest.param(v.name, dtype, shape, id=f"{v.name}-{dtype}-{'x'.join(map(str, shape)) or '0d'}")


# ------------------------------------------------------------- every rank

@pytest.mark.parametrize("variant,dtype,shape", list(cases()))
def test_every_permutation_matches_numpy(backend, variant, dtype, shape):
    need(backend, BY_NAME[variant])
    x = random_array(shape, dtype)
    for axes in perms(len(shape)):
        check(gpuprims.transpose(x, axes, variant=variant), x, axes)
    check(gpuprims.transpose(x, variant=variant), x, None)  # None reverses


@pytest.mark.parametrize("variant", [v.name for v in ND])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64", "complex64", ">f4", ">i2", ">c16", "<f8"])
def test_every_dtype_and_byte_order(backend, variant, dtype):
    need(backend, BY_NAME[variant])
    x = random_array((3, 32, 16), dtype)
    for axes in [(2, 1, 0), (0, 2, 1), (1, 0, 2)]:
        got = gpuprims.transpose(x, axes, variant=variant)
        assert got.dtype == x.dtype  # byte order included
        check(got, x, axes)


@pytest.mark.parametrize("variant", [v.name for v in ND])
def test_negative_axes_and_scalars(backend, variant):
    need(backend, BY_NAME[variant])
    x = random_array((3, 4, 5), "float32")
    check(gpuprims.transpose(x, (-1, 0, -2), variant=variant), x, (-1, 0, -2))
    check(gpuprims.transpose(x, [2, 0, 1], variant=variant), x, (2, 0, 1))
    s = np.float64(2.5)
    got = gpuprims.transpose(s, variant=variant)
    assert got.shape == () and got.dtype == s.dtype and got[()] == s


# --------------------------------------------------------- strided input

def views(x, xp=np):
    """Views of x (a NumPy array, or a CuPy one with xp=cupy) that are not
    C-contiguous: reversed, stepped, permuted, broadcast, and a mix."""
    r = x.ndim
    roll = [tuple(int(a) for a in np.roll(np.arange(r), k)) for k in (1, -1)]
    yield "reversed", x[::-1]
    yield "all reversed", x[(slice(None, None, -1),) * r]
    yield "stepped", x[(slice(None, None, 2),) * r]
    yield "permuted view", x.transpose(roll[0])
    yield "last reversed", x[..., ::-1]
    yield "broadcast", xp.broadcast_to(x[:1], x.shape)
    yield "broadcast fastest", xp.broadcast_to(x[..., :1], x.shape)
    yield "mixed", x[::-1, ..., 1::3].transpose(roll[1])


@pytest.mark.parametrize("variant", [v.name for v in ND])
@pytest.mark.parametrize("dtype", ELEMENTS)
def test_strided_numpy_inputs_read_in_place(backend, variant, dtype):
    need(backend, BY_NAME[variant])
    base = random_array((6, 32, 48), dtype)
    for name, x in views(base):
        before = x.copy()
        for axes in [(2, 1, 0), (0, 2, 1), (1, 0, 2), (1, 2, 0)]:
            check(gpuprims.transpose(x, axes, variant=variant), x, axes)
        np.testing.assert_array_equal(x, before, err_msg=name)


@pytest.mark.parametrize("variant", [v.name for v in VARIANTS if v.matrix and v.where == "device"
                                     and "emulator" in v.backends])
def test_matrix_variants_take_strided_2d_numpy(backend, variant):
    base = random_array((40, 66), "float32")
    for x in (base[::-1], base[:, ::2], base.T, base[::-2, ::-3]):
        check(gpuprims.transpose(x, variant=variant), x, None)


def test_input_unmodified_device(backend):
    x = random_array((5, 16, 24), "float32")
    d = gpuprims.to_device(x)
    for v in ND:
        need(backend, v)
        got = gpuprims.transpose(d, (2, 0, 1), variant=v.name)
        assert isinstance(got, gpuprims.DeviceArray)
        np.testing.assert_array_equal(got.get(), expect(x, (2, 0, 1)))
        np.testing.assert_array_equal(d.get(), x)


def test_device_view_at_an_offset(backend):
    # a DeviceArray starting one element in: the 16-byte paths must fall back
    flat = random_array((1 + 4 * 32 * 48,), "float32")
    d = gpuprims.to_device(flat)
    view = gpuprims.DeviceArray((4, 32, 48), np.float32, _ptr=d.ptr + 4, _owner=d)
    want = flat[1:].reshape(4, 32, 48)
    for v in ND:
        for axes in [(2, 1, 0), (0, 2, 1), (1, 0, 2)]:
            np.testing.assert_array_equal(gpuprims.transpose(view, axes, variant=v.name).get(), expect(want, axes))


# ----------------------------------------------------------------- the plan

@pytest.mark.parametrize("shape,axes,strides,planned", [
    ((64, 128, 64, 128), (0, 3, 1, 2), None, ((64, 8192, 128), (0, 2, 1))),
    ((64, 128, 64, 128), (0, 2, 1, 3), None, ((64, 128, 64, 128), (0, 2, 1, 3))),
    ((512, 256, 512), (1, 0, 2), None, ((512, 256, 512), (1, 0, 2))),
    ((2, 3, 4, 5), (2, 3, 0, 1), None, ((6, 20), (1, 0))),
    ((2, 3, 4), (0, 1, 2), None, ((24,), (0,))),
    ((1, 5, 1, 7, 1), (4, 3, 2, 1, 0), None, ((5, 7), (1, 0))),
    ((3, 1, 1), None, None, ((3,), (0,))),
    ((), None, None, ((), ())),
    # a stride that breaks the run: axes 1 and 2 stay together in the output but not in memory
    ((4, 5, 6), (1, 2, 0), (60, 12, 1), ((4, 5, 6), (1, 2, 0))),
    ((4, 5, 6), (1, 2, 0), (30, 6, 1), ((4, 30), (1, 0))),
    ((4, 5, 6), (1, 2, 0), (-30, -6, -1), ((4, 30), (1, 0))),
])
def test_plan_fuses_what_stays_together(shape, axes, strides, planned):
    p = gpuprims.transpose_plan(shape, axes, strides)
    assert (p.shape, p.axes) == planned
    assert math.prod(p.shape) == math.prod(shape)
    assert "->" in str(p)


def test_plan_groups_and_kind():
    p = gpuprims.transpose_plan((64, 128, 64, 128), (0, 3, 1, 2))
    assert p.groups == ((0,), (1, 2), (3,)) and p.kind == "tile"
    assert gpuprims.transpose_plan((512, 256, 512), (1, 0, 2)).kind == "copy"
    assert gpuprims.transpose_plan((3, 4), None).kind == "matrix"
    assert gpuprims.transpose_plan((16,) * 6).rank == 6


# ----------------------------------------------------------------- errors

@pytest.mark.parametrize("axes", [(0, 0, 1), (0, 1), (0, 1, 5), (0, 1, -4), (0, 1, 2, 3), (0, 1, 1.5)],
                         ids=str)
def test_bad_axes_raise_what_numpy_raises(axes):
    x = random_array((2, 3, 4), "float32")
    with pytest.raises(Exception) as numpy_error:
        np.transpose(x, axes)
    with pytest.raises(type(numpy_error.value), match=re.escape(str(numpy_error.value))):
        gpuprims.transpose(x, axes)
    if isinstance(numpy_error.value, ValueError):  # AxisError is a ValueError too
        with pytest.raises(ValueError):
            gpuprims.transpose(x, axes)


def test_too_many_axes_after_the_plan_is_a_valueerror():
    x = random_array((2,) * 17, "int8")  # a reversal of 17 axes fuses nothing
    with pytest.raises(ValueError, match="17 axes.*at most 16"):
        gpuprims.transpose(x)
    # size-1 axes cost nothing: 40 of them around a matrix plan to 2 axes
    y = random_array((1,) * 20 + (3, 5) + (1,) * 20, "float32")
    check(gpuprims.transpose(y), y, None)


@pytest.mark.parametrize("dtype", ELEMENTS)
def test_tiles_located_by_64_bit_divisions(backend, monkeypatch, dtype):
    """nd_tiled finds a tile's coordinates by 32-bit divisions done as
    multiplications wherever its indices fit 32 bits; past that (arrays of
    over 2^32 tiles) by 64-bit divisions.  GPUPRIMS_TEST_WIDE_INDEX sends
    every call down the 64-bit path; both must give NumPy's bits."""
    need(backend, BY_NAME["nd_tiled"])
    for wide in ("", "1"):
        monkeypatch.setenv("GPUPRIMS_TEST_WIDE_INDEX", wide)
        for shape in [(17, 33, 16), (2, 144, 160), (8, 16, 2, 16), (2, 16, 3, 16, 32)]:
            x = random_array(shape, dtype)
            for axes in perms(len(shape)):
                check(gpuprims.transpose(x, axes, variant="nd_tiled"), x, axes)


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_batch_walked_in_groups(backend, dtype):
    """1- and 2-byte tiles take their batch in groups of 8 x 8 of the two
    batch axes nearest in the input and in the output (each split in two);
    these permutations of (16, 2, 16, 16, 2, 16) leave two or three batch
    axes beside the tile's sides, so the split runs."""
    need(backend, BY_NAME["nd_tiled"])
    x = random_array((16, 2, 16, 16, 2, 16), dtype)
    for axes in [(5, 4, 3, 2, 1, 0), (4, 0, 2, 1, 5, 3), (2, 5, 4, 1, 3, 0), (1, 4, 2, 3, 5, 0)]:
        check(gpuprims.transpose(x, axes, variant="nd_tiled"), x, axes)


# ------------------------------------------------------ on the GPU only

@gpu
@pytest.mark.parametrize("dtype", ELEMENTS)
def test_large_permutations_on_the_gpu(cuda, dtype):
    shape = (24, 130, 33, 128) if np.dtype(dtype).itemsize < 8 else (12, 66, 33, 64)
    x = random_array(shape, dtype)
    d = gpuprims.to_device(x)
    for v in ND:
        for axes in itertools.permutations(range(4)):
            np.testing.assert_array_equal(gpuprims.transpose(d, axes, variant=v.name).get(), expect(x, axes))
    for axes in perms(6):
        y = random_array((16, 15, 8, 9, 16, 8), dtype)
        np.testing.assert_array_equal(gpuprims.transpose(gpuprims.to_device(y), axes).get(), expect(y, axes))


# ------------------------------------------------------------------- out=

OUT_VARIANTS = [v.name for v in ND] + ["tiled_wide", "cpu"]


@pytest.mark.parametrize("variant", OUT_VARIANTS)
def test_out_receives_the_result(backend, variant):
    need(backend, BY_NAME[variant])
    matrix = BY_NAME[variant].matrix
    x = random_array((6, 10) if matrix else (4, 6, 10), "float32")
    axes = None if matrix else (2, 0, 1)
    want = expect(x, axes)
    out = np.full(want.shape, -1, np.float32)
    assert gpuprims.transpose(x, axes, out=out, variant=variant) is out
    np.testing.assert_array_equal(out, want)
    strided = np.full((want.shape[0] * 2,) + want.shape[1:], -1, np.float32)[::2]  # not contiguous
    assert gpuprims.transpose(x, axes, out=strided, variant=variant) is strided
    np.testing.assert_array_equal(strided, want)
    if BY_NAME[variant].where == "device":
        d_out = gpuprims.DeviceArray(want.shape, np.float32)
        assert gpuprims.transpose(gpuprims.to_device(x), axes, out=d_out, variant=variant) is d_out
        np.testing.assert_array_equal(d_out.get(), want)


def test_out_of_a_0d_and_an_empty_array(backend):
    s = np.array(3.5, np.float64)
    out = np.empty((), np.float64)
    assert gpuprims.transpose(s, out=out) is out and out[()] == 3.5
    e = np.empty((3, 0, 2), np.int16)
    out = np.empty((2, 0, 3), np.int16)
    assert gpuprims.transpose(e, out=out) is out


def test_bad_out_raises_before_any_work(backend):
    x = random_array((3, 4, 5), "float32")
    with pytest.raises(ValueError, match="shape"):
        gpuprims.transpose(x, out=np.empty((3, 4, 5), np.float32))  # the input's shape, not the result's
    with pytest.raises(TypeError, match="dtype"):
        gpuprims.transpose(x, out=np.empty((5, 4, 3), np.float64))
    ro = np.empty((5, 4, 3), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        gpuprims.transpose(x, out=ro)
    with pytest.raises(TypeError, match="NumPy array"):
        gpuprims.transpose(x, out=gpuprims.DeviceArray((5, 4, 3), np.float32))
    with pytest.raises(TypeError, match="device array"):
        gpuprims.transpose(gpuprims.to_device(x), out=np.empty((5, 4, 3), np.float32))
    with pytest.raises(TypeError, match="out must be"):
        gpuprims.transpose(x, out=[0.0] * 60)
    sq = np.array(random_array((4, 4), "float32"))
    with pytest.raises(ValueError, match="overlaps"):
        gpuprims.transpose(sq, out=sq)


@pytest.mark.parametrize("variant", ["auto", "nd_tiled", "tiled_wide"])
def test_repeated_device_calls_take_the_hot_path(backend, variant, monkeypatch):
    """A second call on a DeviceArray of the same (variant, axes, shape,
    dtype) goes straight to the core (_transpose._PARSED): the same results
    as NumPy, into a new array or into out=, the input unchanged; axes the
    hot path does not take (a list, bool or NumPy entries) and a bad out=
    still go through the parsing, which judges them as before."""
    from gpuprims import _transpose
    if variant != "auto":
        need(backend, BY_NAME[variant])
    monkeypatch.setattr(_transpose, "_PARSED", {})
    matrix = variant == "tiled_wide"
    x = random_array((33, 130) if matrix else (17, 33, 16), "float32")
    axes = None if matrix else (2, 0, 1)
    want = expect(x, axes)
    d = gpuprims.to_device(x)
    first = gpuprims.transpose(d, axes, variant=variant)
    assert len(_transpose._PARSED) == 1
    out = gpuprims.DeviceArray(want.shape, np.float32)
    with monkeypatch.context() as m:  # no parsing on the hot path: lookup is never reached
        m.setattr(_transpose, "lookup", lambda *a: pytest.fail("parsed again"))
        second = gpuprims.transpose(d, axes, variant=variant)
        assert gpuprims.transpose(d, axes, out=out, variant=variant) is out
    for got in (first, second, out):
        assert type(got) is gpuprims.DeviceArray and got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want)
    assert second.ptr != first.ptr
    np.testing.assert_array_equal(d.get(), x)
    # not the hot path: judged as before
    with pytest.raises(ValueError, match="shape"):
        gpuprims.transpose(d, axes, out=gpuprims.DeviceArray(x.shape, np.float32), variant=variant)
    sq = gpuprims.to_device(random_array((16, 16), "float32"))
    gpuprims.transpose(sq, variant=variant)
    with pytest.raises(ValueError, match="overlaps"):  # its own input as out=, after a parsed call
        gpuprims.transpose(sq, out=sq, variant=variant)
    if not matrix:
        with pytest.raises(TypeError):
            gpuprims.transpose(d, (True, False, False), variant=variant)  # NumPy refuses bool axes
        np.testing.assert_array_equal(gpuprims.transpose(d, [2, 0, 1], variant=variant).get(), want)
        np.testing.assert_array_equal(gpuprims.transpose(d, (np.int64(2), 0, 1), variant=variant).get(), want)
    assert len(_transpose._PARSED) == 2  # (17, 33, 16) or (33, 130), and (16, 16)


@gpu
@pytest.mark.parametrize("dtype", ELEMENTS)
def test_strided_device_inputs_read_in_place(cuda, monkeypatch, dtype):
    cp = pytest.importorskip("cupy")
    base = random_array((6, 32, 48), dtype)
    # nothing may be gathered through the host: the kernels read through the strides
    monkeypatch.setattr(gpuprims._arrays, "_gather", lambda *a: pytest.fail("a strided input was gathered"))
    c = cp.asarray(base)
    for name, view in views(c, cp):
        want_in = cp.asnumpy(view)
        for v in ND:
            for axes in [(2, 1, 0), (0, 2, 1), (1, 0, 2), (1, 2, 0)]:
                got = gpuprims.transpose(view, axes, variant=v.name)
                np.testing.assert_array_equal(got.get(), expect(want_in, axes), err_msg=f"{v.name} {name}")
        np.testing.assert_array_equal(cp.asnumpy(view), want_in)


# ------------------------------------------------------- the timing table

def test_compare_permutations_table(monkeypatch):
    # the table's shape and checks, with the GPU's timer stood in for (the
    # kernels run on the emulator, the "times" are made up)
    from gpuprims import _core
    monkeypatch.setattr(_core, "device_info", lambda: {"l2_cache_bytes": 1 << 20})
    monkeypatch.setattr(_core, "time_copy", lambda nbytes, w, r, f: [0.5] * r)

    def fake_time(family, index, src, dst, params, warmup, repeat, flush):
        v = gpuprims.variants("transpose")[index]
        before = gpuprims.backend()
        gpuprims.set_backend("emulator")
        try:  # the kernel's real output, on the emulator
            _core.call(family, index, src, dst, params)
        finally:
            gpuprims.set_backend(before)
        return [1.0 if v.name == "nd_naive" else 0.25] * repeat, None

    monkeypatch.setattr(_core, "time", fake_time)
    # a peer library stood in for CuPy / PyTorch: what it was asked to time
    from gpuprims import _bench
    asked = []

    def fake_peer_timer(f, repeat, warmup):
        f()
        return [0.75] * repeat

    def make(d, axes):
        return lambda: asked.append((d.shape, tuple(axes)))

    monkeypatch.setattr(_bench, "transpose_peers", lambda flush: {"fake": ("Fake 1.0", fake_peer_timer, make)})
    cases = [((6, 32, 48), (2, 0, 1)), ((2, 3, 4, 5), None), ((6, 10), None)]
    before = gpuprims.backend()
    gpuprims.set_backend("emulator")
    try:
        t = gpuprims.compare_permutations(cases, "int8", repeat=3)
        plain = gpuprims.compare_permutations(cases[:1], "int8", repeat=3, peers=False)
    finally:
        gpuprims.set_backend(before)
    assert len(t) == 3 and all(r["matches"] for r in t)
    assert t.rows[0]["nd_naive_ms"] == 1.0 and t.rows[0]["nd_tiled_ms"] == 0.25
    assert t.rows[0]["roof_pct"] == pytest.approx(200.0)  # 0.25 ms against a 0.5 ms copy
    assert "->" in t.rows[1]["plan"] and "nd_tiled ms" in str(t)
    # the peer ran on a device array of each case's shape, with its axes (None: reversed)
    assert asked == [((6, 32, 48), (2, 0, 1)), ((2, 3, 4, 5), (3, 2, 1, 0)), ((6, 10), (1, 0))]
    assert t.rows[0]["fake_ms"] == 0.75 and t.rows[0]["x_fake"] == pytest.approx(3.0)  # 0.75 / auto's 0.25
    assert "Fake 1.0 ms" in str(t) and "x Fake" in str(t) and t.meta["peers"] == ["Fake 1.0"]
    assert "fake_ms" not in plain.rows[0] and plain.meta["peers"] == [] and len(asked) == 3
