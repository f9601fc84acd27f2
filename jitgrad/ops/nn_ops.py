"""Neural-network ops torch records as single nodes: gelu, silu, softplus, layer_norm, nll_loss,
mse_loss.

Each has a NumPy impl, a VJP in jitgrad ops, and (where it helps fusion) a decomposition.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from . import nn_kernels
from .dtype_rules import half_in_float32, refuse_dtypes
from .elementwise import where
from .registry import AUTOCAST_FP32, ELEMENTWISE, OPAQUE, POINTWISE, Public, apply, defop
from .memory_formats import row_major

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _gelu_impl(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + nn_kernels.special("erf", x * _INV_SQRT_2))


def _gelu_decompose(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + (_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)).tanh())
    return 0.5 * x * (1 + (x * _INV_SQRT_2).erf())


def _gelu_vjp(g, ans, x, approximate):
    if approximate == "tanh":
        t = (_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)).tanh()
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return g * d
    cdf = 0.5 * (1 + (x * _INV_SQRT_2).erf())
    return g * (cdf + x * (-0.5 * x * x).exp() * _INV_SQRT_2PI)


_NOT_FLOATING = ("complex", "integer", "bool")
GELU = defop("gelu", half_in_float32(_gelu_impl), kind=POINTWISE, save=(0,),
             decompose=_gelu_decompose,
             opmath_backward=True,
             check_operands=refuse_dtypes(**dict.fromkeys(_NOT_FLOATING, "GeluKernelImpl")),
             meta=lambda x, approximate: (tuple(x.shape), x.dtype), vjp=(_gelu_vjp,),
             template="gelu_{p[approximate]}({0})", jvp=ELEMENTWISE,
             saved_names={"approximate": ("param", "approximate"), "self": ("input", 0)})


def _silu_impl(x):
    from .elementwise import _sigmoid

    return x * _sigmoid(x)


def _silu_vjp(g, ans, x):
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


SILU = defop("silu", half_in_float32(_silu_impl), kind=POINTWISE, save=(0,), vjp=(_silu_vjp,),
             opmath_backward=True,
             check_operands=refuse_dtypes(integer="silu_cpu", bool="silu_cpu"),
             decompose=lambda x: x * x.sigmoid(), meta=lambda x: (tuple(x.shape), x.dtype),
             template="{0} / (1.0 + exp(-{0}))", jvp=ELEMENTWISE)


# ---------------------------------------------------------------- softplus (docs/adding-an-op.md)
def _softplus_impl(x, beta, threshold):
    bx = x * beta  # log(1 + exp(bx)) / beta, and x itself where bx > threshold (as torch)
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def _softplus_meta(x, beta, threshold):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(
            f'"softplus_cpu" not implemented for \'{x.dtype._scalar_name}\'')
    return tuple(x.shape), x.dtype


def _softplus_vjp(g, ans, x, beta, threshold):
    bx = x * beta
    return g * where(bx > threshold, 1.0, bx.sigmoid())


SOFTPLUS = defop(
    "softplus", half_in_float32(_softplus_impl), kind=POINTWISE, meta=_softplus_meta, save=(0,),
    vjp=(_softplus_vjp,), jvp=ELEMENTWISE, opmath_backward=True,
    saved_names={"self": ("input", 0), "beta": ("param", "beta"),
                 "threshold": ("param", "threshold")},
    template="({0} if {0} * {p[beta]} > {p[threshold]} else "
             "log1p(exp({0} * {p[beta]})) / {p[beta]})",
    public=Public(functional="softplus", params={"beta": 1.0, "threshold": 20.0},
                  doc="``log(1 + exp(beta * input)) / beta``, and ``input`` where "
                      "``beta * input > threshold`` (torch.nn.functional.softplus)."))


def _ln_dims(x, normalized_shape):
    return tuple(range(x.ndim - len(normalized_shape), x.ndim))


def _layer_norm_impl(x, weight, bias, normalized_shape, eps):
    dims = _ln_dims(x, normalized_shape)
    mu = x.mean(axis=dims, keepdims=True)
    var = x.var(axis=dims, keepdims=True)
    out = (x - mu) / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.astype(x.dtype, copy=False)


def _layer_norm_decompose(x, weight, bias, normalized_shape, eps):
    dims = _ln_dims(x, normalized_shape)
    mu = x.mean(dims, keepdim=True)
    centered = x - mu
    out = centered * ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _layer_norm_vjp(g, ans, x, weight, bias, normalized_shape, eps):
    dims = _ln_dims(x, normalized_shape)
    lead = tuple(range(x.ndim - len(normalized_shape)))
    mu = x.mean(dims, keepdim=True)
    centered = x - mu
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centered * rstd
    gw = g * weight if weight is not None else g
    gx = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True))
    gweight = (g * xhat).sum(lead) if weight is not None and lead else (
        g * xhat if weight is not None else None)
    gbias = g.sum(lead) if bias is not None and lead else (g if bias is not None else None)
    return gx, gweight, gbias


def _layer_norm_meta(x, weight, bias, normalized_shape, eps):
    n = len(normalized_shape)
    if tuple(x.shape[x.ndim - n:]) != tuple(normalized_shape) or n > x.ndim:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(x.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != tuple(normalized_shape):
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(p.shape)} and normalized_shape = {list(normalized_shape)}")
    return tuple(x.shape), x.dtype


def _layer_norm_jvp(tangents, ans, x, weight, bias, normalized_shape, eps):
    # d xhat = rstd * (dx - mean(dx) - xhat * mean(xhat * dx)); y = xhat * w + b
    tx, tw, tb = tangents
    dims = _ln_dims(x, normalized_shape)
    centered = x - x.mean(dims, keepdim=True)
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centered * rstd
    out = None
    if tx is not None:
        out = rstd * (tx - tx.mean(dims, keepdim=True) - xhat * (xhat * tx).mean(dims,
                                                                                 keepdim=True))
        if weight is not None:
            out = out * weight
    for term in (xhat * tw if tw is not None else None, tb):
        if term is not None:
            out = term if out is None else out + term
    return out


LAYER_NORM = defop("native_layer_norm", row_major(half_in_float32(_layer_norm_impl)), kind=OPAQUE,
                   save=(0, 1),
                   opmath_backward=True,
                   meta=_layer_norm_meta, vjp=_layer_norm_vjp, decompose=_layer_norm_decompose,
                   check_operands=refuse_dtypes(
                       (0,), **dict.fromkeys(_NOT_FLOATING, "LayerNormKernelImpl")),
                   jvp=_layer_norm_jvp)


# ---------------------------------------------------------------- losses


def _nll_terms(n_classes, target, weight, ignore_index):
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if np.any((safe < 0) | (safe >= n_classes)):
        bad = safe[(safe < 0) | (safe >= n_classes)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    w = weight[safe] if weight is not None else np.ones(safe.shape, dtype=np.float64)
    return valid, safe, np.where(valid, w, 0)


def _nll_impl(logp, target, weight, reduction, ignore_index):
    batched = logp.ndim == 2
    lp = logp if batched else logp[None]
    tg = target if batched else target[None]
    if weight is None and reduction != "none" and nn_kernels.usable(lp):  # one pass
        total, count, bad = nn_kernels.kernel("nll_loss")(lp, tg, ignore_index)
        if bad >= 0:
            raise IndexError(f"Target {tg[bad]} is out of bounds.")
        if reduction == "mean":
            total = np.float64(total) / count
        return np.asarray(total, dtype=logp.dtype)
    valid, safe, w = _nll_terms(lp.shape[1], tg, weight, ignore_index)
    picked = -np.take_along_axis(lp, safe[:, None], axis=1)[:, 0] * w
    if reduction == "none":
        return (picked if batched else picked[0]).astype(logp.dtype)
    total = picked.sum()
    if reduction == "mean":
        total = total / w.sum()
    return np.asarray(total, dtype=logp.dtype)


def _nll_vjp(g, ans, logp, target, weight, reduction, ignore_index):
    from .ranges import arange

    batched = logp.ndim == 2
    tg = target if batched else target.unsqueeze(0)
    valid = tg != ignore_index
    w = where(valid, weight.index_select(0, where(valid, tg, 0)) if weight is not None else 1.0,
              0.0)
    scale = -w.to(logp.dtype)
    if reduction == "mean":
        scale = scale / w.sum()
    gs = (g if batched or reduction != "none" else g.unsqueeze(0)) * scale
    # the one-hot rows as a comparison with the class numbers: pointwise, so under jit it is
    # one fused kernel with what reads it (no zeros + scatter_add). An ignored row hits nothing,
    # also when ignore_index is a class number: its gradient is 0, not 0 / 0 when every target
    # is ignored (torch's)
    hit = (tg.unsqueeze(1) == arange(logp.shape[-1], device=g.device)) & valid.unsqueeze(1)
    out = where(hit, gs.unsqueeze(1), 0.0)
    return (out if batched else out[0]), None, None


def _nll_meta(logp, target, weight, reduction, ignore_index):
    if logp.ndim not in (1, 2):
        raise ValueError(f"Expected 1 or 2 dimensions for nll_loss input (got {logp.ndim})")
    if logp.ndim == 2 and target.shape[0] != logp.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({logp.shape[0]}) to match target batch_size "
            f"({target.shape[0]}).")
    if not dtypes.is_integral(target.dtype):
        raise RuntimeError(
            "expected scalar type Long but found " + target.dtype._scalar_name)
    shape = tuple(target.shape) if reduction == "none" else ()
    return shape, logp.dtype


NLL_LOSS = defop("nll_loss", _nll_impl, kind=OPAQUE, meta=_nll_meta, save=(1, 2),
                 autocast=AUTOCAST_FP32, non_differentiable=(2,),
                 check_operands=refuse_dtypes(
                     (0,), **dict.fromkeys(_NOT_FLOATING, "nll_loss_out_frame")),
                 vjp=_nll_vjp,
                 jvp=lambda ts, ans, logp, target, weight, reduction, ignore_index:
                 None if ts[0] is None else apply(NLL_LOSS, ts[0], target, weight,
                                                  reduction=reduction, ignore_index=ignore_index))


def _mse_impl(x, y, reduction):
    d = (x - y) ** 2
    if reduction == "none":
        return d
    return np.asarray(d.mean() if reduction == "mean" else d.sum(), dtype=d.dtype)


def _mse_grad(g, x, y, reduction):
    d = 2 * (x - y)
    if reduction == "mean":
        d = d / max(d.numel(), 1)  # the broadcast numel, as the forward's mean
    return g * d


def _mse_meta(x, y, reduction):
    from .registry import broadcast_shapes

    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape))
    return (shape if reduction == "none" else ()), dtypes.result_type(x, y)


def _mse_jvp(tangents, ans, x, y, reduction):
    tx, ty = tangents
    dt = tx if ty is None else (-ty if tx is None else tx - ty)
    d = 2 * (x - y) * dt
    if reduction == "none":
        return d
    return d.mean() if reduction == "mean" else d.sum()


MSE_LOSS = defop("mse_loss", _mse_impl, kind=OPAQUE, meta=_mse_meta, save=(0, 1),
                 autocast=AUTOCAST_FP32,
                 check_operands=refuse_dtypes(**dict.fromkeys(_NOT_FLOATING, "mse_cpu")),
                 vjp=(lambda g, ans, x, y, reduction: _mse_grad(g, x, y, reduction),
                      lambda g, ans, x, y, reduction: -_mse_grad(g, x, y, reduction)),
                 decompose=lambda x, y, reduction: {
                     "none": lambda d: d, "mean": lambda d: d.mean(),
                     "sum": lambda d: d.sum()}[reduction]((x - y) ** 2), jvp=_mse_jvp)


# ---------------------------------------------------------------- forward-mode (JVP) rules
