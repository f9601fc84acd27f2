"""Batch normalisation as one opaque op, torch's ``NativeBatchNormBackward0``.

``native_batch_norm(x, weight, bias, running_mean, running_var, training, eps)`` normalises over
every dimension but the channels (dim 1) and returns ``(out, mean, var)``: in training the batch
mean and biased variance (what the caller folds into the running statistics, in place), in eval
the running statistics used. Only ``out`` carries a gradient; its VJP is written in jitgrad ops
(recomputing the statistics from the saved input), so it differentiates to any order; a plain
first-order eager backward takes a one-op NumPy shortcut (``native_batch_norm_backward``).
"""

from __future__ import annotations

import numpy as np

from . import nn_kernels
from .registry import OPAQUE, apply, defop, state


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


# Only for a first-order backward in the eager engine (nothing differentiates its result): one
# NumPy op instead of ~20. Under create_graph or jit the VJP below uses jitgrad ops instead.
NATIVE_BATCH_NORM_BACKWARD = defop(
    "native_batch_norm_backward", _bn_backward_impl, kind=OPAQUE, n_outputs=3,
    meta=lambda g, x, *a, **p: ((tuple(x.shape), (x.shape[1],), (x.shape[1],)),
                                (x.dtype,) * 3))


def _bn_vjp(grads, ans, x, weight, bias, running_mean, running_var, training, eps):
    g = grads[0]
    if not state.grad_enabled and not state.traces:
        gx, gw, gb = apply(NATIVE_BATCH_NORM_BACKWARD, g, x, weight, running_mean, running_var,
                           training=training, eps=eps)
        return gx, gw if weight is not None else None, gb if bias is not None else None, \
            None, None
    dims = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x.ndim)
    if training:
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        centered = x - running_mean.reshape(shape)
        rstd = (running_var.reshape(shape) + eps).rsqrt()
    xhat = centered * rstd
    # two reductions of g (shared by the weight and bias gradients), none of g * weight
    gsum = g.sum(dims, keepdim=True)
    gdot = (g * xhat).sum(dims, keepdim=True)
    scale = rstd * weight.reshape(shape) if weight is not None else rstd
    if training:
        m = _numel(x.shape) // x.shape[1]
        gx = scale * (g - (gsum + xhat * gdot) / m)
    else:
        gx = g * scale
    gweight = gdot.reshape(-1) if weight is not None else None
    gbias = gsum.reshape(-1) if bias is not None else None
    return gx, gweight, gbias, None, None


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
NATIVE_BATCH_NORM = defop("native_batch_norm", _bn_impl, kind=OPAQUE, meta=_bn_meta,
                          n_outputs=3, save=(0, 1, 3, 4), vjp=_bn_vjp, jvp=_bn_jvp,
                          node_name="NativeBatchNormBackward0",
                          outputs_requiring_grad=lambda args, params: (True, False, False))
