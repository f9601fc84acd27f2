"""2-d pooling as opaque ops over strided window views: max, average and adaptive average.

* ``max_pool2d`` returns (values, flat indices into each input plane), torch's
  ``MaxPool2DWithIndicesBackward0``; its VJP scatters the gradient to the indices (an op whose
  own VJP is a gather), so it differentiates to any order.
* ``avg_pool2d`` and ``adaptive_avg_pool2d`` are linear; each has a ``*_backward`` op (its
  adjoint, a col2im) whose VJP is the forward op again.

All of them take ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input. Params are int pairs. Max
pooling and its scatter run as Numba kernels (``ops/nn_kernels.py``) for float32 and float64,
the NumPy code for other dtypes; either picks torch's index: the first largest value of a
window, but the last NaN.
"""

from __future__ import annotations

import numpy as np

from . import nn_kernels
from .memory_formats import keeps_channels_last
from .registry import LINEAR, OPAQUE, apply, defop


def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: the output length along one dimension."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _out_hw(shape, kernel_size, stride, padding, dilation, ceil_mode):
    return tuple(pool_out_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in
                 zip(shape[-2:], kernel_size, stride, padding, dilation))


def _windows(x, kernel_size, stride, padding, dilation, out_hw, fill):
    """A view ``(..., Ho, Wo, kh, kw)`` of ``x`` padded with ``fill`` (and on the far side as
    far as ceil_mode's last window reaches)."""
    pads = []
    for n, k, s, p, d, o in zip(x.shape[-2:], kernel_size, stride, padding, dilation, out_hw):
        need = (o - 1) * s + d * (k - 1) + 1
        pads.append((p, max(0, need - n - p)))
    if any(lo or hi for lo, hi in pads):
        x = np.pad(x, ((0, 0),) * (x.ndim - 2) + tuple(pads), constant_values=fill)
    *lead, sh, sw = x.strides
    return np.lib.stride_tricks.as_strided(
        x, x.shape[:-2] + tuple(out_hw) + tuple(kernel_size),
        tuple(lead) + (sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1]),
        writeable=False)


# ---------------------------------------------------------------- max


def _max_pool_impl(x, kernel_size, stride, padding, dilation, ceil_mode):
    out_hw = _out_hw(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    if nn_kernels.usable(x) and x.size:
        planes = np.ascontiguousarray(x).reshape((-1,) + x.shape[-2:])
        out = np.empty((planes.shape[0],) + out_hw, dtype=x.dtype)
        idx = np.empty(out.shape, dtype=np.int64)
        if (kernel_size, stride, padding, dilation) == ((2, 2), (2, 2), (0, 0), (1, 1)) and \
                2 * out_hw[0] <= x.shape[-2] and 2 * out_hw[1] <= x.shape[-1]:  # (ceil_mode)
            nn_kernels.kernel("max_pool_2x2")(planes, out, idx)
        else:
            nn_kernels.kernel("max_pool")(planes, out, idx, *kernel_size, *stride, *padding,
                                          *dilation)
        shape = x.shape[:-2] + out_hw
        return out.reshape(shape), idx.reshape(shape)
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    win = _windows(x, kernel_size, stride, padding, dilation, out_hw, fill)
    # (other dtypes) a few passes per kernel position, each vectorised over the whole output:
    # the maximum (NaN propagates, as in torch), then the position holding it
    kh, kw = kernel_size
    n_k = kh * kw
    best = win[..., 0, 0]
    for k in range(1, n_k):
        best = np.maximum(best, win[..., k // kw, k % kw])
    best = np.ascontiguousarray(best) if n_k > 1 else best.copy()  # never a view of x
    arg = np.zeros(best.shape, dtype=np.int64)
    for k in range(n_k - 1, -1, -1):  # the first largest value (the last write wins) ...
        arg = np.where(win[..., k // kw, k % kw] == best, k, arg)
    if x.dtype.kind == "f":  # ... but the last NaN, as torch
        for k in range(n_k):
            arg = np.where(np.isnan(win[..., k // kw, k % kw]), k, arg)
    w = x.shape[-1]
    offsets = np.array([(k // kw) * dilation[0] * w + (k % kw) * dilation[1]
                        for k in range(kh * kw)], dtype=np.int64)
    base = ((np.arange(out_hw[0]) * stride[0] - padding[0])[:, None] * w +
            (np.arange(out_hw[1]) * stride[1] - padding[1]))
    return best, base + offsets[arg]


def _max_pool_backward_impl(g, indices, input_size):
    """Sums ``g`` into each plane at ``indices`` (one bincount over all planes)."""
    h, w = input_size
    planes = int(np.prod(g.shape[:-2], dtype=np.int64))
    per_plane = g.shape[-2] * g.shape[-1]  # (not -1: a batch of 0 planes)
    if nn_kernels.usable(g):
        out = np.zeros((planes, h * w), dtype=g.dtype)
        nn_kernels.kernel("max_pool_backward")(
            np.ascontiguousarray(g).reshape(planes, per_plane),
            np.ascontiguousarray(indices).reshape(planes, per_plane), out)
        return out.reshape(g.shape[:-2] + (h, w))
    flat = (indices.reshape(planes, per_plane) + (np.arange(planes) * (h * w))[:, None]).ravel()
    out = np.bincount(flat, weights=g.reshape(-1), minlength=planes * h * w)
    return out.astype(g.dtype, copy=False).reshape(g.shape[:-2] + (h, w))


def _gather_at(h, indices, out_shape):
    """``h``'s values at each plane's ``indices`` (the adjoint of the backward's scatter)."""
    lead = tuple(out_shape[:-2])
    return h.reshape(lead + (-1,)).gather(-1, indices.reshape(lead + (-1,))).reshape(out_shape)


def _max_pool_vjp(grads, ans, x, kernel_size, stride, padding, dilation, ceil_mode):
    return (apply(MAX_POOL2D_BACKWARD, grads[0], ans[1], x, input_size=tuple(x.shape[-2:])),)


def _max_pool_meta(x, kernel_size, stride, padding, dilation, ceil_mode):
    shape = tuple(x.shape[:-2]) + _out_hw(x.shape, kernel_size, stride, padding, dilation,
                                          ceil_mode)
    return (shape, shape), (x.dtype, _int64())


def _zeros_like(h):
    from .creation import zeros_like

    return zeros_like(h)


def _int64():
    from .. import dtypes

    return dtypes.int64


# the scatter of max pooling's VJP; its own VJP is the gather at the same indices. As torch's,
# it takes the pooled input too, with a zero derivative: a second derivative with respect to
# the input is zeros, not "not used in the graph" (the data is not read)
MAX_POOL2D_BACKWARD = defop(
    "max_pool2d_with_indices_backward",
    keeps_channels_last(lambda g, indices, x, input_size: _max_pool_backward_impl(
        g, indices, input_size)),
    kind=OPAQUE, save=(1,),
    meta=lambda g, indices, x, input_size: (tuple(g.shape[:-2]) + tuple(input_size), g.dtype),
    node_name="MaxPool2DWithIndicesBackwardBackward0", jvp=LINEAR,
    vjp=(lambda h, ans, g, indices, x, input_size: _gather_at(h, indices, tuple(g.shape)), None,
         lambda h, ans, g, indices, x, input_size: _zeros_like(h)))
# (the VJP reads only the indices: the values may be modified in place, ReLU(inplace=True); the
# input is kept, as torch's _saved_self, for the backward's edge to it)
MAX_POOL2D = defop("max_pool2d_with_indices", keeps_channels_last(_max_pool_impl), kind=OPAQUE,
                   meta=_max_pool_meta,
                   n_outputs=2, save=(0,), save_output=(1,), vjp=_max_pool_vjp,
                   node_name="MaxPool2DWithIndicesBackward0",
                   jvp=lambda ts, ans, x, **p: (
                       None if ts[0] is None else _gather_at(ts[0], ans[1], tuple(ans[0].shape)),
                       None))


def refuse_dtype(x, kernel: str, integers: tuple = (), halves: bool = True) -> None:
    """torch's NotImplementedError for a pooling of ``x`` whose CPU kernel is not built for its
    dtype: complex, bool, the integer dtypes not named in ``integers``, and float16 and
    bfloat16 unless ``halves``."""
    dt = x.dtype
    if dt.name in integers or dt.is_floating_point and (
            halves or dt.name not in ("float16", "bfloat16")):
        return
    raise NotImplementedError(
        f'"{kernel}" not implemented for \'{dt._scalar_name}\'')


ALL_INTEGERS = ("int8", "uint8", "int16", "int32", "int64", "uint16", "uint32", "uint64")


def max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices) of 2-d max pooling on normalised int-pair params."""
    refuse_dtype(x, "max_pool2d", ALL_INTEGERS)
    return apply(MAX_POOL2D, x, kernel_size=kernel_size, stride=stride, padding=padding,
                 dilation=dilation, ceil_mode=ceil_mode)


# ---------------------------------------------------------------- average


def _avg_divisor(in_hw, out_hw, kernel_size, stride, padding, count_include_pad,
                 divisor_override):
    """torch's divide factor per output position, ``(Ho, Wo)``."""
    if divisor_override:
        return np.full(out_hw, float(divisor_override))
    sizes = []
    for n, o, k, s, p in zip(in_hw, out_hw, kernel_size, stride, padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        full = end - start
        real = np.minimum(end, n) - np.maximum(start, 0)
        sizes.append(full if count_include_pad else real)
    return np.outer(sizes[0], sizes[1]).astype(np.float64)


def _avg_pool_impl(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                   divisor_override):
    out_hw = _out_hw(x.shape, kernel_size, stride, padding, (1, 1), ceil_mode)
    win = _windows(x, kernel_size, stride, padding, (1, 1), out_hw, 0)
    div = _avg_divisor(x.shape[-2:], out_hw, kernel_size, stride, padding, count_include_pad,
                       divisor_override)
    return (win.sum(axis=(-2, -1)) / div).astype(x.dtype, copy=False)


def _avg_pool_backward_impl(g, input_size, kernel_size, stride, padding, ceil_mode,
                            count_include_pad, divisor_override):
    out_hw = g.shape[-2:]
    div = _avg_divisor(input_size, out_hw, kernel_size, stride, padding, count_include_pad,
                       divisor_override)
    gd = g / div
    (h, w), (ph, pw) = input_size, padding
    hp = max(h + 2 * ph, (out_hw[0] - 1) * stride[0] + kernel_size[0])
    wp = max(w + 2 * pw, (out_hw[1] - 1) * stride[1] + kernel_size[1])
    xp = np.zeros(g.shape[:-2] + (hp, wp), dtype=g.dtype)
    for i in range(kernel_size[0]):  # col2im: one strided add per kernel position
        for j in range(kernel_size[1]):
            xp[..., i:i + stride[0] * (out_hw[0] - 1) + 1:stride[0],
               j:j + stride[1] * (out_hw[1] - 1) + 1:stride[1]] += gd
    return np.ascontiguousarray(xp[..., ph:ph + h, pw:pw + w])


def _avg_pool_meta(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                   divisor_override):
    return tuple(x.shape[:-2]) + _out_hw(x.shape, kernel_size, stride, padding, (1, 1),
                                         ceil_mode), x.dtype


AVG_POOL2D = defop(
    "avg_pool2d", _avg_pool_impl, kind=OPAQUE, meta=_avg_pool_meta,
    node_name="AvgPool2DBackward0", jvp=LINEAR,
    vjp=(lambda g, ans, x, **p: apply(AVG_POOL2D_BACKWARD, g, input_size=tuple(x.shape[-2:]),
                                      **p),))
AVG_POOL2D_BACKWARD = defop(
    "avg_pool2d_backward", keeps_channels_last(_avg_pool_backward_impl), kind=OPAQUE,
    meta=lambda g, input_size, **p: (tuple(g.shape[:-2]) + tuple(input_size), g.dtype),
    node_name="AvgPool2DBackwardBackward0", jvp=LINEAR,
    vjp=(lambda h, ans, g, input_size, **p: apply(AVG_POOL2D, h, **p),))


def avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """2-d average pooling on normalised int-pair params."""
    refuse_dtype(x, "avg_pool2d", ("int64",))
    return apply(AVG_POOL2D, x, kernel_size=kernel_size, stride=stride, padding=padding,
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                 divisor_override=divisor_override)


# ---------------------------------------------------------------- adaptive average


def _adaptive_matrix(n: int, o: int, dtype) -> np.ndarray:
    """``(o, n)``: row i averages input[floor(i*n/o) : ceil((i+1)*n/o)] (torch's windows)."""
    m = np.zeros((o, n), dtype=dtype)
    for i in range(o):
        start, end = (i * n) // o, -((-(i + 1) * n) // o)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _adaptive_impl(x, output_size):
    ph = _adaptive_matrix(x.shape[-2], output_size[0], x.dtype)
    pw = _adaptive_matrix(x.shape[-1], output_size[1], x.dtype)
    return np.ascontiguousarray(np.matmul(np.matmul(ph, x), pw.T))


def _adaptive_backward_impl(g, input_size):
    ph = _adaptive_matrix(input_size[0], g.shape[-2], g.dtype)
    pw = _adaptive_matrix(input_size[1], g.shape[-1], g.dtype)
    return np.ascontiguousarray(np.matmul(np.matmul(ph.T, g), pw))


ADAPTIVE_AVG_POOL2D = defop(
    "adaptive_avg_pool2d", keeps_channels_last(_adaptive_impl), kind=OPAQUE,
    meta=lambda x, output_size: (tuple(x.shape[:-2]) + tuple(output_size), x.dtype),
    node_name="AdaptiveAvgPool2DBackward0", jvp=LINEAR,
    vjp=(lambda g, ans, x, output_size: apply(ADAPTIVE_AVG_POOL2D_BACKWARD, g,
                                              input_size=tuple(x.shape[-2:])),))
ADAPTIVE_AVG_POOL2D_BACKWARD = defop(
    "adaptive_avg_pool2d_backward", keeps_channels_last(_adaptive_backward_impl), kind=OPAQUE,
    meta=lambda g, input_size: (tuple(g.shape[:-2]) + tuple(input_size), g.dtype),
    node_name="AdaptiveAvgPool2DBackwardBackward0", jvp=LINEAR,
    vjp=(lambda h, ans, g, input_size: apply(ADAPTIVE_AVG_POOL2D, h,
                                             output_size=tuple(g.shape[-2:])),))


def adaptive_avg_pool2d(x, output_size: tuple):
    """2-d adaptive average pooling to ``output_size`` (an int pair)."""
    refuse_dtype(x, "adaptive_avg_pool2d")
    return apply(ADAPTIVE_AVG_POOL2D, x, output_size=output_size)
