"""``torch.distributions.one_hot_categorical``: ``OneHotCategorical`` (defined in ``discrete``)
and ``OneHotCategoricalStraightThrough``."""

from __future__ import annotations

from typing import Any

from jitgrad.distributions.discrete import OneHotCategorical
from jitgrad.distributions.distribution import _EMPTY

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes gradients straight through to ``probs``.

    The sample's value is a one-hot draw; its gradient is that of ``probs`` (the
    straight-through estimator of Bengio et al., 2013).
    """

    has_rsample = True

    def rsample(self, sample_shape: Any = _EMPTY) -> Any:
        """Draws one-hot samples whose gradient w.r.t. the parameters is that of ``probs``."""
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
