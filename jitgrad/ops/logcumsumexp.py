"""``logcumsumexp`` and the two linear maps its derivatives are made of, each an op computed in
log space so that no ``exp`` overflows.

With ``out = logcumsumexp(x)`` along a dim, ``d out_j / d x_i = exp(x_i - out_j)`` for
``j >= i``: every term is at most 1, but ``exp(x)`` and ``exp(-out)`` apart overflow float32
once ``|x| > 88``. The VJP ``backward(g)_i = sum_{j>=i} g_j exp(x_i - out_j)`` and the JVP
``tangent(t)_j = sum_{i<=j} t_i exp(x_i - out_j)`` are therefore ops whose NumPy impls sum the
positive and the negative terms apart as log-sum-exps (torch's logcumsumexp_backward does the
same with composite ops). Each map is the other's transpose, so their VJPs are each other and
the second derivatives stay exact and finite (torch's double backward takes ``log(|g|)`` and
is NaN). Complex input keeps the plain composite formulas (holomorphic, conjugated), and so does
the cuda device, which has no kernels for the two maps.
"""

from __future__ import annotations

import numpy as np

from ._shape import wrap_dim
from .memory_formats import row_major
from .op_fields import SAVE_ALL
from .registry import OPAQUE, apply, defop
from .surface import public


def _logcumsumexp_impl(x, dim):
    if x.ndim == 0:
        return x.copy()
    if x.dtype.kind != "c":  # (accumulated as torch's CPU scans: float32 in double, half in float)
        acc = {np.float32: np.float64, np.float16: np.float32}.get(x.dtype.type, x.dtype)
        return np.logaddexp.accumulate(x.astype(acc, copy=False), axis=dim).astype(x.dtype)
    from .torch_extras import _logaddexp_impl  # (torch's complex logaddexp, step by step)

    steps = np.moveaxis(x, dim, 0)
    out = np.empty_like(steps)
    for k in range(steps.shape[0]):
        out[k] = steps[0] if k == 0 else _logaddexp_impl(out[k - 1], steps[k])
    return np.moveaxis(out, 0, dim)


def _logcumsumexp_meta(x, dim):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{x.dtype._scalar_name}'")
    return tuple(x.shape), x.dtype


# ---------------------------------------------------------------- the two maps, in log space


def _signed_logs(v: np.ndarray) -> tuple:
    """``log`` of the positive entries and of minus the negative ones (``-inf`` elsewhere; a
    NaN stays in the first, so it propagates)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.log(np.where((v > 0) | np.isnan(v), v, 0.0)),
                np.log(np.where(v < 0, -v, 0.0)))


def _scan(v: np.ndarray, dim: int, reverse: bool) -> np.ndarray:
    if reverse:
        return np.flip(np.logaddexp.accumulate(np.flip(v, dim), axis=dim), dim)
    return np.logaddexp.accumulate(v, axis=dim)


def _signed_sum(v, x, ans, dim: int, backward: bool) -> np.ndarray:
    """``backward``: ``sum_{j>=i} v_j exp(x_i - ans_j)``; else ``sum_{i<=j} v_i exp(x_i -
    ans_j)``; in float64: float32 and half inputs round once, at the end, and their ``ans`` is
    recomputed (its float32 rounding alone would cost the result ~15 ulp at ``x ~ 100``)."""
    dt = x.dtype
    v, x64 = np.broadcast_to(v, x.shape).astype(np.float64), x.astype(np.float64)
    ans = ans if dt == np.float64 else np.logaddexp.accumulate(x64, axis=dim)  # (ndim > 0)
    x = x64
    pos, neg = _signed_logs(v)
    with np.errstate(over="ignore", invalid="ignore"):
        if backward:
            out = np.exp(_scan(pos - ans, dim, True) + x) - np.exp(_scan(neg - ans, dim, True) + x)
        else:
            out = np.exp(_scan(pos + x, dim, False) - ans) - np.exp(_scan(neg + x, dim, False)
                                                                   - ans)
    return out.astype(dt)


def _backward_impl(g, x, ans, dim):
    return _signed_sum(g, x, ans, dim, True)


def _tangent_impl(t, x, ans, dim):
    return _signed_sum(t, x, ans, dim, False)


def _composite_backward(g, x, ans, dim):
    w, e = (-ans).exp(), x.exp()
    if x.dtype.is_complex:
        w, e = w.conj(), e.conj()
    return (g * w).flip(dim).cumsum(dim).flip(dim) * e


def _composite_tangent(t, x, ans, dim):
    return (t * x.exp()).cumsum(dim) * (-ans).exp()


def _on_cuda(composite):
    """A ``decompose`` for the cuda device only (the CPU, traced too, keeps the op)."""
    def decompose(v, x, ans, dim):
        return composite(v, x, ans, dim) if x.device.type == "cuda" else NotImplemented
    return decompose


def backward(g, x, ans, dim: int):
    if x.dtype.is_complex:
        return _composite_backward(g, x, ans, dim)
    return apply(LOGCUMSUMEXP_BACKWARD, g, x, ans, dim=dim)


def tangent(t, x, ans, dim: int):
    if x.dtype.is_complex:
        return _composite_tangent(t, x, ans, dim)
    return apply(LOGCUMSUMEXP_TANGENT, t, x, ans, dim=dim)


def _maps_jvp(this, tangents, res, v, x, ans, dim):
    """Both maps are linear in ``v`` and scale term (i, j) by ``exp(x_i - ans_j)``."""
    tv, tx, tans = tangents
    out = res * 0 if tv is None else this(tv, x, ans, dim)
    if tx is not None:
        out = out + (res * tx if this is backward else this(v * tx, x, ans, dim))
    if tans is not None:
        out = out - (this(v * tans, x, ans, dim) if this is backward else res * tans)
    return out


_MAP_FIELDS = dict(kind=OPAQUE, meta=lambda v, x, ans, dim: (tuple(x.shape), x.dtype),
                   save=SAVE_ALL, save_output=True)
LOGCUMSUMEXP_BACKWARD = defop(
    "logcumsumexp_backward", row_major(_backward_impl), **_MAP_FIELDS,
    vjp=(lambda h, res, g, x, ans, dim: tangent(h, x, ans, dim),
         lambda h, res, g, x, ans, dim: h * res,
         lambda h, res, g, x, ans, dim: -g * tangent(h, x, ans, dim)),
    jvp=lambda tangents, res, g, x, ans, dim: _maps_jvp(backward, tangents, res, g, x, ans,
                                                        dim),
    decompose=_on_cuda(_composite_backward))
LOGCUMSUMEXP_TANGENT = defop(
    "logcumsumexp_tangent", row_major(_tangent_impl), **_MAP_FIELDS,
    vjp=(lambda h, res, t, x, ans, dim: backward(h, x, ans, dim),
         lambda h, res, t, x, ans, dim: t * backward(h, x, ans, dim),
         lambda h, res, t, x, ans, dim: -h * res),
    jvp=lambda tangents, res, t, x, ans, dim: _maps_jvp(tangent, tangents, res, t, x, ans, dim),
    decompose=_on_cuda(_composite_tangent))


def _logcumsumexp_vjp(g, ans, x, dim):
    return g if x.ndim == 0 else backward(g, x, ans, dim)


def _logcumsumexp_jvp(tangents, ans, x, dim):
    t = tangents[0]
    return t if x.ndim == 0 else tangent(t.expand_as(x), x, ans, dim)


LOGCUMSUMEXP = defop("logcumsumexp", row_major(_logcumsumexp_impl), kind=OPAQUE,
                     meta=_logcumsumexp_meta,
                     save=(0,), save_output=True, vjp=(_logcumsumexp_vjp,),
                     jvp=_logcumsumexp_jvp)


@public("logcumsumexp", method=True)
def logcumsumexp(input, dim: int):  # noqa: A002
    """``log(cumsum(exp(input), dim))`` without overflow."""
    return apply(LOGCUMSUMEXP, input, dim=wrap_dim(dim, input.ndim))
