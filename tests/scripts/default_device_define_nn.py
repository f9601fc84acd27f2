"""Choosing the default device and defining a network, written for these tests in the way
the PyTorch "changing default device" and "defining a neural network" recipes are commonly
written (modelled on the API usage of those recipes, not a copy of them):

- a device-agnostic ``USE_CUDA`` switch (``mod.cuda()``, ``device=`` on a factory);
- ``with torch.device('meta')`` and ``torch.set_default_device`` / ``get_default_device``
  (``'meta'`` stands in for a GPU here; the default goes back to the CPU with ``None``);
- a digits classifier with ``nn.Conv2d(in, out, k, stride)``, two ``nn.Dropout2d`` (the
  second sees a 2-D hidden layer and warns), ``F.relu``, ``F.max_pool2d``,
  ``flatten(start_dim=1)`` and ``F.log_softmax``, run on one random image; ``eval()``.
"""
import warnings

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F

torch.manual_seed(0)
USE_CUDA = False  # flip on a machine with a GPU


def where(module, x):
    return module(x).device.type


proj = nn.Linear(20, 30)
if USE_CUDA:
    proj.cuda()
target = "cuda" if USE_CUDA else "cpu"
batch = torch.randn(128, 20, device=target)
devices = [where(proj, batch)]

with torch.device("meta"):
    proj = nn.Linear(20, 30)
    devices.append(proj.weight.device.type)
    devices.append(where(proj, torch.randn(128, 20)))
devices.append(torch.randn(2).device.type)  # outside the block: the CPU again

torch.set_default_device("meta")
proj = nn.Linear(20, 30)
default_now = str(torch.get_default_device())
devices += [proj.weight.device.type, where(proj, torch.randn(128, 20)), default_now]
torch.set_default_device(None)  # None: back to the CPU
devices.append(f"{torch.get_default_device()}")
print(devices)


class DigitNet(nn.Module):
    """Two 3x3 convolutions, a 2x2 max-pool, and a two-layer head over 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(1, 32, 3, 1)
        self.conv_mid = nn.Conv2d(32, 64, 3, 1)
        self.drop_maps = nn.Dropout2d(0.25)  # zeroes whole feature maps
        self.drop_hidden = nn.Dropout2d(0.5)
        self.hidden = nn.Linear(64 * 12 * 12, 128)
        self.out = nn.Linear(128, 10)

    def forward(self, img):
        feats = F.relu(self.conv_mid(F.relu(self.conv_in(img))))
        feats = self.drop_maps(F.max_pool2d(feats, 2))
        hidden = F.relu(self.hidden(feats.flatten(start_dim=1)))
        logits = self.out(self.drop_hidden(hidden))  # a (1, 128) input to Dropout2d
        return F.log_softmax(logits, dim=1)


net = DigitNet()
first_repr = repr(net)
print(first_repr)

image = torch.rand((1, 1, 28, 28))
with warnings.catch_warnings(record=True, action="always") as seen:
    log_probs = net(image)
dropout_warnings = sorted({str(w.message) for w in seen})
result_info = (tuple(log_probs.shape), log_probs.grad_fn.name(),
               float(log_probs.exp().sum()))
print(log_probs, result_info)

# what the second Dropout2d does to a 2-D input: one sample of 128 channels, all or nothing
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dropped = nn.Dropout2d(0.5)(torch.ones(1, 128))
dropped_values = sorted(set(dropped.view(-1).tolist()))

net.eval()  # dropout off: two calls agree
eval_same = torch.equal(net(image), net(image))
