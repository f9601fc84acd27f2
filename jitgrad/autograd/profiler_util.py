"""``torch.autograd.profiler_util``: the profiler's result classes and their text helpers."""

from __future__ import annotations

from ..profiler._events import EventList, FormattedTimesMixin, FunctionEvent, FunctionEventAvg
from ..profiler._format import _format_memory, _format_time, _format_time_share

__all__ = ["EventList", "FormattedTimesMixin", "FunctionEvent", "FunctionEventAvg",
           "_format_memory", "_format_time", "_format_time_share"]
