"""``torch.distributions.bernoulli``: exposes ``Bernoulli`` (defined in ``discrete``)."""

from jitgrad.distributions.discrete import Bernoulli

__all__ = ["Bernoulli"]
