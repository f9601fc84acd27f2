# ruff: noqa: N802, N803, N806 (research-code names as such scripts write them)
"""A deep equilibrium model (DEQ, Bai, Kolter & Koltun 2019) on small synthetic images, written
for these tests in the way the "Deep Implicit Layers" tutorial (implicit-layers-tutorial.org,
chapter 4) and the code that follows it commonly write torch code (modelled on their API usage,
not a copy of either):

- a ResNet-like cell f(z, x) of ``nn.Conv2d(bias=False)`` + ``nn.GroupNorm`` with ReLUs, its
  convolutions initialised by ``weight.data.normal_(0, 0.01)``;
- two fixed-point solvers: naive forward iteration and Anderson acceleration written with
  ``torch.zeros`` histories indexed ``X[:, k % m]``, ``torch.bmm`` of the residual Gram matrix,
  a bordered system filled by slice assignment (``H[:, 0, 1:] = H[:, 1:, 0] = 1``) and solved by
  ``torch.linalg.solve``, ``alpha[:, None] @ F[:, :n]``, ``view_as``, and relative residuals by
  ``.norm().item()``;
- a ``DEQFixedPoint`` module: the solve under ``torch.no_grad()``, one call of f to re-engage
  autograd, a ``z0 = z.clone().detach().requires_grad_()`` copy, and a backward hook
  (``z.register_hook``) that solves the adjoint fixed point with
  ``torch.autograd.grad(f0, z0, y, retain_graph=True)``, removing its handle
  (``self.hook.remove()``) and registering a new one each forward;
- the classifier as the tutorial builds it: ``nn.Sequential`` of a conv stem, ``BatchNorm2d``,
  the DEQ, ``BatchNorm2d``, ``AvgPool2d``, ``nn.Flatten``, ``nn.Linear``; Adam with
  CosineAnnealingLR over a DataLoader, ``model.train()``/``model.eval()`` and accuracy;
- fixed-weight results (the forward residuals, the equilibrium, the implicit gradient checked
  against plain backprop unrolled through many iterations of f, the adjoint residuals, an Adam
  step) for the torch comparison.
"""
import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad import autograd
from jitgrad.autograd import gradcheck
from jitgrad.optim.lr_scheduler import CosineAnnealingLR
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)


class ResNetLayer(nn.Module):
    def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=4):
        super().__init__()
        self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size,
                               padding=kernel_size // 2, bias=False)
        self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size,
                               padding=kernel_size // 2, bias=False)
        self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
        self.norm2 = nn.GroupNorm(num_groups, n_channels)
        self.norm3 = nn.GroupNorm(num_groups, n_channels)
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)

    def forward(self, z, x):
        y = self.norm1(F.relu(self.conv1(z)))
        return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))


def forward_iteration(f, x0, max_iter=50, tol=1e-2):
    f0 = f(x0)
    res = []
    for _ in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


def anderson(f, x0, m=5, lam=1e-4, max_iter=50, tol=1e-2, beta=1.0):
    """Anderson acceleration for the fixed point of f."""
    bsz, d, H, W = x0.shape
    X = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    F = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    X[:, 0], F[:, 0] = x0.view(bsz, -1), f(x0).view(bsz, -1)
    X[:, 1], F[:, 1] = F[:, 0], f(F[:, 0].view_as(x0)).view(bsz, -1)

    H = torch.zeros(bsz, m + 1, m + 1, dtype=x0.dtype, device=x0.device)
    H[:, 0, 1:] = H[:, 1:, 0] = 1
    y = torch.zeros(bsz, m + 1, 1, dtype=x0.dtype, device=x0.device)
    y[:, 0] = 1

    res = []
    for k in range(2, max_iter):
        n = min(k, m)
        G = F[:, :n] - X[:, :n]
        H[:, 1:n + 1, 1:n + 1] = torch.bmm(G, G.transpose(1, 2)) + lam * torch.eye(
            n, dtype=x0.dtype, device=x0.device)[None]
        alpha = torch.linalg.solve(H[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]  # (bsz, n)

        X[:, k % m] = beta * (alpha[:, None] @ F[:, :n])[:, 0] \
            + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0]
        F[:, k % m] = f(X[:, k % m].view_as(x0)).view(bsz, -1)
        res.append((F[:, k % m] - X[:, k % m]).norm().item()
                   / (1e-5 + F[:, k % m].norm().item()))
        if res[-1] < tol:
            break
    return X[:, k % m].view_as(x0), res


class DEQFixedPoint(nn.Module):
    def __init__(self, f, solver, **kwargs):
        super().__init__()
        self.f = f
        self.solver = solver
        self.kwargs = kwargs
        self.hook = None
        self.forward_res = []
        self.backward_res = []

    def forward(self, x):
        # compute the forward pass and re-engage the autograd tape
        with torch.no_grad():
            z, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x),
                                              **self.kwargs)
        z = self.f(z, x)

        # set up the vector-Jacobian product without further forward calls
        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            g, self.backward_res = self.solver(
                lambda y: autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                grad, **self.kwargs)
            return g

        if z.requires_grad:
            self.hook = z.register_hook(backward_hook)
        return z


class DEQFixedPointReuse(DEQFixedPoint):
    """The variant that reuses the graph of the last call of f for the adjoint solve: the hook
    sits on that call's output, so it removes itself before the solve (else each
    ``autograd.grad`` through the output would call it again, recursively)."""

    def forward(self, x):
        with torch.no_grad():
            z_star, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x),
                                                   **self.kwargs)
        new_z_star = z_star
        if self.training and torch.is_grad_enabled():
            z_star.requires_grad_()
            new_z_star = self.f(z_star, x)

            def backward_hook(grad):
                if self.hook is not None:
                    self.hook.remove()  # to avoid infinite recursion
                    self.hook = None
                new_grad, self.backward_res = self.solver(
                    lambda y: autograd.grad(new_z_star, z_star, y, retain_graph=True)[0] + grad,
                    torch.zeros_like(grad), **self.kwargs)
                return new_grad

            self.hook = new_z_star.register_hook(backward_hook)
        return new_z_star


# ----------------------------------------------------------------------- synthetic images
def make_images(n, rng):
    """4 classes of 3x8x8 images: horizontal and vertical stripes, a checkerboard, a blob."""
    yy, xx = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    patterns = np.stack([np.sin(yy * 1.6), np.sin(xx * 1.6), ((yy + xx) % 2) * 2.0 - 1,
                         np.exp(-((yy - 3.5) ** 2 + (xx - 3.5) ** 2) / 6.0) * 2 - 1])
    labels = rng.randint(0, 4, size=n)
    colours = rng.uniform(0.5, 1.0, size=(n, 3, 1, 1))
    images = patterns[labels][:, None] * colours + 1.0 * rng.randn(n, 3, 8, 8)
    return torch.tensor(images, dtype=torch.float32), torch.from_numpy(labels).long()


rng = np.random.RandomState(0)
X_train, y_train = make_images(96, rng)
X_test, y_test = make_images(64, rng)
train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=32, shuffle=True)

chan = 16
f = ResNetLayer(chan, 32, kernel_size=3)
model = nn.Sequential(nn.Conv2d(3, chan, kernel_size=3, bias=True, padding=1),
                      nn.BatchNorm2d(chan),
                      DEQFixedPoint(f, anderson, tol=1e-2, max_iter=25, m=5),
                      nn.BatchNorm2d(chan),
                      nn.AvgPool2d(4, 4),
                      nn.Flatten(),
                      nn.Linear(chan * 2 * 2, 4))
deq = model[2]

epochs = 4
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = CosineAnnealingLR(opt, epochs * len(train_loader), eta_min=1e-6)

losses, forward_iters, backward_iters, accuracies = [], [], [], []


def evaluate():
    model.eval()
    with torch.no_grad():
        yp = model(X_test)
    model.train()
    return (yp.max(dim=1)[1] == y_test).float().mean().item()


initial_accuracy = evaluate()
for _ in range(epochs):
    model.train()
    for X, y in train_loader:
        yp = model(X)
        loss = nn.CrossEntropyLoss()(yp, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        scheduler.step()
        losses.append(loss.item())
        forward_iters.append(len(deq.forward_res))
        backward_iters.append(len(deq.backward_res))
    accuracies.append(evaluate())

print("losses", [round(v, 4) for v in losses])
print("accuracies", initial_accuracy, accuracies)
print("solver steps forward", forward_iters, "backward", backward_iters)

# ------------------------------------------------------------------ (recorded) fixed weights
torch.manual_seed(1)
cell = ResNetLayer(4, 8, kernel_size=3, num_groups=2)
with torch.no_grad():  # larger weights than the init: the fixed point is not the input itself
    cell.conv1.weight.mul_(2.0)
    cell.conv2.weight.mul_(2.0)
fixed_x = torch.randn(2, 4, 5, 5)
fixed_target = torch.randn(2, 4, 5, 5)
fixed_results = {}

solve = DEQFixedPoint(cell, anderson, tol=1e-5, max_iter=60, m=5, lam=1e-6)
x_in = fixed_x.clone().requires_grad_()
z_star = solve(x_in)
fixed_loss = F.mse_loss(z_star, fixed_target)
fixed_loss.backward()
fixed_results["forward_res"] = list(solve.forward_res)
fixed_results["backward_res"] = list(solve.backward_res)
fixed_results["z_star"] = z_star.detach().clone()
fixed_results["loss"] = fixed_loss.item()
fixed_results["implicit_grads"] = {k: p.grad.clone() for k, p in cell.named_parameters()}
fixed_results["implicit_x_grad"] = x_in.grad.clone()
with torch.no_grad():
    fixed_results["fixed_point_error"] = (cell(z_star, fixed_x) - z_star).abs().max().item()

# the variant whose hook removes itself: the same gradient, the hook gone after one backward
cell.zero_grad()
reuse = DEQFixedPointReuse(cell, anderson, tol=1e-5, max_iter=60, m=5, lam=1e-6)
x_in = fixed_x.clone().requires_grad_()
F.mse_loss(reuse(x_in), fixed_target).backward()
fixed_results["reuse_hook_removed"] = reuse.hook is None
fixed_results["reuse_backward_res"] = list(reuse.backward_res)
fixed_results["reuse_grads"] = {k: p.grad.clone() for k, p in cell.named_parameters()}
fixed_results["reuse_x_grad"] = x_in.grad.clone()

# the same fixed point by plain forward iteration
with torch.no_grad():
    z_iter, iter_res = forward_iteration(lambda z: cell(z, fixed_x), torch.zeros_like(fixed_x),
                                         max_iter=200, tol=1e-6)
fixed_results["forward_iteration_res"] = iter_res
fixed_results["z_iter"] = z_iter

# plain backprop unrolled through many iterations of f equals the implicit gradient
cell.zero_grad()
x_in2 = fixed_x.clone().requires_grad_()
z = torch.zeros_like(fixed_x)
for _ in range(len(iter_res) + 20):
    z = cell(z, x_in2)
unrolled_loss = F.mse_loss(z, fixed_target)
unrolled_loss.backward()
fixed_results["unrolled_loss"] = unrolled_loss.item()
fixed_results["unrolled_grads"] = {k: p.grad.clone() for k, p in cell.named_parameters()}
fixed_results["unrolled_x_grad"] = x_in2.grad.clone()

# one Adam step on the implicit gradient
cell.zero_grad()
step_opt = torch.optim.Adam(cell.parameters(), lr=1e-2)
F.mse_loss(solve(fixed_x), fixed_target).backward()
step_opt.step()
fixed_results["after_adam"] = {k: p.detach().clone() for k, p in cell.named_parameters()}

# the implicit gradient against finite differences, in double precision and to high precision
# (gradcheck's fast mode: one random projection of the Jacobian instead of all its columns)
torch.manual_seed(4)
small = ResNetLayer(2, 2, num_groups=2).double()
deq_double = DEQFixedPoint(small, anderson, tol=1e-10, max_iter=500).double()
x_double = torch.randn(1, 2, 3, 3).double().requires_grad_()
fixed_results["gradcheck"] = gradcheck(deq_double, x_double, eps=1e-5, atol=1e-3,
                                       check_undefined_grad=False, fast_mode=True)
fixed_results["double_forward_res"] = list(deq_double.forward_res)
print("fixed", fixed_results["loss"], fixed_results["gradcheck"], len(fixed_results["forward_res"]),
      len(fixed_results["backward_res"]), fixed_results["fixed_point_error"])
