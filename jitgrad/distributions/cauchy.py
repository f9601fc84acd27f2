"""``torch.distributions.cauchy``: exposes ``Cauchy`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Cauchy

__all__ = ["Cauchy"]
