"""``DistributedSampler``: each rank draws its own shard of a data set (torch's semantics)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ...random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Restricts sampling to one rank's shard of the data set (``torch.utils.data``'s).

    Every rank sees ``num_samples`` indices; together the ranks cover the data set, padding it by
    repeating indices from the start so it divides evenly (or dropping the tail with
    ``drop_last``). With ``shuffle`` all ranks permute with the same seed, ``seed + epoch``:
    call ``set_epoch(epoch)`` at the start of each epoch for a new order (torch's
    ``randperm`` of a generator seeded with ``seed + epoch``, so torch's order).

    Args:
        dataset: anything with ``len()``.
        num_replicas: the number of ranks (default: the world size of the default group).
        rank: this rank (default: the rank in the default group).
        shuffle: permute the indices each epoch. Default: True.
        seed: the seed shared by all ranks. Default: 0.
        drop_last: drop the tail instead of padding. Default: False.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch, which seeds the shuffle (call it before each epoch's iterator)."""
        self.epoch = epoch
