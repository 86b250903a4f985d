"""The build backend (pyproject.toml's build-backend): setuptools', plus the
CCCL headers of the nvidia-cuda-cccl wheel as a build requirement wherever
the build compiles the CUDA backend (nvcc found, GPUPRIMS_CCCL not
"toolkit" nor a folder), so that the CUB baselines are compiled against the
newest CCCL rather than the toolkit's own (setup.py, Cccl).  An emulator-only
build needs nothing more than setuptools.

pip asks for these requirements only with build isolation (its default);
with --no-build-isolation the wheel is used where it is installed, and the
toolkit's CCCL where it is not."""
import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (build_editable, build_sdist, build_wheel, get_requires_for_build_sdist,
                                   prepare_metadata_for_build_editable, prepare_metadata_for_build_wheel)

# The PEP 517 hooks: setuptools' own, but for the two that say what to install.
__all__ = ["build_editable", "build_sdist", "build_wheel", "get_requires_for_build_editable",
           "get_requires_for_build_sdist", "get_requires_for_build_wheel", "prepare_metadata_for_build_editable",
           "prepare_metadata_for_build_wheel"]


def _cccl_requires():
    from setup import CCCL_REQUIREMENT, build_mode
    if os.environ.get("GPUPRIMS_CCCL", "auto").strip() not in ("", "auto", "wheel"):
        return []
    return [CCCL_REQUIREMENT] if build_mode()[0] == "cuda" else []


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _cccl_requires()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _cccl_requires()
