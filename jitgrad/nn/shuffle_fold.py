"""PixelShuffle, PixelUnshuffle, ChannelShuffle, Fold, Unfold and Bilinear with torch.nn's
arguments, initialization and repr (the math is in ``nn.functional``)."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..ops.creation import empty
from ..tensor import Tensor
from . import _functional_extra as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Fold", "Unfold", "Bilinear"]


class PixelShuffle(Module):
    """Rearranges ``(*, C * r * r, H, W)`` into ``(*, C, H * r, W * r)``.

    Args:
        upscale_factor: ``r``.
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearranges ``(*, C, H * r, W * r)`` into ``(*, C * r * r, H, W)``.

    Args:
        downscale_factor: ``r``.
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleaves the ``groups`` groups of channels of ``(N, C, *)`` input.

    Args:
        groups: the number of groups (divides ``C``).
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Fold(Module):
    """col2im: sums ``(N, C * kh * kw, L)`` columns into ``(N, C, *output_size)``.

    Args:
        output_size: the spatial size of the output.
        kernel_size: the block size.
        dilation: the spacing of a block's taps. Default: 1.
        padding: implicit zero padding of the output. Default: 0.
        stride: the step between blocks. Default: 1.
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """im2col: the sliding blocks of ``(N, C, H, W)`` input as ``(N, C * kh * kw, L)``.

    Args:
        kernel_size: the block size.
        dilation: the spacing of a block's taps. Default: 1.
        padding: implicit zero padding of the input. Default: 0.
        stride: the step between blocks. Default: 1.
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Bilinear(Module):
    """``y = x1^T A x2 + b``: ``weight`` ``(out_features, in1_features, in2_features)`` and
    ``bias`` ``(out_features,)``, both uniform in ``+-1/sqrt(in1_features)``.

    Args:
        in1_features: the size of the first input's last dim.
        in2_features: the size of the second input's last dim.
        out_features: the size of the output's last dim.
        bias: learn an additive bias. Default: True.
        device, dtype: where and in which dtype the parameters live.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), dtype=dtype,
                                      device=device))
        if bias:
            self.bias = Parameter(empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight and bias uniform in ``+-1/sqrt(in1_features)``."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
