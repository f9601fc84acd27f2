"""``torch.nn.functional.conv3d`` composed of 2-d convolutions: one ``conv2d`` per tap of the
kernel's depth over the strided depth slices (jitgrad's convolution op is 1-d and 2-d), so it
is differentiable to any order and traceable by ``jit``; the nodes are the pieces'. The result
is contiguous, as torch's kernel writes it, and float16/bfloat16 taps sum in float32, rounded
once."""

from __future__ import annotations

import warnings
from typing import Any

from .. import dtypes
from ..ops import memory_formats
from ..ops.conv import check_bias_dtype, check_conv_dtype
from ..tensor import Tensor
from ._functional_core import pad
from .functional_conv import conv2d

__all__ = ["conv3d"]


def _triple(v: Any, name: str) -> tuple[int, int, int]:
    if isinstance(v, int):
        return (v, v, v)
    v = tuple(int(a) for a in v)
    if len(v) == 1:
        return v * 3
    if len(v) != 3:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of 3 values "
                           f"to match the convolution dimensions, but got {name}={list(v)}")
    return v


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d convolution (cross-correlation) of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Args:
        input: the input.
        weight: ``(out_channels, in_channels / groups, kD, kH, kW)``.
        bias: optional ``(out_channels,)``.
        stride: an int or a triple.
        padding: an int, a triple, ``'valid'`` or ``'same'``.
        dilation: an int or a triple.
        groups: the number of blocked connections from input to output channels.
    """
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to conv3d, but got "
                           f"input of size: {list(input.shape)}")
    check_bias_dtype(input, bias)  # (torch's first check)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    s, d = _triple(stride, "stride"), _triple(dilation, "dilation")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("non-positive dilation is not supported")
    check_conv_dtype(x, weight, d, False)  # (3-d: torch's slow_conv3d kernel names)
    ksize = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * 3
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = tuple((dd * (k - 1) // 2, dd * (k - 1) - dd * (k - 1) // 2)
                         for k, dd in zip(ksize, d))
            if any(lo != hi for lo, hi in pads):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation "
                              "may require a zero-padded copy of the input be created",
                              stacklevel=2)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _triple(padding, "padding"))
        if any(p < 0 for p, _ in pads):
            raise RuntimeError("negative padding is not supported")
    n, c = x.shape[:2]
    if weight.shape[1] * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {c} "
            "channels instead")
    padded = tuple(v + lo + hi for v, (lo, hi) in zip(x.shape[2:], pads))
    effective = tuple(dd * (k - 1) + 1 for k, dd in zip(ksize, d))
    if any(p < k for p, k in zip(padded, effective)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be greater "
            "than actual input size")
    if any(lo or hi for lo, hi in pads):
        x = pad(x, (pads[2][0], pads[2][1], pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    depth, h, w = x.shape[2:]
    d_out = (depth - effective[0]) // s[0] + 1
    x, weight, bias, half = in_float32(x, weight, bias)
    out = None
    for k in range(ksize[0]):
        start = k * d[0]
        sl = x[:, :, start:start + s[0] * (d_out - 1) + 1:s[0]]
        sl = sl.permute(0, 2, 1, 3, 4).reshape(n * d_out, c, h, w)
        y = conv2d(sl, weight[:, :, k], None, s[1:], 0, d[1:], groups)
        out = y if out is None else out + y
    out = out.reshape(n, d_out, *out.shape[1:]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = rounded_contiguous(out, half, input)
    return out if batched else out.squeeze(0)


def in_float32(x: Tensor, weight: Tensor, bias: Tensor | None) -> tuple:
    """float16/bfloat16 operands as float32, so that the depth taps' sum rounds once (torch's
    kernel accumulates in float), and the dtype to round to (None for other dtypes)."""
    half = x.dtype if x.dtype in (dtypes.float16, dtypes.bfloat16) else None
    if half is None:
        return x, weight, bias, None
    return x.float(), weight.float(), None if bias is None else bias.float(), half


def rounded_contiguous(out: Tensor, half: Any, input: Tensor) -> Tensor:  # noqa: A002
    """The taps' sum laid out as torch's kernel writes it (contiguous, or channels-last when
    ``input`` is: the taps' permuted layout would refuse ``view``), rounded to ``half`` when the
    operands were."""
    last = memory_formats.channels_last_3d
    fmt = last if input.ndim == 5 and not input.is_contiguous() and \
        input.is_contiguous(memory_format=last) else memory_formats.contiguous_format
    out = out.contiguous(memory_format=fmt)
    return out if half is None else out.to(half)
