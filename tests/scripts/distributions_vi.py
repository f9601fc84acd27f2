# ruff: noqa: N812, N806 (the usual F alias; X, L, K, N, D for data, factors and sizes)
"""Variational inference and mixture models with ``torch.distributions`` and no Pyro, written
for these tests the way plain-PyTorch VI code (VAE tutorials, Bayesian-regression notebooks,
SAC-style squashed Gaussians) writes torch code:

- densities on fixed inputs: ``Normal`` (``log_prob``, ``cdf``, ``icdf``, ``entropy``,
  ``perplexity``), ``MultivariateNormal`` from ``scale_tril`` / ``covariance_matrix`` /
  ``precision_matrix`` (batched by broadcasting), ``LowRankMultivariateNormal``,
  ``Independent``, ``MixtureSameFamily`` (mean, variance, univariate ``cdf``),
  ``Categorical`` / ``OneHotCategorical`` (``enumerate_support``), ``RelaxedOneHotCategorical``,
  ``Bernoulli``, ``Beta``, ``Gamma`` (``cdf``), ``Dirichlet``, ``LogNormal``, ``StudentT``,
  ``Poisson``;
- ``TransformedDistribution`` with ``AffineTransform``, ``ExpTransform``, ``SigmoidTransform``,
  ``TanhTransform`` (``cache_size=1``), ``ComposeTransform`` and ``.inv``,
  ``log_abs_det_jacobian``; ``constraints`` (``check``, reprs), ``biject_to`` and
  ``transform_to`` (positive, interval, greater_than, simplex, lower_cholesky);
- ``kl_divergence`` for registered pairs, ``register_kl`` for a ``Distribution`` subclass
  written here, and the Monte-Carlo fallback when ``NotImplementedError`` comes back;
- ``batch_shape`` / ``event_shape`` / ``expand`` / ``sample(sample_shape)``, ``has_rsample``,
  ``rsample`` keeping the graph while ``sample`` does not, implicit reparameterisation of
  ``Gamma`` / ``Beta`` / ``Dirichlet``;
- ``validate_args`` errors (bad parameters, values outside the support, shapes) and
  ``Distribution.set_default_validate_args``;
- an amortized VAE on binary patterns with a learned mixture-of-Gaussians prior
  (``MixtureSameFamily(Categorical, Independent(Normal))``), a Bernoulli decoder and a
  Monte-Carlo KL, beside the closed-form KL to a standard-normal prior;
- Bayesian linear regression with a full-covariance Gaussian posterior
  (``MultivariateNormal(scale_tril=transform_to(lower_cholesky)(raw))``), the closed-form
  ``kl_divergence`` to the prior, reparameterised ELBO gradients (antithetic noise makes the
  mean's gradient exact), the exact posterior and the log evidence to compare with;
  a ``LowRankMultivariateNormal`` posterior beside it;
- a squashed-Gaussian posterior ``TransformedDistribution(Normal, [AffineTransform,
  TanhTransform])`` fitted by reverse KL to a scaled ``Beta`` on (-1, 1), and a ``LogNormal``
  posterior for a Poisson rate under a ``Gamma`` prior (KL by Monte Carlo).

Sections marked "(recorded)" keep what the tests compare, on fixed inputs or fixed weights,
with the same script on torch.
"""

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.distributions import (
    Bernoulli,
    Beta,
    Categorical,
    Dirichlet,
    Distribution,
    Gamma,
    Independent,
    LogNormal,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    MultivariateNormal,
    Normal,
    OneHotCategorical,
    Poisson,
    RelaxedOneHotCategorical,
    StudentT,
    TransformedDistribution,
    biject_to,
    constraints,
    kl_divergence,
    register_kl,
    transform_to,
)
from jitgrad.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
)

torch.manual_seed(0)
f64 = torch.float64
fixed_results = {}  # float64 values on fixed inputs (recorded)
fixed32 = {}  # float32 values on fixed, seeded weights (recorded)
shapes = {}  # batch/event/sample shapes (recorded)
errors = {}  # exception class and message of what is rejected (recorded)
reprs = {}  # reprs of distributions, constraints and transforms (recorded)
flags = {}  # booleans: has_rsample, requires_grad, support checks (recorded)


def t64(*values):
    return torch.tensor(values, dtype=f64)


def caught(fn):
    """What a call raised: (class name, message), or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 (recorded whatever it is)
        return type(exc).__name__, str(exc)
    return None


# ------------------------------------------------------- densities on fixed inputs (recorded)

loc, scale = t64(0.5, -1.0, 2.0), t64(1.0, 0.5, 2.0)
x3 = t64(0.3, -0.2, 4.0)
normal = Normal(loc, scale)
fixed_results["normal"] = {
    "log_prob": normal.log_prob(x3),
    "cdf": normal.cdf(x3),
    "icdf": normal.icdf(t64(0.1, 0.5, 0.975)),
    "entropy": normal.entropy(),
    "perplexity": normal.perplexity(),
    "stddev": normal.stddev,
    "variance": normal.variance,
    "broadcast_log_prob": Normal(0.0, 1.0).log_prob(x3.float()).double(),
}

L = t64(1.0, 0.0, 0.0, 0.5, 0.8, 0.0, -0.3, 0.2, 0.6).reshape(3, 3)
mu3 = t64(0.1, -0.4, 0.7)
pts = t64(0.0, 0.0, 0.0, 1.0, -1.0, 0.5, -0.2, 0.3, 2.0, 0.5, 0.5, 0.5).reshape(4, 3)
mvn = MultivariateNormal(mu3, scale_tril=L)
cov = L @ L.T
mvn_cov = MultivariateNormal(mu3, covariance_matrix=cov)
mvn_prec = MultivariateNormal(mu3, precision_matrix=torch.linalg.inv(cov))
mvn_batch = MultivariateNormal(pts, scale_tril=L)  # loc (4, 3) broadcast against (3, 3)
fixed_results["mvn"] = {
    "log_prob": mvn.log_prob(pts),
    "log_prob_cov": mvn_cov.log_prob(pts),
    "log_prob_prec": mvn_prec.log_prob(pts),
    "entropy": mvn.entropy(),
    "covariance": mvn.covariance_matrix,
    "precision": mvn.precision_matrix,
    "variance": mvn.variance,
    "scale_tril_from_cov": mvn_cov.scale_tril,
    "scale_tril_from_prec": mvn_prec.scale_tril,
    "batch_log_prob": mvn_batch.log_prob(mu3),
    "batch_entropy": mvn_batch.entropy(),
}
shapes["mvn_batch"] = (tuple(mvn_batch.batch_shape), tuple(mvn_batch.event_shape))

W = t64(0.5, -0.2, 0.1, 0.7, 0.3, 0.0).reshape(3, 2)
D = t64(0.4, 0.9, 0.2)
lowrank = LowRankMultivariateNormal(mu3, cov_factor=W, cov_diag=D)
fixed_results["lowrank"] = {
    "log_prob": lowrank.log_prob(pts),
    "entropy": lowrank.entropy(),
    "covariance": lowrank.covariance_matrix,
    "precision": lowrank.precision_matrix,
    "scale_tril": lowrank.scale_tril,
    "variance": lowrank.variance,
    "as_full": MultivariateNormal(mu3, covariance_matrix=W @ W.T + torch.diag(D)).log_prob(pts),
}

loc23 = t64(0.0, 1.0, -1.0, 0.5, 0.2, 0.3).reshape(2, 3)
scale23 = t64(1.0, 0.5, 2.0, 0.3, 1.5, 0.8).reshape(2, 3)
diag = Independent(Normal(loc23, scale23), 1)
fixed_results["independent"] = {
    "log_prob": diag.log_prob(pts[:2]),
    "log_prob_broadcast": diag.log_prob(pts[:, None, :]),  # (4, 1, 3) against batch (2,)
    "entropy": diag.entropy(),
    "mean": diag.mean,
    "variance": diag.variance,
}
shapes["independent"] = (tuple(diag.batch_shape), tuple(diag.event_shape),
                         tuple(diag.log_prob(pts[:, None, :]).shape))

mix_logits = t64(0.2, -0.5, 1.0)
means = t64(-2.0, 0.0, 0.0, 1.5, 2.0, -1.0).reshape(3, 2)
stds = t64(0.5, 0.8, 1.0, 0.3, 0.6, 0.6).reshape(3, 2)
gmm = MixtureSameFamily(Categorical(logits=mix_logits), Independent(Normal(means, stds), 1))
gmm_1d = MixtureSameFamily(Categorical(logits=mix_logits), Normal(means[:, 0], stds[:, 0]))
fixed_results["mixture"] = {
    "log_prob": gmm.log_prob(pts[:, :2]),
    "mean": gmm.mean,
    "variance": gmm.variance,
    "cdf_1d": gmm_1d.cdf(t64(-2.5, -1.0, 0.0, 1.0, 3.0)),
    "log_prob_1d": gmm_1d.log_prob(t64(-2.5, -1.0, 0.0, 1.0, 3.0)),
    "by_hand": torch.logsumexp(
        torch.log_softmax(mix_logits, -1)
        + Independent(Normal(means, stds), 1).log_prob(pts[:, None, :2]), dim=-1),
}
shapes["mixture"] = (tuple(gmm.batch_shape), tuple(gmm.event_shape),
                     tuple(gmm_1d.batch_shape), tuple(gmm_1d.event_shape))

cat_logits = t64(1.0, 0.0, -1.0, 0.5, 0.5, 2.0, -3.0, 0.0).reshape(2, 4)
cat = Categorical(logits=cat_logits)
onehot = OneHotCategorical(probs=torch.softmax(cat_logits, -1))
support = cat.enumerate_support()  # (4, 2): each value against each batch entry
fixed_results["categorical"] = {
    "probs": cat.probs,
    "logits": cat.logits,  # normalised: logits - logsumexp
    "log_prob": cat.log_prob(torch.tensor([3, 0])),
    "log_prob_support": cat.log_prob(support),
    "entropy": cat.entropy(),
    "onehot_log_prob": onehot.log_prob(torch.eye(4, dtype=f64)[:, None, :]),
    "onehot_entropy": onehot.entropy(),
    "onehot_mean": onehot.mean,
    "onehot_variance": onehot.variance,
    "unnormalised_probs": Categorical(probs=t64(1.0, 3.0, 4.0)).probs,
}
shapes["categorical"] = (tuple(support.shape), tuple(cat.batch_shape), tuple(cat.event_shape),
                         tuple(onehot.event_shape),
                         tuple(onehot.enumerate_support(expand=False).shape))

relaxed = RelaxedOneHotCategorical(t64(0.5), logits=t64(0.3, -0.2, 1.1))
fixed_results["relaxed"] = relaxed.log_prob(t64(0.2, 0.1, 0.7, 0.6, 0.3, 0.1).reshape(2, 3))

bern = Bernoulli(logits=t64(-2.0, 0.0, 3.0))
beta = Beta(t64(0.5, 2.0, 5.0), t64(0.5, 3.0, 1.5))
gamma = Gamma(t64(0.8, 2.0, 9.0), t64(1.0, 0.5, 3.0))
dirichlet = Dirichlet(t64(0.5, 1.0, 2.0, 4.0, 4.0, 4.0).reshape(2, 3))
lognormal = LogNormal(t64(0.0, 0.5, -1.0), t64(1.0, 0.25, 0.5))
student = StudentT(t64(0.8, 1.5, 5.0), loc, scale)
poisson = Poisson(t64(0.5, 3.0, 12.0))
u3 = t64(0.1, 0.35, 0.9)
def summary(dist, value, **extra):
    """What VI code reads off a distribution: the log density, the moments, the entropy."""
    out = {"log_prob": dist.log_prob(value), "mean": dist.mean, "variance": dist.variance}
    try:
        out["entropy"] = dist.entropy()
    except NotImplementedError:  # (Poisson)
        pass
    return {**out, **extra}


fixed_results["bernoulli"] = summary(bern, t64(0.0, 1.0, 1.0), probs=bern.probs, probs_log_prob=(
    Bernoulli(probs=t64(0.1, 0.5, 0.95)).log_prob(t64(1.0, 0.0, 1.0))))
fixed_results["beta"] = summary(beta, u3, mode=beta.mode)
fixed_results["gamma"] = summary(gamma, t64(0.3, 4.0, 2.5), cdf=gamma.cdf(t64(0.3, 4.0, 2.5)))
fixed_results["dirichlet"] = summary(dirichlet, t64(0.2, 0.3, 0.5))
fixed_results["lognormal"] = summary(
    lognormal, t64(0.5, 1.6, 0.3), cdf=lognormal.cdf(t64(0.5, 1.6, 0.3)), icdf=lognormal.icdf(u3),
    as_transformed=TransformedDistribution(Normal(lognormal.loc, lognormal.scale), ExpTransform())
    .log_prob(t64(0.5, 1.6, 0.3)))
fixed_results["student"] = summary(student, x3)  # mean nan for df <= 1, variance inf for df <= 2
fixed_results["poisson"] = summary(poisson, t64(0.0, 2.0, 15.0))

# -------------------------------------------------------- transforms and constraints

logit_normal = TransformedDistribution(Normal(t64(0.2), t64(0.7)), [SigmoidTransform()])
affine = TransformedDistribution(Normal(t64(0.0), t64(1.0)), [AffineTransform(2.0, 3.0)])
squash = ComposeTransform([AffineTransform(0.5, 2.0), TanhTransform()])
squashed = TransformedDistribution(Normal(t64(0.0, 0.3), t64(1.0, 0.5)),
                                   [AffineTransform(0.5, 2.0), TanhTransform()])
raw = t64(-1.5, 0.0, 0.7)
fixed_results["transformed"] = {
    "logit_normal_log_prob": logit_normal.log_prob(u3),
    "logit_normal_cdf": logit_normal.cdf(u3),
    "logit_normal_icdf": logit_normal.icdf(u3),
    "affine_log_prob": affine.log_prob(x3),
    "affine_vs_normal": Normal(2.0, 3.0).log_prob(x3),
    "affine_cdf": affine.cdf(x3),
    "squash": squash(raw),
    "squash_inverse": squash.inv(squash(raw)),
    "squash_ladj": squash.log_abs_det_jacobian(raw, squash(raw)),
    "tanh_inverse_edges": TanhTransform().inv(t64(-1.0, 0.0, 1.0)),
    "squashed_log_prob": squashed.log_prob(t64(-0.3, 0.95).expand(3, 2)),
    "sigmoid_ladj": SigmoidTransform().log_abs_det_jacobian(raw, torch.sigmoid(raw)),
    "negative_affine_cdf": TransformedDistribution(
        Normal(t64(0.0), t64(1.0)), AffineTransform(1.0, -2.0)).cdf(x3),
}
reprs["transforms"] = [repr(t) for t in (ExpTransform(), SigmoidTransform(), TanhTransform(),
                                         AffineTransform(0.5, 2.0), squash, squash.inv)]
flags["transforms"] = {
    "tanh_sign": TanhTransform().sign == 1,
    "affine_sign": AffineTransform(0.0, -2.0).sign == -1,
    "bijective": squash.bijective,
    "inv_inv_is_self": squash.inv.inv is squash,
    "compose_event_dim": squash.event_dim,
    "exp_equal": ExpTransform() == ExpTransform(),
}

z_raw = t64(-2.0, 0.0, 1.5, 0.3)
positive = biject_to(constraints.positive)
interval = biject_to(constraints.interval(-1.0, 3.0))
greater = biject_to(constraints.greater_than(2.0))
stick = biject_to(constraints.simplex)
softmax_to = transform_to(constraints.simplex)
chol = transform_to(constraints.lower_cholesky)
raw33 = t64(0.3, 1.0, -2.0, -0.5, -1.2, 0.4, 0.8, 0.1, 0.6).reshape(3, 3)
fixed_results["bijections"] = {
    "positive": positive(z_raw),
    "positive_ladj": positive.log_abs_det_jacobian(z_raw, positive(z_raw)),
    "interval": interval(z_raw),
    "interval_inverse": interval.inv(t64(-0.5, 0.0, 2.5)),
    "interval_ladj": interval.log_abs_det_jacobian(z_raw, interval(z_raw)),
    "greater": greater(z_raw),
    "stick": stick(z_raw[:3]),
    "stick_inverse": stick.inv(stick(z_raw[:3])),
    "stick_ladj": stick.log_abs_det_jacobian(z_raw[:3], stick(z_raw[:3])),
    "softmax": softmax_to(z_raw),
    "lower_cholesky": chol(raw33),
    "lower_cholesky_inverse": chol.inv(chol(raw33)),
}
shapes["bijections"] = (tuple(stick(z_raw[:3]).shape), tuple(stick.inv(t64(0.25, 0.25, 0.5))
                                                              .shape))
reprs["bijections"] = [type(t).__name__ for t in (positive, interval, greater, stick,
                                                  softmax_to, chol)]
reprs["constraints"] = [repr(c) for c in (
    constraints.real, constraints.positive, constraints.unit_interval, constraints.simplex,
    constraints.interval(-1.0, 3.0), constraints.greater_than(2.0), constraints.lower_cholesky,
    constraints.independent(constraints.real, 1), Beta(2.0, 2.0).support,
    Gamma(2.0, 1.0).support, Poisson(2.0).support, Categorical(logits=raw).support)]
flags["constraints"] = {
    "positive": constraints.positive.check(z_raw).tolist(),
    "unit_interval": constraints.unit_interval.check(t64(-0.1, 0.0, 0.5, 1.0, 1.2)).tolist(),
    "simplex": constraints.simplex.check(t64(0.2, 0.3, 0.5, 0.5, 0.6, -0.1).reshape(2, 3))
    .tolist(),
    "lower_cholesky": [bool(constraints.lower_cholesky.check(m)) for m in (L, raw33)],
    "nonnegative_integer": constraints.nonnegative_integer.check(t64(0.0, 2.0, 2.5, -1.0))
    .tolist(),
    "event_dim": [constraints.real.event_dim, constraints.simplex.event_dim,
                  constraints.lower_cholesky.event_dim, constraints.real_vector.event_dim],
    "is_discrete": [constraints.nonnegative_integer.is_discrete, constraints.real.is_discrete],
}

reprs["distributions"] = [repr(d) for d in (Normal(0.0, 1.0), normal, mvn, diag, gmm, cat,
                                            bern, beta, logit_normal, student)]

# ------------------------------------------------ gradients of densities (recorded)


def leaf(*values):
    return torch.tensor(values, dtype=f64, requires_grad=True)


def grads_of(value, params):
    """d value / d params, as user code that checks its score functions writes it."""
    return [g.detach() for g in torch.autograd.grad(value, params)]


conc, rate = leaf(0.8, 2.0, 9.0), leaf(1.0, 0.5, 3.0)
df, t_loc, t_scale = leaf(0.8, 1.5, 5.0), leaf(0.5, -1.0, 2.0), leaf(1.0, 0.5, 2.0)
mu_p, tril_p = mu3.clone().requires_grad_(), L.clone().requires_grad_()
factor_p, diag_p = W.clone().requires_grad_(), D.clone().requires_grad_()
mix_p, means_p, stds_p = (t.clone().requires_grad_() for t in (mix_logits, means, stds))
n_loc, n_scale, temp_p = leaf(0.3), leaf(0.7), leaf(0.5)
ref_q = MultivariateNormal(t64(0.0, 0.2, -0.1), scale_tril=torch.diag(t64(1.2, 0.9, 1.1)))
full_p = MultivariateNormal(mu_p, scale_tril=tril_p)
lowrank_p = LowRankMultivariateNormal(mu_p, factor_p, diag_p)
density_grads = {
    # digamma/lgamma: the score functions of the Gamma family
    "gamma": grads_of((Gamma(conc, rate).log_prob(t64(0.3, 4.0, 2.5))
                       + Gamma(conc, rate).entropy()).sum(), [conc, rate]),
    "beta": grads_of((Beta(conc, rate).log_prob(u3) + Beta(conc, rate).entropy()).sum()
                     + kl_divergence(Beta(conc, rate), Beta(t64(1.0), t64(2.0))).sum(),
                     [conc, rate]),
    "dirichlet": grads_of(Dirichlet(conc).log_prob(t64(0.2, 0.3, 0.5)) + Dirichlet(conc).entropy()
                          + kl_divergence(Dirichlet(conc), Dirichlet(rate)), [conc, rate]),
    "student": grads_of((StudentT(df, t_loc, t_scale).log_prob(x3)
                         + StudentT(df, t_loc, t_scale).entropy()).sum(), [df, t_loc, t_scale]),
    "gamma_kl": grads_of(kl_divergence(Gamma(conc, rate), Gamma(t64(2.0), t64(1.0))).sum(),
                         [conc, rate]),
    # the Gaussian ones
    "mvn": grads_of(full_p.log_prob(pts).sum() + full_p.entropy() + kl_divergence(full_p, ref_q)
                    + kl_divergence(ref_q, full_p), [mu_p, tril_p]),
    "lowrank": grads_of(lowrank_p.log_prob(pts).sum() + lowrank_p.entropy()
                        + kl_divergence(lowrank_p, ref_q) + kl_divergence(ref_q, lowrank_p),
                        [mu_p, factor_p, diag_p]),
    "mixture": grads_of(MixtureSameFamily(Categorical(logits=mix_p), Independent(
        Normal(means_p, stds_p), 1)).log_prob(pts[:, :2]).sum(), [mix_p, means_p, stds_p]),
    "mixture_cdf": grads_of(MixtureSameFamily(Categorical(logits=mix_p), Normal(
        means_p[:, 0], stds_p[:, 0])).cdf(t64(-1.0, 0.5)).sum(), [mix_p, means_p, stds_p]),
    "squashed": grads_of(TransformedDistribution(Normal(n_loc, n_scale), [
        AffineTransform(0.5, 2.0), TanhTransform()]).log_prob(t64(-0.3, 0.5, 0.95)).sum(),
        [n_loc, n_scale]),
    "lognormal": grads_of((LogNormal(n_loc, n_scale).log_prob(t64(0.5, 1.6))
                           + LogNormal(n_loc, n_scale).entropy()).sum()
                          + kl_divergence(LogNormal(n_loc, n_scale), LogNormal(t64(0.0), t64(1.0))),
                          [n_loc, n_scale]),
    "normal_cdf_icdf": grads_of((Normal(n_loc, n_scale).cdf(t64(0.1, 1.0))
                                 + Normal(n_loc, n_scale).icdf(t64(0.1, 0.8))).sum(),
                                [n_loc, n_scale]),
    "relaxed": grads_of(RelaxedOneHotCategorical(temp_p, logits=mix_p).log_prob(
        t64(0.2, 0.1, 0.7)), [temp_p, mix_p]),
    "categorical": grads_of(Categorical(logits=mix_p).log_prob(torch.tensor([2, 0])).sum()
                            + Categorical(logits=mix_p).entropy(), [mix_p]),
    "poisson": grads_of(Poisson(conc).log_prob(t64(0.0, 2.0, 15.0)).sum()
                        + kl_divergence(Poisson(conc), Poisson(t64(2.0))).sum(), [conc]),
}
fixed_results["density_grads"] = density_grads
errors["igamma_grad"] = caught(
    lambda: Gamma(conc, rate).cdf(t64(0.3, 4.0, 2.5)).sum().backward())


# ----------------------------------------------------------- KL divergences (recorded)


class Kumaraswamy2(Distribution):
    """A Kumaraswamy(a, b) on (0, 1) written as a user would, with an inverse-CDF rsample."""

    arg_constraints = {"a": constraints.positive, "b": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, a, b, validate_args=None):
        self.a, self.b = torch.broadcast_tensors(a, b)
        super().__init__(self.a.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy2, _instance)
        new.a = self.a.expand(batch_shape)
        new.b = self.b.expand(batch_shape)
        super(Kumaraswamy2, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.a.dtype).clamp(1e-6, 1 - 1e-6)
        return (1 - (1 - u) ** (1 / self.b)) ** (1 / self.a)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.a, self.b
        return (torch.log(a) + torch.log(b) + (a - 1) * torch.log(value)
                + (b - 1) * torch.log1p(-value ** a))


@register_kl(Kumaraswamy2, Kumaraswamy2)
def _kl_kumaraswamy_mc(p, q):
    """Not closed form: a fixed quadrature on (0, 1) stands in for it."""
    grid = (torch.arange(1, 2000, dtype=p.a.dtype) / 2000).reshape((-1,) + (1,) * p.a.dim())
    lp, lq = p.log_prob(grid), q.log_prob(grid)
    return (lp.exp() * (lp - lq)).mean(0)


kum_p = Kumaraswamy2(t64(2.0, 1.0), t64(3.0, 1.0))
kum_q = Kumaraswamy2(t64(1.5, 2.0), t64(2.0, 2.0))
mvn_q = MultivariateNormal(t64(0.0, 0.2, -0.1), scale_tril=torch.diag(t64(1.2, 0.9, 1.1)))
kls = {
    "normal": kl_divergence(normal, Normal(t64(0.0), t64(1.0))),
    "mvn": kl_divergence(mvn, mvn_q),
    "mvn_batch": kl_divergence(mvn_batch, mvn_q),
    "lowrank_mvn": kl_divergence(lowrank, mvn_q),
    "mvn_lowrank": kl_divergence(mvn_q, lowrank),
    "lowrank_lowrank": kl_divergence(lowrank, LowRankMultivariateNormal(mu3, W * 0.5, D + 0.1)),
    "independent": kl_divergence(diag, Independent(Normal(torch.zeros_like(loc23), 1.0), 1)),
    "categorical": kl_divergence(cat, Categorical(logits=torch.zeros(4, dtype=f64))),
    "onehot": kl_divergence(onehot, OneHotCategorical(logits=cat_logits.flip(-1))),
    "bernoulli": kl_divergence(bern, Bernoulli(probs=t64(0.3, 0.3, 0.3))),
    "beta": kl_divergence(beta, Beta(t64(1.0), t64(1.0))),
    "gamma": kl_divergence(gamma, Gamma(t64(2.0), t64(1.0))),
    "dirichlet": kl_divergence(dirichlet, Dirichlet(torch.ones(3, dtype=f64))),
    "poisson": kl_divergence(poisson, Poisson(t64(2.0))),
    "lognormal": kl_divergence(lognormal, LogNormal(t64(0.0), t64(1.0))),
    "kumaraswamy": kl_divergence(kum_p, kum_q),
    "expanded": kl_divergence(Normal(t64(0.0), t64(1.0)).expand((2, 3)), normal),
}
fixed_results["kl"] = kls
errors["kl_missing"] = [
    caught(lambda: kl_divergence(student, normal)),
    caught(lambda: kl_divergence(gmm, Independent(Normal(torch.zeros(2, dtype=f64), 1.0), 1))),
    caught(lambda: kl_divergence(gamma, lognormal)),
]


def kl_or_monte_carlo(q, p, n=4000):
    """Closed form when registered, else the usual fallback E_q[log q - log p]."""
    try:
        return kl_divergence(q, p), True
    except NotImplementedError:
        z = q.rsample((n,))
        return (q.log_prob(z) - p.log_prob(z)).mean(0), False


torch.manual_seed(1)
mc_kls = {
    "student_normal": kl_or_monte_carlo(StudentT(t64(5.0), t64(0.0), t64(1.0)),
                                        Normal(t64(0.0), t64(1.2))),
    "normal_normal": kl_or_monte_carlo(normal, Normal(t64(0.0), t64(1.0))),
    "kumaraswamy_beta": kl_or_monte_carlo(kum_p, Beta(t64(2.0, 1.0), t64(3.0, 1.0))),
}
# the same MC estimate for a registered pair, to set against its closed form
torch.manual_seed(2)
z_mc = normal.rsample((4000,))
mc_normal = (normal.log_prob(z_mc) - Normal(t64(0.0), t64(1.0)).log_prob(z_mc)).mean(0)
fixed_results["mc_kl"] = {"student_normal": mc_kls["student_normal"][0], "normal": mc_normal,
                          "kumaraswamy_beta": mc_kls["kumaraswamy_beta"][0]}
flags["kl_closed_form"] = {k: v[1] for k, v in mc_kls.items()}
kum_expanded = kum_q.expand((3, 2))
shapes["custom"] = (tuple(kum_expanded.batch_shape), tuple(kum_expanded.rsample((4,)).shape),
                    tuple(kl_divergence(kum_expanded, kum_p).shape))
errors["custom"] = [caught(lambda: Kumaraswamy2(t64(1.0), t64(-1.0), validate_args=True)),
                    caught(lambda: Kumaraswamy2(t64(2.0), t64(2.0), validate_args=True)
                           .log_prob(t64(1.5))),
                    caught(lambda: kum_p.entropy())]

# -------------------------------------------------------- shapes, expand, rsample vs sample

torch.manual_seed(3)
expanded = normal.expand((4, 3))
ind_expanded = Independent(Normal(torch.zeros(4, 3), 1.0), 1).expand((5, 4))
mvn_expanded = mvn.expand((2,))
cat_expanded = Categorical(logits=torch.zeros(4)).expand((6,))
shapes["expand"] = {
    "normal": tuple(expanded.batch_shape),
    "normal_sample": tuple(expanded.sample((2,)).shape),
    "independent": (tuple(ind_expanded.batch_shape), tuple(ind_expanded.event_shape)),
    "independent_sample": tuple(ind_expanded.rsample((2, 1)).shape),
    "mvn": (tuple(mvn_expanded.batch_shape), tuple(mvn_expanded.rsample((3,)).shape)),
    "mvn_log_prob": tuple(mvn_expanded.log_prob(pts[:, None, :]).shape),
    "categorical": (tuple(cat_expanded.batch_shape), tuple(cat_expanded.sample((2,)).shape)),
    "scalar": (tuple(Normal(0.0, 1.0).batch_shape), tuple(Normal(0.0, 1.0).sample().shape)),
    "gmm_sample": tuple(gmm.sample((5,)).shape),
    "dirichlet_sample": tuple(dirichlet.sample((2,)).shape),
    "relaxed_rsample": tuple(relaxed.rsample((7,)).shape),
    "lowrank_sample": tuple(lowrank.rsample((2, 3)).shape),
    "poisson_sample": tuple(poisson.sample((4,)).shape),
    "squashed_sample": tuple(squashed.rsample((5,)).shape),
}
flags["expand"] = {
    "normal_loc_shared": expanded.loc.shape == (4, 3),
    "independent_reinterpreted": ind_expanded.reinterpreted_batch_ndims,
    "expanded_type": type(ind_expanded.base_dist).__name__,
}

param = torch.tensor([0.3, -0.2], requires_grad=True)
log_scale = torch.tensor([0.1, -0.5], requires_grad=True)
q_param = Normal(param, log_scale.exp())
flags["rsample"] = {
    "normal_rsample_grad": q_param.rsample().requires_grad,
    "normal_sample_grad": q_param.sample().requires_grad,
    "mvn": MultivariateNormal(param, scale_tril=torch.diag(log_scale.exp())).rsample()
    .requires_grad,
    "transformed": TransformedDistribution(q_param, TanhTransform()).rsample().requires_grad,
    "relaxed": RelaxedOneHotCategorical(torch.tensor(0.5), logits=param).rsample()
    .requires_grad,
    "beta": Beta(param.exp(), log_scale.exp()).rsample().requires_grad,
    "gamma": Gamma(param.exp(), 1.0).rsample().requires_grad,
    "dirichlet": Dirichlet(param.exp()).rsample().requires_grad,
    "onehot_sample": OneHotCategorical(logits=param).sample().requires_grad,
    "categorical_sample_dtype": str(Categorical(logits=param).sample().dtype),
    "bernoulli_sample_dtype": str(Bernoulli(logits=param).sample().dtype),
    "poisson_sample_dtype": str(poisson.sample().dtype),
    "has_rsample": [d.has_rsample for d in (normal, mvn, lowrank, diag, gmm, cat, onehot,
                                            relaxed, bern, beta, gamma, dirichlet, lognormal,
                                            student, poisson, squashed)],
    "has_enumerate_support": [d.has_enumerate_support for d in (cat, onehot, bern, poisson,
                                                                normal)],
}
errors["rsample"] = [caught(lambda: bern.rsample()), caught(lambda: cat.rsample()),
                     caught(lambda: poisson.rsample())]

# implicit reparameterisation: d E[X] / d concentration by the sample gradients
torch.manual_seed(4)
conc = torch.tensor([0.7, 3.0], dtype=f64, requires_grad=True)
g_samples = Gamma(conc, torch.ones(2, dtype=f64)).rsample((4000,))
(g_grad,) = torch.autograd.grad(g_samples.mean(0).sum(), conc)  # E[X] = conc: gradient 1
a_param = torch.tensor([2.0, 0.5], dtype=f64, requires_grad=True)
b_samples = Beta(a_param, torch.tensor([3.0, 0.5], dtype=f64)).rsample((4000,))
(b_grad,) = torch.autograd.grad(b_samples.mean(0).sum(), a_param)
dir_param = torch.tensor([1.0, 2.0, 3.0], dtype=f64, requires_grad=True)
d_samples = Dirichlet(dir_param).rsample((4000,))
(d_grad,) = torch.autograd.grad(d_samples.mean(0)[0], dir_param)
implicit = {"gamma": g_grad, "beta": b_grad, "dirichlet": d_grad}
# exact: dE[Beta]/da = b / (a + b)^2; dE[Dir_0]/dalpha = (delta - alpha_0 / s) / s
implicit_exact = {
    "gamma": torch.ones(2, dtype=f64),
    "beta": t64(3.0 / 25.0, 0.5 / 1.0),
    "dirichlet": (t64(1.0, 0.0, 0.0) - 1.0 / 6.0) / 6.0,
}
seeded = {"gamma_samples": g_samples[:5].detach(), "beta_samples": b_samples[:5].detach(),
          "dirichlet_samples": d_samples[:3].detach(), "implicit": implicit}

# --------------------------------------------------------- validate_args errors (recorded)

errors["validate"] = [
    caught(lambda: Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=True)),
    caught(lambda: Beta(2.0, 2.0, validate_args=True).log_prob(torch.tensor(1.5))),
    caught(lambda: Bernoulli(probs=0.3, validate_args=True).log_prob(torch.tensor(0.5))),
    caught(lambda: Categorical(probs=torch.tensor([0.5, -0.1, 0.6]))),
    caught(lambda: MultivariateNormal(torch.zeros(2))),
    caught(lambda: MultivariateNormal(torch.zeros(2), scale_tril=torch.tensor([[1.0, 1.0],
                                                                               [0.0, 1.0]]))),
    caught(lambda: Independent(Normal(torch.zeros(3), 1.0), 2)),
    caught(lambda: MixtureSameFamily(Categorical(logits=torch.zeros(3)),
                                     Normal(torch.zeros(4), 1.0))),
    caught(lambda: MixtureSameFamily(Normal(0.0, 1.0), Normal(torch.zeros(4), 1.0))),
    caught(lambda: Normal(0.0, 1.0).log_prob(0.5)),
    caught(lambda: Gamma(torch.tensor([1.0]), torch.tensor([0.0]))),
    caught(lambda: Dirichlet(torch.tensor([1.0, 2.0])).log_prob(torch.tensor([0.7, 0.7]))),
    caught(lambda: Poisson(torch.tensor(2.0)).log_prob(torch.tensor(1.5))),
    caught(lambda: Normal(0.0, 1.0, validate_args=True).icdf(torch.tensor(1.5))),
    caught(lambda: RelaxedOneHotCategorical(logits=torch.zeros(3))),
    caught(lambda: LowRankMultivariateNormal(torch.zeros(3), torch.zeros(2, 1), torch.ones(3))),
    caught(lambda: Beta(2.0, 2.0).cdf(torch.tensor(0.5))),
    caught(lambda: StudentT(3.0).cdf(torch.tensor(0.5))),
    caught(lambda: poisson.entropy()),
    caught(lambda: Normal(torch.zeros(3), 1.0).log_prob(torch.zeros(2))),
]
prior_default = Distribution._validate_args
Distribution.set_default_validate_args(False)
try:
    lenient = Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    lenient_log_prob = Beta(2.0, 2.0).log_prob(torch.tensor(1.5))
    flags["lenient"] = {"built": lenient.batch_shape == (1,),
                        "beta_outside_is_nan": bool(torch.isnan(lenient_log_prob))}
finally:
    Distribution.set_default_validate_args(prior_default)
flags["lenient"]["restored"] = Distribution._validate_args == prior_default
errors["set_default"] = caught(lambda: Distribution.set_default_validate_args("yes"))


# ------------------------------------------------------ VAE with a mixture-of-Gaussians prior

torch.manual_seed(0)
n_bits, latent, n_components = 12, 2, 3
prototypes = torch.tensor([[1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0],
                           [0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0, 0],
                           [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1]], dtype=torch.float32)
labels = torch.arange(96) % 3
flips = torch.bernoulli(torch.full((96, n_bits), 0.08))
data = (prototypes[labels] + flips) % 2


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_bits, 24), nn.Tanh())
        self.loc = nn.Linear(24, latent)
        self.scale = nn.Linear(24, latent)

    def forward(self, x):
        h = self.net(x)
        return Independent(Normal(self.loc(h), F.softplus(self.scale(h)) + 1e-4), 1)


class MixturePrior(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(k))
        self.means = nn.Parameter(torch.randn(k, d) * 1.5)
        self.log_scales = nn.Parameter(torch.zeros(k, d))

    def forward(self):
        components = Independent(Normal(self.means, self.log_scales.exp()), 1)
        return MixtureSameFamily(Categorical(logits=self.logits), components)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = nn.Sequential(nn.Linear(latent, 24), nn.Tanh(), nn.Linear(24, n_bits))
        self.prior = MixturePrior(n_components, latent)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.decoder(z)), 1)

    def elbo(self, x, n_samples=1, eps=None):
        q = self.encoder(x)
        if eps is None:
            z = q.rsample((n_samples,))
        else:  # a fixed noise, for comparisons that must not depend on the generator
            z = q.base_dist.loc + q.base_dist.scale * eps
        log_lik = self.likelihood(z).log_prob(x)
        kl = q.log_prob(z) - self.prior().log_prob(z)  # no closed form against a mixture
        return (log_lik - kl).mean(0), log_lik.mean(0), kl.mean(0)


vae = VAE()
fixed_eps = torch.sin(torch.arange(96 * latent, dtype=torch.float32) * 0.7).reshape(1, 96, latent)
elbo, log_lik, kl = vae.elbo(data, eps=fixed_eps)
loss = -elbo.mean()
loss.backward()
fixed32["vae"] = {
    "elbo": elbo[:8].detach(),
    "log_lik": log_lik[:8].detach(),
    "kl": kl[:8].detach(),
    "loss": loss.detach(),
    "grads": {name: p.grad.clone() for name, p in vae.named_parameters()},
    "prior_log_prob": vae.prior().log_prob(fixed_eps[0, :6]).detach(),
    "closed_form_kl": kl_divergence(vae.encoder(data[:6]), Independent(
        Normal(torch.zeros(latent), torch.ones(latent)), 1)).detach(),
}
vae.zero_grad()

optimizer = optim.Adam(vae.parameters(), lr=2e-2)
vae_losses = []
for _ in range(100):
    elbo, _, _ = vae.elbo(data)
    loss = -elbo.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    vae_losses.append(loss.item())

with torch.no_grad():
    final_elbo = vae.elbo(data, n_samples=16)[0].mean().item()
    q_final = vae.encoder(data)
    prior = vae.prior()
    codes = q_final.mean
    # the component each code falls in, by its responsibilities under the learned prior
    resp = torch.log_softmax(prior.mixture_distribution.logits, -1) \
        + prior.component_distribution.log_prob(codes[:, None, :])
    assigned = resp.argmax(-1)
    # the best matching of components to prototypes (3! permutations)
    purity = max(
        sum(int(((assigned == perm[c]) & (labels == c)).sum()) for c in range(3))
        for perm in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
    ) / 96
    recon = vae.likelihood(codes).mean
    recon_accuracy = ((recon > 0.5).float() == prototypes[labels]).float().mean().item()
    mix_weights = prior.mixture_distribution.probs
    # the codes of each prototype cluster: nearest class centroid
    centroids = torch.stack([codes[labels == c].mean(0) for c in range(3)])
    code_accuracy = (torch.cdist(codes, centroids).argmin(-1) == labels).float().mean().item()
    generated = vae.likelihood(prior.sample((64,))).mean  # decoded prior draws
    # MC KL to a standard normal against the closed form, on the trained encoder
    std_prior = Independent(Normal(torch.zeros(latent), torch.ones(latent)), 1)
    z_many = q_final.rsample((2000,))
    kl_mc_std = (q_final.log_prob(z_many) - std_prior.log_prob(z_many)).mean(0)
    kl_exact_std = kl_divergence(q_final, std_prior)


# ------------------------------------------ Bayesian linear regression, full-covariance posterior

torch.manual_seed(0)
N, P, noise_std, prior_precision = 40, 3, 0.3, 1.0
X = torch.randn(N, P, dtype=f64)
w_true = t64(1.0, -2.0, 0.5)
y = X @ w_true + noise_std * torch.randn(N, dtype=f64)

# the exact posterior and the log evidence
post_cov = torch.linalg.inv(prior_precision * torch.eye(P, dtype=f64) + X.T @ X / noise_std**2)
post_mean = post_cov @ X.T @ y / noise_std**2
exact_posterior = MultivariateNormal(post_mean, covariance_matrix=post_cov)
log_evidence = MultivariateNormal(
    torch.zeros(N, dtype=f64),
    covariance_matrix=X @ X.T / prior_precision + noise_std**2 * torch.eye(N, dtype=f64),
).log_prob(y)
weight_prior = MultivariateNormal(torch.zeros(P, dtype=f64),
                                  precision_matrix=prior_precision * torch.eye(P, dtype=f64))


def analytic_elbo(q):
    """E_q[log N(y | Xw, s^2)] in closed form, minus the closed-form KL to the prior."""
    resid = y - X @ q.loc
    trace = torch.einsum("np,pq,nq->", X, q.covariance_matrix, X)
    expected = (Normal(X @ q.loc, noise_std).log_prob(y).sum()
                - 0.5 * trace / noise_std**2)
    return expected - kl_divergence(q, weight_prior), resid


class FullCovPosterior(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(p, dtype=f64))
        # unconstrained: the strictly-lower part as is, the diagonal through exp (from 0.05)
        self.raw_tril = nn.Parameter(torch.diag(torch.full((p,), -3.0, dtype=f64)))
        self.to_tril = transform_to(constraints.lower_cholesky)

    def forward(self):
        return MultivariateNormal(self.loc, scale_tril=self.to_tril(self.raw_tril))


def mc_elbo(q, eps):
    w = q.loc + eps @ q.scale_tril.T  # (S, P): the reparameterisation by hand
    log_lik = Normal(w @ X.T, noise_std).log_prob(y).sum(-1)
    return log_lik.mean() - kl_divergence(q, weight_prior)


posterior = FullCovPosterior(P)
# antithetic fixed noise: the mean's gradient is then exact, whatever the noise
half = torch.cos(torch.arange(8 * P, dtype=f64) * 1.3).reshape(8, P)
eps_fixed = torch.cat([half, -half])
q0 = posterior()
fixed_mc = mc_elbo(q0, eps_fixed)
fixed_mc.backward()
blr_grad_loc_exact = X.T @ (y - X @ q0.loc.detach()) / noise_std**2 \
    - prior_precision * q0.loc.detach()
fixed_results["blr"] = {
    "mc_elbo": fixed_mc.detach(),
    "analytic_elbo": analytic_elbo(q0)[0].detach(),
    "grad_loc": posterior.loc.grad.clone(),
    "grad_raw_tril": posterior.raw_tril.grad.clone(),
    "log_evidence": log_evidence,
    "post_mean": post_mean,
    "kl_prior": kl_divergence(q0, weight_prior).detach(),
    "scale_tril": q0.scale_tril.detach(),
}
posterior.zero_grad()

torch.manual_seed(5)
blr_optimizer = optim.Adam(posterior.parameters(), lr=0.05)
blr_losses = []
for _ in range(100):
    q = posterior()
    w = q.rsample((8,))  # (8, P), reparameterised
    log_lik = Normal(w @ X.T, noise_std).log_prob(y).sum(-1).mean()
    loss = -(log_lik - kl_divergence(q, weight_prior))
    blr_optimizer.zero_grad()
    loss.backward()
    blr_optimizer.step()
    blr_losses.append(loss.item())

with torch.no_grad():
    q_blr = posterior()
    blr_kl_to_exact = kl_divergence(q_blr, exact_posterior).item()
    blr_elbo_gap = (log_evidence - analytic_elbo(q_blr)[0]).item()
    exact_gap = (log_evidence - analytic_elbo(exact_posterior)[0]).item()  # 0: exact is optimal
    blr_mean_error = (q_blr.loc - post_mean).abs().max().item()
    blr_std_ratio = (q_blr.variance / post_cov.diagonal()).sqrt()

# the same model with a rank-one-plus-diagonal posterior
lowrank_loc = torch.zeros(P, dtype=f64, requires_grad=True)
lowrank_factor = torch.full((P, 1), 0.05, dtype=f64, requires_grad=True)
lowrank_log_diag = torch.full((P,), -5.0, dtype=f64, requires_grad=True)
lowrank_optimizer = optim.Adam([lowrank_loc, lowrank_factor, lowrank_log_diag], lr=0.05)
lowrank_losses = []
for _ in range(50):
    q = LowRankMultivariateNormal(lowrank_loc, lowrank_factor, lowrank_log_diag.exp())
    w = q.rsample((8,))
    log_lik = Normal(w @ X.T, noise_std).log_prob(y).sum(-1).mean()
    loss = -(log_lik - kl_divergence(q, weight_prior))
    lowrank_optimizer.zero_grad()
    loss.backward()
    lowrank_optimizer.step()
    lowrank_losses.append(loss.item())
with torch.no_grad():
    q_lowrank = LowRankMultivariateNormal(lowrank_loc, lowrank_factor, lowrank_log_diag.exp())
    lowrank_kl_to_exact = kl_divergence(q_lowrank, exact_posterior).item()


# ---------------------------------------------------- squashed-Gaussian posterior on (-1, 1)

torch.manual_seed(0)
target = TransformedDistribution(Beta(torch.tensor(2.0), torch.tensor(5.0)),
                                 [AffineTransform(-1.0, 2.0)])  # on (-1, 1), mean -3/7


class SquashedGaussian(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Parameter(torch.tensor(0.0))
        self.log_std = nn.Parameter(torch.tensor(0.0))

    def forward(self):
        base = Normal(self.mu, self.log_std.exp())
        return TransformedDistribution(base, [TanhTransform(cache_size=1)])


flow = SquashedGaussian()
q_tanh = flow()
grid = torch.linspace(-0.95, 0.95, 5)
fixed32["tanh"] = {
    "log_prob": q_tanh.log_prob(grid).detach(),
    "target_log_prob": target.log_prob(grid),
    "cdf": q_tanh.cdf(grid).detach(),
    "icdf": q_tanh.icdf(torch.tensor([0.1, 0.5, 0.9])).detach(),
}
tanh_optimizer = optim.Adam(flow.parameters(), lr=0.05)
tanh_losses = []
for _ in range(100):
    q = flow()
    yq = q.rsample((64,))
    loss = (q.log_prob(yq) - target.log_prob(yq)).mean()  # reverse KL, by Monte Carlo
    tanh_optimizer.zero_grad()
    loss.backward()
    tanh_optimizer.step()
    tanh_losses.append(loss.item())
with torch.no_grad():
    q = flow()
    many = q.sample((4000,))
    tanh_mean = many.mean().item()
    tanh_final_kl = (q.log_prob(many) - target.log_prob(many)).mean().item()

# the cache keeps the pre-image: log_prob of a saturated sample stays finite with it
wide = Normal(torch.zeros(200), torch.full((200,), 10.0))
cached = TransformedDistribution(wide, [TanhTransform(cache_size=1)])
uncached = TransformedDistribution(wide, [TanhTransform()])
torch.manual_seed(6)
y_wide = cached.rsample()
saturated = int((y_wide.abs() == 1.0).sum())
cached_finite = bool(torch.isfinite(cached.log_prob(y_wide)).all())
uncached_finite = bool(torch.isfinite(uncached.log_prob(y_wide)).all())


# ------------------------------------------------- LogNormal posterior for a Poisson rate

counts = torch.tensor([3.0, 5.0, 4.0, 6.0, 2.0, 4.0, 5.0, 3.0])
rate_prior = Gamma(torch.tensor(2.0), torch.tensor(0.5))
exact_rate = Gamma(rate_prior.concentration + counts.sum(), rate_prior.rate + len(counts))
rate_mu = torch.tensor(0.0, requires_grad=True)
rate_log_s = torch.tensor(-1.0, requires_grad=True)
rate_optimizer = optim.Adam([rate_mu, rate_log_s], lr=0.05)
torch.manual_seed(7)
rate_losses = []
for _ in range(60):
    q_rate = LogNormal(rate_mu, rate_log_s.exp())
    lam = q_rate.rsample((32,))
    log_lik = Poisson(lam[:, None]).log_prob(counts).sum(-1)
    kl, closed = kl_or_monte_carlo(q_rate, rate_prior, n=32)
    loss = -(log_lik.mean() - kl)
    rate_optimizer.zero_grad()
    loss.backward()
    rate_optimizer.step()
    rate_losses.append(loss.item())
flags["rate_kl_closed_form"] = closed
with torch.no_grad():
    q_rate = LogNormal(rate_mu, rate_log_s.exp())
    rate_mean_error = abs(q_rate.mean.item() - exact_rate.mean.item())
    rate_std_ratio = (q_rate.stddev / exact_rate.stddev).item()


print(f"VAE loss {vae_losses[0]:.3f} -> {vae_losses[-1]:.3f}, purity {purity:.2f}")
print(f"BLR loss {blr_losses[0]:.2f} -> {blr_losses[-1]:.2f}, KL to exact {blr_kl_to_exact:.4f}")
print(f"tanh KL {tanh_losses[0]:.3f} -> {tanh_losses[-1]:.3f}, mean {tanh_mean:.3f}")
print(f"rate posterior mean error {rate_mean_error:.3f}, std ratio {rate_std_ratio:.3f}")
