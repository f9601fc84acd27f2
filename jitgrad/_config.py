"""The environment flags jitgrad reads, in one place. Each is read when it is used (so a test
or a user can set it at run time), except where noted.

* ``JITGRAD_DEBUG``: dump the jit graph after each pass (``jit.passes``).
* ``JITGRAD_DISABLE_JIT``: ``jit(fn)`` returns ``fn`` itself.
* ``JITGRAD_LOG``: comma-separated topics to log (``cache``, ...; ``jit.cache``).
* ``JITGRAD_PARALLEL_MIN``: the element count from which the Numba backend runs a kernel in
  parallel (read once, when ``backends.numba_cpu`` is imported).
* ``JITGRAD_MPI_PROGRESS_THREAD``: ``0`` turns the MPI progress thread off
  (``distributed.progress``).
"""

from __future__ import annotations

import os

PARALLEL_MIN_DEFAULT = 20_000_000


def _on(name: str, default: str = "0") -> bool:
    return os.environ.get(name, default) not in ("", "0")


def debug() -> bool:
    """``JITGRAD_DEBUG``: dump the graph after each jit pass."""
    return _on("JITGRAD_DEBUG")


def jit_disabled() -> bool:
    """``JITGRAD_DISABLE_JIT``: ``jit`` returns the function unchanged."""
    return _on("JITGRAD_DISABLE_JIT")


def log_enabled(what: str) -> bool:
    """``JITGRAD_LOG``: whether ``what`` is one of the comma-separated topics."""
    return what in os.environ.get("JITGRAD_LOG", "").split(",")


def parallel_min() -> int:
    """``JITGRAD_PARALLEL_MIN``: elements from which a Numba kernel runs in parallel."""
    return int(os.environ.get("JITGRAD_PARALLEL_MIN", str(PARALLEL_MIN_DEFAULT)))


def mpi_progress_thread() -> bool:
    """``JITGRAD_MPI_PROGRESS_THREAD``: whether a progress thread may run (default on)."""
    return os.environ.get("JITGRAD_MPI_PROGRESS_THREAD", "1") != "0"
