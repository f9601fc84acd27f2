"""Batch normalisation as one opaque op, torch's ``NativeBatchNormBackward0``.

``native_batch_norm(x, weight, bias, running_mean, running_var, training, eps)`` normalises over
every dimension but the channels (dim 1) and returns ``(out, mean, var)``: in training the batch
mean and biased variance (what the caller folds into the running statistics, in place), in eval
the running statistics used. Only ``out`` carries a gradient. Its VJP is one more opaque op,
``native_batch_norm_backward`` (torch's ``NativeBatchNormBackwardBackward0`` node), eager and
jitted alike, whose own VJP and JVP are written in jitgrad ops (recomputing the statistics from
the saved input), so it differentiates to any order. For float32 and float64 both ops run as
single Numba kernels (``ops/nn_kernels.py``).
"""

from __future__ import annotations

import numpy as np

from . import nn_kernels
from .dtype_rules import check_norm_parameters
from .memory_formats import keeps_channels_last
from .registry import OPAQUE, apply, defop


def _channel_shape(ndim: int) -> tuple:
    return (1, -1) + (1,) * (ndim - 2)


def _as_ncl(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous ``(N, C, L)`` array (L: the product of the dims after 1)."""
    return np.ascontiguousarray(x).reshape(x.shape[0], x.shape[1], -1)


def _bn_fast(x, weight, bias, running_mean, running_var, training, eps):
    c = x.shape[1]
    dt = x.dtype
    out = np.empty(x.shape, dtype=dt)
    mean, var = np.empty(c, dtype=dt), np.empty(c, dtype=dt)
    nn_kernels.kernel("batch_norm")(
        _as_ncl(x), np.ones(c, dt) if weight is None else weight,
        np.zeros(c, dt) if bias is None else bias,
        mean if running_mean is None else running_mean,
        var if running_var is None else running_var, training, eps,
        out.reshape(x.shape[0], c, -1), mean, var)
    return out, mean, var


def _bn_impl(x, weight, bias, running_mean, running_var, training, eps):
    if nn_kernels.usable(x, weight, bias, running_mean, running_var) and x.size:
        return _bn_fast(x, weight, bias, running_mean, running_var, training, eps)
    dims = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x.ndim)
    if training:
        mean = x.mean(axis=dims)
        centered = x - mean.reshape(shape)
        var = np.mean(centered * centered, axis=dims)
    else:
        mean, var = running_mean, running_var
        centered = x - mean.reshape(shape)
    scale = 1.0 / np.sqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    out = centered * scale.reshape(shape)
    if bias is not None:
        out += bias.reshape(shape)
    dt = x.dtype
    return out.astype(dt, copy=False), mean.astype(dt), var.astype(dt)


def _bn_backward_impl(g, x, weight, running_mean, running_var, training, eps):
    """(grad input, grad weight, grad bias) in NumPy: the first-order backward in one op."""
    if nn_kernels.usable(g, x, weight, running_mean, running_var) and x.size:
        c = x.shape[1]
        dt = x.dtype
        gx = np.empty(x.shape, dtype=dt)
        gw, gb = np.empty(c, dtype=dt), np.empty(c, dtype=dt)
        stat = np.zeros(c, dtype=dt)
        nn_kernels.kernel("batch_norm_backward")(
            _as_ncl(g), _as_ncl(x), np.ones(c, dt) if weight is None else weight,
            stat if running_mean is None else running_mean,
            stat if running_var is None else running_var, training, eps,
            gx.reshape(x.shape[0], c, -1), gw, gb)
        return gx, gw, gb
    dims = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x.ndim)
    if training:
        mean = x.mean(axis=dims)
        centered = x - mean.reshape(shape)
        var = np.mean(centered * centered, axis=dims)
    else:
        centered = x - running_mean.reshape(shape)
        var = running_var
    rstd = (1.0 / np.sqrt(var + eps)).reshape(shape)
    xhat = centered * rstd
    gsum = g.sum(axis=dims)
    gxhat = (g * xhat).sum(axis=dims)
    scale = rstd if weight is None else rstd * weight.reshape(shape)
    if training:
        m = x.size // x.shape[1]
        gx = scale * (g - (gsum.reshape(shape) + xhat * gxhat.reshape(shape)) / m)
    else:
        gx = g * scale
    dt = x.dtype
    return gx.astype(dt, copy=False), gxhat.astype(dt), gsum.astype(dt)


def _terms(x, running_mean, running_var, training, eps):
    """``(xhat, rstd, dims, m)`` in jitgrad ops: the normalised input, the per-channel
    ``1/sqrt(var + eps)`` (keepdim), the reduced dims and the count per channel."""
    dims = (0,) + tuple(range(2, x.ndim))
    if training:
        centered = x - x.mean(dims, keepdim=True)
        rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        shape = _channel_shape(x.ndim)
        centered = x - running_mean.reshape(shape)
        rstd = (running_var.reshape(shape) + eps).rsqrt()
    return centered * rstd, rstd, dims, _numel(x.shape) // max(x.shape[1], 1)


def _total(*terms):
    """The sum of the terms that are not None (None if all are)."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _scaled(t, weight, ndim: int):
    """``t * weight`` per channel (``t`` itself without a weight)."""
    return t if t is None or weight is None else t * weight.reshape(_channel_shape(ndim))


# In training, with P(u) = u - mean(u) - xhat * mean(xhat * u) (per channel; self-adjoint), the
# backward is gx = w * rstd * P(g), gw = sum(g * xhat), gb = sum(g), and d xhat = rstd * P(dx).
# Its VJP (cotangents hx, hw, hb) and JVP (tangents tg, tx, tw) follow from these; in eval
# rstd and the mean are constants and the backward is linear in g and in x.


def _bn_backward_vjp(grads, ans, g, x, weight, running_mean, running_var, training, eps):
    hx, hw, hb = grads
    xhat, rstd, dims, m = _terms(x, running_mean, running_var, training, eps)
    shape = _channel_shape(x.ndim)
    hw = hw.reshape(shape) if hw is not None else None
    dg, dx, dw = None, None, None
    if training:
        b = (g * xhat).mean(dims, keepdim=True)
        pg = g - g.mean(dims, keepdim=True) - xhat * b
        if hx is not None:
            d = (hx * xhat).mean(dims, keepdim=True)
            phx = hx - hx.mean(dims, keepdim=True) - xhat * d
            s = (hx * pg).mean(dims, keepdim=True)
            dg = _scaled(rstd * phx, weight, x.ndim)
            dx = -_scaled(rstd * rstd * (xhat * s + b * phx + d * pg), weight, x.ndim)
            dw = (rstd * s * m).reshape(-1) if weight is not None else None
        if hw is not None:
            dg = _total(dg, hw * xhat)
            dx = _total(dx, hw * rstd * pg)
    else:
        if hx is not None:
            dg = _scaled(rstd * hx, weight, x.ndim)
            dw = (hx * g * rstd).sum(dims) if weight is not None else None
        if hw is not None:
            dg = _total(dg, hw * xhat)
            dx = hw * rstd * g
    if hb is not None:
        dg = _total(dg, hb.reshape(shape).expand(tuple(g.shape)))
    return dg, dx, dw, None, None


def _bn_backward_jvp(tangents, ans, g, x, weight, running_mean, running_var, training, eps):
    tg, tx, tw = tangents[:3]
    xhat, rstd, dims, m = _terms(x, running_mean, running_var, training, eps)
    shape = _channel_shape(x.ndim)
    tgb = tg.sum(dims, keepdim=True) if tg is not None else None
    if training:
        b = (g * xhat).mean(dims, keepdim=True)
        pg = g - g.mean(dims, keepdim=True) - xhat * b
        dxhat = dr = None
        if tx is not None:
            dot = (xhat * tx).mean(dims, keepdim=True)
            dxhat = rstd * (tx - tx.mean(dims, keepdim=True) - xhat * dot)
            dr = -(rstd * rstd) * dot
        tgw = _total(None if tg is None else (tg * xhat).sum(dims, keepdim=True),
                     None if tx is None else (g * dxhat).sum(dims, keepdim=True))
        inner = _total(None if tg is None else tg - tgb / m,
                       None if tx is None else -(dxhat * b),
                       None if tgw is None else -(xhat * tgw) / m)
        tgx = _total(_scaled(None if inner is None else rstd * inner, weight, x.ndim),
                     _scaled(None if dr is None else dr * pg, weight, x.ndim),
                     None if tw is None else tw.reshape(shape) * rstd * pg)
    else:
        tgw = _total(None if tg is None else (tg * xhat).sum(dims, keepdim=True),
                     None if tx is None else (g * rstd * tx).sum(dims, keepdim=True))
        tgx = _total(_scaled(None if tg is None else rstd * tg, weight, x.ndim),
                     None if tw is None else tw.reshape(shape) * rstd * g)
    return tgx, None if tgw is None else tgw.reshape(-1), \
        None if tgb is None else tgb.reshape(-1)


# (grad input, grad weight, grad bias): batch norm's backward as one op (one Numba kernel for
# float32/float64), eager and jitted; its own VJP and JVP are in jitgrad ops (any order).
NATIVE_BATCH_NORM_BACKWARD = defop(
    "native_batch_norm_backward", _bn_backward_impl, kind=OPAQUE, n_outputs=3,
    save=(0, 1, 2, 3, 4), vjp=_bn_backward_vjp, jvp=_bn_backward_jvp,
    meta=lambda g, x, *a, **p: ((tuple(x.shape), (x.shape[1],), (x.shape[1],)),
                                (x.dtype,) * 3))


def _bn_vjp(grads, ans, x, weight, bias, running_mean, running_var, training, eps):
    gx, gw, gb = apply(NATIVE_BATCH_NORM_BACKWARD, grads[0], x, weight, running_mean,
                       running_var, training=training, eps=eps)
    return gx, gw if weight is not None else None, gb if bias is not None else None, None, None


def _bn_meta(x, weight, bias, running_mean, running_var, training, eps):
    c = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"{name} should contain {c} elements not {_numel(t.shape)}")
    return (tuple(x.shape), (c,), (c,)), (x.dtype,) * 3


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n




def native_batch_norm(x, weight, bias, running_mean, running_var, training: bool, eps: float):
    """``(out, mean, var)`` of batch normalisation over all dims but dim 1."""
    check_norm_parameters(x, weight, bias, running_mean, running_var)
    return apply(NATIVE_BATCH_NORM, x, weight, bias, running_mean, running_var,
                 training=bool(training), eps=float(eps))


def _bn_jvp(tangents, ans, x, weight, bias, running_mean, running_var, training, eps):
    tx, tw, tb = tangents[:3]
    dims = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x.ndim)
    if training:
        centered = x - x.mean(dims, keepdim=True)
        rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        centered = x - running_mean.reshape(shape)
        rstd = (running_var.reshape(shape) + eps).rsqrt()
    xhat = centered * rstd
    out = None
    if tx is not None:
        out = rstd * (tx - tx.mean(dims, keepdim=True) -
                      xhat * (xhat * tx).mean(dims, keepdim=True)) if training else rstd * tx
        if weight is not None:
            out = out * weight.reshape(shape)
    for term in (xhat * tw.reshape(shape) if tw is not None else None,
                 tb.reshape(shape) if tb is not None else None):
        if term is not None:
            out = term if out is None else out + term
    return out, None, None


# the batch statistics are for the running averages (updated without grad): not differentiable
NATIVE_BATCH_NORM = defop("native_batch_norm", keeps_channels_last(_bn_impl), kind=OPAQUE,
                          meta=_bn_meta,
                          n_outputs=3, save=(0, 1, 3, 4), vjp=_bn_vjp, jvp=_bn_jvp,
                          node_name="NativeBatchNormBackward0", non_differentiable=(3, 4),
                          outputs_requiring_grad=lambda args, params: (True, False, False))
