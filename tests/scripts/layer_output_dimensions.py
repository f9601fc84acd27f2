"""Finding the input size of the first Linear after convolutions, written for these tests in
the way the PyTorch "calculating layer output dimensions" recipe is commonly written
(modelled on the API usage of that recipe, not a copy of it):

- a wrong guess for ``nn.Linear`` after two ``nn.Conv2d`` and ``nn.MaxPool2d(kernel_size=
  (2, 2))`` and the shape-mismatch ``RuntimeError`` it raises;
- the conv/pool output-size formula computed by hand with ``math.floor``;
- printing ``x.shape`` from inside ``forward`` (plain layers, then ``nn.Sequential`` blocks
  with ``nn.Flatten`` and ``nn.ReLU(inplace=True)``).

Every printed line is kept in ``lines``.
"""
import math

import jitgrad as torch
from jitgrad import nn

lines = []


def log(text):
    lines.append(text)
    print(text)


def out_size(size, kernel, stride=1, pad=0, dil=1):
    return math.floor((size + 2 * pad - dil * (kernel - 1) - 1) / stride + 1)


def predicted(chw, channels=None, kernel=3, stride=1):
    c, h, w = chw
    return (c if channels is None else channels, out_size(h, kernel, stride),
            out_size(w, kernel, stride))


class ConvThenDense(nn.Module):
    def __init__(self, flat_features, trace=False):
        super().__init__()
        self.trace = trace
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.pool = nn.MaxPool2d(kernel_size=(2, 2))
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(flat_features, 128)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        steps = [("input", lambda t: t), ("after conv1", lambda t: self.relu(self.conv1(t))),
                 ("after conv2", lambda t: self.relu(self.conv2(t))), ("after pool", self.pool)]
        for label, fn in steps:
            x = fn(x)
            if self.trace:
                log(f"{label} shape: {x.shape}")
        return self.relu(self.fc1(self.flatten(x)))


digit = torch.ones(1, 1, 28, 28)  # one grey 28x28 image, batch first
guess = 64 * 10 * 10  # forgetting that each 3x3 conv trims two pixels
try:
    ConvThenDense(guess)(digit)
except RuntimeError as err:
    log(f"Error occured: {err}")

shape = (1, 28, 28)
log(f"Input shape (c, h, w) : {shape}")
for i, channels in enumerate((32, 64)):
    shape = predicted(shape, channels)
    log(f"Post Conv2d.{i} shape   : {shape}")
shape = predicted(shape, kernel=2, stride=2)  # a pool's stride defaults to its kernel
log(f"Post MaxPool2d.0 shape: {shape}")

fixed_shape = tuple(ConvThenDense(math.prod(shape))(digit).shape)
ConvThenDense(math.prod(shape), trace=True)(digit)


class BlockNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=(2, 2)))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 12 * 12, 128), nn.ReLU(inplace=True),
            nn.Linear(128, 10))

    def forward(self, x):
        log(f"input shape: {x.shape}")
        x = self.features(x)
        log(f"post features shape: {x.shape}")
        return self.classifier(x)


final_shape = tuple(BlockNet()(digit).shape)
