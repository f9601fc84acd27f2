"""``DataLoader``: batches of a data set, in the order of a sampler (torch.utils.data's).

jitgrad loads in the calling process. ``num_workers > 0`` is accepted for map-style data
sets and gives the same batches in the same order as torch's worker processes would (torch
keeps the sampler's order), but loads them in this process, one after another; with an
``IterableDataset`` (where torch's workers would each replay the stream) or a
``worker_init_fn`` it raises ``NotImplementedError`` rather than give different data.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ... import accelerator, dtypes
from ...ops.creation import empty
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info() -> None:
    """None: jitgrad loads data in the calling process (torch returns None there too)."""
    return None


class _InfiniteConstantSampler(Sampler):
    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class _LoaderIter:
    """One pass over a ``DataLoader`` (``len()`` is the loader's)."""

    def __init__(self, loader: DataLoader) -> None:
        # (torch's _BaseDataLoaderIter warns as each pass starts)
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used "
                          f"as the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                          stacklevel=2)
        if loader.pin_memory and not accelerator.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                          "device pinned memory won't be used.", stacklevel=2)
        self._loader = loader
        self._batches = loader._generate()
        # torch's iterator draws its workers' base seed here, from the loader's generator
        # (the default one when it has none), so the draws after it are torch's too
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(
            generator=loader.generator).item())

    def __iter__(self) -> _LoaderIter:
        return self

    def __next__(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return len(self._loader)


class DataLoader:
    """Iterates over ``dataset`` in batches.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__`` and ``__len__``) or an
            ``IterableDataset``.
        batch_size: samples per batch; ``None`` disables batching. Default: 1.
        shuffle: a new random order each epoch (a ``RandomSampler`` with ``generator``).
        sampler: the order of the indices (excludes ``shuffle``).
        batch_sampler: yields lists of indices (excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``).
        num_workers: accepted for map-style data sets, loaded in this process (see the module
            note). Default: 0.
        collate_fn: turns a list of samples into a batch (default: ``default_collate``).
        pin_memory: ignored (jitgrad pins no memory); without an accelerator each pass warns,
            as torch's.
        drop_last: drop the last incomplete batch. Default: False.
        timeout: must be non-negative (there are no workers to wait for).
        worker_init_fn: only with ``num_workers=0`` (it would never be called).
        multiprocessing_context: accepted and unused.
        generator: the ``jitgrad.Generator`` the ``RandomSampler`` draws from.
        prefetch_factor: only with ``num_workers > 0``, as torch.
        persistent_workers: only with ``num_workers > 0``, as torch.
        pin_memory_device: accepted and unused.
        in_order: accepted (batches always come in order).
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0 and isinstance(dataset, IterableDataset):
            raise NotImplementedError(
                "jitgrad's DataLoader loads in the calling process: num_workers > 0 with an "
                "IterableDataset (each torch worker replays the stream) is not supported; use "
                "num_workers=0")
        if num_workers > 0 and worker_init_fn is not None:
            raise NotImplementedError(
                "jitgrad's DataLoader loads in the calling process and has no workers to run "
                "worker_init_fn in; use num_workers=0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _LoaderIter:
        return _LoaderIter(self)

    def _fetch(self, index: Any) -> Any:
        if not self._auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)

    def _generate(self) -> Iterator[Any]:
        if not self._is_iterable:
            for index in self._index_sampler:
                yield self._fetch(index)
            return
        stream = iter(self.dataset)
        if not self._auto_collation:
            for sample in stream:
                yield self.collate_fn(sample)
            return
        batch: list = []
        for sample in stream:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
