# ruff: noqa: B007, E402, E501, E702, E703, F401, F841, N801, N802, N803, N806 (swyoon's code as is)
"""swyoon/pytorch-minimal-gaussian-process gp.py and demo_gpr.ipynb: exact Gaussian-process
regression in plain PyTorch, an nn.Module whose RBF kernel's length, noise and amplitude scales
are log-parameterized nn.Parameters (float64: torch.tensor(np.log(...))) used with float32
data; fit() takes torch.linalg.cholesky of the kernel matrix, solves with torch.linalg.solve
against L and L.T and returns the log marginal likelihood with the log-determinant from the
Cholesky diagonal; forward() gives the predictive mean and variance; train_step() minimizes
the negative log marginal likelihood with an optimizer (the demo's SGD), as
Rasmussen & Williams' Algorithm 2.1.

Changes: the module and the notebook's cells as one script; matplotlib is not installed here,
so the notebook's plots are recorded by a small stand-in, and tqdm's progress bar by one that
iterates; torch.manual_seed for repeatable runs; the notebook's SGD runs 100 steps (not 50)
at lr 0.01. Sections marked "(added)" are not swyoon's: they record the losses and a
fixed-hyperparameter GP's results to compare with torch (on NumPy data, in float32 as the demo
and in float64: the log marginal likelihood, its gradients, the predictions, two SGD steps and
an LBFGS fit).
"""
import numpy as np
# import matplotlib.pyplot as plt
import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.optim import SGD
# from tqdm.auto import tqdm


class plt:  # (stand-in for matplotlib.pyplot: records what would be drawn)
    drawn = []

    @staticmethod
    def plot(*args):
        plt.drawn.append(("plot",) + tuple(np.asarray(a) for a in args if not isinstance(a, str)))

    @staticmethod
    def fill_between(x, y1=None, y2=None, alpha=None):
        plt.drawn.append(("fill_between", np.asarray(x), np.asarray(y1), np.asarray(y2)))

    @staticmethod
    def title(text):
        plt.drawn.append(("title", text))

    @staticmethod
    def subplots(ncols=1, figsize=None):
        return None, [_Axes(k) for k in range(ncols)]


class _Axes:  # (stand-in for a matplotlib Axes: records into plt.drawn with its index)
    def __init__(self, k):
        self.k = k

    def plot(self, y):
        plt.drawn.append((f"ax{self.k}.plot", np.asarray(y)))

    def set_title(self, text):
        plt.drawn.append((f"ax{self.k}.title", text))

    def set_xlabel(self, text):
        plt.drawn.append((f"ax{self.k}.xlabel", text))


def tqdm(iterable):  # (stand-in for tqdm.auto.tqdm)
    return iterable


torch.manual_seed(0)  # (added)


# ------------------------------------------------------------------------------------- gp.py
class GP(nn.Module):
    def __init__(self, length_scale=1.0, noise_scale=1.0, amplitude_scale=1.0):
        super().__init__()
        self.length_scale_ = nn.Parameter(torch.tensor(np.log(length_scale)))
        self.noise_scale_ = nn.Parameter(torch.tensor(np.log(noise_scale)))
        self.amplitude_scale_ = nn.Parameter(torch.tensor(np.log(amplitude_scale)))

    @property
    def length_scale(self):
        return torch.exp(self.length_scale_)

    @property
    def noise_scale(self):
        return torch.exp(self.noise_scale_)

    @property
    def amplitude_scale(self):
        return torch.exp(self.amplitude_scale_)

    def forward(self, x):
        """compute prediction. fit() must have been called.
        x: test input data point. N x D tensor for the data dimensionality D."""
        y = self.y
        L = self.L
        alpha = self.alpha
        k = self.kernel_mat(self.X, x)
        v = torch.linalg.solve(L, k)
        mu = k.T.mm(alpha)
        var = self.amplitude_scale + self.noise_scale - torch.diag(v.T.mm(v))
        return mu, var

    def fit(self, X, y):
        """should be called before forward() call.
        X: training input data point. N x D tensor for the data dimensionality D.
        y: training target data point. N x 1 tensor."""
        D = X.shape[1]
        K = self.kernel_mat_self(X)
        L = torch.linalg.cholesky(K)
        alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
        marginal_likelihood = (
            -0.5 * y.T.mm(alpha) - torch.log(torch.diag(L)).sum() - D * 0.5 * np.log(2 * np.pi)
        )
        self.X = X
        self.y = y
        self.L = L
        self.alpha = alpha
        self.K = K
        return marginal_likelihood

    def kernel_mat_self(self, X):
        sq = (X**2).sum(dim=1, keepdim=True)
        sqdist = sq + sq.T - 2 * X.mm(X.T)
        return self.amplitude_scale * torch.exp(
            -0.5 * sqdist / self.length_scale
        ) + self.noise_scale * torch.eye(len(X))

    def kernel_mat(self, X, Z):
        Xsq = (X**2).sum(dim=1, keepdim=True)
        Zsq = (Z**2).sum(dim=1, keepdim=True)
        sqdist = Xsq + Zsq.T - 2 * X.mm(Z.T)
        return self.amplitude_scale * torch.exp(-0.5 * sqdist / self.length_scale)

    def train_step(self, X, y, opt):
        """gradient-based optimization of hyperparameters
        opt: torch.optim.Optimizer object."""
        opt.zero_grad()
        nll = -self.fit(X, y).sum()
        nll.backward()
        opt.step()
        return {
            "loss": nll.item(),
            "length": self.length_scale.detach().cpu(),
            "noise": self.noise_scale.detach().cpu(),
            "amplitude": self.amplitude_scale.detach().cpu(),
        }


# (added) a GP of fixed hyperparameters on NumPy data (jitgrad's random numbers are not
# torch's): the log marginal likelihood, its gradients, the predictions on a grid, two steps of
# the demo's SGD and an LBFGS fit, with float32 data as the demo's and with float64 data
def fixed_run(dtype):
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.normal(size=(40, 1)), dtype=dtype)
    y = (torch.sin(X * 2 * np.pi / 4).flatten() + torch.tensor(rng.normal(size=40) * 0.1, dtype=dtype))[:, None]
    grid = torch.linspace(-5, 5, 30, dtype=dtype)[:, None]
    gp = GP(length_scale=2.0, noise_scale=0.05, amplitude_scale=0.5)
    r = {"params_float64": [p.dtype == torch.float64 for p in gp.parameters()]}
    ml = gp.fit(X, y)
    r["ml_shape"], r["ml_dtype"], r["K_dtype"] = tuple(ml.shape), ml.dtype == dtype, gp.K.dtype == dtype
    (-ml.sum()).backward()
    r["ml"] = ml.item()
    r["grads"] = {n: p.grad.clone() for n, p in gp.named_parameters()}
    r["L"] = gp.L.detach().clone()
    with torch.no_grad():
        mu, var = gp(grid)
    r["mu"], r["var"] = mu, var
    opt = SGD(gp.parameters(), lr=0.01)
    r["steps"] = [gp.train_step(X, y, opt) for _ in range(2)]
    if dtype is torch.float32:
        return r
    # (only float64: LBFGS's line search in float32 takes other paths on other roundings)
    lbfgs = torch.optim.LBFGS(gp.parameters(), lr=0.5, max_iter=4, line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        nll = -gp.fit(X, y).sum()
        nll.backward()
        return nll

    r["lbfgs_first"] = lbfgs.step(closure).item()
    r["lbfgs_params"] = {n: p.detach().clone() for n, p in gp.named_parameters()}
    r["lbfgs_state"] = {k: lbfgs.state[lbfgs._params[0]][k] for k in ("func_evals", "n_iter")}
    r["lbfgs_d"] = lbfgs.state[lbfgs._params[0]]["d"].clone()
    lbfgs.param_groups[0]["max_iter"] = 30  # (on to the optimum: its log-likelihood)
    lbfgs.step(closure)
    r["lbfgs_nll"] = closure().item()
    with torch.no_grad():
        r["lbfgs_mu"], r["lbfgs_var"] = gp(grid)
    return r


fixed_results = {"float32": fixed_run(torch.float32), "float64": fixed_run(torch.float64)}  # (added)

# ---------------------------------------------------------------------------- demo_gpr.ipynb
X = torch.randn(100,1)
f = torch.sin(X * 2 * np.pi /4).flatten()
y = f + torch.randn_like(f) * 0.1
y = y[:,None]
grid = torch.linspace(-5, 5, 200)[:,None]
plt.plot(X.flatten(), y.flatten(), '.')

gp = GP(length_scale=4, amplitude_scale=0.1)
gp.fit(X, y)
mu, var = gp.forward(grid)
mu = mu.detach().numpy().flatten()
std = torch.sqrt(var).detach().numpy().flatten()
plt.plot(X.flatten(), y, '.')
plt.plot(grid.flatten(), mu)
plt.fill_between(grid.flatten(), y1=mu+std, y2=mu-std, alpha=0.3)
plt.title('Before hyperparameter optimization');
mu_before, std_before = mu, std  # (added)

opt = SGD(gp.parameters(), lr=0.01)
l_loss = []; l_length = []; l_noise = []; l_amp = []
for i in tqdm(range(100)):
    d_train = gp.train_step(X, y, opt)
    l_loss.append(d_train['loss'])
    l_length.append(d_train['length'])
    l_noise.append(d_train['noise'])
    l_amp.append(d_train['amplitude'])
fig, axs = plt.subplots(ncols=4, figsize=(16,4))
axs[0].plot(l_loss); axs[0].set_title('Negative Log-Likelihood'); axs[0].set_xlabel('iteration')
axs[1].plot(torch.stack(l_length)); axs[1].set_title('Length scale'); axs[1].set_xlabel('iteration')
axs[2].plot(torch.stack(l_noise)); axs[2].set_title('Noise scale'); axs[2].set_xlabel('iteration')
axs[3].plot(torch.stack(l_amp)); axs[3].set_title('Amplitude scale'); axs[3].set_xlabel('iteration');

mu, var = gp.forward(grid)
mu = mu.detach().numpy().flatten()
std = torch.sqrt(var).detach().numpy().flatten()
plt.plot(X.flatten(), y, '.')
plt.plot(grid.flatten(), mu)
plt.fill_between(grid.flatten(), y1=mu+std, y2=mu-std, alpha=0.3)
plt.title('After hyperparameter optimization');
