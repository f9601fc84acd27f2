"""The profiler's results, with torch's classes and attributes (``torch.autograd.profiler_util``):
``FunctionEvent`` (one range), ``FunctionEventAvg`` (ranges summed by key) and ``EventList``
(a list of either, with ``table``, ``key_averages``, ``export_chrome_trace``, ...)."""

from __future__ import annotations

import bisect
import json
import os
from collections import defaultdict
from typing import Any

from . import _collect
from ._format import DeviceType, _format_time


def _attr_formatter(name: str) -> property:
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    """The ``*_str`` texts and per-call averages of FunctionEvent and FunctionEventAvg."""

    cpu_time_str = _attr_formatter("cpu_time")
    device_time_str = _attr_formatter("device_time")
    cpu_time_total_str = _attr_formatter("cpu_time_total")
    device_time_total_str = _attr_formatter("device_time_total")
    self_cpu_time_total_str = _attr_formatter("self_cpu_time_total")
    self_device_time_total_str = _attr_formatter("self_device_time_total")

    @property
    def cpu_time(self) -> float:
        """Average CPU time of a call, in microseconds."""
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        """Average device time of a call (0: jitgrad does not time device kernels)."""
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count


class Interval:
    """A time range in microseconds since the profiler started."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The range's length in microseconds."""
        return self.end - self.start


class FunctionEvent(FormattedTimesMixin):
    """One recorded range: an op, an autograd node, a jit call or a ``record_function``.

    Times are in microseconds; ``cpu_time_total`` is the range's length and
    ``self_cpu_time_total`` that minus its children's; ``cpu_memory_usage`` the bytes allocated
    (minus those freed) while it ran, ``self_cpu_memory_usage`` that minus its children's.
    """

    def __init__(self, id: int, name: str, thread: int, start_us: float,  # noqa: A002
                 end_us: float, *, input_shapes: list | None = None, stack: list | None = None,
                 use_device: str | None = None, cpu_memory_usage: int = 0,
                 is_user_annotation: bool = False, trace_name: str | None = None,
                 flops: int = 0, category: str = _collect.CPU_OP) -> None:
        self.id = id
        self.node_id = -1
        self.name = name
        self.overload_name = ""
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = None
        self.kernels: list = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes
        self.concrete_inputs: list = []
        self.kwinputs: dict = {}
        self.stack = stack if stack is not None else []
        self.scope = 0
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = 0
        self.is_async = False
        self.is_remote = False
        self.sequence_nr = -1
        self.device_type = DeviceType.CPU
        self.device_index = 0
        self.device_resource_id = thread
        self.is_legacy = False
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1
        self.category = category

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Adds a direct child range."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Sets the innermost range that encloses this one."""
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self) -> int:
        """Bytes allocated by the range itself, not by its children."""
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        """Device bytes of the range itself (0)."""
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def cpu_time_total(self) -> float:
        """The range's length in microseconds."""
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        """The range's length minus its children's."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        """Device time (0: jitgrad's profiler times CPU work)."""
        return sum(k[2] for k in self.kernels) if self.use_device else 0

    @property
    def self_device_time_total(self) -> float:
        """Device time of the range itself (0)."""
        return self.device_time_total

    @property
    def key(self) -> str:
        """What ``key_averages`` groups by: the name."""
        return self.name

    def __repr__(self) -> str:
        device_name = self.use_device
        return (
            f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
            f"device_type={self.device_type} node_id={self.node_id} "
            f"cpu_time={self.cpu_time_str} start_us={self.time_range.start} "
            f"end_us={self.time_range.end} "
            f"cpu_children={str([child.id for child in self.cpu_children])} "
            f"{device_name}_time={self.device_time_str} name={self.name} thread={self.thread} "
            f"input_shapes={str(self.input_shapes)} cpu_memory_usage={self.cpu_memory_usage} "
            f"{device_name}_memory_usage={self.device_memory_usage} is_async={self.is_async} "
            f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
            f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The sums over the events of one key (``EventList.key_averages``)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device: str | None = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: Any = None
        self.overload_name: str | None = None
        self.stack: list | None = None
        self.scope: int | None = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: list | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Adds an event (or another average) of the same key."""
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        self.flops += other.flops or 0
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        device_name = "cuda" if not self.use_device else self.use_device
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str}  self_{device_name}_time="
            f"{self.self_device_time_total_str} {device_name}_time={self.device_time_str} "
            f"input_shapes={str(self.input_shapes)} cpu_memory_usage={self.cpu_memory_usage} "
            f"{device_name}_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of FunctionEvent or FunctionEventAvg, with torch's helpers.

    Args:
        *args: the events (as ``list``'s arguments).
        use_device: the device profiled besides the CPU ("cuda"), or None.
        profile_memory: whether the events carry memory (the table's memory columns).
        with_flops: whether the events carry FLOPs (the table's FLOPs column).
    """

    def __init__(self, *args: Any, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def _build_tree(self) -> None:
        """Links each event to its parent (the innermost range of its thread that holds it)."""
        by_thread: dict = defaultdict(list)
        for evt in self:
            if not evt.is_async and evt.device_type == DeviceType.CPU:
                by_thread[evt.thread].append(evt)
        for events in by_thread.values():
            events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
            open_ranges: list = []
            for evt in events:
                while open_ranges and evt.time_range.start >= open_ranges[-1].time_range.end:
                    open_ranges.pop()
                if open_ranges and evt.time_range.end <= open_ranges[-1].time_range.end:
                    parent = open_ranges[-1]
                    if evt.cpu_parent is None:
                        parent.append_cpu_child(evt)
                        evt.set_cpu_parent(parent)
                open_ranges.append(evt)
        self._tree_built = True

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self CPU times, in microseconds."""
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as torch's text table.

        Args:
            sort_by: the attribute to sort rows by, largest first (``cpu_time_total``,
                ``self_cpu_time_total``, ``cpu_memory_usage``, ``self_cpu_memory_usage``,
                ``count``, ...); None keeps the list's order.
            row_limit: at most this many rows.
            max_src_column_width: the width limit of the source column (``with_stack``).
            max_name_column_width: the width limit of the name column.
            max_shapes_column_width: the width limit of the input shapes column.
            header: a line printed above the table.
            top_level_events_only: only the events with no parent.
            time_unit: "s", "ms" or "us" for every time; None picks one per value.

        Returns:
            The table's text.
        """
        from ._table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory, with_flops=self._with_flops,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the events as a Chrome trace (a JSON list of "X" events, as torch's
        ``EventList.export_chrome_trace``), for ``chrome://tracing`` or Perfetto.

        Args:
            path: the file to write.
        """
        events = [{"name": evt.trace_name, "ph": "X", "ts": evt.time_range.start,
                   "dur": evt.time_range.elapsed_us(), "tid": evt.thread,
                   "pid": "CPU functions", "args": {}}
                  for evt in self if evt.trace_name is not None]
        with open(path, "w") as f:
            json.dump(events, f)

    def supported_export_stacks_metrics(self) -> list[str]:
        """The metrics ``export_stacks`` writes."""
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str) -> None:
        """Writes each event's stack with its ``metric`` (flame graph input: one
        ``frame;frame;... value`` line per event), for events recorded ``with_stack``.

        Args:
            path: the file to write.
            metric: one of ``supported_export_stacks_metrics()``.
        """
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        translate = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    value = getattr(evt, attr)
                    if int(value) > 0:
                        frames = ";".join(e.translate(translate) for e in reversed(evt.stack))
                        f.write(f"{frames} {int(value)}\n")

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed by name (and input shapes, top stack frames if asked).

        Args:
            group_by_input_shapes: group by (name, input shapes) instead of name.
            group_by_stack_n: also group by the top ``n`` stack frames.
            group_by_overload_name: also group by overload name.

        Returns:
            An EventList of FunctionEventAvg.
        """
        if not self._tree_built:
            self._build_tree()
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy),
                   str(evt.is_user_annotation)]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one FunctionEventAvg keyed "Total"."""
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total


def build_events(col: _collect.Collector, use_device: str | None = None) -> EventList:
    """The FunctionEvents of a finished collection, linked to their parents, with memory."""
    t0 = col.start_ns
    events: dict[int, FunctionEvent] = {}
    for rec in sorted(col.records, key=lambda r: (r.start, -r.end)):
        name = trace_name = rec.name
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        evt = FunctionEvent(rec.id, name, rec.tid, (rec.start - t0) / 1e3, (rec.end - t0) / 1e3,
                            input_shapes=(rec.shapes or []) if col.record_shapes else [],
                            stack=rec.stack, use_device=use_device,
                            is_user_annotation=rec.kind == _collect.USER_ANNOTATION,
                            trace_name=trace_name, flops=rec.flops, category=rec.kind)
        events[rec.id] = evt
    out = EventList(events.values(), use_device=use_device, profile_memory=col.profile_memory,
                    with_flops=col.with_flops)
    for rec in col.records:
        parent = events.get(rec.parent)
        if parent is not None:
            parent.append_cpu_child(events[rec.id])
            events[rec.id].set_cpu_parent(parent)
    out._tree_built = True
    if col.profile_memory:
        _attribute_memory(col, out)
    return out


def _attribute_memory(col: _collect.Collector, events: EventList) -> None:
    """Each event's ``cpu_memory_usage``: the bytes its thread allocated minus those it freed
    while the event ran; what happened outside every event becomes a "[memory]" event."""
    t0 = col.start_ns
    by_thread: dict = defaultdict(lambda: ([], [0]))
    for ts, n, tid in sorted(col.memory):
        times, sums = by_thread[tid]
        times.append(ts)
        sums.append(sums[-1] + n)
    for evt in events:
        entry = by_thread.get(evt.thread)
        if entry is not None:
            times, sums = entry
            lo = bisect.bisect_left(times, t0 + evt.time_range.start * 1e3)
            hi = bisect.bisect_right(times, t0 + evt.time_range.end * 1e3)
            evt.cpu_memory_usage = sums[hi] - sums[lo]
    tops: dict = defaultdict(list)  # thread -> its top-level ranges (they do not overlap)
    for evt in events:
        if evt.cpu_parent is None:
            tops[evt.thread].append((t0 + evt.time_range.start * 1e3,
                                     t0 + evt.time_range.end * 1e3))
    for ranges in tops.values():
        ranges.sort()
    next_id = max((e.id for e in events), default=0) + 1
    for ts, n, tid in sorted(col.memory):
        ranges = tops.get(tid, [])
        i = bisect.bisect_right(ranges, (ts, float("inf"))) - 1
        if i >= 0 and ranges[i][0] <= ts <= ranges[i][1]:
            continue
        at = (ts - t0) / 1e3
        evt = FunctionEvent(next_id, _collect.MEMORY, tid, at, at, input_shapes=[],
                            use_device=events._use_device, cpu_memory_usage=n,
                            category="cpu_instant_event")
        next_id += 1
        events.append(evt)


def chrome_trace(events: EventList, col: _collect.Collector, metadata: dict) -> dict:
    """The Kineto-style Chrome trace of a collection (what ``profile.export_chrome_trace``
    writes): ``traceEvents`` with an "X" event per range (ts and dur in microseconds) and an
    "i" event per memory record."""
    pid = os.getpid()
    base_us = col.epoch_ns / 1e3
    trace: list = [{"ph": "M", "name": "process_name", "ts": base_us, "pid": pid, "tid": 0,
                    "args": {"name": "python"}},
                   {"ph": "M", "name": "process_labels", "ts": base_us, "pid": pid, "tid": 0,
                    "args": {"labels": "CPU"}}]
    for tid in sorted({evt.thread for evt in events}):
        trace.append({"ph": "M", "name": "thread_name", "ts": base_us, "pid": pid, "tid": tid,
                      "args": {"name": f"thread {tid} (python)"}})
    for i, evt in enumerate(events):
        if evt.name == _collect.MEMORY:
            continue
        args: dict = {"External id": evt.id, "Ev Idx": i}
        if col.record_shapes:
            args["Input Dims"] = evt.input_shapes or []
        if evt.flops:
            args["flops"] = evt.flops
        trace.append({"ph": "X", "cat": evt.category, "name": evt.trace_name, "pid": pid,
                      "tid": evt.thread, "ts": base_us + evt.time_range.start,
                      "dur": evt.time_range.elapsed_us(), "args": args})
    total = 0
    for ts, n, tid in sorted(col.memory):
        total += n
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                      "pid": pid, "tid": tid, "ts": base_us + (ts - col.start_ns) / 1e3,
                      "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": n,
                               "Device Id": -1, "Device Type": 0}})
    return {"schemaVersion": 1, "deviceProperties": [], **metadata, "displayTimeUnit": "ms",
            "traceEvents": trace}
