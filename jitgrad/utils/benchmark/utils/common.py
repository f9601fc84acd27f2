"""``TaskSpec`` and ``Measurement``: what a ``Timer`` measured, with torch's statistics and text.

The statistics follow ``torch.utils.benchmark``: quantiles by linear interpolation in float64;
the significant-figure estimate, the unit choice and the trimming compute in float32 as torch's
(``torch.tensor(list_of_floats)`` is float32), so a boundary case rounds the same way.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ...._threads import get_num_threads, set_num_threads

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns

# (a Measurement warns when the spread is suspect)
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def _f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _log10_f32(x: Any) -> float:
    """log10 of ``x`` as float32, correctly rounded (as torch's float32 log10, where NumPy's
    is an ulp off: log10(float32(1e-6)) must be -6 exactly, or 1 us prints as 1000 ns)."""
    return float(np.float32(np.log10(np.float64(np.float32(x)))))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What defines a Timer's task (except its globals)."""

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
        """A label for the measurement: ``label`` (or the one-line ``stmt``) and ``sub_label``."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self) -> str:
        """The setup as printed ("" for none)."""
        return ("" if (self.setup == "pass" or not self.setup)
                else f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup
                else f"setup: {self.setup}")

    def summarize(self) -> str:
        """The task's part of a Measurement's text."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a Timer measurement: ``raw_times`` (seconds per block of
    ``number_per_run`` runs) and the task; statistics are per run.

    Args:
        number_per_run: runs of ``stmt`` in each timed block.
        raw_times: the seconds each block took.
        task_spec: the task measured.
        metadata: free for the user.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median: float = -1.0
        self._mean: float = -1.0
        self._p25: float = -1.0
        self._p75: float = -1.0

    def __getattr__(self, name: str) -> Any:
        # (the TaskSpec's fields read through, as torch's)
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        """Seconds per run, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """The median seconds per run."""
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        """The mean seconds per run."""
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range of the seconds per run (75th - 25th percentile)."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """A rough estimate (1 to 4) of the median's significant figures, from the spread of
        the interquartile points (z = 1.645), as torch's; ``Compare`` trims with it."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        lower_bound = int(n_total // 4)
        upper_bound = int(np.ceil(_f32(3 * n_total / 4)))
        points = self._sorted_times[lower_bound:upper_bound]
        std = float(_f32(points).std())
        sqrt_n = float(np.sqrt(_f32(len(points))))
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = _log10_f32(self._median / confidence_interval)
        num_significant_figures = int(np.floor(_f32(relative_ci)))
        return min(max(num_significant_figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread (IQR / median) is over 10%."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            st = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(st, 0.5))
            self._mean = float(st.mean())
            self._p25 = float(np.quantile(st, 0.25))
            self._p75 = float(np.quantile(st, 0.75))

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (
                    f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                    f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is under ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """The task's title."""
        return self.task_spec.title

    @property
    def env(self) -> str:
        """The task's env, or "Unspecified env"."""
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row name in a ``Compare`` table: ``sub_label``, else ``stmt``."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        """Torch's text, e.g.::

            <jitgrad.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
            Broadcasting add (4x8)
              Median: 5.73 us
              IQR:    2.25 us (4.01 to 6.26)
              372 measurements, 100 runs per measurement, 1 thread
        """
        self._lazy_init()
        skip_line, newline = "MEASUREMENT_REPR_SKIP_LINE", "\n"
        n = len(self._sorted_times)
        time_unit, time_scale = select_unit(self._median)
        iqr_filter = "" if n >= 4 else skip_line
        s = "s" if n > 1 else ""
        per = "per measurement," if n > 1 else ","
        threads = "s" if self.num_threads > 1 else ""
        repr_str = f"""
{super().__repr__()}
{self.task_spec.summarize()}
  {'Median: ' if n > 1 else ''}{self._median / time_scale:.2f} {time_unit}
  {iqr_filter}IQR:    {self.iqr / time_scale:.2f} {time_unit} ({self._p25 / time_scale:.2f} to {self._p75 / time_scale:.2f})
  {n} measurement{s}, {self.number_per_run} runs {per} {self.num_threads} thread{threads}
{newline.join(self._warnings)}""".strip()  # noqa: E501
        return "\n".join(ln for ln in repr_str.splitlines() if skip_line not in ln)

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Merge the replicates of each task into one Measurement (times extrapolated to
        ``number_per_run=1``; metadata dropped)."""
        grouped: collections.defaultdict[TaskSpec, list[Measurement]] = \
            collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)
        out = []
        for task_spec, group in grouped.items():
            times: list[float] = []
            for m in group:
                times.extend(m.times)
            out.append(Measurement(number_per_run=1, raw_times=times, task_spec=task_spec,
                                   metadata=None))
        return out


def select_unit(t: float) -> tuple[str, float]:
    """The unit ("ns", "us", "ms" or "s") and its scale for printing ``t`` seconds."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    time_scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]
    return time_unit, time_scale


def unit_to_english(u: str) -> str:
    """ "us" -> "microsecond" ..."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(np.ceil(_log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.round(_f32(x / scale)) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``jitgrad.set_num_threads(n)``, restoring the prior count after."""
    prior = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
