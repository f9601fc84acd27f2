"""``torch.distributions.geometric``: exposes ``Geometric`` (defined in ``discrete``)."""

from jitgrad.distributions.discrete import Geometric

__all__ = ["Geometric"]
