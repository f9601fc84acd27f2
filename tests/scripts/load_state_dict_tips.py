"""Loading a checkpoint into a module without wasted copies, written for these tests in the
way the PyTorch load_state_dict tips recipe is commonly written (modelled on the API usage of
that recipe, not a copy of it):

- ``torch.save`` of a state_dict and ``torch.load(path)`` / ``torch.load(path, mmap=True)``;
- building a module under ``with torch.device('meta')`` (an explicit ``device='cpu'`` inside
  still wins);
- ``load_state_dict(sd)`` into meta parameters (a no-op, with warnings) versus
  ``load_state_dict(sd, assign=True)`` that takes the checkpoint's tensors as Parameters;
- calling a module whose ``forward`` hands the input to an ``nn.ModuleList``.
"""
import os
import tempfile
import warnings

import jitgrad as torch
from jitgrad import nn

torch.manual_seed(0)
ckpt_path = os.path.join(tempfile.mkdtemp(), "stack.pt")


class ScalarStack(nn.Module):
    """Ten independent 1 -> 1 linear maps."""

    def __init__(self, depth=10):
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(1, 1) for _ in range(depth))

    def forward(self, x):
        return self.linears(x)  # a ModuleList is not callable: this raises


def device_types(module):
    return {p.device.type for p in module.parameters()}


source = ScalarStack()
torch.save(source.state_dict(), ckpt_path)

# 1) meta skeleton + assign=True: parameters become the (mmapped) checkpoint tensors
with torch.device("meta"):
    skeleton = ScalarStack()
meta_devices = device_types(skeleton)
skeleton.load_state_dict(torch.load(ckpt_path, mmap=True), assign=True)
params = list(skeleton.parameters())
assigned = {
    "devices": device_types(skeleton),
    "same_values": all(torch.equal(p, q) for p, q in zip(params, source.parameters())),
    "is_parameter": all(isinstance(p, nn.Parameter) for p in params),
    "requires_grad": all(p.requires_grad for p in params),
}

# 2) the ordinary route: a real module, loaded by copy
plain = ScalarStack()
plain.load_state_dict(torch.load(ckpt_path))

sd = torch.load(ckpt_path, mmap=True)
with torch.device("meta"):
    skeleton = ScalarStack()
    explicit_cpu = torch.ones(2, device="cpu").device.type
meta_sizes = [tuple(p.size()) for p in skeleton.parameters()][:2]

# 3) copying into meta tensors does nothing (one warning per parameter)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    skeleton.load_state_dict(sd)
no_op_warnings = [str(w.message) for w in seen]
still_meta = device_types(skeleton)
skeleton.load_state_dict(sd, assign=True)

ones = torch.ones(3, 1)
same_as_m = all(torch.equal(a(ones), b(ones)) for a, b in zip(skeleton.linears, plain.linears))
forward_error = None
try:
    skeleton(ones)
except NotImplementedError as err:
    forward_error = (type(err).__name__, str(err))
print(meta_devices, assigned, explicit_cpu, meta_sizes, still_meta, forward_error)
