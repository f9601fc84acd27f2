"""Written for these tests in the way temporal convolutional network code for PyTorch is
commonly written (modelled on the API usage of locuslab/TCN's adding problem, not a copy of it):
causal convolutions as nn.Conv1d(padding=(k - 1) * dilation, dilation=...) under
torch.nn.utils.weight_norm with the right-hand padding trimmed off, residual levels (two causal
convolutions with ReLU and Dropout, a 1x1 Conv1d on the residual where the widths differ),
dilations doubling per level, a Linear read-out of the last step; the adding problem built with
torch.rand, np.random.choice marks and torch.cat; the optimizer picked by getattr(optim, name)
(Adam), F.mse_loss, clip_grad_norm_, evaluation under torch.no_grad; and the weight-norm
parametrization itself: weight_g / weight_v as the parameters (and their gradients), the weight
recomputed by the pre-forward hook, so that writing into it with .data.normal_ lasts only until
the next forward.

Sizes: sequences of 20, 3 levels of 16 channels with kernel 3 (receptive field 29), 2000
training and 200 test sequences, batches of 32 (63 a pass), Adam at lr 4e-3, clipping at 1,
4 epochs, a log line every 20 batches.

Sections:
- "(recorded)": the training run (``losses``, ``test_losses``, ``logged``);
- "(added)": a fixed-weight network (NumPy-drawn weight_g / weight_v / biases, as jitgrad's
  random numbers are not torch's) whose forward, loss, gradients, clipped norms and two Adam
  steps are compared with torch.
"""
import argparse

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad import optim
from jitgrad.nn.utils import weight_norm


class CausalConv(nn.Module):
    """A weight-normed dilated Conv1d whose output at step t depends on inputs up to t only:
    padded by (k - 1) * dilation on both sides, the right-hand surplus trimmed off."""

    def __init__(self, c_in, c_out, kernel, dilation):
        super().__init__()
        self.trim = (kernel - 1) * dilation
        self.conv = weight_norm(nn.Conv1d(c_in, c_out, kernel, padding=self.trim,
                                          dilation=dilation))

    def forward(self, x):
        return self.conv(x)[:, :, :-self.trim].contiguous()


class ResidualLevel(nn.Module):
    def __init__(self, c_in, c_out, kernel, dilation, dropout):
        super().__init__()
        self.first = CausalConv(c_in, c_out, kernel, dilation)
        self.second = CausalConv(c_out, c_out, kernel, dilation)
        self.drop = nn.Dropout(dropout)
        self.project = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None

    def forward(self, x):
        h = self.drop(F.relu(self.first(x)))
        h = self.drop(F.relu(self.second(h)))
        shortcut = x if self.project is None else self.project(x)
        return F.relu(h + shortcut)


class AddingNet(nn.Module):
    def __init__(self, c_in, widths, kernel=3, dropout=0.0):
        super().__init__()
        levels, prev = [], c_in
        for i, width in enumerate(widths):
            levels.append(ResidualLevel(prev, width, kernel, 2 ** i, dropout))
            prev = width
        self.levels = nn.Sequential(*levels)
        self.readout = nn.Linear(prev, 1)
        self.readout.weight.data.normal_(0, 0.01)

    def features(self, x):  # (N, C, L) -> (N, widths[-1], L)
        return self.levels(x)

    def forward(self, x):
        return self.readout(self.features(x)[:, :, -1])


def adding_problem(count, length):
    """Each sequence: a row of uniform numbers and a row marking two of them; the target is the
    sum of the two marked numbers."""
    values = torch.rand(count, 1, length)
    marks = torch.zeros(count, 1, length)
    for i in range(count):
        marks[i, 0, np.random.choice(length, size=2, replace=False)] = 1.0
    return torch.cat([values, marks], dim=1), (values * marks).sum(dim=2)


# ---------------------------------------------------------------- (added) fixed weights
# Two levels of 6 channels (a 1x1 projection on the first level's residual). Writing into the
# computed weight first: the next forward recomputes it from weight_g and weight_v.
rng = np.random.default_rng(0)
fixed = AddingNet(2, [6, 6], kernel=3)
fixed_results = {}
first = fixed.levels[0].first.conv
first.weight.data.normal_(0, 0.01)
fixed_results["init_weight_std"] = first.weight.std().item()
with torch.no_grad():
    for p in fixed.parameters():
        p.copy_(torch.tensor(rng.normal(0.0, 0.5, tuple(p.shape)), dtype=torch.float32))
fixed_results["names"] = [n for n, _ in fixed.named_parameters()]
fixed_results["state_dict"] = list(fixed.state_dict())
numbers = rng.uniform(0, 1, (4, 1, 12))
marked = np.zeros((4, 1, 12))
for row in marked:
    row[0, rng.choice(12, size=2, replace=False)] = 1
fixed_x = torch.tensor(np.concatenate([numbers, marked], axis=1), dtype=torch.float32)
fixed_y = torch.tensor((numbers * marked).sum(axis=2), dtype=torch.float32)
optimizer_name = "Adam"
opt = getattr(optim, optimizer_name)(fixed.parameters(), lr=4e-3)
fixed_results["losses"], fixed_results["norms"] = [], []
for step in range(2):
    opt.zero_grad()
    pred = fixed(fixed_x)
    loss = F.mse_loss(pred, fixed_y)
    loss.backward()
    if step == 0:
        fixed_results["output"] = pred.detach().clone()
        fixed_results["weight"] = first.weight.detach().clone()
        v = first.weight_v
        fixed_results["weight_from_g_v"] = \
            (first.weight_g * v / v.norm(dim=(1, 2), keepdim=True)).detach()
        fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
    fixed_results["norms"].append(nn.utils.clip_grad_norm_(fixed.parameters(), 1.0).item())
    opt.step()
    fixed_results["losses"].append(loss.item())
fixed_results["params"] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_results["weight_requires_grad"] = first.weight.requires_grad
fixed.eval()
with torch.no_grad():
    fixed_results["eval_output"] = fixed(fixed_x)

# ---------------------------------------------------------------- (recorded) training
parser = argparse.ArgumentParser(description="a TCN on the adding problem")
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--cuda", action="store_true")
parser.add_argument("--dropout", type=float, default=0.0)
parser.add_argument("--clip", type=float, default=-1.0)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--kernel", type=int, default=7)
parser.add_argument("--levels", type=int, default=8)
parser.add_argument("--length", type=int, default=400)
parser.add_argument("--log-every", dest="log_every", type=int, default=100)
parser.add_argument("--lr", type=float, default=4e-3)
parser.add_argument("--optimizer", default="Adam")
parser.add_argument("--width", type=int, default=30)
parser.add_argument("--seed", type=int, default=1111)
args = parser.parse_args(["--clip", "1", "--epochs", "4", "--kernel", "3", "--levels", "3",
                          "--length", "20", "--log-every", "20", "--width", "16"])
torch.manual_seed(args.seed)
np.random.seed(args.seed)
device = torch.device("cuda" if args.cuda else "cpu")

train_x, train_y = adding_problem(2000, args.length)
test_x, test_y = adding_problem(200, args.length)
model = AddingNet(2, [args.width] * args.levels, kernel=args.kernel,
                  dropout=args.dropout).to(device)
optimizer = getattr(optim, args.optimizer)(model.parameters(), lr=args.lr)
losses, test_losses, logged = [], [], []

for epoch in range(1, args.epochs + 1):
    model.train()
    order = torch.randperm(train_x.shape[0])
    running, seen = 0.0, 0
    for batch, start in enumerate(range(0, len(order), args.batch), 1):
        idx = order[start:start + args.batch]
        x, y = train_x[idx].to(device), train_y[idx].to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        if args.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        losses.append(loss.item())
        running += loss.item()
        seen += len(idx)
        if batch % args.log_every == 0:
            logged.append((epoch, seen, running / args.log_every))
            running = 0.0
    model.eval()
    with torch.no_grad():
        test_losses.append(F.mse_loss(model(test_x.to(device)), test_y.to(device)).item())
