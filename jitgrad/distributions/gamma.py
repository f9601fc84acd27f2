"""``torch.distributions.gamma``: ``Gamma`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from jitgrad.distributions import constraints
from jitgrad.distributions._standard_gamma import _standard_gamma
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import broadcast_all
from numbers import Number as _Number

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and ``rate``.

    ``rsample`` differentiates through the sample with the implicit reparameterization
    gradient (``_standard_gamma``); ``cdf`` is ``jitgrad.special.gammainc``, as torch's.

    Args:
        concentration: Shape, positive.
        rate: Rate (1 / scale), positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def mode(self) -> Any:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Any:
        return self.concentration / self.rate.pow(2)

    def __init__(
        self, concentration: Any | float, rate: Any | float, validate_args: bool | None = None
    ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, _Number) and isinstance(rate, _Number):
            batch_shape = _EMPTY
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value

    def log_prob(self, value: Any) -> Any:
        value = jitgrad.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            jitgrad.xlogy(self.concentration, self.rate)
            + jitgrad.xlogy(self.concentration - 1, value)
            - self.rate * value
            - jitgrad.lgamma(self.concentration)
        )

    def entropy(self) -> Any:
        return (
            self.concentration
            - jitgrad.log(self.rate)
            + jitgrad.lgamma(self.concentration)
            + (1.0 - self.concentration) * jitgrad.digamma(self.concentration)
        )

    @property
    def _natural_params(self) -> tuple[Any, Any]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return jitgrad.lgamma(x + 1) + (x + 1) * jitgrad.log(-y.reciprocal())

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return jitgrad.special.gammainc(self.concentration, self.rate * value)
