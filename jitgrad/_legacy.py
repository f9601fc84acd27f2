"""torch's legacy tensor types: ``FloatTensor``, ``DoubleTensor``, ``LongTensor``, ...

Each is a class only in name: calling it makes an ordinary ``Tensor`` of its dtype
(``FloatTensor([1, 2])`` from data, ``FloatTensor(2, 3)`` of that size, uninitialized as in
torch), and ``isinstance(t, FloatTensor)`` is true for a float32 tensor, as in torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes


class _LegacyMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        from .tensor import Tensor

        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'jitgrad.{cls.__name__}'>"


def _make(name: str, dt: dtypes.dtype) -> type:
    def __new__(cls, *args: Any, device: Any = None):  # noqa: N807
        from ._data import to_array
        from .device import check_device
        from .tensor import Size, Tensor, _new

        check_device(device)
        if not args:
            return _new(np.empty((0,), dtype=dt.np), dt)
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return _new(np.zeros(tuple(int(a) for a in args), dtype=dt.np), dt)
        if len(args) == 1 and isinstance(args[0], Size):  # (a plain tuple is data, as in torch)
            return _new(np.zeros(tuple(args[0]), dtype=dt.np), dt)
        if len(args) != 1:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)}), but expected one "
                            "of: (*, device), (Tensor other), (tuple of ints size, *, device), "
                            "(object data, *, device)")
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not dt:
                raise TypeError(f"expected {name[:-len('Tensor')]} tensor (got "
                                f"{data.dtype._scalar_name} tensor)")
            return data
        return _new(*to_array(data, dt))  # (tensor(data, dtype=dt))

    return _LegacyMeta(name, (), {"__new__": __new__, "dtype": dt, "__module__": "jitgrad",
                                  "__doc__": f"Legacy constructor: a {dt.name} tensor."})


FloatTensor = _make("FloatTensor", dtypes.float32)
DoubleTensor = _make("DoubleTensor", dtypes.float64)
HalfTensor = _make("HalfTensor", dtypes.float16)
BFloat16Tensor = _make("BFloat16Tensor", dtypes.bfloat16)
LongTensor = _make("LongTensor", dtypes.int64)
IntTensor = _make("IntTensor", dtypes.int32)
ShortTensor = _make("ShortTensor", dtypes.int16)
CharTensor = _make("CharTensor", dtypes.int8)
ByteTensor = _make("ByteTensor", dtypes.uint8)
BoolTensor = _make("BoolTensor", dtypes.bool)

BY_NAME = {c.__name__: c for c in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor,
                                   LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor,
                                   BoolTensor)}


def as_dtype(t: Any) -> dtypes.dtype | None:
    """The dtype a legacy class or its name (``"torch.FloatTensor"``) stands for, or None."""
    if isinstance(t, _LegacyMeta):
        return t.dtype
    if isinstance(t, str):
        cls = BY_NAME.get(t.split(".")[-1])
        return cls.dtype if cls is not None else None
    return None


def tensor_type(self: Any, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``t.type()``: the legacy type name; ``t.type(dtype)``: ``t`` cast to ``dtype`` (a dtype,
    a legacy class or its name)."""
    if dtype is None:
        return f"jitgrad.{self._dtype._legacy}"
    legacy = as_dtype(dtype)
    if isinstance(dtype, str) and legacy is None:
        raise ValueError(f"invalid type: '{dtype}'")
    return self.to(legacy or dtype)
