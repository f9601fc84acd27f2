"""More of ``torch.nn.functional``, composed of jitgrad ops (differentiable to any order,
traceable by ``jit``): pixel_shuffle, pixel_unshuffle, channel_shuffle, unfold (im2col),
fold (col2im), bilinear, dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout,
and (from ``_functional_extra2``) instance_norm, local_response_norm, the adaptive 1-d and max
poolings, gumbel_softmax and embedding_bag."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.creation import tensor, zeros
from ..tensor import Tensor
from ._functional_core import check_dropout_dtype
from .functional_conv3d import conv3d
from ._functional_extra2 import (adaptive_avg_pool1d, adaptive_max_pool1d,
                                 adaptive_max_pool1d_with_indices, adaptive_max_pool2d,
                                 adaptive_max_pool2d_with_indices, embedding_bag,
                                 gumbel_softmax, instance_norm, local_response_norm)

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "unfold", "fold", "bilinear", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "instance_norm", "local_response_norm",
           "adaptive_avg_pool1d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "gumbel_softmax", "embedding_bag", "conv3d"]


# ---------------------------------------------------------------- shuffles


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """Rearranges ``(*, C * r * r, H, W)`` into ``(*, C, H * r, W * r)``."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """Rearranges ``(*, C, H * r, W * r)`` into ``(*, C * r * r, H, W)``."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """Splits the channels (dim 1) into ``groups`` groups and interleaves them:
    ``(N, g * k, *) -> (N, k * g, *)``."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(input.shape)


native_channel_shuffle = channel_shuffle


# ---------------------------------------------------------------- fold / unfold


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(a) for a in v)


def _blocks(spatial: Any, k: tuple, d: tuple, p: tuple, s: tuple) -> tuple[int, int]:
    return tuple((spatial[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
           stride: Any = 1) -> Tensor:
    """im2col: the sliding ``kernel_size`` blocks of ``(N, C, H, W)`` (or ``(C, H, W)``)
    input as columns, ``(N, C * kh * kw, L)``, ``L`` the number of blocks."""
    if input.ndim not in (3, 4):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(input.ndim, 1)}, "
            f"{max(input.ndim, 1) - 1}], but got 2)" if input.ndim < 3 else
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    blocks = _blocks(x.shape[2:], k, d, p, s)
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={k}, "
            f"dilation={d}, padding={p}, calculated shape of the array of sliding blocks as "
            f"{blocks}, but its components must be at least one.")
    n, c = x.shape[:2]
    if p != (0, 0):
        from ._functional_core import pad

        x = pad(x, (p[1], p[1], p[0], p[0]))
    # (n, c, bh, bw, span_h, span_w) -> the dilated taps -> (n, c, kh, kw, bh, bw)
    x = x.unfold(2, d[0] * (k[0] - 1) + 1, s[0]).unfold(3, d[1] * (k[1] - 1) + 1, s[1])
    x = x[:, :, :blocks[0], :blocks[1], ::d[0], ::d[1]]
    x = x.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], blocks[0] * blocks[1])
    return x if batched else x.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,  # noqa: A002
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """col2im, the adjoint of ``unfold``: sums the columns of ``(N, C * kh * kw, L)`` (or
    ``(C * kh * kw, L)``) input into ``(N, C, *output_size)``, overlapping blocks added."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    out = _pair(output_size)
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    n, ckk, length = x.shape
    if ckk % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={ckk} and "
                           f"kernel_size={k}.")
    blocks = _blocks(out, k, d, p, s)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={out}, kernel_size={k}, dilation={d}, padding={p}, "
            f"stride={s}, expected size of input's dimension 2 to match the calculated number "
            f"of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size(2)={length}.")
    c = ckk // (k[0] * k[1])
    hp, wp = out[0] + 2 * p[0], out[1] + 2 * p[1]
    # the flat position in the padded output of every (tap_h, tap_w, block_h, block_w)
    rows = (np.arange(k[0])[:, None] * d[0] + np.arange(blocks[0])[None, :] * s[0])
    cols = (np.arange(k[1])[:, None] * d[1] + np.arange(blocks[1])[None, :] * s[1])
    flat = (rows[:, None, :, None] * wp + cols[None, :, None, :]).reshape(-1)
    target = zeros((n, c, hp * wp), dtype=x.dtype, device=x.device)
    summed = target.index_add(2, tensor(flat.astype(np.int64), device=x.device),
                              x.reshape(n, c, -1))
    y = summed.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1]]
    return y if batched else y.squeeze(0)


# ---------------------------------------------------------------- bilinear


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    batch = tuple(input1.shape[:-1])
    a = input1.reshape(-1, input1.shape[-1])
    b = input2.reshape(-1, input2.shape[-1])
    # (B, i) @ (i, o * j) -> (B, o, j), times input2 summed over j
    o, i, j = weight.shape
    t = a.matmul(weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    products = t * b.unsqueeze(1)
    y = products.sum(-1, dtype=products.dtype)  # (integers keep their dtype, as torch's)
    if bias is not None:
        y = y + bias
    return y.reshape(*batch, o)


# ---------------------------------------------------------------- dropouts


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, p: float, feature: bool) -> Tensor:  # noqa: A002
    """A float mask of ``input``'s dtype, 1 with probability ``1 - p``; one draw per
    ``(N, C)`` channel when ``feature``."""
    from ..random import rand, uniforms_like

    if not feature:
        return (uniforms_like(input) < 1.0 - p).to(input.dtype)
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return (rand(shape, dtype=dtypes.float64, device=input.device) < 1.0 - p).to(input.dtype)


def _feature_dropout(input: Tensor, p: float, training: bool,  # noqa: A002
                     inplace: bool) -> Tensor:
    if not training or p == 0 or input.numel() == 0:
        return input
    if p != 1:
        check_dropout_dtype(input)
    noise = _keep_mask(input, p, True)
    noise = noise * 0.0 if p == 1 else noise / (1.0 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of ``(N, C, L)`` (or ``(C, L)``) input with probability ``p``,
    scaling the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if input.ndim == 3:
        return _feature_dropout(input, p, training, inplace)
    return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0) if not inplace \
        else input.copy_(_feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0))


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of ``(N, C, H, W)`` input with probability ``p`` (3-D input is
    taken as ``(N, C, L)``, with torch's warning)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with
    probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if input.ndim == 5:
        return _feature_dropout(input, p, training, inplace)
    out = _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return input.copy_(out) if inplace else out


_SELU_ALPHA = 1.7580993408473766  # -selu's negative saturation (scale * alpha)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool,  # noqa: A002
                   feature: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        out = input * zeros((), dtype=input.dtype, device=input.device)
        return input.copy_(out) if inplace else out
    check_dropout_dtype(input, alpha=True)
    keep = _keep_mask(input, p, feature)
    a = 1.0 / np.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    out = input * (keep * a) + b
    return input.copy_(out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements become selu's saturation value and the
    result is rescaled so that mean and variance are kept (note ``training=False`` by
    default, as torch's)."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels (one draw per ``(N, C)``)."""
    return _alpha_dropout(input, p, training, inplace, True)
