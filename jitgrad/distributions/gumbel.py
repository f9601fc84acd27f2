"""``torch.distributions.gumbel``: exposes ``Gumbel`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Gumbel

__all__ = ["Gumbel"]
