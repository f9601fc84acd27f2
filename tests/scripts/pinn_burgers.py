"""A physics-informed network for the viscous Burgers equation u_t + u u_x = nu u_xx on
[-1, 1] x [0, 1), written for these tests in the way the PyTorch ports of Raissi et al.'s
PINNs (e.g. jayroxis/PINNs' Burgers notebooks) are commonly written (modelled on the API usage
of that code, not a copy of it):

- an MLP built as ``nn.Sequential(OrderedDict(...))`` of Linear/Tanh layers;
- inputs from numpy as ``torch.tensor(..., requires_grad=True).float().to(device)``;
- the PDE residual from u_t, u_x, u_xx by ``autograd.grad(grad_outputs=ones_like,
  retain_graph=True, create_graph=True)``;
- full-batch ``optim.LBFGS(max_iter=, max_eval=, history_size=, tolerance_grad=,
  tolerance_change=, line_search_fn="strong_wolfe")`` stepping a closure, its per-parameter
  state (``func_evals``, ``n_iter``);
- prediction on the whole grid, the relative L2 error, ``scipy.interpolate.griddata``.

The reference solution comes from the Cole-Hopf formula (Gauss-Hermite quadrature) on a coarse
grid; the collocation points are a small Latin hypercube drawn with numpy; the network weights
are set from numpy (Xavier normal) so that jitgrad and torch start from the same point.
"""
import time
from collections import OrderedDict

import numpy as np
from scipy.interpolate import griddata

import jitgrad as torch
from jitgrad import nn

np.random.seed(1234)
torch.manual_seed(1234)
device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")

nu = 0.01 / np.pi
N_BOUNDARY, N_COLLOCATION = 60, 400
WIDTHS = [2, 16, 16, 16, 1]
MAX_ITER = 150


def latin_hypercube(dims, n):
    """n points in [0, 1]^dims, one in each of n equal slices along every axis."""
    lo = np.arange(n) / n
    pts = lo[:, None] + np.random.rand(n, dims) / n
    for d in range(dims):
        pts[:, d] = pts[np.random.permutation(n), d]
    return pts


def cole_hopf_solution(visc, xs, ts, nodes=200):
    """Burgers with u(x, 0) = -sin(pi x) and u(+-1, t) = 0, via the heat equation: u is a
    ratio of two Gaussian averages over a shift s = sqrt(4 visc t) z (Gauss-Hermite in z)."""
    z, wq = np.polynomial.hermite.hermgauss(nodes)
    out = np.empty((len(xs), len(ts)))
    for k, tk in enumerate(ts):
        if tk == 0:
            out[:, k] = -np.sin(np.pi * xs)
            continue
        y = xs[:, None] - np.sqrt(4 * visc * tk) * z
        phase = -np.cos(np.pi * y) / (2 * np.pi * visc)
        dens = wq * np.exp(phase - phase.max(axis=1, keepdims=True))  # (scaled for overflow)
        out[:, k] = -(dens * np.sin(np.pi * y)).sum(1) / dens.sum(1)
    return out


def column(arr, j):
    return torch.tensor(arr[:, j:j + 1], requires_grad=True).float().to(device)


class TanhMLP(nn.Module):
    def __init__(self, widths):
        super().__init__()
        stack = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            stack.append((f"layer_{i}", nn.Linear(a, b)))
            if i < len(widths) - 2:
                stack.append((f"activation_{i}", nn.Tanh()))
        self.layers = nn.Sequential(OrderedDict(stack))

    def forward(self, xt):
        return self.layers(xt)


def d(out, wrt):
    return torch.autograd.grad(out, wrt, grad_outputs=torch.ones_like(out),
                               retain_graph=True, create_graph=True)[0]


class BurgersPINN:
    def __init__(self, xt_data, u_data, xt_colloc, widths, visc):
        self.x_u, self.t_u = column(xt_data, 0), column(xt_data, 1)
        self.x_f, self.t_f = column(xt_colloc, 0), column(xt_colloc, 1)
        self.u = torch.tensor(u_data).float().to(device)
        self.nu = visc
        self.dnn = TanhMLP(widths).to(device)
        self.optimizer = torch.optim.LBFGS(
            self.dnn.parameters(), lr=1.0, max_iter=MAX_ITER, max_eval=MAX_ITER,
            history_size=50, tolerance_grad=1e-5, tolerance_change=np.finfo(float).eps,
            line_search_fn="strong_wolfe")
        self.calls = 0

    def net_u(self, x, t):
        return self.dnn(torch.cat([x, t], dim=1))

    def net_f(self, x, t):
        u = self.net_u(x, t)
        u_x = d(u, x)
        return d(u, t) + u * u_x - self.nu * d(u_x, x)

    def closure(self):
        self.optimizer.zero_grad()
        misfit = ((self.net_u(self.x_u, self.t_u) - self.u) ** 2).mean()
        physics = (self.net_f(self.x_f, self.t_f) ** 2).mean()
        total = misfit + physics
        total.backward()
        self.calls += 1
        closure_losses.append((total.item(), misfit.item(), physics.item()))
        if self.calls % 50 == 0:
            print(f"eval {self.calls}: loss {total.item():.4e} "
                  f"(data {misfit.item():.3e}, pde {physics.item():.3e})")
        return total

    def fit(self):
        self.dnn.train()
        self.optimizer.step(self.closure)

    def predict(self, xt):
        self.dnn.eval()
        x, t = column(xt, 0), column(xt, 1)
        u, f = self.net_u(x, t), self.net_f(x, t)
        return u.detach().cpu().numpy(), f.detach().cpu().numpy()


# reference solution on a 65 x 34 grid
x = np.linspace(-1, 1, 65)[:, None]
t = np.linspace(0, 0.99, 34)[:, None]
Exact = cole_hopf_solution(nu, x[:, 0], t[:, 0]).T  # rows: time
X, T = np.meshgrid(x, t)
grid_pts = np.column_stack([X.ravel(), T.ravel()])
u_true = Exact.reshape(-1, 1)
lower, upper = grid_pts.min(0), grid_pts.max(0)

# data on the initial line and the two walls; collocation points inside (and on them)
edges = [(X[0], T[0], Exact[0]), (X[:, 0], T[:, 0], Exact[:, 0]),
         (X[:, -1], T[:, -1], Exact[:, -1])]
edge_pts = np.vstack([np.column_stack([a, b]) for a, b, _ in edges])
edge_u = np.concatenate([c for _, _, c in edges])[:, None]
colloc = np.vstack([lower + (upper - lower) * latin_hypercube(2, N_COLLOCATION), edge_pts])
pick = np.random.choice(len(edge_pts), N_BOUNDARY, replace=False)
closure_losses = []
model = BurgersPINN(edge_pts[pick], edge_u[pick], colloc, WIDTHS, nu)

# Xavier-normal weights and zero biases from numpy (the same start on torch and jitgrad)
init_rng = np.random.default_rng(0)
with torch.no_grad():
    for name, prm in model.dnn.named_parameters():
        if name.endswith("bias"):
            prm.zero_()
        else:
            sd = np.sqrt(2.0 / sum(prm.shape))
            prm.copy_(torch.tensor(init_rng.normal(0.0, sd, tuple(prm.shape)),
                                   dtype=torch.float32))

# before training: the residual at some grid points, and the loss with its gradients
fixed_results = {"f_init": model.predict(grid_pts[::37])[1]}
model.closure()
fixed_results["loss_init"] = closure_losses.pop()
fixed_results["grads_init"] = {n: p.grad.clone() for n, p in model.dnn.named_parameters()}
model.calls = 0

tic = time.time()
model.fit()
print(f"LBFGS: {time.time() - tic:.1f} s, {len(closure_losses)} evaluations")
u_pred, f_pred = model.predict(grid_pts)
error_u = np.linalg.norm(u_true - u_pred) / np.linalg.norm(u_true)
print(f"relative L2 error of u: {error_u:.3e}")
U_pred = griddata(grid_pts, u_pred.ravel(), (X, T), method="cubic")
abs_error = np.abs(Exact - U_pred)

optimizer_state = model.optimizer.state[model.optimizer._params[0]]
fixed_results["closure_losses"] = closure_losses
fixed_results["lbfgs_counts"] = (optimizer_state["func_evals"], optimizer_state["n_iter"])
