"""``DataLoader``: batches of a data set, in the order of a sampler (torch.utils.data's).

With ``num_workers=0`` each batch is loaded in the calling process when it is asked for. With
``num_workers > 0``, as torch's, each pass (``iter(loader)``) starts worker processes
(``multiprocessing_context``, by default the platform's start method: ``fork`` on Linux) and
the iterator (``_loader_iter``) hands them work over one index queue each: a batch of the
batch sampler's indices (map-style data), or "the next batch" (an ``IterableDataset``, which
each worker iterates over itself: a copy of the stream per worker, unless the data set shards
itself with ``get_worker_info()``). A worker (``_worker``) fetches and collates the batch and
sends it back pickled over the shared result queue (a batch that does not pickle comes back as
that error); up to ``prefetch_factor`` batches per worker are outstanding. The batches come in
the sampler's order (``in_order=True``) or as they arrive.

Seeds are torch's: the iterator draws a base seed from ``generator`` (or the default generator)
when it is created, with or without workers; worker ``i`` seeds jitgrad's default generator
and Python's ``random`` with ``base_seed + i`` and NumPy's from the two, then calls
``worker_init_fn(i)``. An exception in a worker is raised again in the main process (the same
class, its message naming the worker and holding the original traceback). The workers exit at
the end of each pass and when the iterator is collected, or, with ``persistent_workers``,
serve every pass until the loader is collected (at the latest, at exit). A worker that dies is
noticed within 5 s (or ``timeout``) and raises ``RuntimeError``.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from ._loader_iter import (_BaseDataLoaderIter, _MultiProcessingDataLoaderIter,
                           _SingleProcessDataLoaderIter)
from ._utils.collate import default_collate, default_convert
from ._worker import get_worker_info, make_fetcher
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class _DatasetKind:
    """The two kinds of data set a ``DataLoader`` reads (torch's ``_DatasetKind``)."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind: int, dataset: Any, auto_collation: bool, collate_fn: Any,
                       drop_last: bool) -> Any:
        return make_fetcher(kind != _DatasetKind.Map, dataset, auto_collation, collate_fn,
                            drop_last)


class _InfiniteConstantSampler(Sampler):
    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


class DataLoader(Generic[_T_co]):
    """Iterates over ``dataset`` in batches.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__`` and ``__len__``) or an
            ``IterableDataset``.
        batch_size: samples per batch; ``None`` disables batching. Default: 1.
        shuffle: a new random order each epoch (a ``RandomSampler`` with ``generator``).
        sampler: the order of the indices (excludes ``shuffle``).
        batch_sampler: yields lists of indices (excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``).
        num_workers: how many worker processes load batches; 0 loads in the calling process.
            Default: 0.
        collate_fn: turns a list of samples into a batch (default: ``default_collate``); with
            workers it runs in the workers.
        pin_memory: ignored (jitgrad pins no memory); without an accelerator each pass warns,
            as torch's.
        drop_last: drop the last incomplete batch. Default: False.
        timeout: with workers, the seconds to wait for a batch before raising
            ``RuntimeError``; 0 waits for ever. Must be 0 without workers. Default: 0.
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after it is
            seeded and before it loads.
        multiprocessing_context: the start method (``"fork"``, ``"spawn"``, ``"forkserver"``)
            or a ``multiprocessing`` context the workers start from; only with workers.
        generator: the ``jitgrad.Generator`` the ``RandomSampler`` and the workers' base seed
            are drawn from (default: the default generator).
        prefetch_factor: batches asked for in advance per worker; only with
            ``num_workers > 0``, where it defaults to 2.
        persistent_workers: keep the workers (and their state) from one pass to the next;
            only with ``num_workers > 0``. Default: False.
        pin_memory_device: accepted and unused.
        in_order: yield batches in the sampler's order; ``False`` yields them as the workers
            finish them. Default: True.

    Example::

        >>> loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2)
        >>> for x, y in loader:
        ...     ...
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
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
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
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called: int | None = None  # (len() warns past it)
        self._iterator: _BaseDataLoaderIter | None = None  # (the persistent workers' iterator)
        self._initialized = True
        self.check_worker_number_rationality()

    _initialized = False

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def multiprocessing_context(self) -> Any:
        """The ``multiprocessing`` context the workers start from (None: the default)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self._multiprocessing_context = context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _dataset_kind(self) -> int:
        return _DatasetKind.Iterable if self._is_iterable else _DatasetKind.Map

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        # (persistent workers serve every pass: one iterator, reset for each)
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def check_worker_number_rationality(self) -> None:
        """Warns when ``num_workers`` exceeds the CPUs this process may run on (as torch)."""
        if not self.num_workers:
            return
        suggested = _cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        if suggested is None:
            hint = ("DataLoader is not able to compute a suggested max number of worker in "
                    "current system.")
        else:
            cpuset = "" if hasattr(os, "sched_getaffinity") else \
                " (`cpuset` is not taken into account)"
            hint = (f"Our suggested max number of worker in current system is {suggested}"
                    f"{cpuset}, which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {hint} Please be aware that excessive worker creation might get "
                      "DataLoader running slow or even freeze, lower the worker number to avoid "
                      "potential slowness/freeze if necessary.", stacklevel=2)

    def __len__(self) -> int:
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
