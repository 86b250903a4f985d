"""Shared test setup: the gpu and slow markers, random inputs, references."""
import contextlib
import functools
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import gpuprims
from gpuprims._backend import cccl_version

import emu_selftest  # tests/: the emulator runtime's sources

GPU_OK, GPU_WHY = gpuprims._core.cuda_status()

# The emulator runs every kernel on the CPU; on CI (2 cores) the correctness
# suite runs there up to these sizes, and beyond them on the cuda backend only.
EMU_MAX_N = 2**18  # elements, reduce and scan
EMU_MAX_TRANSPOSE = 2**20  # elements of a transpose


@pytest.fixture(params=["cuda", "emulator"])
def backend(request):
    """Run the test on each backend: "cuda" (skipped without a GPU, with the
    reason) and "emulator" (always).  The previous backend comes back after."""
    if request.param == "cuda" and not GPU_OK:
        pytest.skip(f"needs a CUDA GPU; none visible here ({GPU_WHY})")
    before = gpuprims.backend()
    gpuprims.set_backend(request.param)
    yield request.param
    gpuprims.set_backend(before)


@pytest.fixture
def cuda():
    """The cuda backend for a GPU-only test (skipped, with the reason, where
    no GPU is visible); the previous one comes back after."""
    if not GPU_OK:
        pytest.skip(f"needs a CUDA GPU; none visible here ({GPU_WHY})")
    yield from _switched_to("cuda")


@pytest.fixture
def emulator():
    """The emulator backend for the test; the previous one comes back after."""
    yield from _switched_to("emulator")


def _switched_to(name):
    """A fixture's body: backend `name` for the test, the previous one after."""
    before = gpuprims.backend()
    gpuprims.set_backend(name)
    yield
    gpuprims.set_backend(before)


@contextlib.contextmanager
def gpuless_cuda_backend():
    """The cuda backend where no GPU is visible (as GPUPRIMS_BACKEND=cuda
    sets it), so that GPU calls raise NoDeviceError; the previous backend
    comes back after."""
    before = gpuprims.backend()
    gpuprims._core.set_backend_unchecked("cuda")
    try:
        yield
    finally:
        gpuprims.set_backend(before)


# The baselines that need CCCL 3.5's determinism requirements
# (cuda/cub_env.cuh); built against an older CCCL they raise CudaError.
NEEDS_CCCL_3_5 = ("cub_deterministic", "cub_reproducible")


def need(backend, variant=None, n=0, limit=EMU_MAX_N):
    """Skip, saying why, what the emulator does not run: the NVIDIA library
    baselines (cub, cublas) and sizes over the CI budget; and on the GPU the
    rows this build's CCCL lacks."""
    if backend != "emulator":
        if variant is not None and variant.name in NEEDS_CCCL_3_5 and (cccl_version() or 0) < 3005000:
            pytest.skip(f"{variant.name} needs CCCL 3.5 or newer; this build has {gpuprims.device_info()['cccl']}")
        return
    if variant is not None and "emulator" not in variant.backends:
        pytest.skip(f"{variant.name} is NVIDIA library code: cuda backend only")
    if n > limit:
        pytest.skip(f"emulator: {n} elements is over the {limit} the CI time budget allows "
                    f"(runs on the cuda backend)")


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


def bits(v):
    """The bytes of v (a NumPy scalar or array): what "the same bits" compares."""
    return np.asarray(v).tobytes()


def random_array(n, dtype, seed=0):
    """Random, never zeros: signed integers in [-1000, 1000), floats in
    [-1, 1) (so sums cancel and min/max sit anywhere)."""
    rng = np.random.default_rng(seed + 7919 * n)
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, size=n, dtype=dtype)
    return (rng.random(n, dtype=np.float64) * 2 - 1).astype(dtype)


# Where the packs' tests (test_reduce_batched, test_scan_batched) put their
# long segments: first, last, at pack edges (31, 32, 33), back to back.
PACK_LONG_AT = (0, 31, 32, 33, 70, 71, 399)


def pack_test_lengths(mean, seed, short):
    """400 segment lengths for the packs' tests and the indices of the long
    ones: uniform in [0, 2 mean] with those at PACK_LONG_AT 64 mean + 8192 +
    their index long, 40 empty (90 ... 129) and one of 5000 (100); mean 0:
    uniform in short = (lo, hi), 40 empty, none long."""
    rng = np.random.default_rng(seed)
    if mean == 0:
        lengths, long_at = list(rng.integers(short[0], short[1] + 1, size=400)), ()
    else:
        lengths, long_at = list(rng.integers(0, 2 * mean + 1, size=400)), PACK_LONG_AT
        for at in long_at:
            lengths[at] = 64 * mean + 8192 + at
    lengths[90:130] = [0] * 40
    if mean:
        lengths[100] = 5000
    return lengths, long_at


def read_only_cases(seed=0):
    """host_case(n, dtype): random_array(n, dtype, seed), made read-only (a
    variant writing into its input would raise) and cached, so that every
    variant meets the same input."""
    @functools.lru_cache(maxsize=None)
    def host_case(n, dtype):
        x = random_array(n, dtype, seed=seed)
        x.setflags(write=False)
        return x
    return host_case


def device_cases(host_case):
    """device_case(*key): host_case(*key) uploaded once per backend (device
    memory belongs to the backend that made it) and cached."""
    @functools.lru_cache(maxsize=None)
    def on(backend, *key):
        return gpuprims.to_device(host_case(*key))
    return lambda *key: on(gpuprims.backend(), *key)


def run_emulator_program(tmp_path, source):
    """Build tests/<source> (a C++ program over the kernels) with the host
    C++ compiler against the emulator runtime (emu/), run it, and return its
    stdout; skipped where no C++ compiler is found, failed where it does not
    build or exits non-zero."""
    cxx = (os.environ.get("CXX") or "c++").split()
    if shutil.which(cxx[0]) is None:
        pytest.skip("no C++ compiler")
    root = Path(__file__).resolve().parent.parent
    exe = tmp_path / Path(source).stem
    cmd = [*cxx, "-std=c++17", "-O1", "-DGP_EMULATOR", "-Iemu/include", "-Icuda", "-x", "c++",
           *emu_selftest.RUNTIME_SOURCES, f"tests/{source}", "-o", str(exe), "-lpthread"]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    return r.stdout
