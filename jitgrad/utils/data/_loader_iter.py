"""The iterators a ``DataLoader`` returns: one pass that loads in the calling process, and one
that hands the sampler's indices to worker processes (torch's two ``_DataLoaderIter``s).
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import warnings
import weakref
from typing import Any

from ... import accelerator, dtypes
from ...ops.creation import empty
from ._worker import (STATUS_INTERVAL, ExceptionWrapper, _IterableDatasetStopIteration,
                      _ResumeIteration, _worker_loop, make_fetcher)


def _stop_workers(workers: list, index_queues: list, result_queue: Any, done_event: Any,
                  status: list, persistent: bool) -> None:
    """None to each worker still waiting for tasks, a join, then terminate what still runs.

    The iterator's finalizer: it holds the queues itself, so that when the iterator is
    collected in a reference cycle (an exception's traceback holds it), the queues are not
    collected with it, and their feeder threads still deliver the None.
    """
    try:
        done_event.set()
        for worker_id, index_queue in enumerate(index_queues):
            if persistent or status[worker_id]:
                index_queue.put(None)
            status[worker_id] = False
        for worker in workers:
            worker.join(timeout=STATUS_INTERVAL)
        for index_queue in index_queues:
            index_queue.cancel_join_thread()
            index_queue.close()
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=STATUS_INTERVAL)
        result_queue.cancel_join_thread()
        result_queue.close()


class _BaseDataLoaderIter:
    """One pass over a ``DataLoader`` (``len()`` is the number of batches of the sampler)."""

    def __init__(self, loader: Any) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used "
                          f"as the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                          stacklevel=3)
        if loader.pin_memory and not accelerator.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                          "device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # torch's iterator draws its workers' base seed here, from the loader's generator (the
        # default one when it has none), with or without workers: the draws after it are torch's
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(
            generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        reported = self._IterableDataset_len_called
        if self._iterable and reported is not None and self._num_yielded > reported:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been "
                   "fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data."
                        "IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> Any:
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Loads each batch in the calling process when it is asked for."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = make_fetcher(self._iterable, self._dataset, self._auto_collation,
                                     self._collate_fn, self._drop_last)

    def _next_data(self) -> Any:
        index = next(self._sampler_iter)  # (StopIteration ends the pass)
        return self._fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Hands batches of indices to worker processes and yields their batches.

    Each worker has its own index queue and all share one result queue. Up to
    ``prefetch_factor * num_workers`` batches are asked for at a time, round robin over the
    workers that are still active (a worker whose stream ended is not); each batch
    handed back asks for the next. With ``in_order`` the batches come in the sampler's order
    (early ones wait in ``_task_info``), otherwise as they arrive.
    """

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._shutdown = False
        self._workers: list = []
        self._index_queues: list = []
        self._workers_status: list[bool] = []  # (changed in place: the finalizer reads it)
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        # (stops the workers at the end of a pass, when the iterator is collected, or at exit)
        self._finalizer = weakref.finalize(
            self, _stop_workers, self._workers, self._index_queues, self._result_queue,
            self._done_event, self._workers_status, self._persistent_workers)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            worker = context.Process(
                target=_worker_loop, daemon=True,
                args=(self._iterable, self._dataset, index_queue, self._result_queue,
                      self._done_event, self._auto_collation, self._collate_fn,
                      self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                      self._num_workers))
            try:
                worker.start()
            except (TypeError, AttributeError, pickle.PicklingError):
                warnings.warn("Got pickle error when attempting to start a worker Process. This "
                              "might be because the worker Process arguments are not "
                              "picklable.", stacklevel=3)
                raise
            self._index_queues.append(index_queue)
            self._workers.append(worker)
            self._workers_status.append(True)
        self._reset(loader, first_iter=True)

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the task number of the next batch to ask for
        self._rcvd_idx = 0  # the task number of the next batch to yield (in order)
        self._task_info: dict[int, tuple] = {}  # task -> (worker,), (worker, data) once back
        self._tasks_outstanding = 0
        self._workers_status[:] = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers start the next epoch; what they still send of the last one
            # comes before their acknowledgement, and is dropped
            for index_queue in self._index_queues:
                index_queue.put(_ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = STATUS_INTERVAL) -> tuple[bool, Any]:
        try:
            payload = self._result_queue.get(timeout=timeout)
        except Exception as e:
            failed = [worker_id for worker_id, worker in enumerate(self._workers)
                      if self._workers_status[worker_id] and not worker.is_alive()]
            for worker_id in failed:
                self._mark_worker_as_unavailable(worker_id)
            if failed:
                pids = ", ".join(str(self._workers[i].pid) for i in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                   "unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise
        return True, pickle.loads(payload)

    def _get_data(self) -> tuple[Any, Any]:
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if not success:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self) -> Any:
        while True:
            # skip the tasks of workers whose stream ended (they will not answer them)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # (it came back early)
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1], info[0])
            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError("Invalid iterator state: shutdown or no outstanding tasks "
                                     "when fetching next data")
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                worker_id = self._task_info.pop(idx)[0]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            self._task_info[idx] += (data,)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker (with room, out of order)
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id] and (
                    self._in_order
                    or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        """Tells worker ``worker_id`` to exit (None on its queue); it gets no more tasks."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stops the workers (once): None to each, a join, then terminate for any still running."""
        if not self._shutdown:
            self._shutdown = True
            self._finalizer()
