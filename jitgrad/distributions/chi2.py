"""``torch.distributions.chi2``: ``Chi2`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

from jitgrad.distributions import constraints
from jitgrad.distributions.gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (``Gamma(df / 2, 1 / 2)``).

    Args:
        df: Degrees of freedom, positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any | float, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Any:
        return self.concentration * 2
