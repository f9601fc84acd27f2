"""A complete train/validate/checkpoint loop on small digit images, written for these tests in the
way the PyTorch introductory ("introyt") tutorials commonly write torch code (modelled on the API
usage of the tutorial "Training with PyTorch", not a copy of it):

- a map-style torch.utils.data.Dataset, DataLoader's with workers, iter/next on a loader, a
  hand-made image strip (torch.cat along the width) turned into NumPy;
- a small CNN (Conv2d, MaxPool2d(2, 2), view, Linear), torch.nn.CrossEntropyLoss on made-up
  scores checked against log_softmax, SGD with momentum;
- epochs that log running losses to a SummaryWriter-like recorder, model.train(True/False),
  a validation loss summed as a tensor, torch.save of the best state_dict under a timestamped
  name, torch.load + load_state_dict of the last one saved, eval accuracy;
- five momentum steps from sin-valued weights on a Subset, for the torch comparison.

scikit-learn's 8x8 digits, blown up and padded to 28x28 and scaled to [-1, 1], stand in for the
image data set; tensorboard is replaced by a small recorder.
"""
import os
import tempfile
from datetime import datetime

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.data import Dataset

torch.manual_seed(8)


class ScalarLog:
    """Keeps what a tensorboard SummaryWriter would be sent."""

    def __init__(self, where):
        self.where = where
        self.rows = []

    def add_scalar(self, tag, value, step):
        self.rows.append((tag, float(value), step))

    def add_scalars(self, group, values, step):
        for name, value in values.items():
            self.add_scalar(group + "/" + name, value, step)

    def flush(self):
        return None


class Digits(Dataset):
    def __init__(self, first, last):
        bunch = load_digits()
        pics = bunch.images[first:last].repeat(3, axis=1).repeat(3, axis=2) / 16.0
        pics = np.pad(pics, ((0, 0), (2, 2), (2, 2))).astype(np.float32)[:, None]
        self.x = torch.from_numpy(pics) * 2 - 1
        self.y = torch.from_numpy(bunch.target[first:last]).long()

    def __len__(self):
        return self.y.shape[0]

    def __getitem__(self, k):
        return self.x[k], self.y[k]


train_set, val_set = Digits(0, 1200), Digits(1200, 1600)
train_loader = torch.utils.data.DataLoader(train_set, batch_size=4, shuffle=True, num_workers=2)
val_loader = torch.utils.data.DataLoader(val_set, batch_size=4, shuffle=False, num_workers=2)
print(f"{len(train_set)} training and {len(val_set)} validation images")

xb, yb = next(iter(train_loader))
strip = torch.cat(list(xb), dim=2).mean(dim=0) / 2 + 0.5  # four images side by side, in [0, 1]
strip_np = strip.numpy()
print("labels:", " ".join(str(int(t)) for t in yb))
first_batch = (tuple(xb.shape), tuple(yb.shape), strip_np.shape)


class DigitCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(1, 8, 5)    # 28 -> 24, pooled to 12
        self.conv_b = nn.Conv2d(8, 16, 5)   # 12 -> 8, pooled to 4
        self.pool = nn.MaxPool2d(2, 2)
        self.fc_a = nn.Linear(16 * 4 * 4, 64)
        self.fc_b = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv_a(x)))
        x = self.pool(F.relu(self.conv_b(x)))
        return self.fc_b(F.relu(self.fc_a(x.view(-1, 16 * 4 * 4))))


criterion = torch.nn.CrossEntropyLoss()

made_up = torch.rand(4, 10)
truth = torch.tensor([9, 0, 2, 6])
ce = criterion(made_up, truth).item()
by_hand = -torch.log_softmax(made_up, 1)[range(4), truth].mean().item()
dummy_loss_ok = abs(ce - by_hand) < 1e-6

cnn = DigitCNN()
sgd = torch.optim.SGD(cnn.parameters(), lr=0.005, momentum=0.9)
stamp = datetime.now().strftime("%Y%m%d_%H%M%S")
log = ScalarLog(f"runs/digits_{stamp}")
ckpt_dir = tempfile.mkdtemp()


def one_epoch(epoch):
    window, last = 0.0, 0.0
    for step, (x, y) in enumerate(train_loader):
        sgd.zero_grad()
        loss = criterion(cnn(x), y)
        loss.backward()
        sgd.step()
        window += loss.item()
        if (step + 1) % 100 == 0:
            last = window / 100
            log.add_scalar("Loss/train", last, epoch * len(train_loader) + step + 1)
            window = 0.0
    return last


best, saved = float("inf"), []
for epoch in range(2):
    cnn.train(True)
    train_avg = one_epoch(epoch)
    cnn.train(False)
    val_total, n_val = 0.0, 0
    for x, y in val_loader:
        val_total += criterion(cnn(x), y)  # stays a tensor
        n_val += 1
    val_avg = val_total / n_val
    print(f"epoch {epoch + 1}: train {train_avg:.3f} validation {val_avg.item():.3f}")
    log.add_scalars("train_vs_val", {"train": train_avg, "val": val_avg}, epoch + 1)
    log.flush()
    if val_avg < best:
        best = val_avg
        path = os.path.join(ckpt_dir, f"digits_{stamp}_{epoch}")
        torch.save(cnn.state_dict(), path)
        saved.append(path)

restored = DigitCNN()
restored.load_state_dict(torch.load(saved[-1]))
restored.eval()
with torch.no_grad():
    hits = sum((restored(x).argmax(1) == y).sum().item() for x, y in val_loader)
validation_accuracy = hits / len(val_set)
train_losses = [value for tag, value, _ in log.rows if tag == "Loss/train"]
print("accuracy of the restored model:", validation_accuracy)

# five momentum steps from fixed weights on the first 20 images, in order
ref = DigitCNN()
with torch.no_grad():
    for k, p in enumerate(ref.parameters(), start=1):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 5)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.005, momentum=0.9)
first20 = torch.utils.data.Subset(train_set, range(20))
fixed_losses = []
for x, y in torch.utils.data.DataLoader(first20, batch_size=4):
    ref_opt.zero_grad()
    loss = criterion(ref(x), y)
    loss.backward()
    ref_opt.step()
    fixed_losses.append(loss.item())
