"""Digit recognition with an LSTM that reads an image column by column, written for these tests
in the way pytorch/examples commonly writes torch code (modelled on the API usage of its
mnist_rnn example, not a copy of it):

- an argparse command line (given in the script) and a main();
- nn.LSTM(batch_first=True) over reshape(-1, 28, 28)'d images, its last step through
  nn.BatchNorm1d, nn.Dropout2d, two nn.Linear and F.log_softmax;
- optim.Adadelta with lr_scheduler.StepLR, F.nll_loss (also reduction='sum'),
  argmax(dim=1, keepdim=True) / eq / view_as accuracy, torch.device, .to(device),
  torch.accelerator behind a flag, torch.save of the state_dict behind a flag;
- the network in eval mode from sin-valued weights and its input gradient, for the torch
  comparison.

scikit-learn's 8x8 digits, blown up to 24x24, padded to 28x28 and normalised, stand in for MNIST.
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import StepLR
from jitgrad.utils.data import TensorDataset

MEAN, STD = 0.13, 0.31


def digit_images(first, last):
    bunch = load_digits()
    small = bunch.images[first:last] / 16.0
    big = small.repeat(3, axis=1).repeat(3, axis=2)  # 8x8 -> 24x24
    big = np.pad(big, ((0, 0), (2, 2), (2, 2))).astype(np.float32)[:, None]
    x = (torch.from_numpy(big) - MEAN) / STD
    return TensorDataset(x, torch.from_numpy(bunch.target[first:last]).long())


class ColumnReader(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.lstm = nn.LSTM(input_size=28, hidden_size=hidden, batch_first=True)
        self.bn = nn.BatchNorm1d(hidden)
        self.drop_a = nn.Dropout2d(0.2)
        self.drop_b = nn.Dropout2d(0.4)
        self.hidden = nn.Linear(hidden, 24)
        self.classes = nn.Linear(24, 10)

    def forward(self, x):
        cols = x.reshape(-1, 28, 28).transpose(1, 2)  # a sequence of 28 columns
        seq, _ = self.lstm(cols)
        h = self.drop_a(self.bn(seq[:, -1, :]))
        h = self.drop_b(F.relu(self.hidden(h)))
        return F.log_softmax(self.classes(h), dim=1)


train_losses, test_results, lrs = [], [], []


def run_epoch(net, loader, opt, device, epoch, every):
    net.train()
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = F.nll_loss(net(x), y)
        loss.backward()
        opt.step()
        train_losses.append(loss.item())
        if i % every == 0:
            print(f"epoch {epoch} batch {i}/{len(loader)} loss {loss.item():.4f}")


def evaluate(net, loader, device):
    net.eval()
    total, right = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = net(x)
            total += F.nll_loss(out, y, reduction="sum").item()
            guess = out.argmax(dim=1, keepdim=True)
            right += guess.eq(y.view_as(guess)).sum().item()
    n = len(loader.dataset)
    test_results.append((total / n, right / n))
    print(f"test: mean loss {total / n:.4f}, {right}/{n} right")


def main(argv):
    cli = argparse.ArgumentParser(description="LSTM column reader for digits")
    cli.add_argument("--batch-size", type=int, default=64)
    cli.add_argument("--test-batch-size", type=int, default=500)
    cli.add_argument("--epochs", type=int, default=10)
    cli.add_argument("--lr", type=float, default=0.1)
    cli.add_argument("--gamma", type=float, default=0.7)
    cli.add_argument("--accel", action="store_true")
    cli.add_argument("--seed", type=int, default=1)
    cli.add_argument("--log-every", type=int, default=10)
    cli.add_argument("--save-model", action="store_true")
    args = cli.parse_args(argv)

    device = torch.accelerator.current_accelerator() if args.accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    extra = {"num_workers": 1, "pin_memory": True} if args.accel else {}
    train_data = torch.utils.data.DataLoader(digit_images(0, 1280), batch_size=args.batch_size,
                                             shuffle=True, **extra)
    test_data = torch.utils.data.DataLoader(digit_images(1280, 1792),
                                            batch_size=args.test_batch_size, shuffle=True, **extra)

    net = ColumnReader().to(device)
    opt = optim.Adadelta(net.parameters(), lr=args.lr)
    sched = StepLR(opt, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        run_epoch(net, train_data, opt, device, epoch, args.log_every)
        evaluate(net, test_data, device)
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    if args.save_model:
        torch.save(net.state_dict(), "column_reader.pt")
    return net


if __name__ == "__main__":
    model = main(["--epochs", "4", "--lr", "1.0", "--seed", "2"])

    # fixed weights, eval mode: output and the gradient with respect to the input
    ref = ColumnReader().eval()
    with torch.no_grad():
        for k, p in enumerate(ref.parameters(), start=1):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / 4)
    probe = torch.cos(torch.arange(3 * 28 * 28, dtype=torch.float32)).view(3, 1, 28, 28)
    probe.requires_grad_()
    out = ref(probe)
    out[:, 7].sum().backward()
    fixed_result = {"out": out.tolist(), "x_grad": probe.grad.tolist()}
