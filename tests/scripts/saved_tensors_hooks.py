"""Hooks on the tensors autograd saves for backward, written for these tests in the way the
PyTorch saved-tensors-hooks tutorial is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- ``grad_fn._saved_self`` / ``_saved_other`` (the inputs themselves) and ``_saved_result``
  (an equal tensor, not the output object);
- ``torch.autograd.graph.saved_tensors_hooks`` whose pack returns anything: the tensor, a
  scaled tensor, an index into a list, a (tensor, closure) pair, a ``repr`` string that the
  unpack ``eval``s, a (device, cpu tensor) pair;
- ``torch.autograd.graph.save_on_cpu(pin_memory=True)`` inside a module and as a wrapper;
- hooks that ``torch.save`` to files (one deleting on unpack, so a second access fails; one
  whose file object deletes itself), a size threshold, and ``nn.DataParallel`` over it.
"""
import os
import tempfile
import uuid

import jitgrad as torch
import jitgrad.nn as nn

torch.manual_seed(0)
rec = {}
hooks = torch.autograd.graph.saved_tensors_hooks
on_cpu = torch.autograd.graph.save_on_cpu

# ---- what a grad_fn keeps
p = torch.randn(5, requires_grad=True)
q = torch.ones(5, requires_grad=True)
prod = p * q
rec["saved_is_input"] = (prod.grad_fn._saved_self is p, prod.grad_fn._saved_other is q)
print(prod.grad_fn._saved_self, prod.grad_fn._saved_other)
expd = torch.exp(p)
kept = expd.grad_fn._saved_result
rec["saved_result"] = (kept.equal(expd), kept is expd)

# ---- logging hooks
packed = []
unpacked = []


def log_pack(t):
    packed.append(t.tolist())
    return t


def log_unpack(t):
    unpacked.append(t.tolist())
    return t


ones = torch.ones(5, requires_grad=True)
twos = torch.ones(5, requires_grad=True) * 2
with hooks(log_pack, log_unpack):
    prod = ones * twos
prod.sum().backward()
rec.update(packed=packed, unpacked=unpacked)
rec["hooked_grad"] = ones.grad.tolist()


def grad_of_square(pack, unpack, square=lambda t: t * t):
    v = torch.randn(5, requires_grad=True)
    with hooks(pack, unpack):
        out = square(v)
    out.sum().backward()
    return v, v.grad


# scale on the way in, undo on the way out (exact in binary floating point)
v, g = grad_of_square(lambda t: t * 4, lambda t: t / 4, square=lambda t: torch.pow(t, 2))
assert g.equal(2 * v)

# keep the tensors in a list; the graph holds only their positions
storage = []


def to_slot(t):
    storage.append(t)
    return len(storage) - 1


v, g = grad_of_square(to_slot, storage.__getitem__)
assert g.equal(2 * v)
rec["storage_len"] = len(storage)  # x * x saved x twice


def noisy_pack(t):
    noise = torch.randn(*t.size())
    return t - noise, lambda s: s + noise


def noisy_unpack(pair):
    shifted, restore = pair
    return restore(shifted)


v, g = grad_of_square(noisy_pack, noisy_unpack)
assert torch.allclose(g, 2 * v)

# a printed tensor read back: only the printed digits survive
v, g = grad_of_square(repr, lambda text: eval("torch." + text))  # noqa: S307 (our own repr)
assert torch.all(g - 2 * v <= 1e-4)


def offload(t):
    return t.device, t.cpu()


def reload(pair):
    dev, t = pair
    return t.to(dev)


v, g = grad_of_square(offload, reload)
rec["cpu_hooks_close"] = torch.allclose(g, 2 * v)


# ---- save_on_cpu
class Scale(nn.Module):
    def __init__(self, size=5):
        super().__init__()
        self.w = nn.Parameter(torch.randn(size))

    def forward(self, x):
        with on_cpu(pin_memory=True):
            return self.w * x


inputs = torch.randn(5)
scale = Scale()
scale(inputs).sum().backward()
rec["model_grad_is_x"] = torch.equal(scale.w.grad, inputs)


class OnCpu(nn.Module):
    """Runs the wrapped module with its saved tensors kept on the CPU."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *inputs, **options):
        with on_cpu(pin_memory=True):
            return self.inner(*inputs, **options)


mlp = nn.Sequential(nn.Linear(10, 100), OnCpu(nn.Linear(100, 100)), nn.Linear(100, 10))
vec = torch.randn(10)
mlp(vec).sum().backward()
with_hooks = [w.grad.clone() for w in mlp.parameters()]
mlp.zero_grad()
bare = nn.Sequential(mlp[0], mlp[1].inner, mlp[2])  # the same layers without the wrapper
bare(vec).sum().backward()
rec["save_to_cpu_same_grads"] = all(torch.equal(a, w.grad)
                                    for a, w in zip(with_hooks, bare.parameters()))

# ---- saving to disk
folder = tempfile.TemporaryDirectory()


def fresh_path():
    return os.path.join(folder.name, uuid.uuid4().hex)


def disk_pack(t):
    path = fresh_path()
    torch.save(t, path)
    return path


def disk_unpack_once(path):
    t = torch.load(path)
    os.remove(path)  # a second unpack finds no file
    return t


base = torch.ones(5, requires_grad=True)
with hooks(disk_pack, disk_unpack_once):
    sq = base.pow(2)
print(sq.grad_fn._saved_self)
outcome = "succeeded"
try:
    sq.grad_fn._saved_self
except Exception:  # the file is gone
    outcome = "failed"
rec["double_access"] = outcome
print("second access:", rec["double_access"])


class TempFile:
    """A file name whose file goes away with the object."""

    def __init__(self):
        self.name = fresh_path()

    def __del__(self):
        os.remove(self.name)


def file_pack(t):
    handle = TempFile()
    torch.save(t, handle.name)
    return handle


base = torch.ones(5, requires_grad=True)
with hooks(file_pack, lambda handle: torch.load(handle.name)):
    sq = base.pow(2)
rec["files_while_saved"] = len(os.listdir(folder.name))
_ = [sq.grad_fn._saved_self.tolist() for _ in range(2)]  # readable as often as needed
sq.sum().backward()
del sq
rec["files_after_backward"] = len(os.listdir(folder.name))
rec["disk_grad"] = base.grad.tolist()

MIN_NUMEL_ON_DISK = 1000  # small tensors stay in memory


def maybe_to_disk(t):
    return t if t.numel() < MIN_NUMEL_ON_DISK else file_pack(t)


def maybe_from_disk(obj):
    return obj if isinstance(obj, torch.Tensor) else torch.load(obj.name)


class OnDisk(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *inputs, **options):
        with hooks(maybe_to_disk, maybe_from_disk):
            return self.inner(*inputs, **options)


parallel = nn.DataParallel(OnDisk(Scale()))
inputs = torch.randn(5)
parallel(inputs).sum().backward()
rec["data_parallel_grad_is_x"] = torch.equal(parallel.module.inner.w.grad, inputs)
print(rec)
