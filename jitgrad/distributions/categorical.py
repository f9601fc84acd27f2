"""``torch.distributions.categorical``: exposes ``Categorical`` (defined in ``discrete``)."""

from jitgrad.distributions.discrete import Categorical

__all__ = ["Categorical"]
