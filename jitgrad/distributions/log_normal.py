"""``torch.distributions.log_normal``: exposes ``LogNormal`` (defined in ``continuous``)."""

from jitgrad.distributions.continuous import LogNormal

__all__ = ["LogNormal"]
