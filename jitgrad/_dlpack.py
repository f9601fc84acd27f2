"""DLPack capsules of memory jitgrad owns, built with ctypes (for cuda tensors: numba-cuda
exports no DLPack, and NumPy's ``__dlpack__`` only covers host arrays).

``capsule(ptr, shape, strides, dtype, device_type, owner)`` returns a ``"dltensor"`` PyCapsule
of an (unversioned) ``DLManagedTensor``: ``owner`` stays alive until the consumer calls the
deleter (or the capsule is dropped unconsumed).
"""

from __future__ import annotations

import ctypes
import enum
from typing import Any

import numpy as np

from . import dtypes
from ._cuda_array import CudaArray

CPU, CUDA = 1, 2  # DLPack device types (kDLCPU, kDLCUDA)


class DLDeviceType(enum.IntEnum):
    """The DLPack device types (``__dlpack_device__()[0]``)."""

    kDLCPU = 1  # noqa: N815
    kDLCUDA = 2  # noqa: N815
    kDLCUDAHost = 3  # noqa: N815
    kDLOpenCL = 4  # noqa: N815
    kDLVulkan = 7  # noqa: N815
    kDLMetal = 8  # noqa: N815
    kDLVPI = 9  # noqa: N815
    kDLROCM = 10  # noqa: N815
    kDLROCMHost = 11  # noqa: N815
    kDLExtDev = 12  # noqa: N815
    kDLCUDAManaged = 13  # noqa: N815
    kDLOneAPI = 14  # noqa: N815
    kDLWebGPU = 15  # noqa: N815
    kDLHexagon = 16  # noqa: N815
    kDLMAIA = 17  # noqa: N815


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]

_CODES = {"i": 0, "u": 1, "f": 2, "b": 6, "c": 5}
_LIVE: dict[int, tuple] = {}  # address of a DLManagedTensor -> what it keeps alive


@_DELETER
def _delete(managed) -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


# (the destructor gets the dying capsule as a raw pointer: a py_object would revive it)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _DESTRUCTOR]
_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@_DESTRUCTOR
def _capsule_gone(cap) -> None:
    if _valid(cap, b"dltensor"):  # never consumed: free it ourselves
        _LIVE.pop(_pointer(cap, b"dltensor"), None)


def capsule(ptr: int, shape: tuple, strides: tuple, dtype: np.dtype, device_type: int,
            owner: object, device_id: int = 0) -> object:
    """A DLPack capsule of the memory at ``ptr`` (element ``strides``), keeping ``owner``
    alive while the consumer holds it."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES:
        raise BufferError(f"DLPack cannot describe dtype {dtype}")
    ndim = len(shape)
    sizes = (ctypes.c_int64 * max(ndim, 1))(*shape)
    steps = (ctypes.c_int64 * max(ndim, 1))(*strides)
    m = _Managed()
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _Device(device_type, device_id)
    m.dl_tensor.ndim = ndim
    m.dl_tensor.dtype = _DataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    m.dl_tensor.shape = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.strides = ctypes.cast(steps, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _delete
    addr = ctypes.addressof(m)
    _LIVE[addr] = (m, sizes, steps, owner)
    return _new(addr, b"dltensor", _capsule_gone)


def capsule_device(cap: object) -> tuple[int, int]:
    """The (device type, device id) of an unconsumed ``"dltensor"`` capsule (any producer's)."""
    if type(cap).__name__ != "PyCapsule" or not _valid(id(cap), b"dltensor"):
        raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor "
                           "capsules can be consumed only once, so you might have already "
                           "constructed a tensor from it once.")
    managed = ctypes.cast(_pointer(id(cap), b"dltensor"), ctypes.POINTER(_Managed)).contents
    return managed.dl_tensor.device.device_type, managed.dl_tensor.device.device_id


def _device_name(kind: int) -> str:
    try:
        return DLDeviceType(kind).name
    except ValueError:
        return f"DLPack device type {kind}"


class _Capsule:
    """A legacy (host) DLPack capsule seen as a DLPack object, for NumPy to consume."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (DLDeviceType.kDLCPU, 0)


class _Writeable:
    """The memory of a read-only array, offered writeable (and keeping the array alive)."""

    def __init__(self, arr: np.ndarray) -> None:
        face = dict(arr.__array_interface__)
        face["data"] = (face["data"][0], False)
        self.__array_interface__ = face
        self.keep = arr


def _writeable(arr: np.ndarray) -> np.ndarray:
    """NumPy marks what a legacy capsule gives read-only; a tensor from one is writeable in
    torch: the same memory as a writeable array."""
    return arr if arr.flags.writeable else np.asarray(_Writeable(arr))


def host_capsule_array(cap: object) -> np.ndarray:
    """The memory of a host ``"dltensor"`` capsule (``to_dlpack``'s, any producer's) as a
    writeable array, consuming the capsule; a device capsule raises."""
    kind, _ = capsule_device(cap)
    if kind != DLDeviceType.kDLCPU:
        raise RuntimeError(
            f"from_dlpack: jitgrad reads host ({DLDeviceType.kDLCPU.name}) DLPack capsules "
            f"only, this one is on {_device_name(kind)}: pass the tensor or array itself "
            "(its __dlpack__), not a capsule")
    return _writeable(np.from_dlpack(_Capsule(cap)))


# ---------------------------------------------------------------- Tensor's protocols
def tensor_dlpack(self: Any, *, stream: Any = None, max_version: Any = None,
                  dl_device: Any = None, copy: Any = None) -> Any:
    """A DLPack capsule of this tensor's memory (zero-copy): CPU tensors through NumPy,
    cuda tensors as a ``kDLCUDA`` capsule of the device memory."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if self._dtype is dtypes.bfloat16:
        raise BufferError("jitgrad keeps bfloat16 values in float32 memory, which DLPack would "
                          "export as float32: export .float() instead")
    if type(self._data) is CudaArray:  # a capsule of the device memory (ctypes)
        data = self._data
        ptr = data.__cuda_array_interface__["data"][0]  # (BufferError-free on a GPU)
        data.synchronize()  # the consumer may read on another stream
        return capsule(ptr, data.shape, data.strides, data.dtype, CUDA, data)
    kwargs = {} if max_version is None else {"max_version": max_version}
    return self._data.__dlpack__(**kwargs)


def tensor_dlpack_device(self: Any) -> tuple[int, int]:
    """(DLPack device type, index): (1, 0) for the CPU, (2, 0) for cuda:0."""
    return (CUDA, 0) if type(self._data) is CudaArray else (CPU, 0)


def tensor_cuda_array_interface(self: Any) -> dict:
    """The CUDA array interface of a cuda tensor's memory (AttributeError on the CPU, so
    ``hasattr`` tells device tensors apart, as with torch)."""
    if type(self._data) is not CudaArray:
        raise AttributeError(
            "Can't get __cuda_array_interface__ on non-CUDA tensor type: "
            f"jitgrad.{self._dtype._legacy} If CUDA data is required use tensor.cuda() to copy "
            "tensor to device memory.")
    if self.requires_grad:
        raise RuntimeError(
            "Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
            "aren't required, use var.detach() to get Variable that doesn't require grad.")
    return self._data.__cuda_array_interface__
