"""DLPack capsules of memory jitgrad owns, built with ctypes (for cuda tensors: numba-cuda
exports no DLPack, and NumPy's ``__dlpack__`` only covers host arrays).

``capsule(ptr, shape, strides, dtype, device_type, owner)`` returns a ``"dltensor"`` PyCapsule
of an (unversioned) ``DLManagedTensor``: ``owner`` stays alive until the consumer calls the
deleter (or the capsule is dropped unconsumed).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import dtypes
from ._cuda_array import CudaArray

CPU, CUDA = 1, 2  # DLPack device types (kDLCPU, kDLCUDA)


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
