"""gpuprims.trace with axis= and segments=: the emulator shows which block
and thread wrote each output element, the mapping of problems to threads
that the batched and segmented rows differ in.  Runs anywhere (emulator)."""
import numpy as np
import pytest

import gpuprims

X = (np.random.default_rng(4).random(40) + 0.5).astype(np.float32)  # positive: no output is 0
OFF = [0, 3, 3, 20, 40]


def seg_sums(x, off):
    return np.array([x[a:b].sum(dtype=np.float64) for a, b in zip(off[:-1], off[1:])])


@pytest.mark.parametrize("variant,owner", [
    ("segmented_block", lambda j: (j, 0)),         # a block per segment, its thread 0 writes
    ("segmented_warp", lambda j: (0, 32 * j)),     # a warp per segment, its lane 0 writes
    ("batched_thread", lambda j: (0, j)),          # a thread per segment
])
def test_segment_owners(variant, owner):
    t = gpuprims.trace("reduce", variant, X, segments=OFF)
    np.testing.assert_allclose(t.result, seg_sums(X, OFF), rtol=1e-6)
    assert [(o[1], o[2]) for o in t.owners()] == [owner(j) for j in range(len(OFF) - 1)]
    assert "output 1: block" in t.owners_text()


def test_axis_owners_columns_and_rows():
    x = X.reshape(8, 5)
    t = gpuprims.trace("reduce", "batched_columns", x, axis=0)  # threads across columns
    np.testing.assert_allclose(t.result, x.sum(axis=0, dtype=np.float64), rtol=1e-6)
    assert [o[2] for o in t.owners()] == list(range(5))
    t = gpuprims.trace("reduce", "segmented_warp", x, axis=1)  # a warp per row
    np.testing.assert_allclose(t.result, x.sum(axis=1, dtype=np.float64), rtol=1e-6)
    assert [o[2] for o in t.owners()] == [32 * r for r in range(8)]


@pytest.mark.parametrize("inclusive", [True, False])
def test_segmented_scan_trace(inclusive):
    t = gpuprims.trace("scan", "segmented_warp", X, segments=OFF, inclusive=inclusive)
    want = np.concatenate([np.cumsum(X[a:b], dtype=np.float64) if inclusive else
                           np.concatenate([[0.0], np.cumsum(X[a:b], dtype=np.float64)[:-1]])[: b - a]
                           for a, b in zip(OFF[:-1], OFF[1:])])
    np.testing.assert_allclose(t.result, want, rtol=1e-6)
    owners = t.owners()
    assert len(owners) == X.size and all(o is not None for o in owners)
    assert owners[0][2] // 32 != owners[3][2] // 32  # the next segment: another warp


def test_layout_errors():
    with pytest.raises(ValueError, match="axis= and segments= are for reduce and scan"):
        gpuprims.trace("transpose", "per_element", X.reshape(5, 8), axis=0)
    with pytest.raises(ValueError, match="segment boundaries"):
        gpuprims.trace("reduce", "segmented_warp", X, segments=[0, 50])
