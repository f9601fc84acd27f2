"""``torch.distributions.negative_binomial``: ``NegativeBinomial`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions.distribution import _EMPTY
import jitgrad.nn.functional as F
from jitgrad.distributions import constraints
from jitgrad.distributions.discrete import Poisson
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.gamma import Gamma
from jitgrad.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Negative binomial: number of successes before ``total_count`` failures.

    Args:
        total_count: Number of failures, nonnegative.
        probs: Success probability in [0, 1) (exclusive with ``logits``).
        logits: Log-odds of success (exclusive with ``probs``).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Any | float,
        probs: Any | None = None,
        logits: Any | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            if logits is None:
                raise AssertionError("logits is unexpectedly None")
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Any:
        return self._param.new(*args, **kwargs)

    @property
    def mean(self) -> Any:
        return self.total_count * jitgrad.exp(self.logits)

    @property
    def mode(self) -> Any:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Any:
        return self.mean / jitgrad.sigmoid(-self.logits)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> jitgrad.Size:
        return self._param.size()

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(
            concentration=self.total_count, rate=jitgrad.exp(-self.logits), validate_args=False
        )

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        with jitgrad.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(
            -self.logits
        ) + value * F.logsigmoid(self.logits)
        log_normalization = (
            -jitgrad.lgamma(self.total_count + value)
            + jitgrad.lgamma(1.0 + value)
            + jitgrad.lgamma(self.total_count)
        )
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
