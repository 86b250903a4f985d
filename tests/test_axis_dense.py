"""The one-pass kernels of the adaptive axis reduction (segmented.cuh):
aligned rows of 1..32 vectors (reduce_rows_dense), few long aligned rows
(reduce_rows_split, or reduce_rows_long: DenseTuning::LONG_PER_ROW) and dense columns (reduce_columns_flat), reached
through segmented_adaptive with the shapes that choose them and their
edges (one row, a tail of fewer than 4 elements, odd and prime counts,
grids of one block), and the unaligned or strided views that must take
the other mappings; against a float64 / exact reference within the tests'
float bound (test_reduce_batched.reference), the bits the same run to run.
"""
import numpy as np
import pytest

import gpuprims

from conftest import need
from test_reduce_batched import call, data, element0_offset, layout_of, run_axis

ADAPTIVE = next(v for v in gpuprims.variants("reduce") if v.auto_batched)

# (shape, what axis -1 / axis 0 exercise)
SHAPES = [
    (1, 4), (7, 4), (1025, 4), (33, 8), (31, 16), (5, 64), (257, 64), (3, 128),  # rows of 1..32 vectors
    (1, 1000), (3, 4096), (2, 8196), (11, 2052),  # long rows (len a multiple of 4), columns of 2..11
    (1001, 2), (4099, 4), (7, 32), (129, 256), (2, 1024), (1, 2),  # dense columns, tails of n mod 4
    (6, 12), (5, 131),  # rows that are not a power of two of vectors: the other mappings
    # several blocks on the emulator's 2 SMs: the last-block finishes
    (1, 65536), (2, 65536),  # long rows, 16 blocks: 4 and 2 lanes per row in the finish
    (16411, 4), (2053, 64), (40001, 2),  # dense columns, 2 blocks (a tail of 2 in the last)
    # long rows, B blocks a row (16 blocks shared among them): B = 5, 2, 1;
    # rows that end inside the U-load trips (the one-at-a-time trips)
    (3, 65540), (7, 40004), (16, 8192),
    (301, 256), (4097, 128),  # dense columns, 2 blocks: 64 and 32 column groups (Q > 32, Q = 32)
]
# (op, input dtype, accumulator dtype): 4- and 8-byte inputs (4 and 2 a vector)
COMBOS = [("sum", "float32", "float32"), ("max", "float32", "float32"), ("min", "float64", "float64"),
          ("sum", "int32", "int64"), ("sum", "int64", "int64")]


@pytest.mark.parametrize("combo", COMBOS, ids="-".join)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dense_layouts(backend, shape, combo):
    need(backend, ADAPTIVE)
    op, dtype, acc = combo
    base = data(shape[0] * shape[1], dtype, 21)
    base.setflags(write=False)
    d = gpuprims.to_device(base)
    a = base.reshape(shape)
    for axis in (1, 0):
        run_axis(ADAPTIVE, a, base, d, axis, op, acc)
    np.testing.assert_array_equal(d.get(), base)


@pytest.mark.parametrize("shape", [(33, 64), (3, 4096), (1025, 4), (129, 256)], ids=str)
def test_unaligned_and_strided_views(backend, shape):
    """An input starting one element past a 16-byte boundary, and rows with
    a gap after them (s_inner > len): the checks send them elsewhere."""
    need(backend, ADAPTIVE)
    r, c = shape
    base = data(r * (c + 4) + 1, "float32", 22)
    d = gpuprims.to_device(base)
    shifted = base[1:1 + r * c].reshape(r, c)
    gapped = base[:r * (c + 4)].reshape(r, c + 4)[:, :c]
    for a in (shifted, gapped):
        for axis in (1, 0):
            run_axis(ADAPTIVE, a, base, d, axis, "sum", "float32")


@pytest.mark.parametrize("shape", [(1025, 4), (257, 64), (3, 4096), (4099, 4)], ids=str)
def test_dense_deterministic(backend, shape):
    need(backend, ADAPTIVE)
    base = data(shape[0] * shape[1], "float32", 23)
    d = gpuprims.to_device(base)
    a = base.reshape(shape)
    for axis in (1, 0):
        layout = layout_of(a, axis)
        outer, n, inner = layout[:3]
        bits = {call(ADAPTIVE, d.ptr + element0_offset(a, base), outer * n * inner, layout + (0,),
                     "float32", "float32", "sum", outer * inner).tobytes() for _ in range(3)}
        assert len(bits) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2**20, 64), (64, 2**20), (4, 2**22), (2**22, 4), (3, 2**22 + 4)], ids=str)
def test_dense_gpu_sizes(cuda, shape):
    """The benchmark's shapes (smaller where it changes nothing): many
    blocks, the last-block finishes over hundreds of partials."""
    base = data(shape[0] * shape[1], "float32", 24)
    d = gpuprims.to_device(base)
    a = base.reshape(shape)
    for axis in (1, 0):
        run_axis(ADAPTIVE, a, base, d, axis, "sum", "float32")
        run_axis(ADAPTIVE, a, base, d, axis, "max", "float32")
