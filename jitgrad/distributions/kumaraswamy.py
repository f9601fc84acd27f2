"""``torch.distributions.kumaraswamy``: ``Kumaraswamy`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from math import nan
from jitgrad.distributions import constraints
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import AffineTransform, PowerTransform
from jitgrad.distributions.continuous import Uniform
from jitgrad.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a: Any, b: Any, n: Any) -> Any:
    arg1 = 1 + n / a
    log_value = jitgrad.lgamma(arg1) + jitgrad.lgamma(b) - jitgrad.lgamma(arg1 + b)
    return b * jitgrad.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on (0, 1).

    Args:
        concentration1: First shape (a), positive.
        concentration0: Second shape (b), positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Any | float,
        concentration0: Any | float,
        validate_args: bool | None = None,
    ) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(
            jitgrad.full_like(self.concentration0, 0),
            jitgrad.full_like(self.concentration0, 1),
            validate_args=validate_args,
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Any:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Any:
        log_mode = (
            self.concentration0.reciprocal() * (-self.concentration0).log1p()
            - (-self.concentration0 * self.concentration1).log1p()
        )
        log_mode = jitgrad.where(
            (self.concentration0 < 1) | (self.concentration1 < 1), nan, log_mode
        )
        return log_mode.exp()

    @property
    def variance(self) -> Any:
        return _moments(self.concentration1, self.concentration0, 2) - jitgrad.pow(self.mean, 2)

    def entropy(self) -> Any:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = jitgrad.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - jitgrad.log(self.concentration1) - jitgrad.log(self.concentration0)
