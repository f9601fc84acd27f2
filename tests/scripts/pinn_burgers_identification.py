"""Discovering the coefficients of Burgers' equation u_t + l1 u u_x - l2 u_xx = 0 from samples
of its solution with a physics-informed network, written for these tests in the way the PyTorch
ports of Raissi et al.'s PINNs (e.g. jayroxis/PINNs' Burgers identification notebook) are
commonly written (modelled on the API usage of that code, not a copy of it):

- the unknown l1 and log l2 as ``nn.Parameter``s made from ``torch.tensor(...,
  requires_grad=True).to(device)`` and attached to the network with ``register_parameter``
  (so they are its first parameters and every optimizer sees them);
- an ``nn.Sequential(OrderedDict(...))`` Tanh MLP; u_t, u_x, u_xx by ``autograd.grad(...,
  create_graph=True)``;
- a few ``optim.Adam`` steps, then ``optim.LBFGS(line_search_fn="strong_wolfe")`` on a closure;
  once on exact samples, once on samples with 1 % noise;
- the relative L2 error of u and of the coefficients, ``scipy.interpolate.griddata``.

The reference solution comes from the Cole-Hopf formula on a coarse grid; network weights are
set from numpy (Xavier normal) so that jitgrad and torch start from the same point.
"""
from collections import OrderedDict

import numpy as np
from scipy.interpolate import griddata

import jitgrad as torch
from jitgrad import nn

np.random.seed(1234)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

nu = 0.01 / np.pi  # the true l2 (l1 is 1)
N_SAMPLES = 300
WIDTHS = [2, 16, 16, 16, 1]
MAX_ITER = 200
N_ADAM = 20


def burgers_table(visc, xs, ts, nodes=200):
    """u(x, t) for u(x, 0) = -sin(pi x), zero walls: Cole-Hopf with Gauss-Hermite nodes."""
    z, wq = np.polynomial.hermite.hermgauss(nodes)
    table = np.empty((len(ts), len(xs)))
    table[0] = -np.sin(np.pi * xs)
    for k in range(1, len(ts)):
        y = xs[:, None] - z * np.sqrt(4 * visc * ts[k])
        expo = -np.cos(np.pi * y) / (2 * np.pi * visc)
        dens = wq * np.exp(expo - expo.max(axis=1, keepdims=True))
        table[k] = (dens * -np.sin(np.pi * y)).sum(1) / dens.sum(1)
    return table


def as_input(arr):
    return torch.tensor(arr, requires_grad=True).float().to(device)


def mlp(widths):
    parts = OrderedDict()
    last = len(widths) - 2
    for i in range(last + 1):
        parts[f"layer_{i}"] = nn.Linear(widths[i], widths[i + 1])
        if i < last:
            parts[f"activation_{i}"] = nn.Tanh()
    return nn.Sequential(parts)


class Net(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.layers = mlp(widths)

    def forward(self, xt):
        return self.layers(xt)


def dd(out, wrt):
    return torch.autograd.grad(out, wrt, grad_outputs=torch.ones_like(out),
                               retain_graph=True, create_graph=True)[0]


class CoefficientFinder:
    def __init__(self, xt, u, widths):
        self.x, self.t = as_input(xt[:, :1]), as_input(xt[:, 1:])
        self.u = torch.tensor(u).float().to(device)
        self.lambda_1 = nn.Parameter(torch.tensor([0.0], requires_grad=True).to(device))
        self.lambda_2 = nn.Parameter(torch.tensor([-6.0], requires_grad=True).to(device))
        self.dnn = Net(widths).to(device)
        self.dnn.register_parameter("lambda_1", self.lambda_1)
        self.dnn.register_parameter("lambda_2", self.lambda_2)  # l2 = exp(lambda_2) > 0
        self.lbfgs = torch.optim.LBFGS(self.dnn.parameters(), lr=1.0, max_iter=MAX_ITER,
                                       max_eval=MAX_ITER, history_size=50, tolerance_grad=1e-5,
                                       tolerance_change=np.finfo(float).eps,
                                       line_search_fn="strong_wolfe")
        self.adam = torch.optim.Adam(self.dnn.parameters())
        self.losses = []

    def residual(self, x, t):
        u = self.dnn(torch.cat([x, t], dim=1))
        u_x = dd(u, x)
        return dd(u, t) + self.lambda_1 * u * u_x - torch.exp(self.lambda_2) * dd(u_x, x)

    def objective(self):
        fit = torch.mean((self.dnn(torch.cat([self.x, self.t], dim=1)) - self.u) ** 2)
        return fit + torch.mean(self.residual(self.x, self.t) ** 2)

    def record(self, phase, loss):
        self.losses.append((phase, loss.item(), self.lambda_1.item(), self.lambda_2.item()))

    def closure(self):
        loss = self.objective()
        self.lbfgs.zero_grad()
        loss.backward()
        self.record("lbfgs", loss)
        if len(self.losses) % 100 == 0:
            print(f"loss {loss.item():.3e}  l1 {self.lambda_1.item():.4f}  "
                  f"l2 {torch.exp(self.lambda_2.detach()).item():.5f}")
        return loss

    def fit(self, adam_steps):
        self.dnn.train()
        for step in range(adam_steps):
            loss = self.objective()
            self.adam.zero_grad()
            loss.backward()
            self.adam.step()
            self.record("adam", loss)
            if step % 10 == 0:
                print(f"adam {step}: {loss.item():.3e}, l1 {self.lambda_1.item():.3f}")
        self.lbfgs.step(self.closure)

    def predict(self, xt):
        self.dnn.eval()
        x, t = as_input(xt[:, :1]), as_input(xt[:, 1:])
        u = self.dnn(torch.cat([x, t], dim=1))
        return u.detach().cpu().numpy(), self.residual(x, t).detach().cpu().numpy()


def start_from_numpy(finder, seed):
    """Xavier-normal weights, zero biases; the two coefficients keep their initial values."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, prm in finder.dnn.named_parameters():
            if not name.startswith("layers."):
                continue
            if name.endswith("weight"):
                sd = np.sqrt(2.0 / (prm.shape[0] + prm.shape[1]))
                prm.copy_(torch.tensor(rng.normal(0.0, sd, tuple(prm.shape)),
                                       dtype=torch.float32))
            else:
                prm.zero_()


xs, ts = np.linspace(-1, 1, 65), np.linspace(0, 0.99, 34)
Exact = burgers_table(nu, xs, ts)
X, T = np.meshgrid(xs, ts)
grid_pts = np.stack([X.ravel(), T.ravel()], axis=1)
u_true = Exact.reshape(-1, 1)


def rel_error(pred):
    return np.linalg.norm(u_true - pred) / np.linalg.norm(u_true)


chosen = np.random.choice(len(grid_pts), N_SAMPLES, replace=False)
sample_xt, sample_u = grid_pts[chosen], u_true[chosen]

# exact samples, LBFGS only
clean_model = CoefficientFinder(sample_xt, sample_u, WIDTHS)
start_from_numpy(clean_model, 0)
f_init = clean_model.predict(grid_pts[::41])[1]  # (l1 = 0, l2 = e^-6)
clean_model.fit(0)
u_pred, f_pred = clean_model.predict(grid_pts)
error_u = rel_error(u_pred)
U_pred = griddata(grid_pts, u_pred.ravel(), (X, T), method="cubic")
error_lambda_1 = np.abs(clean_model.lambda_1.detach().cpu().numpy() - 1.0) * 100
l2_found = np.exp(clean_model.lambda_2.detach().cpu().numpy())
error_lambda_2 = np.abs(l2_found - nu) / nu * 100
print(f"clean: error u {error_u:.3e}, l1 {error_lambda_1[0]:.3f} %, l2 {error_lambda_2[0]:.3f} %")

# 1 % noise on the samples, Adam first
noisy_u = sample_u + 0.01 * np.std(sample_u) * np.random.randn(*sample_u.shape)
noisy_model = CoefficientFinder(sample_xt, noisy_u, WIDTHS)
start_from_numpy(noisy_model, 1)
noisy_model.fit(N_ADAM)
noisy_error_u = rel_error(noisy_model.predict(grid_pts)[0])
print(f"noisy: error u {noisy_error_u:.3e}")

fixed_results = {"clean_losses": clean_model.losses, "noisy_losses": noisy_model.losses,
                 "f_init": f_init,
                 "clean_params": [n for n, _ in clean_model.dnn.named_parameters()]}
