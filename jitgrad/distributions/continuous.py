"""Univariate continuous distributions: Normal, Uniform, Exponential, Laplace and Cauchy
(LogNormal and Gumbel, transformed distributions as in torch, have their own modules), composed
from jitgrad ops so gradients flow through ``log_prob`` and ``rsample``."""

from __future__ import annotations

import math
from numbers import Number, Real
from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.distribution import _EMPTY, Distribution
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import _finfo, _standard_normal, broadcast_all
from jitgrad.ops.rng import sample

__all__ = ["Cauchy", "Exponential", "Laplace", "Normal", "Uniform"]


def _uniform(shape: Any, like: Any, low: float = 0.0, high: float = 1.0) -> Any:
    """Uniform draws in ``[low, high)`` of ``shape`` with ``like``'s dtype (``uniform_``'s)."""
    if like.device.type == "cpu" and (low, high) != (0.0, 1.0):
        return sample("uniform", tuple(shape), like.dtype, low=float(low), high=float(high))
    u = jitgrad.rand(tuple(shape), dtype=like.dtype, device=like.device)
    if low == 0.0 and high == 1.0:
        return u
    return u * (high - low) + low


def _log(x: Any) -> Any:
    return math.log(x) if isinstance(x, Real) else x.log()


class _LocScale(Distribution):
    """Shared setup of the two-parameter ``loc``/``scale`` families."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = jitgrad.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


class Normal(_LocScale, ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Args:
        loc: Mean of the distribution.
        scale: Standard deviation (positive).
        validate_args: Whether to validate parameters and values.
    """

    _mean_carrier_measure = 0

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = _log(self.scale)
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + jitgrad.erf((value - self.loc) * self.scale.reciprocal()
                                      / math.sqrt(2)))

    def icdf(self, value: Any) -> Any:
        return self.loc + self.scale * jitgrad.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Any:
        return 0.5 + 0.5 * math.log(2 * math.pi) + jitgrad.log(self.scale)

    @property
    def _natural_params(self) -> tuple[Any, ...]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return -0.25 * x.pow(2) / y + 0.5 * jitgrad.log(-math.pi / y)


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``.

    Args:
        low: Lower bound (inclusive).
        high: Upper bound (exclusive).
        validate_args: Whether to validate parameters and values.
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> dict:
        # (as torch: each bound is checked against the other, so low < high)
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None):
        self.low, self.high = broadcast_all(low, high)
        if isinstance(low, Number) and isinstance(high, Number):
            batch_shape = jitgrad.Size()
        else:
            batch_shape = self.low.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Any:
        return float("nan") * self.high

    @property
    def stddev(self) -> Any:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Any:
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        rand = _uniform(shape, self.low)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return jitgrad.log(lb.mul(ub)) - jitgrad.log(self.high - self.low)

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Any) -> Any:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Any:
        return jitgrad.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate`` (mean ``1 / rate``).

    Args:
        rate: Rate (positive).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = jitgrad.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Any:
        return jitgrad.zeros_like(self.rate)

    @property
    def stddev(self) -> Any:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Any:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        if self.rate.device.type == "cpu":  # (torch's exponential_ draws)
            return sample("exponential", tuple(shape), self.rate.dtype) / self.rate
        # 1 - u lies in (0, 1], so the standard exponential draw is finite.
        e = -jitgrad.log1p(-_uniform(shape, self.rate))
        return e / self.rate

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - jitgrad.exp(-self.rate * value)

    def icdf(self, value: Any) -> Any:
        return -jitgrad.log1p(-value) / self.rate

    def entropy(self) -> Any:
        return 1.0 - jitgrad.log(self.rate)

    @property
    def _natural_params(self) -> tuple[Any, ...]:
        return (-self.rate,)

    def _log_normalizer(self, x: Any) -> Any:
        return -jitgrad.log(-x)


class Laplace(_LocScale):
    """Laplace distribution with location ``loc`` and scale ``scale``.

    Args:
        loc: Mean of the distribution.
        scale: Scale (positive).
        validate_args: Whether to validate parameters and values.
    """

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Any:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        eps = _finfo(self.loc)[1]
        u = _uniform(shape, self.loc, eps - 1, 1)
        return self.loc - self.scale * u.sign() * jitgrad.log1p(-u.abs())

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return -jitgrad.log(2 * self.scale) - jitgrad.abs(value - self.loc) / self.scale

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * jitgrad.expm1(
            -(value - self.loc).abs() / self.scale
        )

    def icdf(self, value: Any) -> Any:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * jitgrad.log1p(-2 * term.abs())

    def entropy(self) -> Any:
        return 1 + jitgrad.log(2 * self.scale)


class Cauchy(_LocScale):
    """Cauchy (Lorentz) distribution; its mean is undefined and its variance infinite.

    Args:
        loc: Mode (median).
        scale: Half width at half maximum (positive).
        validate_args: Whether to validate parameters and values.
    """

    @property
    def mean(self) -> Any:
        return jitgrad.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return jitgrad.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        if self.loc.device.type == "cpu":  # (torch's cauchy_ draws)
            return self.loc + sample("cauchy", tuple(shape), self.loc.dtype) * self.scale
        u = _uniform(shape, self.loc)
        return self.loc + self.scale * jitgrad.tan(math.pi * (u - 0.5))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return jitgrad.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Any) -> Any:
        return jitgrad.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Any:
        return math.log(4 * math.pi) + self.scale.log()
