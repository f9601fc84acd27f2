"""``torch.distributions.gumbel``: ``Gumbel``, as torch builds it: a ``Uniform(tiny, 1 - eps)``
pushed through ``-log``, ``log`` and ``loc - scale * x`` (a ``TransformedDistribution``, so
its samples are torch's draw for draw), with its own ``log_prob`` for precision."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.continuous import Uniform
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import AffineTransform, ExpTransform
from jitgrad.distributions.utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution.

    Args:
        loc: Location.
        scale: Scale (positive).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = jitgrad.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(jitgrad.full_like(self.loc, finfo.tiny),
                                jitgrad.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv,
                      AffineTransform(loc=0, scale=-jitgrad.ones_like(self.scale)),
                      ExpTransform().inv,
                      AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Any:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def entropy(self) -> Any:
        return self.scale.log() + (1 + euler_constant)
