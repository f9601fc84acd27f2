"""A softmax classifier taken from bare tensors to nn.Module, DataLoader and a small CNN,
written for these tests in the way PyTorch's "What is torch.nn really?" is commonly written
(modelled on the API usage of that tutorial, not a copy of it):

- bare tensors: ``requires_grad_()``, a hand-written log-softmax and NLL (indexing with
  ``range`` and a target tensor), in-place updates under ``no_grad`` and ``grad.zero_()``
- ``F.cross_entropy`` checked against the hand-written loss
- an ``nn.Module`` with ``nn.Linear``, ``optim.SGD``, ``TensorDataset``, ``DataLoader``
  (shuffled training, larger validation batches), ``train()``/``eval()``
- ``nn.Sequential`` of strided ``Conv2d``, ``AdaptiveAvgPool2d`` and a user ``Lambda`` module,
  fed by a loader wrapper that reshapes each batch
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
PIXELS, CLASSES, BATCH, LR, EPOCHS = 784, 10, 64, 0.5, 2


def fake_digits(count, teacher):
    """Mostly-zero 'images' labelled by a random linear teacher, so a linear model can learn."""
    keep = torch.rand(count, PIXELS) > 0.8
    images = torch.rand(count, PIXELS) * keep
    return images, torch.argmax(images @ teacher, dim=1)


teacher = torch.randn(PIXELS, CLASSES)
train_x, train_y = fake_digits(256, teacher)
valid_x, valid_y = fake_digits(64, teacher)
train_x, train_y, valid_x, valid_y = map(torch.tensor, (train_x, train_y, valid_x, valid_y))
n_rows, _ = train_x.shape
print(train_x.shape, train_y.min(), train_y.max())

# ---- step 1: nothing but tensors ----
W = torch.randn(PIXELS, CLASSES) / math.sqrt(PIXELS)  # Xavier-like start
W.requires_grad_()
b = torch.zeros(CLASSES, requires_grad=True)


def my_log_softmax(z):
    return z - z.exp().sum(-1).log().unsqueeze(-1)


def my_nll(logp, labels):
    picked = logp[range(labels.shape[0]), labels]
    return -picked.mean()


def bare_forward(x):
    return my_log_softmax(x @ W + b)


def hit_rate(scores, labels):
    return (torch.argmax(scores, dim=1) == labels).float().mean()


first = bare_forward(train_x[:BATCH])
print(first[0], first.shape, hit_rate(first, train_y[:BATCH]))
scratch_start = my_nll(bare_forward(train_x), train_y).item()
for _ in range(EPOCHS):
    for lo in range(0, n_rows, BATCH):
        xb, yb = train_x[lo:lo + BATCH], train_y[lo:lo + BATCH]
        my_nll(bare_forward(xb), yb).backward()
        with torch.no_grad():
            W -= LR * W.grad
            b -= LR * b.grad
            W.grad.zero_()
            b.grad.zero_()
scratch_end = my_nll(bare_forward(train_x), train_y).item()
print(f"from scratch: {scratch_start:.3f} -> {scratch_end:.3f}")

# F.cross_entropy on raw scores is log-softmax followed by NLL
head_x, head_y = train_x[:BATCH], train_y[:BATCH]
scratch_vs_ce = (my_nll(my_log_softmax(head_x @ W + b), head_y).item(),
                 F.cross_entropy(head_x @ W + b, head_y).item())

# ---- step 2: nn.Module, optim and DataLoader ----
criterion = F.cross_entropy


class SoftmaxRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(PIXELS, CLASSES)

    def forward(self, x):
        return self.linear(x)


def loaders(batch):
    train_set = TensorDataset(train_x, train_y)
    valid_set = TensorDataset(valid_x, valid_y)
    return (DataLoader(train_set, batch_size=batch, shuffle=True),
            DataLoader(valid_set, batch_size=2 * batch))


def batch_loss(net, xb, yb, optimizer=None):
    """The batch's loss and size; one optimizer step too when an optimizer is given."""
    loss = criterion(net(xb), yb)
    if optimizer is not None:
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item(), len(xb)


def total_train_loss(net, train_dl):
    return sum(criterion(net(xb), yb).item() for xb, yb in train_dl)


def train(net, optimizer, train_dl, valid_dl, epochs=EPOCHS):
    """Returns the summed training loss after each epoch."""
    history = []
    for epoch in range(epochs):
        net.train()
        for xb, yb in train_dl:
            batch_loss(net, xb, yb, optimizer)
        net.eval()
        with torch.no_grad():
            vals, sizes = zip(*(batch_loss(net, xb, yb) for xb, yb in valid_dl))
            history.append(total_train_loss(net, train_dl))
        print(epoch, "valid", np.dot(vals, sizes) / np.sum(sizes))
    return history


net = SoftmaxRegression()
sgd = optim.SGD(net.parameters(), lr=LR)
train_dl, valid_dl = loaders(BATCH)
module_start = total_train_loss(net, train_dl)
module_history = train(net, sgd, train_dl, valid_dl)


# ---- step 3: a CNN over 28x28 views of the same rows ----
class Lambda(nn.Module):
    """Wraps a plain function as a layer."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class ReshapingLoader:
    """Iterates a DataLoader, passing every batch through ``fn``."""

    def __init__(self, loader, fn):
        self.loader, self.fn = loader, fn

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield self.fn(*batch)


def as_images(x, y):
    return x.view(-1, 1, 28, 28), y


def conv(cin, cout):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=2, padding=1)  # halves H and W


train_dl, valid_dl = (ReshapingLoader(dl, as_images) for dl in loaders(BATCH))
cnn = nn.Sequential(conv(1, 16), nn.ReLU(), conv(16, 16), nn.ReLU(), conv(16, 10), nn.ReLU(),
                    nn.AdaptiveAvgPool2d(1), Lambda(lambda t: t.view(t.size(0), -1)))
cnn_start = total_train_loss(cnn, train_dl)
cnn_history = train(cnn, optim.SGD(cnn.parameters(), lr=LR, momentum=0.9), train_dl, valid_dl)
print("batches per epoch:", len(train_dl), len(valid_dl))
