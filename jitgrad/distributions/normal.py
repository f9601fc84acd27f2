"""``torch.distributions.normal``: exposes ``Normal`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import Normal

__all__ = ["Normal"]
