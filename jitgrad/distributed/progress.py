"""A thread that drives MPI's progress engine while gradient buckets are being all-reduced.

MPI's non-blocking collectives advance only inside MPI calls: a bucket started from a gradient
hook would otherwise sit still while the backward computes (NumPy's matrix products release
the GIL, so the thread can run beside them). The thread sleeps on a condition while nothing is
in flight, and tests the running requests every ``interval`` seconds while something is. It
holds the lock while it tests, so the main thread, which takes the lock before it starts or
waits on requests, never completes a request at the same time (MPI forbids that).
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["ProgressThread"]


class ProgressThread:
    """Tests the requests handed to ``watch`` until they complete or ``release`` is called.

    Args:
        interval: seconds between two tests while requests are in flight.
    """

    __slots__ = ("lock", "_requests", "_thread", "interval")

    def __init__(self, interval: float = 50e-6) -> None:
        self.lock = threading.Condition()
        self._requests: list = []
        self._thread: threading.Thread | None = None
        self.interval = interval

    def watch(self, requests: list) -> None:
        """Starts testing ``requests`` (call with ``lock`` held)."""
        self._requests = requests
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="jitgrad-mpi-progress",
                                            daemon=True)
            self._thread.start()
        self.lock.notify()

    def release(self) -> None:
        """Stops testing; on return the thread is not inside an MPI call."""
        with self.lock:
            self._requests = []

    def _run(self) -> None:
        from mpi4py import MPI

        test_all: Any = MPI.Request.Testall
        while True:
            with self.lock:
                while not self._requests:
                    self.lock.wait()
                if test_all(self._requests):
                    self._requests = []
            time.sleep(self.interval)
