"""Train a small MLP classifier with jitgrad.nn and jitgrad.optim.Adam.

Uses scikit-learn's bundled 8x8 digits (1797 images, 10 classes) when scikit-learn is
installed, and synthetic, linearly separable Gaussian clusters with the same shape otherwise.
Prints the loss of every epoch and the final test accuracy.

    python examples/train_mlp.py --epochs 20
"""

from __future__ import annotations

import argparse
import os
import time

# The matrices here are small: OpenBLAS's worker threads only add overhead, and on a busy
# machine their spinning made each step ~30x slower. Must be set before NumPy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import jitgrad  # noqa: E402
from jitgrad import nn, optim  # noqa: E402
from jitgrad.nn import functional as F  # noqa: E402


def load_data(seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Features (float32, standardized) and integer labels, and the data set's name."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        rng = np.random.default_rng(seed)
        n_classes, n_features, n = 10, 64, 1797
        centers = rng.normal(0.0, 1.0, (n_classes, n_features))
        y = rng.integers(0, n_classes, n)
        x = centers[y] + rng.normal(0.0, 2.0, (n, n_features))
        name = "synthetic Gaussian clusters (scikit-learn not installed)"
    else:
        digits = load_digits()
        x, y = digits.data.astype(np.float64), digits.target
        name = "scikit-learn digits"
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return x.astype(np.float32), y.astype(np.int64), name


def accuracy(model: nn.Module, x: jitgrad.Tensor, y: jitgrad.Tensor) -> float:
    """Fraction of rows of ``x`` whose arg-max logit is the label."""
    model.eval()
    with jitgrad.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return float((pred == y).float().mean())


def main(argv: list[str] | None = None) -> float:
    """Trains the MLP and returns the final test accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    jitgrad.manual_seed(args.seed)
    x, y, name = load_data(args.seed)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    x_train, y_train = x[train], y[train]
    x_test, y_test = jitgrad.tensor(x[test]), jitgrad.tensor(y[test])
    print(f"data: {name}; {len(train)} train / {n_test} test samples, {x.shape[1]} features")

    model = nn.Sequential(
        nn.Linear(x.shape[1], args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, 10),
    )
    opt = optim.Adam(model.parameters(), lr=args.lr)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        perm = rng.permutation(len(x_train))
        total, batches = 0.0, 0
        for i in range(0, len(perm), args.batch_size):
            idx = perm[i:i + args.batch_size]
            xb, yb = jitgrad.tensor(x_train[idx]), jitgrad.tensor(y_train[idx])
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        print(f"epoch {epoch:3d}  loss {total / batches:.4f}")
    acc = accuracy(model, x_test, y_test)
    print(f"test accuracy {acc:.4f}  ({time.perf_counter() - start:.1f} s)")
    return acc


if __name__ == "__main__":
    main()
