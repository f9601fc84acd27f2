"""A command-line digit classifier, written for these tests in the way the pytorch/examples
MNIST script is commonly written (modelled on the API usage of that example, not a copy of
it):

- ``argparse`` options (batch sizes, epochs, lr, gamma, seed, log interval, flags) parsed
  from ``ARGS`` rather than ``sys.argv``; ``torch.accelerator.is_available`` /
  ``current_accelerator`` or ``torch.device("cpu")``;
- a ``torch.utils.data.Dataset`` over scikit-learn's 8x8 digits (upsampled to 28x28 with
  ``F.interpolate(mode="bilinear")`` and normalized), ``DataLoader(batch_size=...)``;
- a two-conv net (``nn.Conv2d``, ``nn.Dropout``, ``F.max_pool2d``, ``torch.flatten``,
  ``F.log_softmax``), ``optim.Adadelta`` with ``StepLR(step_size=1, gamma=...)``;
- train/evaluate loops with ``F.nll_loss`` (mean and ``reduction='sum'``), ``argmax(dim=1,
  keepdim=True)``, ``eq`` / ``view_as``, ``get_last_lr``, ``no_grad``, ``.to(device)``.

``main`` returns ``record``: logged training losses, (test loss, correct) per epoch, the lrs.
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import StepLR

ARGS = ["--epochs", "2", "--test-batch-size", "160", "--log-interval", "2"]
record = {"train": [], "test": [], "lr": []}
PIXEL_MEAN, PIXEL_STD = 0.1307, 0.3081  # the usual MNIST statistics


class UpsampledDigits(torch.utils.data.Dataset):
    """First 320 digits for training, the next 160 for testing, as 1x28x28 tensors."""

    def __init__(self, train):
        bunch = load_digits()
        rows = slice(0, 320) if train else slice(320, 480)
        self.pixels = (bunch.images[rows] / 16.0).astype(np.float32)
        self.labels = bunch.target[rows]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        img = torch.from_numpy(self.pixels[idx]).reshape(1, 1, 8, 8)
        img = F.interpolate(img, size=(28, 28), mode="bilinear", align_corners=False)[0]
        return (img - PIXEL_MEAN) / PIXEL_STD, int(self.labels[idx])


class ConvClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(1, 32, 3, 1)
        self.conv_b = nn.Conv2d(32, 64, 3, 1)
        self.drop_a = nn.Dropout(0.25)
        self.drop_b = nn.Dropout(0.5)
        self.dense = nn.Linear(64 * 12 * 12, 128)
        self.logits = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv_b(F.relu(self.conv_a(x))))
        x = self.drop_a(F.max_pool2d(x, 2))
        x = F.relu(self.dense(torch.flatten(x, 1)))
        return F.log_softmax(self.logits(self.drop_b(x)), dim=1)


def run_epoch(opts, net, device, loader, opt, epoch):
    net.train()
    for step, (images, labels) in enumerate(loader):
        images, labels = images.to(device), labels.to(device)
        opt.zero_grad()
        loss = F.nll_loss(net(images), labels)
        loss.backward()
        opt.step()
        if step % opts.log_interval:
            continue
        seen = step * len(images)
        print(f"epoch {epoch} | {seen}/{len(loader.dataset)} | loss {loss.item():.6f}")
        record["train"].append(loss.item())
        if opts.dry_run:
            break


def evaluate(net, device, loader):
    net.eval()
    total, hits = 0.0, 0
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            scores = net(images)
            total += F.nll_loss(scores, labels, reduction="sum").item()
            guess = scores.argmax(dim=1, keepdim=True)
            hits += guess.eq(labels.view_as(guess)).sum().item()
    n = len(loader.dataset)
    print(f"test: mean loss {total / n:.4f}, {hits}/{n} right ({100.0 * hits / n:.0f}%)")
    record["test"].append((total / n, hits))


def options(argv):
    ap = argparse.ArgumentParser(description="digits with a small CNN")
    for flag, kind, default in (("--batch-size", int, 64), ("--test-batch-size", int, 1000),
                                ("--epochs", int, 14), ("--lr", float, 1.0),
                                ("--gamma", float, 0.7), ("--seed", int, 1),
                                ("--log-interval", int, 10)):
        ap.add_argument(flag, type=kind, default=default, metavar="N")
    for flag in ("--no-accel", "--dry-run", "--save-model"):
        ap.add_argument(flag, action="store_true")
    return ap.parse_args(argv)


def main():
    opts = options(ARGS)
    accel = torch.accelerator.is_available() and not opts.no_accel
    torch.manual_seed(opts.seed)
    device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")
    loader_extra = {"num_workers": 1, "persistent_workers": True, "pin_memory": True,
                    "shuffle": True} if accel else {}
    train_loader = torch.utils.data.DataLoader(
        UpsampledDigits(train=True), batch_size=opts.batch_size, **loader_extra)
    test_loader = torch.utils.data.DataLoader(
        UpsampledDigits(train=False), batch_size=opts.test_batch_size, **loader_extra)

    net = ConvClassifier().to(device)
    opt = optim.Adadelta(net.parameters(), lr=opts.lr)
    decay = StepLR(opt, step_size=1, gamma=opts.gamma)
    for epoch in range(1, opts.epochs + 1):
        run_epoch(opts, net, device, train_loader, opt, epoch)
        evaluate(net, device, test_loader)
        decay.step()
        record["lr"].append(decay.get_last_lr()[0])
    if opts.save_model:
        torch.save(net.state_dict(), "digits_cnn.pt")
    return record


if __name__ == "__main__":
    main()
