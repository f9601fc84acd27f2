"""``get_num_threads`` / ``set_num_threads``: the threads jitgrad's parallel kernels use."""

from __future__ import annotations

from typing import Any

_configured: int | None = None  # the count set_num_threads last set (init_num_threads reads it)


def get_num_threads() -> int:
    """The number of threads jitgrad's parallel CPU kernels run on (Numba's thread count).

    NumPy's BLAS (eager matmul) keeps its own thread pool, which ``set_num_threads`` also sets.
    """
    import numba

    return int(numba.get_num_threads())


def set_num_threads(int: Any) -> None:  # noqa: A002 - torch's argument name
    """Sets the number of threads jitgrad's parallel CPU kernels run on.

    As Numba's ``set_num_threads``, the setting belongs to the calling thread, and it is capped
    at the threads Numba started with (``NUMBA_NUM_THREADS``, by default the number of cores).
    As torch sets its BLAS's threads, this also sets (to the same, capped count) the threads of
    the OpenBLAS NumPy runs eager matrix products on, for the whole process (a NumPy built on
    another BLAS is left alone).

    Args:
        int: a positive number of threads.
    """
    import builtins

    if isinstance(int, builtins.bool) or not isinstance(int, builtins.int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(int).__name__}")
    if int <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    import numba

    from ._blas_threads import set_blas_threads

    global _configured
    count = min(int, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(count)
    _configured = count
    set_blas_threads(count)


def configured_num_threads() -> int | None:
    """The thread count ``set_num_threads`` last set (capped), or None before any call."""
    return _configured
