"""Device memory: DeviceArray, to_device, and how inputs are taken in.

A DeviceArray owns memory from the CUDA runtime's stream-ordered pool and
frees it when the object goes away.  Anything exposing
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, DeviceArray)
is used in place, with no copy; a NumPy input is made C-contiguous and handed
to the core as a buffer (the core stages it through the device).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _backend, _core


class DeviceArray:
    """An n-dimensional, C-contiguous array in GPU memory.

    Made by :func:`to_device` or returned by gpuprims operations on device
    input.  ``.get()`` copies it back to a NumPy array.  It exposes
    ``__cuda_array_interface__`` (version 3), so CuPy, PyTorch and Numba can
    use it without a copy (``cupy.asarray(d)``, ``torch.as_tensor(d, device="cuda")``).
    """

    __slots__ = ("_buf", "_ptr", "_owner", "_backend", "shape", "dtype")

    def __init__(self, shape, dtype, *, _buf=None, _ptr=None, _owner=None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        if _buf is None and _ptr is None:
            _buf = _core.alloc(self.nbytes)
        self._buf = _buf
        self._ptr = _buf.ptr if _buf is not None else int(_ptr)
        # whose memory: the emulator's is host memory; a foreign array's is the GPU's
        self._backend = (_buf.backend if _buf is not None
                         else _owner._backend if isinstance(_owner, DeviceArray) else "cuda")
        self._owner = _owner  # keeps a foreign array alive while viewed

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ptr(self) -> int:
        """The device address of element 0."""
        return self._ptr

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def get(self) -> np.ndarray:
        """Copy to a new NumPy array (waits for the GPU)."""
        out = np.empty(self.shape, dtype=self.dtype)
        if out.nbytes:
            _core.dtoh(out, self._ptr)
        return out

    @property
    def backend(self) -> str:
        """The backend whose memory holds the elements ("cuda" or "emulator")."""
        return self._backend

    @property
    def __cuda_array_interface__(self) -> dict:
        if self._backend != "cuda":  # host memory: no CUDA library may read it as device memory
            raise AttributeError("an emulator DeviceArray is not in GPU memory; use .get()")
        # Every gpuprims call has finished its work when it returns, so a
        # consumer needs no synchronization: stream None.
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self._ptr, False),
            "strides": None,
            "version": 3,
            "stream": None,
        }

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name})"


def to_device(x) -> DeviceArray:
    """Copy a NumPy array (any strides) to the GPU; a DeviceArray is returned
    as it is, and another device array is wrapped without a copy."""
    if isinstance(x, DeviceArray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return _wrap_foreign(x)
    a = np.ascontiguousarray(_host_array(x, "to_device"))
    d = DeviceArray(a.shape, a.dtype)
    if a.nbytes:
        _core.htod(d.ptr, a)
    return d


def _host_array(x, who: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple, np.generic)):
        return np.asarray(x)
    raise TypeError(
        f"gpuprims.{who} takes a NumPy array or a device array "
        f"(an object with __cuda_array_interface__), not {type(x).__name__}"
    )


def c_contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= s
    return tuple(reversed(strides))


def _foreign(x):
    """(shape, dtype, address, byte strides or None) of a foreign device
    array, after ordering our stream behind x's."""
    if _backend.current != "cuda":
        raise TypeError(
            f"the {_backend.current} backend cannot read GPU memory ({type(x).__name__}); pass a "
            f"NumPy array, or gpuprims.set_backend('cuda')"
        )
    cai = x.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise TypeError("masked device arrays are not supported")
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError as e:
        raise TypeError(f"unsupported device array typestr {cai['typestr']!r}") from e
    shape = tuple(int(s) for s in cai["shape"])
    stream = cai.get("stream")
    if stream is not None and stream != 0:
        _core.wait_stream(int(stream))
    strides = cai.get("strides")
    if strides is not None and (math.prod(shape) <= 1 or
                                tuple(strides) == c_contiguous_strides(shape, dtype.itemsize)):
        strides = None
    return shape, dtype, cai["data"][0] or 0, None if strides is None else tuple(int(s) for s in strides)


def _wrap_foreign(x) -> DeviceArray:
    """A DeviceArray viewing x's memory (no copy).  A non-contiguous x is
    gathered into a new contiguous array (through the host: correct, but
    slow; operations that read through strides take it with strided=True)."""
    shape, dtype, ptr, strides = _foreign(x)
    if strides is None:
        return DeviceArray(shape, dtype, _ptr=ptr, _owner=x)
    return to_device(_gather(ptr, shape, dtype, strides))


def _gather(ptr, shape, dtype, bst) -> np.ndarray:
    """A C-contiguous NumPy copy of device elements at ptr with the byte
    strides bst: the span they cover is copied to the host, viewed with the
    strides there and made contiguous."""
    item = dtype.itemsize
    lo = sum(st * (n - 1) for st, n in zip(bst, shape) if st < 0)
    hi = sum(st * (n - 1) for st, n in zip(bst, shape) if st > 0) + item
    span = np.empty(hi - lo, dtype=np.uint8)
    _core.dtoh(span, ptr + lo)
    return np.ascontiguousarray(np.ndarray(shape, dtype=dtype, buffer=span, offset=-lo, strides=bst))


class Operand:
    """An input taken in: its shape and dtype, and where its elements are -
    `host` (a C-contiguous NumPy array) or on the device: `device` (a
    C-contiguous DeviceArray), or, for a strided device input taken with
    strided=True, the address `ptr` of element (0, ..., 0) and `strides` in
    elements (negative allowed), read in place.  Holding it keeps the
    elements alive."""

    __slots__ = ("shape", "dtype", "host", "device", "on_device", "ptr", "strides", "_owner")

    def __init__(self, shape, dtype, host, device, *, ptr=None, strides=None, owner=None):
        self.shape, self.dtype, self.host, self.device = shape, dtype, host, device
        self.ptr = device.ptr if device is not None else ptr
        self.strides = strides  # None: C-contiguous
        self._owner = owner
        self.on_device = self.ptr is not None  # where the caller's data was: decides the output

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def contiguous(self) -> bool:
        return self.strides is None

    def element_strides(self) -> tuple:
        """The strides in elements, C-order ones for a contiguous operand."""
        if self.strides is not None:
            return self.strides
        return tuple(s // self.dtype.itemsize for s in c_contiguous_strides(self.shape, self.dtype.itemsize))

    def span(self) -> tuple:
        """(lowest, highest + 1) byte offsets from ptr that the elements cover."""
        item = self.dtype.itemsize
        if self.size == 0:
            return 0, 0
        st = self.element_strides()
        lo = sum(s * (n - 1) for s, n in zip(st, self.shape) if s < 0) * item
        hi = sum(s * (n - 1) for s, n in zip(st, self.shape) if s > 0) * item + item
        return lo, hi

    def to_host(self) -> np.ndarray:
        if self.host is None:
            if self.device is not None:
                self.host = self.device.get()
            else:
                self.host = _gather(self.ptr, self.shape, self.dtype,
                                    tuple(s * self.dtype.itemsize for s in self.strides))
        return self.host

    def to_device(self) -> DeviceArray:
        """The elements as a C-contiguous DeviceArray (a strided device
        input is gathered into a new one)."""
        if self.device is None:
            self.device = to_device(self.to_host())
            self.ptr, self.strides = self.device.ptr, None
        return self.device


def take(x: Any, who: str, dtypes, ndim=None, strided=False, allow_0d=False) -> Operand:
    """Validate an input before any CUDA work: a supported dtype, at least
    one dimension (exactly `ndim` if given).  Raises TypeError or ValueError
    saying what to pass.  strided=True: a non-contiguous device input is
    described by its address and strides instead of gathered (for kernels
    that read through strides).  allow_0d: a 0-d array is taken as it is."""
    if type(x) is DeviceArray:  # the common device case, kept short
        if x._backend != _backend.current:
            check_backend(x)
        if x.dtype not in dtypes or (not x.shape and not allow_0d) or ndim is not None:
            _check(x.dtype, len(x.shape), who, dtypes, ndim, allow_0d)
        return Operand(x.shape, x.dtype, None, x)
    if hasattr(x, "__cuda_array_interface__"):
        if not isinstance(x, DeviceArray):
            cai = x.__cuda_array_interface__
            _check(np.dtype(cai["typestr"]), len(cai["shape"]), who, dtypes, ndim, allow_0d)
            if strided:
                return _strided_operand(x)
        d = to_device(x)
        _check(d.dtype, d.ndim, who, dtypes, ndim, allow_0d)
        return Operand(d.shape, d.dtype, None, d)
    a = _host_array(x, who)
    _check(a.dtype, a.ndim, who, dtypes, ndim, allow_0d)
    a = np.ascontiguousarray(a)
    return Operand(a.shape, a.dtype, a, None)


def _strided_operand(x) -> Operand:
    """A foreign device array as an Operand read in place through its strides."""
    shape, dtype, ptr, strides = _foreign(x)
    if strides is None:
        return Operand(shape, dtype, None, DeviceArray(shape, dtype, _ptr=ptr, _owner=x))
    if any(st % dtype.itemsize for st in strides):  # not whole elements: gathered
        return Operand(shape, dtype, None, to_device(_gather(ptr, shape, dtype, strides)))
    return Operand(shape, dtype, None, None, ptr=ptr, owner=x,
                   strides=tuple(st // dtype.itemsize for st in strides))


def check_backend(x: DeviceArray) -> None:
    """ValueError unless x's memory belongs to the active backend."""
    if x._backend != _backend.current:
        raise ValueError(
            f"this DeviceArray is in {x._backend} memory and the active backend is "
            f"{_backend.current}; pass x.get() (a NumPy array) or switch back with "
            f"gpuprims.set_backend({x._backend!r})"
        )


def _check(dtype: np.dtype, ndim: int, who: str, dtypes, want_ndim=None, allow_0d=False) -> None:
    if dtype not in dtypes:
        names = ", ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(
            f"gpuprims.{who} does not support dtype {dtype}; supported: {names} "
            f"(convert first, e.g. x.astype(numpy.float64))"
        )
    if want_ndim is not None and ndim != want_ndim:
        raise ValueError(f"gpuprims.{who} needs a {want_ndim}-D array, got {ndim}-D")
    if ndim == 0 and not allow_0d:
        raise ValueError(
            f"gpuprims.{who} needs an array with at least one dimension, got a 0-d array "
            f"(use x.reshape(1))"
        )
