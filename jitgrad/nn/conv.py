"""Convolution layers: Conv1d and Conv2d, with torch's arguments, initialization and repr."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..ops.creation import empty
from ..tensor import Tensor
from . import functional_conv as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]


def _ntuple(v: Any, n: int) -> tuple:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    """The parameters, checks and repr shared by Conv1d and Conv2d."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride, dilation = _ntuple(stride, n), _ntuple(dilation, n)
        if isinstance(padding, str):
            valid_padding_strings = {"same", "valid"}  # (torch prints this set)
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of "
                    f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n)
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}  # (as torch)
        if padding_mode not in valid_padding_modes:
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got "
                f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = self._transposed
        self.output_padding = (0,) * n
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):  # torch's (left, right) pairs of the last dim first
            pairs = [(0, 0)] * n
            if padding == "same":
                pairs = [(dl * (k - 1) // 2, dl * (k - 1) - dl * (k - 1) // 2)
                         for dl, k in zip(dilation, _ntuple(kernel_size, n))]
            self._reversed_padding_repeated_twice = [v for pr in reversed(pairs) for v in pr]
        else:
            self._reversed_padding_repeated_twice = [v for p in reversed(padding) for v in (p, p)]
        shape = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(empty(shape + self.kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty((out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws weight and bias with torch's default initialization (kaiming uniform)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _mode_padded(self, input: Tensor) -> tuple[Tensor, Any]:  # noqa: A002
        """The input padded by ``padding_mode`` (then the convolution pads nothing), or the
        input and ``padding`` for ``'zeros'``."""
        if self.padding_mode == "zeros":
            return input, self.padding
        from ._functional_core import pad

        return pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class Conv1d(_ConvNd):
    """1-d convolution over ``(N, C_in, L)`` or ``(C_in, L)`` input (torch.nn.Conv1d).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: the kernel length.
        stride: the stride. Default: 1.
        padding: an int, a 1-tuple, ``'valid'`` or ``'same'``. Default: 0.
        dilation: the spacing of the kernel's elements. Default: 1.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
    """

    _dims = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor,  # noqa: A002
                      bias: Tensor | None) -> Tensor:
        input, padding = self._mode_padded(input)
        return F.conv1d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-d convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input (torch.nn.Conv2d).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: an int or a pair.
        stride: an int or a pair. Default: 1.
        padding: an int, a pair, ``'valid'`` or ``'same'``. Default: 0.
        dilation: the spacing of the kernel's elements. Default: 1.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
    """

    _dims = 2

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor,  # noqa: A002
                      bias: Tensor | None) -> Tensor:
        input, padding = self._mode_padded(input)
        return F.conv2d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """The transposed layers: weight ``(in_channels, out_channels / groups, *kernel_size)``,
    ``output_padding``, and ``forward(input, output_size=None)``."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        if isinstance(padding, str):
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}" if padding_mode != "zeros" else
                             f"padding={padding!r} is not supported for {type(self).__name__}")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        self.output_padding = _ntuple(output_padding, self._dims)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:  # noqa: A002
        if output_size is None:
            return self.output_padding
        n = self._dims
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {n + 2} elements (got {len(list(output_size))})")
        spatial = tuple(input.shape[-n:])
        smallest = [F.transposed_size(i, k, s, p, 0, d) for i, k, s, p, d in zip(
            spatial, self.kernel_size, self.stride, self.padding, self.dilation)]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= v <= hi for v, lo, hi in zip(size, smallest, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                             f"range from "
                             f"{smallest} to {largest} (for an input of "
                             f"jitgrad.Size({list(spatial)}))")
        return tuple(v - lo for v, lo in zip(size, smallest))


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over ``(N, C_in, L)`` or ``(C_in, L)`` input
    (torch.nn.ConvTranspose1d): the gradient of a ``Conv1d`` with respect to its input.

    Args:
        in_channels, out_channels: channels of the input and of the output.
        kernel_size: the kernel length.
        stride, padding, output_padding, dilation: as ``F.conv_transpose1d``.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: only ``'zeros'`` (as torch).
        device, dtype: where and in which dtype the parameters live.
    """

    _dims = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input
    (torch.nn.ConvTranspose2d): the gradient of a ``Conv2d`` with respect to its input.

    Args:
        in_channels, out_channels: channels of the input and of the output.
        kernel_size: an int or a pair.
        stride, padding, output_padding, dilation: as ``F.conv_transpose2d``.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: only ``'zeros'`` (as torch).
        device, dtype: where and in which dtype the parameters live.
    """

    _dims = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class Conv3d(_ConvNd):
    """3-d convolution over ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` input
    (torch.nn.Conv3d; computed as 2-d convolutions per depth tap, see ``F.conv3d``).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: an int or a triple.
        stride: an int or a triple. Default: 1.
        padding: an int, a triple, ``'valid'`` or ``'same'``. Default: 0.
        dilation: the spacing of the kernel's elements. Default: 1.
        groups: blocked connections from input to output channels. Default: 1.
        bias: whether to learn a bias. Default: True.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
        device: only ``None``/``"cpu"``.
        dtype: parameter dtype (default: the default float dtype).
    """

    _dims = 3

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor,  # noqa: A002
                      bias: Tensor | None) -> Tensor:
        from .functional_conv3d import conv3d

        input, padding = self._mode_padded(input)
        return conv3d(input, weight, bias, self.stride, padding, self.dilation, self.groups)
