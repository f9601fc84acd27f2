"""``torch.nn.functional.conv_transpose3d`` composed of 2-d transposed convolutions: one
``conv_transpose2d`` per tap of the kernel's depth over every input depth slice, each placed
``stride`` apart at its tap's offset (zeros interleaved by ``stack``/``reshape``, shifted by
``pad``) and summed (in float32 for half operands, as ``conv3d``), then cropped by ``padding``.
Differentiable to any order and traceable by
``jit``; the nodes are the pieces'. And ``conv_tbc``, the 1-d convolution of ``(time,
batch, channels)`` sequences, as ``conv1d`` of the transposed operands."""

from __future__ import annotations

from typing import Any

from ..ops.conv import check_conv_dtype
from ..ops.creation import zeros
from ..ops.movement import cat
from ..tensor import Tensor
from ._functional_core import pad
from .functional_conv import _tuple, conv1d, conv_transpose2d, transposed_size
from .functional_conv3d import in_float32, rounded_contiguous

__all__ = ["conv_transpose3d", "conv_tbc"]


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """3-d transposed convolution of ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` input: the
    gradient of ``conv3d`` with respect to its input.

    Args:
        input: the input.
        weight: ``(in_channels, out_channels / groups, kD, kH, kW)``.
        bias: optional ``(out_channels,)``.
        stride, padding, output_padding, dilation: ints or triples.
        groups: the number of blocked connections from input to output channels.
    """
    if input.ndim not in (4, 5):
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got "
            f"input of size: {list(input.shape)}")
    batched = input.ndim == 5
    s, d = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
    p, op = _tuple(padding, 3, "padding"), _tuple(output_padding, 3, "output_padding")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("non-positive dilation is not supported")
    check_conv_dtype(input, weight, d, True)  # (torch's slow_conv_transpose3d names)
    if any(v < 0 for v in p + op):
        raise RuntimeError("negative padding is not supported")
    if any(o >= st and o >= dd for o, st, dd in zip(op, s, d)):
        dims = ("depth", "height", "width")
        parts = [f"output_padding_{a}: {v}" for a, v in zip(dims, op)] + \
            [f"stride_{a}: {v}" for a, v in zip(dims, s)] + \
            [f"dilation_{a}: {v}" for a, v in zip(dims, d)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    x = input if batched else input.unsqueeze(0)
    if weight.ndim != 5:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.shape[0] != x.shape[1]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} "
            "channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0,"
            f" but got weight of size {list(weight.shape)} instead")
    out_channels = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of size "
            f"{list(bias.shape)} instead")
    n, c, depth, h, w = x.shape
    kd = weight.shape[2]
    size = tuple(transposed_size(*a) for a in zip((depth, h, w), weight.shape[2:], s, p, op, d))
    if any(v <= 0 for v in size):
        raise RuntimeError(f"Given input size per channel: ({depth} x {h} x {w}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, size))}). Output "
                           "size is too small")
    full = (depth - 1) * s[0] + d[0] * (kd - 1) + 1 + op[0]  # before cropping the padding
    x, weight, bias, half = in_float32(x, weight, bias)
    slices = x.permute(0, 2, 1, 3, 4).reshape(n * depth, c, h, w)
    out = None
    for k in range(kd):
        y = conv_transpose2d(slices, weight[:, :, k], None, s[1:], p[1:], op[1:], groups, d[1:])
        y = y.reshape(n, depth, *y.shape[1:])  # (n, depth, c_out, ho, wo)
        if s[0] > 1:  # interleave stride - 1 zero slices: positions i * stride
            y = y.unsqueeze(2)
            gap = zeros(*y.shape[:2], s[0] - 1, *y.shape[3:], dtype=y.dtype, device=y.device)
            y = cat([y, gap], 2)
            y = y.reshape(n, depth * s[0], *y.shape[3:])[:, :(depth - 1) * s[0] + 1]
        lo = k * d[0]
        hi = full - lo - y.shape[1]
        y = pad(y.movedim(1, -1), (lo, hi)).movedim(-1, 1)
        out = y if out is None else out + y
    out = out[:, p[0]:p[0] + size[0]].permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = rounded_contiguous(out, half, input)
    return out if batched else out.squeeze(0)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor,  # noqa: A002
             pad: int = 0) -> Tensor:
    """Applies a 1-dimensional sequence convolution over an input sequence.

    Input and output dimensions are (Time, Batch, Channels) - hence TBC.

    Args:
        input: ``(time, batch, in_channels)``.
        weight: ``(kernel_width, in_channels, out_channels)``.
        bias: ``(out_channels,)``.
        pad: the time steps of zeros added at each end (negative: cropped, as torch).

    Returns:
        ``(time + 2 * pad - kernel_width + 1, batch, out_channels)``: ``F.conv1d`` of the
        transposed operands.
    """
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1 or bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    x = input if pad >= 0 else input[-pad:input.shape[0] + pad]
    out = conv1d(x.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, max(pad, 0))
    return out.permute(2, 0, 1)
