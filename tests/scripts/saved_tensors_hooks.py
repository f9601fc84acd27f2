# ruff: noqa: E401, E402, E501, E722, E731, F811, F821, F841, N801, S307, UP004, UP039 (tutorial code as is)
"""pytorch/tutorials intermediate_source/autograd_saved_tensors_hooks_tutorial.py: the
``_saved_*`` attributes of a grad_fn (the same objects, or an unpacked copy of an output),
saved_tensors_hooks with hooks that return any Python object (an index, a tuple, a repr
string that is eval'd back), save_on_cpu (also inside a module), hooks that save to disk and
the double-access failure of the file-deleting version, and nn.DataParallel over such a module.

Changes for the test: the tutorial's first ``tmp_dir = "temp"`` version is never called; the
prints are also recorded; the disk hooks run a backward (the tutorial stops at defining them)."""
import jitgrad as torch

torch.manual_seed(0)
rec = {}

a = torch.randn(5, requires_grad=True)
b = torch.ones(5, requires_grad=True)
y = a * b

print(y.grad_fn._saved_self)
print(y.grad_fn._saved_other)

def f(x):
    return x * x

x = torch.randn(5, requires_grad=True)
y = f(f(f(x)))

a = torch.randn(5, requires_grad=True)
b = torch.ones(5, requires_grad=True)
y = a * b

print(y.grad_fn._saved_self is a)   # True
print(y.grad_fn._saved_other is b)  # True
rec["saved_is_input"] = (y.grad_fn._saved_self is a, y.grad_fn._saved_other is b)

a = torch.randn(5, requires_grad=True)
y = torch.exp(a)
print(y.grad_fn._saved_result.equal(y))  # True
print(y.grad_fn._saved_result is y)      # False
rec["saved_result"] = (y.grad_fn._saved_result.equal(y), y.grad_fn._saved_result is y)

packed, unpacked = [], []

def pack_hook(x):
    print("Packing", x)
    packed.append(x.tolist())
    return x

def unpack_hook(x):
    print("Unpacking", x)
    unpacked.append(x.tolist())
    return x
a = torch.ones(5, requires_grad=True)
b = torch.ones(5, requires_grad=True) * 2

with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b

y.sum().backward()
rec["packed"], rec["unpacked"] = packed, unpacked
rec["hooked_grad"] = a.grad.tolist()

x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(lambda x: x * 4, lambda x: x / 4):
    y = torch.pow(x, 2)
y.sum().backward()
assert(x.grad.equal(2 * x))

storage = []

def pack(x):
    storage.append(x)
    return len(storage) - 1

def unpack(x):
    return storage[x]

x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x * x
y.sum().backward()

assert(x.grad.equal(2 * x))
rec["storage_len"] = len(storage)

def pack(x):
    delta = torch.randn(*x.size())
    return x - delta, lambda x: x + delta

def unpack(packed):
    x, f = packed
    return f(x)


x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x * x
y.sum().backward()

assert(torch.allclose(x.grad, 2 * x))

x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(lambda x: repr(x), lambda x: eval("torch." + x)):
    y = x * x
y.sum().backward()
assert(torch.all(x.grad - 2 * x <= 1e-4))

def pack_hook(x):
    return (x.device, x.cpu())

def unpack_hook(packed):
    device, tensor = packed
    return tensor.to(device)

x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x * x
y.sum().backward()

rec["cpu_hooks_close"] = torch.allclose(x.grad, (2 * x))

import jitgrad.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5))

    def forward(self, x):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            # some computation
            return self.w * x

x = torch.randn(5)
model = Model()
loss = model(x).sum()
loss.backward()
rec["model_grad_is_x"] = torch.equal(model.w.grad, x)

class SaveToCpu(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            return self.module(*args, **kwargs)

model = nn.Sequential(
    nn.Linear(10, 100),
    SaveToCpu(nn.Linear(100, 100)),
    nn.Linear(100, 10),
)

x = torch.randn(10)
loss = model(x).sum()
loss.backward()
hooked_grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
plain = nn.Sequential(model[0], model[1].module, model[2])  # (the same layers, no hooks)
plain(x).sum().backward()
rec["save_to_cpu_same_grads"] = all(torch.equal(g, p.grad) for g, p in zip(hooked_grads, plain.parameters()))

import uuid
import os
import tempfile
tmp_dir_obj = tempfile.TemporaryDirectory()
tmp_dir = tmp_dir_obj.name

def pack_hook(tensor):
    name = os.path.join(tmp_dir, str(uuid.uuid4()))
    torch.save(tensor, name)
    return name

def unpack_hook(name):
    tensor = torch.load(name)
    os.remove(name)
    return tensor

x = torch.ones(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = x.pow(2)
print(y.grad_fn._saved_self)
try:
    print(y.grad_fn._saved_self)
    print("Double access succeeded!")
    rec["double_access"] = "succeeded"
except:
    print("Double access failed!")
    rec["double_access"] = "failed"

class SelfDeletingTempFile():
    def __init__(self):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)

def pack_hook(tensor):
    temp_file = SelfDeletingTempFile()
    torch.save(tensor, temp_file.name)
    return temp_file

def unpack_hook(temp_file):
    return torch.load(temp_file.name)

x = torch.ones(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = x.pow(2)
rec["files_while_saved"] = len(os.listdir(tmp_dir))
twice = (y.grad_fn._saved_self.tolist(), y.grad_fn._saved_self.tolist())
y.sum().backward()
del y
rec["files_after_backward"] = len(os.listdir(tmp_dir))
rec["disk_grad"] = x.grad.tolist()

# Only save on disk tensors that have size >= 1000
SAVE_ON_DISK_THRESHOLD = 1000

def pack_hook(x):
    if x.numel() < SAVE_ON_DISK_THRESHOLD:
        return x
    temp_file = SelfDeletingTempFile()
    torch.save(tensor, temp_file.name)
    return temp_file

def unpack_hook(tensor_or_sctf):
    if isinstance(tensor_or_sctf, torch.Tensor):
        return tensor_or_sctf
    return torch.load(tensor_or_sctf.name)

class SaveToDisk(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            return self.module(*args, **kwargs)

net = nn.DataParallel(SaveToDisk(Model()))
x = torch.randn(5)
net(x).sum().backward()
rec["data_parallel_grad_is_x"] = torch.equal(net.module.module.w.grad, x)
