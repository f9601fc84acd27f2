"""Profiling a small CNN on the CPU, written for these tests in the way the PyTorch Profiler
recipe is commonly written (modelled on the API usage of that recipe, not a copy of it):

- ``profile(activities=[ProfilerActivity.CPU], record_shapes=True)`` around a
  ``record_function`` block; ``key_averages()`` tables sorted by time, also grouped by input
  shape
- ``profile_memory=True`` tables sorted by (self) CPU memory; ``export_chrome_trace``
- ``with_stack=True`` and ``key_averages(group_by_stack_n=5)``
- a ``torch.profiler.schedule(wait, warmup, active)`` with an ``on_trace_ready`` handler and
  ``step()`` once per iteration
Trace files are written to the working directory.
"""
import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.profiler import ProfilerActivity, profile, record_function

torch.manual_seed(0)
CPU_ONLY = [ProfilerActivity.CPU]


class TinyConvNet(nn.Module):
    """3x32x32 -> 8x32x32 -> pooled 8x16x16 -> 16x16x16 -> global average -> 10 scores."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.mix = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.flatten(self.pool(self.mix(self.stem(x)))))


net = TinyConvNet()
batch = torch.randn(5, 3, 32, 32)


def show(prof, sort_by, rows=10, **grouping):
    print(prof.key_averages(**grouping).table(sort_by=sort_by, row_limit=rows))


# where the time goes (with each op's input shapes recorded)
with profile(activities=CPU_ONLY, record_shapes=True) as time_prof:
    with record_function("model_inference"):
        net(batch)
show(time_prof, "cpu_time_total")
show(time_prof, "cpu_time_total", group_by_input_shape=True)

# where the memory goes
with profile(activities=CPU_ONLY, profile_memory=True, record_shapes=True) as memory_prof:
    net(batch)
for key in ("self_cpu_memory_usage", "cpu_memory_usage"):
    show(memory_prof, key)

# a trace for chrome://tracing or Perfetto
with profile(activities=CPU_ONLY) as trace_prof:
    net(batch)
trace_prof.export_chrome_trace("trace.json")

# which lines of Python called the ops
with profile(activities=CPU_ONLY, with_stack=True) as stack_prof:
    net(batch)
show(stack_prof, "self_cpu_time_total", rows=2, group_by_stack_n=5)

# a long loop profiled in windows: skip 1 step, warm up 1, record 2, then hand the result over
ready_steps = []


def on_ready(window_prof):
    show(window_prof, "self_cpu_time_total")
    window_prof.export_chrome_trace(f"test_trace_{window_prof.step_num}.json")
    ready_steps.append(window_prof.step_num)


windows = torch.profiler.schedule(wait=1, warmup=1, active=2)
with profile(activities=CPU_ONLY, schedule=windows, on_trace_ready=on_ready) as loop_prof:
    for _ in range(8):
        net(batch)
        loop_prof.step()
print("traces ready after steps", ready_steps)
