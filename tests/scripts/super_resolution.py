"""Doubling the resolution of small grey images with a sub-pixel convolution net, written for
these tests in the way pytorch/examples' super_resolution is commonly written (modelled on the
API usage of pytorch/examples' super_resolution, not a copy of it):

- ``nn.Conv2d`` with tuple kernel/stride/padding, ``nn.PixelShuffle`` (and ``PixelUnshuffle``);
- ``init.orthogonal_`` with ``init.calculate_gain`` (relu, linear, tanh, sigmoid, leaky_relu
  with a slope, selu);
- a map-style ``Dataset`` of synthetic images and their 2x box-downsampled versions, served by
  ``DataLoader(dataset=..., num_workers=1, batch_size=..., shuffle=...)``;
- the usual device checks (``cuda``/``backends.mps.is_available``, ``torch.device``, ``.to``),
  Adam on ``nn.MSELoss``, PSNR under ``no_grad``;
- whole-model checkpoints with ``torch.save(model, path)`` / ``torch.load(weights_only=False)``
  and a uint8 image out of the reloaded model;
- a fixed-weight forward to compare with torch.
"""
import math
import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.init as init
import jitgrad.optim as optim
from jitgrad.utils.data import DataLoader

SCALE = 2
BATCH, EVAL_BATCH, EPOCHS, LR = 16, 10, 8, 1e-3


class SubPixelNet(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.feat = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.mid = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.narrow = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.to_subpixels = nn.Conv2d(32, factor * factor, (3, 3), (1, 1), (1, 1))
        self.act = nn.ReLU()
        self.shuffle = nn.PixelShuffle(factor)
        relu_gain = init.calculate_gain("relu")
        for conv in (self.feat, self.mid, self.narrow):
            init.orthogonal_(conv.weight, relu_gain)
        init.orthogonal_(self.to_subpixels.weight)

    def forward(self, lowres):
        h = lowres
        for conv in (self.feat, self.mid, self.narrow):
            h = self.act(conv(h))
        return self.shuffle(self.to_subpixels(h))


class Ripples(torch.utils.data.Dataset):
    """Smooth interference patterns (high-res targets) and their block means (inputs)."""

    def __init__(self, count, seed, side=16, factor=SCALE):
        rng = np.random.default_rng(seed)
        row, col = np.meshgrid(np.arange(side) / side, np.arange(side) / side, indexing="ij")
        pics = []
        for _ in range(count):
            a, b = rng.uniform(0.5, 3.0, 2)
            phase = rng.uniform(0, 2 * np.pi, 2)
            wave = np.sin(2 * np.pi * a * col + phase[0]) * np.cos(2 * np.pi * b * row + phase[1])
            pics.append((0.5 + 0.25 * wave).astype(np.float32))
        self.high = np.stack(pics)[:, None]
        s = side // factor
        self.low = self.high.reshape(count, 1, s, factor, s, factor).mean(axis=(3, 5))

    def __len__(self):
        return self.high.shape[0]

    def __getitem__(self, i):
        return torch.from_numpy(self.low[i]), torch.from_numpy(self.high[i])


want_cuda = False
if want_cuda and not torch.cuda.is_available():
    raise RuntimeError("asked for CUDA but none is available")
on_mps = False and torch.backends.mps.is_available()
device = torch.device("cuda" if want_cuda else "mps" if on_mps else "cpu")
torch.manual_seed(123)

train_set, test_set = Ripples(48, seed=0), Ripples(20, seed=1)
training_data_loader = DataLoader(dataset=train_set, num_workers=1, batch_size=BATCH,
                                  shuffle=True)
testing_data_loader = DataLoader(dataset=test_set, num_workers=1, batch_size=EVAL_BATCH,
                                 shuffle=False)

model = SubPixelNet(SCALE).to(device)
mse = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=LR)
workdir = tempfile.mkdtemp()
epoch_losses, psnrs = [], []


def evaluate():
    scores = []
    with torch.no_grad():
        for low, high in testing_data_loader:
            err = mse(model(low.to(device)), high.to(device)).item()
            scores.append(10 * math.log10(1 / err))
    psnrs.append(sum(scores) / len(scores))
    print(f"  test PSNR {psnrs[-1]:.2f} dB")


evaluate()
for epoch in range(1, EPOCHS + 1):
    running = 0.0
    for low, high in training_data_loader:
        optimizer.zero_grad()
        batch_loss = mse(model(low.to(device)), high.to(device))
        running += batch_loss.item()
        batch_loss.backward()
        optimizer.step()
    epoch_losses.append(running / len(training_data_loader))
    print(f"epoch {epoch}: mean loss {epoch_losses[-1]:.5f}")
    evaluate()
    ckpt = os.path.join(workdir, f"subpixel_{epoch:02d}.pth")
    torch.save(model, ckpt)

# upscale one test image with the last checkpoint
model = torch.load(ckpt, weights_only=False)
small = test_set.low[0, 0]
upscaled = model(torch.from_numpy(small).view(1, -1, *small.shape)).cpu()
out_img_y = np.uint8((upscaled[0].detach().numpy() * 255.0).clip(0, 255)[0])
super_resolved_shape = out_img_y.shape

# ---- numbers torch must reproduce ----
gains = [init.calculate_gain(n) for n in ("relu", "linear", "tanh", "sigmoid")]
gains += [init.calculate_gain("leaky_relu", 0.2), init.calculate_gain("selu")]
fresh = SubPixelNet(2)
wide = fresh.mid.weight.detach().reshape(64, -1)  # 64 x 576: orthonormal rows, times the gain
tall = fresh.feat.weight.detach().reshape(64, -1)  # 64 x 25: orthonormal columns
orthogonal_errors = [
    (wide @ wide.t() / init.calculate_gain("relu") ** 2 - torch.eye(64)).abs().max(),
    (tall.t() @ tall / 2.0 - torch.eye(25)).abs().max(),
]
fixed = SubPixelNet(3)
with torch.no_grad():
    for j, w in enumerate(fixed.parameters()):
        pattern = torch.sin(torch.arange(w.numel(), dtype=torch.float32) * 0.3 + j)
        w.copy_(pattern.view_as(w) * 0.1)
probe = torch.cos(torch.arange(60, dtype=torch.float32)).view(2, 1, 5, 6)
fixed_out = fixed(probe).tolist()
shuffled = nn.PixelShuffle(2)(torch.arange(96).view(2, 8, 2, 3)).tolist()
unshuffled = nn.PixelUnshuffle(2)(torch.arange(96).view(2, 2, 4, 6)).tolist()
