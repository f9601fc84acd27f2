"""How autograd records, accumulates and frees things, written for these tests in the way the
PyTorch autograd introduction, "autograd mechanics" notes and saved-tensor-hooks tutorial are
commonly written (modelled on the API usage of those pages, not a copy of them):

- ``backward(gradient=)``, which results require grad, freezing a network except a new head;
- ``retain_grad``, ``register_hook`` (changing a gradient, removing the handle),
  ``register_post_accumulate_grad_hook``, accumulation and ``grad.zero_()``;
- ``no_grad``, ``inference_mode`` (and its error), ``set_grad_enabled`` as context and call,
  the ``no_grad``/``enable_grad`` decorators, ``requires_grad_``, ``detach``;
- the version-counter error after an in-place change, ``grad_fn._saved_self`` /
  ``_saved_result`` and the error once freed;
- ``autograd.graph.saved_tensors_hooks`` (printing, broken, counting, spilling to disk with
  ``torch.save``/``torch.load`` above a size threshold, inside a module) and ``save_on_cpu``.
"""
import os
import tempfile
import uuid

import jitgrad as torch
from jitgrad import nn, optim
from jitgrad.autograd.graph import save_on_cpu, saved_tensors_hooks

torch.manual_seed(0)

# ---- gradients of a vector-valued result need a vector to weigh them
p = torch.tensor([1.0, 2.0], requires_grad=True)
q = torch.tensor([3.0, -1.0], requires_grad=True)
r = 2 * p**3 + 5 * q**2
r.backward(gradient=torch.ones(2))
gentle_ok = bool((p.grad == 6 * p**2).all()) and bool((q.grad == 10 * q).all())
print("dp, dq:", p.grad, q.grad)

# ---- a result needs grad as soon as one input does
consts = torch.rand(4, 4), torch.rand(4, 4)
learnable = torch.rand(4, 4, requires_grad=True)
dag_flags = ((consts[0] * consts[1]).requires_grad, (consts[0] - learnable).requires_grad)

# fine-tuning: freeze a trained body, swap in a fresh (trainable) head
body_and_head = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
for prm in body_and_head.parameters():
    prm.requires_grad = False
body_and_head[2] = nn.Linear(16, 10)
head_opt = optim.SGD(body_and_head.parameters(), lr=1e-2, momentum=0.9)
body_and_head(torch.randn(3, 8)).sum().backward()
frozen_grads = [prm.grad is None for prm in body_and_head.parameters()]

# ---- hooks and accumulation
leaf = torch.randn(3, requires_grad=True)
mid = leaf * 2
mid.retain_grad()
(mid**2).sum().backward()
retained = (mid.grad.tolist(), (2 * mid).tolist(), mid.retains_grad, mid.is_leaf)

scaled = torch.zeros(3, requires_grad=True)
handle = scaled.register_hook(lambda g: 2 * g)
upstream = torch.tensor([1.0, 2.0, 3.0])
scaled.backward(upstream)
hooked_grad = scaled.grad.tolist()
handle.remove()
scaled.grad = None
scaled.backward(upstream)
unhooked_grad = scaled.grad.tolist()

seen = []
src = torch.ones(2, requires_grad=True)
inner = src * 3
inner.register_hook(lambda g: seen.append(g.tolist()))
inner.sum().backward()

acc = []
w = torch.ones(2, requires_grad=True)
w.register_post_accumulate_grad_hook(lambda t: acc.append(t.grad.tolist()))
(5 * w).sum().backward()

summed = torch.ones(3, requires_grad=True)
for _ in range(3):
    (2 * summed).sum().backward()  # each call adds 2
accumulated = summed.grad.tolist()
summed.grad.zero_()
zeroed = summed.grad.tolist()

# ---- grad modes
base = torch.ones(2, requires_grad=True)
with torch.no_grad():
    no_grad_flag = (base + 1).requires_grad

with torch.inference_mode():
    frozen = base + 1
inference_flags = (frozen.requires_grad, frozen.is_inference())
try:
    (frozen * base).sum().backward()  # the product would save the inference tensor
    inference_error = None
except RuntimeError as err:
    inference_error = str(err)

training = False
with torch.set_grad_enabled(training):
    set_grad_flag = (base + 1).requires_grad
torch.set_grad_enabled(True)  # (a plain call works too)
set_grad_fn_flag = (base + 1).requires_grad


@torch.no_grad()
def halve(t):
    return t / 2


@torch.enable_grad()
def negate(t):
    return -t


with torch.no_grad():
    negated = negate(base)
decorator_flags = (halve(base).requires_grad, negated.requires_grad)

vec = torch.randn(3)
vec.requires_grad_()
cut = (vec + 1).detach()
detach_flags = (vec.requires_grad, cut.requires_grad, cut.grad_fn is None)
fresh_memory = cut.data_ptr() != (vec + 1).detach().data_ptr()  # a new result each time

# ---- saved tensors and the in-place check
inp = torch.randn(3, requires_grad=True)
sig = inp.sigmoid()  # sigmoid keeps its output for the backward
doubled = sig * 2
sig.mul_(3)
try:
    doubled.sum().backward()
    sig.sum().backward()
    inplace_error = None
except RuntimeError as err:
    inplace_error = str(err).split(";")[0]

t = torch.randn(5, requires_grad=True)
sq = t.pow(2)
saved_self = (t.equal(sq.grad_fn._saved_self), t is sq.grad_fn._saved_self)
ex = t.exp()
saved_result = (ex.equal(ex.grad_fn._saved_result), ex is ex.grad_fn._saved_result)
sq.sum().backward()
try:
    sq.grad_fn._saved_self
    freed_error = None
except RuntimeError as err:
    freed_error = str(err).split(".")[0]


def show_pack(tensor):
    print("pack", tuple(tensor.shape))
    return tensor


def show_unpack(tensor):
    print("unpack", tuple(tensor.shape))
    return tensor


u, v = torch.ones(5, requires_grad=True), 2 * torch.ones(5, requires_grad=True)
with saved_tensors_hooks(show_pack, show_unpack):
    prod = u * v
prod.sum().backward()

with saved_tensors_hooks(lambda tensor: None, lambda packed: None):
    prod = torch.randn(5, requires_grad=True) * torch.randn(5, requires_grad=True)
try:
    prod.sum().backward()  # the unpack hook hands back None, not a tensor
    bad_hook_error = None
except (RuntimeError, TypeError) as err:
    bad_hook_error = type(err).__name__

stash = []


def stash_pack(tensor):
    stash.append(tensor)
    return len(stash) - 1


with saved_tensors_hooks(stash_pack, stash.__getitem__):
    sq = t.pow(2)
t.grad = None
sq.sum().backward()
counted = (len(stash), torch.equal(t.grad, 2 * t))

# ---- spilling saved tensors to disk
spill = tempfile.TemporaryDirectory()


class TempTensorFile:
    """A file that disappears together with the last reference to it."""

    def __init__(self, tensor):
        self.path = os.path.join(spill.name, uuid.uuid4().hex)
        torch.save(tensor, self.path)

    def load(self):
        return torch.load(self.path)

    def __del__(self):
        os.remove(self.path)


with saved_tensors_hooks(TempTensorFile, TempTensorFile.load):
    sq = t.pow(2)
files_while_alive = len(os.listdir(spill.name))
t.grad = None
sq.sum().backward()
disk_grad_ok = torch.equal(t.grad, 2 * t)
del sq
files_after = len(os.listdir(spill.name))

MIN_SPILL = 10  # elements; smaller tensors stay in memory


def maybe_spill(tensor):
    return tensor if tensor.numel() < MIN_SPILL else TempTensorFile(tensor)


def maybe_load(packed):
    return packed if isinstance(packed, torch.Tensor) else packed.load()


class SpillingTanhLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with saved_tensors_hooks(maybe_spill, maybe_load):
            return self.lin(x).tanh()


layer = SpillingTanhLayer()
batch = torch.randn(6, 4)
layer(batch).sum().backward()
spilled_grad = layer.lin.weight.grad.clone()
layer.lin.weight.grad = None
layer.lin(batch).tanh().sum().backward()
threshold_same_grads = torch.allclose(spilled_grad, layer.lin.weight.grad)

with save_on_cpu(pin_memory=False):
    wave = (t * t.sin()).sum()
t.grad = None
wave.backward()
save_on_cpu_ok = torch.allclose(t.grad, t.sin() + t * t.cos())
spill.cleanup()

# fixed float64 values, recorded for the comparison with torch
fx = torch.linspace(-1, 2, 6, dtype=torch.float64).requires_grad_()
fy = fx.cos() * 3
fy.retain_grad()
fy.register_hook(lambda g: g + fx.detach())
(fy**3).sum().backward()
fixed_results = {"x_grad": fx.grad.tolist(), "y_grad": fy.grad.tolist()}
