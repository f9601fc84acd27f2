# ruff: noqa: B007, E402, F811, F841, N801, N802, N803, N806, UP008, UP039, UP031, UP032 (tutorial code as is)
"""Snippets of "A Gentle Introduction to torch.autograd", "Autograd mechanics" and "Hooks for
autograd saved tensors": retain_grad, tensor hooks, accumulation, grad modes, detach, and
saved_tensors_hooks (including saving to disk with torch.save/torch.load)."""
import os
import tempfile
import uuid

import jitgrad as torch

torch.manual_seed(0)

# A Gentle Introduction: differentiation in autograd
a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3*a**3 - b**2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
# check if collected gradients are correct
print(9*a**2 == a.grad)
print(-2*b == b.grad)
gentle_ok = bool((9*a**2 == a.grad).all()) and bool((-2*b == b.grad).all())

# Exclusion from the DAG
x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")
dag_flags = (a.requires_grad, b.requires_grad)

from jitgrad import nn, optim

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
# Freeze all the parameters in the network
for param in model.parameters():
    param.requires_grad = False
model[2] = nn.Linear(16, 10)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
model(torch.randn(3, 8)).sum().backward()
frozen_grads = [p.grad is None for p in model.parameters()]  # only the new head trains

# retain_grad on a non-leaf
x = torch.randn(3, requires_grad=True)
y = x * 2
y.retain_grad()
z = (y ** 2).sum()
z.backward()
retained = (y.grad.tolist(), (2 * y).tolist(), y.retains_grad, y.is_leaf)

# register_hook on tensors: inspect and modify gradients
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
v.backward(torch.tensor([1., 2., 3.]))
hooked_grad = v.grad.tolist()
h.remove()  # removes the hook
v.grad = None
v.backward(torch.tensor([1., 2., 3.]))
unhooked_grad = v.grad.tolist()

seen = []
x = torch.ones(2, requires_grad=True)
y = x * 3
y.register_hook(lambda g: seen.append(g.tolist()))
y.sum().backward()

# post-accumulate-grad hooks (the optimizer-in-backward pattern)
acc = []
w = torch.ones(2, requires_grad=True)
w.register_post_accumulate_grad_hook(lambda p: acc.append(p.grad.tolist()))
(w * 5).sum().backward()

# gradients accumulate across backward calls
x = torch.ones(3, requires_grad=True)
for _ in range(3):
    (x * 2).sum().backward()
accumulated = x.grad.tolist()
x.grad.zero_()
zeroed = x.grad.tolist()

# Locally disabling gradient computation
x = torch.ones(2, requires_grad=True)
with torch.no_grad():
    y = x * 2
no_grad_flag = y.requires_grad

with torch.inference_mode():
    y = x * 2
inference_flags = (y.requires_grad, y.is_inference())
try:
    (y * x).sum().backward()  # an inference tensor cannot be saved for backward
    inference_error = None
except RuntimeError as e:
    inference_error = str(e)

is_train = False
with torch.set_grad_enabled(is_train):
    y = x * 2
set_grad_flag = y.requires_grad
torch.set_grad_enabled(True)  # this can also be used as a function
y = x * 2
set_grad_fn_flag = y.requires_grad


@torch.no_grad()
def doubler(x):
    return x * 2


@torch.enable_grad()
def tripler(x):
    return x * 3


z = doubler(x)
with torch.no_grad():
    t = tripler(x)
decorator_flags = (z.requires_grad, t.requires_grad)

# requires_grad_ and detach
a = torch.randn(3)
a.requires_grad_()
d = (a * 2).detach()
detach_flags = (a.requires_grad, d.requires_grad, d.grad_fn is None)
shared = d.data_ptr() == (a * 2).detach().data_ptr()

# in-place correctness checks: version counters
a = torch.randn(3, requires_grad=True)
b = a.sigmoid()
c = b * 2
b.mul_(3)  # sigmoid saved its output, which is now modified
try:
    c.sum().backward()
    b.sum().backward()
    inplace_error = None
except RuntimeError as e:
    inplace_error = str(e).split(";")[0]

# Hooks for saved tensors
x = torch.randn(5, requires_grad=True)
y = x.pow(2)
print(y.grad_fn._saved_self)
print(x.equal(y.grad_fn._saved_self))  # True
print(x is y.grad_fn._saved_self)  # True
saved_self = (x.equal(y.grad_fn._saved_self), x is y.grad_fn._saved_self)

x = torch.randn(5, requires_grad=True)
y = x.exp()
print(y.equal(y.grad_fn._saved_result))  # True
print(y is y.grad_fn._saved_result)  # False
saved_result = (y.equal(y.grad_fn._saved_result), y is y.grad_fn._saved_result)

x = torch.randn(5, requires_grad=True)
y = x.pow(2)
y.sum().backward()
try:
    y.grad_fn._saved_self
    freed_error = None
except RuntimeError as e:
    freed_error = str(e).split(".")[0]


def pack_hook(x):
    print("Packing", x)
    return x


def unpack_hook(x):
    print("Unpacking", x)
    return x


a = torch.ones(5, requires_grad=True)
b = torch.ones(5, requires_grad=True) * 2
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b
y.sum().backward()


def pack_hook(x):
    return None


def unpack_hook(x):
    return None


a = torch.randn(5, requires_grad=True)
b = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b
try:
    y.sum().backward()
    bad_hook_error = None
except (RuntimeError, TypeError) as e:
    bad_hook_error = type(e).__name__

# the hooks can count what is saved
storage = []


def pack(x):
    storage.append(x)
    return len(storage) - 1


def unpack(x):
    return storage[x]


x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x.pow(2)
print(y.grad_fn._saved_self)
y.sum().backward()
counted = (len(storage), torch.equal(x.grad, 2 * x))

# Example: saving on disk
tmp_dir_obj = tempfile.TemporaryDirectory()
tmp_dir = tmp_dir_obj.name


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


x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = x.pow(2)
files_while_alive = len(os.listdir(tmp_dir))
print(y.grad_fn._saved_self)
y.sum().backward()
disk_grad_ok = torch.equal(x.grad, 2 * x)
del y
files_after = len(os.listdir(tmp_dir))


# only save on disk tensors that are big enough (the tutorial's threshold; tiny here)
SAVE_ON_DISK_THRESHOLD = 10


def pack_hook(x):
    if x.numel() < SAVE_ON_DISK_THRESHOLD:
        return x
    temp_file = SelfDeletingTempFile()
    torch.save(x, temp_file.name)
    return temp_file


def unpack_hook(tensor_or_sctf):
    if isinstance(tensor_or_sctf, torch.Tensor):
        return tensor_or_sctf
    return torch.load(tensor_or_sctf.name)


class Model(nn.Module):
    def forward(self, x):
        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            # ... compute output
            output = x
        return output


model = Model()
net = nn.Linear(4, 4)


def fwd(x):
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        return net(x).tanh().sum()


inp = torch.randn(6, 4)
fwd(inp).backward()
hooked_weight_grad = net.weight.grad.clone()
net.weight.grad = None
net(inp).tanh().sum().backward()
threshold_same_grads = torch.allclose(hooked_weight_grad, net.weight.grad)

# save_on_cpu: the built-in pair of hooks
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    y = (x * x.sin()).sum()
x.grad = None
y.backward()
save_on_cpu_ok = torch.allclose(x.grad, x.sin() + x * x.cos())
tmp_dir_obj.cleanup()

# deterministic parts to compare with torch
fx = torch.linspace(-1, 1, 5, dtype=torch.float64).requires_grad_()
fy = fx.sin() * 2
fy.retain_grad()
fy.register_hook(lambda g: g * fx.detach())
(fy ** 2).sum().backward()
fixed_results = {"x_grad": fx.grad.tolist(), "y_grad": fy.grad.tolist()}
