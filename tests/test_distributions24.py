"""The distributions added from torch 2.13 (Gamma family, transformed ones, multivariate ones):
values, moments, entropies and log_prob gradients against torch with identical parameters."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

_R = np.random.default_rng(0)
POS = _R.uniform(0.5, 3, (3,))
POS2 = _R.uniform(0.5, 3, (3,))
UN = _R.uniform(0.1, 0.9, (3,))
RE = _R.normal(size=(3,))
SIMP = _R.dirichlet([1.0, 1.0, 1.0], size=2)
_L = np.tril(_R.normal(size=(3, 3))) + 3 * np.eye(3)
COV = _L @ _L.T
CORR_CHOL = np.linalg.cholesky(np.corrcoef(_R.normal(size=(3, 10))))

# name -> (constructor args, a value in the support)
CASES = {
    "HalfNormal": ((POS,), POS2),
    "HalfCauchy": ((POS,), POS2),
    "Weibull": ((POS, POS2), UN + 0.3),
    "Pareto": ((POS, POS2), POS + POS2),
    "Kumaraswamy": ((POS, POS2), UN),
    "LogisticNormal": ((RE[:2], POS[:2]), SIMP[0]),
    "RelaxedBernoulli": ((np.array(0.7), UN), UN),
    "RelaxedOneHotCategorical": ((np.array(0.7), SIMP[0]), SIMP[1]),
    "GeneralizedPareto": ((RE, POS, UN - 0.5), POS),
    "Gamma": ((POS, POS2), UN + 0.5),
    "Chi2": ((POS,), UN + 0.5),
    "Beta": ((POS, POS2), UN),
    "Dirichlet": ((POS,), SIMP),
    "InverseGamma": ((POS, POS2), UN + 0.5),
    "StudentT": ((POS + 2, RE, POS2), RE),
    "FisherSnedecor": ((POS + 4, POS2 + 4), POS),
    "Multinomial": ((5, SIMP[0]), np.array([2.0, 1.0, 2.0])),
    "NegativeBinomial": ((POS, UN), np.array([0.0, 3.0, 5.0])),
    "VonMises": ((RE, POS), RE),
    "ContinuousBernoulli": ((UN,), UN),
    "LowRankMultivariateNormal": ((RE, _R.normal(size=(3, 2)), POS), POS2),
    "Wishart": ((5.0, COV), COV),
    "LKJCholesky": ((3, 1.5), CORR_CHOL),
}

# torch's GeneralizedPareto compares float64 parameters with a float32 zero in log_prob/cdf
TORCH_FAILS = {("GeneralizedPareto", "log_prob"), ("GeneralizedPareto", "cdf")}


def _j(a):
    return jitgrad.tensor(np.asarray(a), dtype=jitgrad.float64) if isinstance(a, np.ndarray) else a


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64) if isinstance(a, np.ndarray) else a


def _pair(name):
    args, value = CASES[name]
    return getattr(jd, name)(*map(_j, args)), getattr(td, name)(*map(_t, args)), value


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name):
    dj, dt, value = _pair(name)
    assert tuple(dj.batch_shape) == tuple(dt.batch_shape)
    assert tuple(dj.event_shape) == tuple(dt.event_shape)
    assert dj.has_rsample == dt.has_rsample
    checked = 0
    for attr in ["mean", "variance", "mode"]:
        try:
            b = getattr(dt, attr)
        except NotImplementedError:
            continue
        _close(getattr(dj, attr), b)
        checked += 1
    for method, arg in [("log_prob", value), ("cdf", value), ("icdf", UN), ("entropy", None)]:
        if (name, method) in TORCH_FAILS:
            continue
        try:
            b = getattr(dt, method)(*([] if arg is None else [_t(arg)]))
        except NotImplementedError:
            continue
        a = getattr(dj, method)(*([] if arg is None else [_j(arg)]))
        _close(a, b)
        checked += 1
    assert checked >= 1


def test_generalized_pareto_log_prob_closed_form():
    dj, _, value = _pair("GeneralizedPareto")
    loc, scale, conc = RE, POS, UN - 0.5
    z = (value - loc) / scale
    expected = -np.log(scale) - (1 / conc + 1) * np.log1p(conc * z)
    np.testing.assert_allclose(dj.log_prob(_j(value)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(dj.cdf(_j(value)).numpy(), 1 - (1 + conc * z) ** (-1 / conc),
                               rtol=1e-12)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "StudentT", "Kumaraswamy",
                                  "Weibull", "InverseGamma", "FisherSnedecor", "VonMises",
                                  "NegativeBinomial", "LowRankMultivariateNormal", "Wishart",
                                  "ContinuousBernoulli", "HalfNormal", "Pareto"])
def test_log_prob_gradients_match_torch(name):
    args, value = CASES[name]
    jargs = [_j(a) for a in args]
    targs = [_t(a) for a in args]
    for a in jargs:
        if jitgrad.is_tensor(a):
            a.requires_grad_(True)
    for a in targs:
        if torch.is_tensor(a):
            a.requires_grad_(True)
    getattr(jd, name)(*jargs).log_prob(_j(value)).sum().backward()
    getattr(td, name)(*targs).log_prob(_t(value)).sum().backward()
    for a, b in zip(jargs, targs):
        if jitgrad.is_tensor(a):
            _close(a.grad, b.grad, 1e-8)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "StudentT", "Weibull", "Pareto"])
def test_log_prob_gradcheck(name):
    args, value = CASES[name]
    jargs = [_j(a).requires_grad_(True) for a in args]

    def fn(*params):
        return getattr(jd, name)(*params).log_prob(_j(value))

    assert jitgrad.autograd.gradcheck(fn, tuple(jargs))


def test_validate_args_errors():
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        jd.Gamma(jitgrad.tensor([-1.0]), jitgrad.tensor([1.0]), validate_args=True)
    with pytest.raises(ValueError, match="Expected value argument"):
        jd.Beta(jitgrad.tensor([1.0]), jitgrad.tensor([2.0]), validate_args=True).log_prob(
            jitgrad.tensor([1.5]))
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        jd.Dirichlet(jitgrad.tensor(1.0))


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "StudentT", "HalfNormal",
                                  "Weibull", "Multinomial", "LowRankMultivariateNormal",
                                  "RelaxedBernoulli", "VonMises"])
def test_expand(name):
    dj, dt, _ = _pair(name)
    shape = (2,) + tuple(dj.batch_shape)
    ej, et = dj.expand(shape), dt.expand(shape)
    assert type(ej) is type(dj)
    assert tuple(ej.batch_shape) == tuple(et.batch_shape) == shape
    assert tuple(ej.sample().shape) == tuple(et.sample().shape)


def test_submodules_expose_the_classes():
    import jitgrad.distributions.gamma as g
    import jitgrad.distributions.normal as n
    import jitgrad.distributions.studentT as st  # noqa: N813

    assert g.Gamma is jd.Gamma and n.Normal is jd.Normal and st.StudentT is jd.StudentT
    assert issubclass(jd.Chi2, jd.Gamma) and issubclass(jd.Gamma, jd.ExponentialFamily)


def test_exponential_family_bregman_entropy():
    dj, dt, _ = _pair("Gamma")  # (the families torch gives a _mean_carrier_measure)
    _close(jd.ExponentialFamily.entropy(dj), dj.entropy(), 1e-10)
    _close(jd.ExponentialFamily.entropy(dj), td.ExponentialFamily.entropy(dt), 1e-10)


def test_mixture_same_family_matches_torch():
    logits = _R.normal(size=(2, 3))
    locs, scales = _R.normal(size=(2, 3)), _R.uniform(0.5, 2, (2, 3))
    mj = jd.MixtureSameFamily(jd.Categorical(logits=_j(logits)), jd.Normal(_j(locs), _j(scales)))
    mt = td.MixtureSameFamily(td.Categorical(logits=_t(logits)), td.Normal(_t(locs), _t(scales)))
    x = _R.normal(size=(4, 2))
    _close(mj.log_prob(_j(x)), mt.log_prob(_t(x)))
    _close(mj.cdf(_j(x)), mt.cdf(_t(x)))
    _close(mj.mean, mt.mean)
    _close(mj.variance, mt.variance)
    assert tuple(mj.sample((5,)).shape) == (5, 2)


def test_one_hot_straight_through_gradient():
    logits = jitgrad.tensor([0.3, -0.2, 1.0], dtype=jitgrad.float64, requires_grad=True)
    d = jd.OneHotCategoricalStraightThrough(logits=logits)
    s = d.rsample((7,))
    assert bool(((s == 0) | (s == 1)).all()) and bool((s.sum(-1) == 1).all())
    w = jitgrad.tensor([1.0, 2.0, 3.0], dtype=jitgrad.float64)
    (s * w).sum().backward()
    lt = torch.tensor([0.3, -0.2, 1.0], dtype=torch.float64, requires_grad=True)
    (7 * (torch.softmax(lt, -1) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))).sum(
    ).backward()
    _close(logits.grad, lt.grad)


def test_kl_through_registered_pairs_still_works():
    p = jd.Normal(jitgrad.tensor([0.0]), jitgrad.tensor([1.0]))
    q = jd.Normal(jitgrad.tensor([1.0]), jitgrad.tensor([2.0]))
    assert float(jd.kl_divergence(p, q)) > 0


@pytest.mark.parametrize("name", ["Gamma", "Beta", "StudentT", "HalfNormal", "Kumaraswamy",
                                  "Weibull", "InverseGamma", "FisherSnedecor"])
def test_log_prob_under_jit(name):
    # (validate_args reads values, so under jit it is off, and passed on to inner distributions)
    args, value = CASES[name]

    def f(*params):
        return getattr(jd, name)(*params, validate_args=False).log_prob(_j(value)).sum()

    params = [_j(a).requires_grad_(True) for a in args]
    out = jitgrad.jit(f)(*params)
    grads = jitgrad.autograd.grad(out, params)
    want = jitgrad.autograd.grad(f(*params), params)
    np.testing.assert_allclose(out.item(), f(*params).item(), rtol=1e-12)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_constraints_match_torch(name):
    dj, dt, _ = _pair(name)
    assert set(dj.arg_constraints) == set(dt.arg_constraints)
    assert repr(dj.support).replace("jitgrad.", "torch.") == repr(dt.support)
    assert dj.support.event_dim == dt.support.event_dim
    assert dj.support.is_discrete == dt.support.is_discrete
