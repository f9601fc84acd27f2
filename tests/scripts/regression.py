"""Recovering a quartic from noise-free samples with a single linear layer, written for these
tests in the way the pytorch/examples regression script is commonly written (modelled on the API
usage of pytorch/examples' regression, not a copy of it):

- random "true" coefficients from ``torch.randn`` and a power-feature matrix built with
  ``unsqueeze``/``torch.cat``/``**``, targets through ``mm`` plus a ``.item()`` offset;
- an open-ended ``itertools.count`` loop: ``Module.zero_grad``, ``F.smooth_l1_loss``,
  ``backward`` and a hand-written SGD step on ``param.data.add_``;
- formatting tensor elements with ``str.format`` specs (``{:+.2f}``, ``{:>8.2e}``, ``{!r}``);
- a fixed-weight step (``no_grad``, ``copy_``, ``fill_``, ``linspace``) to compare with torch.
"""
from itertools import count

import jitgrad as torch
import jitgrad.nn.functional as F

torch.manual_seed(0)

DEGREE = 4
W_target = torch.randn(DEGREE, 1) * 5  # one coefficient per power x^1..x^4
b_target = torch.randn(1) * 5


def powers(t):
    """Column k of the result holds t ** (k + 1)."""
    col = t.unsqueeze(1)
    return torch.cat([col ** k for k in range(1, DEGREE + 1)], 1)


def describe(coeffs, offset):
    terms = [f"{c:+.2f} x^{k}" for k, c in enumerate(coeffs, start=1)]
    return "y = " + " ".join(terms) + f" {offset[0]:+.2f}"


def sample(n=32):
    feats = powers(torch.randn(n))
    return feats, feats.mm(W_target) + b_target.item()


fc = torch.nn.Linear(W_target.size(0), 1)
losses = []
lr = 0.1
for batch_idx in count(1):
    xb, yb = sample()
    fc.zero_grad()
    objective = F.smooth_l1_loss(fc(xb), yb)
    current = objective.item()
    losses.append(current)
    objective.backward()
    for p in fc.parameters():
        p.data.add_(-lr * p.grad)
    if current < 1e-3:
        break
    if batch_idx % 500 == 0:
        print(f"batch {batch_idx}: {current:.4f}")

learned = describe(fc.weight.view(-1), fc.bias)
actual = describe(W_target.view(-1), b_target)
print(f"stopped at batch {batch_idx} with loss {current:.6f}")
print("learned:", learned)
print("target: ", actual)

# ---- pieces that must agree with torch exactly ----
fixed_features = powers(torch.tensor([-1.5, 0.5, 2.0])).tolist()
fixed_desc = describe(torch.tensor([1.234, -0.005, 10.0, -3.456]), torch.tensor([0.0]))
a, b, c, d, e = (torch.tensor(v) for v in (2.5, -1234.5, 7, 3, 1.5))
fixed_formats = [f"{a:.3f}|{b:>8.2e}|{c}|{d:5}|{e!r:.6}"]

probe = torch.nn.Linear(4, 1)
with torch.no_grad():
    probe.weight.copy_(torch.tensor([[0.5, -0.25, 0.125, 0.0]]))
    probe.bias.fill_(1.0)
grid = powers(torch.linspace(-2, 2, 8))
truth = grid.mm(torch.tensor([[1.0], [2.0], [-1.0], [0.5]])) + 3.0
probe_loss = F.smooth_l1_loss(probe(grid), truth)
probe_loss.backward()
for p in probe.parameters():
    p.data.add_(-lr * p.grad)
fixed_step = (probe_loss.item(), probe.weight.tolist(), probe.bias.tolist())
