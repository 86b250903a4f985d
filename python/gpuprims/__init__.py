"""GPU parallel primitives - reduction, prefix scan, transpose - as
journeys of CUDA kernels to call, check against NumPy and time.

    import numpy as np, gpuprims
    x = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    gpuprims.sum(x)                          # the fastest variant
    gpuprims.sum(x, variant="interleaved")   # one step of the journey
    [v.name for v in gpuprims.variants("reduce")]
    print(gpuprims.compare("reduce", n=1 << 24))   # the journey, timed on the GPU

Without a GPU the kernels run on the emulator backend (the CPU), with a
warning at the first one.  README.md tells the rest.
"""
try:
    from . import _core
except ImportError as e:  # pragma: no cover - a broken install
    raise ImportError(
        "gpuprims' compiled core (gpuprims._core) is missing or does not load: "
        f"{e}. Reinstall with `pip install .` from the source tree."
    ) from e

from . import _backend
from ._backend import EmulatorWarning, backend, backends, set_backend
from ._arrays import DeviceArray, from_dlpack, to_device
from ._arrays import device_memory_limit, empty_pinned, free_memory, is_pinned, set_device_memory_limit, set_pinned_limit
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


def _document(fn, family: str, raises: str) -> None:
    """Append to fn's docstring what the registry says (the dtypes, the
    variants in journey order and their limits) and the errors it raises:
    generated, so that it never drifts from the registry."""
    from ._family import get

    fam = get(family)
    auto = fam.auto.name
    rows = []
    for v in variants(family):
        note = [f"n <= {v.max_n}"] if v.max_n is not None else []
        note += ["cuda backend only"] if "emulator" not in v.backends else []
        note += ["host code"] if v.where == "host" else []
        rows.append(v.name + (f" ({', '.join(note)})" if note else ""))
    text = "\n\n".join([
        _wrap(f"Dtypes: {', '.join(d.name for d in fam.dtypes)}."),
        _wrap(f"Variants (gpuprims.variants({family!r}), in journey order; \"auto\" is {auto}):")
        + "\n" + _wrap(", ".join(rows), "        "),
        _wrap("Raises " + raises)])
    fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n\n" + text + "\n"


def _wrap(text: str, indent: str = "    ") -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, 76, initial_indent=indent, subsequent_indent=indent))


_COMMON = ("gpuprims.CudaError when CUDA fails, gpuprims.NoDeviceError on the cuda backend with no GPU "
           "visible; TypeError for an object that is neither a NumPy nor a device array")
for _fn, _family_name, _raises in (
        (reduce, "reduce", "ValueError for an unknown op or variant, a size over the variant's limit, a 0-d array, "
                           "min/max of an empty array; TypeError for a dtype not listed"),
        (sum, "reduce", "ValueError for an unknown variant, a size over its limit, a 0-d array; TypeError for a "
                        "dtype not listed"),
        (min, "reduce", "ValueError for an unknown variant, a size over its limit, a 0-d or empty array; "
                        "TypeError for a dtype not listed"),
        (max, "reduce", "ValueError for an unknown variant, a size over its limit, a 0-d or empty array; "
                        "TypeError for a dtype not listed"),
        (scan, "scan", "ValueError for an unknown op or variant, a size over the variant's limit, a 0-d array; "
                       "TypeError for a dtype not listed"),
        (cumsum, "scan", "ValueError for an unknown variant, a size over its limit, a 0-d array; TypeError for a "
                         "dtype not listed"),
        (transpose, "transpose", "ValueError for an array that is not 2-D, an unknown variant or a size over "
                                 "its limit; TypeError for a dtype not listed")):
    _document(_fn, _family_name, _raises + "; " + _COMMON + ".")
del _fn, _family_name, _raises


def device_info() -> dict:
    """Properties of the current GPU (name, compute_capability,
    multiprocessors, total_memory, l2_cache_bytes, driver and runtime
    versions ...) - or of the emulator, when it is the active backend
    ("backend" says which; the emulator is not a GPU and its numbers say
    nothing about one), and "cccl": the CCCL the CUB baselines were built
    against ("3.5.0, nvidia-cuda-cccl 13.3.5.0.6 wheel").  Raises
    NoDeviceError where the cuda backend has no GPU."""
    info = _core.device_info()
    info["cccl"] = _backend.cccl()
    return info


def __getattr__(name):
    """gpuprims.dask, imported at its first use: `import gpuprims` does not
    import Dask (an optional extra)."""
    if name == "dask":
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'gpuprims' has no attribute {name!r}")


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
    # the host pipeline's memory
    "device_memory_limit",
    "empty_pinned",
    "free_memory",
    "is_pinned",
    "set_device_memory_limit",
    "set_pinned_limit",
]
