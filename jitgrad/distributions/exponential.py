"""``torch.distributions.exponential``: exposes ``Exponential`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Exponential

__all__ = ["Exponential"]
