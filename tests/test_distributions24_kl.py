"""kl_divergence for the pairs torch registers among the added distributions, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

_R = np.random.default_rng(2)


def _pos(lo=0.5, hi=3.0):
    return _R.uniform(lo, hi, (3,))


# family -> list of two parameter sets (p's and q's), each a tuple of arrays/numbers
PARAMS = {
    "Beta": [(_pos(), _pos()), (_pos(), _pos())],
    "Gamma": [(_pos(), _pos()), (_pos(), _pos())],
    "Dirichlet": [(_R.uniform(0.5, 3, (2, 3)),), (_R.uniform(0.5, 3, (2, 3)),)],
    "Pareto": [(_pos(), _pos(2.5, 4)), (_pos(0.1, 0.4), _pos())],
    "ContinuousBernoulli": [(_R.uniform(0.1, 0.9, 3),), (_R.uniform(0.1, 0.9, 3),)],
    "HalfNormal": [(_pos(),), (_pos(),)],
    "Binomial": [(5, _R.uniform(0.1, 0.9, 3)), (5, _R.uniform(0.1, 0.9, 3))],
    "Geometric": [(_R.uniform(0.1, 0.9, 3),), (_R.uniform(0.1, 0.9, 3),)],
    "Gumbel": [(_R.normal(size=3), _pos()), (_R.normal(size=3), _pos())],
    "Normal": [(_R.normal(size=3), _pos()), (_R.normal(size=3), _pos())],
    "Exponential": [(_pos(),), (_pos(),)],
    "Uniform": [(_pos(0.6, 1.0), _pos(1.5, 2.0)), (_pos(0.1, 0.5), _pos(2.0, 3.0))],
    "Laplace": [(_R.normal(size=3), _pos()), (_R.normal(size=3), _pos())],
    "Cauchy": [(_R.normal(size=3), _pos()), (_R.normal(size=3), _pos())],
    "Bernoulli": [(_R.uniform(0.1, 0.9, 3),), (_R.uniform(0.1, 0.9, 3),)],
    "Poisson": [(_pos(),), (_pos(),)],
    "LowRankMultivariateNormal": [
        (_R.normal(size=3), _R.normal(size=(3, 2)), _pos()),
        (_R.normal(size=3), _R.normal(size=(3, 2)), _pos())],
}


def _make(mod, name, which):
    conv = ((lambda a: jitgrad.tensor(a, dtype=jitgrad.float64)) if mod is jd
            else (lambda a: torch.tensor(a, dtype=torch.float64)))
    args = [conv(a) if isinstance(a, np.ndarray) else a for a in PARAMS[name][which]]
    return getattr(mod, name)(*args)


def _torch_pairs():
    from torch.distributions.kl import _KL_REGISTRY

    pairs = []
    for tp, tq in _KL_REGISTRY:
        if tp.__name__ in PARAMS and tq.__name__ in PARAMS:
            pairs.append((tp.__name__, tq.__name__))
    return sorted(pairs)


@pytest.mark.parametrize("p_name,q_name", _torch_pairs())
def test_kl_matches_torch(p_name, q_name):
    pt, qt = _make(td, p_name, 0), _make(td, q_name, 1)
    pj, qj = _make(jd, p_name, 0), _make(jd, q_name, 1)
    try:
        expected = td.kl_divergence(pt, qt)
    except (NotImplementedError, RuntimeError, ValueError):
        pytest.skip("torch has no value for these shapes")
    got = jd.kl_divergence(pj, qj)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-9,
                               atol=1e-10)


def test_kl_gradients_match_torch():
    a = [np.array([1.5, 2.0]), np.array([0.7, 3.0])]
    b = [np.array([2.5, 1.0]), np.array([1.7, 0.4])]
    pj = [jitgrad.tensor(x, dtype=jitgrad.float64, requires_grad=True) for x in a]
    pt = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in a]
    jd.kl_divergence(jd.Beta(*pj), jd.Gamma(*[jitgrad.tensor(x, dtype=jitgrad.float64)
                                              for x in b])).sum().backward()
    td.kl_divergence(td.Beta(*pt), td.Gamma(*[torch.tensor(x) for x in b])).sum().backward()
    for x, y in zip(pj, pt):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-7)


def test_kl_bregman_for_exponential_family():
    p = jd.Gamma(jitgrad.tensor([2.0], dtype=jitgrad.float64), jitgrad.tensor([1.5],
                 dtype=jitgrad.float64))
    q = jd.Gamma(jitgrad.tensor([3.0], dtype=jitgrad.float64), jitgrad.tensor([0.5],
                 dtype=jitgrad.float64))
    from jitgrad.distributions.kl_more import _kl_expfamily_expfamily

    np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(),
                               jd.kl_divergence(p, q).numpy(), rtol=1e-10)


def test_lognormal_kl_matches_torch():
    a, b, c, d = _R.normal(size=3), _pos(), _R.normal(size=3), _pos()
    got = jd.kl_divergence(jd.LogNormal(jitgrad.tensor(a), jitgrad.tensor(b)),
                           jd.LogNormal(jitgrad.tensor(c), jitgrad.tensor(d)))
    want = td.kl_divergence(td.LogNormal(torch.tensor(a), torch.tensor(b)),
                            td.LogNormal(torch.tensor(c), torch.tensor(d)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)


def test_transformed_kl_and_monte_carlo_sanity():
    jitgrad.manual_seed(0)
    p = jd.HalfNormal(jitgrad.tensor([1.0], dtype=jitgrad.float64))
    q = jd.HalfNormal(jitgrad.tensor([2.0], dtype=jitgrad.float64))
    x = p.sample((100000,))
    mc = (p.log_prob(x) - q.log_prob(x)).mean(0)
    np.testing.assert_allclose(mc.numpy(), jd.kl_divergence(p, q).numpy(), rtol=0.05)
