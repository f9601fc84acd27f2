"""``torch.distributions.fishersnedecor``: ``FisherSnedecor`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from math import nan
from jitgrad.distributions import constraints
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.gamma import Gamma
from jitgrad.distributions.utils import broadcast_all
from numbers import Number as _Number

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution.

    Args:
        df1: Numerator degrees of freedom, positive.
        df2: Denominator degrees of freedom, positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(
        self, df1: Any | float, df2: Any | float, validate_args: bool | None = None
    ) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=validate_args)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=validate_args)
        if isinstance(df1, _Number) and isinstance(df2, _Number):
            batch_shape = _EMPTY
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        df2 = self.df2.clone(memory_format=jitgrad.contiguous_format)
        df2[df2 <= 2] = nan
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Any:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        mode = jitgrad.where(self.df1 <= 2, nan, mode)
        return mode

    @property
    def variance(self) -> Any:
        df2 = self.df2.clone(memory_format=jitgrad.contiguous_format)
        df2[df2 <= 4] = nan
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Any = jitgrad.Size(())) -> Any:
        shape = self._extended_shape(sample_shape)
        X1 = self._gamma1.rsample(sample_shape).view(shape)
        X2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = jitgrad.finfo(X2.dtype).tiny
        X2 = X2.clamp(min=tiny)
        Y = X1 / X2
        Y = Y.clamp(min=tiny)
        return Y

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * jitgrad.log(value)
        t3 = (ct1 + ct2) * jitgrad.log1p(ct3 * value)
        return t1 + t2 - t3
