"""Pooling layers: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d (torch's arguments and repr)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional_conv as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]


class MaxPool2d(Module):
    """2-d max pooling (torch.nn.MaxPool2d).

    Args:
        kernel_size: the window size (an int or a pair).
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit negative-infinity padding. Default: 0.
        dilation: the spacing of the window's elements. Default: 1.
        return_indices: also return the indices of the maxima. Default: False.
        ceil_mode: ceil instead of floor for the output size. Default: False.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class _AvgPoolNd(Module):
    """The arguments, forward and repr shared by ``AvgPool2d`` and ``AvgPool3d`` (their
    ``_pool`` is the functional form)."""

    _pool: Any

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self)._pool(input, self.kernel_size, self.stride, self.padding,
                                self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling (torch.nn.AvgPool2d).

    Args:
        kernel_size: the window size (an int or a pair).
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit zero padding. Default: 0.
        ceil_mode: ceil instead of floor for the output size. Default: False.
        count_include_pad: count the padding in the divisor. Default: True.
        divisor_override: a fixed divisor. Default: None.
    """

    _pool = staticmethod(F.avg_pool2d)


class _AdaptiveAvgPoolNd(Module):
    """``output_size``, forward and repr shared by the adaptive average poolings."""

    _pool: Any

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self)._pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-d average pooling to a fixed output size (torch.nn.AdaptiveAvgPool2d).

    Args:
        output_size: an int or a pair (None keeps the input's size along that dim).
    """

    _pool = staticmethod(F.adaptive_avg_pool2d)
