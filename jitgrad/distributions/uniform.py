"""``torch.distributions.uniform``: exposes ``Uniform`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Uniform

__all__ = ["Uniform"]
