"""``torch.distributions.log_normal``: ``LogNormal``, a ``Normal`` pushed through ``exp`` (as
torch's, a ``TransformedDistribution``: ``base_dist`` is the Normal, ``log_prob``/``cdf`` come
from the transform)."""

from __future__ import annotations

from typing import Any

from jitgrad.distributions import constraints
from jitgrad.distributions.continuous import Normal
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """Distribution of ``exp(X)`` for ``X ~ Normal(loc, scale)``.

    Args:
        loc: Mean of the log of the distribution.
        scale: Standard deviation of the log (positive).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Normal

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Any:
        return self.base_dist.loc

    @property
    def scale(self) -> Any:
        return self.base_dist.scale

    @property
    def mean(self) -> Any:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Any:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Any:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Any:
        return self.base_dist.entropy() + self.loc
