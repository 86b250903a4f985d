"""Device memory: DeviceArray, to_device, from_dlpack, and how inputs are
taken in.

A DeviceArray owns memory from the CUDA runtime's stream-ordered pool and
frees it when the object goes away.  Anything exposing
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, DeviceArray)
is used in place, with no copy, and so is an object that speaks only DLPack
(``__dlpack__``, e.g. a JAX array) when its memory is the GPU's; a NumPy
input is made C-contiguous and handed to the core as a buffer (the core
stages it through the device).

What is taken in:
- dtypes: the numeric ones the operations take (DEVICE_DTYPES: bool,
  int8..int64, uint8..uint64, float16/32/64, complex64/128, either byte
  order); object, strings, void/structured, datetime/timedelta are refused
  with TypeError, by to_device as by every operation;
- ndarray subclasses: numpy.matrix and numpy.memmap are read as the plain
  arrays they hold (results are plain ndarrays, as numpy.asarray(x) would
  give); every other subclass (numpy.ma.MaskedArray, unit-carrying arrays
  ...) is refused with TypeError, since its mask or meaning would be lost:
  pass numpy.asarray(x) (or x.filled(...) for a masked array) to use its
  elements as they are.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from . import _backend, _core

# The dtypes a DeviceArray holds and to_device takes: the operations' numeric
# dtypes, in either byte order.
_NUMERIC = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
            np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)
DEVICE_DTYPES = frozenset(d for t in _NUMERIC for d in (np.dtype(t), np.dtype(t).newbyteorder()))


def check_device_dtype(dtype: np.dtype, who: str) -> None:
    """TypeError unless device memory may hold elements of `dtype`."""
    if dtype not in DEVICE_DTYPES:
        names = ", ".join(np.dtype(t).name for t in _NUMERIC)
        raise TypeError(f"gpuprims.{who} does not take dtype {dtype}; it takes what the operations "
                        f"take: {names} (either byte order)")


class DeviceArray:
    """An n-dimensional, C-contiguous array in GPU memory (or, on the
    emulator backend, in the emulator's host memory).

    Made by :func:`to_device` or :func:`from_dlpack`, or returned by
    gpuprims operations on device input.  ``.get()`` copies it back to a
    NumPy array, whichever backend is active.  There is no implicit
    conversion: ``numpy.asarray(d)`` raises TypeError (as CuPy does), so
    that no copy from the device happens unseen; call ``.get()``.

    Exchange without a copy: ``__cuda_array_interface__`` (version 3, CUDA
    memory only), so CuPy, PyTorch and Numba can use it
    (``cupy.asarray(d)``, ``torch.as_tensor(d, device="cuda")``), and DLPack
    (``__dlpack__``, ``__dlpack_device__``): ``cupy.from_dlpack(d)``,
    ``torch.from_dlpack(d)``; an emulator array is host memory, so
    ``numpy.from_dlpack(d)`` views it.

    Its memory belongs to the backend that made it (``.backend``): the
    operations refuse a DeviceArray of the other backend with ValueError,
    and ``to_device(d)`` copies it into the active backend's memory.
    """

    __slots__ = ("_buf", "_ptr", "_owner", "_backend", "_readonly", "shape", "dtype", "__weakref__")

    def __init__(self, shape, dtype, *, _buf=None, _ptr=None, _owner=None, _backend=None,
                 _readonly=False, _synced=True):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        if self.dtype not in DEVICE_DTYPES:  # an object array's pointers must never reach device memory
            check_device_dtype(self.dtype, "DeviceArray")
        if _buf is None and _ptr is None:
            # _synced=False: a result a core call fills at once, in stream
            # order, waiting for the stream before it returns (_core.alloc)
            _buf = _core.alloc(self.nbytes, _synced)
        self._buf = _buf
        self._ptr = _buf.ptr if _buf is not None else int(_ptr)
        # whose memory: the emulator's is host memory; a foreign array's is the GPU's
        self._backend = (_buf.backend if _buf is not None else _backend if _backend is not None
                         else _owner._backend if isinstance(_owner, DeviceArray) else "cuda")
        self._owner = _owner  # keeps a foreign array alive while viewed
        self._readonly = bool(_readonly)  # a view of memory its producer marked read-only (DLPack)

    @classmethod
    def _result(cls, n: int, dtype: np.dtype, shape: tuple | None = None) -> "DeviceArray":
        """A new array of n elements of `dtype`, 1-D or of `shape` (of n
        elements), for a hot path whose parsing already checked them (a
        device dtype, ints): __init__'s work less its conversions and
        checks.  The core call that fills it waits for the stream before it
        returns (_core.alloc, synced=False)."""
        self = cls.__new__(cls)
        self.shape = (n,) if shape is None else shape
        self.dtype = dtype
        self._buf = buf = _core.alloc(n * dtype.itemsize, False)
        self._ptr = buf.ptr
        self._backend = buf.backend
        self._owner = None
        self._readonly = False
        return self

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

    def get(self, out=None) -> np.ndarray:
        """Copy to a new NumPy array (waits for the GPU), or into `out`: a
        writable C-contiguous NumPy array of this shape and dtype, returned
        (a page-locked one, gpuprims.empty_pinned, is written at the bus's
        speed).  Works whichever backend is active: the copy is made by the
        backend whose memory it is."""
        if out is None:
            out = np.empty(self.shape, dtype=self.dtype)
        elif type(out) is not np.ndarray:
            raise TypeError(f"DeviceArray.get: out must be a numpy.ndarray, not {type(out).__name__}")
        elif out.shape != self.shape or out.dtype != self.dtype:
            raise ValueError(f"DeviceArray.get: out has shape {out.shape} and dtype {out.dtype}; "
                             f"this array's are {self.shape} and {self.dtype}")
        elif not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("DeviceArray.get: out must be C-contiguous and writable")
        if out.nbytes:
            _core.dtoh(out, self._ptr, self._backend)
        return out

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion of a gpuprims.DeviceArray to a NumPy array is not "
                        "allowed. Please use `.get()` to construct a NumPy array explicitly.")

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
            "data": (self._ptr, self._readonly),
            "strides": None,
            "version": 3,
            "stream": None,
        }

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name})"

    # -- DLPack (the Python array API standard's data interchange)
    def __dlpack_device__(self) -> tuple:
        """(device type, device id): (kDLCUDA = 2, the current device) for
        CUDA memory, (kDLCPU = 1, 0) for the emulator's host memory."""
        return _core.dlpack_device(self._backend)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array for a consumer's from_dlpack: a
        "dltensor_versioned" capsule (DLPack 1.0) when max_version >= (1, 0),
        else a "dltensor" one.  The capsule keeps the array alive until the
        consumer calls the tensor's deleter.

        stream: the consumer's CUDA stream (None, -1, 1 = legacy default,
        2 = per-thread default, or a handle; 0 is ambiguous and refused).
        Every gpuprims call has finished its work on the device before it
        returns, so the elements are final and nothing needs ordering on the
        consumer's stream.  Host memory (kDLCPU) takes stream=None only.
        dl_device: export to that device; (kDLCPU, 0) for a CUDA array is a
        host copy (refused with copy=False).  copy=True: a copy on the same
        device.  BufferError for what DLPack cannot carry (non-native byte
        order; a read-only array without max_version >= (1, 0))."""
        device = self.__dlpack_device__()
        target = device if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
        if stream is not None:
            if isinstance(stream, bool) or not isinstance(stream, int):
                raise TypeError(f"__dlpack__: stream must be None or an int, not {type(stream).__name__}")
            if target[0] == _DL_CPU:
                raise ValueError("__dlpack__: host memory (kDLCPU) takes stream=None only")
            if stream == 0 or stream < -1:
                raise ValueError(f"__dlpack__: stream={stream} is not a CUDA stream the DLPack protocol "
                                 f"allows (None, -1, 1, 2 or a stream handle; 0 is ambiguous)")
        versioned = max_version is not None and int(max_version[0]) >= 1
        if not self.dtype.isnative:
            raise BufferError(f"__dlpack__: DLPack has no byte order; {self.dtype} is not native "
                              f"(convert: x.get().astype(x.dtype.newbyteorder('='))")
        code, bits = _DL_CODES[self.dtype.kind], self.dtype.itemsize * 8
        owner, ptr, flags = self, self._ptr, _DL_READ_ONLY if self._readonly else 0
        if target != device:
            if not (target[0] == _DL_CPU and device[0] != _DL_CPU):
                raise BufferError(f"__dlpack__: cannot export a DeviceArray on DLPack device {device} "
                                  f"to {target}")
            if copy is False:
                raise BufferError("__dlpack__: exporting to the CPU needs a copy, and copy=False")
            owner = self.get()  # a host copy: the capsule owns it
            ptr, flags = owner.__array_interface__["data"][0], _DL_IS_COPIED
        elif copy:
            if self._backend != _backend.current:
                raise BufferError(f"__dlpack__: copy=True of {self._backend} memory needs the "
                                  f"{self._backend} backend active")
            owner = DeviceArray(self.shape, self.dtype)
            if self.nbytes:
                _core.dtod(owner.ptr, self._ptr, self.nbytes)
            ptr, flags = owner.ptr, _DL_IS_COPIED
        if flags & _DL_READ_ONLY and not versioned:
            raise BufferError("__dlpack__: a read-only array can only be exported as DLPack 1.0 "
                              "(max_version=(1, 0)), which says it is read-only")
        return _core.dlpack_export(owner, ptr, self.shape, code, bits, *target, versioned, flags)


def to_device(x) -> DeviceArray:
    """Copy a NumPy array (any strides) to the GPU; a DeviceArray of the
    active backend is returned as it is (one of the other backend is copied
    over), and another device array (``__cuda_array_interface__``, or
    DLPack on the GPU) is wrapped without a copy.  Takes the dtypes the
    operations take (DEVICE_DTYPES); TypeError for any other."""
    if isinstance(x, DeviceArray):
        if x._backend == _backend.current:
            return x
        return to_device(x.get())  # the other backend's memory: copied, as CuPy copies across devices
    if hasattr(x, "__cuda_array_interface__"):
        return _wrap_foreign(x)
    if _dlpack_only(x):
        if x.__dlpack_device__()[0] in _DL_HOST:  # host memory: copied, like a NumPy array
            return to_device(np.from_dlpack(x))
        return from_dlpack(x)
    h = _host_array(x, "to_device")
    a = np.ascontiguousarray(h).reshape(h.shape)  # a 0-d array stays 0-d
    check_device_dtype(a.dtype, "to_device")
    d = DeviceArray(a.shape, a.dtype)
    if a.nbytes:
        _core.htod(d.ptr, a)
    return d


# ndarray subclasses whose elements are all they mean (see the module's docstring)
_PLAIN_SUBCLASSES = (np.matrix, np.memmap)


def _host_array(x, who: str) -> np.ndarray:
    if type(x) is np.ndarray:
        return x
    if isinstance(x, np.ndarray):
        if isinstance(x, _PLAIN_SUBCLASSES):
            return x.view(np.ndarray)
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"gpuprims.{who} does not take masked arrays: the mask would be ignored; "
                            f"pass x.filled(value) or x.compressed() (the unmasked elements)")
        raise TypeError(f"gpuprims.{who} does not take {type(x).__module__}.{type(x).__name__}, an "
                        f"ndarray subclass whose meaning the result would lose; pass "
                        f"numpy.asarray(x) to use its elements as a plain array")
    if isinstance(x, (list, tuple, np.generic)):
        return np.asarray(x)
    raise TypeError(
        f"gpuprims.{who} takes a NumPy array or a device array "
        f"(an object with __cuda_array_interface__ or __dlpack__), not {type(x).__name__}"
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
    check_device_dtype(dtype, "to_device")
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

    __slots__ = ("shape", "dtype", "_host", "strided_host", "device", "on_device", "ptr", "strides",
                 "_owner")

    def __init__(self, shape, dtype, host, device, *, ptr=None, strides=None, owner=None,
                 strided_host=None):
        self.shape, self.dtype, self._host, self.device = shape, dtype, host, device
        # a non-contiguous NumPy input as the caller gave it: the host
        # pipeline packs it from its strides; `host` is its C-contiguous copy,
        # made only where a step needs one
        self.strided_host = strided_host
        self.ptr = device.ptr if device is not None else ptr
        self.strides = strides  # None: C-contiguous
        self._owner = owner
        self.on_device = self.ptr is not None  # where the caller's data was: decides the output

    @property
    def host(self):
        if self._host is None and self.strided_host is not None:
            self._host = np.ascontiguousarray(self.strided_host)
        return self._host

    @host.setter
    def host(self, value):
        self._host = value

    def host_input(self) -> np.ndarray:
        """The host elements as the pipeline may read them: the caller's
        strided array where no contiguous copy was made, else to_host()."""
        if self._host is None and self.strided_host is not None:
            return self.strided_host
        return self.to_host()

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
    if _dlpack_only(x):  # DLPack without __cuda_array_interface__ (e.g. JAX): see _dlpack_operand
        return _dlpack_operand(x, who, dtypes, ndim, strided)
    a = _host_array(x, who)
    _check(a.dtype, a.ndim, who, dtypes, ndim, allow_0d)
    if not a.flags.c_contiguous and a.size > 1:  # copied only where a step needs it (Operand.host)
        return Operand(a.shape, a.dtype, None, None, strided_host=a)
    if a.ndim:  # (numpy.ascontiguousarray makes a 0-d array 1-d)
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
    if dtype not in dtypes and dtype.newbyteorder("=") not in dtypes:  # either byte order
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


# -- DLPack: the consumer side (the producer side is DeviceArray.__dlpack__)
# Device types and flags of the DLPack specification (dlpack.h, DLPack 1.0).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_HOST = (_DL_CPU, _DL_CUDA_HOST)  # host memory: what the emulator reads
_DL_GPU = (_DL_CUDA, _DL_CUDA_MANAGED, _DL_CUDA_HOST)  # what a CUDA kernel can address
_DL_READ_ONLY, _DL_IS_COPIED = 1 << 0, 1 << 1
_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}  # numpy kind -> DLDataTypeCode
_DL_KINDS = {code: kind for kind, code in _DL_CODES.items()}
_DL_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDAHost", 13: "CUDAManaged"}


def _dlpack_only(x) -> bool:
    """Whether x is exchanged through DLPack only: it has __dlpack__ but no
    __cuda_array_interface__ and is not a NumPy array (NumPy has both
    protocols; its arrays take the host path)."""
    return (hasattr(x, "__dlpack__") and not isinstance(x, (np.ndarray, np.generic))
            and not hasattr(x, "__cuda_array_interface__"))


def _dl_device_name(device) -> str:
    return f"{_DL_NAMES.get(device[0], f'device type {device[0]}')}:{device[1]}"


def from_dlpack(x, /, *, copy=None) -> DeviceArray:
    """A DeviceArray viewing the memory of `x`, any object with
    ``__dlpack__`` (a CuPy array, a PyTorch tensor, a JAX array, a
    DeviceArray), without a copy: the DLPack protocol of the Python array
    API standard.  `x` stays alive until the DeviceArray goes away.

    The memory must be the active backend's: GPU memory on the cuda backend
    (DLPack device kDLCUDA on the current device, kDLCUDAManaged or
    kDLCUDAHost); host memory (kDLCPU, kDLCUDAHost) on the emulator, whose
    device memory is host memory.  Host memory on the cuda backend is a
    TypeError: pass ``gpuprims.to_device(numpy.from_dlpack(x))``, a copy.
    A strided tensor is gathered into a new C-contiguous array (a copy).
    copy=True always copies; copy=False raises BufferError where a copy
    would be needed."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"gpuprims.from_dlpack takes an object with __dlpack__, not {type(x).__name__}")
    holder, ptr, shape, dtype, strides, backend, readonly = _dlpack_view(x, "from_dlpack")
    contiguous = _dl_c_contiguous(shape, strides)
    if copy is False and not contiguous:
        raise BufferError("gpuprims.from_dlpack: the tensor is strided and a DeviceArray is "
                          "C-contiguous: a copy is needed and copy=False")
    if not contiguous:
        return to_device(_gather(ptr, shape, dtype, tuple(s * dtype.itemsize for s in strides)))
    d = DeviceArray(shape, dtype, _ptr=ptr, _owner=holder, _backend=backend, _readonly=readonly)
    if copy:
        c = DeviceArray(shape, dtype)
        if c.nbytes:
            _core.dtod(c.ptr, d.ptr, c.nbytes)
        return c
    return d


def _dlpack_view(x, who: str, gpu_only=False) -> tuple:
    """Take x's DLPack tensor over: (holder, address, shape, dtype, element
    strides or None, backend, read-only).  The holder owns the tensor (the
    producer's deleter runs when it goes away).  TypeError, before anything
    is exported, for memory the active backend cannot read (and, with
    gpu_only, for host memory); TypeError for a dtype a DeviceArray cannot
    hold."""
    if not hasattr(x, "__dlpack_device__"):  # the standard asks producers for both
        raise TypeError(f"gpuprims.{who}: {type(x).__name__} has __dlpack__ but no "
                        f"__dlpack_device__, so where its memory is cannot be known")
    device = tuple(int(v) for v in x.__dlpack_device__())
    where = _dl_device_name(device)
    backend = _backend.current
    if gpu_only and device[0] in _DL_HOST and device[0] not in _DL_GPU:
        raise TypeError(f"gpuprims.{who}: {type(x).__name__} is in host memory (DLPack {where}); "
                        f"pass numpy.from_dlpack(x) (NumPy in, NumPy out) or "
                        f"gpuprims.to_device(numpy.from_dlpack(x))")
    if backend == "emulator" and device[0] not in _DL_HOST:
        raise TypeError(f"gpuprims.{who}: the emulator backend cannot read GPU memory "
                        f"({type(x).__name__} on DLPack {where}); pass a NumPy array, or "
                        f"gpuprims.set_backend('cuda')")
    if backend == "cuda" and device[0] not in _DL_GPU:
        raise TypeError(f"gpuprims.{who}: {type(x).__name__} is in host memory (DLPack {where}) and "
                        f"the cuda backend reads GPU memory; pass "
                        f"gpuprims.to_device(numpy.from_dlpack(x)) (a copy)")
    if backend == "cuda" and device[0] != _DL_CUDA_HOST:
        current = _core.dlpack_device("cuda")[1]
        if device[1] != current:
            raise ValueError(f"gpuprims.{who}: {type(x).__name__} is on GPU {device[1]} and gpuprims "
                             f"works on the current device, GPU {current}")
    # On the GPU, the producer orders its writes before the legacy default
    # stream (1 in the protocol's numbering): our per-thread default stream
    # is a blocking stream, ordered behind it.  (Stream 2, the per-thread
    # default stream itself, is refused by producers such as PyTorch.)
    # Host memory: None.
    stream = 1 if backend == "cuda" and device[0] != _DL_CUDA_HOST else None
    try:
        capsule = x.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0: no max_version
        capsule = x.__dlpack__(stream=stream)
    holder, ptr, shape, strides, code, bits, _, _, readonly = _core.dlpack_import(capsule)
    kind = _DL_KINDS.get(code)
    try:
        dtype = np.dtype(f"{kind}{bits // 8}") if kind is not None and bits % 8 == 0 else None
    except TypeError:
        dtype = None
    if dtype is None or dtype not in DEVICE_DTYPES or (kind == "b" and bits != 8):
        names = ", ".join(np.dtype(t).name for t in _NUMERIC)
        raise TypeError(f"gpuprims.{who}: DLPack dtype (code {code}, {bits} bits) is not one "
                        f"gpuprims takes: {names}")
    return holder, ptr, shape, dtype, strides, backend, readonly


def _dl_c_contiguous(shape, strides) -> bool:
    """Whether element strides (None: C order) read shape in C order; the
    stride of a dimension of length 1 does not matter, nor any of an empty
    array."""
    if strides is None or math.prod(shape) <= 1:
        return True
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _dlpack_operand(x, who: str, dtypes, ndim, strided) -> Operand:
    """take() of an object that speaks DLPack only, with GPU memory (a JAX
    array on the GPU): read in place like a __cuda_array_interface__ one
    (strided=True: through its strides).  Host memory is refused on both
    backends with TypeError (pass numpy.from_dlpack(x)), so that a call
    means the same on the emulator and on the GPU."""
    holder, ptr, shape, dtype, strides, backend, readonly = _dlpack_view(x, who, gpu_only=True)
    _check(dtype, len(shape), who, dtypes, ndim)
    if _dl_c_contiguous(shape, strides):
        d = DeviceArray(shape, dtype, _ptr=ptr, _owner=holder, _backend=backend, _readonly=readonly)
        return Operand(shape, dtype, None, d)
    if strided:
        return Operand(shape, dtype, None, None, ptr=ptr, strides=tuple(strides), owner=holder)
    return Operand(shape, dtype, None, to_device(_gather(ptr, shape, dtype,
                                                          tuple(s * dtype.itemsize for s in strides))))


# ---------------------------------------------------------------- host pipeline
# NumPy arrays cross the bus through a bounded ring of pinned staging
# buffers, in chunks (csrc/pipeline.c).  Its settings: the ring's size
# (GPUPRIMS_PINNED_LIMIT, set_pinned_limit) and a cap on the device memory a
# call may use (GPUPRIMS_DEVICE_MEMORY_LIMIT, set_device_memory_limit), so
# that an array larger than the device works, and so that the out-of-core
# path can be tested on small data.

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(value, what: str) -> int:
    """A byte count from an int or a text like "64M", "2G", "512K", "1.5G"
    (binary units; an optional trailing "B" or "iB").  ValueError otherwise."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
    elif isinstance(value, str):
        text = value.strip().upper().removesuffix("IB").removesuffix("B")
        unit = text[-1:] if text[-1:] in _UNITS and text[-1:] else ""
        try:
            n = int(float(text[:len(text) - len(unit)]) * _UNITS[unit])
        except ValueError:
            raise ValueError(f"{what}: {value!r} is not a byte count; write e.g. 268435456, \"256M\" "
                             f"or \"2G\"") from None
    else:
        raise TypeError(f"{what}: a byte count (int or text like \"2G\"), not {type(value).__name__}")
    if n < 0:
        raise ValueError(f"{what}: {value!r} is negative")
    return n


def set_device_memory_limit(nbytes) -> None:
    """Cap the device memory one call on NumPy arrays may use (bytes, or a
    text like "64M", "2G"; None: no cap).  Host arrays larger than the cap
    are processed in chunks that fit it."""
    n = -1 if nbytes is None else parse_bytes(nbytes, "set_device_memory_limit")
    _core.pipeline_config(device_limit=n)
    _DEVICE_LIMIT[0] = None if n < 0 else n


# the cap as the core holds it, kept here too so that a call reads it without crossing into the core
_DEVICE_LIMIT = [None]


def device_memory_limit():
    """The device-memory cap in bytes, or None."""
    return _DEVICE_LIMIT[0]


def set_pinned_limit(nbytes) -> None:
    """The pinned staging ring's total size (bytes or text like "256M";
    default 256 MiB, at least 16 KiB).  Takes effect at the next call that
    needs the ring (the old one is given back then)."""
    n = parse_bytes(nbytes, "set_pinned_limit")
    if n < 16 << 10:
        raise ValueError(f"set_pinned_limit: {n} bytes is below the 16 KiB the ring needs")
    _core.pipeline_config(pinned_limit=n)


def empty_pinned(shape, dtype=np.float64, order="C") -> np.ndarray:
    """A new NumPy array in page-locked (pinned) host memory, uninitialized,
    as numpy.empty(shape, dtype, order).  The host pipeline copies such an
    array to and from the GPU in place, at the bus's speed, where it packs a
    pageable array through its staging ring first (at what the host's
    memory allows: bench/results/host-*).  Use it for inputs that cross
    the bus more than once and for `out=` of results that come back.  The
    memory is freed with the last array that views it.  Page-locked memory
    is taken from the operating system's pageable pool: allocate what the
    work needs, not all of the host's memory."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:  # raw memory read as Python object pointers would crash the interpreter
        raise TypeError(f"empty_pinned: a dtype holding Python objects ({dtype}) cannot live in raw host memory")
    if order not in ("C", "F"):
        raise ValueError(f"empty_pinned: order must be 'C' or 'F', not {order!r}")
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"empty_pinned: negative dimensions are not allowed: {shape}")
    count = math.prod(shape)
    buf = _core.host_alloc(count * dtype.itemsize)
    flat = np.frombuffer(buf, dtype=np.uint8, count=count * dtype.itemsize)
    return flat.view(dtype).reshape(shape, order=order)


def is_pinned(x) -> bool:
    """Whether a NumPy array's memory is page-locked (from empty_pinned,
    cupyx.empty_pinned, a PyTorch tensor's pin_memory(), or registered with
    cudaHostRegister), as the active backend sees it: the host pipeline
    copies such arrays in place.  False for an empty array."""
    a = _host_array(x, "is_pinned")
    if a.size == 0:
        return False
    lo, hi = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") else np.byte_bounds(a)
    return _core.host_pinned(lo, hi - lo)


def free_memory() -> None:
    """Give back the pinned staging buffers and the device memory the
    stream-ordered pool keeps cached for later calls (both come back on the
    next call that needs them)."""
    _core.free_memory()


def piece_budget():
    """The bytes of host data one core call may take where the pipeline does
    not split it itself (axis layouts, N-D transposes): a quarter of the
    device-memory cap, or None (no cap: one call)."""
    limit = device_memory_limit()
    return None if limit is None else max(1, limit // 4)


def _settings_from_environment():
    for var, fn in (("GPUPRIMS_PINNED_LIMIT", set_pinned_limit),
                    ("GPUPRIMS_DEVICE_MEMORY_LIMIT", set_device_memory_limit)):
        text = os.environ.get(var)
        if text:
            try:
                fn(text)
            except (TypeError, ValueError) as e:
                warnings.warn(f"{var} ignored: {e}", RuntimeWarning, stacklevel=2)


_settings_from_environment()
