"""``torch.autograd.profiler.profile``: the context manager that records one window (served as
``jitgrad.autograd.profiler.profile``; ``jitgrad.profiler.profile`` drives it per cycle)."""

from __future__ import annotations

import json
import warnings
from typing import Any

from . import _collect
from ._events import EventList, FunctionEventAvg, build_events, chrome_trace


class profile:  # noqa: N801 - torch's name
    """Records the ops, autograd nodes, jit calls and ``record_function`` ranges run inside it.

    Args:
        enabled: False makes it a no-op.
        use_cuda: deprecated; ``use_device="cuda"``.
        use_device: a device to profile besides the CPU (its times stay 0: jitgrad times the
            host side of every op).
        record_shapes: record each op's input shapes.
        with_flops: estimate the FLOPs of matrix products.
        profile_memory: record the bytes each op's outputs allocate, and their release.
        with_stack: record the Python stack of each range.
        with_modules: accepted (torch records it for TorchScript models only).
        use_kineto: accepted.
        use_cpu: accepted (CPU work is what is recorded).
        experimental_config: accepted.
        acc_events: keep the events of earlier windows when entered again.
        custom_trace_id_callback: returns the trace id of each window.
        post_processing_timeout_s: accepted.
        activity_filters: accepted.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None,
                 activity_filters: Any = None) -> None:
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        self.use_device = use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.use_kineto = use_kineto
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.activity_filters = activity_filters
        self.entered = False
        self.trace_id = ""
        self._collector: _collect.Collector | None = None
        self._function_events: EventList | None = None
        self._old_function_events: EventList | None = None
        self._needs_processing = False

    def __enter__(self) -> profile | None:
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self) -> None:
        self.entered = True
        self._collector = _collect.Collector(
            record_shapes=self.record_shapes, profile_memory=self.profile_memory,
            with_stack=self.with_stack, with_flops=self.with_flops)
        if self.custom_trace_id_callback is not None:
            self.trace_id = self.custom_trace_id_callback()

    def _start_trace(self) -> None:
        self.entered = True
        if self._collector is None:
            self._prepare_trace()
        self._collector.start()

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if not self.enabled:
            return False
        if self._collector is not None:
            self._collector.stop()
        self._function_events = None
        self._needs_processing = True
        if self.acc_events:  # this window's events join the earlier ones now
            self._ensure_function_events()
            self._old_function_events = self._function_events
        return False

    def __repr__(self) -> str:
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self._function_events)

    def __str__(self) -> str:
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self._function_events)

    def _ensure_function_events(self) -> None:
        if self._function_events is not None or self._collector is None \
                or self._collector.active:
            return
        self._needs_processing = False
        events = build_events(self._collector, self.use_device)
        if self.acc_events and self._old_function_events:
            events[:0] = self._old_function_events
        self._function_events = events

    def _events(self) -> EventList:
        self._ensure_function_events()
        if self._function_events is None:
            raise AssertionError("Expected profiling results")
        return self._function_events

    @property
    def function_events(self) -> EventList:
        """The recorded events (FunctionEvent), in start order."""
        return self._events()

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The events' table (see ``EventList.table``)."""
        return self._events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str, metadata: dict | None = None,
                            use_python_export: bool = False) -> None:
        """Writes the window as a Chrome trace: a JSON object whose ``traceEvents`` hold one
        "X" event per range (``ts``/``dur`` in microseconds), as torch's Kineto traces.

        Args:
            path: the file to write (".gz": compressed).
            metadata: extra top-level keys.
            use_python_export: accepted (there is one exporter).
        """
        events = self._events()
        data = chrome_trace(events, self._collector, dict(metadata or {}))
        if self.trace_id:
            data["trace_id"] = self.trace_id
        text = json.dumps(data)
        if path.endswith(".gz"):
            import gzip

            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes the stacks of the events (recorded ``with_stack``) with ``metric``."""
        events = self._events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed by name (see ``EventList.key_averages``)."""
        return self._events().key_averages(group_by_input_shape, group_by_stack_n,
                                           group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """All events summed (see ``EventList.total_average``)."""
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self CPU time, in microseconds."""
        return self._events().self_cpu_time_total
