"""gpu_to_gpu sums whose new largest magnitudes, Infs and NaNs sit inside the
kernels' batched loops (not only in the few elements they read one at a
time), so the rare path of a batch - one widening to the batch's largest
finite magnitude, Inf and NaN recorded and deposited as 0 - is checked
against the NumPy reference (tests/rfa_reference.py), bitwise, on every
backend and for several grids."""
import numpy as np
import pytest

import gpuprims

import rfa_reference as R
from conftest import bits, random_array

FLOATS = [np.float32, np.float64]


def g2g(x, **kw):
    return gpuprims.sum(x, determinism="gpu_to_gpu", **kw)


def growing(n, dtype, seed):
    """Random values whose magnitudes grow along the array (2^-40 to 2^40 of
    [-1, 1)), so every thread meets new largest magnitudes batch after batch,
    with a few spikes far above the rest."""
    x = random_array(n, dtype, seed=seed)
    x = x * np.exp2(np.linspace(-40, 40, n)).astype(dtype)
    if n >= 64:
        x[n // 3] = dtype(2.0 ** 60)
        x[n // 3 + 5] = dtype(-(2.0 ** 61))
    return x


def specials(n, dtype, seed, which):
    x = growing(n, dtype, seed)
    big = np.finfo(dtype).max
    spots = {"nan": [(n // 2 + 3, np.nan)], "inf": [(n // 4 + 1, np.inf)], "-inf": [(17, -np.inf)],
             "both": [(n // 5, np.inf), (n - 1000, -np.inf)], "big": [(n // 7, big), (n // 7 + 64, big)],
             "nan-inf": [(n // 9, np.inf), (n // 2, np.nan)]}[which]
    for i, v in spots:
        x[i] = v
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [4096, 40_961, 100_003])
@pytest.mark.parametrize("grid", ["", "1", "5"])
def test_growing_magnitudes_in_batches(backend, monkeypatch, dtype, n, grid):
    x = growing(n, dtype, seed=n)
    before = x.copy()
    monkeypatch.setenv("GPUPRIMS_TEST_GRID", grid)
    got = g2g(x)
    assert bits(got) == bits(R.rfa_sum(x))
    assert bits(x) == bits(before)
    # the same multiset reversed: the largest magnitudes come first
    assert bits(g2g(x[::-1].copy())) == bits(got)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("which", ["nan", "inf", "-inf", "both", "big", "nan-inf"])
def test_special_values_in_batches(backend, dtype, which):
    x = specials(50_021, dtype, seed=3, which=which)
    before = x.copy()
    got = g2g(x)
    want = R.rfa_sum(x)
    assert bits(got) == bits(want), (got, want)
    assert bits(x) == bits(before)
    if which in ("nan", "both", "nan-inf"):
        assert np.isnan(got)
    elif which == "inf":
        assert got == np.inf
    elif which == "-inf":
        assert got == -np.inf
    else:  # two of the largest finite values: the exact sum overflows
        assert got == np.inf


def test_float32_into_float64_in_batches(backend):
    x = specials(30_011, np.float32, seed=4, which="big")
    x[100] = np.float32(3.0e38)
    got = g2g(x, dtype=np.float64)
    assert got.dtype == np.float64
    assert bits(got) == bits(R.rfa_sum(x, np.float64))
    y = growing(30_011, np.float32, seed=5)
    assert bits(g2g(y, dtype=np.float64)) == bits(R.rfa_sum(y, np.float64))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("cols", [5, 300, 20_000])
def test_rows_with_growing_magnitudes_and_specials(backend, dtype, cols):
    """axis sums: a thread, a warp or a block per row, by the row length."""
    rows = 6
    m = np.stack([growing(cols, dtype, seed=r) for r in range(rows)])
    m[1, cols // 2] = np.nan
    m[2, cols - 1] = np.inf
    m[3, 0], m[3, cols // 3] = -np.inf, np.inf
    m[4, cols // 4] = np.finfo(dtype).max
    before = m.copy()
    got = g2g(m, axis=1)
    want = np.array([R.rfa_sum(r) for r in m], dtype)
    assert bits(got) == bits(want)
    assert bits(m) == bits(before)
    got0 = g2g(np.asfortranarray(m.T), axis=0)
    assert bits(got0) == bits(want)
