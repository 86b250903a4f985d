"""The error types of gpuprims.

CudaError and NoDeviceError are created by the compiled core (its module
state owns them) and re-exported here, so that `except gpuprims.CudaError`
catches what the extension raises.
"""
from ._core import CudaError, NoDeviceError

__all__ = ["CudaError", "NoDeviceError"]
