# ruff: noqa: N802
# (N802: ToTensor() and the other transform factories keep torchvision's CamelCase names)
"""A small stand-in for the parts of torchvision that the yunjey_* scripts use, written for
these tests in the way torchvision's datasets and transforms are commonly used (modelled on the
API usage of torchvision, not a copy of it). There is no network here, so scikit-learn's bundled
8 x 8 digits play both MNIST (grey, H x W uint8) and CIFAR-10 (H x W x 3 uint8, the digit in
three tinted channels). ``standin(n_train, n_test)`` gives a namespace with:

- ``datasets.MNIST`` / ``datasets.CIFAR10`` (``root, train, transform, download``): the first
  ``n_train`` digits, or the ``n_test`` after them;
- ``transforms``: ToTensor, Compose, Normalize, Pad, RandomHorizontalFlip, RandomCrop (the
  random ones draw from Python's ``random``);
- ``utils.save_image``: a batch written as a PNG grid.

It imports jitgrad under the torch name like every script here; the tests' torch run applies
the same text swap to this file (test_user_scripts_b27.LIBRARIES).
"""
import random
import types

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

import jitgrad as torch

_bunch = load_digits()
_PIXELS = np.clip(_bunch.images * 16, 0, 255).astype(np.uint8)  # 0..16 scaled to a byte
_LABELS = _bunch.target
_TINT = np.array([1.0, 0.7, 0.4])


class DigitImages(torch.utils.data.Dataset):
    """Digits ``first .. first + count``; ``colour`` gives them three channels (last axis)."""

    def __init__(self, first, count, transform=None, colour=False):
        pixels = _PIXELS[first:first + count]
        if colour:
            pixels = (pixels[..., None] * _TINT).astype(np.uint8)
        self.data, self.targets = pixels, _LABELS[first:first + count].tolist()
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        img = self.data[i]
        if self.transform is not None:
            img = self.transform(img)
        return img, self.targets[i]


# --- transforms -------------------------------------------------------------------------------
class _ToTensor:
    def __call__(self, img):  # uint8 (H, W) or (H, W, C) -> float (C, H, W) in [0, 1]
        if img.ndim == 2:
            img = img[:, :, None]
        chw = np.ascontiguousarray(np.moveaxis(img, -1, 0))
        return torch.from_numpy(chw).float().div(255)


class _Compose:
    def __init__(self, steps):
        self.steps = list(steps)

    def __call__(self, img):
        for step in self.steps:
            img = step(img)
        return img


class _Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, t):
        return (t - self.mean) / self.std


class _Pad:
    def __init__(self, width):
        self.width = width

    def __call__(self, img):
        edge = [(self.width, self.width)] * 2 + [(0, 0)] * (img.ndim - 2)
        return np.pad(img, edge)


class _RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        return img[:, ::-1] if random.random() < self.p else img


class _RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        top = random.randint(0, img.shape[0] - self.size)
        left = random.randint(0, img.shape[1] - self.size)
        return img[top:top + self.size, left:left + self.size]


def ToTensor():
    return _ToTensor()


def Compose(steps):
    return _Compose(steps)


def Normalize(mean, std):
    return _Normalize(mean, std)


def Pad(padding):
    return _Pad(padding)


def RandomHorizontalFlip(p=0.5):
    return _RandomHorizontalFlip(p)


def RandomCrop(size):
    return _RandomCrop(size)


# --- save_image ---------------------------------------------------------------------------------
def save_image(batch, fp, nrow=8, padding=2):
    """Tiles an (N, C, H, W) batch in [0, 1] into rows of ``nrow`` with ``padding`` pixels of
    black between them, and writes it as an 8-bit PNG."""
    arr = batch.detach().cpu().numpy()
    n, c, h, w = arr.shape
    per_row = min(nrow, n)
    n_rows = -(-n // per_row)
    cell_h, cell_w = h + padding, w + padding
    canvas = np.zeros((c, n_rows * cell_h + padding, per_row * cell_w + padding), np.float32)
    for k in range(n):
        top = padding + (k // per_row) * cell_h
        left = padding + (k % per_row) * cell_w
        canvas[:, top:top + h, left:left + w] = arr[k]
    canvas = np.clip(canvas * 255 + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(canvas[0] if c == 1 else np.moveaxis(canvas, 0, -1)).save(fp)


# --- the namespace a script uses as ``torchvision`` -----------------------------------------
def standin(n_train, n_test):
    def split(train):
        return (0, n_train) if train else (n_train, n_test)

    def MNIST(root=None, train=True, transform=None, download=False):
        return DigitImages(*split(train), transform=transform)

    def CIFAR10(root=None, train=True, transform=None, download=False):
        return DigitImages(*split(train), transform=transform, colour=True)

    transforms = types.SimpleNamespace(ToTensor=ToTensor, Compose=Compose, Normalize=Normalize,
                                       Pad=Pad, RandomHorizontalFlip=RandomHorizontalFlip,
                                       RandomCrop=RandomCrop)
    return types.SimpleNamespace(datasets=types.SimpleNamespace(MNIST=MNIST, CIFAR10=CIFAR10),
                                 transforms=transforms,
                                 utils=types.SimpleNamespace(save_image=save_image))
