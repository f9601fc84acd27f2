"""Saving several models in one checkpoint and loading across devices, written for these
tests in the way the PyTorch save/load recipes are commonly written (modelled on the API usage
of those recipes, not a copy of them):

- one ``torch.save`` dict holding two models' and two ``optim.SGD(momentum=0.9)`` optimizers'
  ``state_dict()``; ``torch.load`` and ``load_state_dict`` for models and optimizers;
  ``eval()`` / ``train()``; resumed training equal to uninterrupted training;
- ``torch.load(path, map_location=torch.device('cpu'))``, the cuda-only path
  (``map_location="cuda:0"``, ``model.to(device)``), ``map_location="meta"`` with
  ``load_state_dict(..., assign=True)``;
- saving ``nn.DataParallel(model).module.state_dict()`` and loading it into a plain model.
"""
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

torch.manual_seed(0)
ckpt = os.path.join(tempfile.mkdtemp(), "pair.tar")


class SmallConv(nn.Module):
    """3x32x32 images -> 10 scores; ten parameter tensors, conv1 first."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.down = nn.MaxPool2d(2, 2)
        self.hidden = nn.Linear(400, 120)
        self.hidden2 = nn.Linear(120, 84)
        self.scores = nn.Linear(84, 10)

    def forward(self, x):
        for conv in (self.conv1, self.conv2):
            x = self.down(F.relu(conv(x)))
        x = x.flatten(start_dim=1)
        return self.scores(F.relu(self.hidden2(F.relu(self.hidden(x)))))


def sgd(model):
    return optim.SGD(model.parameters(), lr=0.001, momentum=0.9)


batch = torch.rand(4, 3, 32, 32)
targets = torch.tensor([3, 2, 1, 0])


def train_step(model, opt):
    opt.zero_grad()
    loss = F.cross_entropy(model(batch), targets)
    loss.backward()
    opt.step()
    return loss.item()


first, second = SmallConv(), SmallConv()
opt_first, opt_second = sgd(first), sgd(second)
for _ in range(2):  # so that the optimizers hold momentum buffers
    train_step(first, opt_first)
    train_step(second, opt_second)

bundle = {}
for tag, model, opt in (("A", first, opt_first), ("B", second, opt_second)):
    bundle[f"model{tag}_state_dict"] = model.state_dict()
    bundle[f"optimizer{tag}_state_dict"] = opt.state_dict()
torch.save(bundle, ckpt)

loaded = torch.load(ckpt)
checkpoint_keys = sorted(loaded)
copy_first, copy_second = SmallConv(), SmallConv()
copy_first.load_state_dict(loaded["modelA_state_dict"])
copy_second.load_state_dict(loaded["modelB_state_dict"])
opt_first.load_state_dict(loaded["optimizerA_state_dict"])
opt_second.load_state_dict(loaded["optimizerB_state_dict"])
# the loaded optimizer keeps the checkpoint's tensors (no copy), so a second optimizer needs
# its own load of the file rather than the same dict
shared_buffer = (opt_first.state[first.scores.bias]["momentum_buffer"]
                 is loaded["optimizerA_state_dict"]["state"][9]["momentum_buffer"])
fresh = torch.load(ckpt)
opt_copy_first, opt_copy_second = sgd(copy_first), sgd(copy_second)
opt_copy_first.load_state_dict(fresh["optimizerA_state_dict"])
opt_copy_second.load_state_dict(fresh["optimizerB_state_dict"])
momentum_buffers = sum("momentum_buffer" in s for s in opt_copy_first.state.values())

for m in (copy_first, copy_second):
    m.eval()  # for inference ...
    m.train()  # ... or to keep training
resumed = [(train_step(first, opt_first), train_step(copy_first, opt_copy_first))
           for _ in range(2)]
resumed_equal = all(torch.equal(a, b) for a, b in zip(first.parameters(),
                                                      copy_first.parameters()))

# ---- across devices
source = SmallConv()
torch.save(source.state_dict(), ckpt)
on_cpu = SmallConv()
on_cpu.load_state_dict(torch.load(ckpt, map_location=torch.device("cpu")))
cpu_loaded = all(torch.equal(a, b) for a, b in zip(source.parameters(), on_cpu.parameters()))

if torch.cuda.is_available():
    gpu = torch.device("cuda")
    on_gpu = SmallConv()
    on_gpu.load_state_dict(torch.load(ckpt, map_location="cuda:0"))
    on_gpu.to(gpu)

meta_sd = torch.load(ckpt, map_location="meta")
mapped_devices = sorted({t.device.type for t in meta_sd.values()})
on_meta = SmallConv()
on_meta.load_state_dict(meta_sd, assign=True)
model_devices = sorted({p.device.type for p in on_meta.parameters()})

# ---- a DataParallel model: save the wrapped module's state so plain models can load it
wrapped = nn.DataParallel(SmallConv())
torch.save(wrapped.module.state_dict(), ckpt)
unwrapped = SmallConv()
unwrapped.load_state_dict(torch.load(ckpt))
data_parallel_keys = list(unwrapped.state_dict())[:2]
data_parallel_same = torch.equal(unwrapped(batch), wrapped(batch))
print(checkpoint_keys, momentum_buffers, resumed_equal, mapped_devices, data_parallel_keys)
