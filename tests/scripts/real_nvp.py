"""A RealNVP normalising flow fitted to scikit-learn's two moons, written for these tests in the
way RealNVP notebooks for PyTorch (senya-ashukha's real-nvp-pytorch among them) are commonly
written (modelled on the API usage of that notebook, not a copy of it):

- ``distributions.MultivariateNormal`` as the base density (``log_prob``, ``sample((n, 1))``);
- affine coupling layers with their scale and shift nets in two ``nn.ModuleList``s, the
  alternating binary masks kept as a frozen ``Parameter(..., requires_grad=False)``;
- the data-to-latent map with its log-determinant (``new_zeros``, ``exp``, ``sum(dim=1)``) and
  its inverse for sampling; ``nn.LeakyReLU``/``nn.Tanh`` MLPs;
- Adam over the parameters that require grad, ``backward(retain_graph=True)``;
- fixed NumPy-drawn weights for a comparison with torch, including a score-matching style
  gradient penalty (``autograd.grad(..., create_graph=True)`` and a double backward);
- a tiny stand-in for ``matplotlib.pyplot`` that records the four panels.
"""
import math

import numpy as np
from sklearn import datasets

import jitgrad as torch
from jitgrad import distributions, nn
from jitgrad.nn.parameter import Parameter


class plt:  # noqa: N801 (records what pyplot would draw; matplotlib is not installed here)
    drawn = []

    @classmethod
    def subplot(cls, where):
        cls.drawn.append(("subplot", where))

    @classmethod
    def scatter(cls, xs, ys, c=None):
        cls.drawn.append(("scatter", np.asarray(xs), np.asarray(ys)))

    @classmethod
    def title(cls, text):
        cls.drawn.append(("title", text))


np.random.seed(0)
torch.manual_seed(0)

WIDTH = 64
N_COUPLINGS = 6


def mlp(squash):
    layers = [nn.Linear(2, WIDTH), nn.LeakyReLU(), nn.Linear(WIDTH, WIDTH), nn.LeakyReLU(),
              nn.Linear(WIDTH, 2)]
    if squash:  # bounded log-scales keep exp() tame early on
        layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class Flow(nn.Module):
    """x -> z through N affine couplings; each one keeps the masked coordinate fixed."""

    def __init__(self, masks, base):
        super().__init__()
        self.base = base
        self.mask = Parameter(masks, requires_grad=False)
        self.t = nn.ModuleList(mlp(False) for _ in range(len(masks)))
        self.s = nn.ModuleList(mlp(True) for _ in range(len(masks)))

    def _coupling(self, k, v):
        keep = self.mask[k]
        held = v * keep
        free = 1 - keep
        return keep, held, self.s[k](held) * free, self.t[k](held) * free

    def to_latent(self, x):
        logdet = x.new_zeros(x.shape[0])
        for k in reversed(range(len(self.t))):
            keep, held, scale, shift = self._coupling(k, x)
            x = held + (1 - keep) * (x - shift) * torch.exp(-scale)
            logdet -= scale.sum(dim=1)
        return x, logdet

    def from_latent(self, z):
        for k in range(len(self.t)):
            keep, held, scale, shift = self._coupling(k, z)
            z = held + (1 - keep) * (z * torch.exp(scale) + shift)
        return z

    def log_prob(self, x):
        z, logdet = self.to_latent(x)
        return self.base.log_prob(z) + logdet

    def sample(self, n):
        return self.from_latent(self.base.sample((n, 1)))


def moons(n, **kw):
    return datasets.make_moons(n_samples=n, noise=0.05, **kw)[0].astype(np.float32)


def trainable(model):
    return [p for p in model.parameters() if p.requires_grad]


checker = np.array([[0, 1], [1, 0]] * (N_COUPLINGS // 2)).astype(np.float32)
masks = torch.from_numpy(checker)
prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
flow = Flow(masks, prior)

# ---- a copy with NumPy-drawn weights whose numbers torch must reproduce ----
fixed = Flow(masks, prior)
draw = np.random.default_rng(0)
with torch.no_grad():
    for prm in trainable(fixed):
        prm.copy_(torch.tensor(draw.normal(0.0, 0.3, tuple(prm.shape)), dtype=torch.float32))
fixed_x = torch.from_numpy(moons(32, random_state=1))
fixed_results = {
    "trainable": [n for n, p in fixed.named_parameters() if p.requires_grad],
    "frozen": [n for n, p in fixed.named_parameters() if not p.requires_grad],
    "losses": [],
}
fixed_opt = torch.optim.Adam(trainable(fixed), lr=1e-2)
for it in range(2):
    lp = fixed.log_prob(fixed_x)
    nll = -lp.mean()
    fixed_opt.zero_grad()
    nll.backward(retain_graph=True)
    if it == 0:
        fixed_results["log_prob"] = lp.detach().clone()
        fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()
                                  if p.requires_grad}
        fixed_results["mask_grad"] = fixed.mask.grad
    fixed_opt.step()
    fixed_results["losses"].append(nll.item())

with torch.no_grad():
    z_fixed, logdet_fixed = fixed.to_latent(fixed_x)
    fixed_results.update(
        z=z_fixed, log_det_J=logdet_fixed, round_trip=fixed.from_latent(z_fixed),
        prior_log_prob=prior.log_prob(z_fixed), log_prob_after=fixed.log_prob(fixed_x))

# d log p / dx, and the gradient of its mean squared norm w.r.t. the weights
probe = fixed_x.clone().requires_grad_()
(score,) = torch.autograd.grad(fixed.log_prob(probe).sum(), probe, create_graph=True)
penalty = (score ** 2).sum(dim=1).mean()
fixed_opt.zero_grad()
penalty.backward()
fixed_results["score"] = score.detach()
fixed_results["penalty"] = penalty.item()
fixed_results["penalty_grads"] = {n: p.grad.clone() for n, p in fixed.named_parameters()
                                  if p.requires_grad}

# ---- maximum likelihood on fresh moons every step ----
optimizer = torch.optim.Adam(trainable(flow), lr=1e-3)
losses = []
for it in range(151):
    nll = -flow.log_prob(torch.from_numpy(moons(100))).mean()
    optimizer.zero_grad()
    nll.backward(retain_graph=True)
    optimizer.step()
    losses.append(nll.item())
    if it % 50 == 0:
        floor = math.log(2 * math.pi * math.e)  # the prior's own entropy, for scale
        # (%-formatting the 0-d loss tensor itself is part of what runs here)
        print("iteration %d: nll %.3f (prior entropy %.3f)" % (it, nll, floor))  # noqa: UP031

panels = []
latent = flow.to_latent(torch.from_numpy(moons(200)))[0].detach().numpy()
panels.append((latent, None, r"$z = f(X)$"))
panels.append((np.random.multivariate_normal(np.zeros(2), np.eye(2), 200), None,
               r"$z \sim p(z)$"))
panels.append((moons(200), "r", r"$X \sim p(X)$"))
x = flow.sample(200).detach().numpy()
panels.append((x[:, 0], "r", r"$X = g(z)$"))
for slot, (pts, colour, label) in enumerate(panels, start=221):
    plt.subplot(slot)
    plt.scatter(pts[:, 0], pts[:, 1], c=colour)
    plt.title(label)
