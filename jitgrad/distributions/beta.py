"""``torch.distributions.beta``: ``Beta`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions.dirichlet import Dirichlet
from jitgrad.distributions.exp_family import ExponentialFamily
from jitgrad.distributions.utils import broadcast_all
from numbers import Number as _Number

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Beta distribution on (0, 1), sampled through a two-component Dirichlet.

    Args:
        concentration1: First concentration (alpha), positive.
        concentration0: Second concentration (beta), positive.
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
        if isinstance(concentration1, _Number) and isinstance(concentration0, _Number):
            concentration1_concentration0 = jitgrad.tensor(
                [float(concentration1), float(concentration0)]
            )
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration1_concentration0 = jitgrad.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration1_concentration0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Any:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Any:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = jitgrad.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self) -> Any:
        return self._dirichlet.entropy()

    @property
    def concentration1(self) -> Any:
        result = self._dirichlet.concentration[..., 0]
        if isinstance(result, _Number):
            return jitgrad.tensor([result])
        else:
            return result

    @property
    def concentration0(self) -> Any:
        result = self._dirichlet.concentration[..., 1]
        if isinstance(result, _Number):
            return jitgrad.tensor([result])
        else:
            return result

    @property
    def _natural_params(self) -> tuple[Any, Any]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Any, y: Any) -> Any:
        return jitgrad.lgamma(x) + jitgrad.lgamma(y) - jitgrad.lgamma(x + y)
