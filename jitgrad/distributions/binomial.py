"""``torch.distributions.binomial``: exposes ``Binomial`` (defined in ``discrete``)."""

from jitgrad.distributions.discrete import Binomial

__all__ = ["Binomial"]
