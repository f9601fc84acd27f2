"""Convolution as three opaque, mutually adjoint ops: im2col plus one BLAS matmul each.

``convolution(x, w, b)`` is torch's ``ConvolutionBackward0`` node (1-d and 2-d, stride, per-side
padding, dilation, groups). Its VJP is made of two more ops, each linear in both inputs:

* ``convolution_backward_input(g, w)``: the transposed convolution (col2im of ``w^T g``),
* ``convolution_backward_weight(x, g)``: the correlation of the input with the gradient.

Writing ``<h, op(a, b)>`` as the same trilinear form as ``<g, conv(x, w)>`` shows that the three
are closed under VJP (each one's VJP is made of the other two), so any order of derivative
works, eager or jitted. A 1-d convolution runs as a 2-d one over a height-1 image.

For float32 and float64 the copies are Numba kernels (``ops/nn_kernels.py``) over a batch-last
layout: the input is transposed to ``(C, Hp, Wp, N)`` (padded), the columns are
``(C, kh, kw, Ho, Wo, N)`` (runs of N contiguous values), and the matmul's ``(O, Ho, Wo, N)``
result is transposed back to NCHW. Other dtypes take the NumPy code (an ``as_strided`` window
view copied once).

Params (all hashable): ``stride``, ``dilation`` (tuples, one int per spatial dim), ``padding``
(one ``(before, after)`` pair per spatial dim, so ``padding='same'`` with an even kernel is one
op), ``groups``.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import CPP_NAMES
from . import nn_kernels
from .memory_formats import keeps_channels_last
from .registry import AUTOCAST_LOWER, BILINEAR, OPAQUE, apply, defop


def _as2d(x: np.ndarray, stride, padding, dilation):
    """A 1-d problem as a 2-d one over a height-1 image (arrays gain an axis at -2)."""
    if len(stride) == 2:
        return x, stride, padding, dilation
    return x[..., None, :], (1,) + tuple(stride), ((0, 0),) + tuple(padding), \
        (1,) + tuple(dilation)


def _pad(x: np.ndarray, padding) -> np.ndarray:
    if not any(lo or hi for lo, hi in padding):
        return x
    (t, b), (lf, r) = padding
    n, c, h, w = x.shape
    out = np.zeros((n, c, h + t + b, w + lf + r), dtype=x.dtype)  # (np.pad is slower)
    out[:, :, t:t + h, lf:lf + w] = x
    return out


def out_size(n: int, k: int, s: int, pad: tuple, d: int) -> int:
    """The output length of a convolution along one dimension."""
    return (n + pad[0] + pad[1] - d * (k - 1) - 1) // s + 1


def _im2col(x, ksize, stride, padding, dilation, groups):
    """``(groups, C/groups * kh * kw, N * Ho * Wo)`` columns of the padded input (one copy)."""
    xp = _pad(x, padding)
    n, c, hp, wp = xp.shape
    kh, kw = ksize
    ho = (hp - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wp - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    sn, sc, sh, sw = xp.strides
    win = np.lib.stride_tricks.as_strided(
        xp, (c, kh, kw, n, ho, wo),
        (sc, sh * dilation[0], sw * dilation[1], sn, sh * stride[0], sw * stride[1]),
        writeable=False)
    return win.reshape(groups, (c // groups) * kh * kw, n * ho * wo), (ho, wo)


def _conv_impl(x, w, b, stride, padding, dilation, groups):
    spatial = len(stride)
    x2, stride, padding, dilation = _as2d(x, stride, padding, dilation)
    w2 = w if spatial == 2 else w[..., None, :]
    if nn_kernels.usable(x2, w2, b):
        out = _conv_fast(x2, w2, b, stride, padding, dilation, groups)
    else:
        o = w2.shape[0]
        cols, (ho, wo) = _im2col(x2, w2.shape[2:], stride, padding, dilation, groups)
        out = np.matmul(w2.reshape(groups, o // groups, -1), cols)  # (G, O/G, N*Ho*Wo)
        out = out.reshape(o, x.shape[0], ho, wo).transpose(1, 0, 2, 3)
        if b is not None:
            out = out + b[:, None, None]
        out = np.ascontiguousarray(out, dtype=x.dtype)
    return out if spatial == 2 else out[:, :, 0]


def _batch_last(x, padding):
    """``x (N, C, H, W)`` as ``(C, Hp, Wp, N)``, zero-padded."""
    (t, bottom), (left, right) = padding
    n, c, h, w = x.shape
    flat = np.empty((c * h * w, n), dtype=x.dtype)
    nn_kernels.kernel("transpose")(np.ascontiguousarray(x).reshape(n, c * h * w), flat)
    if not (t or bottom or left or right):
        return flat.reshape(c, h, w, n)
    xt = np.zeros((c, h + t + bottom, w + left + right, n), dtype=x.dtype)
    xt[:, t:t + h, left:left + w] = flat.reshape(c, h, w, n)
    return xt


def _from_batch_last(xt, shape, crop=(0, 0)):
    """``xt (C, Hp, Wp, N)`` cropped at ``crop`` to ``shape`` ``(N, C, H, W)``, as NCHW."""
    n, c, h, w = shape
    if xt.shape[1:3] != (h, w):
        xt = np.ascontiguousarray(xt[:, crop[0]:crop[0] + h, crop[1]:crop[1] + w])
    out = np.empty(shape, dtype=xt.dtype)
    nn_kernels.kernel("transpose")(xt.reshape(c * h * w, n), out.reshape(n, c * h * w))
    return out


def _cols(x, ksize, stride, padding, dilation):
    """im2col of ``x (N, C, H, W)``: ``(C, kh, kw, Ho, Wo, N)`` columns (batch-last, so the
    kernel copies runs of N values), and ``(Ho, Wo)``."""
    xt = _batch_last(x, padding)
    c, hp, wp, n = xt.shape
    kh, kw = ksize
    ho = (hp - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wp - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    cols = np.empty((c, kh, kw, ho, wo, n), dtype=x.dtype)
    nn_kernels.kernel("im2col")(xt, cols, *stride, *dilation)
    return cols, (ho, wo)


def _conv_fast(x, w, b, stride, padding, dilation, groups):
    """The forward as ``(G, O/G, C/G*kh*kw) @ (G, C/G*kh*kw, Ho*Wo*N)``, batch-last."""
    n, o = x.shape[0], w.shape[0]
    k = w[0].size  # C/G * kh * kw (explicit sizes: an empty batch reshapes too)
    cols, (ho, wo) = _cols(x, w.shape[2:], stride, padding, dilation)
    out = np.matmul(w.reshape(groups, o // groups, k), cols.reshape(groups, k, ho * wo * n))
    out = out.reshape(o, ho * wo * n)
    if b is not None:
        out += b[:, None]
    return _from_batch_last(out.reshape(o, ho, wo, n), (n, o, ho, wo))


def _input_grad_impl(g, w, input_size, stride, padding, dilation, groups):
    spatial = len(stride)
    g2, stride, padding, dilation = _as2d(g, stride, padding, dilation)
    w2 = w if spatial == 2 else w[..., None, :]
    size = tuple(input_size) if spatial == 2 else (1,) + tuple(input_size)
    n, o, ho, wo = g2.shape
    c = w2.shape[1] * groups
    kh, kw = w2.shape[2:]
    if nn_kernels.usable(g2, w2):  # (G, C/G*kh*kw, O/G) @ (G, O/G, Ho*Wo*N), then col2im
        gt = _batch_last(g2, ((0, 0), (0, 0)))
        cols = np.matmul(w2.reshape(groups, o // groups, w2[0].size).transpose(0, 2, 1),
                         gt.reshape(groups, o // groups, ho * wo * n))
        (t, bottom), (left, right) = padding
        xt = np.zeros((c, size[0] + t + bottom, size[1] + left + right, n), dtype=g.dtype)
        nn_kernels.kernel("col2im")(cols.reshape(c, kh, kw, ho, wo, n), xt, *stride, *dilation)
        out = _from_batch_last(xt, (n, c) + size, (t, left))
        return out if spatial == 2 else out[:, :, 0]
    gm = g2.transpose(1, 0, 2, 3).reshape(groups, o // groups, n * ho * wo)
    cols = np.matmul(w2.reshape(groups, o // groups, -1).transpose(0, 2, 1), gm)
    cols = cols.reshape(c, kh, kw, n, ho, wo)
    (t, bottom), (left, right) = padding
    hp, wp = size[0] + t + bottom, size[1] + left + right
    xp = np.zeros((c, n, hp, wp), dtype=g.dtype)
    for i in range(kh):  # col2im: one strided add per kernel position
        r0 = i * dilation[0]
        for j in range(kw):
            c0 = j * dilation[1]
            xp[:, :, r0:r0 + stride[0] * (ho - 1) + 1:stride[0],
               c0:c0 + stride[1] * (wo - 1) + 1:stride[1]] += cols[:, i, j]
    out = np.ascontiguousarray(xp[:, :, t:t + size[0], left:left + size[1]].transpose(1, 0, 2, 3))
    return out if spatial == 2 else out[:, :, 0]


def _weight_grad_impl(x, g, kernel_size, stride, padding, dilation, groups):
    spatial = len(stride)
    x2, stride, padding, dilation = _as2d(x, stride, padding, dilation)
    g2 = g if spatial == 2 else g[..., None, :]
    ksize = tuple(kernel_size) if spatial == 2 else (1,) + tuple(kernel_size)
    n, o = g2.shape[:2]
    if nn_kernels.usable(x2, g2):  # batch-last: (G, O/G, Ho*Wo*N) @ (G, Ho*Wo*N, C/G*kh*kw)
        cols, (ho, wo) = _cols(x2, ksize, stride, padding, dilation)
        cols = cols.reshape(groups, cols.shape[0] // groups * ksize[0] * ksize[1],
                            ho * wo * n)
        gm = _batch_last(g2, ((0, 0), (0, 0))).reshape(groups, o // groups, ho * wo * n)
    else:
        cols, _ = _im2col(x2, ksize, stride, padding, dilation, groups)
        gm = g2.transpose(1, 0, 2, 3).reshape(groups, o // groups, -1)
    gw = np.matmul(gm, cols.transpose(0, 2, 1))  # (G, O/G, C/G*kh*kw)
    return gw.reshape((o, x.shape[1] // groups) + tuple(kernel_size)).astype(x.dtype, copy=False)


def _dtype_of(*ts):
    dt = ts[0].dtype
    for t in ts[1:]:
        if t is not None and t.dtype is not dt:
            raise RuntimeError(f"expected scalar type {dt._scalar_name} but found "
                               f"{t.dtype._scalar_name}")
    return dt


def check_bias_dtype(x, b) -> None:
    """torch's first check of a convolution, in C++ type names."""
    if b is not None and b.dtype is not x.dtype:
        raise RuntimeError(f"Input type ({CPP_NAMES[x.dtype.name]}) and bias type "
                           f"({CPP_NAMES[b.dtype.name]}) should be the same")


def _conv_meta(x, w, b, stride, padding, dilation, groups):
    check_bias_dtype(x, b)
    dt = _dtype_of(x, w, b)
    shape = (x.shape[0], w.shape[0]) + tuple(
        out_size(n, k, s, p, d) for n, k, s, p, d in zip(x.shape[2:], w.shape[2:], stride,
                                                         padding, dilation))
    return shape, dt


def _input_grad_meta(g, w, input_size, stride, padding, dilation, groups):
    return (g.shape[0], w.shape[1] * groups) + tuple(input_size), _dtype_of(g, w)


def _transpose_impl(x, w, b, input_size, stride, padding, dilation, groups):
    out = _input_grad_impl(x, w, input_size, stride, padding, dilation, groups)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * len(stride))
    return out


def _transpose_meta(x, w, b, input_size, stride, padding, dilation, groups):
    check_bias_dtype(x, b)
    return (x.shape[0], w.shape[1] * groups) + tuple(input_size), _dtype_of(x, w)


def _weight_grad_meta(x, g, kernel_size, stride, padding, dilation, groups):
    return (g.shape[1], x.shape[1] // groups) + tuple(kernel_size), _dtype_of(x, g)


def _not_for(kernel: str, dt) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{dt._scalar_name}\'')


def check_conv_dtype(x, w, dilation: tuple, transposed: bool) -> None:
    """torch's refusal of the dtypes its CPU convolution kernels are not built for: bool
    (every kernel), and the integers but int64 in a dilated or a transposed convolution. (A
    mix of dtypes is the meta's error.)"""
    dt = x.dtype
    if dt.is_floating_point or dt.is_complex or dt is not w.dtype or \
            (dt.name == "int64" and (transposed or any(d != 1 for d in dilation))):
        return
    dims = "3d" if len(dilation) == 3 else "2d"
    if transposed:
        raise _not_for(f"slow_conv_transpose{dims}_out_cpu", dt)
    if any(d != 1 for d in dilation):
        raise _not_for("slow_conv_dilated<>", dt)
    if dt.name == "bool":
        raise _not_for(f"slow_conv{dims}_cpu", dt)


def convolution(x, w, b, stride: tuple, padding: tuple, dilation: tuple, groups: int):
    """The convolution op on normalised params (see the module docstring)."""
    check_conv_dtype(x, w, dilation, False)
    return apply(CONVOLUTION, x, w, b, stride=stride, padding=padding, dilation=dilation,
                 groups=groups)


def conv_transpose(x, w, b, input_size: tuple, **p):
    """The transposed convolution of ``x`` (``(N, C_in, *spatial)``) by ``w`` (``(C_in,
    C_out / groups, *kernel)``) plus ``b``, whose output has the spatial size ``input_size``:
    one ``ConvolutionBackward0`` node, as torch records it."""
    check_conv_dtype(x, w, p["dilation"], True)
    return apply(CONV_TRANSPOSE, x, w, b, input_size=tuple(input_size), **p)


def _grad_input(g, w, input_size, **p):
    return apply(CONV_INPUT_GRAD, g, w, input_size=tuple(input_size), **p)


def _grad_weight(x, g, kernel_size, **p):
    return apply(CONV_WEIGHT_GRAD, x, g, kernel_size=tuple(kernel_size), **p)


# ---------------------------------------------------------------- forward-mode (JVP) rules


def _bilinear_jvp(product, tangents, x, w, n_spatial: int):
    # d(product(x, w) + b) = product(tx, w) + product(x, tw) + tb, broadcast over channels
    tx, tw, tb = tangents
    terms = [product(tx, w) if tx is not None else None,
             product(x, tw) if tw is not None else None,
             tb.reshape((1, -1) + (1,) * n_spatial) if tb is not None else None]
    out = None
    for term in terms:
        if term is not None:
            out = term if out is None else out + term
    return out


def _conv_jvp(tangents, ans, x, w, b, **p):
    return _bilinear_jvp(lambda a, k: convolution(a, k, None, **p), tangents, x, w,
                         len(p["stride"]))


def _transpose_jvp(tangents, x, w, input_size, **p):
    return _bilinear_jvp(lambda a, k: _grad_input(a, k, input_size, **p), tangents, x, w,
                         len(p["stride"]))


def _c(t):
    """The conjugate of a complex operand: each VJP below is the adjoint of a bilinear map in
    the other operand, which for complex tensors multiplies by that operand's conjugate."""
    return t.conj() if t.dtype.is_complex else t


CONVOLUTION = defop(
    "convolution", _conv_impl, kind=OPAQUE, meta=_conv_meta, save=(0, 1),
    node_name="ConvolutionBackward0", jvp=_conv_jvp, autocast=AUTOCAST_LOWER,
    vjp=(lambda g, ans, x, w, b, **p: _grad_input(g, _c(w), x.shape[2:], **p),
         lambda g, ans, x, w, b, **p: _grad_weight(_c(x), g, w.shape[2:], **p),
         lambda g, ans, x, w, b, **p: g.sum((0,) + tuple(range(2, g.ndim)))))
# the transposed convolution with a bias, Bx(x, w) + b: d/dx = conv(h, w), d/dw = Bw(h, x)
CONV_TRANSPOSE = defop(
    "conv_transpose", keeps_channels_last(_transpose_impl), kind=OPAQUE, meta=_transpose_meta,
    save=(0, 1),
    node_name="ConvolutionBackward0", autocast=AUTOCAST_LOWER,
    jvp=lambda ts, ans, x, w, b, input_size, **p: _transpose_jvp(ts, x, w, input_size, **p),
    vjp=(lambda h, ans, x, w, b, input_size, **p: convolution(h, _c(w), None, **p),
         lambda h, ans, x, w, b, input_size, **p: _grad_weight(h, _c(x), w.shape[2:], **p),
         lambda h, ans, x, w, b, input_size, **p: h.sum((0,) + tuple(range(2, h.ndim)))))
# <h, Bx(g, w)> = <conv(h, w), g>: d/dg = conv(h, w), d/dw = Bw(h, g)
CONV_INPUT_GRAD = defop(
    "convolution_backward_input", _input_grad_impl, kind=OPAQUE, meta=_input_grad_meta,
    save=(0, 1), node_name="ConvolutionBackwardBackward0", jvp=BILINEAR,
    vjp=(lambda h, ans, g, w, input_size, **p: convolution(h, _c(w), None, **p),
         lambda h, ans, g, w, input_size, **p: _grad_weight(h, _c(g), w.shape[2:], **p)))
# <k, Bw(x, g)> = <conv(x, k), g>: d/dx = Bx(g, k), d/dg = conv(x, k)
CONV_WEIGHT_GRAD = defop(
    "convolution_backward_weight", _weight_grad_impl, kind=OPAQUE, meta=_weight_grad_meta,
    save=(0, 1), node_name="ConvolutionBackwardBackward0", jvp=BILINEAR,
    vjp=(lambda k, ans, x, g, kernel_size, **p: _grad_input(_c(g), k, x.shape[2:], **p),
         lambda k, ans, x, g, kernel_size, **p: convolution(_c(x), k, None, **p)))
