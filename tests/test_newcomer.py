"""From clone to first result, as a newcomer meets it: the build's modes and
its cache, the messages without a GPU (each naming the function called),
Ctrl-C in an emulated kernel, the main job's --json on the emulator, and the
README's tour run on the emulator.  No GPU needed."""
import ast
import ctypes
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpuprims

from conftest import GPU_OK, gpuless_cuda_backend

ROOT = Path(__file__).resolve().parents[1]
HAS_CUDA_BUILD = "cuda" in gpuprims.backends()


def _no_driver() -> bool:
    """No NVIDIA driver here: its library, libcuda.so.1, does not load."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


NO_DRIVER = _no_driver()


def child_env(**extra):
    """The environment of a child Python that imports this gpuprims."""
    path = os.pathsep.join([str(Path(gpuprims.__file__).parents[1]), str(ROOT / "tests")])
    return dict(os.environ, PYTHONPATH=path, **extra)


# ------------------------------------------------------------ the build

def load_setup():
    """setup.py as a module: its build plan, without building (setup()
    runs only as __main__)."""
    spec = importlib.util.spec_from_file_location("gpuprims_setup", ROOT / "setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_build_mode_and_object_keys(monkeypatch, tmp_path):
    setup = load_setup()
    monkeypatch.delenv("GPUPRIMS_CUDA", raising=False)
    monkeypatch.delenv("GPUPRIMS_EMU_ASAN", raising=False)
    monkeypatch.setenv("GPUPRIMS_NO_CUDA", "1")
    mode, home, why, emu_jobs = setup.plan()
    assert mode == "emulator" and home is None and why == "GPUPRIMS_NO_CUDA=1"
    assert {j.tool for j in emu_jobs} == {Path((os.environ.get("CXX") or "c++").split()[0]).name}
    assert "emu/runtime.cpp" in [j.src for j in emu_jobs]
    assert not any("cub" in Path(j.src).name for j in emu_jobs)  # the NVIDIA libraries: GPU build only
    monkeypatch.setenv("GPUPRIMS_CUDA", "1")
    with pytest.raises(SystemExit, match="contradict"):
        setup.plan()
    monkeypatch.delenv("GPUPRIMS_CUDA")

    # a toolkit found through CUDA_HOME first: a fake nvcc, its own objects
    fake = tmp_path / "cuda" / "bin" / "nvcc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'fake nvcc 0.1'\n")
    fake.chmod(0o755)
    monkeypatch.delenv("GPUPRIMS_NO_CUDA")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("GPUPRIMS_CUDA_ARCH", "90")
    mode, home, why, jobs90 = setup.plan()
    assert mode == "cuda" and home == tmp_path / "cuda" and "sm_90 compute_90 from GPUPRIMS_CUDA_ARCH=90" in why
    nvcc90 = {j.src: j.key for j in jobs90 if j.tool == "nvcc"}
    assert set(nvcc90) == set(setup.cu_sources()) and all(j.cmd[0] == str(fake) for j in jobs90 if j.tool == "nvcc")
    monkeypatch.setenv("GPUPRIMS_CUDA_ARCH", "80;90")
    jobs8090 = setup.plan()[3]
    nvcc8090 = {j.src: j.key for j in jobs8090 if j.tool == "nvcc"}
    # another architecture list: every nvcc object anew, the emulator's kept
    assert not set(nvcc90.values()) & set(nvcc8090.values())
    assert [j.key for j in jobs90 if j.tool != "nvcc"] == [j.key for j in jobs8090 if j.tool != "nvcc"]
    assert [j.key for j in jobs90 if j.tool != "nvcc"] == [j.key for j in emu_jobs]
    # a kernel's key covers the headers it includes
    deps = [p.relative_to(ROOT).as_posix() for p in setup.project_headers("cuda/reduce/01_neighbored.cu",
                                                                          (ROOT / "cuda",))]
    assert "cuda/common.cuh" in deps and "cuda/gpuprims.h" in deps
    assert "csrc/runtime.h" in [p.relative_to(ROOT).as_posix() for p in setup.project_headers(
        "emu/runtime.cpp", (ROOT / "emu" / "include", ROOT / "cuda"))]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the sources to build in, without any built module."""
    out = tmp_path_factory.mktemp("tree")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, out / name)
    for name in ("csrc", "cuda", "emu", "python"):
        shutil.copytree(ROOT / name, out / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return out


def build(tree, **env):
    e = dict(os.environ, **env)
    for name in ("GPUPRIMS_NO_CUDA", "GPUPRIMS_CUDA", "GPUPRIMS_EMU_ASAN"):
        if name not in env:
            e.pop(name, None)
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, env=e,
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stderr


def built_backends(tree):
    r = subprocess.run([sys.executable, "-c", "import gpuprims; print(gpuprims.backends()); "
                        "print(gpuprims._core.cuda_status())"],
                       env=dict(os.environ, PYTHONPATH=str(tree / "python")), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    backends, status = r.stdout.strip().splitlines()
    return ast.literal_eval(backends), ast.literal_eval(status)


def test_emulator_only_build_says_why_and_builds_the_emulator(tree):
    log = build(tree, GPUPRIMS_NO_CUDA="1")
    assert "building the emulator backend only: GPUPRIMS_NO_CUDA=1" in log
    steps = re.findall(r"\[(\d+)/(\d+)\] \S+ (\S+)", log)
    assert steps and {int(m) for _, m, _ in steps} == {len(steps)}  # one progress line per object
    assert built_backends(tree)[0] == ("emulator",)


def test_cuda_build_after_the_emulator_build_relinks_and_back(tree):
    """A change of mode in the same build directory gives the module of the
    new mode, both ways (the objects come from the cache that `pip install`
    filled; a cold nvcc build takes minutes)."""
    setup = load_setup()
    env = {k: v for k, v in os.environ.items() if k not in ("GPUPRIMS_NO_CUDA", "GPUPRIMS_EMU_ASAN")}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        if setup.build_mode()[0] != "cuda":
            pytest.skip("no nvcc here: the CUDA half of the mode switch cannot be built")
        missing = setup.missing(setup.plan()[3], setup.cache_dir(tree / "build"))
    finally:
        os.environ.clear()
        os.environ.update(old)
    cold = [j.src for j in missing if j.tool == "nvcc"]
    if cold and os.environ.get("GPUPRIMS_TEST_COLD_BUILD") != "1":
        pytest.skip(f"{len(cold)} nvcc objects are not in the build cache (a cold nvcc build takes minutes; "
                    f"`pip install .` fills the cache, GPUPRIMS_TEST_COLD_BUILD=1 builds them here)")
    build(tree, GPUPRIMS_NO_CUDA="1")
    assert built_backends(tree)[0] == ("emulator",)
    log = build(tree)
    assert "building the CUDA and emulator backends: nvcc found at" in log
    backends, (ok, why) = built_backends(tree)
    assert backends == ("cuda", "emulator")
    if NO_DRIVER:
        assert not ok and "no NVIDIA driver" in why and "insufficient" not in why
    log = build(tree, GPUPRIMS_NO_CUDA="1")
    assert " 0 compiled" in log  # every object from the cache
    assert built_backends(tree)[0] == ("emulator",)


# ------------------------------------------------------------ messages

@pytest.mark.skipif(not (HAS_CUDA_BUILD and NO_DRIVER), reason="needs a CUDA build on a machine without a driver")
def test_without_a_driver_the_messages_say_so():
    ok, why = gpuprims._core.cuda_status()
    assert not ok and why.startswith("no NVIDIA driver") and "insufficient" not in why
    with pytest.raises(gpuprims.NoDeviceError, match="no NVIDIA driver"):
        gpuprims.set_backend("cuda")


@pytest.mark.skipif(GPU_OK, reason="checks the no-GPU path; a GPU is visible here")
@pytest.mark.parametrize("call,name", [
    (lambda: gpuprims.benchmark("reduce", "auto"), "benchmark"),
    (lambda: gpuprims.compare("scan"), "compare"),
    (lambda: gpuprims.compare("transpose", shape=(64, 64)), "compare"),
    (lambda: gpuprims.profile("reduce", ["interleaved"]), "profile"),
])
def test_timing_helpers_without_gpu_name_the_function_and_fail_fast(call, name):
    backends = ["auto"] + (["gpuless cuda"] if HAS_CUDA_BUILD else [])
    for which in backends:
        before = gpuprims.backend()
        t0 = time.perf_counter()
        try:
            if which == "auto":
                gpuprims.set_backend("auto")
                with pytest.raises(gpuprims.NoDeviceError, match=rf"gpuprims\.{name}\b") as e:
                    call()
            else:
                with gpuless_cuda_backend(), pytest.raises(gpuprims.NoDeviceError,
                                                           match=rf"gpuprims\.{name}\b") as e:
                    call()
        finally:
            gpuprims.set_backend(before)
        assert time.perf_counter() - t0 < 1.0, "the check comes before any work"
        assert "copy" not in str(e.value), str(e.value)


def test_profile_is_nodeviceerror_before_ncu_is_looked_for(monkeypatch, tmp_path):
    if GPU_OK:
        pytest.skip("checks the no-GPU path; a GPU is visible here")
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu anywhere
    monkeypatch.setenv("GPUPRIMS_NCU", str(tmp_path / "nope"))
    with pytest.raises(gpuprims.NoDeviceError):
        gpuprims.profile("scan", ["blelloch"], n=1024)


def test_trace_errors_name_trace():
    with pytest.raises(TypeError, match=r"gpuprims\.trace: reduce does not support dtype complex64"):
        gpuprims.trace("reduce", "neighbored", np.ones(4, np.complex64))
    with pytest.raises(ValueError, match=r"gpuprims\.trace: reduce variant 'cpu' runs on the host"):
        gpuprims.trace("reduce", "cpu", np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"gpuprims\.trace: scan variant 'cub' is NVIDIA library code"):
        gpuprims.trace("scan", "cub", np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"gpuprims\.trace: transpose needs a 2-D array, got 1-D"):
        gpuprims.trace("transpose", "tiled", np.ones(4, np.float32))


def test_trace_counts_the_threads_it_shows():
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, size=16).astype(np.int32)
    t = gpuprims.trace("scan", "hillis_steele", x)
    assert t.result.tolist() == np.cumsum(x).tolist()
    for line, step in zip(str(t).splitlines()[1:], t.steps):
        name = t.main_region(step)
        if name is None:
            continue
        r = step.regions[name]
        m = re.search(r": (\d+) active threads \(([^)]*)\)", line)
        shown = {int(i) for i in re.findall(r"\d+", m.group(2))}
        assert shown <= {int(w) for w in r.writers if w >= 0}


def test_errors_name_the_function_called():
    with pytest.raises(TypeError, match=r"gpuprims\.cumsum"):
        gpuprims.cumsum(np.array(["a"]))
    with pytest.raises(TypeError, match=r"gpuprims\.cumsum"):
        gpuprims.cumsum(np.ones(4), dtype=np.bool_)
    with pytest.raises(TypeError, match=r"gpuprims\.reduce"):
        gpuprims.reduce(np.array(["a"]), "sum")
    with pytest.raises(TypeError, match=r"gpuprims\.max"):
        gpuprims.max(np.ones(4, np.complex64))
    with pytest.raises(ValueError, match=r"gpuprims\.min: zero-size array to reduction operation minimum"):
        gpuprims.min(np.empty(0))


def test_no_emulator_warning_for_help_or_the_cuda_backend():
    r = subprocess.run([sys.executable, "-W", "always", "-m", "gpuprims", "--help"], capture_output=True, text=True,
                       env=child_env())
    assert r.returncode == 0 and "usage:" in r.stdout and r.stderr == "", r.stderr
    if not GPU_OK:
        r = subprocess.run([sys.executable, "-W", "always", "-m", "gpuprims", "--backend", "cuda"],
                           capture_output=True, text=True, env=child_env())
        assert r.returncode == 2 and "EmulatorWarning" not in r.stderr
        assert r.stderr.startswith("No CUDA GPU visible"), r.stderr


def test_import_initializes_no_cuda():
    """import gpuprims leaves "auto" undecided, so that CUDA_VISIBLE_DEVICES
    set after the import still counts (a dask-cuda worker sets it after its
    spawned process re-imports the main module): hiding every GPU then
    leaves the emulator.  Where a GPU is usable, an import that started CUDA
    would have seen it and chosen "cuda"."""
    code = ("import os, gpuprims; os.environ['CUDA_VISIBLE_DEVICES'] = ''; "
            "print(gpuprims.backend()); print(gpuprims._core.auto_reason() is not None)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={k: v for k, v in child_env().items() if k != "GPUPRIMS_BACKEND"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["emulator", "True"], (r.stdout, r.stderr)
    if GPU_OK:  # the same child without hiding them takes the GPU
        r = subprocess.run([sys.executable, "-c", "import gpuprims; print(gpuprims.backend())"],
                           capture_output=True, text=True,
                           env={k: v for k, v in child_env().items() if k != "GPUPRIMS_BACKEND"})
        assert r.stdout.strip() == "cuda", (r.stdout, r.stderr)


# ------------------------------------------------------------ the emulator and the user's time

LONG_CALL = """
import sys, time
import numpy as np, gpuprims
gpuprims.set_backend("emulator")
x = np.random.default_rng(5).random(1 << 24, dtype=np.float32)
print("ready", flush=True)
t0 = time.perf_counter()
try:
    gpuprims.sum(x, variant="neighbored")  # about 10 s emulated on one core
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {time.perf_counter() - t0:.2f}", flush=True)
    y = x[: 1 << 16]
    print(repr(float(gpuprims.sum(y))), repr(float(gpuprims.cumsum(y)[-1])), flush=True)
    raise
"""


@pytest.mark.skipif(sys.platform != "linux", reason="signals as on Linux")
def test_ctrl_c_stops_an_emulated_kernel_and_the_library_still_works():
    # SIGINT as at a terminal (a job started in the background, as CI may
    # be, inherits it ignored, and Python then leaves it ignored)
    p = subprocess.Popen([sys.executable, "-c", LONG_CALL], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=child_env(),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # in the kernel, past the long-call notice
        p.send_signal(signal.SIGINT)
        t0 = time.perf_counter()
        out, err = p.communicate(timeout=30)
        waited = time.perf_counter() - t0
    finally:
        p.kill()
    assert waited < 2.0, (waited, out, err)
    lines = out.splitlines()
    assert lines[0].startswith("interrupted"), out + err
    assert p.returncode == -signal.SIGINT and "KeyboardInterrupt" in err
    # the calls after the interrupt are right
    x = np.random.default_rng(5).random(1 << 24, dtype=np.float32)[: 1 << 16]
    got_sum, got_last = (float(v) for v in lines[1].split())
    want = float(np.sum(x, dtype=np.float64))
    assert abs(got_sum - want) <= 1e-5 * np.abs(x).sum() and abs(got_last - want) <= 1e-5 * np.abs(x).sum()
    # it said, once, that the call would be long
    assert err.count("Ctrl-C stops it") == 1 and re.search(r"the emulator runs kernel reduce_neighbored.* about \d+ s",
                                                             err), err


def test_main_job_json_on_the_emulator(tmp_path):
    out, plot = tmp_path / "o.json", tmp_path / "p.png"
    r = subprocess.run([sys.executable, "-W", "always", "-m", "gpuprims", "--backend", "emulator", "--n", "2**10",
                        "--shape", "40x72", "--json", str(out), "--plot", str(plot)],
                       capture_output=True, text=True, env=child_env())
    assert r.returncode == 0, r.stderr
    assert "EmulatorWarning" not in r.stderr
    assert not plot.exists() and f"--plot: {plot} not written" in r.stderr and "no GPU times" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["backend"] == "emulator" and "not a GPU time" in doc["note"]
    assert [t["family"] for t in doc["tables"]] == ["reduce", "scan", "transpose"]
    assert doc["tables"][2]["shape"] == [40, 72] and doc["tables"][0]["shape"] == [1024]
    for t in doc["tables"]:
        names = [v.name for v in gpuprims.variants(t["family"])
                 if v.where == "device" and not (v.batched or v.segmented)]  # the 1-D journey
        assert [row["variant"] for row in t["rows"]] == names
        for row in t["rows"]:
            assert row.get("ok") is True or "skipped" in row, row
    assert f"wrote the emulated results to {out}" in r.stdout


# ------------------------------------------------------------ numerics a newcomer meets

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_max_of_signed_zeros_as_numpy(emulator, dtype):
    for pair in ([0.0, -0.0], [-0.0, 0.0]):
        x = np.array(pair, dtype=dtype)
        for v in gpuprims.variants("reduce"):
            if "emulator" not in v.backends:
                continue
            for ours, theirs in ((gpuprims.min, np.min), (gpuprims.max, np.max)):
                got = ours(x, variant=v.name)
                assert np.signbit(got) == np.signbit(theirs(x)), (v.name, pair, ours.__name__)
    rng = np.random.default_rng(11)
    x = np.zeros(3000, dtype)
    x[rng.random(x.size) < 0.5] *= -1
    for v in gpuprims.variants("scan"):
        if "emulator" not in v.backends or v.skip_reason(x.size, x.dtype):
            continue
        for op, ufunc in (("min", np.minimum), ("max", np.maximum)):
            got = gpuprims.scan(x, op, variant=v.name)
            assert np.array_equal(np.signbit(got), np.signbit(ufunc.accumulate(x))), (v.name, op)


def test_docstrings_name_dtypes_variants_and_errors():
    import pydoc
    text = pydoc.render_doc(gpuprims, renderer=pydoc.plaintext)
    assert "gpuprims - gpuprims" not in text
    assert len(gpuprims.__doc__.strip().splitlines()) <= 15
    for fn, family in ((gpuprims.sum, "reduce"), (gpuprims.min, "reduce"), (gpuprims.max, "reduce"),
                       (gpuprims.reduce, "reduce"), (gpuprims.scan, "scan"), (gpuprims.cumsum, "scan"),
                       (gpuprims.transpose, "transpose")):
        doc = " ".join(fn.__doc__.split())
        assert "Dtypes: " in doc and "Raises " in doc and "NoDeviceError" in doc, fn.__name__
        for v in gpuprims.variants(family):
            assert v.name in doc, (fn.__name__, v.name)
        for d in gpuprims._family.get(family).dtypes:
            assert d.name in doc
    for fn in (gpuprims.profile, gpuprims.trace):
        assert "Raises" in fn.__doc__ and "ValueError" in fn.__doc__


# ------------------------------------------------------------ the README's tour

def readme_tour():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## A short tour"):]
    return section[section.index("```python") + len("```python"): section.index("```\n", section.index("```python"))]


def test_readme_tour_on_the_emulator(emulator):
    """Every line of the tour, at sizes the emulator affords (2^14 elements
    for the README's 2^24), with what the comments promise checked."""
    code = readme_tour()
    assert "1 << 24" in code and "10**6" in code
    code = code.replace("1 << 24", "1 << 14").replace("10**6", "10**4")
    tree = ast.parse(code)
    values, ns = {}, {}
    for node in tree.body:
        src = ast.get_source_segment(code, node)
        if isinstance(node, ast.Expr):
            values[src] = eval(compile(ast.Expression(node.value), "<tour>", "eval"), ns)
        else:
            exec(compile(ast.Module([node], []), "<tour>", "exec"), ns)
    x, d, a = ns["x"], ns["d"], ns["a"]
    bound = 1e-5 * float(np.abs(x).sum())
    assert x.size == 1 << 14 and isinstance(d, gpuprims.DeviceArray) and d.shape == x.shape
    assert abs(float(values["gpuprims.sum(x)"]) - np.sum(x, dtype=np.float64)) <= bound
    assert values["gpuprims.sum(x)"].dtype == np.float32
    assert values["gpuprims.min(x), gpuprims.max(x)"] == (x.min(), x.max())
    i = values["gpuprims.sum(np.arange(10**4, dtype=np.int32))"]
    assert i == 10**4 * (10**4 - 1) // 2 and i.dtype == np.int64
    assert values["gpuprims.sum(x, dtype=np.float64)"].dtype == np.float64
    assert abs(float(values["gpuprims.sum(d)"]) - np.sum(x, dtype=np.float64)) <= bound
    assert abs(float(values['gpuprims.sum(d, variant="neighbored")']) - np.sum(x, dtype=np.float64)) <= bound
    c = values["gpuprims.cumsum(x)"]
    assert isinstance(c, np.ndarray) and np.allclose(c, np.cumsum(x, dtype=np.float64), atol=bound)
    s = values['gpuprims.scan(x, "max", inclusive=False)']
    assert s[0] == -np.inf and np.array_equal(s[1:], np.maximum.accumulate(x)[:-1])
    c = values['gpuprims.cumsum(x, variant="blelloch_multiblock")']
    assert np.allclose(c, np.cumsum(x, dtype=np.float64), atol=bound)
    assert np.array_equal(values["gpuprims.transpose(a)"], np.ascontiguousarray(a.T))
    t = values['gpuprims.transpose(gpuprims.to_device(a), variant="tiled_padded")']
    assert isinstance(t, gpuprims.DeviceArray) and np.array_equal(t.get(), a.T)
    assert values["gpuprims.device_info()"]["backend"] == "emulator"
    model = next(v for k, v in values.items() if k.startswith("gpuprims.occupancy_model("))
    assert model["resident_threads"] == 50_176
