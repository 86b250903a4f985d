"""The emulator's test-only kernels (emu/selftest.cu), built apart from
gpuprims._core - with emu/runtime.cpp and the kernels its runtime table
names (cuda/cast.cu, cuda/copy2d.cu), by the host C++ compiler - into a
library of their own, and called through ctypes."""
import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

import gpuprims

ROOT = Path(__file__).resolve().parents[1]
# the emulator runtime and the kernels its runtime table names: what a
# program over the emulator links (here, and conftest.run_emulator_program)
RUNTIME_SOURCES = ["emu/runtime.cpp", "cuda/cast.cu", "cuda/copy2d.cu"]
SOURCES = RUNTIME_SOURCES + ["emu/selftest.cu"]


def build(directory, extra_flags=()):
    """Compile the self-test library into `directory`; its path, or None
    where there is no C++ compiler."""
    cxx = (os.environ.get("CXX") or "c++").split()
    if shutil.which(cxx[0]) is None:
        return None
    lib = Path(directory) / "libgp_selftest.so"
    cmd = [*cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-DGP_EMULATOR", "-Iemu/include", "-Icuda",
           *extra_flags, "-x", "c++", *SOURCES, "-o", str(lib), "-lpthread"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the self-test kernels failed:\n{r.stderr[-3000:]}")
    return lib


def runner(lib):
    """run(name, n=64, elements=512) -> the int64 words the kernel left, or
    gpuprims.CudaError with .status, as a launch of the library would raise."""
    f = ctypes.CDLL(str(lib)).gp_emu_selftest_run
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p,
                  ctypes.c_size_t]

    def run(name, n=64, elements=64 * 8):
        out = np.empty(elements, np.int64)
        message = ctypes.create_string_buffer(2048)
        if f(name.encode(), out.ctypes.data, elements, n, message, len(message)) != 0:
            text = message.value.decode()
            err = gpuprims.CudaError(f"emu_selftest[{name}]: {text}")
            err.status = text.split(" ", 1)[0]
            raise err
        return out

    return run
