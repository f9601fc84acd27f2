"""Pooling layers beside MaxPool2d/AvgPool2d: the 1-d and 3-d max and average poolings, the
3-d adaptive poolings, max-unpooling and power-average pooling (torch's arguments, attributes
and repr)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _functional_pool as P
from . import functional_conv as F
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _AvgPoolNd

__all__ = ["MaxPool1d", "MaxPool3d", "AvgPool1d", "AvgPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d",
           "LPPool2d", "LPPool3d"]


def _ntuple(v: Any, n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _MaxPoolNd(Module):
    """torch's _MaxPoolNd: the arguments as given (stride defaults to kernel_size)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling of ``(N, C, L)`` or ``(C, L)`` input (torch.nn.MaxPool1d).

    Args:
        kernel_size: the window length.
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit negative-infinity padding. Default: 0.
        dilation: the spacing of the window's elements. Default: 1.
        return_indices: also return the positions of the maxima. Default: False.
        ceil_mode: ceil instead of floor for the output size. Default: False.
    """

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (torch.nn.MaxPool3d).

    Args:
        kernel_size: the window size (an int or a triple).
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit negative-infinity padding. Default: 0.
        dilation: the spacing of the window's elements. Default: 1.
        return_indices: also return the flat positions of the maxima. Default: False.
        ceil_mode: ceil instead of floor for the output size. Default: False.
    """

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return P.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """1-d average pooling of ``(N, C, L)`` or ``(C, L)`` input (torch.nn.AvgPool1d).

    Args:
        kernel_size: the window length.
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit zero padding. Default: 0.
        ceil_mode: ceil instead of floor for the output size. Default: False.
        count_include_pad: count the padding in the divisor. Default: True.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input
    (torch.nn.AvgPool3d).

    Args:
        kernel_size: the window size (an int or a triple).
        stride: the window stride. Default: ``kernel_size``.
        padding: implicit zero padding. Default: 0.
        ceil_mode: ceil instead of floor for the output size. Default: False.
        count_include_pad: count the padding in the divisor. Default: True.
        divisor_override: a fixed divisor. Default: None.
    """

    _pool = staticmethod(P.avg_pool3d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-d average pooling to a fixed output size (torch.nn.AdaptiveAvgPool3d).

    Args:
        output_size: an int or a triple (None keeps the input's size along that dim).
    """

    _pool = staticmethod(P.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(Module):
    """3-d max pooling to a fixed output size (torch.nn.AdaptiveMaxPool3d).

    Args:
        output_size: an int or a triple (None keeps the input's size along that dim).
        return_indices: also return the flat positions of the maxima. Default: False.
    """

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return P.adaptive_max_pool3d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _MaxUnpoolNd(Module):
    """torch's _MaxUnpoolNd: kernel_size, stride and padding as n-tuples."""

    _dims = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        n = self._dims
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input: Tensor, indices: Tensor,  # noqa: A002
                output_size: Any = None) -> Tensor:
        fn = (P.max_unpool1d, P.max_unpool2d, P.max_unpool3d)[self._dims - 1]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """A partial inverse of MaxPool1d (torch.nn.MaxUnpool1d): ``forward(input, indices,
    output_size=None)`` puts each value at its index and zeros elsewhere.

    Args:
        kernel_size: the pooling's window length.
        stride: the pooling's stride. Default: ``kernel_size``.
        padding: the pooling's padding. Default: 0.
    """

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """A partial inverse of MaxPool2d (torch.nn.MaxUnpool2d); see MaxUnpool1d.

    Args:
        kernel_size: the pooling's window size (an int or a pair).
        stride: the pooling's stride. Default: ``kernel_size``.
        padding: the pooling's padding. Default: 0.
    """

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """A partial inverse of MaxPool3d (torch.nn.MaxUnpool3d); see MaxUnpool1d.

    Args:
        kernel_size: the pooling's window size (an int or a triple).
        stride: the pooling's stride. Default: ``kernel_size``.
        padding: the pooling's padding. Default: 0.
    """

    _dims = 3


class _LPPoolNd(Module):
    """torch's _LPPoolNd: ``(sum over the window of x ** p) ** (1 / p)``."""

    _dims = 1

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        fn = (P.lp_pool1d, P.lp_pool2d, P.lp_pool3d)[self._dims - 1]
        return fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling (torch.nn.LPPool1d).

    Args:
        norm_type: the power ``p`` (``inf``: max pooling of ``|x|``).
        kernel_size: the window length.
        stride: the window stride. Default: ``kernel_size``.
        ceil_mode: ceil instead of floor for the output size. Default: False.
    """

    _dims = 1


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling (torch.nn.LPPool2d); see LPPool1d."""

    _dims = 2


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling (torch.nn.LPPool3d); see LPPool1d."""

    _dims = 3
