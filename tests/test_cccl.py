"""The CCCL the CUB baselines are built against: setup.py's choice
(GPUPRIMS_CCCL, the nvidia-cuda-cccl wheel before the toolkit's), the object
cache keyed on it, device_info()["cccl"], and the baselines that need CCCL
3.5's determinism requirements (cub_deterministic, cub_reproducible): their
rows, their refusal where they cannot run, and on a GPU their guarantees."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import gpuprims
from gpuprims._backend import cccl_version

from conftest import NEEDS_CCCL_3_5, random_array

ROOT = Path(__file__).resolve().parent.parent
gpu = pytest.mark.gpu
ORIGIN = r"(nvidia-cuda-cccl \S+ wheel|CUDA toolkit \d+\.\d+|headers from GPUPRIMS_CCCL)"


def load_setup():
    spec = importlib.util.spec_from_file_location("gpuprims_setup_cccl", ROOT / "setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fake_cccl(folder, version):
    """A folder that looks like CCCL headers of CCCL_VERSION `version`."""
    h = Path(folder) / "cuda" / "std" / "__cccl" / "version.h"
    h.parent.mkdir(parents=True, exist_ok=True)
    h.write_text(f"#pragma once\n#define CCCL_VERSION {version}\n")
    return Path(folder)


# ------------------------------------------------------------ setup.py

def test_the_newest_cccl_is_chosen_and_can_be_overridden(tmp_path, monkeypatch):
    setup = load_setup()
    home = tmp_path / "cuda"
    fake_cccl(home / "include" / "cccl", 3000001)
    wheel = fake_cccl(tmp_path / "wheel" / "cccl", 3005000)
    monkeypatch.setattr(setup, "wheel_cccl", lambda: (wheel, "13.3.5.0.6"))
    auto = setup.Cccl(home, "auto")
    assert auto.include == wheel and auto.version == 3005000
    assert auto.flags == [f"-I{wheel}", "-DGP_CCCL_WHEEL=13.3.5.0.6"]
    assert str(auto) == "CCCL 3.5.0 (nvidia-cuda-cccl 13.3.5.0.6 wheel)"
    toolkit = setup.Cccl(home, "toolkit")
    assert toolkit.include is None and toolkit.flags == [] and str(toolkit) == "CCCL 3.0.1 (CUDA toolkit)"
    custom = setup.Cccl(home, str(fake_cccl(tmp_path / "mine", 3006002)))
    assert custom.version == 3006002 and custom.flags == [f"-I{tmp_path / 'mine'}", "-DGP_CCCL_CUSTOM=1"]
    with pytest.raises(SystemExit, match="no CCCL headers there"):
        setup.Cccl(home, str(tmp_path / "nothing"))
    # a wheel no newer than the toolkit's: the toolkit's, no second copy on the path
    monkeypatch.setattr(setup, "wheel_cccl", lambda: (fake_cccl(tmp_path / "old", 3000001), "13.0.85"))
    assert setup.Cccl(home, "auto").include is None
    assert setup.Cccl(home, "wheel").include == tmp_path / "old"  # asked for by name
    monkeypatch.setattr(setup, "wheel_cccl", lambda: (None, None))
    assert setup.Cccl(home, "auto").include is None
    with pytest.raises(SystemExit, match="pip install 'nvidia-cuda-cccl"):
        setup.Cccl(home, "wheel")


def test_only_the_cccl_sources_get_the_headers_and_their_keys_follow_the_version(tmp_path, monkeypatch):
    setup = load_setup()
    home = tmp_path / "cuda"
    fake_cccl(home / "include" / "cccl", 3000001)

    def keys(wheel_dir, version_text):
        wheel = fake_cccl(tmp_path / wheel_dir, 3005000)
        (wheel / setup.CCCL_VERSION_H).write_text(version_text)
        monkeypatch.setattr(setup, "wheel_cccl", lambda: (wheel, "13.3.5.0.6"))
        cccl = setup.Cccl(home, "auto")  # named: GPUPRIMS_CCCL in the environment must not choose
        jobs = setup.nvcc_jobs(setup.cu_sources(), tmp_path / "obj", "nvcc", ["-arch=sm_90"], cccl)
        return {j.src: (j.key, any(a.startswith("-I" + str(wheel)) for a in j.cmd)) for j in jobs}

    a = keys("a", "#define CCCL_VERSION 3005000\n")
    b = keys("b", "#define CCCL_VERSION 3005000\n")  # the same wheel elsewhere (pip's build isolation)
    c = keys("c", "#define CCCL_VERSION 3005001\n")  # another version
    with_headers = {src for src, (_, inc) in a.items() if inc}
    assert {"cuda/cccl.cu", "cuda/scan/06_cub.cu", "cuda/scan/06_cub_deterministic.cu", "cuda/reduce/10_cub.cu",
            "cuda/reduce/10_cub_reproducible.cu", "cuda/reduce/18_cub_segmented.cu"} <= with_headers
    assert "cuda/scan/05_decoupled_lookback.cu" not in with_headers
    assert {s: k for s, (k, _) in a.items()} == {s: k for s, (k, _) in b.items()}
    for src in a:
        assert (a[src][0] != c[src][0]) == (src in with_headers), src


# ------------------------------------------------------- device_info

def test_device_info_says_which_cccl():
    info = gpuprims.device_info()  # the emulator's where no GPU is
    if "cuda" not in gpuprims.backends():
        assert info["cccl"].startswith("none: built without CUDA") and cccl_version() is None
        return
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+), " + ORIGIN, info["cccl"])
    assert m, info["cccl"]
    major, minor, patch = map(int, m.groups()[:3])
    assert cccl_version() == major * 1000000 + minor * 1000 + patch and major >= 2


# ------------------------------------------------------ the new rows

@pytest.mark.parametrize("family,name", [("scan", "cub_deterministic"), ("reduce", "cub_reproducible")])
def test_the_determinism_baselines_are_cuda_only_baselines(family, name):
    v = next(v for v in gpuprims.variants(family) if v.name == name)
    assert v.is_baseline and not v.library and v.backends == ("cuda",) and v.title.startswith("CUB ")
    assert v.dtypes is None and v.max_n is None and name in NEEDS_CCCL_3_5
    assert "CCCL 3.5" in v.source


@gpu
@pytest.mark.parametrize("family,name", [("scan", "cub_deterministic"), ("reduce", "cub_reproducible")])
def test_an_older_cccl_refuses_saying_what_to_do(family, name):
    if (cccl_version() or 0) >= 3005000:
        pytest.skip(f"built against {gpuprims.device_info()['cccl']}, which has the requirement")
    run = gpuprims.cumsum if family == "scan" else gpuprims.sum
    x = random_array(1000, "float32")
    with pytest.raises(gpuprims.CudaError, match=r"needs CCCL 3\.5 or newer.*pip install 'nvidia-cuda-cccl") as e:
        run(gpuprims.to_device(x), variant=name)
    assert e.value.status == "cudaErrorNotSupported"


def need_new_cccl():
    if (cccl_version() or 0) < 3005000:
        pytest.skip(f"needs CCCL 3.5 or newer; this build has {gpuprims.device_info()['cccl']}")


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cub_reproducible_sums_the_same_bits_in_any_order(dtype):
    # gpu_to_gpu: CUB's reproducible accumulator gives the same bits whatever
    # the order of the additions, so a permutation of the input sums to the
    # same bits (and every run does).
    need_new_cccl()
    x = random_array(2**20 + 7, dtype, seed=5) * np.float64(1e3) ** np.arange(3).repeat(350000)[:2**20 + 7]
    x = x.astype(dtype)
    shuffled = np.random.default_rng(6).permutation(x)
    a = gpuprims.sum(gpuprims.to_device(x), variant="cub_reproducible")
    b = gpuprims.sum(gpuprims.to_device(shuffled), variant="cub_reproducible")
    assert a.tobytes() == b.tobytes()
    assert {gpuprims.sum(gpuprims.to_device(x), variant="cub_reproducible").tobytes() for _ in range(5)} == {
        a.tobytes()}
    ref = float(np.sum(x.astype(np.longdouble)))
    scale = float(np.sum(np.abs(x.astype(np.float64))))
    assert abs(float(a) - ref) <= 4 * np.finfo(dtype).eps * scale


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("inclusive", [True, False])
def test_cub_deterministic_scans_the_same_bits_every_run(dtype, inclusive):
    need_new_cccl()
    x = random_array(2**22 + 5, dtype, seed=8)
    d = gpuprims.to_device(x)
    runs = {gpuprims.scan(d, inclusive=inclusive, variant="cub_deterministic").get().tobytes() for _ in range(8)}
    assert len(runs) == 1
    got = np.frombuffer(runs.pop(), dtype=np.cumsum(x[:0]).dtype)
    ref = np.cumsum(x.astype(np.float64) if dtype != "int32" else x.astype(np.int64))
    if not inclusive:
        ref = np.concatenate([[0], ref[:-1]])
    if dtype == "int32":
        np.testing.assert_array_equal(got, ref)
    else:
        bound = np.cumsum(np.abs(x.astype(np.float64)))
        assert np.all(np.abs(got - ref) <= 64 * np.finfo(dtype).eps * np.maximum(bound, 1e-30))
    np.testing.assert_array_equal(d.get(), x)
