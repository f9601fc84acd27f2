"""Fitting sin(x) with a cubic five ways, written for these tests in the way PyTorch's
"Learning PyTorch with Examples" is commonly written (modelled on the API usage of that
tutorial, not a copy of it):

- raw tensors with hand-written gradients and in-place ``-=`` updates
- ``requires_grad`` scalars, ``backward()``, updates under ``torch.no_grad()``, ``grad = None``
- a custom ``torch.autograd.Function`` (save_for_backward / saved_tensors) used via ``.apply``
- ``nn.Sequential(nn.Linear, nn.Flatten(0, 1))`` with ``MSELoss(reduction='sum')``, a manual
  parameter update and then ``optim.RMSprop``
- an ``nn.Module`` of ``nn.Parameter`` scalars with random-depth control flow, SGD + momentum
"""
import math
import random

import jitgrad as torch

dtype = torch.float
device = torch.device("cpu")
STEPS = 500

xs = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
target = torch.sin(xs)


def sse(pred):
    return (pred - target).pow(2).sum()


def cubic(coef, x):
    c0, c1, c2, c3 = coef
    return c0 + c1 * x + c2 * x ** 2 + c3 * x ** 3


def describe(coef):
    return " + ".join(f"{c.item():.4f} x^{k}" for k, c in enumerate(coef))


def sgd_in_place(params, lr):
    """One plain gradient step on leaf tensors, then forget their gradients."""
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


# 1. No autograd: the derivative of the squared error by hand.
coef = [torch.randn((), device=device, dtype=dtype) for _ in range(4)]
powers = [xs ** k for k in range(4)]
manual_losses = []
for _ in range(STEPS):
    pred = cubic(coef, xs)
    manual_losses.append(sse(pred).item())
    dloss = 2.0 * (pred - target)
    for c, xk in zip(coef, powers):
        c -= 1e-6 * (dloss * xk).sum()
print("by hand:", describe(coef))

# 2. The same fit, autograd computing the gradients.
coef = [torch.randn((), dtype=dtype, requires_grad=True) for _ in range(4)]
autograd_losses = []
for _ in range(STEPS):
    loss = sse(cubic(coef, xs))
    autograd_losses.append(loss.item())
    loss.backward()
    sgd_in_place(coef, 1e-6)


# 3. y = a + b * P3(c + d x) with the Legendre polynomial P3 as a custom Function.
class CubicLegendre(torch.autograd.Function):
    """P3(z) = (5 z^3 - 3 z) / 2, with its derivative 3/2 (5 z^2 - 1) written out."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return 0.5 * (5 * z ** 3 - 3 * z)

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        return grad_out * 1.5 * (5 * z ** 2 - 1)


P3 = CubicLegendre.apply
start = {"shift": 0.0, "scale": -1.0, "inner_shift": 0.0, "inner_scale": 0.3}
leg = {k: torch.full((), v, dtype=dtype, requires_grad=True) for k, v in start.items()}
legendre_losses = []
for step in range(STEPS):
    pred = leg["shift"] + leg["scale"] * P3(leg["inner_shift"] + leg["inner_scale"] * xs)
    loss = sse(pred)
    legendre_losses.append(loss.item())
    loss.backward()
    sgd_in_place(leg.values(), 5e-6)
    if step % 100 == 0:
        print("legendre", step, legendre_losses[-1])

# 4. nn: the features x, x^2, x^3 and one Linear layer, updated by hand.
exponents = torch.tensor([1, 2, 3])
features = xs.unsqueeze(-1).pow(exponents)  # (2000, 3)


def linear_fit():
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))


sum_mse = torch.nn.MSELoss(reduction='sum')
net = linear_fit()
nn_losses = []
for _ in range(STEPS):
    loss = sum_mse(net(features), target)
    nn_losses.append(float(loss))
    net.zero_grad()
    loss.backward()
    with torch.no_grad():
        for w in net.parameters():
            w -= 1e-6 * w.grad
fc = net[0]
print(f"nn: {fc.bias.item():.4f} + {fc.weight[:, 0].item():.4f} x"
      f" + {fc.weight[:, 1].item():.4f} x^2 + {fc.weight[:, 2].item():.4f} x^3")

# 5. The same model with an optimizer doing the update.
net = linear_fit()
rmsprop = torch.optim.RMSprop(net.parameters(), lr=1e-3)
optim_losses = []
for _ in range(STEPS):
    loss = sum_mse(net(features), target)
    optim_losses.append(loss.item())
    rmsprop.zero_grad()
    loss.backward()
    rmsprop.step()


# 6. A module whose forward adds a random number of higher-order terms sharing one weight.
class RandomDegree(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.coef = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(()))
                                            for _ in range(4)])
        self.extra = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        out = cubic(self.coef, x)
        for k in range(4, random.randint(4, 6)):  # degree 3, 4 or 5, decided per call
            out = out + self.extra * x ** k
        return out


dyn = RandomDegree()
momentum_sgd = torch.optim.SGD(dyn.parameters(), lr=1e-8, momentum=0.9)
dynamic_losses = []
for _ in range(STEPS):
    loss = sum_mse(dyn(xs), target)
    dynamic_losses.append(loss.item())
    momentum_sgd.zero_grad()
    loss.backward()
    momentum_sgd.step()
print("dynamic:", describe(dyn.coef), f"+ {dyn.extra.item():.4f} x^4/x^5")

# For the torch comparison: the Legendre fit starts from fixed values, so its first losses
# are deterministic.
legendre_first = list(legendre_losses[:3])
