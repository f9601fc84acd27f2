"""PyTorch tutorial-style training with only the import changed: ``import jitgrad as torch``.

Two parts, written as the "Learning PyTorch with Examples" and "What is torch.nn really?"
tutorials write them:

1. fit a cubic polynomial to sin(x) with ``nn.Sequential(nn.Linear, nn.Flatten)``,
   ``nn.MSELoss(reduction="sum")`` and ``optim.RMSprop``;
2. classify points of three interleaved spirals with a ``TensorDataset`` split by
   ``random_split``, ``DataLoader`` (shuffled with a seeded ``Generator``), an MLP with
   ``Flatten``/``LeakyReLU``/``Dropout``, ``nn.CrossEntropyLoss``, ``optim.AdamW`` and a
   ``lr_scheduler.StepLR``; prints the test accuracy.

    python examples/train_classifier_data.py

Replace the first import by ``import torch`` and the script runs under PyTorch unchanged.
"""

import math

import jitgrad as torch
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset, random_split


def fit_polynomial() -> float:
    """Part 1: y = a + b x + c x^2 + d x^3 fitted to sin(x); returns the final loss."""
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    for t in range(2000):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 500 == 499:
            print(f"polynomial step {t + 1}: loss {loss.item():.4f}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear_layer = model[0]
    print(f"Result: y = {linear_layer.bias.item():.3f} + {linear_layer.weight[:, 0].item():.3f} x"
          f" + {linear_layer.weight[:, 1].item():.3f} x^2"
          f" + {linear_layer.weight[:, 2].item():.3f} x^3")
    return loss.item()


def spirals(n_per_class: int, n_classes: int = 3):
    """Points of ``n_classes`` interleaved noisy spirals, shaped (N, 1, 2) like tiny images."""
    xs, ys = [], []
    for c in range(n_classes):
        r = torch.linspace(0.1, 1.0, n_per_class)
        theta = torch.linspace(0.0, 4.0, n_per_class) + c * 2 * math.pi / n_classes
        theta = theta + 0.15 * torch.randn(n_per_class)
        xs.append(torch.stack([r * torch.sin(theta), r * torch.cos(theta)], dim=1))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs).unsqueeze(1), torch.cat(ys)


def train_classifier(epochs: int = 30) -> float:
    """Part 2: returns the test accuracy."""
    x, y = spirals(200)
    train_set, test_set = random_split(TensorDataset(x, y), [0.8, 0.2],
                                       generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True,
                              generator=torch.Generator().manual_seed(1))
    test_loader = DataLoader(test_set, batch_size=64)
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 64), nn.LeakyReLU(0.1), nn.Dropout(0.1),
                          nn.Linear(64, 64), nn.LeakyReLU(0.1), nn.Linear(64, 3))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for xb, yb in train_loader:
            loss = loss_fn(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        scheduler.step()
        if epoch % 10 == 9:
            print(f"epoch {epoch + 1}: train loss {total / len(train_set):.4f}, "
                  f"lr {scheduler.get_last_lr()[0]:.4g}")
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in test_loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
    accuracy = correct / len(test_set)
    print(f"test accuracy: {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    torch.manual_seed(0)
    fit_polynomial()
    train_classifier()
