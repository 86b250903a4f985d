"""Shared test setup: the gpu and slow markers, random inputs, references."""
import numpy as np
import pytest

import gpuprims

GPU_OK, GPU_WHY = gpuprims._core.cuda_status()


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", help="run the >2^31-element tests")


def pytest_collection_modifyitems(config, items):
    no_gpu = pytest.mark.skip(reason=f"needs a CUDA GPU; none visible here ({GPU_WHY})")
    no_slow = pytest.mark.skip(reason="slow (over 2^31 elements): run with --runslow on a GPU")
    for item in items:
        if "gpu" in item.keywords and not GPU_OK:
            item.add_marker(no_gpu)
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(no_slow)


def random_array(n, dtype, seed=0):
    """Random, never zeros: signed integers in [-1000, 1000), floats in
    [-1, 1) (so sums cancel and min/max sit anywhere)."""
    rng = np.random.default_rng(seed + 7919 * n)
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, size=n, dtype=dtype)
    return (rng.random(n, dtype=np.float64) * 2 - 1).astype(dtype)
