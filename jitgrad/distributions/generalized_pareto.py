"""``torch.distributions.generalized_pareto``: ``GeneralizedPareto`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any


import math
from numbers import Number, Real
import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from math import inf, nan
from jitgrad.distributions import constraints
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution.

    Args:
        loc: Location.
        scale: Scale, positive.
        concentration: Shape (tail index); the support is bounded above when negative.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: Any = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if (
            isinstance(loc, Number)
            and isinstance(scale, Number)
            and isinstance(concentration, Number)
        ):
            batch_shape = _EMPTY
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        u = jitgrad.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = jitgrad.isclose(self.concentration, jitgrad.zeros_like(self.concentration))
        safe_conc = jitgrad.where(
            eq_zero, jitgrad.ones_like(self.concentration), self.concentration
        )
        y = 1 / safe_conc + jitgrad.ones_like(z)
        where_nonzero = jitgrad.where(y == 0, y, y * jitgrad.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - jitgrad.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = jitgrad.isclose(self.concentration, jitgrad.zeros_like(self.concentration))
        safe_conc = jitgrad.where(
            eq_zero, jitgrad.ones_like(self.concentration), self.concentration
        )
        where_nonzero = -jitgrad.log1p(safe_conc * z) / safe_conc
        return jitgrad.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value: Any) -> Any:
        return jitgrad.log1p(-jitgrad.exp(self.log_survival_function(value)))

    def cdf(self, value: Any) -> Any:
        return jitgrad.exp(self.log_cdf(value))

    def icdf(self, value: Any) -> Any:
        loc = self.loc
        scale = self.scale
        concentration = self.concentration
        eq_zero = jitgrad.isclose(concentration, jitgrad.zeros_like(concentration))
        safe_conc = jitgrad.where(eq_zero, jitgrad.ones_like(concentration), concentration)
        logu = jitgrad.log1p(-value)
        where_nonzero = loc + scale / safe_conc * jitgrad.expm1(-safe_conc * logu)
        where_zero = loc - scale * logu
        return jitgrad.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x: Any) -> Any:
        return (x - self.loc) / self.scale

    @property
    def mean(self) -> Any:
        concentration = self.concentration
        valid = concentration < 1
        safe_conc = jitgrad.where(valid, concentration, 0.5)
        result = self.loc + self.scale / (1 - safe_conc)
        return jitgrad.where(valid, result, nan)

    @property
    def variance(self) -> Any:
        concentration = self.concentration
        valid = concentration < 0.5
        safe_conc = jitgrad.where(valid, concentration, 0.25)
        result = self.scale**2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return jitgrad.where(valid, result, nan)

    def entropy(self) -> Any:
        ans = jitgrad.log(self.scale) + self.concentration + 1
        return jitgrad.broadcast_to(ans, self._batch_shape)

    @property
    def mode(self) -> Any:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        lower = self.loc
        upper = jitgrad.where(self.concentration < 0, lower - self.scale / self.concentration, inf)
        return constraints.interval(lower, upper)
