"""``torch.distributions.laplace``: exposes ``Laplace`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Laplace

__all__ = ["Laplace"]
