# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""'What is torch.nn really?': logistic regression from scratch, refactored step by step."""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
n_train, n_valid = 256, 64
x_train = torch.rand(n_train, 784) * (torch.rand(n_train, 784) > 0.8)  # sparse, like MNIST
x_valid = torch.rand(n_valid, 784) * (torch.rand(n_valid, 784) > 0.8)
w_true = torch.randn(784, 10)  # labels a linear model can learn
y_train = torch.argmax(x_train @ w_true, dim=1)
y_valid = torch.argmax(x_valid @ w_true, dim=1)
x_train, y_train, x_valid, y_valid = map(torch.tensor, (x_train, y_train, x_valid, y_valid))
n, c = x_train.shape
print(x_train, y_train)
print(x_train.shape)
print(y_train.min(), y_train.max())

# --- from scratch ---
weights = torch.randn(784, 10) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


bs = 64
xb = x_train[0:bs]
preds = model(xb)
print(preds[0], preds.shape)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


loss_func = nll
yb = y_train[0:bs]
print(loss_func(preds, yb))


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


print(accuracy(preds, yb))
lr = 0.5
epochs = 2
scratch_start = loss_func(model(x_train), y_train).item()
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
scratch_end = loss_func(model(x_train), y_train).item()
print(scratch_start, scratch_end, accuracy(model(xb), yb))

# the hand-written log_softmax + nll equals F.cross_entropy
loss_func = F.cross_entropy
xb, yb = x_train[:bs], y_train[:bs]
scratch_vs_ce = (nll(log_softmax(xb @ weights + bias), yb).item(),
                 loss_func(xb @ weights + bias, yb).item())


# --- nn.Module ---
class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)


model, opt = get_model()
train_ds = TensorDataset(x_train, y_train)
valid_ds = TensorDataset(x_valid, y_valid)


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True),
        DataLoader(valid_ds, batch_size=bs * 2),
    )


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


train_history = []


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(
                *[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl]
            )
            train_loss = sum(loss_batch(model, loss_func, xb, yb)[0] for xb, yb in train_dl)
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        train_history.append(train_loss)
        print(epoch, val_loss)


import numpy as np  # noqa: E402

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
module_start = sum(loss_func(model(xb), yb).item() for xb, yb in train_dl)
fit(epochs, model, loss_func, opt, train_dl, valid_dl)


# --- CNN + nn.Sequential + Lambda + WrappedDataLoader ---
class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x, y):
    return x.view(-1, 1, 28, 28), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield (self.func(*b))


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)
model = nn.Sequential(
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
module_history = list(train_history)
train_history.clear()
cnn_start = sum(loss_func(model(xb), yb).item() for xb, yb in train_dl)
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
cnn_history = list(train_history)
print(len(train_dl), len(valid_dl))
