"""``torch.profiler.profile`` and its schedule: which steps record, and what happens when a
recording cycle ends (``on_trace_ready``)."""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from . import _legacy
from ._collect import record_function
from ._events import EventList


class ProfilerActivity(enum.Enum):
    """The activity groups a profiler can record (torch's values)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    """The activities jitgrad's profiler records: the CPU (every op runs there or is
    launched from there; device kernels are not timed)."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (the values a ``schedule`` returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


_warned: set = set()


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A ``schedule`` for ``profile``: skip ``skip_first`` steps, then cycles of ``wait`` idle
    steps, ``warmup`` steps and ``active`` recorded steps (the last one saves the trace),
    ``repeat`` times (0: until the profiler stops).

    Args:
        wait: idle steps at the start of each cycle.
        warmup: warm-up steps (profiled, not kept).
        active: recorded steps.
        repeat: the number of cycles (0: no limit).
        skip_first: steps skipped before the first cycle.
        skip_first_wait: non-zero: the first cycle skips its ``wait`` steps.

    Returns:
        A function of the step number giving its ``ProfilerAction``.
    """
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 \
            else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` handler writing each cycle's trace to
    ``dir_name/<worker_name>.<time ns>.pt.trace.json`` (TensorBoard's profiler plugin reads
    the directory).

    Args:
        dir_name: the directory (created if missing).
        worker_name: the file name's prefix; default ``<hostname>_<pid>``.
        use_gzip: write ``.pt.trace.json.gz``.
        use_python_export: accepted.
    """
    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name),
                                 use_python_export=use_python_export)

    return handler_fn


def _activity_set(activities: Iterable | None) -> set:
    if activities is None:
        return supported_activities()
    out: set = set()
    for item in activities:
        if isinstance(item, ProfilerActivity):
            if item in out:
                raise ValueError(f"Activity {item} specified more than once")
            out.add(item)
        elif isinstance(item, dict):
            for key in item:
                if key in out:
                    raise ValueError(f"Activity {key} specified more than once")
                out.add(key)
        else:
            raise TypeError(f"Expected ProfilerActivity or dict, got {type(item)}")
    return out


class _KinetoProfile:
    """The profiler without a schedule: ``start``/``stop`` record one window."""

    def __init__(self, *, activities: Iterable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None) -> None:
        self.activities = _activity_set(activities)
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.profiler: _legacy.profile | None = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.preset_metadata: dict[str, str] = {}
        self._trace_metadata: dict[str, Any] = {}

    def start(self) -> None:
        """Starts recording."""
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        """Stops recording."""
        self.stop_trace()

    def prepare_trace(self) -> None:
        """Makes the window's recorder (a new one per cycle unless ``acc_events``)."""
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events "
                       "from the current cycle will be reported. To keep events across "
                       "cycles, set acc_events=True.")
        if self.profiler is None or not self.acc_events:
            self.profiler = _legacy.profile(
                use_device=self.use_device, record_shapes=self.record_shapes,
                with_flops=self.with_flops, profile_memory=self.profile_memory,
                with_stack=self.with_stack, with_modules=self.with_modules, use_kineto=True,
                acc_events=self.acc_events,
                custom_trace_id_callback=self.custom_trace_id_callback)
        self.profiler._prepare_trace()

    def start_trace(self) -> None:
        """Starts the window's recording."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        if self.execution_trace_observer:
            self.execution_trace_observer.start()
        self.profiler._start_trace()
        for flag in ("profile_memory", "with_stack", "record_shapes", "with_modules",
                     "with_flops"):
            if getattr(self, flag):
                self._trace_metadata[flag] = 1
        self._trace_metadata.update(self.preset_metadata)

    def stop_trace(self) -> None:
        """Ends the window's recording."""
        if self.execution_trace_observer:
            self.execution_trace_observer.stop()
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Writes the last cycle as a Chrome trace (JSON with ``traceEvents``; ``.gz``:
        compressed), for Perfetto, ``chrome://tracing`` or TensorBoard."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        self.profiler.export_chrome_trace(path, self._trace_metadata, use_python_export)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes the stacks (``with_stack``) with ``metric``, one line per event."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed by name (and input shapes, top stack frames if asked): an
        EventList of FunctionEventAvg."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def events(self) -> EventList:
        """The recorded FunctionEvents (not summed)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key: str, value: str) -> None:
        """Adds a string ``key: value`` to the trace file."""
        self._trace_metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """Adds ``key`` with a JSON ``value`` to the trace file."""
        import json

        self._trace_metadata[key] = json.loads(value)

    def preset_metadata_json(self, key: str, value: str) -> None:
        """Adds ``key`` with a JSON ``value`` to every later trace file."""
        self.preset_metadata[key] = value


class profile(_KinetoProfile):  # noqa: N801 - torch's name
    """The profiler context manager (``torch.profiler.profile``).

    Records the ops, autograd nodes, jit calls and ``record_function`` ranges run inside it;
    with a ``schedule``, only the steps it marks (``step()`` ends a step) and it calls
    ``on_trace_ready`` at the end of each recording cycle.

    Args:
        activities: the activity groups (``ProfilerActivity``); default: the supported ones.
        schedule: a function of the step number giving its ``ProfilerAction``.
        on_trace_ready: called with the profiler when a recording cycle ends.
        record_shapes: record each op's input shapes.
        profile_memory: record the bytes each op's outputs allocate (and their release).
        with_stack: record each range's Python stack.
        with_flops: estimate the FLOPs of matrix products.
        with_modules: accepted (torch records it for TorchScript models only).
        experimental_config: accepted.
        execution_trace_observer: an object with ``start``/``stop``/``cleanup``, started and
            stopped with each recording window.
        acc_events: keep the events of every cycle.
        use_cuda: deprecated; ``activities`` instead.
        custom_trace_id_callback: returns each cycle's trace id.
        post_processing_timeout_s: accepted.
    """

    def __init__(self, *, activities: Iterable | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None) -> None:
        acts = set(_activity_set(activities))
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if len(acts) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=list(acts), record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        if schedule:
            self.schedule = schedule
            self.record_steps = True  # ProfilerStep#<n> ranges mark the steps
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn: record_function | None = None
        action = self.schedule(self.step_num)
        _check_action(action)
        self.current_action = action
        A = ProfilerAction  # noqa: N806
        self.action_map: dict = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn,
                                         "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn,
                                         "Incorrect schedule: RECORD followed by NONE"),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn,
                                           "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.stop()
        if self.execution_trace_observer:
            self.execution_trace_observer.cleanup()

    def start(self) -> None:
        """Starts the profiler at step 0 (what entering the context does)."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        """Stops the profiler (what leaving the context does); a cycle still recording ends,
        and ``on_trace_ready`` is called for it."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signals that the next step starts (the schedule decides what it records)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        action = self.schedule(self.step_num + 1)
        _check_action(action)
        self.step_num += 1
        self.current_action = action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def set_custom_trace_id_callback(self, callback: Callable[[], str]) -> None:
        """Sets the function giving each cycle's trace id."""
        self.custom_trace_id_callback = callback

    def get_trace_id(self) -> str | None:
        """The current cycle's trace id."""
        if self.profiler is None:
            return None
        return self.profiler.trace_id

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action: ProfilerAction,
                        current_action: ProfilerAction | None) -> None:
        for action in self.action_map.get((prev_action, current_action), ()):
            action()


def _check_action(action: Any) -> None:
    if action == ProfilerAction.DEVICE_STOPPED:
        raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and "
                         "must not be returned by a user-provided schedule")
