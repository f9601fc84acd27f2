"""Padding layers with torch.nn's names, arguments and repr: ZeroPad1d/2d/3d,
ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d and CircularPad1d/2d/3d,
each a call of ``F.pad`` with its mode."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._functional_core import pad
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _ntuple(padding: Any, n: int) -> tuple[int, ...]:
    """torch's ``_pair`` / ``_quadruple`` / ``_ntuple(6)``: an int repeats, a sequence is kept."""
    if isinstance(padding, (list, tuple)):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    """A padding layer: ``F.pad(input, self.padding, mode)``; ``_dims`` spatial dims padded."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._dims)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; ``padding`` an int or ``(left, right)``.

    Args:
        padding: the sizes of the padding (negative sizes crop).
        value: the fill value.
    """

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``; ``padding`` an int or ``(left, right, top,
    bottom)``.

    Args:
        padding: the sizes of the padding (negative sizes crop).
        value: the fill value.
    """

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``; ``padding`` an int or a 6-tuple (last dim
    first).

    Args:
        padding: the sizes of the padding (negative sizes crop).
        value: the fill value.
    """

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros; ``padding`` an int or ``(left, right)``."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros; ``padding`` an int or ``(left, right, top, bottom)``."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros; ``padding`` an int or a 6-tuple."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection (the edge not repeated)."""

    _mode, _dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims with their reflection (the edge not repeated)."""

    _mode, _dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims with their reflection (the edge not repeated)."""

    _mode, _dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _mode, _dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating their edge values."""

    _mode, _dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating their edge values."""

    _mode, _dims = "replicate", 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got "
                             f"{input.ndim}D input)")
        return pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim with its wrapped-around values (2-D or 3-D input)."""

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims with their wrapped-around values (3-D or 4-D input)."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims with their wrapped-around values (4-D or 5-D input)."""

    _dims = 3
