"""The worker side of ``DataLoader(num_workers > 0)`` (torch.utils.data._utils.worker's).

A worker process seeds itself from the iterator's base seed, runs ``worker_init_fn``, then
answers the index queue: each ``(idx, index)`` becomes ``(idx, batch)`` on the result queue,
pickled here so that a batch that does not pickle comes back as an error instead of being lost.
The fetchers (a batch from a list of indices, or the next samples of a stream) serve the
calling process's iterator too.
"""

from __future__ import annotations

import io
import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

__all__ = ["WorkerInfo", "get_worker_info"]

STATUS_INTERVAL = 5.0  # seconds between checks that the other side is alive (torch's)


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a ``DataLoader`` worker process.

    Attributes:
        id: this worker's id, ``0`` to ``num_workers - 1``.
        num_workers: the number of workers of the loader.
        seed: the seed of this worker's generators (the iterator's base seed plus ``id``).
        dataset: this process's copy of the data set.
        rng: None (torch fills it for thread workers only).
        worker_method: ``"multiprocessing"``.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current ``DataLoader`` worker process.

    Inside a worker, returns a ``WorkerInfo`` with ``id``, ``num_workers``, ``seed`` and
    ``dataset`` (this process's copy of the data set; an ``IterableDataset`` can shard itself
    with ``id`` and ``num_workers``). In the main process, returns None.

    Returns:
        The worker's ``WorkerInfo``, or None outside a worker.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    seed: int | None = None


class _KeyErrorMessage(str):
    """A message that ``KeyError`` prints as it is (not as a quoted repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure means "send something else"
        return False
    return True


class ExceptionWrapper:
    """An exception and its traceback, carried from a worker to the main process."""

    def __init__(self, exc_info: tuple | None = None, where: str = "in background") -> None:
        exc_type, exc, tb = sys.exc_info() if exc_info is None else exc_info
        self.exc_name = exc_type.__name__
        # (a class that cannot be pickled, one defined in a function, comes back a RuntimeError)
        self.exc_type = exc_type if _picklable(exc_type) else RuntimeError
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self) -> None:
        """Raises the exception again, its message telling where and with the traceback."""
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a class that takes other arguments
            raise RuntimeError(msg) from None
        raise exception


# ---------------------------------------------------------------- fetchers


class _MapFetcher:
    """Batches of a map-style data set: ``collate_fn([dataset[i] for i in index])``."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> None:
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    """The next ``len(index)`` samples of ``iter(dataset)`` (made here), collated."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> None:
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Any,
                 drop_last: bool) -> _MapFetcher | _IterableFetcher:
    """The fetcher for a map-style data set, or for a stream (``iterable``)."""
    kind = _IterableFetcher if iterable else _MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


# ---------------------------------------------------------------- the worker process


def _seed_worker(seed: int, base_seed: int, worker_id: int) -> None:
    """Seeds jitgrad's and Python's generators with ``seed``, NumPy's as torch does."""
    import numpy as np

    from ...random import manual_seed

    random.seed(seed)
    manual_seed(seed)
    # (torch seeds NumPy from SeedSequence's hash of the worker id and the base seed's halves)
    words = [worker_id, base_seed & 0xFFFF_FFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(words).generate_state(4))


def _single_thread() -> None:
    """One thread for the worker's BLAS and, where this process has loaded Numba, its kernels
    (as torch's workers run; importing Numba here would cost each worker a quarter second)."""
    try:
        from ..._blas_threads import set_blas_threads

        set_blas_threads(1)
        if "numba" in sys.modules:
            sys.modules["numba"].set_num_threads(1)
    except Exception:  # noqa: BLE001 - loading still works with more threads
        pass


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    ForkingPickler(buffer, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def _send(data_queue: Any, idx: Any, data: Any, where: str) -> None:
    """Puts ``(idx, data)`` pickled on the queue; a batch that does not pickle goes as its
    error (the queue's own feeder thread would drop it and leave the main process waiting)."""
    try:
        payload = _dumps((idx, data))
    except Exception:  # noqa: BLE001 - sent to the main process, which raises it
        payload = _dumps((idx, ExceptionWrapper(where=where)))
    data_queue.put(payload)


def _worker_loop(iterable: bool, dataset: Any, index_queue: Any, data_queue: Any,
                 done_event: Any, auto_collation: bool, collate_fn: Any, drop_last: bool,
                 base_seed: int, init_fn: Any, worker_id: int, num_workers: int) -> None:
    """The body of worker ``worker_id``: answers its index queue until it reads None."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    try:
        _single_thread()
        seed = base_seed + worker_id
        _seed_worker(seed, base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:  # noqa: BLE001 - the first batch asked for raises it in the main
            init_error = ExceptionWrapper(where=where)
        # (a stream that ended waits for the next epoch's resume, or for None)
        ended = False
        parent = os.getppid()
        while os.getppid() == parent:
            try:
                task = index_queue.get(timeout=STATUS_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put(_dumps((task, None)))
                ended = False
                try:
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn,
                                           drop_last)
                except Exception:  # noqa: BLE001 - raised in the main at the next batch
                    init_error = ExceptionWrapper(where=where)
                continue
            if task is None:
                break
            if done_event.is_set() or ended:
                continue
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data, ended = _IterableDatasetStopIteration(worker_id), True
                except Exception:  # noqa: BLE001 - raised in the main process
                    data = ExceptionWrapper(where=where)
            _send(data_queue, idx, data, where)
            del data, idx, index, task  # (a batch is not kept alive while waiting)
    except KeyboardInterrupt:
        pass  # (the main process gets it too)
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
