"""``torch.distributions.logistic_normal``: ``LogisticNormal`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

from jitgrad.distributions import constraints
from jitgrad.distributions.independent import Independent
from jitgrad.distributions.continuous import Normal
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """Logistic-normal distribution: a normal pushed onto the simplex by stick-breaking.

    Args:
        loc: Mean of the base normal.
        scale: Standard deviation of the base normal.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True
    base_dist: Independent[Normal]

    def __init__(
        self, loc: Any | float, scale: Any | float, validate_args: bool | None = None
    ) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Any:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Any:
        return self.base_dist.base_dist.scale
