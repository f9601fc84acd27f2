"""ConvTranspose3d and BatchNorm3d (torch's arguments, parameters, buffers and repr)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._functional_conv3t import conv_transpose3d
from .batchnorm import _BatchNorm
from .conv import _ConvTransposeNd

__all__ = ["ConvTranspose3d", "BatchNorm3d"]


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` input
    (torch.nn.ConvTranspose3d): the gradient of a ``Conv3d`` with respect to its input.

    Args:
        in_channels, out_channels: channels of the input and of the output.
        kernel_size: an int or a triple.
        stride, padding, output_padding, dilation: as ``F.conv_transpose3d``.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: only ``'zeros'`` (as torch).
        device, dtype: where and in which dtype the parameters live.
    """

    _dims = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(input, output_size), self.groups,
                                self.dilation)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` input (torch.nn.BatchNorm3d).

    Args:
        num_features: ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: the running statistics' update weight; None: a cumulative average.
        affine: learn a per-channel weight and bias. Default: True.
        track_running_stats: keep running statistics (used in eval). Default: True.
        device: where the parameters and buffers live.
        dtype: parameter dtype (default: the default float dtype).
        bias: learn the bias (with ``affine``). Default: True.
    """

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")
