"""``jitgrad.utils.benchmark``: ``Timer`` and ``Measurement`` as in ``torch.utils.benchmark``.

A ``Timer`` wraps :class:`timeit.Timer` (a Python statement string run in ``globals``), sets the
thread count for the run (one thread by default, as torch does), and returns a ``Measurement``
whose ``times``/``median``/``mean``/``iqr`` are per-run seconds and whose ``repr`` reads as
torch's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import textwrap
import timeit as _timeit
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._threads import get_num_threads, set_num_threads

__all__ = ["Measurement", "TaskSpec", "Timer", "select_unit"]

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a ``Timer`` measures (everything but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label, or the statement when it is one line."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self) -> str:
        """The setup line(s) of the summary ('' for ``pass``)."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The task's part of a ``Measurement``'s repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


@dataclasses.dataclass(repr=False)
class Measurement:
    """The result of a ``Timer`` measurement: ``raw_times`` of ``number_per_run`` runs each."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in {f.name for f in dataclasses.fields(TaskSpec)}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one per replicate."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        """The median of ``times``."""
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        """The mean of ``times``."""
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        """The interquartile range of ``times``."""
        return self._quantile(0.75) - self._quantile(0.25)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether ``iqr / median`` is under ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def _warnings(self) -> list[str]:
        if self.meets_confidence(_IQR_WARN_THRESHOLD):
            return []
        why = ("This suggests significant environmental influence."
               if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
               else "This could indicate system fluctuation.")
        return [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                f"of the median measurement.\n           {why}"]

    @property
    def has_warnings(self) -> bool:
        """Whether the replicates spread too far (see ``meets_confidence``)."""
        return bool(self._warnings)

    @property
    def title(self) -> str:
        """The task's title (label or statement)."""
        return self.task_spec.title

    def __repr__(self) -> str:
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            p25, p75 = self._quantile(0.25), self._quantile(0.75)
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({p25 / scale:.2f} to {p75 / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines)


def select_unit(t: float) -> tuple[str, float]:
    """The unit ('ns', 'us', 'ms' or 's') and its scale in seconds for showing ``t`` seconds."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(np.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    prior = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(prior)


def _clean(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    """Measures a Python statement, as ``torch.utils.benchmark.Timer``.

    Args:
        stmt: The statement to time (a string).
        setup: Run once before timing.
        global_setup: C++ only in torch; must be empty here.
        timer: The clock (``timeit.default_timer``).
        globals: The namespace ``stmt`` runs in (copied; ``torch`` is added as jitgrad).
        label: Title of the measurement.
        sub_label: Added to the title.
        description: Shown under the title.
        env: A tag for otherwise identical tasks in different environments.
        num_threads: The thread count while timing (1 by default).
        language: Only ``"python"`` (torch also runs C++ snippets).
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = _timeit.default_timer,
                 globals: dict[str, Any] | None = None, label: str | None = None,  # noqa: A002
                 sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1,
                 language: str = "python") -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if str(getattr(language, "value", language)).lower() not in ("py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             "code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        # (the package, as torch adds ``torch``: imported already, since this module is in it)
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Runs ``stmt`` ``number`` times (after a short warmup), as :meth:`timeit.Timer.timeit`."""
        with _threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not supported (as in torch)."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> None:
        """Not supported (as in torch)."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) \
                    or taken > min_run_time or number * 10 > 2147483647:
                return number
            number *= 10

    def _loop(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
              max_run_time: float | None, callback: Callable[[int, float], Any] | None
              ) -> list[float]:
        total, times = 0.0, []
        while True:
            spent = self._timeit(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            if (total >= min_run_time and stop(times)) or (max_run_time and total > max_run_time):
                return times

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Replicates of a block of runs sized so the timer's overhead is negligible."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(min_run_time)
            times = self._loop(number, lambda _: True, min_run_time, None, callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """As ``blocked_autorange``, repeating until ``iqr / median < threshold``."""
        with _threads(self._task_spec.num_threads):
            number = self._block_size(0.05)

            def stop(times: list[float]) -> bool:
                m = Measurement(number, list(times), self._task_spec)
                return len(times) > 3 and m.meets_confidence(threshold)

            times = self._loop(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
