"""``torch.nn.functional``'s convolution, pooling and batch-norm functions.

Each checks its input as torch does (same error types and texts), normalises its arguments to
int tuples and calls one opaque op (``ops/conv.py``, ``ops/pool.py``, ``ops/batch_norm.py``).
Unbatched input gains a batch dimension around the op, as in torch (``SqueezeBackward1``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops import batch_norm as _bn
from ..ops import conv as _conv_ops
from ..ops import pool as _pool
from ..ops import registry as _registry
from ..ops.dtype_rules import check_norm_parameters
from ..ops.functions import _batched
from ..ops.extras import channels_last as _cl2
from ..ops.extras import channels_last_3d as _cl3
from ..ops.autocast_policy import LOWER, autocast_policy
from ..tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
           "avg_pool2d", "adaptive_avg_pool2d", "batch_norm"]


_CL = {2: _cl2, 3: _cl3}


def _tuple(v: Any, n: int, name: str) -> tuple:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(a) for a in v)
    if len(v) == 1 and n > 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {name}={list(v)}")
    return v


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int, n: int) -> Tensor:
    name = f"conv{n}d"
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got "
            f"input of size: {list(input.shape)}")
    batched = input.ndim == n + 2
    spatial = weight.ndim - 2
    stride = _tuple(stride, spatial, "stride")
    dilation = _tuple(dilation, spatial, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    ksize = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * spatial
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in zip(ksize, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            pads = tuple(pads)
            if any(lo != hi for lo, hi in pads):
                warnings.warn(
                    "Using padding='same' with even kernel lengths and odd dilation may require "
                    "a zero-padded copy of the input be created", stacklevel=3)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _tuple(padding, spatial, "padding"))
        if any(p < 0 for p, _ in pads):
            raise RuntimeError("negative padding is not supported")
    x = input if batched else input.unsqueeze(0)
    c = x.shape[1]
    if weight.shape[1] * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {c} "
            "channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0,"
            f" but got weight of size {list(weight.shape)} instead")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
            f"with {weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    effective = tuple(d * (k - 1) + 1 for k, d in zip(ksize, dilation))
    if any(p < k for p, k in zip(padded, effective)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be greater "
            "than actual input size")
    if any(lo != hi for lo, hi in pads):  # 'same', even kernel: torch pads the extra first
        from ._functional_core import pad

        x = pad(x, tuple(v for lo, hi in reversed(pads) for v in (0, hi - lo)))
        pads = tuple((lo, lo) for lo, _ in pads)
    out = _conv_ops.convolution(x, weight, bias, stride, pads, dilation, groups)
    if batched and n in (2, 3) and (_channels_last(input) or _channels_last(weight)):
        out = out.contiguous(memory_format=_CL[n])  # (torch's output follows that layout)
    return out if batched else out.squeeze(0)


def _channels_last(t: Tensor) -> bool:
    """Whether an eager tensor is laid out channels-last (torch's suggest_memory_format)."""
    if _registry.state.traces:  # (jit and vmap: one layout)
        return False
    data = t._data
    if not isinstance(data, np.ndarray) or data.flags.c_contiguous or data.ndim not in (4, 5):
        return False
    return t.is_contiguous(memory_format=_CL[data.ndim - 2])


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of ``(N, C, L)`` or ``(C, L)`` input.

    Args:
        input: the input.
        weight: ``(out_channels, in_channels / groups, kL)``.
        bias: optional ``(out_channels,)``.
        stride: an int or a 1-tuple.
        padding: an int, a 1-tuple, ``'valid'`` or ``'same'``.
        dilation: an int or a 1-tuple.
        groups: the number of blocked connections from input to output channels.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d convolution (cross-correlation) of ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Args:
        input: the input.
        weight: ``(out_channels, in_channels / groups, kH, kW)``.
        bias: optional ``(out_channels,)``.
        stride: an int or a pair.
        padding: an int, a pair, ``'valid'`` or ``'same'``.
        dilation: an int or a pair.
        groups: the number of blocked connections from input to output channels.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def transposed_size(size: int, k: int, s: int, p: int, op: int, d: int) -> int:
    """The output length of a transposed convolution."""
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,  # noqa: A002
                    padding: Any, output_padding: Any, groups: int, dilation: Any,
                    n: int) -> Tensor:
    name = f"conv_transpose{n}d"
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got "
            f"input of size: {list(input.shape)}")
    batched = input.ndim == n + 2
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    padding = _tuple(padding, n, "padding")
    output_padding = _tuple(output_padding, n, "output_padding")
    if any(v <= 0 for v in stride + dilation):
        raise RuntimeError("non-positive stride is not supported" if any(v <= 0 for v in stride)
                           else "non-positive dilation is not supported")
    if any(v < 0 for v in padding + output_padding):
        raise RuntimeError("negative padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        dims = ("height", "width") if n == 2 else ("width",)
        parts = [f"output_padding_{a}: {v}" for a, v in zip(dims, output_padding)] + \
            [f"stride_{a}: {v}" for a, v in zip(dims, stride)] + \
            [f"dilation_{a}: {v}" for a, v in zip(dims, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    x = input if batched else input.unsqueeze(0)
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
    size = tuple(transposed_size(*a) for a in zip(x.shape[2:], weight.shape[2:], stride,
                                                    padding, output_padding, dilation))
    if any(v <= 0 for v in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))})"
                           f". Calculated output size per channel: "
                           f"({' x '.join(map(str, size))}). Output size is too small")
    # the gradient of a convolution with respect to its input: (N, C_in) -> (N, C_out)
    out = _conv_ops.conv_transpose(x, weight, bias, size, stride=stride,
                                   padding=tuple((q, q) for q in padding), dilation=dilation,
                                   groups=groups)
    return out if batched else out.squeeze(0)


@autocast_policy(LOWER)
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """1-d transposed convolution of ``(N, C_in, L)`` or ``(C_in, L)`` input: the gradient of
    ``conv1d`` with respect to its input.

    Args:
        input: the input.
        weight: ``(in_channels, out_channels / groups, kL)``.
        bias: optional ``(out_channels,)``.
        stride, padding, output_padding, dilation: ints or 1-tuples.
        groups: the number of blocked connections from input to output channels.
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1)


@autocast_policy(LOWER)
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """2-d transposed convolution of ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input: the
    gradient of ``conv2d`` with respect to its input (its node is
    ``ConvolutionBackwardBackward0`` where torch's is ``ConvolutionBackward0``).

    Args:
        input: the input.
        weight: ``(in_channels, out_channels / groups, kH, kW)``.
        bias: optional ``(out_channels,)``.
        stride, padding, output_padding, dilation: ints or pairs.
        groups: the number of blocked connections from input to output channels.
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2)


# ---------------------------------------------------------------- pooling


def _pair(v: Any) -> tuple:
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(a) for a in v)
    return v * 2 if len(v) == 1 else v


def _pool_args(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode, kind):
    k = _pair(kernel_size)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _pair(stride)
    p, d = _pair(padding), _pair(dilation)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for pi, ki, di in zip(p, k, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pi}, "
                f"kernel_size={ki} and dilation={di}")
    if input.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if kind == "max" and 0 in tuple(input.shape[-3:]):  # (an empty batch is fine)
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{list(input.shape)}")
    out = tuple(_pool.pool_out_size(n, ki, si, pi, di, ceil_mode)
                for n, ki, si, pi, di in zip(input.shape[-2:], k, s, p, d))
    if any(o < 1 for o in out):
        c = input.shape[-3]
        raise RuntimeError(
            f"Given input size: ({c}x{input.shape[-2]}x{input.shape[-1]}). Calculated output "
            f"size: ({c}x{out[0]}x{out[1]}). Output size is too small")
    return k, s, p, d


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling; with ``return_indices`` also the flat index of each maximum in its plane.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: the window size (an int or a pair).
        stride: the window stride, ``kernel_size`` by default.
        padding: implicit negative-infinity padding on both sides.
        dilation: the spacing of the window's elements.
        ceil_mode: ceil instead of floor to compute the output size.
        return_indices: also return the indices of the maxima.
    """
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, ceil_mode, "max")
    values, indices = _pool.max_pool2d_with_indices(input, k, s, p, d, bool(ceil_mode))
    return (values, indices) if return_indices else values


def _check_max_pool1d(input: Tensor, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
                      dilation: Any, ceil_mode: bool) -> None:
    """torch's max_pool1d_impl checks, in its order (the indices' path has max_pool2d's)."""
    k = _tuple(kernel_size, 1, "kernel_size")[0]
    st = k if stride is None or stride == [] or stride == () else _tuple(stride, 1, "stride")[0]
    p = _tuple(padding, 1, "padding")[0]
    d = _tuple(dilation, 1, "dilation")[0]
    for what, value, ok in (("kernel_size", k, k > 0), ("stride", st, st > 0)):
        if not ok:
            raise RuntimeError(f"max_pool1d() {what} must be greater than zero, but got {value}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    length = input.shape[-1]
    span = length + 2 * p - d * (k - 1) - 1 + (st - 1 if ceil_mode else 0)
    out = span // st + 1
    if ceil_mode and (out - 1) * st >= length + p:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling of ``(N, C, L)`` or ``(C, L)`` input (a 2-d pooling over height 1)."""
    def one(v):
        return v if v is None else (1, _tuple(v, 1, "kernel_size")[0])
    if input.ndim not in (2, 3) or not return_indices and 0 in tuple(input.shape[-2:]):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got:{list(input.shape)}")
    if not return_indices:  # (torch's max_pool1d_impl: floating only, its own checks)
        _pool.refuse_dtype(input, "max_pool1d_impl")
        _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    out = max_pool2d(input.unsqueeze(-2), one(kernel_size), one(stride),
                     (0, _tuple(padding, 1, "padding")[0]), (1, _tuple(dilation, 1, "dilation")[0]),
                     ceil_mode, True)
    values, indices = out[0].squeeze(-2), out[1].squeeze(-2)
    return (values, indices) if return_indices else values


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-d average pooling.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: the window size (an int or a pair).
        stride: the window stride, ``kernel_size`` by default.
        padding: implicit zero padding on both sides.
        ceil_mode: ceil instead of floor to compute the output size.
        count_include_pad: count the zero padding in the averages' divisor.
        divisor_override: a fixed divisor instead of the window size.
    """
    if input.ndim < 3:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(input.ndim, 1)}, "
            f"{max(input.ndim, 1) - 1}], but got -3)")
    k, s, p, _ = _pool_args(input, kernel_size, stride, padding, 1, ceil_mode, "avg")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    return _pool.avg_pool2d(input, k, s, p, bool(ceil_mode), bool(count_include_pad),
                            divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """2-d average pooling to a fixed ``output_size`` (an int or a pair; None keeps a size)."""
    size = (output_size, output_size) if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    size = tuple(input.shape[-2 + i] if o is None else int(o) for i, o in enumerate(size))
    if size[0] < 0 or size[1] < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{size[0]}, {size[1]}}}")
    if size == (1, 1):  # torch's shortcut: a mean (MeanBackward1)
        return input.mean((-1, -2), keepdim=True)
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    check_nonempty(input, (input.ndim - 2, input.ndim - 1), "adaptive_avg_pool2d")
    return _pool.adaptive_avg_pool2d(input, size)


def check_nonempty(input: Tensor, dims: Any, name: str) -> None:  # noqa: A002
    """torch's refusal of an adaptive pooling whose input is empty along one of ``dims``."""
    for d in dims:
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")


# ---------------------------------------------------------------- batch norm


_BN_STATS_NOT_BATCHED = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap")


def batch_norm(input: Tensor, running_mean: Tensor | None,  # noqa: A002
               running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-05) -> Tensor:
    """Batch normalisation over every dim but dim 1.

    In training the batch statistics normalise, and ``running_mean``/``running_var`` (when
    given) become ``(1 - momentum) * running + momentum * batch`` in place (the unbiased batch
    variance, as torch); in eval the running statistics normalise.

    Args:
        input: ``(N, C, *)``.
        running_mean: ``(C,)`` or None.
        running_var: ``(C,)`` or None.
        weight: the per-channel scale, or None.
        bias: the per-channel shift, or None.
        training: use (and fold in) the batch statistics.
        momentum: the weight of the batch statistics in the running ones.
        eps: added to the variance for stability.
    """
    if input.ndim < 2:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(input.ndim, 1)}, "
            f"{max(input.ndim, 1) - 1}], but got 1)")
    if training:
        per_channel = input.numel() // input.shape[1] if input.shape[1] else 0
        if per_channel == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape!r}")
    elif running_mean is None or running_var is None:
        raise RuntimeError(
            f"running_{'mean' if running_mean is None else 'var'} must be defined in "
            "evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and tuple(t.shape) != (input.shape[1],):
            raise RuntimeError(f"{name} should contain {input.shape[1]} elements not {t.numel()}")
    if not input.dtype.is_floating_point:  # (torch's kernel is floating only)
        _pool.refuse_dtype(input, "batch_norm")
    check_norm_parameters(input, weight, bias, running_mean, running_var)
    if training and _batched(input) and any(
            t is not None and not _batched(t) for t in (running_mean, running_var)):
        raise RuntimeError(_BN_STATS_NOT_BATCHED)  # (torch's refusal, before the update)
    # in training the op reads no running statistic (they are updated in place just below)
    out, mean, var = _bn.native_batch_norm(input, weight, bias,
                                           None if training else running_mean,
                                           None if training else running_var, training, eps)
    if training and (running_mean is not None or running_var is not None):
        n = input.numel() // input.shape[1]
        with no_grad():
            # (momentum may be a 0-d tensor: BatchNorm's cumulative average under jit)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * (n / (n - 1))))
    return out
