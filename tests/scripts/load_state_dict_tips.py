# ruff: noqa: E111 (tutorial code as is)
"""pytorch/tutorials recipes_source/recipes/module_load_state_dict_tips.py: ``torch.load(...,
mmap=True)``, building a module under ``with torch.device('meta')``, and
``load_state_dict(..., assign=True)`` that swaps the checkpoint's tensors in.

Changes: the checkpoint goes to a temporary directory; the results are recorded (devices,
whether the meta module's parameters hold the checkpoint's values, the in-place copy into
meta tensors being a no-op, and a forward of the loaded modules)."""
import os
import tempfile
import warnings

import jitgrad as torch
from jitgrad import nn

torch.manual_seed(0)
checkpoint = os.path.join(tempfile.mkdtemp(), 'checkpoint.pth')

class SomeModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(1, 1) for i in range(10)])

    def forward(self, x):
        return self.linears(x)


m = SomeModule()
torch.save(m.state_dict(), checkpoint)
state_dict = torch.load(checkpoint, mmap=True)
with torch.device('meta'):
  meta_m = SomeModule()
meta_devices = {p.device.type for p in meta_m.parameters()}
meta_m.load_state_dict(state_dict, assign=True)
assigned = {"devices": {p.device.type for p in meta_m.parameters()},
            "same_values": all(torch.equal(a, b) for a, b in
                               zip(meta_m.parameters(), m.parameters())),
            "is_parameter": all(isinstance(p, nn.Parameter) for p in meta_m.parameters()),
            "requires_grad": all(p.requires_grad for p in meta_m.parameters())}

state_dict = torch.load(checkpoint)
m = SomeModule()
m.load_state_dict(state_dict)

state_dict = torch.load(checkpoint)

state_dict = torch.load(checkpoint, mmap=True)
mmap_values = {k: v.tolist() for k, v in state_dict.items()}

m = SomeModule()

with torch.device('meta'):
  meta_m = SomeModule()
  explicit_cpu = torch.ones(2, device='cpu').device.type
meta_sizes = [tuple(p.size()) for p in meta_m.parameters()][:2]

m.load_state_dict(state_dict)

# (without assign=True the copy into meta tensors is a no-op: they stay on meta)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    meta_m.load_state_dict(state_dict)
no_op_warnings = [str(w.message) for w in caught]
still_meta = {p.device.type for p in meta_m.parameters()}
meta_m.load_state_dict(state_dict, assign=True)

x = torch.ones(3, 1)
outputs = [lin(x).flatten().tolist() for lin in meta_m.linears]
same_as_m = all(torch.equal(a(x), b(x)) for a, b in zip(meta_m.linears, m.linears))
try:
    meta_m(x)  # the recipe's forward calls a ModuleList
except Exception as e:
    forward_error = (type(e).__name__, str(e))
