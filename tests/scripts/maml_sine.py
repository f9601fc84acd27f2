# ruff: noqa: N802, N803, N806 (research-code names as such scripts write them)
"""Model-agnostic meta-learning (Finn, Abbeel & Levine 2017) on sine regression, written for
these tests in the way MAML code for PyTorch is commonly written (not a copy of one script):

- a network kept as a list of tensors (``nn.ParameterList``) and run functionally with
  ``F.linear``, so that the inner loop can run it with adapted weights;
- the inner loop's SGD steps through ``torch.autograd.grad(..., create_graph=True)``: the
  meta-gradient flows through the adaptation (second order), and a first-order variant
  (``create_graph=False``) beside it;
- the meta-update by Adam over a batch of tasks, ``torch.stack(losses).mean()``;
- the same inner loop in torch.func's style: ``functional_call`` of an ``nn.Sequential`` with a
  dict of weights, ``grad`` for the step, and ``vmap`` over the tasks of a meta-batch
  (``in_dims=(None, 0, 0, 0, 0)``), its meta-gradient by ``torch.autograd.grad``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.func import functional_call, grad, vmap

np.random.seed(0)
torch.manual_seed(0)


def sample_tasks(rng, n_tasks, k_shot):
    """Sines of amplitude in [0.1, 5] and phase in [0, pi]; x in [-5, 5]: support and query."""
    amp = rng.uniform(0.1, 5.0, size=(n_tasks, 1, 1))
    phase = rng.uniform(0.0, math.pi, size=(n_tasks, 1, 1))
    xs = rng.uniform(-5.0, 5.0, size=(n_tasks, 2 * k_shot, 1))
    ys = amp * np.sin(xs - phase)
    as_tensor = lambda a: torch.from_numpy(a.astype(np.float32))  # noqa: E731
    return (as_tensor(xs[:, :k_shot]), as_tensor(ys[:, :k_shot]),
            as_tensor(xs[:, k_shot:]), as_tensor(ys[:, k_shot:]))


class SineNet(nn.Module):
    """1 -> 40 -> 40 -> 1 with ReLU; ``forward(x, weights)`` runs any list of weights."""

    def __init__(self, hidden=40):
        super().__init__()
        shapes = [(hidden, 1), (hidden,), (hidden, hidden), (hidden,), (1, hidden), (1,)]
        self.vars = nn.ParameterList()
        for shape in shapes:
            w = nn.Parameter(torch.empty(*shape))
            if w.dim() > 1:
                nn.init.kaiming_normal_(w, nonlinearity="relu")
            else:
                nn.init.zeros_(w)
            self.vars.append(w)

    def forward(self, x, weights=None):
        w = list(self.vars) if weights is None else weights
        x = F.relu(F.linear(x, w[0], w[1]))
        x = F.relu(F.linear(x, w[2], w[3]))
        return F.linear(x, w[4], w[5])


def adapt(net, x, y, inner_lr, steps, second_order=True):
    """The inner loop: ``steps`` SGD steps on the support set, from the net's own weights."""
    weights = list(net.vars)
    for _ in range(steps):
        loss = F.mse_loss(net(x, weights), y)
        grads = torch.autograd.grad(loss, weights, create_graph=second_order)
        weights = [w - inner_lr * g for w, g in zip(weights, grads)]
    return weights


def meta_loss(net, tasks, inner_lr, steps, second_order=True):
    xs, ys, xq, yq = tasks
    losses = []
    for i in range(xs.shape[0]):
        adapted = adapt(net, xs[i], ys[i], inner_lr, steps, second_order)
        losses.append(F.mse_loss(net(xq[i], adapted), yq[i]))
    return torch.stack(losses).mean()


# -------------------------------------------------------------------------- meta-training
rng = np.random.default_rng(0)
net = SineNet()
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)
inner_lr, inner_steps, meta_batch, k_shot = 0.01, 1, 4, 10
meta_losses = []
for it in range(600):
    tasks = sample_tasks(rng, meta_batch, k_shot)
    meta_opt.zero_grad()
    loss = meta_loss(net, tasks, inner_lr, inner_steps)
    loss.backward()
    meta_opt.step()
    meta_losses.append(loss.item())
    if it % 200 == 0:
        print(f"iter {it:4d}  meta-loss {loss.item():.4f}")

# adaptation on new tasks: the query loss before and after ten inner steps
test_tasks = sample_tasks(np.random.default_rng(1), 8, k_shot)
xs, ys, xq, yq = test_tasks
before, after = [], []
for i in range(8):
    with torch.no_grad():
        before.append(F.mse_loss(net(xq[i]), yq[i]).item())
    adapted = adapt(net, xs[i], ys[i], inner_lr, 10, second_order=False)
    with torch.no_grad():
        after.append(F.mse_loss(net(xq[i], adapted), yq[i]).item())
print(f"query loss before adaptation {np.mean(before):.3f}, after 10 steps {np.mean(after):.3f}")

# -------------------------------------------------------------- (recorded) on fixed weights
fixed = SineNet(hidden=8)
w_rng = np.random.default_rng(7)
with torch.no_grad():
    for w in fixed.vars:
        w.copy_(torch.from_numpy(w_rng.normal(0.0, 0.5, size=tuple(w.shape)).astype(np.float32)))
fixed_tasks = sample_tasks(np.random.default_rng(3), 3, 5)
fixed_results = {}
for order, name in ((True, "second"), (False, "first")):
    fixed.zero_grad()
    loss = meta_loss(fixed, fixed_tasks, 0.1, 2, second_order=order)
    loss.backward()
    fixed_results[f"{name}_order_loss"] = loss.item()
    fixed_results[f"{name}_order_grads"] = [w.grad.clone() for w in fixed.vars]

# the second-order meta-gradient equals the gradient of the adapted loss as a function of the
# initial weights: a Hessian-vector product, checked here by autograd.grad twice by hand
x0, y0, xq0, yq0 = (t[0] for t in fixed_tasks)
w0 = list(fixed.vars)
inner = F.mse_loss(fixed(x0, w0), y0)
g0 = torch.autograd.grad(inner, w0, create_graph=True)
outer = F.mse_loss(fixed(xq0, [w - 0.1 * g for w, g in zip(w0, g0)]), yq0)
v = torch.autograd.grad(outer, w0, retain_graph=True)
fixed_results["one_task_meta_grad"] = [t.detach().clone() for t in v]
hvp = torch.autograd.grad(g0, w0, grad_outputs=[torch.ones_like(w) for w in w0])
fixed_results["hvp_ones"] = [t.clone() for t in hvp]

# one Adam meta-step from the fixed weights
opt = torch.optim.Adam(fixed.parameters(), lr=1e-2)
opt.zero_grad()
meta_loss(fixed, fixed_tasks, 0.1, 2).backward()
opt.step()
fixed_results["after_adam"] = [w.detach().clone() for w in fixed.vars]

# ------------------------------------------------- (recorded) the torch.func formulation
seq = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
with torch.no_grad():
    for p in seq.parameters():
        p.copy_(torch.from_numpy(w_rng.normal(0.0, 0.5, size=tuple(p.shape)).astype(np.float32)))
params = {k: v.detach().requires_grad_() for k, v in seq.named_parameters()}


def support_loss(weights, x, y):
    return F.mse_loss(functional_call(seq, weights, (x,)), y)


def task_query_loss(weights, x, y, xq, yq):
    g = grad(support_loss)(weights, x, y)
    adapted = {k: weights[k] - 0.1 * g[k] for k in weights}
    return F.mse_loss(functional_call(seq, adapted, (xq,)), yq)


per_task = vmap(task_query_loss, in_dims=(None, 0, 0, 0, 0))(params, *fixed_tasks)
func_meta_loss = per_task.mean()
func_grads = torch.autograd.grad(func_meta_loss, list(params.values()))
looped = torch.stack([task_query_loss(params, *(t[i] for t in fixed_tasks)) for i in range(3)])
looped_grads = torch.autograd.grad(looped.mean(), list(params.values()))
fixed_results["func_per_task"] = per_task.detach().clone()
fixed_results["func_grads"] = [t.clone() for t in func_grads]
fixed_results["looped_grads"] = [t.clone() for t in looped_grads]
