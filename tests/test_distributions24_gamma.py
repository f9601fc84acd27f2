"""Gamma-family sampling: the implicit reparameterized gradient of standard-gamma samples,
sample moments of the new distributions, and pathwise (rsample) gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd
from jitgrad.distributions._standard_gamma import _standard_gamma, standard_gamma_grad


def _j(a):
    return jitgrad.tensor(np.asarray(a, dtype=np.float64), dtype=jitgrad.float64)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 3.0, 7.9, 8.5, 50.0, 1000.0, 9000.0, 2e4, 1e6])
def test_standard_gamma_grad_vs_cdf_finite_differences(alpha):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    a = torch.full((400,), alpha, dtype=torch.float64)
    x = torch._standard_gamma(a)
    h = 1e-6 * max(1.0, alpha)

    def cdf(aa):
        return torch.special.gammainc(torch.full_like(x, aa), x).numpy()

    pdf = torch.distributions.Gamma(a, 1.0).log_prob(x).exp().numpy()
    ok = pdf > 1e-100
    fd = -(cdf(alpha + h) - cdf(alpha - h)) / (2 * h) / pdf
    got = standard_gamma_grad(a.numpy(), x.numpy())
    # (above alpha = 1e4 the Wilson-Hilferty form is used: about 1e-6 relative at 1e6)
    np.testing.assert_allclose(got[ok], fd[ok], rtol=2e-5 if alpha < 1e4 else 1e-4, atol=1e-8)
    # torch's _standard_gamma_grad is an approximation, within about 1e-3 of the exact value
    np.testing.assert_allclose(got, torch._standard_gamma_grad(a, x).numpy(), rtol=3e-3,
                               atol=1e-6)


def test_standard_gamma_grad_exponential_closed_form():
    # at alpha = 1, -dP/dalpha / p = int_0^inf e^-s (log(x + s) - digamma(1)) ds
    #                             = log x + e^x E1(x) + euler_gamma  (both series and tail)
    x = np.array([0.01, 0.3, 1.0, 4.0, 8.0, 20.0, 60.0])
    s = np.concatenate([[0.0], np.logspace(-14, 2.5, 400001)])
    ex_e1 = np.array([np.trapezoid(np.exp(-s) / (xi + s), s) for xi in x])
    expected = np.log(x) + ex_e1 + 0.5772156649015329
    np.testing.assert_allclose(standard_gamma_grad(np.ones_like(x), x), expected, rtol=1e-6)


def test_standard_gamma_autograd_uses_the_implicit_gradient():
    jitgrad.manual_seed(3)
    alpha = _j([0.7, 2.0, 9.0]).requires_grad_(True)
    x = _standard_gamma(alpha)
    assert x.dtype == jitgrad.float64 and bool((x > 0).all())
    x.sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy(),
                               standard_gamma_grad(alpha.detach().numpy(), x.detach().numpy()))


def _moments_ok(samples, mean, var, n_se=5.0):
    s = samples.detach().numpy()
    n = s.shape[0]
    mean, var = np.asarray(mean.detach().numpy()), np.asarray(var.detach().numpy())
    se = np.sqrt(var / n)
    assert np.all(np.abs(s.mean(0) - mean) < n_se * se), (s.mean(0), mean, se)
    # the variance's standard error, from the fourth moment estimate
    m4 = ((s - s.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var**2, 1e-300) / n)
    assert np.all(np.abs(s.var(0) - var) < n_se * se_var + 1e-12), (s.var(0), var)


@pytest.mark.parametrize("name,args", [
    ("Gamma", ([0.3, 2.0, 15.0], [1.0, 0.5, 3.0])),
    ("Chi2", ([1.0, 4.0, 10.0],)),
    ("Beta", ([0.5, 2.0, 5.0], [1.5, 0.7, 5.0])),
    ("Dirichlet", ([0.5, 2.0, 5.0],)),
    ("InverseGamma", ([5.0, 6.0, 9.0], [1.0, 2.0, 0.5])),
    ("StudentT", ([5.0, 8.0, 30.0], [0.0, 1.0, -2.0], [1.0, 2.0, 0.5])),
    ("FisherSnedecor", ([5.0, 8.0, 20.0], [9.0, 12.0, 30.0])),
    ("HalfNormal", ([0.5, 1.0, 3.0],)),
    ("Weibull", ([1.0, 2.0, 0.5], [0.8, 2.0, 4.0])),
    ("Pareto", ([1.0, 2.0, 0.5], [5.0, 6.0, 9.0])),
    ("Kumaraswamy", ([0.5, 2.0, 5.0], [1.5, 0.7, 5.0])),
    ("NegativeBinomial", ([2.0, 5.0, 10.0], [0.3, 0.5, 0.7])),
    ("ContinuousBernoulli", ([0.2, 0.5, 0.8],)),
    ("GeneralizedPareto", ([0.0, 1.0, -1.0], [1.0, 2.0, 0.5], [0.1, -0.2, 0.0])),
])
def test_sample_moments(name, args):
    jitgrad.manual_seed(11)
    d = getattr(jd, name)(*[_j(a) for a in args])
    s = d.sample((40000,))
    assert tuple(s.shape) == (40000, 3)
    assert bool(d.support.check(s).all())
    _moments_ok(s, d.mean, d.variance)


def test_von_mises_circular_moments():
    jitgrad.manual_seed(4)
    loc = np.array([0.0, 1.0, -2.0])
    d = jd.VonMises(_j(loc), _j([0.5, 2.0, 8.0]))
    s = d.sample((40000,)).numpy()
    assert np.all(np.abs(s) <= math.pi)
    # E[cos(X - loc)] = I1/I0 = 1 - variance (torch's circular variance); E[sin(X - loc)] = 0
    c, sn = np.cos(s - loc), np.sin(s - loc)
    se = np.sqrt(c.var(0) / 40000)
    assert np.all(np.abs(c.mean(0) - (1 - d.variance.numpy())) < 5 * se)
    assert np.all(np.abs(sn.mean(0)) < 5 * np.sqrt(sn.var(0) / 40000))


def test_multinomial_and_wishart_sample_means():
    jitgrad.manual_seed(5)
    m = jd.Multinomial(10, _j([0.2, 0.3, 0.5]))
    s = m.sample((20000,))
    assert bool((s.sum(-1) == 10).all())
    _moments_ok(s, m.mean, m.variance)
    cov = _j([[2.0, 0.5], [0.5, 1.0]])
    w = jd.Wishart(_j(6.0), covariance_matrix=cov)
    sw = w.sample((20000,)).reshape(20000, 4)
    _moments_ok(sw, w.mean.reshape(4), w.variance.reshape(4))


def test_lkj_cholesky_samples_are_correlation_factors():
    jitgrad.manual_seed(2)
    d = jd.LKJCholesky(4, _j(2.0))
    s = d.sample((500,))
    corr = (s @ s.mT).numpy()
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-10)
    # E[r_ij] = 0; var(r_ij) = 1 / (2 eta + d - 1) for the LKJ(eta) marginal Beta
    off = corr[:, 1, 0]
    assert abs(off.mean()) < 5 * math.sqrt(1 / 8 / 500)
    assert bool(jd.constraints.corr_cholesky.check(s).all())


@pytest.mark.parametrize("name,args,mean_grad", [
    # d E[X] / d param, analytically: Gamma mean alpha/rate, Beta alpha/(alpha+beta)
    ("Gamma", ([0.4, 3.0], [2.0, 0.5]), lambda a, b: (1 / b, -a / b**2)),
    ("Beta", ([0.6, 3.0], [2.0, 1.5]),
     lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
])
def test_rsample_gradient_monte_carlo(name, args, mean_grad):
    jitgrad.manual_seed(7)
    params = [_j(a).requires_grad_(True) for a in args]
    d = getattr(jd, name)(*params)
    n = 200000
    s = d.rsample((n,))
    s.mean(0).sum().backward()
    expected = mean_grad(*[np.asarray(a) for a in args])
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=0.03)


def test_dirichlet_rsample_gradient_monte_carlo():
    jitgrad.manual_seed(9)
    alpha = _j([0.5, 1.0, 4.0]).requires_grad_(True)
    s = jd.Dirichlet(alpha).rsample((200000,))
    assert np.allclose(s.sum(-1).detach().numpy(), 1.0)
    s[:, 0].mean().backward()
    a = np.array([0.5, 1.0, 4.0])
    a0 = a.sum()
    expected = -a[0] / a0**2 * np.ones(3)
    expected[0] += 1 / a0
    np.testing.assert_allclose(alpha.grad.numpy(), expected, rtol=0.05, atol=2e-3)


def test_rsample_gradient_matches_torch_on_the_same_samples():
    torch = pytest.importorskip("torch")
    # Gamma(alpha, rate).rsample = X / rate with X standard gamma: for the same X, the gradient
    # w.r.t. alpha is dX/dalpha / rate, which torch computes with its approximation
    alpha, rate = np.array([0.5, 2.0, 20.0]), np.array([1.5, 0.5, 2.0])
    jitgrad.manual_seed(1)
    a = _j(alpha).requires_grad_(True)
    x = jd.Gamma(a, _j(rate)).rsample()
    x.sum().backward()
    xs = x.detach().numpy() * rate
    tg = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(xs)).numpy() / rate
    np.testing.assert_allclose(a.grad.numpy(), tg, rtol=3e-3)


def test_gamma_cdf_and_its_gradient_match_torch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    conc, rate, x = [0.5, 2.0, 7.5], [1.0, 0.5, 3.0], [0.3, 2.0, 2.4]
    jrate = jitgrad.tensor(rate, dtype=jitgrad.float64, requires_grad=True)
    trate = torch.tensor(rate, dtype=torch.float64, requires_grad=True)
    d = jd.Gamma(_j(conc), jrate)
    t = td.Gamma(torch.tensor(conc, dtype=torch.float64), trate)
    a, b = d.cdf(_j(x)), t.cdf(torch.tensor(x, dtype=torch.float64))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(jrate.grad.numpy(), trate.grad.numpy(), rtol=1e-8)


@pytest.mark.parametrize("name,args", [
    ("Chi2", ([3.0, 7.0],)),
    ("InverseGamma", ([6.0, 9.0], [2.0, 0.5])),
    ("StudentT", ([8.0, 12.0], [0.5, -1.0], [1.5, 0.7])),
    ("FisherSnedecor", ([6.0, 10.0], [12.0, 20.0])),
    ("Weibull", ([1.5, 0.7], [2.0, 3.0])),
    ("Pareto", ([1.5, 0.7], [6.0, 8.0])),
    ("Kumaraswamy", ([2.0, 0.8], [1.5, 3.0])),
    ("HalfNormal", ([0.8, 2.0],)),
    ("LowRankMultivariateNormal", ([0.5, -1.0], [[1.0], [0.5]], [0.5, 2.0])),
])
def test_rsample_gradient_matches_the_analytic_mean_gradient(name, args):
    # the pathwise gradient of the sample mean is an unbiased estimate of d mean / d params
    jitgrad.manual_seed(13)
    params = [_j(a).requires_grad_(True) for a in args]
    d = getattr(jd, name)(*params)
    n = 200000
    d.rsample((n,)).mean(0).sum().backward()
    mc = [p.grad.numpy().copy() for p in params]
    fresh = getattr(jd, name)(*params)  # (d's graph from the parameters was used up)
    exact = jitgrad.autograd.grad(fresh.mean.sum(), params, allow_unused=True)
    for g_mc, g in zip(mc, exact):
        g = np.zeros_like(g_mc) if g is None else g.numpy()
        np.testing.assert_allclose(g_mc, g, rtol=0.05, atol=0.01)


def test_relaxed_samples_keep_the_discrete_probabilities():
    # P(RelaxedBernoulli > 1/2) = probs and argmax of a RelaxedOneHotCategorical sample is
    # Categorical(probs) at every temperature (logistic / Gumbel-max tricks)
    jitgrad.manual_seed(21)
    n = 40000
    probs = np.array([0.2, 0.5, 0.9])
    s = jd.RelaxedBernoulli(_j(0.7), _j(probs)).sample((n,)).numpy()
    assert np.all((s > 0) & (s < 1))
    frac = (s > 0.5).mean(0)
    assert np.all(np.abs(frac - probs) < 5 * np.sqrt(probs * (1 - probs) / n))
    p = np.array([0.1, 0.3, 0.6])
    oh = jd.RelaxedOneHotCategorical(_j(2.0), _j(p)).sample((n,)).numpy()
    np.testing.assert_allclose(oh.sum(-1), 1.0, rtol=1e-12)
    counts = np.bincount(oh.argmax(-1), minlength=3) / n
    assert np.all(np.abs(counts - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_logistic_normal_and_low_rank_normal_samples():
    jitgrad.manual_seed(22)
    n = 40000
    loc, scale = np.array([0.3, -0.5]), np.array([0.8, 1.5])
    d = jd.LogisticNormal(_j(loc), _j(scale))
    y = d.sample((n,))
    assert tuple(y.shape) == (n, 3) and bool(jd.constraints.simplex.check(y).all())
    # the base normal's draws come back through the inverse stick-breaking transform
    x = jd.transforms.StickBreakingTransform().inv(y)
    _moments_ok(x, _j(loc), _j(scale**2))
    w = np.array([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0]])
    diag = np.array([0.5, 1.0, 0.3])
    lr = jd.LowRankMultivariateNormal(_j([0.0, 1.0, -1.0]), _j(w), _j(diag))
    s = lr.sample((n,))
    _moments_ok(s, lr.mean, lr.variance)
    cov = np.cov(s.numpy().T)
    np.testing.assert_allclose(cov, w @ w.T + np.diag(diag), atol=0.1)
