"""Python data as a tensor's array: what ``Tensor(data)``, ``tensor(data)`` and the legacy
constructors share (a number, a nested sequence that may hold tensors, a NumPy array or a
tensor, to a NumPy array and its dtype by torch's inference rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .ops import registry


def infer_dtype(data: Any) -> dtypes.dtype:
    """The dtype torch infers for ``data`` (the default float dtype for Python floats)."""
    if isinstance(data, np.ndarray):
        return dtypes.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return dtypes.from_numpy_dtype(data.dtype)
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind == "b":
        return dtypes.bool
    if kind in "iu":
        return dtypes.int64
    if kind == "f":
        return dtypes.get_default_dtype()
    if kind == "c":
        return dtypes.default_complex_dtype()
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def to_array(data: Any, dtype: dtypes.dtype | None, copy: bool = True) -> tuple:
    """``(array, dtype)`` of ``data``: a copy unless ``copy`` is False and no cast is needed."""
    if isinstance(data, registry.Tensor):
        arr = data._data
        dt = dtype or data.dtype
        return (np.array(arr, dtype=dt.np, copy=copy) if copy or arr.dtype != dt.np else arr), dt
    if isinstance(data, (list, tuple)) and any(isinstance(x, registry.Tensor) for x in
                                               _flat(data)):
        data = _nested_items(data)
    dt = dtype or infer_dtype(data)
    arr = np.array(data, dtype=dt.np, copy=copy) if copy else np.asarray(data, dtype=dt.np)
    return arr, dt


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _nested_items(data):
    if isinstance(data, (list, tuple)):
        return [_nested_items(x) for x in data]
    if isinstance(data, registry.Tensor):
        return data._data.tolist()
    return data
