# ruff: noqa: E501, N802
"""The torchvision the yunjey/pytorch-tutorial ports use, written out once (the user has no
torchvision here): MNIST and CIFAR-10 are downloads, so scikit-learn's bundled 8 x 8 digits
stand in (uint8 images as PIL would give them; CIFAR-10's are the digits in three tinted
channels), with the transforms and ``save_image`` the tutorials use. A port calls
``standin(n_train, n_test)`` for its sizes.

It imports jitgrad under the torch name like every script here; the tests' torch run applies the
same text swap to this file (test_user_scripts_b27.LIBRARIES).
"""
import jitgrad as torch
import random
import types

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

_DIGITS = load_digits()
_IMAGES = np.clip(_DIGITS.images * 16, 0, 255).astype(np.uint8)  # (1797, 8, 8)


class _Digits(torch.utils.data.Dataset):
    def __init__(self, n_train, n_test, root, train=True, transform=None, download=False,
                 color=False):
        part = slice(0, n_train) if train else slice(n_train, n_train + n_test)
        self.data, self.targets = _IMAGES[part], _DIGITS.target[part].tolist()
        if color:  # (H, W, 3) as CIFAR-10's
            self.data = (self.data[..., None] * np.array([1.0, 0.7, 0.4])).astype(np.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image = self.data[index]
        return (self.transform(image) if self.transform else image), self.targets[index]


def _ToTensor():
    def to_tensor(image):  # HxW or HxWxC uint8 -> CxHxW float in [0, 1]
        image = image[:, :, None] if image.ndim == 2 else image
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))).float().div(255)
    return to_tensor


class _Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


def _Normalize(mean, std):
    mean, std = torch.tensor(mean).view(-1, 1, 1), torch.tensor(std).view(-1, 1, 1)
    return lambda t: (t - mean) / std


def _Pad(padding):
    return lambda image: np.pad(image, [(padding, padding), (padding, padding)] + [(0, 0)] * (image.ndim - 2))


def _RandomHorizontalFlip(p=0.5):
    return lambda image: image[:, ::-1] if random.random() < p else image


def _RandomCrop(size):
    def crop(image):
        i, j = random.randint(0, image.shape[0] - size), random.randint(0, image.shape[1] - size)
        return image[i:i + size, j:j + size]
    return crop


def _save_image(tensor, fp, nrow=8, padding=2):
    """torchvision.utils.save_image: the images of a batch in a grid, as a PNG."""
    tensor = tensor.detach().cpu()
    n, c, h, w = tensor.shape
    ncol = min(nrow, n)
    rows = (n + ncol - 1) // ncol
    grid = np.zeros((c, rows * (h + padding) + padding, ncol * (w + padding) + padding), np.float32)
    for k in range(n):
        r, q = divmod(k, ncol)
        grid[:, padding + r * (h + padding):padding + r * (h + padding) + h,
             padding + q * (w + padding):padding + q * (w + padding) + w] = tensor[k].numpy()
    grid = (grid * 255 + 0.5).clip(0, 255).astype(np.uint8)
    Image.fromarray(grid[0] if c == 1 else grid.transpose(1, 2, 0)).save(fp)


def standin(n_train, n_test):
    """A ``torchvision`` with MNIST and CIFAR-10 over the first ``n_train`` digits (train) and
    the ``n_test`` after them (test)."""
    def mnist(*args, **kwargs):
        return _Digits(n_train, n_test, *args, **kwargs)

    def cifar10(*args, **kwargs):
        return _Digits(n_train, n_test, *args, color=True, **kwargs)

    return types.SimpleNamespace(
        datasets=types.SimpleNamespace(MNIST=mnist, CIFAR10=cifar10),
        transforms=types.SimpleNamespace(
            ToTensor=_ToTensor, Compose=_Compose, Normalize=_Normalize, Pad=_Pad,
            RandomHorizontalFlip=_RandomHorizontalFlip, RandomCrop=_RandomCrop),
        utils=types.SimpleNamespace(save_image=_save_image))
