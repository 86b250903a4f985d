"""Which backend runs the kernels: the GPU ("cuda") or the emulator.

The emulator runs the very same kernel sources on the CPU (threads of a
block as fibers that switch at barriers and warp collectives): for CI,
laptops and teaching without an NVIDIA GPU.  Its results are real kernel
results; its times are CPU times and are never reported as GPU times.

Chosen at import from GPUPRIMS_BACKEND ("cuda", "emulator" or "auto", the
default) and changed with set_backend().  "auto" is the GPU when one is
visible, else the emulator, with a one-time warning.
"""
from __future__ import annotations

import os
import warnings

from . import _core

BACKENDS = ("cuda", "emulator", "auto")
current = _core.backend()  # the active backend's name, kept in step with the core
_warned = False


class EmulatorWarning(UserWarning):
    """gpuprims runs its kernels on the CPU emulator (no usable GPU)."""


def _auto() -> str:
    global _warned
    ok, why = _core.cuda_status()
    if ok:
        return "cuda"
    if not _warned:
        _warned = True
        warnings.warn(f"gpuprims: no CUDA GPU ({why}); the kernels run on the emulator backend "
                      f"(CPU): correct results, no GPU timings", EmulatorWarning, stacklevel=3)
    return "emulator"


def set_backend(name: str) -> None:
    """Run the kernels on "cuda" (the GPU), "emulator" (the CPU) or "auto"
    (the GPU if one is visible, else the emulator).  "cuda" raises
    NoDeviceError where no GPU is visible or the package was built without
    CUDA.  Device arrays belong to the backend that made them."""
    global current
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
    if name == "auto" and _auto() == "cuda":
        # a GPU is visible: the device is set up by the first GPU call, not here
        # (import gpuprims stays cheap)
        _core.set_backend_unchecked("cuda")
    else:
        _core.set_backend(_auto() if name == "auto" else name)
    current = _core.backend()


def backend() -> str:
    """The active backend: "cuda" or "emulator"."""
    return current


def backends() -> tuple:
    """The backends this build has ("cuda" only where nvcc was at build time)."""
    return _core.backends()


def _from_environment() -> None:
    global current
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
        current = _core.backend()
        return
    set_backend(name)


_from_environment()
