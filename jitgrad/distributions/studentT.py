"""``torch.distributions.studentT``: ``StudentT`` (ported from torch 2.13)."""

# ruff: noqa: N999 (torch's module name)
from __future__ import annotations

from typing import Any

import math
import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from math import inf, nan
from jitgrad.distributions import constraints
from jitgrad.distributions.chi2 import Chi2
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution.

    Args:
        df: Degrees of freedom, positive.
        loc: Location.
        scale: Scale, positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Any:
        m = self.loc.clone(memory_format=jitgrad.contiguous_format)
        m[self.df <= 1] = nan
        return m

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        m = self.df.clone(memory_format=jitgrad.contiguous_format)
        m[self.df > 2] = (
            self.scale[self.df > 2].pow(2) * self.df[self.df > 2] / (self.df[self.df > 2] - 2)
        )
        m[(self.df <= 2) & (self.df > 1)] = inf
        m[self.df <= 1] = nan
        return m

    def __init__(
        self,
        df: Any | float,
        loc: Any | float = 0.0,
        scale: Any | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=validate_args)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * jitgrad.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + jitgrad.lgamma(0.5 * self.df)
            - jitgrad.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * jitgrad.log1p(y**2.0 / self.df) - Z

    def entropy(self) -> Any:
        lbeta = (
            jitgrad.lgamma(0.5 * self.df) + math.lgamma(0.5) - jitgrad.lgamma(0.5 * (self.df + 1))
        )
        return (
            self.scale.log()
            + 0.5
            * (self.df + 1)
            * (jitgrad.digamma(0.5 * (self.df + 1)) - jitgrad.digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )
