"""The emulator backend itself: backend selection, what it catches (a
planted race, a barrier some threads never reach, bad launches, and - in an
AddressSanitizer build - an out-of-bounds write), warp collectives, and
explain mode (gpuprims.trace).  Runs everywhere; no GPU needed."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpuprims
from gpuprims import _core

import emu_selftest
from conftest import GPU_OK

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    lib = emu_selftest.build(tmp_path_factory.mktemp("selftest"))
    if lib is None:
        pytest.skip("no C++ compiler here to build the emulator's self-test kernels")
    return emu_selftest.runner(lib)


# ------------------------------------------------------------ backends

def test_backend_selection():
    assert "emulator" in gpuprims.backends()
    assert gpuprims.backend() in gpuprims.backends()
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        gpuprims.set_backend("tpu")
    before = gpuprims.backend()
    gpuprims.set_backend("auto")
    assert gpuprims.backend() == ("cuda" if GPU_OK else "emulator")
    gpuprims.set_backend(before)


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU path; a GPU is visible here")
def test_auto_without_gpu_is_the_emulator_with_one_warning_at_the_first_kernel():
    code = ("import warnings, numpy as np, gpuprims\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    gpuprims.set_backend('auto'); gpuprims.set_backend('auto')\n"
            "    before = len(w)\n"
            "    gpuprims.sum(np.ones(10, np.float32))\n"  # line 6: the warning points here
            "    gpuprims.cumsum(np.ones(10, np.float32))\n"
            "print(gpuprims.backend(), before, len(w), w[0].category.__name__, w[0].lineno)\n")
    env = dict(os.environ, GPUPRIMS_BACKEND="auto")
    r = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["emulator", "0", "1", "EmulatorWarning", "6"]
    # not at import, nor where the emulator is chosen by name
    r = subprocess.run([sys.executable, "-W", "always", "-c", "import gpuprims"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = subprocess.run([sys.executable, "-W", "error", "-c",
                        "import numpy as np, gpuprims; gpuprims.set_backend('emulator'); "
                        "print(gpuprims.sum(np.ones(4, np.float32)))"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "4.0", r.stderr


def test_environment_variable_selects_the_backend():
    env = dict(os.environ, GPUPRIMS_BACKEND="emulator")
    r = subprocess.run([sys.executable, "-W", "error", "-c", "import gpuprims; print(gpuprims.backend())"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "emulator", r.stderr
    env["GPUPRIMS_BACKEND"] = "quantum"
    r = subprocess.run([sys.executable, "-c", "import gpuprims"], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "GPUPRIMS_BACKEND='quantum'" in r.stderr


@pytest.mark.parametrize("family,variant,x", [
    ("reduce", "cub", np.ones(10, np.float32)),
    ("scan", "cub", np.ones(10, np.float32)),
    ("scan", "cub_deterministic", np.ones(10, np.float32)),
    ("reduce", "cub_reproducible", np.ones(10, np.float32)),
    ("transpose", "cublas", np.ones((3, 4), np.float32)),
])
def test_nvidia_library_variants_need_cuda(emulator, family, variant, x):
    v = next(v for v in gpuprims.variants(family) if v.name == variant)
    assert v.backends == ("cuda",)
    run = {"reduce": gpuprims.reduce, "scan": gpuprims.scan, "transpose": gpuprims.transpose}[family]
    with pytest.raises(gpuprims.CudaError, match=f"'{variant}' is NVIDIA library code and needs the cuda "
                                                 f"backend; the active backend is 'emulator'") as info:
        run(x, variant=variant)
    assert info.value.status == "cudaErrorNotSupported"


def test_every_other_variant_runs_on_the_emulator():
    for family in ("reduce", "scan", "transpose"):
        for v in gpuprims.variants(family):
            library_code = v.title.split()[0] in ("CUB", "cuBLAS")  # NVIDIA's, not emulated
            assert ("emulator" in v.backends) == (not library_code), v


def test_device_arrays_belong_to_their_backend(emulator):
    d = gpuprims.to_device(np.arange(10, dtype=np.float32))
    assert d.backend == "emulator" and gpuprims.sum(d) == 45
    foreign = gpuprims.DeviceArray((10,), np.float32, _ptr=4096)  # GPU memory, never read
    with pytest.raises(ValueError, match="in cuda memory and the active backend is emulator"):
        gpuprims.sum(foreign)

    class FakeCupy:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (4096, False), "version": 3}

    with pytest.raises(TypeError, match="emulator backend cannot read GPU memory"):
        gpuprims.sum(FakeCupy())


def test_no_gpu_timings_from_the_emulator(emulator):
    d = gpuprims.to_device(np.ones(1000, np.float32))
    v = next(v for v in gpuprims.variants("reduce") if v.name == "single_pass")
    # no GPU: NoDeviceError; a GPU there but the emulator selected: ValueError
    error, says = (ValueError, "needs the cuda backend") if GPU_OK else (gpuprims.NoDeviceError,
                                                                        "needs a CUDA GPU")
    with pytest.raises(error, match=says):
        _core.time("reduce", v.index, d.ptr, None, (1000, 2, 2, 0), 1, 3, 0)
    with pytest.raises(error, match=says):
        _core.time_copy(1000, 1, 3, 0)


def test_device_info_says_emulator(emulator):
    info = gpuprims.device_info()
    assert info["backend"] == "emulator" and "emulator" in info["name"] and info["warp_size"] == 32


# ----------------------------------------------- what the emulator catches

def test_planted_race_gives_a_wrong_result(emulator, selftest):
    # Thread t stores s[t], then - with the barrier left out - reads s[t+1].
    want = np.array([(t + 1) % 64 + 1 for t in range(64)])
    fixed = selftest("race_fixed")[:64]
    np.testing.assert_array_equal(fixed, want)
    raced = selftest("race")[:64]
    # Each thread runs alone up to its next barrier, so thread t reads s[t+1]
    # before thread t+1 has stored it: the race shows in 63 of 64 results.
    assert (raced != want).sum() == 63, raced


def test_lockstep_warp_code_without_syncwarp_gives_a_wrong_sum(emulator, selftest):
    # The tutorials' last-warp unrolling relied on lock step; with __syncwarp()
    # between the reads and the writes (reduce.cuh) it is right.
    assert selftest("warp_synced")[0] == sum(range(1, 65))
    assert selftest("warp_lockstep")[0] != sum(range(1, 65))


def test_barrier_not_reached_by_every_thread_is_an_error_naming_the_kernel(emulator, selftest):
    with pytest.raises(gpuprims.CudaError, match=r"exit_before_barrier.*__syncthreads\(\) number 1 is not "
                                                 r"reached by every thread.*threads 10, 11") as info:
        selftest("exit_before_barrier", n=10)
    assert info.value.status == "cudaErrorLaunchFailure"
    selftest("exit_before_barrier", n=64)  # every thread reaches it: fine
    assert gpuprims.sum(np.ones(5, np.float32)) == 5  # and the backend still works


def test_launch_configuration_errors_like_a_gpu(emulator, selftest):
    with pytest.raises(gpuprims.CudaError, match="1024 threads per block") as info:
        selftest("too_many_threads")
    assert info.value.status == "cudaErrorInvalidConfiguration"
    with pytest.raises(gpuprims.CudaError, match="dynamic shared memory.*without an opt-in") as info:
        selftest("too_much_shared")
    assert info.value.status == "cudaErrorInvalidValue"


def test_dynamic_shared_memory_past_48_kib_needs_the_kernels_opt_in(emulator, selftest):
    np.testing.assert_array_equal(selftest("opted_in_shared")[:32], np.ones(32))  # 64 KiB after opting in to 64
    with pytest.raises(gpuprims.CudaError, match="98304 bytes of dynamic shared memory, over the 65536 bytes the "
                                                 "kernel opted in to") as info:
        selftest("over_opt_in_shared")
    assert info.value.status == "cudaErrorInvalidValue"
    with pytest.raises(gpuprims.CudaError) as info:  # past sm_90's 227 KiB
        selftest("opt_in_too_far")
    assert info.value.status == "cudaErrorInvalidValue"


def test_warp_collectives_exchange_the_right_values(emulator, selftest):
    out = selftest("warp").reshape(64, 8)
    t = np.arange(64)
    lane, base = t % 32, t - t % 32
    np.testing.assert_array_equal(out[:, 0], (base + 3) * 10)                                # shfl
    np.testing.assert_array_equal(out[:, 1], np.where(lane >= 1, t - 1, t) * 10)             # shfl_up
    np.testing.assert_array_equal(out[:, 2], np.where(lane + 2 < 32, t + 2, t) * 10)         # shfl_down
    np.testing.assert_array_equal(out[:, 3], (base + (lane ^ 5)) * 10)                       # shfl_xor
    ballot = [sum(1 << l for l in range(32) if (w * 32 + l) % 3 == 0) for w in (0, 1)]
    np.testing.assert_array_equal(out[:, 4], np.repeat(ballot, 32))                          # ballot
    np.testing.assert_array_equal(out[:, 5], np.repeat([0, 1], 32))                          # any(t == 40)
    np.testing.assert_array_equal(out[:, 6], np.repeat([1, 0], 32))                          # all(t < 40)
    np.testing.assert_array_equal(out[:, 7], np.where(lane % 16 + 16 < 16, 0, 3 * t))        # width 16


def test_emulated_kernels_really_run(emulator):
    # No fallback: a wrong-looking answer would come from the kernels; and
    # the emulator sees the kernels' launches (trace records them).
    t = gpuprims.trace("reduce", "interleaved", np.arange(1, 9, dtype=np.int64))
    assert t.result == 36 and t.steps and all("reduce_interleaved" in s.kernel for s in t.steps)


# ------------------------------------------------------------ explain mode

def test_trace_of_a_scan_shows_shared_memory_at_every_barrier():
    x = np.arange(1, 17, dtype=np.float32)
    before = gpuprims.backend()
    t = gpuprims.trace("scan", "hillis_steele", x)
    assert gpuprims.backend() == before
    np.testing.assert_array_equal(t.result, np.cumsum(x))
    shared = [s.regions["shared"].values[:16] for s in t.steps]
    np.testing.assert_array_equal(shared[0], x)  # after the load
    np.testing.assert_array_equal(shared[-1], np.cumsum(x))
    # Hillis-Steele: two barriers per step; after step k, element i holds the
    # sum of the 2^k elements ending at i.
    after_first_step = shared[2]
    np.testing.assert_array_equal(after_first_step, np.convolve(x, [1, 1])[:16])
    # thread 0 has no partner; the block is a whole warp (32 threads) and
    # thread 16 adds x[15] into its padding element, threads 17+ add zeros
    assert t.steps[2].active == tuple(range(1, 17))
    assert "barrier 0" in str(t) and "end of block" in str(t)


def test_trace_shows_neighbored_and_interleaved_differ():
    x = np.arange(1, 33, dtype=np.int32)
    nb = gpuprims.trace("reduce", "neighbored", x)
    il = gpuprims.trace("reduce", "interleaved", x)
    assert nb.result == il.result == x.sum()
    # the first tree step that changes data (interleaved first adds the
    # identity padding of its 512-thread block to itself)
    first = lambda t: next(s for s in t.steps if s.barrier >= 1 and s.active)  # noqa: E731
    assert first(nb).active[:4] == (0, 2, 4, 6)  # every other thread, scattered
    assert first(il).active[:4] == (0, 1, 2, 3)  # the first threads, packed


def test_trace_refuses_large_inputs():
    with pytest.raises(ValueError, match="at most 64 elements"):
        gpuprims.trace("reduce", "neighbored", np.ones(65, np.float32))


def test_trace_plot_needs_matplotlib_or_draws():
    t = gpuprims.trace("scan", "blelloch", np.arange(1, 9, dtype=np.int32))
    try:
        import matplotlib
    except ImportError:
        with pytest.raises(ImportError, match="needs matplotlib"):
            t.plot()
        return
    matplotlib.use("Agg")
    fig = t.plot()
    assert fig.axes


# ----------------------------------------------------- AddressSanitizer

ASAN_CHECK = textwrap.dedent("""
    import sys
    import numpy as np
    import gpuprims
    from gpuprims import _core
    gpuprims.set_backend("emulator")
    what = sys.argv[1]
    if what == "planted":
        import emu_selftest
        emu_selftest.runner(sys.argv[2])("out_of_bounds", n=64, elements=64)  # writes element 64
        print("NOT CAUGHT")
        sys.exit(0)
    rng = np.random.default_rng(1)
    for family, sizes in (("reduce", [1, 2, 31, 33, 255, 257, 1023, 1025, 4097, 8195]),
                          ("scan", [1, 2, 31, 33, 511, 513, 1025, 2047, 2049, 4097, 8193, 12289])):
        run = gpuprims.reduce if family == "reduce" else gpuprims.scan
        for v in gpuprims.variants(family):
            if v.where != "device" or "emulator" not in v.backends:
                continue
            for n in sizes:
                if v.max_n is not None and n > v.max_n:
                    continue
                for dtype in ("int32", "int64", "float32", "float64"):
                    x = gpuprims.to_device((rng.random(n) * 100).astype(dtype))
                    for op in ("sum", "min", "max"):
                        run(x, op, variant=v.name)
                    run(x, "sum", variant=v.name, dtype=np.float64)  # through the conversion kernel
    for v in gpuprims.variants("transpose"):
        if v.where != "device" or "emulator" not in v.backends:
            continue
        for shape in ((1, 1), (1, 7), (7, 1), (31, 33), (33, 31), (64, 64), (65, 17), (128, 8)):
            for dtype in ("int8", "float16", "float32", "float64"):
                gpuprims.transpose(gpuprims.to_device(np.ones(shape, dtype)), variant=v.name)
    print("CLEAN")
""")


def _asan_library():
    cxx = os.environ.get("CXX") or "c++"
    if shutil.which(cxx.split()[0]) is None:
        return None
    r = subprocess.run([*cxx.split(), "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = r.stdout.strip()
    return path if r.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


@pytest.fixture(scope="module")
def asan_build(tmp_path_factory):
    lib = _asan_library()
    if lib is None:
        pytest.skip("no AddressSanitizer runtime (libasan) for the C++ compiler here")
    out = tmp_path_factory.mktemp("asan")
    env = dict(os.environ, GPUPRIMS_EMU_ASAN="1", GPUPRIMS_NO_CUDA="1")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(out / "lib"),
                        "--build-temp", str(out / "tmp")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (out / "lib" / "gpuprims").mkdir(exist_ok=True)
    for f in (ROOT / "python" / "gpuprims").glob("*.py"):
        shutil.copy(f, out / "lib" / "gpuprims" / f.name)
    selftest_lib = emu_selftest.build(out, ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"])
    run_env = dict(os.environ, LD_PRELOAD=lib, ASAN_OPTIONS="detect_leaks=0",
                   PYTHONPATH=os.pathsep.join([str(out / "lib"), str(ROOT / "tests")]),
                   GPUPRIMS_BACKEND="emulator")
    return run_env, str(selftest_lib)


@pytest.mark.asan
def test_asan_reports_a_planted_out_of_bounds_write(asan_build):
    env, selftest_lib = asan_build
    r = subprocess.run([sys.executable, "-c", ASAN_CHECK, "planted", selftest_lib], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "NOT CAUGHT" not in r.stdout, r.stdout + r.stderr[-2000:]
    assert "AddressSanitizer: heap-buffer-overflow" in r.stderr and "WRITE of size 8" in r.stderr, r.stderr[-3000:]


@pytest.mark.asan
def test_asan_real_kernels_are_clean_at_edge_sizes(asan_build):
    r = subprocess.run([sys.executable, "-c", ASAN_CHECK, "kernels"], env=asan_build[0],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("CLEAN"), r.stdout[-2000:] + r.stderr[-4000:]
