"""``kl_divergence(p, q)`` and ``register_kl``, as ``torch.distributions.kl``.

The implementation for a pair of types is the registered one whose types are the most specific
match (by method resolution order); an ambiguous match warns, as torch's does. The closed forms
are torch's, written in jitgrad ops, so gradients flow through them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import total_ordering
from typing import Any

import jitgrad
from jitgrad.distributions.continuous import Exponential, Laplace, Normal, Uniform
from jitgrad.distributions.discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.independent import Independent
from jitgrad.distributions.multivariate_normal import MultivariateNormal
from jitgrad.distributions.utils import _sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMOIZE: dict[tuple[type, type], Callable] = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from ``type_q``.

    Args:
        type_p: A subclass of ``Distribution``.
        type_q: A subclass of ``Distribution``.
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning,
                      stacklevel=3)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Any:
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, batched over the distributions' batch shape.

    Raises:
        NotImplementedError: no implementation is registered for the pair of types.
    """
    key = (type(p), type(q))
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _dispatch_kl(*key)
        _KL_MEMOIZE[key] = fun
    if fun is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_where(condition: Any, value: Any) -> Any:
    return jitgrad.where(condition, jitgrad.full_like(value, math.inf), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    softplus = jitgrad.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _infinite_where(q.probs == 0, t1)
    t1 = jitgrad.where(p.probs == 0, jitgrad.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _infinite_where(q.probs == 1, t2)
    t2 = jitgrad.where(p.probs == 1, jitgrad.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Any:
    t = p.probs * (p.logits - q.logits)
    t = _infinite_where((q.probs == 0).expand_as(t), t)
    t = jitgrad.where((p.probs == 0).expand_as(t), jitgrad.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical,
                                            q: OneHotCategorical) -> Any:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Any:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Any:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Any:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Any:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Any:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist),
                          p.reinterpreted_batch_ndims)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal,
                                              q: MultivariateNormal) -> Any:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two Multivariate Normals with{' ' * 26}"
                         "different event shapes cannot be computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    shape = jitgrad.broadcast_shapes(q_tril.shape[:-2], p_tril.shape[:-2])
    q_full = q_tril.expand(tuple(shape) + (n, n))
    p_full = p_tril.expand(tuple(shape) + (n, n))
    term2 = jitgrad.linalg.solve_triangular(q_full, p_full, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).unsqueeze(-1)
    q_loc = q_tril.expand(tuple(jitgrad.broadcast_shapes(q_tril.shape[:-2], diff.shape[:-2]))
                          + (n, n))
    term3 = jitgrad.linalg.solve_triangular(q_loc, diff, upper=False).pow(2).sum((-2, -1))
    return half_term1 + 0.5 * (term2 + term3 - n)
