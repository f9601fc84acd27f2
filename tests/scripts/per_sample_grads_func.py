"""Per-sample gradients, Jacobians, Hessians and model ensembles with ``torch.func``, written
for these tests in the way PyTorch's torch.func tutorials are commonly written (modelled on the
API usage of those tutorials, not a copy of them):

- per-sample gradients of a small CNN by a Python loop of ``torch.autograd.grad`` and by
  ``vmap(grad(...), in_dims=(None, None, 0, 0))`` over ``functional_call(model, (params,
  buffers), ...)``; their mean against the ordinary batch gradient
- ``jacrev`` (``argnums`` an int and a tuple) checked against rows from
  ``autograd.grad(..., v, retain_graph=True)``, ``hessian``, ``vmap(jacrev(...))``
- ``stack_module_state`` + ``copy.deepcopy`` + ``vmap`` to run an ensemble of MLPs at once
"""
import copy

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.func import functional_call, grad, hessian, jacrev, stack_module_state, vmap

torch.manual_seed(0)
device = "cpu"
N = 8  # samples in the batch


class DigitNet(nn.Module):
    """1x14x14 -> conv 3 -> 12 -> conv 3 -> 10 -> pool -> 5; then two Linear layers."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1, 4, 3, 1), nn.Conv2d(4, 8, 3, 1)])
        self.hidden = nn.Linear(8 * 5 * 5, 16)
        self.out = nn.Linear(16, 10)

    def forward(self, img):
        for conv in self.convs:
            img = F.relu(conv(img))
        flat = torch.flatten(F.max_pool2d(img, 2), 1)
        return F.log_softmax(self.out(F.relu(self.hidden(flat))), dim=1)


images = torch.randn(N, 1, 14, 14, device=device)
labels = torch.randint(10, (N,), device=device)
net = DigitNet().to(device=device)
F.nll_loss(net(images), labels).backward()  # the batch-mean gradient, left in .grad

# the slow way: one backward per sample
weights = list(net.parameters())
looped = []
for img, lab in zip(images, labels):
    loss = F.nll_loss(net(img.unsqueeze(0)), lab.unsqueeze(0))
    looped.append(torch.autograd.grad(loss, weights))
looped = [torch.stack(per_param) for per_param in zip(*looped)]
print("per-sample gradient of the first conv:", looped[0].shape)

# the torch.func way: a loss of (params, buffers, one sample), vectorised over the samples
params = {name: p.detach() for name, p in net.named_parameters()}
buffers = {name: b.detach() for name, b in net.named_buffers()}


def one_sample_loss(params, buffers, img, lab):
    logp = functional_call(net, (params, buffers), (img.unsqueeze(0),))
    return F.nll_loss(logp, lab.unsqueeze(0))


vectorised = vmap(grad(one_sample_loss), in_dims=(None, None, 0, 0))(params, buffers, images,
                                                                      labels)
max_diff = 0.0
for slow, fast in zip(looped, vectorised.values()):
    assert torch.allclose(slow, fast, atol=3e-3, rtol=1e-5)
    max_diff = max(max_diff, (slow - fast).abs().max().item())
mean_vs_batch = max((g.mean(0) - p.grad).abs().max().item() for g, p in zip(looped, weights))
print(f"loop vs vmap {max_diff:.2e}, mean of samples vs batch {mean_vs_batch:.2e}")

# Jacobians of one tanh layer with respect to its input (and to W and b)
D = 16


def tanh_layer(W, b, v):
    return F.linear(v, W, b).tanh()


W, b, v = torch.randn(D, D), torch.randn(D), torch.randn(D)
jac = jacrev(tanh_layer, argnums=2)(W, b, v)
v_leaf = v.clone().requires_grad_()
out = tanh_layer(W, b, v_leaf)
rows = [torch.autograd.grad(out, v_leaf, e, retain_graph=True)[0] for e in torch.eye(D)]
assert torch.allclose(jac, torch.stack(rows), atol=1e-6)  # row i: e_i^T J
jac_weight, jac_bias = jacrev(tanh_layer, argnums=(0, 1))(W, b, v)
hess = hessian(tanh_layer, argnums=2)(W, b, v)
print(jac_weight.shape, jac_bias.shape, hess.shape)
batch_jacobian = vmap(jacrev(tanh_layer, argnums=2), in_dims=(None, None, 0))(W, b,
                                                                              torch.randn(4, D))
print(batch_jacobian.shape)


# ten small MLPs, each on its own minibatch, in one vmapped call
class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 10)

    def forward(self, x):
        return self.b(F.relu(self.a(x.flatten(1))))


ensemble = [TwoLayer().to(device) for _ in range(10)]
inputs = torch.randn(10, 5, 16)
one_by_one = torch.stack([m(x) for m, x in zip(ensemble, inputs)])
stacked_params, stacked_buffers = stack_module_state(ensemble)
template = copy.deepcopy(ensemble[0])


def run_member(params, buffers, x):
    return functional_call(template, (params, buffers), (x,))


all_at_once = vmap(run_member)(stacked_params, stacked_buffers, inputs)
assert torch.allclose(all_at_once, one_by_one, atol=1e-3, rtol=1e-5)
ensemble_shape = tuple(all_at_once.shape)

# fixed inputs for the torch comparison
W0 = 0.3 * torch.sin(torch.arange(D * D, dtype=torch.float32)).view(D, D)
b0 = torch.cos(torch.arange(D, dtype=torch.float32))
v0 = torch.linspace(-1, 1, D)
fixed_jac = jacrev(tanh_layer, argnums=2)(W0, b0, v0).tolist()
fixed_hess_diag = torch.diagonal(hessian(tanh_layer, argnums=2)(W0, b0, v0)[0]).tolist()
