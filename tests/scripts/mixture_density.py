# ruff: noqa: N812, N806 (the usual F alias; X, L, D, K for data, Cholesky factors, sizes)
"""Mixture density networks and Gaussian mixtures, written for these tests the way MDN
tutorials (Bishop's inverse-problem toy) and torch Gaussian-mixture code (EM with
``torch.distributions``, or gradient descent on the negative log-likelihood) write torch code:

- Bishop's toy: y ~ U(0, 1), x = y + 0.3 sin(2 pi y) + noise, learning the multi-valued
  inverse p(y | x); an MDN of ``nn.Linear``/``nn.Tanh`` heads for mixture logits, means and
  log standard deviations; its negative log-likelihood three ways: through
  ``MixtureSameFamily(Categorical(logits=...), Normal(...))``, by hand with
  ``torch.log_softmax`` and ``torch.logsumexp``, and the tutorial's ``log(sum(pi * exp(
  Normal.log_prob)))``; Adam on the MDN, a plain ``F.mse_loss`` regressor as the baseline
  that predicts the conditional mean; sampling y given x from the mixture (``.sample()``),
  the mixture's ``mean`` and ``variance``;
- a 2-D Gaussian mixture fitted by EM in float64: ``MultivariateNormal(means,
  scale_tril=...)`` log-densities broadcast over (N, K), responsibilities by
  ``torch.softmax``, means by ``resp.T @ X``, covariances by ``torch.einsum`` of outer
  products, ``torch.linalg.cholesky``; data drawn from a ``MixtureSameFamily`` of
  ``MultivariateNormal``;
- the same mixture fitted by gradient descent on the NLL: the unconstrained Cholesky factors
  through ``LowerCholeskyTransform`` (``transform_to(constraints.lower_cholesky)``; not in
  ``biject_to``'s registry), the
  weights through ``biject_to(constraints.simplex)`` (stick breaking), with ``.inv`` mapping
  the starting point back; ``optim.Adam``;
- ``Independent(Normal, 1)`` as a diagonal component against ``MultivariateNormal`` with a
  diagonal ``scale_tril``; ``kl_divergence`` of two ``Normal`` (against its closed form), of
  two ``Independent`` and of two ``MultivariateNormal``;
- the log-likelihood of held-out data under the EM fit, the gradient fit and the true
  mixture; ``torch.autograd.gradcheck`` in float64 of the mixture NLLs.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.distributions import (
    Categorical,
    Independent,
    MixtureSameFamily,
    MultivariateNormal,
    Normal,
    biject_to,
    constraints,
    transform_to,
    kl_divergence,
)
from jitgrad.distributions.transforms import LowerCholeskyTransform

torch.manual_seed(0)
fixed_results = {}


# ----------------------------------------------------------------------- Bishop's toy


def bishop_data(n):
    """Samples of the inverse problem: inputs x, targets y, both (n, 1)."""
    y = torch.rand(n, 1)
    noise = torch.rand(n, 1) * 0.2 - 0.1
    x = y + 0.3 * torch.sin(2 * math.pi * y) + noise
    return x, y


def forward_map(y):
    return y + 0.3 * torch.sin(2 * math.pi * y)


class MDN(nn.Module):
    def __init__(self, n_hidden=24, n_gaussians=5):
        super().__init__()
        self.z_h = nn.Sequential(nn.Linear(1, n_hidden), nn.Tanh(),
                                 nn.Linear(n_hidden, n_hidden), nn.Tanh())
        self.z_pi = nn.Linear(n_hidden, n_gaussians)
        self.z_mu = nn.Linear(n_hidden, n_gaussians)
        self.z_sigma = nn.Linear(n_hidden, n_gaussians)

    def forward(self, x):
        z_h = self.z_h(x)
        return self.z_pi(z_h), self.z_mu(z_h), self.z_sigma(z_h)

    def mixture(self, x):
        logits, mu, log_sigma = self(x)
        return MixtureSameFamily(Categorical(logits=logits), Normal(mu, torch.exp(log_sigma)))


def mdn_nll_distributions(logits, mu, log_sigma, y):
    mix = MixtureSameFamily(Categorical(logits=logits), Normal(mu, torch.exp(log_sigma)))
    return -mix.log_prob(y.squeeze(-1)).mean()


def mdn_nll_logsumexp(logits, mu, log_sigma, y):
    log_pi = torch.log_softmax(logits, dim=-1)
    z = (y - mu) * torch.exp(-log_sigma)
    log_normal = -0.5 * z ** 2 - log_sigma - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + log_normal, dim=-1).mean()


def mdn_nll_tutorial(logits, mu, log_sigma, y):
    """The form MDN tutorials write first: fine for moderate densities, underflows for tiny
    ones."""
    pi = F.softmax(logits, dim=1)
    m = Normal(loc=mu, scale=torch.exp(log_sigma))
    prob = torch.exp(m.log_prob(y))
    prob = torch.sum(prob * pi, dim=1)
    return torch.mean(-torch.log(prob))


# ------------------------------------------------------------------------ Gaussian mixtures


def gmm_log_prob_components(X, weights, means, scale_tril):
    """(N, K) log p(x_n, z_n = k)."""
    comp = MultivariateNormal(means, scale_tril=scale_tril)
    return comp.log_prob(X[:, None, :]) + torch.log(weights)


def em_step(X, weights, means, scale_tril, reg=1e-6):
    """One EM iteration; returns the new parameters and the log-likelihood before it."""
    N, D = X.shape
    log_joint = gmm_log_prob_components(X, weights, means, scale_tril)
    log_likelihood = torch.logsumexp(log_joint, dim=1).mean()
    resp = torch.softmax(log_joint, dim=1)  # E step
    nk = resp.sum(dim=0)  # M step
    weights = nk / N
    means = resp.T @ X / nk[:, None]
    diff = X[:, None, :] - means[None, :, :]
    cov = torch.einsum("nk,nki,nkj->kij", resp, diff, diff) / nk[:, None, None]
    cov = cov + reg * torch.eye(D, dtype=X.dtype)
    return weights, means, torch.linalg.cholesky(cov), log_likelihood.item()


def gmm_mixture(weights, means, scale_tril):
    return MixtureSameFamily(Categorical(probs=weights),
                             MultivariateNormal(means, scale_tril=scale_tril))


class GradientGMM(nn.Module):
    """A Gaussian mixture with unconstrained parameters mapped onto the constraints."""

    def __init__(self, weights, means, scale_tril):
        super().__init__()
        self.simplex = biject_to(constraints.simplex)
        self.tril = LowerCholeskyTransform()
        self.raw_weights = nn.Parameter(self.simplex.inv(weights))
        self.means = nn.Parameter(means.clone())
        self.raw_tril = nn.Parameter(self.tril.inv(scale_tril))

    def mixture(self):
        return gmm_mixture(self.simplex(self.raw_weights), self.means,
                           self.tril(self.raw_tril))

    def forward(self, X):
        return -self.mixture().log_prob(X).mean()


# --------------------------------------------------------------- MDN (recorded)

x_train, y_train = bishop_data(400)
x_test, y_test = bishop_data(400)
mdn = MDN()
x_fixed = torch.linspace(-0.1, 1.1, 9)[:, None]
y_fixed = torch.linspace(0.0, 1.0, 9)[:, None]
with torch.no_grad():
    logits, mu, log_sigma = mdn(x_fixed)
fixed_results["mdn_logits"] = logits
fixed_results["mdn_mu"] = mu
fixed_results["mdn_log_sigma"] = log_sigma

nll_forms, nll_grads = {}, {}
for name, fn in (("distributions", mdn_nll_distributions), ("logsumexp", mdn_nll_logsumexp),
                 ("tutorial", mdn_nll_tutorial)):
    mdn.zero_grad()
    nll = fn(*mdn(x_train), y_train)
    nll.backward()
    nll_forms[name] = nll.item()
    nll_grads[name] = {n: p.grad.clone() for n, p in mdn.named_parameters()}
fixed_results["nll"] = nll_forms["distributions"]
fixed_results["nll_grads"] = nll_grads["distributions"]
mdn.zero_grad()

# far-out targets: the tutorial's form underflows to inf, the others stay finite
y_far = torch.full((9, 1), 40.0)
with torch.no_grad():
    far_nll = {name: fn(*mdn(x_fixed), y_far).item() for name, fn in (
        ("distributions", mdn_nll_distributions), ("logsumexp", mdn_nll_logsumexp),
        ("tutorial", mdn_nll_tutorial))}
fixed_results["far_nll"] = far_nll["logsumexp"]

# gradcheck of the two stable NLLs in float64, through logits, means and log-scales
small = (torch.randn(4, 3, dtype=torch.float64, requires_grad=True),
         torch.randn(4, 3, dtype=torch.float64, requires_grad=True),
         (0.3 * torch.randn(4, 3, dtype=torch.float64)).requires_grad_())
small_y = torch.randn(4, 1, dtype=torch.float64)
gradcheck_results = {
    "distributions": torch.autograd.gradcheck(
        lambda a, b, c: mdn_nll_distributions(a, b, c, small_y), small),
    "logsumexp": torch.autograd.gradcheck(
        lambda a, b, c: mdn_nll_logsumexp(a, b, c, small_y), small),
    "gradgrad": torch.autograd.gradgradcheck(
        lambda a, b, c: mdn_nll_distributions(a, b, c, small_y), small),
}

# ------------------------------------------------------------------- MDN training

optimizer = optim.Adam(mdn.parameters(), lr=5e-3)
mdn_losses = []
for epoch in range(1500):
    optimizer.zero_grad()
    loss = mdn_nll_distributions(*mdn(x_train), y_train)
    loss.backward()
    optimizer.step()
    mdn_losses.append(loss.item())
    if epoch % 500 == 0:
        print(f"MDN epoch {epoch}: nll {loss.item():.4f}")

baseline = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                         nn.Linear(24, 1))
baseline_optimizer = optim.Adam(baseline.parameters(), lr=5e-3)
baseline_losses = []
for _ in range(600):
    baseline_optimizer.zero_grad()
    loss = F.mse_loss(baseline(x_train), y_train)
    loss.backward()
    baseline_optimizer.step()
    baseline_losses.append(loss.item())

with torch.no_grad():
    mdn_test_nll = mdn_nll_distributions(*mdn(x_test), y_test).item()
    test_forms = {name: fn(*mdn(x_test), y_test).item() for name, fn in (
        ("logsumexp", mdn_nll_logsumexp), ("tutorial", mdn_nll_tutorial))}
    residual = baseline(x_test) - y_test
    baseline_var = residual.pow(2).mean()
    baseline_test_nll = -Normal(baseline(x_test), baseline_var.sqrt()).log_prob(y_test).mean()
    baseline_test_nll = baseline_test_nll.item()
    # samples of y given x: consistent with the forward map where the mean is not
    x_grid = torch.linspace(0.0, 1.0, 200)[:, None]
    mixture = mdn.mixture(x_grid)
    y_samples = mixture.sample((20,))  # (20, 200)
    sample_residual = (forward_map(y_samples) - x_grid[:, 0]).abs()
    sample_consistent = (sample_residual < 0.15).float().mean().item()
    baseline_residual = (forward_map(baseline(x_grid)) - x_grid).abs()
    baseline_consistent = (baseline_residual < 0.15).float().mean().item()
    mixture_mean, mixture_variance = mixture.mean, mixture.variance
    sample_mean = y_samples.mean(0)

print(f"MDN test nll {mdn_test_nll:.3f} vs MSE baseline {baseline_test_nll:.3f}; samples "
      f"consistent {sample_consistent:.2f} vs {baseline_consistent:.2f}")

# -------------------------------------------------- Gaussian mixture data, EM (recorded)

dtype = torch.float64
true_weights = torch.tensor([0.5, 0.3, 0.2], dtype=dtype)
true_means = torch.tensor([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5]], dtype=dtype)
true_tril = torch.tensor([[[1.0, 0.0], [0.6, 0.5]],
                          [[0.5, 0.0], [-0.3, 0.8]],
                          [[0.7, 0.0], [0.0, 0.4]]], dtype=dtype)
true_gmm = gmm_mixture(true_weights, true_means, true_tril)
X = true_gmm.sample((600,))
X_test = true_gmm.sample((600,))
N, D = X.shape
K = 3

init = torch.randperm(N)[:K]
init_weights = torch.full((K,), 1.0 / K, dtype=dtype)
init_means = X[init].clone()
init_tril = torch.linalg.cholesky(torch.diag_embed(X.var(0)).expand(K, D, D).clone())

weights, means, scale_tril = init_weights, init_means, init_tril
em_log_likelihoods = []
for _ in range(60):
    weights, means, scale_tril, ll = em_step(X, weights, means, scale_tril)
    em_log_likelihoods.append(ll)
em_params = (weights, means, scale_tril)
em_log_likelihood = torch.logsumexp(gmm_log_prob_components(X, *em_params), 1).mean().item()
fixed_results["em_log_likelihoods"] = em_log_likelihoods[:10]
fixed_results["X_head"] = X[:5]

# ------------------------------------------------------------------- gradient fit

gmm = GradientGMM(init_weights, init_means, init_tril)
fixed_results["raw_tril_init"] = gmm.raw_tril.detach().clone()
roundtrip_error = (gmm.tril(gmm.raw_tril) - init_tril).abs().max().item()
gmm_optimizer = optim.Adam(gmm.parameters(), lr=0.05)
gd_losses = []
for _ in range(300):
    gmm_optimizer.zero_grad()
    loss = gmm(X)
    loss.backward()
    gmm_optimizer.step()
    gd_losses.append(loss.item())
gd_log_likelihood = -gmm(X).item()
print(f"EM log-likelihood {em_log_likelihood:.4f}, gradient fit {gd_log_likelihood:.4f}")

# gradcheck of the mixture NLL through the Cholesky and simplex transforms
probe = GradientGMM(init_weights, init_means, init_tril)
gradcheck_gmm = torch.autograd.gradcheck(
    lambda rw, m, rt: -gmm_mixture(probe.simplex(rw), m, probe.tril(rt)).log_prob(X[:8]).mean(),
    tuple(p.detach().clone().requires_grad_() for p in probe.parameters()))
same_transform = type(transform_to(constraints.lower_cholesky)).__name__
try:  # the registry has lower_cholesky for transform_to only
    biject_to(constraints.lower_cholesky)
    biject_lower_cholesky = "registered"
except NotImplementedError as e:
    biject_lower_cholesky = str(e)

# ------------------------------------------------------------ held-out likelihoods

with torch.no_grad():
    held_out = {
        "true": true_gmm.log_prob(X_test).mean().item(),
        "em": gmm_mixture(*em_params).log_prob(X_test).mean().item(),
        "gradient": gmm.mixture().log_prob(X_test).mean().item(),
    }

# --------------------------------------------- Independent and KL (recorded)

stds = torch.tensor([[0.5, 1.5], [1.0, 0.3], [2.0, 0.7]], dtype=dtype)
diag_mix = MixtureSameFamily(Categorical(probs=true_weights),
                             Independent(Normal(true_means, stds), 1))
mvn_mix = gmm_mixture(true_weights, true_means, torch.diag_embed(stds))
independent_difference = (diag_mix.log_prob(X_test) - mvn_mix.log_prob(X_test)).abs().max().item()
independent_shapes = (tuple(diag_mix.batch_shape), tuple(diag_mix.event_shape))

p_loc, p_scale = torch.tensor([0.0, 1.0, -2.0]), torch.tensor([1.0, 0.5, 2.0])
q_loc, q_scale = torch.tensor([0.5, -1.0, -2.0]), torch.tensor([2.0, 0.5, 1.0])
kl_normal = kl_divergence(Normal(p_loc, p_scale), Normal(q_loc, q_scale))
kl_closed = (torch.log(q_scale / p_scale)
             + (p_scale ** 2 + (p_loc - q_loc) ** 2) / (2 * q_scale ** 2) - 0.5)
kl_independent = kl_divergence(Independent(Normal(p_loc, p_scale), 1),
                               Independent(Normal(q_loc, q_scale), 1))
kl_mvn = kl_divergence(MultivariateNormal(p_loc, scale_tril=torch.diag(p_scale)),
                       MultivariateNormal(q_loc, scale_tril=torch.diag(q_scale)))
kl_em_components = kl_divergence(MultivariateNormal(em_params[1], scale_tril=em_params[2]),
                                 MultivariateNormal(true_means, scale_tril=true_tril))
fixed_results["kl_normal"] = kl_normal
fixed_results["kl_independent"] = kl_independent
fixed_results["kl_mvn"] = kl_mvn
fixed_results["true_log_prob"] = true_gmm.log_prob(X_test[:6])
fixed_results["diag_log_prob"] = diag_mix.log_prob(X_test[:6])

# samples from a fixed 1-D mixture: its moments and torch's draws
torch.manual_seed(7)
fixed_mix = MixtureSameFamily(Categorical(logits=torch.tensor([0.0, 1.0, -1.0])),
                              Normal(torch.tensor([-3.0, 0.0, 4.0]),
                                     torch.tensor([0.5, 1.0, 0.2])))
fixed_samples = fixed_mix.sample((4000,))
fixed_results["fixed_samples_head"] = fixed_samples[:8]
fixed_results["fixed_mix_mean"] = fixed_mix.mean
fixed_results["fixed_mix_variance"] = fixed_mix.variance
print(f"held-out log-likelihood {held_out}")
