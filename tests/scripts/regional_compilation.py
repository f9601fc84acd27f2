# ruff: noqa: A001, A002, N801 (tutorial code as is)
"""pytorch/tutorials recipes_source/regional_compilation.py: compiling a model of 64 repeated
layers whole, against compiling only the repeated ``Layer`` (``torch.compile(Layer())`` in a
ModuleList), measuring the first call after ``torch.compiler.reset()``.

Changes: ``.cuda()`` and ``device="cuda"`` are dropped (a CPU run); torch's
``torch._inductor.utils.fresh_inductor_cache()`` (no inductor here) is a null context; the two
models' outputs are compared with the eager model's (the same weights)."""
import contextlib
from time import perf_counter

import jitgrad as torch

torch.manual_seed(0)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = torch.nn.Linear(10, 10)
        self.relu1 = torch.nn.ReLU()
        self.linear2 = torch.nn.Linear(10, 10)
        self.relu2 = torch.nn.ReLU()

    def forward(self, x):
        a = self.linear1(x)
        a = self.relu1(a)
        a = torch.sigmoid(a)
        b = self.linear2(a)
        b = self.relu2(b)
        return b

class Model(torch.nn.Module):
    def __init__(self, apply_regional_compilation):
        super().__init__()
        self.linear = torch.nn.Linear(10, 10)
        # Apply compile only to the repeated layers.
        if apply_regional_compilation:
            self.layers = torch.nn.ModuleList([torch.compile(Layer()) for _ in range(64)])
        else:
            self.layers = torch.nn.ModuleList([Layer() for _ in range(64)])

    def forward(self, x):
        # In regional compilation, the self.linear is outside of the scope of `torch.compile`.
        x = self.linear(x)
        for layer in self.layers:
            x = layer(x)
        return x


model = Model(apply_regional_compilation=False)
full_compiled_model = torch.compile(model)

regional_compiled_model = Model(apply_regional_compilation=True)
# (the same weights as the eager model, to compare the outputs: state dict keys of a compiled
# layer start with _orig_mod)
regional_compiled_model.load_state_dict(
    {k.replace(".linear", "._orig_mod.linear") if k.startswith("layers.") else k: v
     for k, v in model.state_dict().items()})


class _inductor:  # (torch._inductor.utils.fresh_inductor_cache: nothing to clear here)
    class utils:
        fresh_inductor_cache = staticmethod(contextlib.nullcontext)


def measure_latency(fn, input):
    # Reset the compiler caches to ensure no reuse between different runs
    torch.compiler.reset()
    with _inductor.utils.fresh_inductor_cache():
        start = perf_counter()
        fn(input)
        end = perf_counter()
        return end - start

input = torch.randn(10, 10)
full_model_compilation_latency = measure_latency(full_compiled_model, input)
print(f"Full model compilation time = {full_model_compilation_latency:.2f} seconds")

regional_compilation_latency = measure_latency(regional_compiled_model, input)
print(f"Regional compilation time = {regional_compilation_latency:.2f} seconds")

expected = model(input)
same = (torch.allclose(full_compiled_model(input), expected, atol=1e-6),
        torch.allclose(regional_compiled_model(input), expected, atol=1e-6))
compiled_keys = list(regional_compiled_model.state_dict())[2:4]
