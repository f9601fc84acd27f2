"""``torch.distributions.inverse_gamma``: ``InverseGamma`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import math

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.gamma import Gamma
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Inverse-gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``.

    Args:
        concentration: Shape, positive.
        rate: Rate, positive (the scale of the inverse gamma).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Gamma

    def __init__(
        self, concentration: Any | float, rate: Any | float, validate_args: bool | None = None
    ) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Any:
        return self.base_dist.concentration

    @property
    def rate(self) -> Any:
        return self.base_dist.rate

    @property
    def mean(self) -> Any:
        result = self.rate / (self.concentration - 1)
        return jitgrad.where(self.concentration > 1, result, math.inf)

    @property
    def mode(self) -> Any:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Any:
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return jitgrad.where(self.concentration > 2, result, math.inf)

    def entropy(self) -> Any:
        return (
            self.concentration
            + self.rate.log()
            + self.concentration.lgamma()
            - (1 + self.concentration) * self.concentration.digamma()
        )
