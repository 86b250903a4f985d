"""Which backend runs the kernels: the GPU ("cuda") or the emulator.

The emulator runs the very same kernel sources on the CPU (threads of a
block as fibers that switch at barriers and warp collectives): for CI,
laptops and teaching without an NVIDIA GPU.  Its results are real kernel
results; its times are CPU times and are never reported as GPU times.

Chosen at import from GPUPRIMS_BACKEND ("cuda", "emulator" or "auto", the
default) and changed with set_backend().  "auto" is the GPU when one is
visible, else the emulator; the first kernel that then runs on the emulator
warns, once (EmulatorWarning) - not the import, which stays quiet.  At
import "auto" touches no CUDA: the core decides it at the backend's first
use (a dask-cuda worker sets CUDA_VISIBLE_DEVICES after its imports, and
CUDA reads it once, when it starts).

The active backend is `_backend.current` (asked of the core each time).
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

from . import _core

BACKENDS = ("cuda", "emulator", "auto")
_warned = False  # the EmulatorWarning has been given
_quiet = 0  # > 0: the caller says itself that it emulates (the CLI, trace)


class EmulatorWarning(UserWarning):
    """gpuprims runs its kernels on the CPU emulator (no usable GPU)."""


def __getattr__(name):
    """`current`: the active backend's name, from the core (where "auto" is
    decided at this first use)."""
    if name == "current":
        return _core.backend()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _first_emulated_launch() -> bool:
    """Called by the core when an emulated kernel is about to run, until it
    answers True: warns once where "auto" chose the emulator for want of a
    GPU, pointing at the caller's line."""
    global _warned
    if _warned:
        return True
    why = _core.auto_reason()
    if why is None or _quiet or _core.backend() != "emulator":
        return False
    _warned = True
    warnings.warn(f"gpuprims: no CUDA GPU ({why}); the kernels run on the emulator backend "
                  f"(the CPU): correct results, no GPU timings, and slow for large inputs "
                  f"(gpuprims.set_backend('emulator') says you mean it and silences this)",
                  EmulatorWarning, stacklevel=_caller_level())
    return True


def _caller_level() -> int:
    """warnings.warn's stacklevel of the first frame outside gpuprims."""
    here = os.path.dirname(os.path.abspath(__file__))
    level, frame = 2, sys._getframe(2)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


@contextlib.contextmanager
def emulating():
    """Run on the emulator within the block, without the EmulatorWarning
    (the caller says it emulates); the backend comes back after."""
    global _quiet
    before = _core.backend()
    _core.set_backend("emulator")
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1
        _core.set_backend_unchecked(before)  # as it was, GPU or not


def set_backend(name: str) -> None:
    """Run the kernels on "cuda" (the GPU), "emulator" (the CPU) or "auto"
    (the GPU if one is visible, else the emulator, which warns at its first
    kernel).  Raises NoDeviceError for "cuda" where no GPU is visible or
    the package was built without CUDA, ValueError for another name.
    Device arrays belong to the backend that made them."""
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
    if name == "auto":
        # decided at the backend's first use: the GPU if one is usable, else the
        # emulator, which then warns at its first kernel (the device itself is
        # set up by the first GPU call, not here: import gpuprims stays cheap)
        _core.set_backend_auto()
    else:
        _core.set_backend(name)


def backend() -> str:
    """The active backend: "cuda" or "emulator"."""
    return _core.backend()


def backends() -> tuple:
    """The backends this build has: ("cuda", "emulator") where nvcc was
    found at build time, else ("emulator",)."""
    return _core.backends()


def cccl() -> str:
    """Which CCCL the CUB baselines were compiled against: "3.5.0,
    nvidia-cuda-cccl 13.3.5.0.6 wheel", "3.0.1, CUDA toolkit 13.0" (setup.py
    chooses; GPUPRIMS_CCCL at build time), or why there is none."""
    built = _core.cccl()
    return built[0] if built is not None else "none: built without CUDA (no CUB baselines)"


def cccl_version() -> int | None:
    """CCCL_VERSION of the CUB baselines (3005000 for 3.5.0), or None."""
    built = _core.cccl()
    return built[1] if built is not None else None


def require_gpu(who: str) -> None:
    """Before any work of gpuprims.<who> that measures the GPU itself
    (timings, profiles): NoDeviceError where no GPU is usable, ValueError
    where one is and the emulator is selected - both naming gpuprims.<who>."""
    if _core.backend() == "emulator":
        ok, why = _core.cuda_status()
        if not ok:
            raise _core.NoDeviceError(
                f"gpuprims.{who} measures a CUDA GPU and none is usable here ({why}); the emulator runs "
                f"the kernels on the CPU, whose times say nothing about a GPU (python -m gpuprims shows "
                f"the emulated results)")
        raise ValueError(f"gpuprims.{who} measures the GPU and the emulator backend is selected: "
                         f"gpuprims.set_backend('cuda') first")
    try:
        _core.device_info()  # sets the device up, or says why not
    except _core.NoDeviceError as e:
        raise _core.NoDeviceError(f"gpuprims.{who}: {e}") from None


def _from_environment() -> None:
    name = os.environ.get("GPUPRIMS_BACKEND", "auto").strip().lower() or "auto"
    if name not in BACKENDS:
        raise ValueError(f"GPUPRIMS_BACKEND={name!r}: choose one of {', '.join(BACKENDS)}")
    if name == "cuda":
        try:
            set_backend("cuda")
        except _core.NoDeviceError:
            if "cuda" in _core.backends():
                _core.set_backend_unchecked("cuda")  # every GPU call says why
            else:
                raise
        return
    set_backend(name)


_from_environment()
