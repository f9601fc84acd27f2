"""``torch.distributions.multinomial``: ``Multinomial`` (ported from torch 2.13)."""

from __future__ import annotations

from typing import Any

import jitgrad
from jitgrad.distributions.distribution import _EMPTY
from math import inf
from jitgrad.distributions import constraints
from jitgrad.distributions.discrete import Categorical
from jitgrad.distributions.discrete import Binomial
from jitgrad.distributions.distribution import Distribution
from jitgrad.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Multinomial distribution of ``total_count`` draws over categories.

    Args:
        total_count: Number of trials (an int).
        probs: Event probabilities (exclusive with ``logits``).
        logits: Unnormalized log probabilities (exclusive with ``probs``).
        validate_args: Whether to validate parameters and values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    total_count: int

    @property
    def mean(self) -> Any:
        return self.probs * self.total_count

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(
        self,
        total_count: int = 1,
        probs: Any | None = None,
        logits: Any | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        self._binomial = Binomial(
            total_count=total_count, probs=self.probs, validate_args=validate_args
        )
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = jitgrad.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Any:
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> Any:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    @property
    def param_shape(self) -> jitgrad.Size:
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = _EMPTY) -> Any:
        sample_shape = jitgrad.Size(sample_shape)
        samples = self._categorical.sample(jitgrad.Size((self.total_count,)) + sample_shape)
        shifted_idx = list(range(samples.dim()))
        shifted_idx.append(shifted_idx.pop(0))
        samples = samples.permute(*shifted_idx)
        counts = jitgrad.zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype)
        counts = counts.scatter_add(-1, samples, jitgrad.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self) -> Any:
        n = jitgrad.tensor(self.total_count)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - jitgrad.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = jitgrad.exp(self._binomial.log_prob(support))
        weights = jitgrad.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone(memory_format=jitgrad.contiguous_format)
        log_factorial_n = jitgrad.lgamma(value.sum(-1) + 1)
        log_factorial_xs = jitgrad.lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -inf)] = 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
