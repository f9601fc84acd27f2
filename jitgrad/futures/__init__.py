"""``torch.futures``: ``Future`` (a result that arrives later, thread-safe), ``collect_all`` and
``wait_all``, for CPU use (no CUDA streams: ``devices`` is accepted and kept)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """A value that will be set once (``set_result``) or an error (``set_exception``); ``wait``
    blocks until then. Callbacks (``then``, ``add_done_callback``) run when it completes, or at
    once if it already has.

    Args:
        devices: the devices whose tensors the value may hold (kept; CPU only).
    """

    def __init__(self, *, devices: list | None = None) -> None:
        self._devices = list(devices or [])
        self._cond = threading.Condition()
        self._done = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        """Whether a result or an error has been set."""
        return self._done

    def wait(self) -> T:
        """Blocks until the result is set and returns it (raises the error if one was set)."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def value(self) -> T:
        """The result of a completed future (raises its error); it must be ``done()``."""
        if not self._done:
            raise RuntimeError("value() called on a Future that is not completed yet; call "
                               "wait() or check done() first")
        if self._error is not None:
            raise self._error
        return self._result

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new future completed with ``callback(self)`` once this one completes (with the
        callback's error, as a RuntimeError, if it raised)."""
        out: Future[S] = Future(devices=self._devices)

        def run(fut: Future[T]) -> None:
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - handed to the new future
                tb = "".join(traceback.format_tb(e.__traceback__))
                out.set_exception(RuntimeError(
                    f"Got the following error when running the callback: "
                    f"{type(e).__name__}: {e}\n\nAt:\n{tb}"))
                return
            out.set_result(result)

        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Runs ``callback(self)`` when this future completes (at once if it has)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def _complete(self, result: Any, error: BaseException | None) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._result, self._error, self._done = result, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for callback in callbacks:
            callback(self)

    def set_result(self, result: T) -> None:
        """Completes the future with ``result`` (waiters wake, callbacks run)."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Completes the future with an error, raised by ``wait`` and ``value``."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def __repr__(self) -> str:
        return f"<jitgrad.Future object at {hex(id(self))}>"


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future completed, with the list of ``futures``, once all of them have completed."""
    futures = list(futures)
    out: Future[list[Future]] = Future()
    left = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one_done(_: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)

    for fut in futures:
        fut.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future]) -> list:
    """Waits for all ``futures`` and returns their values (raising the first error)."""
    return [fut.wait() for fut in collect_all(futures).wait()]
