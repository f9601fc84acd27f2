"""``finfo``, ``iinfo`` and the dtype predicates of torch's top level (``can_cast``,
``is_floating_point``, ``is_complex``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes

# torch's casting categories: a cast may not go down one (float -> int, complex -> float,
# int -> bool)
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _check_dtype(fn: str, value: Any, arg: str = "type") -> dtypes.dtype:
    value = dtypes.as_dtype_arg(value)
    if not isinstance(value, dtypes.dtype):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be torch.dtype, not "
                        f"{type(value).__name__}")
    return value


def _g(value: float) -> str:
    return f"{value:g}"


class finfo:  # noqa: N801 - torch's name
    """Machine limits of a floating point dtype, as ``torch.finfo``.

    Args:
        type: a floating point or complex dtype (the default dtype when omitted; a complex
            dtype describes its real parts).

    Attributes:
        bits: the number of bits the type occupies.
        eps: the smallest ``e`` with ``1.0 + e != 1.0``.
        max: the largest finite value.
        min: the most negative finite value (``-max``).
        tiny: the smallest positive normal value (``smallest_normal``).
        smallest_normal: the smallest positive normal value.
        resolution: the approximate decimal resolution, ``10 ** -precision``.
        dtype: the name of the dtype, e.g. ``"float32"``.
    """

    def __init__(self, type: dtypes.dtype | None = None) -> None:  # noqa: A002 - torch's name
        dt = dtypes.get_default_dtype() if type is None else _check_dtype("finfo", type)
        if not (dt.is_floating_point or dt.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        real = dt.to_real() if dt.is_complex else dt
        if real is dtypes.bfloat16:  # (float32's exponent, 8 bits of significand)
            self._bfloat16()
            return
        info = np.finfo(real.np)
        self.bits: int = int(info.bits)
        self.eps: float = float(info.eps)
        self.max: float = float(info.max)
        self.min: float = float(info.min)
        self.tiny: float = float(info.smallest_normal)
        self.smallest_normal: float = float(info.smallest_normal)
        self.resolution: float = 10.0 ** -int(info.precision)
        self.dtype: str = real.name

    def _bfloat16(self) -> None:
        self.bits = 16
        self.eps = 2.0 ** -7
        self.max = float((2 - 2.0 ** -7) * 2.0 ** 127)
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** -126
        self.resolution = 0.01
        self.dtype = "bfloat16"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch's name
    """Machine limits of an integer dtype, as ``torch.iinfo``.

    Args:
        type: an integer dtype (``bool`` is not one).

    Attributes:
        bits: the number of bits the type occupies.
        max: the largest value.
        min: the smallest value.
        dtype: the name of the dtype, e.g. ``"int64"``.
    """

    def __init__(self, type: dtypes.dtype) -> None:  # noqa: A002 - torch's name
        dt = _check_dtype("iinfo", type)
        if dt == dtypes.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.is_floating_point or dt.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = np.iinfo(dt.np)
        self.bits: int = int(info.bits)
        self.max: int = int(info.max)
        self.min: int = int(info.min)
        self.dtype: str = dt.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"


def can_cast(from_: dtypes.dtype, to: dtypes.dtype) -> bool:
    """Whether a cast from ``from_`` to ``to`` is allowed by torch's type promotion rules: it
    may not lower the kind (complex to float, float to integer, integer to bool)."""
    for pos, (name, value) in enumerate((("from", from_), ("to", to)), 1):
        if not isinstance(value, dtypes.dtype):
            raise TypeError(f"can_cast(): argument '{name}' (position {pos}) must be "
                            f"torch.dtype, not {type(value).__name__}")
    return _CATEGORY[from_.np.kind] <= _CATEGORY[to.np.kind]


def _check_tensor(fn: str, input: Any) -> None:  # noqa: A002
    from .tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def is_floating_point(input: Any) -> bool:  # noqa: A002 - torch's name
    """Whether ``input``'s dtype is a floating point dtype."""
    _check_tensor("is_floating_point", input)
    return bool(input.dtype.is_floating_point)


def is_complex(input: Any) -> bool:  # noqa: A002 - torch's name
    """Whether ``input``'s dtype is a complex dtype."""
    _check_tensor("is_complex", input)
    return bool(input.dtype.is_complex)
