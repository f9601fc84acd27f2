"""Exact Gaussian-process regression with hyperparameters fitted by gradient descent.

Written for these tests in the way minimal GP regression code for PyTorch is commonly written
(modelled on the API usage of swyoon/pytorch-minimal-gaussian-process, not a copy of it). It
exercises:

- an nn.Module whose RBF kernel's length, noise and amplitude scales are log-parameterised
  nn.Parameters made by torch.tensor(np.log(value)) (so float64), used with float32 data
  (0-d float64 parameters do not promote the float32 kernel matrix) and with float64 data;
- the kernel from expanded squared distances (sum of squares, mm, transpose, torch.exp,
  torch.eye), torch.linalg.cholesky, torch.cholesky_solve for K^-1 y and
  torch.linalg.solve_triangular for the predictive variance, torch.diagonal and torch.log for
  the log-determinant: the log marginal likelihood of Rasmussen & Williams' Algorithm 2.1;
- the predictive mean and variance on a grid, torch.sqrt of the variance, .numpy();
- optim.SGD steps on the negative log marginal likelihood, torch.stack of the recorded 0-d
  hyperparameters, and an optim.LBFGS fit with the strong-Wolfe line search.

The kernel is amplitude * exp(-0.5 * d^2 / length) (the length scale not squared). A small
recorder stands in for matplotlib. Sections marked "(recorded)" keep results for the tests;
"(added)" marks a GP of fixed hyperparameters on NumPy data (the log marginal likelihood, its
gradients, predictions, two SGD steps and an LBFGS fit) compared with torch.
"""

import math

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
from jitgrad import optim


class Figure:
    """Records what a plotting library would be asked to draw (recorded)."""

    calls = []

    @classmethod
    def draw(cls, kind, *payload):
        cls.calls.append((kind,) + payload)


torch.manual_seed(0)


class ExactGP(nn.Module):
    def __init__(self, length=1.0, noise=1.0, amplitude=1.0):
        super().__init__()
        self.log_length = nn.Parameter(torch.tensor(np.log(length)))
        self.log_noise = nn.Parameter(torch.tensor(np.log(noise)))
        self.log_amplitude = nn.Parameter(torch.tensor(np.log(amplitude)))

    def hyperparameters(self):
        """The three scales, positive by construction."""
        return self.log_length.exp(), self.log_noise.exp(), self.log_amplitude.exp()

    def cross_kernel(self, a, b):
        length, _, amplitude = self.hyperparameters()
        sq_a = (a * a).sum(dim=1, keepdim=True)
        sq_b = (b * b).sum(dim=1, keepdim=True)
        dist2 = sq_a + sq_b.T - 2.0 * a.mm(b.T)
        return amplitude * torch.exp(-0.5 * dist2 / length)

    def log_marginal_likelihood(self, inputs, targets):
        """Condition on (inputs, targets) and return log p(targets | inputs), shape (1, 1)."""
        _, noise, _ = self.hyperparameters()
        n = inputs.shape[0]
        gram = self.cross_kernel(inputs, inputs) + noise * torch.eye(n)
        chol = torch.linalg.cholesky(gram)
        weights = torch.cholesky_solve(targets, chol)
        self.train_inputs, self.gram, self.chol, self.weights = inputs, gram, chol, weights
        log_det_half = torch.log(torch.diagonal(chol)).sum()
        return -0.5 * targets.T.mm(weights) - log_det_half - 0.5 * n * math.log(2 * math.pi)

    def forward(self, query):
        """Predictive mean and variance (of a noisy observation) at query points."""
        _, noise, amplitude = self.hyperparameters()
        cross = self.cross_kernel(self.train_inputs, query)
        mean = cross.T.mm(self.weights)
        half = torch.linalg.solve_triangular(self.chol, cross, upper=False)
        variance = amplitude + noise - (half * half).sum(dim=0)
        return mean, variance


def descend(model, inputs, targets, opt):
    """One optimizer step on the negative log marginal likelihood."""
    opt.zero_grad()
    nll = -model.log_marginal_likelihood(inputs, targets).sum()
    nll.backward()
    opt.step()
    length, noise, amplitude = (h.detach().cpu() for h in model.hyperparameters())
    return {"loss": nll.item(), "length": length, "noise": noise, "amplitude": amplitude}


# (added) a GP of fixed hyperparameters on NumPy data (jitgrad's random numbers are not
# torch's): the log marginal likelihood, its gradients, the predictions on a grid, two SGD
# steps and an LBFGS fit, with float32 data and with float64 data
def fixed_run(dtype):
    rng = np.random.default_rng(0)
    inputs = torch.tensor(rng.normal(size=(40, 1)), dtype=dtype)
    noise = torch.tensor(rng.normal(size=40) * 0.1, dtype=dtype)
    targets = (torch.sin(inputs * 2 * np.pi / 4).flatten() + noise)[:, None]
    query = torch.linspace(-5, 5, 30, dtype=dtype)[:, None]
    model = ExactGP(length=2.0, noise=0.05, amplitude=0.5)
    out = {"params_float64": [p.dtype == torch.float64 for p in model.parameters()]}
    lml = model.log_marginal_likelihood(inputs, targets)
    out["ml_shape"], out["ml_dtype"] = tuple(lml.shape), lml.dtype == dtype
    out["K_dtype"] = model.gram.dtype == dtype
    (-lml.sum()).backward()
    out["ml"] = lml.item()
    out["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
    out["L"] = model.chol.detach().clone()
    with torch.no_grad():
        out["mu"], out["var"] = model(query)
    sgd = optim.SGD(model.parameters(), lr=0.01)
    out["steps"] = [descend(model, inputs, targets, sgd) for _ in range(2)]
    if dtype is torch.float32:
        return out
    # (float64 only: in float32 the line search takes other paths on other roundings)
    lbfgs = optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        nll = -model.log_marginal_likelihood(inputs, targets).sum()
        nll.backward()
        return nll

    out["lbfgs_first"] = lbfgs.step(closure).item()
    out["lbfgs_params"] = {n: p.detach().clone() for n, p in model.named_parameters()}
    state = lbfgs.state[lbfgs._params[0]]
    out["lbfgs_state"] = {k: state[k] for k in ("func_evals", "n_iter")}
    out["lbfgs_d"] = state["d"].clone()
    lbfgs.param_groups[0]["max_iter"] = 30  # (on to the optimum)
    lbfgs.step(closure)
    out["lbfgs_nll"] = closure().item()
    with torch.no_grad():
        out["lbfgs_mu"], out["lbfgs_var"] = model(query)
    return out


fixed_results = {"float32": fixed_run(torch.float32), "float64": fixed_run(torch.float64)}


# ------------------------------------------------------------- a fit on random float32 data

train_x = torch.randn(100, 1)
clean = torch.sin(train_x * np.pi / 2).flatten()
train_y = (clean + 0.1 * torch.randn_like(clean)).unsqueeze(1)
grid = torch.linspace(-5, 5, 200).unsqueeze(1)


def predict_band(model, title):
    """Predictive mean and standard deviation on the grid as NumPy, drawn as a band."""
    mean, variance = model(grid)
    mu = mean.detach().numpy().reshape(-1)
    std = torch.sqrt(variance).detach().numpy().reshape(-1)
    Figure.draw("points", train_x.numpy().ravel(), train_y.numpy().ravel())
    Figure.draw("line", grid.numpy().ravel(), mu)
    Figure.draw("band", grid.numpy().ravel(), mu - std, mu + std)
    Figure.draw("title", title)
    return mu, std


gp = ExactGP(length=4.0, amplitude=0.1)
gp.log_marginal_likelihood(train_x, train_y)
mu_before, std_before = predict_band(gp, "GP posterior, initial hyperparameters")

sgd = optim.SGD(gp.parameters(), lr=0.01)
history = {"loss": [], "length": [], "noise": [], "amplitude": []}  # (recorded)
for _ in range(100):
    for key, value in descend(gp, train_x, train_y, sgd).items():
        history[key].append(value)
for k, (key, label) in enumerate((("loss", "negative log marginal likelihood"),
                                  ("length", "length scale"), ("noise", "noise variance"),
                                  ("amplitude", "signal variance"))):
    series = history[key] if key == "loss" else torch.stack(history[key]).numpy()
    Figure.draw(f"panel{k}.curve", np.asarray(series))
    Figure.draw(f"panel{k}.title", label)

mu, std = predict_band(gp, "GP posterior, fitted hyperparameters")
