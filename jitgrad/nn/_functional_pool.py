"""``torch.nn.functional``'s 1-d and 3-d pooling, the ``*_with_indices`` forms, max-unpooling
and power-average pooling.

The 3-d poolings run the 2-d pooling ops over ``(h, w)`` (one plane per depth), then gather
each depth window (``index_select``) and take its ``max`` (the argmax picks the 2-d op's index,
``gather``) or masked ``sum``; the adaptive max gathers every tap of its windows. So they are
differentiable to any order and traceable by ``jit``. A depth tap that falls in the padding
gathers the window's first real position instead (never changing a max or its index); average
pooling masks such taps to zero. The 1-d forms pool over a height-1 2-d plane, as torch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ops import pool as _pool
from ..ops.creation import tensor, zeros
from ..ops.memory_formats import follow_channels_last
from ..tensor import Tensor
from . import functional_conv as _fc
from ._functional_core import relu

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _ntuple(v: Any, n: int) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(a) for a in v)
    return v * n if len(v) == 1 and n > 1 else v


def _taps(length: int, k: int, s: int, p: int, d: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """The input position of each window tap ``(out, k)`` (a tap in the padding takes its
    window's first real position) and the mask of the real taps."""
    pos = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
    real = (pos >= 0) & (pos < length)
    first = np.where(real.any(1), pos[np.arange(out), real.argmax(1)], 0)
    return np.where(real, pos, first[:, None]), real


def _depth_max(v2: Tensor, i2: Tensor, taps: np.ndarray, shape: tuple) -> tuple:
    """The max over each depth window of the 2-d pooling's ``(n, c * depth, oh, ow)`` values
    ``v2`` (flat ``h * w`` indices ``i2``); ``taps`` ``(od, kd)`` are the windows' depths.
    Returns the values and the flat ``(d * h + hh) * w + ww`` indices ``(n, c, od, oh, ow)``:
    the first maximum in ``(d, h, w)`` order, as torch's."""
    n, c, depth, h, w = shape
    oh, ow = v2.shape[-2:]
    pick = tensor(taps.reshape(-1).astype(np.int64), device=v2.device)
    windows = (n, c, taps.shape[0], taps.shape[1], oh, ow)
    values, local = v2.reshape(n, c, depth, oh, ow).index_select(2, pick).reshape(windows).max(3)
    local = local.unsqueeze(3)
    planes = i2.reshape(n, c, depth, oh, ow).index_select(2, pick).reshape(windows).gather(3, local)
    depths = tensor(taps.astype(np.int64), device=v2.device).reshape(1, 1, *taps.shape, 1, 1)
    indices = (depths.expand(*windows).gather(3, local) * (h * w) + planes).squeeze(3)
    return values, indices


def _pool_geometry(input: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any,
                   dilation: Any, ceil_mode: bool, kind: str) -> tuple:
    k = _ntuple(kernel_size, nd)
    empty_stride = stride is None or (not isinstance(stride, int) and len(stride) == 0)
    s = k if empty_stride else _ntuple(stride, nd)
    p, d = _ntuple(padding, nd), _ntuple(dilation, nd)
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for pi, ki, di in zip(p, k, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pi}, "
                f"kernel_size={ki} and dilation={di}")
    if input.ndim not in (nd + 1, nd + 2) or input.numel() == 0 and kind == "max":
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for "
                           "input")
    spatial = tuple(input.shape[-nd:])
    out = tuple(_pool.pool_out_size(*a, bool(ceil_mode)) for a in zip(spatial, k, s, p, d))
    if any(o < 1 for o in out):
        c = input.shape[-nd - 1]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (c,) + spatial))}). Calculated output size:"
            f" ({'x'.join(map(str, (c,) + out))}). Output size is too small")
    return k, s, p, d, spatial, out


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """3-d max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input, with the flat
    ``(d * H + h) * W + w`` position of each maximum in its volume.

    Args:
        input: the input.
        kernel_size: the window size (an int or a triple).
        stride: the window stride, ``kernel_size`` by default.
        padding: implicit negative-infinity padding on both sides.
        dilation: the spacing of the window's elements.
        ceil_mode: ceil instead of floor to compute the output size.
        return_indices: ignored (the indices are always returned), as torch.
    """
    k, s, p, d, spatial, out = _pool_geometry(input, 3, kernel_size, stride, padding, dilation,
                                              ceil_mode, "max")
    _pool.refuse_dtype(input, "max_pool3d", _pool.ALL_INTEGERS)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    n, c, depth, h, w = x.shape
    # the (h, w) windows by the 2-d op, one plane per depth; then each depth window's max
    v2, i2 = _pool.max_pool2d_with_indices(x.reshape(n, c * depth, h, w), k[1:], s[1:], p[1:],
                                           d[1:], bool(ceil_mode))
    taps = _taps(depth, k[0], s[0], p[0], d[0], out[0])[0]
    values, indices = _depth_max(v2, i2, taps, tuple(x.shape))
    if batched:
        return follow_channels_last(values, input), follow_channels_last(indices, input)
    return values.squeeze(0), indices.squeeze(0)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """3-d max pooling; with ``return_indices`` also the flat positions of the maxima (see
    ``max_pool3d_with_indices``)."""
    out = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """1-d max pooling with the positions of the maxima (``F.max_pool1d`` with indices)."""
    return _fc.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """2-d max pooling with the flat positions of the maxima (``F.max_pool2d`` with
    indices)."""
    return _fc.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-d average pooling of ``(N, C, L)`` or ``(C, L)`` input.

    Args:
        input: the input.
        kernel_size: the window length (an int or a 1-tuple).
        stride: the window stride, ``kernel_size`` by default.
        padding: implicit zero padding on both sides.
        ceil_mode: ceil instead of floor to compute the output size.
        count_include_pad: count the zero padding in the averages' divisor.
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for avg_pool1d)")
    k = _ntuple(kernel_size, 1)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _ntuple(stride, 1)
    return _fc.avg_pool2d(input.unsqueeze(-2), (1, k[0]), (1, s[0]),
                          (0, _ntuple(padding, 1)[0]), ceil_mode, count_include_pad).squeeze(-2)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """3-d average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (summed one dim at
    a time over the gathered window taps).

    Args:
        input: the input.
        kernel_size: the window size (an int or a triple).
        stride: the window stride, ``kernel_size`` by default.
        padding: implicit zero padding on both sides.
        ceil_mode: ceil instead of floor to compute the output size.
        count_include_pad: count the zero padding in the averages' divisor.
        divisor_override: a fixed divisor instead of the window size.
    """
    if input.ndim in (4, 5) and input.numel():
        sp = input.shape[-3:]
        kk = _ntuple(kernel_size, 3)
        if any(a < b for a, b in zip(sp, kk)) and not any(_ntuple(padding, 3)):
            raise RuntimeError(f"input image (T: {sp[0]} H: {sp[1]} W: {sp[2]}) smaller than "
                               f"kernel size (kT: {kk[0]} kH: {kk[1]} kW: {kk[2]})")
    k, s, p, _, spatial, out = _pool_geometry(input, 3, kernel_size, stride, padding, 1,
                                              ceil_mode, "avg")
    _pool.refuse_dtype(input, "avg_pool3d_out_frame", ("int64",), halves=False)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    if not x.dtype.is_floating_point:  # int64: summed and divided exactly, then truncated
        from .. import dtypes

        x = x.to(dtypes.float64)
    n, c, depth, h, w = x.shape
    od, oh, ow = out
    # the (h, w) windows by the 2-d op (averages, or sums under divisor_override), then the
    # depth windows' masked sums: the divisors are products of per-dim counts, as torch's
    x = _pool.avg_pool2d(x.reshape(n, c * depth, h, w), k[1:], s[1:], p[1:], bool(ceil_mode),
                         bool(count_include_pad), 1 if divisor_override is not None else None)
    pos, real = _taps(depth, k[0], s[0], p[0], 1, od)
    x = x.reshape(n, c, depth, oh, ow).index_select(
        2, tensor(pos.reshape(-1).astype(np.int64), device=x.device))
    mask = tensor(real.astype(np.float64), dtype=x.dtype, device=x.device)
    x = (x.reshape(n, c, od, k[0], oh, ow) * mask.reshape(od, k[0], 1, 1)).sum(3)
    if divisor_override is not None:
        x = x / divisor_override
    else:
        start = np.arange(od) * s[0] - p[0]
        end = np.minimum(start + k[0], depth + p[0])
        count = end - start if count_include_pad else \
            np.minimum(end, depth) - np.maximum(start, 0)
        x = x / tensor(count.astype(np.float64), dtype=x.dtype, device=x.device).reshape(-1, 1, 1)
    if input.dtype.name == "int64":  # (torch's kernel: each window's sum // divisor, truncated)
        x = x.trunc().to(input.dtype)
    return x if batched else x.squeeze(0)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """3-d average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input to
    ``output_size`` (an int or a triple; None keeps that dim's size), torch's adaptive windows.
    """
    if input.ndim not in (4, 5):
        raise RuntimeError(
            f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {list(input.shape)}")
    size = (output_size,) * 3 if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    size = tuple(input.shape[-3 + i] if o is None else int(o) for i, o in enumerate(size))
    if size == (1, 1, 1):  # torch's shortcut: a mean
        return input.mean((-1, -2, -3), keepdim=True)
    _pool.refuse_dtype(input, "adaptive_avg_pool3d_cpu")
    x = input
    for i, o in enumerate(size):  # one dim at a time: a matrix of the windows' weights
        n = x.shape[-3 + i]
        mat = _pool._adaptive_matrix(n, o, np.float64)
        w = tensor(mat, dtype=x.dtype, device=x.device)  # (o, n)
        x = (x.movedim(-3 + i, -1) @ w.t()).movedim(-1, -3 + i)
    return x


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """3-d max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input to ``output_size``,
    with the flat ``(d * H + h) * W + w`` positions of the maxima."""
    from ._functional_extra2 import _windows, adaptive_max_pool2d_with_indices

    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    _pool.refuse_dtype(input, "adaptive_max_pool3d_cpu")
    size = (output_size,) * 3 if isinstance(output_size, int) or output_size is None \
        else tuple(output_size)
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    spatial = tuple(x.shape[2:])
    size = tuple(spatial[i] if o is None else int(o) for i, o in enumerate(size))
    if any(o <= 0 for o in size):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected output_size to be greater than 0, "
                           f"but got {list(size)}")
    n, c, depth, h, w = x.shape
    # the (h, w) windows by the 2-d adaptive pooling, then each depth window's max
    v2, i2 = adaptive_max_pool2d_with_indices(x.reshape(n, c * depth, h, w), size[1:])
    values, indices = _depth_max(v2, i2, _windows(depth, size[0])[0], tuple(x.shape))
    return (values, indices) if batched else (values.squeeze(0), indices.squeeze(0))


def adaptive_max_pool3d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """3-d max pooling to ``output_size``; with ``return_indices`` also the positions."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


# ---------------------------------------------------------------- max unpooling


def _unpool_output_size(input: Tensor, k: tuple, s: tuple, p: tuple,
                        output_size: Any) -> list[int]:
    nd = len(k)
    default = [(input.shape[-nd + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)]
    if output_size is None:
        ret = default
    else:
        output_size = [int(v) for v in output_size]
        if len(output_size) == nd + 2:
            output_size = output_size[2:]
        if len(output_size) != nd:
            raise ValueError(
                f"output_size should be a sequence containing {nd} or {nd + 2} elements, but "
                f"it has a length of '{len(output_size)}'")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < output_size[i] < hi:
                raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {i} must be '
                                 f"between {lo} and {hi})")
        ret = output_size
    for i in range(nd):
        if ret[i] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{i}]={ret[i]}")
    return ret


def _max_unpool(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any, nd: int) -> Tensor:
    from .. import dtypes

    k = _ntuple(kernel_size, nd)
    s = k if stride is None else _ntuple(stride, nd)
    p = _ntuple(padding, nd)
    size = _unpool_output_size(input, k, s, p, output_size)
    if indices.dtype != dtypes.int64:
        name = {dtypes.float32: "Float", dtypes.float64: "Double", dtypes.int32: "Int"}.get(
            indices.dtype, str(indices.dtype))
        raise RuntimeError(f"elements in indices should be type int64 but got: {name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.ndim} dimensions.")
    volume = int(np.prod(size, dtype=np.int64))
    lead = tuple(input.shape[:-nd])
    flat_in = input.reshape(*lead, -1)
    flat_idx = indices.reshape(*lead, -1)
    from ..ops.registry import state

    if flat_idx.numel() and not state.traces and flat_idx._trace is None:  # (eager: values)
        lo, hi = int(flat_idx.min().item()), int(flat_idx.max().item())
        if lo < 0 or hi >= volume:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(map(str, size))})")
    out = zeros(*lead, volume, dtype=input.dtype, device=input.device)
    out = out.scatter(-1, flat_idx, flat_in)
    return out.reshape(*lead, *size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """A partial inverse of ``max_pool1d``: the values at their ``indices``, zeros elsewhere.

    Args:
        input: the pooled values ``(N, C, L_in)`` or ``(C, L_in)``.
        indices: the positions ``max_pool1d`` returned.
        kernel_size, stride, padding: those of the pooling (stride defaults to kernel_size).
        output_size: the output's size (its last 1 or 3 entries), default the pooling's input.
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """A partial inverse of ``max_pool2d``: the values at their flat ``indices``, zeros
    elsewhere (see ``max_unpool1d`` for the arguments)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any,  # noqa: A002
                 stride: Any = None, padding: Any = 0, output_size: Any = None) -> Tensor:
    """A partial inverse of ``max_pool3d``: the values at their flat ``indices``, zeros
    elsewhere (see ``max_unpool1d`` for the arguments)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ---------------------------------------------------------------- power-average pooling


def _lp_finish(out: Tensor, norm_type: float, volume: int) -> Tensor:
    return (out.sign() * relu(out.abs())).mul(volume).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
              stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """1-d power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        norm_type: the power ``p`` (``inf`` / ``-inf``: max / min pooling of ``|x|``).
        kernel_size: the window length.
        stride: the window stride, ``kernel_size`` by default.
        ceil_mode: ceil instead of floor to compute the output size.
    """
    if norm_type == math.inf:
        return _fc.max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -_fc.max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, _ntuple(kernel_size, 1)[0])


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
              stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling (see ``lp_pool1d``); ``input`` is ``(N, C, H, W)`` or
    ``(C, H, W)``."""
    kh, kw = _ntuple(kernel_size, 2)
    if norm_type == math.inf:
        return _fc.max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -_fc.max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = _fc.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any,  # noqa: A002
              stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """3-d power-average pooling (see ``lp_pool1d``); ``input`` is ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``."""
    kd, kh, kw = _ntuple(kernel_size, 3)
    if norm_type == math.inf:
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)
