"""``torch.distributions.relaxed_categorical``: ``ExpRelaxedCategorical``,
``RelaxedOneHotCategorical`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from jitgrad.distributions import constraints
from jitgrad.distributions.discrete import Categorical
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.transformed_distribution import TransformedDistribution
from jitgrad.distributions.transforms import ExpTransform
from jitgrad.distributions.utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """Log of a ``RelaxedOneHotCategorical`` sample (Concrete / Gumbel-softmax).

    Args:
        temperature: Relaxation temperature (a tensor).
        probs: Event probabilities (exclusive with ``logits``).
        logits: Unnormalized log probabilities (exclusive with ``probs``).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        temperature: Any,
        probs: Any | None = None,
        logits: Any | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        super(ExpRelaxedCategorical, new).__init__(
            batch_shape, self.event_shape, validate_args=False
        )
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Any:
        return self._categorical._new(*args, **kwargs)

    @property
    def param_shape(self) -> jitgrad.Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(
            jitgrad.rand(shape, dtype=self.logits.dtype, device=self.logits.device)
        )
        gumbels = -(-uniforms.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Any) -> Any:
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = jitgrad.full_like(
            self.temperature, float(K)
        ).lgamma() - self.temperature.log().mul(-(K - 1))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Relaxed one-hot categorical (Gumbel-softmax) distribution on the simplex.

    Args:
        temperature: Relaxation temperature (a tensor).
        probs: Event probabilities (exclusive with ``logits``).
        logits: Unnormalized log probabilities (exclusive with ``probs``).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True
    base_dist: ExpRelaxedCategorical

    def __init__(
        self,
        temperature: Any,
        probs: Any | None = None,
        logits: Any | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Any:
        return self.base_dist.logits

    @property
    def probs(self) -> Any:
        return self.base_dist.probs
