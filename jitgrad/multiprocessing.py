"""``jitgrad.multiprocessing``: Python's ``multiprocessing`` with torch.multiprocessing's
additions: ``spawn``/``start_processes`` and its exceptions, and the sharing-strategy names.

Tensors shared with ``Tensor.share_memory_`` / ``Module.share_memory`` live in anonymous
shared mappings: processes *forked* after the call share them (Hogwild training); a tensor
passed to a *spawned* process is pickled, a copy. Numba's OpenMP threads are not fork-safe:
fork before the first jitted call, or use ``spawn``.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports all of it
from typing import Any

__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy",
    "get_all_sharing_strategies"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set[str]:
    """The names torch accepts for its sharing strategy."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The sharing strategy set last (jitgrad shares memory through anonymous mappings
    whatever the name)."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Records torch's sharing-strategy name (one of ``get_all_sharing_strategies()``)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"{new_strategy!r} is not a sharing strategy")
    _strategy = new_strategy


class ProcessException(Exception):  # noqa: N818 - torch's name
    """A process started by ``spawn`` failed."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid


class ProcessRaisedException(ProcessException):
    """A process started by ``spawn`` raised; the message holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A process started by ``spawn`` exited with a non-zero code or a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name


def _wrap(fn: Callable, index: int, args: tuple, errors: Any) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - handed to the parent, which raises it
        errors.put((index, traceback.format_exc()))
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join`` waits for them."""

    def __init__(self, processes: list, errors: Any) -> None:
        self.processes = processes
        self._errors = errors
        self._reported: dict[int, str] = {}

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Waits for the processes (up to ``timeout`` seconds). Returns True once all exited
        cleanly; raises ``ProcessRaisedException`` / ``ProcessExitedException`` (after
        terminating the others) as soon as one fails; False if some still run."""
        from multiprocessing.connection import wait

        running = [p for p in self.processes if p.exitcode is None]
        if running:
            wait([p.sentinel for p in running], timeout=timeout)
        failed = next((i for i, p in enumerate(self.processes)
                       if p.exitcode not in (None, 0)), None)
        if failed is None:
            if all(p.exitcode == 0 for p in self.processes):
                for p in self.processes:
                    p.join()
                return True
            return False
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join(grace_period)
        while not self._errors.empty():
            index, trace = self._errors.get()
            self._reported[index] = trace
        process = self.processes[failed]
        if failed in self._reported:
            raise ProcessRaisedException(
                f"\n\n-- Process {failed} terminated with the following error:\n"
                + self._reported[failed], failed, process.pid)
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                         failed, process.pid, code, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {code}",
                                     failed, process.pid, code)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Runs ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in its own process.

    Args:
        fn: a picklable function (module level, for ``spawn``).
        args: the arguments after the process index.
        nprocs: the number of processes.
        join: wait for them (and raise what one raised); else return the ``ProcessContext``.
        daemon: start daemonic processes.
        start_method: ``"spawn"``, ``"fork"`` or ``"forkserver"``.
    """
    context = multiprocessing.get_context(start_method)
    errors = context.SimpleQueue()
    processes = []
    for i in range(nprocs):
        process = context.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
        process.start()
        processes.append(process)
    spawned = ProcessContext(processes, errors)
    if not join:
        return spawned
    while not spawned.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """``start_processes`` (torch's ``spawn``): see there."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
