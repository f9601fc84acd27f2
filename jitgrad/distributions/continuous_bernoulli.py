"""``torch.distributions.continuous_bernoulli``: ``ContinuousBernoulli`` (ported from torch
2.13)."""

from __future__ import annotations

from typing import Any

import math
import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from jitgrad.distributions import constraints
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from jitgrad.nn.functional import binary_cross_entropy_with_logits
from numbers import Number

_Number = Number
__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019).

    Args:
        probs: Parameter in (0, 1) (exclusive with ``logits``).
        logits: Real parameter (exclusive with ``probs``).
        lims: Interval around 0.5 where the Taylor expansion of the normalizer is used.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(
        self,
        probs: Any | Number | None = None,
        logits: Any | Number | None = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None:
                if not self.arg_constraints["probs"].check(self.probs).all():
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            if logits is None:
                raise AssertionError("logits is unexpectedly None")
            is_scalar = isinstance(logits, _Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        if is_scalar:
            batch_shape = _EMPTY
        else:
            batch_shape = self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = jitgrad.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Any:
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self) -> Any:
        return jitgrad.max(
            jitgrad.le(self.probs, self._lims[0]), jitgrad.gt(self.probs, self._lims[1])
        )

    def _cut_probs(self) -> Any:
        return jitgrad.where(
            self._outside_unstable_region(),
            self.probs,
            self._lims[0] * jitgrad.ones_like(self.probs),
        )

    def _cont_bern_log_norm(self) -> Any:
        cut_probs = self._cut_probs()
        cut_probs_below_half = jitgrad.where(
            jitgrad.le(cut_probs, 0.5), cut_probs, jitgrad.zeros_like(cut_probs)
        )
        cut_probs_above_half = jitgrad.where(
            jitgrad.ge(cut_probs, 0.5), cut_probs, jitgrad.ones_like(cut_probs)
        )
        log_norm = jitgrad.log(
            jitgrad.abs(jitgrad.log1p(-cut_probs) - jitgrad.log(cut_probs))
        ) - jitgrad.where(
            jitgrad.le(cut_probs, 0.5),
            jitgrad.log1p(-2.0 * cut_probs_below_half),
            jitgrad.log(2.0 * cut_probs_above_half - 1.0),
        )
        x = jitgrad.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return jitgrad.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Any:
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (
            jitgrad.log1p(-cut_probs) - jitgrad.log(cut_probs)
        )
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * jitgrad.pow(x, 2)) * x
        return jitgrad.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Any:
        return jitgrad.sqrt(self.variance)

    @property
    def variance(self) -> Any:
        cut_probs = self._cut_probs()
        vars = cut_probs * (cut_probs - 1.0) / jitgrad.pow(
            1.0 - 2.0 * cut_probs, 2
        ) + 1.0 / jitgrad.pow(jitgrad.log1p(-cut_probs) - jitgrad.log(cut_probs), 2)
        x = jitgrad.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return jitgrad.where(self._outside_unstable_region(), vars, taylor)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> jitgrad.Size:
        return self._param.size()

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        u = jitgrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with jitgrad.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        u = jitgrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (
            -binary_cross_entropy_with_logits(logits, value, reduction="none")
            + self._cont_bern_log_norm()
        )

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (
            jitgrad.pow(cut_probs, value) * jitgrad.pow(1.0 - cut_probs, 1.0 - value)
            + cut_probs
            - 1.0
        ) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = jitgrad.where(self._outside_unstable_region(), cdfs, value)
        return jitgrad.where(
            jitgrad.le(value, 0.0),
            jitgrad.zeros_like(value),
            jitgrad.where(jitgrad.ge(value, 1.0), jitgrad.ones_like(value), unbounded_cdfs),
        )

    def icdf(self, value: Any) -> Any:
        cut_probs = self._cut_probs()
        return jitgrad.where(
            self._outside_unstable_region(),
            (
                jitgrad.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0))
                - jitgrad.log1p(-cut_probs)
            )
            / (jitgrad.log(cut_probs) - jitgrad.log1p(-cut_probs)),
            value,
        )

    def entropy(self) -> Any:
        log_probs0 = jitgrad.log1p(-self.probs)
        log_probs1 = jitgrad.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Any]:
        return (self.logits,)

    def _log_normalizer(self, x: Any) -> Any:
        out_unst_reg = jitgrad.max(
            jitgrad.le(x, self._lims[0] - 0.5), jitgrad.gt(x, self._lims[1] - 0.5)
        )
        cut_nat_params = jitgrad.where(
            out_unst_reg, x, (self._lims[0] - 0.5) * jitgrad.ones_like(x)
        )
        log_norm = jitgrad.log(jitgrad.abs(jitgrad.special.expm1(cut_nat_params))) - jitgrad.log(
            jitgrad.abs(cut_nat_params)
        )
        taylor = 0.5 * x + jitgrad.pow(x, 2) / 24.0 - jitgrad.pow(x, 4) / 2880.0
        return jitgrad.where(out_unst_reg, log_norm, taylor)
