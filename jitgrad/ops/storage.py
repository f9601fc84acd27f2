"""Storages as torch's: ``Tensor.untyped_storage()`` (the bytes under a tensor and all of its
views), the deprecated typed ``Tensor.storage()``, and ``Tensor.set_`` (a tensor made to view a
storage, or another tensor's memory, with a given offset, size and stride).

A storage is the NumPy array that owns the memory (the root of the ``base`` chain of a tensor's
array) seen as bytes: two tensors share a storage exactly when their arrays share that root, so
``data_ptr()``, the size and writes through either agree with torch's. A storage made on its own
(``UntypedStorage(n)``) owns a fresh zeroed array. CPU storages only: a cuda tensor's storage
raises.
"""

from __future__ import annotations

import mmap
import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..device import device as _device
from . import registry
from ..dtypes import CPP_NAMES as _CPP
from .sharing import _mapping_of

_TYPED_WARNING = ("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to you "
                  "if you are using storages directly.  To access UntypedStorage directly, use "
                  "tensor.untyped_storage() instead of tensor.storage()")


def root_array(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (the end of its ``base`` chain)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _bytes_of(root: np.ndarray) -> np.ndarray:
    """The root array's memory as a flat uint8 array (sharing it)."""
    if not root.flags.c_contiguous and not root.flags.f_contiguous:
        raise RuntimeError("the tensor's memory is not one contiguous block (a broadcast view of "
                           "a scalar): it has no storage of its own; call .contiguous() first")
    return root.reshape(-1, order="A").view(np.uint8)


def _host_array(tensor: Any) -> np.ndarray:
    data = tensor._data
    if not isinstance(data, np.ndarray):
        raise RuntimeError(f"storages of {tensor.device.type} tensors are not supported by "
                           "jitgrad" + (": call .cpu() first" if tensor.is_cuda else ""))
    return data


class UntypedStorage:
    """The bytes under tensors (torch's ``UntypedStorage``): ``UntypedStorage(n)`` makes ``n``
    zeroed bytes, ``UntypedStorage(sequence)`` bytes with those values."""

    def __init__(self, *args: Any, device: Any = None) -> None:
        if device is not None and _device(device).type != "cpu":
            raise RuntimeError("jitgrad storages live on the CPU only")
        if len(args) > 1:
            raise TypeError("UntypedStorage(): takes a size or a sequence of bytes")
        arg = args[0] if args else 0
        if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
            self._bytes = np.zeros(int(arg), np.uint8)
        else:
            self._bytes = np.array(list(arg), dtype=np.uint8)

    @classmethod
    def _over(cls, root: np.ndarray) -> UntypedStorage:
        s = object.__new__(cls)
        s._bytes = _bytes_of(root)
        return s

    def data_ptr(self) -> int:
        return int(self._bytes.__array_interface__["data"][0])

    def nbytes(self) -> int:
        return int(self._bytes.size)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def device(self) -> Any:
        return _device("cpu")

    @property
    def is_cuda(self) -> bool:
        return False

    def untyped(self) -> UntypedStorage:
        return self

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise RuntimeError("slices of a storage must be contiguous (step 1)")
            part = object.__new__(UntypedStorage)
            part._bytes = self._bytes[index]
            return part
        return int(self._bytes[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._bytes[index] = value

    def tolist(self) -> list:
        return self._bytes.tolist()

    def fill_(self, value: int) -> UntypedStorage:
        self._bytes[...] = value
        return self

    def copy_(self, source: Any, non_blocking: Any = None) -> UntypedStorage:
        src = source.untyped()._bytes
        if src.size != self._bytes.size:
            raise RuntimeError(f"size mismatch, {self.nbytes()} bytes to copy {src.size} bytes")
        self._bytes[...] = src
        return self

    def clone(self) -> UntypedStorage:
        s = object.__new__(UntypedStorage)
        s._bytes = self._bytes.copy()
        return s

    def cpu(self) -> UntypedStorage:
        return self

    def is_shared(self) -> bool:
        return isinstance(_mapping_of(self._bytes), mmap.mmap)

    def is_pinned(self, device: Any = "cuda") -> bool:
        return False

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other: Any) -> bool:  # torch compares storages by identity of memory
        return isinstance(other, UntypedStorage) and other.data_ptr() == self.data_ptr() \
            and other.nbytes() == self.nbytes()

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        tail = f"[jitgrad.storage.UntypedStorage(device=cpu) of size {self.nbytes()}]"
        return f"{body}\n{tail}" if body else tail


class TypedStorage:
    """Deprecated as in torch: a storage seen as elements of one dtype (``Tensor.storage()``)."""

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None,
                 wrap_storage: UntypedStorage | None = None) -> None:
        warnings.warn(_TYPED_WARNING, UserWarning, stacklevel=2)
        self.dtype = dtype or dtypes.get_default_dtype()
        if wrap_storage is not None:
            self._untyped_storage = wrap_storage
            return
        arg = args[0] if args else 0
        if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
            values = np.zeros(int(arg), self.dtype.np)
        else:
            values = np.array(list(arg), dtype=self.dtype.np)
        self._untyped_storage = UntypedStorage._over(values)

    def _values(self) -> np.ndarray:
        b = self._untyped_storage._bytes
        n = b.size // self.dtype.itemsize
        return b[:n * self.dtype.itemsize].view(self.dtype.np)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    @property
    def device(self) -> Any:
        return _device("cpu")

    @property
    def is_cuda(self) -> bool:
        return False

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise RuntimeError("slicing a TypedStorage is not supported: use its "
                               "untyped_storage() or a tensor view")
        return self._values()[index].item()

    def __setitem__(self, index: Any, value: Any) -> None:
        self._values()[index] = value

    def tolist(self) -> list:
        return self._values().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value: Any) -> TypedStorage:
        self._values()[...] = value
        return self

    def copy_(self, source: Any, non_blocking: Any = None) -> TypedStorage:
        self._untyped_storage.copy_(source.untyped())
        return self

    def clone(self) -> TypedStorage:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return TypedStorage(dtype=self.dtype, wrap_storage=self._untyped_storage.clone())

    def cpu(self) -> TypedStorage:
        return self

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        tail = (f"[jitgrad.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size "
                f"{self.size()}]")
        return f"{body}\n{tail}" if body else tail


def untyped_storage(self: Any) -> UntypedStorage:
    """The storage (bytes) under this tensor and every tensor sharing its memory."""
    return UntypedStorage._over(root_array(_host_array(self)))


def storage(self: Any) -> TypedStorage:
    """Deprecated: the storage seen as elements of this tensor's dtype."""
    warnings.warn(_TYPED_WARNING, UserWarning, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TypedStorage(dtype=self._dtype, wrap_storage=untyped_storage(self))


def _strided_view(raw: np.ndarray, np_dtype: np.dtype, offset: int, size: tuple,
                  stride: tuple) -> np.ndarray:
    itemsize = np_dtype.itemsize
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError("set_: sizes and strides must be non-negative")
    span = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if (offset + span) * itemsize > raw.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {(offset + span) * itemsize} "
            f"are out of bounds for storage of size {raw.size}")
    # (an ndarray on ``raw``'s buffer: its base chain leads to the storage's root)
    return np.ndarray(size, np_dtype, buffer=raw, offset=offset * itemsize,
                      strides=tuple(s * itemsize for s in stride))


def set_(self: Any, source: Any = None, storage_offset: int = 0, size: Any = None,
         stride: Any = None) -> Any:
    """Makes this tensor view ``source``: another tensor's memory (with its shape and strides),
    or a storage from ``storage_offset`` with ``size`` and ``stride`` (default: all of it,
    contiguous). With no source the tensor becomes empty. Returns ``self``."""
    from ..autograd.grad_mode import is_grad_enabled

    if self.requires_grad and self.is_leaf and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if source is None:
        data = np.empty((0,), self._dtype.np)
    elif isinstance(source, registry.Tensor):
        if source._dtype is not self._dtype:
            raise RuntimeError(f"Could not set tensor of type {_CPP[source._dtype.name]} to a "
                               f"tensor of type {_CPP[self._dtype.name]}")
        data = _host_array(source)
        if size is not None or storage_offset:
            data = _strided_view(_bytes_of(root_array(data)), self._dtype.np, storage_offset,
                                 tuple(size), _stride(size, stride))
    else:
        if isinstance(source, TypedStorage):
            if source.dtype is not self._dtype:
                raise RuntimeError(
                    f"Expected a Storage of type {_CPP[self._dtype.name]} or an UntypedStorage, "
                    f"but got type {source.dtype._scalar_name} for argument 1 'storage'")
            source = source.untyped()
        if not isinstance(source, UntypedStorage):
            raise TypeError(f"set_(): argument 'source' must be a Tensor or a Storage, not "
                            f"{type(source).__name__}")
        if size is None:
            size = (source.nbytes() // self._dtype.itemsize - storage_offset,)
        data = _strided_view(source._bytes, self._dtype.np, storage_offset, tuple(size),
                             _stride(size, stride))
    self._data = data
    self._base = None  # (its own view now: storage_offset reads the memory)
    self._vc[0] += 1
    return self


def _stride(size: Any, stride: Any) -> tuple:
    if stride is not None:
        return tuple(int(s) for s in stride)
    out, step = [], 1
    for n in reversed(tuple(size)):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage (typed or untyped)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def _legacy_storage(name: str, dt: dtypes.dtype) -> type:
    def init(self, *args: Any, device: Any = None, **kwargs: Any) -> None:
        TypedStorage.__init__(self, *args, dtype=dt, device=device, **kwargs)

    return type(name, (TypedStorage,), {"__init__": init, "__module__": "jitgrad",
                                        "__doc__": f"Legacy typed storage of {dt.name}."})


# torch's legacy storage classes (``FloatStorage(3)``): typed storages of one dtype
LEGACY = {f"{d._scalar_name}Storage": _legacy_storage(
    f"{d._scalar_name}Storage", d) for d in dtypes.ALL}


def install(namespace: dict, tensor_type: type) -> None:
    """``Tensor.untyped_storage/storage/set_``; ``jitgrad.UntypedStorage``, ``TypedStorage``,
    ``is_storage``."""
    tensor_type.untyped_storage = untyped_storage
    tensor_type.storage = storage
    tensor_type.set_ = set_
    namespace["UntypedStorage"] = UntypedStorage
    namespace["TypedStorage"] = TypedStorage
    namespace["is_storage"] = is_storage
    namespace.update(LEGACY)
