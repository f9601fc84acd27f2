"""One thread per process that drives MPI's progress engine while requests are in flight.

MPI's non-blocking collectives advance only inside MPI calls: a collective started with
``async_op=True``, or a DDP bucket started from a gradient hook, would otherwise sit still
while Python computes (NumPy's matrix products release the GIL, so the thread runs beside
them). The thread sleeps on a condition while nothing is watched, and tests the watched
requests every ``interval`` seconds otherwise. It tests while holding ``lock``; an owner takes
the lock (``discard``) before it waits on or tests a request itself, so two threads never
complete the same request (MPI forbids that). A request the thread completes becomes
``MPI.REQUEST_NULL`` in place, which the owner's later ``Wait`` returns from at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["ProgressThread"]


class ProgressThread:
    """Tests the requests handed to ``watch`` until they complete or are discarded.

    Args:
        interval: seconds between two rounds of tests while requests are in flight.
    """

    __slots__ = ("lock", "_requests", "_thread", "interval")

    def __init__(self, interval: float = 50e-6) -> None:
        self.lock = threading.Condition()
        self._requests: list = []
        self._thread: threading.Thread | None = None
        self.interval = interval

    def watch(self, requests: list) -> None:
        """Starts testing ``requests`` (mpi4py Request objects) in the background."""
        with self.lock:
            self._requests.extend(requests)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jitgrad-mpi-progress",
                                                daemon=True)
                self._thread.start()
            self.lock.notify()

    def discard(self, requests: list) -> None:
        """Stops testing ``requests``; on return the thread is not testing them."""
        with self.lock:
            ids = {id(r) for r in requests}
            self._requests = [r for r in self._requests if id(r) not in ids]

    def clear(self) -> None:
        """Stops testing everything."""
        with self.lock:
            self._requests = []

    def _run(self) -> None:
        while True:
            with self.lock:
                while not self._requests:
                    self.lock.wait()
                self._requests = [r for r in self._requests if not r.Test()]
            time.sleep(self.interval)


def make_progress_thread(comm: Any) -> ProgressThread | None:
    """A progress thread when there are other ranks and MPI allows threads (and
    ``JITGRAD_MPI_PROGRESS_THREAD`` is not ``0``); else None, and owners test themselves."""
    from mpi4py import MPI

    from .. import _config

    if comm.Get_size() == 1 or not _config.mpi_progress_thread() \
            or MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        return None
    return ProgressThread()
