"""Train a small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Linear) on scikit-learn's digits.

The 1797 8x8 digit images ship with scikit-learn (``pip install jitgrad[examples]``). The same
model is trained twice from the same initial weights: eagerly, and with ``jitgrad.jit`` around
the forward pass and the loss (the backward is the jit's compiled one). Prints the loss of each
epoch and the test accuracy of each run.

    python examples/train_cnn.py --epochs 5
"""

from __future__ import annotations

import argparse
import copy
import os
import time

# Small matrices: OpenBLAS's worker threads only add overhead (set before NumPy loads it).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import jitgrad  # noqa: E402
from jitgrad import nn, optim  # noqa: E402
from jitgrad.nn import functional as F  # noqa: E402


class DigitsCNN(nn.Module):
    """conv(1->c1) bn relu pool, conv(c1->c2) bn relu pool, linear(c2*2*2 -> 10)."""

    def __init__(self, c1: int = 8, c2: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Linear(c2 * 2 * 2, 10)

    def forward(self, x: jitgrad.Tensor) -> jitgrad.Tensor:
        h = self.features(x)
        return self.classifier(h.reshape(h.shape[0], -1))


def load_digits_images() -> tuple[np.ndarray, np.ndarray]:
    """Images ``(1797, 1, 8, 8)`` float32 scaled to [0, 1], and int64 labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    return x, digits.target.astype(np.int64)


def accuracy(model: nn.Module, x: jitgrad.Tensor, y: jitgrad.Tensor) -> float:
    """Fraction of images whose arg-max logit is the label (eval mode: running statistics)."""
    model.eval()
    with jitgrad.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return float((pred == y).float().mean())


def train(model: nn.Module, x_train: np.ndarray, y_train: np.ndarray, epochs: int,
          batch_size: int, lr: float, use_jit: bool, seed: int) -> float:
    """Trains ``model`` in place with SGD (momentum 0.9); returns the wall time in seconds."""
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def loss_of(xb, yb):
        return F.cross_entropy(model(xb), yb)

    step_loss = jitgrad.jit(loss_of) if use_jit else loss_of
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = rng.permutation(len(x_train))
        n_full = len(perm) // batch_size * batch_size  # equal batches: one jit trace
        total, batches = 0.0, 0
        for i in range(0, n_full, batch_size):
            idx = perm[i:i + batch_size]
            xb, yb = jitgrad.tensor(x_train[idx]), jitgrad.tensor(y_train[idx])
            loss = step_loss(xb, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        print(f"{'jit' if use_jit else 'eager'} epoch {epoch:3d}  loss {total / batches:.4f}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains eagerly and jitted; returns each run's test accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    jitgrad.manual_seed(args.seed)
    x, y = load_digits_images()
    order = np.random.default_rng(args.seed).permutation(len(x))
    n_test = len(x) // 5
    test, train_idx = order[:n_test], order[n_test:]
    x_test, y_test = jitgrad.tensor(x[test]), jitgrad.tensor(y[test])
    print(f"data: scikit-learn digits; {len(train_idx)} train / {n_test} test images, 1x8x8")
    initial = DigitsCNN()
    results = {}
    for mode in ("eager", "jit"):
        model = copy.deepcopy(initial)
        seconds = train(model, x[train_idx], y[train_idx], args.epochs, args.batch_size, args.lr,
                        mode == "jit", args.seed)
        results[mode] = acc = accuracy(model, x_test, y_test)
        print(f"{mode} test accuracy {acc:.4f}  ({seconds:.1f} s)")
    return results


if __name__ == "__main__":
    main()
