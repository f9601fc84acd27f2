"""Our own training example in torch's API, importing ``jitgrad as torch``.

Two parts, written in the way the "Learning PyTorch with Examples" and "What is torch.nn
really?" tutorials use the API (not a copy of their code):

1. fit e^u - 1 with a linear layer over the features (u, u^2, u^3):
   ``nn.Sequential(nn.Linear, nn.Flatten)``, ``nn.MSELoss(reduction="sum")`` and
   ``optim.RMSprop``;
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


def fit_cubic_features() -> float:
    """Part 1: one linear layer over the features (u, u^2, u^3) learns e^u - 1 on [-1.5, 1.5];
    it ends near c0 = 0, c1 = 1 (Taylor would say 0, 1, 0.5, 0.17; least squares on the whole
    interval shifts c2 and c3). Returns the final loss."""
    u = torch.linspace(-1.5, 1.5, 1200)
    target = torch.exp(u) - 1
    powers = torch.tensor([1, 2, 3])
    feats = u.unsqueeze(-1).pow(powers)  # (1200, 3): broadcast against the exponents
    head = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))  # (1200, 1) -> (1200,)
    sse = nn.MSELoss(reduction="sum")
    opt = torch.optim.RMSprop(head.parameters(), lr=1e-3)
    for step in range(1, 1801):
        loss = sse(head(feats), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 600 == 0:
            print(f"features fit, step {step}: summed squared error {loss.item():.4f}")
    lin = head[0]
    coefs = [lin.bias.item()] + [lin.weight[:, k].item() for k in range(3)]
    print("fitted: " + " ".join(f"c{k}={c:.3f}" for k, c in enumerate(coefs)))
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
    fit_cubic_features()
    train_classifier()
