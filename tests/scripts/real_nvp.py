# ruff: noqa: E402, E501, E712, E731, F401, F841, N801, N802, N803, N806, UP008, UP031 (notebook code as is)
"""senya-ashukha/real-nvp-pytorch real-nvp-pytorch.ipynb: RealNVP on sklearn's two moons,
with torch.distributions.MultivariateNormal as the prior, the coupling layers' s and t nets in
nn.ModuleList, the masks as nn.Parameter(..., requires_grad=False), log_prob through the
forward map f with its log-determinant, loss.backward(retain_graph=True), and sampling through
the inverse g.

Changes: the notebook's code cells as one script; matplotlib is not installed here, so the last
cell's plt calls are recorded by a small stand-in; np.random.seed / torch.manual_seed for
repeatable runs; smaller nets (64 hidden units, not 256), 150 iterations (not 5001) with lr
1e-3 (not 1e-4), printing every 50; the last cell's 1000 points are 200. Sections marked
"(added)" are not the notebook's: they record results to compare with torch.
"""
import numpy as np
# import matplotlib.pyplot as plt
# %matplotlib inline

# from pylab import rcParams
# rcParams['figure.figsize'] = 10, 8
# rcParams['figure.dpi'] = 300


class plt:  # (stand-in for matplotlib.pyplot: records what would be drawn)
    drawn = []

    @staticmethod
    def subplot(where):
        plt.drawn.append(("subplot", where))

    @staticmethod
    def scatter(x, y, c=None):
        plt.drawn.append(("scatter", np.asarray(x), np.asarray(y)))

    @staticmethod
    def title(text):
        plt.drawn.append(("title", text))


import jitgrad as torch
from jitgrad import nn
from jitgrad import distributions
from jitgrad.nn.parameter import Parameter

from sklearn import cluster, datasets, mixture
from sklearn.preprocessing import StandardScaler

np.random.seed(0)
torch.manual_seed(0)


class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super(RealNVP, self).__init__()

        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = torch.nn.ModuleList([nett() for _ in range(len(masks))])
        self.s = torch.nn.ModuleList([nets() for _ in range(len(masks))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x*self.mask[i]
            s = self.s[i](x_)*(1 - self.mask[i])
            t = self.t[i](x_)*(1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1-self.mask[i])
            t = self.t[i](z_) * (1-self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self,x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, batchSize):
        z = self.prior.sample((batchSize, 1))
        logp = self.prior.log_prob(z)
        x = self.g(z)
        return x


hidden = 64
nets = lambda: nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(), nn.Linear(hidden, hidden), nn.LeakyReLU(), nn.Linear(hidden, 2), nn.Tanh())
nett = lambda: nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(), nn.Linear(hidden, hidden), nn.LeakyReLU(), nn.Linear(hidden, 2))
masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * 3).astype(np.float32))
prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
flow = RealNVP(nets, nett, masks, prior)

# (added) a fixed-weight copy, weights drawn by NumPy (jitgrad's random numbers are not
# torch's), to compare with torch before training: its log_prob, loss and gradients, two
# Adam steps, the round trip g(f(x)), and a gradient penalty on the score
fixed = RealNVP(nets, nett, masks, prior)
_rng = np.random.default_rng(0)
with torch.no_grad():
    for p in fixed.parameters():
        if p.requires_grad:
            p.copy_(torch.tensor(_rng.normal(0.0, 0.3, tuple(p.shape)), dtype=torch.float32))
fixed_x = torch.from_numpy(datasets.make_moons(n_samples=32, noise=.05, random_state=1)[0].astype(np.float32))
fixed_results = {}
fixed_results['trainable'] = [n for n, p in fixed.named_parameters() if p.requires_grad]
fixed_results['frozen'] = [n for n, p in fixed.named_parameters() if not p.requires_grad]
fixed_opt = torch.optim.Adam([p for p in fixed.parameters() if p.requires_grad==True], lr=1e-2)
fixed_results['losses'] = []
for step in range(2):
    log_prob = fixed.log_prob(fixed_x)
    loss = -log_prob.mean()
    fixed_opt.zero_grad()
    loss.backward(retain_graph=True)
    if step == 0:
        fixed_results['log_prob'] = log_prob.detach().clone()
        fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters() if p.requires_grad}
        fixed_results['mask_grad'] = fixed.mask.grad
    fixed_opt.step()
    fixed_results['losses'].append(loss.item())
with torch.no_grad():
    fixed_z, fixed_logdet = fixed.f(fixed_x)
    fixed_results['z'], fixed_results['log_det_J'] = fixed_z, fixed_logdet
    fixed_results['round_trip'] = fixed.g(fixed_z)
    fixed_results['prior_log_prob'] = prior.log_prob(fixed_z)
    fixed_results['log_prob_after'] = fixed.log_prob(fixed_x)
# (added) the score d log p(x) / dx and the gradient of its mean squared norm (a gradient
# penalty: double backward through the coupling layers' exp, tanh and LeakyReLU)
score_x = fixed_x.clone().requires_grad_()
(score,) = torch.autograd.grad(fixed.log_prob(score_x).sum(), score_x, create_graph=True)
penalty = (score ** 2).sum(dim=1).mean()
fixed_opt.zero_grad()
penalty.backward()
fixed_results['score'] = score.detach()
fixed_results['penalty'] = penalty.item()
fixed_results['penalty_grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters() if p.requires_grad}

optimizer = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad==True], lr=1e-3)
losses = []  # (added)
for t in range(151):
    noisy_moons = datasets.make_moons(n_samples=100, noise=.05)[0].astype(np.float32)
    loss = -flow.log_prob(torch.from_numpy(noisy_moons)).mean()

    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()
    losses.append(loss.item())  # (added)

    if t % 50 == 0:
        print('iter %s:' % t, 'loss = %.3f' % loss)

noisy_moons = datasets.make_moons(n_samples=200, noise=.05)[0].astype(np.float32)
z = flow.f(torch.from_numpy(noisy_moons))[0].detach().numpy()
plt.subplot(221)
plt.scatter(z[:, 0], z[:, 1])
plt.title(r'$z = f(X)$')

z = np.random.multivariate_normal(np.zeros(2), np.eye(2), 200)
plt.subplot(222)
plt.scatter(z[:, 0], z[:, 1])
plt.title(r'$z \sim p(z)$')

plt.subplot(223)
x = datasets.make_moons(n_samples=200, noise=.05)[0].astype(np.float32)
plt.scatter(x[:, 0], x[:, 1], c='r')
plt.title(r'$X \sim p(X)$')

plt.subplot(224)
x = flow.sample(200).detach().numpy()
plt.scatter(x[:, 0, 0], x[:, 0, 1], c='r')
plt.title(r'$X = g(z)$')
