"""Python data as a tensor's array: what ``Tensor(data)``, ``tensor(data)`` and the legacy
constructors share (a number, a nested sequence that may hold tensors, a NumPy array or a
tensor, to a NumPy array and its dtype by torch's inference rules)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _config, dtypes
from ._meta import MetaArray
from .ops import registry


def infer_dtype(data: Any) -> dtypes.dtype:
    """The dtype torch infers for ``data`` (the default float dtype for Python floats)."""
    if isinstance(data, np.ndarray):
        return dtypes.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return dtypes.from_numpy_dtype(data.dtype)
    try:
        arr = np.asarray(data)
    except ValueError:  # a ragged nested sequence: torch's error, naming where
        _check_nesting(data)
        raise
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
    if type(data) is MetaArray:  # (a meta tensor's data: a deep copy or unpickling)
        dt = dtype or dtypes.from_numpy_dtype(data.dtype)
        return (data.astype(dt.np) if copy or data.dtype != dt.np else data), dt
    if isinstance(data, registry.Tensor):
        arr = data._data
        dt = dtype or data.dtype
        return (np.array(arr, dtype=dt.np, copy=copy) if copy or arr.dtype != dt.np else arr), dt
    if isinstance(data, (list, tuple)):
        typed = [x for x in _flat(data) if isinstance(x, (registry.Tensor, np.ndarray,
                                                           np.generic))]
        if typed:  # elements with a dtype of their own: torch promotes over every element
            dt = dtype or _sequence_dtype(data)
            return _typed_sequence(data, dt, typed), dt
    dt = dtype or infer_dtype(data)
    try:
        arr = np.array(data, dtype=dt.np, copy=copy) if copy else np.asarray(data, dtype=dt.np)
    except OverflowError:  # (a Python int or float out of the integer dtype's range)
        if dtype is None:
            raise ValueError("Overflow when unpacking long long") from None
        wrapped = _wrapped_unsigned(data, dt)
        if wrapped is not None:
            return wrapped, dt
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow") \
            from None
    except ValueError:
        if isinstance(data, (list, tuple)):
            _check_nesting(data)
        if not (dt.is_floating_point or dt.is_complex) and _has_nan(data):
            raise RuntimeError(f"value cannot be converted to type {dt.name} without "
                               "overflow") from None
        raise
    return arr, dt


def _wrapped_unsigned(data: Any, dt: Any) -> np.ndarray | None:
    """Python ints for an unsigned dtype as torch takes them: down to ``-max``, wrapped as
    two's complement (``tensor([-2], dtype=uint8)`` is 254); None if one is out of range."""
    if dt.is_signed or dt is dtypes.bool:
        return None
    try:
        values = np.array(data)
    except (OverflowError, ValueError, TypeError):
        return None
    if values.dtype.kind not in "iu":  # (a float is never wrapped)
        return None
    limit = np.iinfo(dt.np).max
    if values.size and (values.min() < -limit or values.max() > limit):
        return None
    return values.astype(dt.np)


def _has_nan(data: Any) -> bool:
    return any(isinstance(x, float) and x != x for x in _flat(data)) if isinstance(
        data, (list, tuple)) else isinstance(data, float) and data != data


def _check_nesting(data: Any) -> None:
    """Raises torch's error for a nested sequence whose lengths disagree with the sizes its
    first elements give (``expected sequence of length 2 at dim 1 (got 1)``)."""
    sizes = []
    x = data
    while isinstance(x, (list, tuple)):
        sizes.append(len(x))
        if not x:
            break
        x = x[0]

    def check(seq: Any, dim: int) -> None:
        if dim == len(sizes):
            return
        if not isinstance(seq, (list, tuple)):
            raise TypeError("not a sequence")
        if len(seq) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} "
                             f"(got {len(seq)})")
        for item in seq:
            check(item, dim + 1)

    check(data, 0)


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _leaf_dtype(x: Any) -> dtypes.dtype:
    """A sequence element's dtype, as torch infers it: its own for a tensor, NumPy array or
    NumPy scalar; int64, the default dtype or the default complex dtype for Python numbers."""
    if isinstance(x, registry.Tensor):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.from_numpy_dtype(x.dtype)
    return infer_dtype(x)


def _sequence_dtype(data: Any) -> dtypes.dtype:
    """The dtype of a nested sequence whose elements may carry dtypes (``[np.float64(1.0), 2]``
    is float64, ``[t_float64, 1.0]`` float64, ``[np.int16(1), 1]`` int64): the promotion of
    every element's dtype, as torch's ``infer_scalar_type``."""
    out = None
    for x in _flat(data):
        dt = _leaf_dtype(x)
        out = dt if out is None else dtypes.promote_types(out, dt)
    return out or dtypes.get_default_dtype()


_SLOW_LIST = ("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
              "consider converting the list to a single numpy.ndarray with numpy.array() "
              "before converting to a tensor.")


def _typed_sequence(data: Any, dt: dtypes.dtype, typed: list) -> np.ndarray:
    """A nested sequence holding tensors, NumPy arrays or NumPy scalars as torch's
    ``internal_new_from_data`` stores it: the shape from the chain of first elements (a NumPy
    array is a sequence, a 0-d one without a length; a tensor is not), then each element
    stored by the dtype's Python protocol (``operator.index`` for integers, with Python
    floats truncated; ``float``, ``complex``), a sequence or tensor below the last dim
    iterated; a NumPy array in the list gives torch's warning, once per process."""
    if any(isinstance(x, np.ndarray) for x in typed):
        _config.warn_once("numpy_list", _SLOW_LIST)
    sizes = []
    x = data
    while isinstance(x, (list, tuple, np.ndarray)):
        if isinstance(x, np.ndarray) and x.ndim == 0:
            raise TypeError("len() of unsized object")
        sizes.append(len(x))
        if not sizes[-1]:
            break
        x = x[0]
    out = np.empty(sizes, dt.np)
    _store(out, data, sizes, 0, (), _leaf_store(dt))
    return out


def _store(out: np.ndarray, obj: Any, sizes: list, dim: int, at: tuple, leaf: Any) -> None:
    if dim == len(sizes):
        out[at] = leaf(obj)
        return
    if isinstance(obj, np.ndarray) and obj.shape == tuple(sizes[dim:]) and _bulk(obj, out):
        out[at] = obj  # (all its elements convert as one by one: at once)
        return
    if isinstance(obj, registry.Tensor):
        obj = list(obj)
    elif not isinstance(obj, (list, tuple, np.ndarray)):
        try:
            obj = list(obj)
        except TypeError:
            raise TypeError("not a sequence") from None
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} "
                         f"(got {len(obj)})")
    for i, item in enumerate(obj):
        _store(out, item, sizes, dim + 1, at + (i,), leaf)


def _bulk(arr: np.ndarray, out: np.ndarray) -> bool:
    """Whether a NumPy array's elements convert to ``out``'s dtype element by element as
    NumPy's cast converts them (integers into integers of no less range, anything real into
    a float or complex dtype, bools into bool)."""
    src, dst = arr.dtype, out.dtype
    if dst.kind in "fc":
        return src.kind in "biuf" or src.kind == "c" and dst.kind == "c"
    if dst.kind in "iu":
        return src.kind in "iu" and np.can_cast(src, dst)
    return src.kind == "b"


def _leaf_store(dt: dtypes.dtype) -> Any:
    """How torch's ``store_scalar`` reads one element for ``dt``."""
    if dt.is_complex:
        return complex
    if dt.is_floating_point:
        return float
    if dt is dtypes.bool:
        return lambda x: bool(x) if isinstance(x, (float, np.bool_)) else operator.index(x) != 0
    info = np.iinfo(dt.np)
    low = info.min if info.min else -info.max  # (an unsigned type wraps down to -max)

    def integer(x: Any) -> int:
        value = x if isinstance(x, float) else operator.index(x)
        if value != value or not low <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        return int(value) % (info.max + 1) if value < info.min else int(value)

    return integer


def channels_last_contiguous(shape: tuple, strides: tuple, rank: int) -> bool:
    """torch's ``is_contiguous(memory_format=channels_last[_3d])`` (``rank`` 4 or 5): C, then
    the spatial dims from the last, then N, densely packed (dims of size 1 are ignored)."""
    if len(shape) != rank:
        return False
    expected = 1
    for d in [1] + list(range(rank - 1, 1, -1)) + [0]:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True
