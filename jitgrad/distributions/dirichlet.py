"""``torch.distributions.dirichlet``: ``Dirichlet`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions import constraints
from jitgrad.distributions._standard_gamma import _dirichlet_rsample
from jitgrad.distributions.exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution on the simplex; ``rsample`` normalizes reparameterized gammas.

    Args:
        concentration: Concentrations (last dim is the event), positive.
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Any, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = (concentration.shape[:-1], concentration.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Any:
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        # normalized independent gammas (torch's draws); the gradient holds each coordinate's
        # marginal Beta CDF fixed, torch's (distributions/_dirichlet_grad.py)
        return _dirichlet_rsample(concentration)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return (
            jitgrad.xlogy(self.concentration - 1.0, value).sum(-1)
            + jitgrad.lgamma(self.concentration.sum(-1))
            - jitgrad.lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self) -> Any:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Any:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        one_hot = jitgrad.nn.functional.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1])
        return jitgrad.where(mask, one_hot.to(mode), mode)

    @property
    def variance(self) -> Any:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Any:
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            jitgrad.lgamma(self.concentration).sum(-1)
            - jitgrad.lgamma(a0)
            - (k - a0) * jitgrad.digamma(a0)
            - ((self.concentration - 1.0) * jitgrad.digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self) -> tuple[Any]:
        return (self.concentration,)

    def _log_normalizer(self, x: Any) -> Any:
        return x.lgamma().sum(-1) - jitgrad.lgamma(x.sum(-1))
