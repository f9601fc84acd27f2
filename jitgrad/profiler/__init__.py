"""``torch.profiler``: which ops, autograd nodes and jit calls ran, how long, and what they
allocated.

``profile`` records a window (or, with a ``schedule``, the steps it marks); its results are
torch's ``FunctionEvent`` / ``EventList`` with ``key_averages().table(...)``, and it writes
Chrome traces (``export_chrome_trace``, ``tensorboard_trace_handler``). Ops show under torch's
``aten::`` names, backward nodes as ``autograd::engine::evaluate_function: <Node>`` rows,
``record_function`` ranges and jit function calls (``jit::<name>``) as their own rows.

Times are host times: an op's row times its computation (NumPy or a compiled kernel); the
dispatcher's and autograd's bookkeeping around it counts to the enclosing row. Device kernels
are not timed (``supported_activities()`` is ``{ProfilerActivity.CPU}``). While no profiler
records, nothing here costs anything: the op implementations are swapped for timed ones only
while one records.
"""

from __future__ import annotations

from ._collect import record_function
from ._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile, profile, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = [
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
    "ProfilerAction",
    "ProfilerActivity",
    "DeviceType",
    "record_function",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "_KinetoProfile",
]
