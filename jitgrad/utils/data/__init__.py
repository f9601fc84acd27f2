"""``jitgrad.utils.data``: samplers for data sets (torch.utils.data's names)."""

from .distributed import DistributedSampler

__all__ = ["DistributedSampler"]
