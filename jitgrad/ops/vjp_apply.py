"""Where an op's VJP rule is applied, for both engines: the eager engine's nodes and rule
programs, and the JIT's backward sweep, call ``run_vjp``; it sums each gradient to its
input's shape and casts it to its dtype (``fit_grad``), the one place broadcasting is undone.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from . import registry
from .registry import Meta, OpDef


def run_vjp(op: OpDef, grads: tuple, ans: Any, inputs: tuple, params: dict,
            needs: tuple) -> list:
    """Applies ``op``'s VJP rule. ``grads`` has one cotangent per output (zeros, never None).

    ``op.vjp`` is either one function returning a gradient per input, or a tuple with one
    function (or None) per input, so unneeded gradients are never computed. The result is
    summed to each input's shape and cast to its dtype here, in one place for both engines.
    """
    fit_to = inputs  # (each gradient is cast to its input's dtype: rounded once)
    if op.opmath_backward and _sixteen_bit(grads):
        grads, ans, inputs = _in_float32(grads), _in_float32(ans), _in_float32(inputs)
    g = grads[0] if op.n_outputs == 1 else tuple(grads)
    rule = op.vjp
    if type(rule) is tuple:
        out = [None] * len(rule)
        i = 0
        for r in rule:
            if r is not None and needs[i]:
                gi = r(g, ans, *inputs, **params) if params else r(g, ans, *inputs)
                if gi is not None:
                    out[i] = _fitted(gi, fit_to[i])
            i += 1
        return out
    out = list(rule(g, ans, *inputs, **params))
    for i, gi in enumerate(out):
        if gi is not None:
            out[i] = _fitted(gi, fit_to[i]) if needs[i] else None
    return out


SIXTEEN_BIT = (dtypes.float16, dtypes.bfloat16)


def _sixteen_bit(grads: tuple) -> bool:
    return any(isinstance(g, registry.Tensor) and g.dtype in SIXTEEN_BIT for g in grads)


def _in_float32(values: Any) -> Any:
    """16-bit tensors (and Metas) of ``values`` as float32 (the rule's op math); ``_fitted``
    rounds each gradient back to its input's dtype once."""
    if isinstance(values, (tuple, list)):
        return tuple(_in_float32(v) for v in values)
    if isinstance(values, registry.Tensor):
        return values.float() if values.dtype in SIXTEEN_BIT else values
    if type(values) is Meta and values.dtype in SIXTEEN_BIT:
        return Meta(values.shape, dtypes.float32)
    return values


def _fitted(g: Any, x: Any) -> Any:
    """Gradient ``g`` summed to the shape and cast to the dtype of input ``x`` (a tensor or a
    ``Meta``); ``g`` itself when it already fits."""
    if type(x) is Meta:
        shape, dt = x.shape, x.dtype
    elif type(x) is registry.Tensor:  # an eager tensor (tracers are a subclass)
        shape, dt = x._data.shape, x._dtype
    else:
        shape, dt = x.shape, x.dtype
    if type(g) is registry.Tensor and g._dtype is dt and g._data.shape == shape:
        return g
    return fit_grad(g, shape, dt)


def fit_grad(g, shape: tuple, dt: dtypes.dtype):
    """Sums a broadcast gradient back to ``shape`` and casts it to ``dt`` (generic unbroadcast)."""
    if tuple(g.shape) != tuple(shape):
        g = sum_to(g, shape)
    if g.dtype is not dt:
        if g.dtype.is_complex and not dt.is_complex:
            g = g.real
        g = g.to(dt)
    return g


def sum_to(g, shape: tuple):
    """Sums ``g`` over the dimensions that broadcasting added or expanded to reach ``shape``."""
    shape = tuple(shape)
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if lead or g.shape != shape:
        g = g.reshape(shape)
    return g
