"""Forward-Forward training (each layer learns from its own local "goodness" objective, with no
gradient flowing between layers), written for these tests in the way pytorch/examples'
mnist_forward_forward is commonly written (modelled on the API usage of pytorch/examples'
mnist_forward_forward, not a copy of it):

- argparse options parsed from an empty list, ``torch.accelerator`` / ``torch.device``;
- hand-written ToTensor/Normalize/Lambda/Compose transforms over synthetic 8x8 glyphs and a
  ``DataLoader`` built from a kwargs dict (one full batch each for train and test);
- labels written into the first pixels (``clone``, ``x[:, :k] *= 0.0``,
  ``x[range(n), y] = x.max()``) and wrong labels drawn with ``torch.randint``;
- layers that subclass ``nn.Linear`` (positional ``bias, device, dtype``), own an Adam each and
  override ``train``; ``norm(2, 1, keepdim=True)``, ``mm`` with ``weight.T``, softplus written as
  ``log(1 + exp(...))``;
- a model whose layers sit in a plain list, so its saved ``state_dict`` is empty;
- a fixed-weight layer step to compare with torch.
"""
import argparse
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.optim import Adam
from jitgrad.utils.data import DataLoader

N_CLASSES = 10


class ToTensor:
    def __call__(self, arr):
        return torch.from_numpy(np.asarray(arr, dtype=np.float32)[None] / 255.0)


class Normalize:
    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, img):
        centre = torch.tensor(self.mean).view(-1, 1, 1)
        spread = torch.tensor(self.std).view(-1, 1, 1)
        return (img - centre) / spread


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        return self.fn(item)


class Compose:
    def __init__(self, stages):
        self.stages = stages

    def __call__(self, item):
        for stage in self.stages:
            item = stage(item)
        return item


GLYPHS = np.random.default_rng(0).integers(0, 256, size=(N_CLASSES, 8, 8))


class NoisyGlyphs(torch.utils.data.Dataset):
    def __init__(self, train, transform):
        gen = np.random.default_rng(0 if train else 1)
        size = 400 if train else 200
        self.labels = gen.integers(0, N_CLASSES, size=size)
        noisy = GLYPHS[self.labels] + gen.normal(0, 40, size=(size, 8, 8))
        self.pixels = np.clip(noisy, 0, 255).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, k):
        return self.transform(self.pixels[k]), int(self.labels[k])


def stamp_label(x, y, classes=N_CLASSES):
    """A copy of x whose first `classes` entries are a one-hot of y scaled to x's maximum."""
    out = x.clone()
    out[:, :classes] *= 0.0
    out[range(x.shape[0]), y] = x.max()
    return out


def wrong_labels(y):
    other = y.clone()
    for k, label in enumerate(y):
        choices = [c for c in range(N_CLASSES) if c != label.item()]
        pick = torch.randint(len(choices), size=(1,))
        other[k] = torch.tensor(choices)[pick].item()
    return other.to(device)


class FFLayer(nn.Linear):
    def __init__(self, n_in, n_out, bias=True, device=None, dtype=None):
        super().__init__(n_in, n_out, bias, device, dtype)
        self.act = nn.ReLU()
        self.opt = Adam(self.parameters(), lr=opts.lr)
        self.margin = opts.threshold
        self.steps = opts.epochs
        self.losses = []

    def forward(self, x):
        unit = x / (x.norm(2, 1, keepdim=True) + 1e-4)  # only the direction goes forward
        return self.act(torch.mm(unit, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, pos, neg):
        for step in range(self.steps):
            good_pos = self.forward(pos).pow(2).mean(1)
            good_neg = self.forward(neg).pow(2).mean(1)
            gaps = torch.cat([self.margin - good_pos, good_neg - self.margin])
            objective = torch.log(1 + torch.exp(gaps)).mean()
            self.opt.zero_grad()
            objective.backward()  # local to this layer: its inputs are detached
            self.opt.step()
            self.losses.append(objective.item())
            if step % opts.log_interval == 0:
                print(f"  step {step}: {objective.item():.4f}")
        return self.forward(pos).detach(), self.forward(neg).detach()


class FFNet(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = []  # a plain list on purpose: no submodules get registered
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            self.layers = self.layers + [FFLayer(n_in, n_out).to(device)]

    def train(self, pos, neg):
        for depth, layer in enumerate(self.layers):
            print(f"layer {depth}")
            pos, neg = layer.train(pos, neg)

    def predict(self, x):
        per_label = []
        for label in range(N_CLASSES):
            h = stamp_label(x, label)
            total = 0
            for layer in self.layers:
                h = layer(h)
                total = total + h.pow(2).mean(1)
            per_label.append(total.unsqueeze(1))
        return torch.cat(per_label, 1).argmax(1)


def error_rate(net, xs, ys):
    return 1.0 - net.predict(xs).eq(ys).float().mean().item()


ap = argparse.ArgumentParser(description="forward-forward on synthetic glyphs")
ap.add_argument("--epochs", type=int, default=300)
ap.add_argument("--lr", type=float, default=0.03)
ap.add_argument("--threshold", type=float, default=2)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--no-accel", action="store_true")
ap.add_argument("--log-interval", type=int, default=100)
opts = ap.parse_args([])

accel = not opts.no_accel and torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")
torch.manual_seed(opts.seed)

pipeline = Compose([ToTensor(), Normalize((0.1307,), (0.3081,)),
                    Lambda(lambda t: torch.flatten(t))])
loader_kw = {"batch_size": 400}
if accel:
    loader_kw.update(num_workers=1, pin_memory=True, shuffle=True)
train_loader = DataLoader(NoisyGlyphs(True, pipeline), **loader_kw)
test_loader = DataLoader(NoisyGlyphs(False, pipeline), **dict(loader_kw, batch_size=200))

net = FFNet([64, 100, 100])
x, y = next(iter(train_loader))
x, y = x.to(device), y.to(device)
y_neg = wrong_labels(y)
train_error_before = error_rate(net, x, y)
net.train(stamp_label(x, y), stamp_label(x, y_neg))
train_error = error_rate(net, x, y)
x_te, y_te = (t.to(device) for t in next(iter(test_loader)))
test_error = error_rate(net, x_te, y_te)
print(f"train error {train_error:.3f}, test error {test_error:.3f}")

ckpt = os.path.join(tempfile.mkdtemp(), "ff_net.pt")
torch.save(net.state_dict(), ckpt)
saved_keys = list(torch.load(ckpt).keys())
layer_losses = [layer.losses for layer in net.layers]
overlay_row = stamp_label(x[:2], y[:2])[:, :12].tolist()
neg_differs = bool((y_neg != y).all())

# ---- fixed inputs and weights: the label stamp, the norms, one layer step ----
probe = torch.sin(torch.arange(320, dtype=torch.float32)).view(5, 64)
fixed_overlay = stamp_label(probe, torch.tensor([0, 3, 9, 3, 1])).tolist()
fixed_norms = probe.norm(2, 1, keepdim=True).tolist()
trained_epochs = opts.epochs
opts.epochs = 1
fixed = FFLayer(64, 7)
with torch.no_grad():
    fixed.weight.copy_(torch.cos(torch.arange(448, dtype=torch.float32)).view(7, 64))
    fixed.bias.fill_(0.1)
pos_out, neg_out = fixed.train(probe, stamp_label(probe, 4))
fixed_results = (fixed.losses, fixed.weight.tolist(), pos_out.tolist(), neg_out.tolist())
