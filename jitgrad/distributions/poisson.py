"""``torch.distributions.poisson``: exposes ``Poisson`` (defined in ``discrete``)."""

from jitgrad.distributions.discrete import Poisson

__all__ = ["Poisson"]
