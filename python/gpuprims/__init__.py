"""gpuprims - GPU parallel primitives as teaching journeys.

Reduction, prefix scan and transpose as families of variants, from the
textbook's naive kernel to ones that match NVIDIA's CUB and cuBLAS, every
one callable by name, timed (benchmark, compare), explained (occupancy,
profile):

    >>> import numpy as np, gpuprims
    >>> x = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    >>> gpuprims.sum(x)                         # the fastest variant
    >>> gpuprims.sum(x, variant="interleaved")  # one step of the journey
    >>> [v.name for v in gpuprims.variants("reduce")]
    >>> print(gpuprims.compare("reduce", n=1 << 24))  # the journey, timed
"""
try:
    from . import _core
except ImportError as e:  # pragma: no cover - a broken install
    raise ImportError(
        "gpuprims' compiled core (gpuprims._core) is missing or does not load: "
        f"{e}. Reinstall with `pip install .` from the source tree."
    ) from e

from ._backend import EmulatorWarning, backend, backends, set_backend
from ._arrays import DeviceArray, from_dlpack, to_device
# the family modules register their Family first: everything below iterates over them
from ._reduce import max, min, reduce, sum
from ._scan import cumsum, scan
from ._transpose import TransposePlan, compare_permutations, transpose, transpose_plan
from ._bench import Result, benchmark, compare
from ._table import Table
from ._occupancy import occupancy, occupancy_model
from ._profile import ProfilerError, profile
from ._errors import CudaError, NoDeviceError
from ._registry import Variant, variants
from ._trace import trace

__version__ = "0.1.0"


def device_info() -> dict:
    """Properties of the current GPU (name, multiprocessors, memory, L2 ...)
    - or of the emulator, when it is the active backend ("backend" says
    which).  Raises NoDeviceError where the cuda backend has no GPU."""
    return _core.device_info()


def gpu_available() -> bool:
    """True if a CUDA GPU is visible (never raises)."""
    return bool(_core.cuda_status()[0])


__all__ = [
    "CudaError",
    "DeviceArray",
    "EmulatorWarning",
    "NoDeviceError",
    "ProfilerError",
    "Result",
    "Table",
    "Variant",
    "benchmark",
    "compare",
    "compare_permutations",
    "backend",
    "backends",
    "device_info",
    "from_dlpack",
    "gpu_available",
    "cumsum",
    "max",
    "min",
    "occupancy",
    "occupancy_model",
    "profile",
    "reduce",
    "scan",
    "set_backend",
    "sum",
    "to_device",
    "trace",
    "transpose",
    "transpose_plan",
    "TransposePlan",
    "variants",
]
