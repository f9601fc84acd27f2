# The "PyTorch Profiler" recipe (pytorch.org/tutorials/recipes/recipes/profiler_recipe), on the
# CPU, with a small convolutional network in place of torchvision's resnet18 (and smaller
# inputs); only the import lines changed. Files are written to the working directory.
import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.profiler import profile, record_function, ProfilerActivity

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
    nn.Linear(16, 10))
inputs = torch.randn(5, 3, 32, 32)

# Using profiler to analyze execution time
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        model(inputs)

print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10))
time_prof = prof

# Using profiler to analyze memory consumption
with profile(activities=[ProfilerActivity.CPU],
             profile_memory=True, record_shapes=True) as prof:
    model(inputs)

print(prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10))
print(prof.key_averages().table(sort_by="cpu_memory_usage", row_limit=10))
memory_prof = prof

# Using tracing functionality
activities = [ProfilerActivity.CPU]
with profile(activities=activities) as prof:
    model(inputs)

prof.export_chrome_trace("trace.json")

# Examining stack traces
with profile(
    activities=[ProfilerActivity.CPU],
    with_stack=True,
) as prof:
    model(inputs)

# Print aggregated stats
print(prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total", row_limit=2))
stack_prof = prof

# Using profiler to analyze long-running jobs
ready_steps = []


def trace_handler(p):
    output = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    print(output)
    p.export_chrome_trace("test_trace_" + str(p.step_num) + ".json")
    ready_steps.append(p.step_num)


with profile(
    activities=[ProfilerActivity.CPU],
    schedule=torch.profiler.schedule(
        wait=1,
        warmup=1,
        active=2),
    on_trace_ready=trace_handler
) as p:
    for idx in range(8):  # noqa: B007 - (the recipe's loop)
        model(inputs)
        p.step()
