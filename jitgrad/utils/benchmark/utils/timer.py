"""``Timer``: ``timeit.Timer`` with torch's warmup, thread setting, replicates and
``Measurement`` results (``torch.utils.benchmark.Timer``'s Python half)."""

from __future__ import annotations

import enum
import sys
import textwrap
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from .... import cuda
from . import common

__all__ = ["Timer", "timer", "Language"]


_GPU: list = []  # [True/False] once a GPU has been looked for


def timer() -> float:
    """The default clock: ``timeit.default_timer``, after waiting for the GPU when one is in
    use (jitgrad's CUDA work is asynchronous, as torch's). The GPU is looked for only once
    numba's CUDA module is loaded (a CPU-only run never pays for the check)."""
    if "numba.cuda" in sys.modules:
        if not _GPU:
            _GPU.append(cuda.is_available())
        if _GPU[0]:
            cuda.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    """The statement's language (jitgrad measures Python only)."""

    PYTHON = 0
    CPP = 1


def _jitgrad() -> Any:
    # (the package itself, the statements' default ``torch`` global: loaded by now, since
    # ``jitgrad/__init__`` loads ``jitgrad.utils``; looked up rather than imported upward)
    return sys.modules[__name__.split(".")[0]]


class Timer:
    """Measures the execution time of Python statements, as ``torch.utils.benchmark.Timer``.

    Differences from ``timeit.Timer``: a warmup before measuring, the thread count set to
    ``num_threads`` during the measurement (jitgrad's ``set_num_threads``), replicates
    summarized in a :class:`Measurement`, and labels used by :class:`Compare`. The statements
    see the name ``torch`` bound to ``jitgrad`` unless ``globals`` binds it, so a torch
    benchmark runs after ``import jitgrad as torch``.

    Args:
        stmt: the code timed.
        setup: code run once before timing (defines what ``stmt`` uses).
        global_setup: C++ only in torch; must be empty.
        timer: the clock, seconds as a float.
        globals: the namespace ``stmt`` and ``setup`` run in (copied).
        label: summary of ``stmt`` (the table's title in ``Compare``).
        sub_label: told apart measurements of the same label (the row in ``Compare``).
        description: the column in ``Compare``.
        env: the environment tag (measurements of different envs are never merged).
        num_threads: jitgrad's thread count while ``stmt`` runs.
        language: ``"python"`` (the only one jitgrad runs).

    Raises:
        ValueError: ``stmt`` is not a string, ``global_setup`` is given, or the language is
            unknown.
        NotImplementedError: C++ statements.
    """

    _timer_cls: type = timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            self._globals.setdefault("torch", _jitgrad())
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most "
                    "likely this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("jitgrad's Timer measures Python statements only (torch "
                                      "compiles C++ statements with its own headers).")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run ``stmt`` ``number`` times (after a warmup of ``number // 100``, at least 2) and
        return the one measurement, as ``timeit.Timer.timeit``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not provided, as torch: use :meth:`blocked_autorange`."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        """Not provided, as torch: use :meth:`blocked_autorange`."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number: int, time_hook: Callable[[], float],
                                   stop_hook: Callable[[list[float]], bool],
                                   min_run_time: float, max_run_time: float | None = None,
                                   callback: Callable[[int, float], Any] | None = None
                                   ) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while (total_time < min_run_time) or (not can_stop):
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Time blocks of ``stmt`` until ``min_run_time`` seconds have been spent.

        The block size grows (by 10x) until the timer's own overhead is under 0.01% of a block
        (or a block takes ``min_run_time / 1000``); then blocks are timed until their total
        reaches ``min_run_time``.

        Args:
            callback: called with ``(number, seconds)`` after each block.
            min_run_time: the seconds to spend measuring.

        Returns:
            A :class:`Measurement` of the blocks.
        """
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), lambda times: True,
            min_run_time=min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None
                           ) -> common.Measurement:
        """As :meth:`blocked_autorange`, but keeps timing blocks until IQR / median is under
        ``threshold`` (with more than 3 blocks and ``min_run_time`` spent) or
        ``max_run_time`` is spent.

        Args:
            threshold: the IQR / median to reach.
            min_run_time: the seconds spent before ``threshold`` is checked.
            max_run_time: the seconds after which it stops regardless.
            callback: called with ``(number, seconds)`` after each block.

        Returns:
            A :class:`Measurement` of the blocks.
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec
                                          ).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), stop_hook, min_run_time, max_run_time,
            callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)
