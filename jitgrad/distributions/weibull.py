"""``torch.distributions.weibull``: ``Weibull`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.continuous import Exponential
from jitgrad.distributions.utils import euler_constant
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import AffineTransform, PowerTransform
from jitgrad.distributions.utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Two-parameter Weibull distribution.

    Args:
        scale: Scale (lambda), positive.
        concentration: Shape (k), positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(
        self, scale: Any | float, concentration: Any | float, validate_args: bool | None = None
    ) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(jitgrad.ones_like(self.scale), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [
            PowerTransform(exponent=new.concentration_reciprocal),
            AffineTransform(loc=0, scale=new.scale),
        ]
        super(Weibull, new).__init__(base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.scale * jitgrad.exp(jitgrad.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Any:
        return (
            self.scale
            * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()
        )

    @property
    def variance(self) -> Any:
        return self.scale.pow(2) * (
            jitgrad.exp(jitgrad.lgamma(1 + 2 * self.concentration_reciprocal))
            - jitgrad.exp(2 * jitgrad.lgamma(1 + self.concentration_reciprocal))
        )

    def entropy(self) -> Any:
        return (
            euler_constant * (1 - self.concentration_reciprocal)
            + jitgrad.log(self.scale * self.concentration_reciprocal)
            + 1
        )
