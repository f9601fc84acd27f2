"""Compiling only the repeated block of a deep model, written for these tests in the way the
PyTorch regional compilation recipe is commonly written (modelled on the API usage of that
recipe, not a copy of it):

- ``torch.compile`` of a whole model against ``torch.compile`` of each repeated block held
  in an ``nn.ModuleList`` (state dict keys then go through ``_orig_mod``);
- ``torch.compiler.reset()`` before timing each first call with ``time.perf_counter``;
- ``nn.Linear``, ``nn.ReLU``, ``torch.sigmoid``, ``load_state_dict``, ``torch.allclose``.
"""
import time

import jitgrad as torch
from jitgrad import nn

torch.manual_seed(0)
WIDTH, DEPTH = 10, 64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(WIDTH, WIDTH)
        self.act1 = nn.ReLU()
        self.linear2 = nn.Linear(WIDTH, WIDTH)
        self.act2 = nn.ReLU()

    def forward(self, x):
        h = torch.sigmoid(self.act1(self.linear1(x)))
        return self.act2(self.linear2(h))


class DeepStack(nn.Module):
    def __init__(self, compile_blocks=False):
        super().__init__()
        self.stem = nn.Linear(WIDTH, WIDTH)  # stays eager either way
        make = (lambda: torch.compile(Block())) if compile_blocks else Block
        self.layers = nn.ModuleList(make() for _ in range(DEPTH))

    def forward(self, x):
        x = self.stem(x)
        for block in self.layers:
            x = block(x)
        return x


def first_call_seconds(fn, x):
    torch.compiler.reset()  # no cached compilation from an earlier run
    t0 = time.perf_counter()
    fn(x)
    return time.perf_counter() - t0


eager = DeepStack()
whole = torch.compile(eager)
regional = DeepStack(compile_blocks=True)
# a compiled block nests its module under _orig_mod: map the eager keys over
renamed = {}
for key, value in eager.state_dict().items():
    if key.startswith("layers."):
        idx, rest = key[len("layers."):].split(".", 1)
        key = f"layers.{idx}._orig_mod.{rest}"
    renamed[key] = value
regional.load_state_dict(renamed)

x = torch.randn(10, WIDTH)
full_model_compilation_latency = first_call_seconds(whole, x)
regional_compilation_latency = first_call_seconds(regional, x)
print(f"whole model: {full_model_compilation_latency:.3f} s, "
      f"per block: {regional_compilation_latency:.3f} s")

reference = eager(x)
same = tuple(torch.allclose(m(x), reference, atol=1e-6) for m in (whole, regional))
compiled_keys = list(regional.state_dict())[2:4]
