"""``torch.autograd.profiler``: the legacy profiler API (``profile``, ``record_function``) and
its result classes, the same recorder as ``jitgrad.profiler``."""

from __future__ import annotations

from ..profiler._collect import record_function
from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._legacy import profile

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
