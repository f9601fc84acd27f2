"""Counting and listing a model's parameters, written for these tests in the way the PyTorch
"inspecting model parameters" recipe is commonly written (modelled on the API usage of that
recipe, not a copy of it):

- ``parameters()`` / ``named_parameters()`` with ``.shape``, ``.size()``, ``.numel()`` and
  ``.requires_grad`` (also on a bare ``nn.Linear``);
- totals and trainable totals, before and after freezing one weight;
- a small CNN (``nn.Conv2d``, ``nn.ReLU(inplace=True)``, ``nn.MaxPool2d``, ``nn.Flatten``)
  checked against ``np.prod(param.size())``; per-layer totals with ``defaultdict``.

The printed lines are recorded in ``lines``.
"""
from collections import defaultdict

import numpy as np

import jitgrad as torch  # noqa: F401 (the test harness reads the module)
from jitgrad import nn

lines = []
RULE = "=" * 60


def emit(*parts):
    text = " ".join(str(p) for p in parts)
    lines.append(text)
    print(text)


def count(model, trainable_only=False):
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def per_layer(model):
    totals = defaultdict(int)
    for name, p in model.named_parameters():
        totals[name.rsplit(".", 1)[0]] += p.numel()  # weight and bias of one layer together
    return totals


class DenseClassifier(nn.Module):
    def __init__(self, pixels=28 * 28, hidden=512, classes=10):
        super().__init__()
        self.flat = nn.Flatten()
        self.mlp = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.mlp(self.flat(x))


dense = DenseClassifier()
emit(dense)
emit([p.shape for p in dense.parameters()])
for name, p in dense.named_parameters():
    emit(name, p.shape)
for name, p in nn.Linear(28 * 28, 512).named_parameters():
    emit(name, p.size())
for name, p in dense.named_parameters():
    emit(f"{name}: size {p.size()}, {p.numel()} values")
emit(f"Total model params: {count(dense):,}")
emit(f"Total model trainable params: {count(dense, trainable_only=True):,}")

dense.mlp[0].weight.requires_grad = False  # freeze the first (largest) weight
for name, p in dense.named_parameters():
    emit(f"{name}: {p.numel()} values, trainable={p.requires_grad}")
emit(f"Total model trainable params: {count(dense, trainable_only=True):,}")


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels=1, out_channels=32, kernel_size=3), nn.ReLU(inplace=True),
            nn.Conv2d(in_channels=32, out_channels=64, kernel_size=3), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=(2, 2)))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 12 * 12, 128),
                                  nn.ReLU(inplace=True), nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.features(x))


cnn = SmallCNN()
emit(cnn)
emit(RULE)
for name, p in cnn.named_parameters():
    emit(f"{name}: {tuple(p.size())} -> {p.numel()} (np.prod: {np.prod(p.size())}), "
         f"grad={p.requires_grad}")
emit(RULE)
emit(f"CNN trainable params: {count(cnn, trainable_only=True):,}")

for title, model in (("dense", dense), ("cnn", cnn)):
    emit(f"per-layer totals of the {title} model:")
    for layer, total in per_layer(model).items():
        emit(f"  {layer:<12} {total:>9,}")
