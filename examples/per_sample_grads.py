"""Per-sample gradients with jitgrad.func: our own example, written in the way torch.func's
per-sample-gradients tutorial uses the API (not a copy of its code).

One gradient per example of a batch (for differential privacy, per-example clipping, data
attribution, ...): ``vmap(grad(loss), in_dims=(None, 0, 0))`` maps a one-example loss over the
batch, with the model's parameters passed as a dict (``functional_call``) and shared
(``in_dims=None``). The result is checked against the loop over the examples, and the same
transform is compiled with ``jit`` into one program of batched equations.

Run: ``python examples/per_sample_grads.py``
"""

from __future__ import annotations

import numpy as np

import jitgrad
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.func import functional_call, grad, vmap

N_ROWS, N_FEATURES, WIDTH, N_CLASSES = 48, 12, 24, 5


class TabularNet(nn.Module):
    """Rows of 12 features -> 5 class scores, with one residual hidden layer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(N_FEATURES, WIDTH)
        self.inner = nn.Linear(WIDTH, WIDTH)
        self.classify = nn.Linear(WIDTH, N_CLASSES)

    def forward(self, rows: jitgrad.Tensor) -> jitgrad.Tensor:
        h = F.relu(self.embed(rows))
        h = h + F.relu(self.inner(h))
        return self.classify(h)


def loop_gradients(net: TabularNet, rows, labels) -> dict[str, list]:
    """Reference: ordinary autograd on the module, one row at a time."""
    out: dict[str, list] = {name: [] for name, _ in net.named_parameters()}
    for r in range(rows.shape[0]):
        net.zero_grad()
        F.cross_entropy(net(rows[r:r + 1]), labels[r:r + 1]).backward()
        for name, p in net.named_parameters():
            out[name].append(p.grad.numpy().copy())
    return out


def main() -> None:
    jitgrad.manual_seed(5)
    net = TabularNet()
    rows = jitgrad.randn(N_ROWS, N_FEATURES)
    labels = jitgrad.randint(N_CLASSES, (N_ROWS,))
    weights = {name: p.detach() for name, p in net.named_parameters()}

    def row_loss(weights: dict, row: jitgrad.Tensor, label: jitgrad.Tensor):
        # functional_call runs the module on a batch of one with the given weights
        scores = functional_call(net, weights, (row.unsqueeze(0),))
        return F.cross_entropy(scores, label.unsqueeze(0))

    per_row = vmap(grad(row_loss), in_dims=(None, 0, 0))  # weights shared, rows/labels mapped
    batched = per_row(weights, rows, labels)

    reference = loop_gradients(net, rows, labels)
    for name, per_example in reference.items():
        np.testing.assert_allclose(batched[name].numpy(), np.stack(per_example), rtol=1e-4,
                                   atol=1e-6)

    fused = jitgrad.jit(per_row)(weights, rows, labels)  # one program of batched equations
    for name in weights:
        np.testing.assert_allclose(fused[name].numpy(), batched[name].numpy(), rtol=1e-4,
                                   atol=1e-6)
    for name, g in batched.items():
        print(f"{name}: per-sample gradients of shape {tuple(g.shape)}")
    print("matches the loop over the examples (eager and jit)")


if __name__ == "__main__":
    main()
