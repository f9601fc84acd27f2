"""Per-sample gradients with jitgrad.func, as in torch.func's tutorial.

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


class SimpleMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x: jitgrad.Tensor) -> jitgrad.Tensor:
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main() -> None:
    jitgrad.manual_seed(0)
    model = SimpleMLP()
    batch_size = 64
    data = jitgrad.randn(batch_size, 16)
    targets = jitgrad.randint(10, (batch_size,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def compute_loss(params: dict, sample: jitgrad.Tensor, target: jitgrad.Tensor):
        batch = sample.unsqueeze(0)  # the model expects a batch: a batch of one
        predictions = functional_call(model, params, (batch,))
        return F.cross_entropy(predictions, target.unsqueeze(0))

    per_sample = vmap(grad(compute_loss), in_dims=(None, 0, 0))
    grads = per_sample(params, data, targets)

    # the same gradients, one example at a time with the model's own autograd
    for i in range(batch_size):
        model.zero_grad()
        F.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(grads[name][i].numpy(), p.grad.numpy(), rtol=1e-4,
                                       atol=1e-6)

    compiled = jitgrad.jit(per_sample)  # one program of batched equations
    again = compiled(params, data, targets)
    for name in params:
        np.testing.assert_allclose(again[name].numpy(), grads[name].numpy(), rtol=1e-4,
                                   atol=1e-6)
    for name, g in grads.items():
        print(f"{name}: per-sample gradients of shape {tuple(g.shape)}")
    print("matches the loop over the examples (eager and jit)")


if __name__ == "__main__":
    main()
