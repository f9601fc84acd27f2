"""distributions.transforms, constraint_registry and TransformedDistribution against torch."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd
from jitgrad.distributions import constraints, transforms as jt

torch = pytest.importorskip("torch")
td = torch.distributions
tt = torch.distributions.transforms

_R = np.random.default_rng(1)


def _j(a):
    return jitgrad.tensor(np.asarray(a), dtype=jitgrad.float64)


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol,
                               atol=tol)


def _build(mod, name):
    """The same transform from ``mod`` (jitgrad's or torch's transforms module)."""
    conv = _j if mod is jt else _t
    loc, scale = conv([0.5, -1.0, 2.0]), conv([2.0, 0.5, -3.0])
    if name == "Affine":
        return mod.AffineTransform(loc, scale)
    if name == "AffineScalar":
        return mod.AffineTransform(1.5, -2.0)
    if name == "Power":
        return mod.PowerTransform(conv([2.0, 0.5, 3.0]))
    if name == "Compose":
        return mod.ComposeTransform([mod.AffineTransform(loc, scale), mod.ExpTransform()])
    if name == "Independent":
        return mod.IndependentTransform(mod.SigmoidTransform(), 1)
    if name == "Reshape":
        return mod.ReshapeTransform((3,), (3, 1))
    if name == "Cat":
        return mod.CatTransform([mod.ExpTransform(), mod.AffineTransform(1.0, 2.0)], dim=-1,
                                lengths=[2, 1])
    if name == "Stack":
        return mod.StackTransform([mod.ExpTransform(), mod.TanhTransform(),
                                   mod.SigmoidTransform()], dim=-1)
    if name == "CumulativeDistribution":
        dist = (jd if mod is jt else td).Normal(conv([0.0]), conv([2.0]))
        return mod.CumulativeDistributionTransform(dist)
    if name == "Identity":
        return mod.identity_transform
    return getattr(mod, name + "Transform")()


# name -> domain sample (in the transform's domain)
CASES = {
    "Exp": _R.normal(size=(2, 3)),
    "Sigmoid": _R.normal(size=(2, 3)),
    "Tanh": _R.normal(size=(2, 3)),
    "Softplus": _R.normal(size=(2, 3)),
    "Affine": _R.normal(size=(2, 3)),
    "AffineScalar": _R.normal(size=(2, 3)),
    "Power": _R.uniform(0.5, 2, (2, 3)),
    "Compose": _R.normal(size=(2, 3)),
    "Independent": _R.normal(size=(2, 3)),
    "Reshape": _R.normal(size=(2, 3)),
    "StickBreaking": _R.normal(size=(2, 3)),
    "Softmax": _R.normal(size=(2, 3)),
    "LowerCholesky": _R.normal(size=(2, 3, 3)),
    "PositiveDefinite": _R.normal(size=(2, 3, 3)),
    "CorrCholesky": _R.normal(size=(2, 6)),
    "Cat": _R.normal(size=(2, 3)),
    "Stack": _R.normal(size=(2, 3)),
    "CumulativeDistribution": _R.normal(size=(2, 3)),
    "Identity": _R.normal(size=(2, 3)),
    "Abs": _R.normal(size=(2, 3)),
}
NO_JACOBIAN = {"Abs", "LowerCholesky", "PositiveDefinite", "Softmax"}  # (torch has none)
# (not bijective, or not on all of the domain: inv gives a preimage, as torch's)
NOT_INVERTIBLE = {"Abs", "Softmax", "LowerCholesky", "PositiveDefinite"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch(name):
    x = CASES[name]
    tj, tto = _build(jt, name), _build(tt, name)
    yj, yt = tj(_j(x)), tto(_t(x))
    _close(yj, yt)
    assert tj.bijective == tto.bijective
    assert tj.domain.event_dim == tto.domain.event_dim
    assert tj.codomain.event_dim == tto.codomain.event_dim
    assert bool(tj.codomain.check(yj).all())
    assert tuple(tj.forward_shape(jitgrad.Size(x.shape))) == tuple(
        tto.forward_shape(torch.Size(x.shape)))
    if name not in NOT_INVERTIBLE:
        _close(tj.inv(yj), _t(x), 1e-8)
    _close(tj.inv(yj), tto.inv(yt), 1e-8)
    if name not in NO_JACOBIAN:
        _close(tj.log_abs_det_jacobian(_j(x), yj), tto.log_abs_det_jacobian(_t(x), yt))
    try:
        sign = tto.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            tj.sign  # noqa: B018
    else:
        sj = tj.sign
        np.testing.assert_array_equal(np.asarray(sj.numpy() if jitgrad.is_tensor(sj) else sj),
                                      np.asarray(sign.numpy() if torch.is_tensor(sign) else sign))


@pytest.mark.parametrize("name", ["Exp", "Sigmoid", "Tanh", "Affine", "StickBreaking",
                                  "CorrCholesky", "Power"])
def test_log_abs_det_jacobian_is_the_jacobians(name):
    x = CASES[name][0]
    t = _build(jt, name)
    xs = _j(x)
    jac = jitgrad.autograd.functional.jacobian(lambda v: t(v), xs).numpy()
    if name == "StickBreaking":  # (into the simplex: drop the last, dependent coordinate)
        jac = jac[:-1]
    if name == "CorrCholesky":  # (the free entries: the strict lower triangle)
        rows, cols = np.tril_indices(jac.shape[0], -1)
        jac = jac[rows, cols]
    if jac.ndim == 2 and t.domain.event_dim == 0:
        expected = np.log(np.abs(np.diag(jac)))
    else:
        expected = np.linalg.slogdet(jac)[1]
    got = t.log_abs_det_jacobian(xs, t(xs)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)


def test_caching_and_inverse_identity():
    t = jt.ExpTransform(cache_size=1)
    x = _j([0.1, 0.2])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert jt.ExpTransform().inv.inv == jt.ExpTransform()
    assert t.inv.inv is t
    assert jt.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        jt.ExpTransform(cache_size=2)
    assert jt.identity_transform(x) is x
    assert jt.AffineTransform(1.0, 2.0) == jt.AffineTransform(1.0, 2.0)
    assert jt.AffineTransform(1.0, 2.0) != jt.AffineTransform(1.0, 3.0)


def test_transform_gradients_match_torch():
    x = CASES["CorrCholesky"]
    xj = _j(x).requires_grad_(True)
    xt = _t(x).requires_grad_(True)
    tj, tto = jt.CorrCholeskyTransform(), tt.CorrCholeskyTransform()
    yj, yt = tj(xj), tto(xt)
    (yj.sum() + tj.log_abs_det_jacobian(xj, yj).sum()).backward()
    (yt.sum() + tto.log_abs_det_jacobian(xt, yt).sum()).backward()
    _close(xj.grad, xt.grad, 1e-8)


@pytest.mark.parametrize("constraint_name,args", [
    ("real", ()), ("positive", ()), ("nonnegative", ()), ("unit_interval", ()),
    ("simplex", ()), ("corr_cholesky", ()), ("greater_than", (2.0,)), ("less_than", (1.0,)),
    ("interval", (-1.0, 3.0)), ("real_vector", ()),
])
def test_biject_to_and_transform_to_match_torch(constraint_name, args):
    cj = getattr(constraints, constraint_name)
    ct = getattr(td.constraints, constraint_name)
    if args:
        cj, ct = cj(*args), ct(*args)
    x = _R.normal(size=(2, 6))
    for reg_j, reg_t in [(jd.biject_to, td.biject_to), (jd.transform_to, td.transform_to)]:
        tj, tto = reg_j(cj), reg_t(ct)
        assert type(tj).__name__ == type(tto).__name__
        yj, yt = tj(_j(x)), tto(_t(x))
        _close(yj, yt)
        assert bool(cj.check(yj).all())


def test_registry_errors():
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        jd.biject_to(constraints.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        jd.biject_to.register(3, lambda c: None)


def test_transformed_distribution_matches_torch():
    loc, scale = _R.normal(size=3), _R.uniform(0.5, 2, 3)
    parts_j = [jt.AffineTransform(_j([1.0, -1.0, 0.5]), _j([2.0, 1.0, -0.5])),
               jt.SigmoidTransform()]
    parts_t = [tt.AffineTransform(_t([1.0, -1.0, 0.5]), _t([2.0, 1.0, -0.5])),
               tt.SigmoidTransform()]
    dj = jd.TransformedDistribution(jd.Normal(_j(loc), _j(scale)), parts_j)
    dt = td.TransformedDistribution(td.Normal(_t(loc), _t(scale)), parts_t)
    y = _R.uniform(0.1, 0.9, (4, 3))
    _close(dj.log_prob(_j(y)), dt.log_prob(_t(y)))
    _close(dj.cdf(_j(y)), dt.cdf(_t(y)))
    u = _R.uniform(0.1, 0.9, 3)
    _close(dj.icdf(_j(u)), dt.icdf(_t(u)), 1e-8)
    assert dj.has_rsample and tuple(dj.rsample((5,)).shape) == (5, 3)
    assert repr(dj.support) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    e = dj.expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3) and tuple(e.sample().shape) == (2, 3)
    # a vector transform makes the event one-dimensional
    sb = jd.TransformedDistribution(jd.Normal(_j(loc[:2]), _j(scale[:2])),
                                    jt.StickBreakingTransform())
    assert tuple(sb.event_shape) == (3,) and tuple(sb.batch_shape) == ()
    with pytest.raises(ValueError, match="transforms must be a Transform or a list"):
        jd.TransformedDistribution(jd.Normal(0.0, 1.0), [1])


def test_transformed_rsample_gradient_is_pathwise():
    loc = jitgrad.tensor([0.3], dtype=jitgrad.float64, requires_grad=True)
    d = jd.TransformedDistribution(jd.Normal(loc, jitgrad.tensor([0.5], dtype=jitgrad.float64)),
                                   jt.ExpTransform())
    jitgrad.manual_seed(0)
    s = d.rsample((20000,))
    s.mean().backward()
    # d/dloc E[exp(N(loc, s^2))] = exp(loc + s^2/2); the sample's gradient is its mean
    np.testing.assert_allclose(float(loc.grad), float(s.mean()), rtol=1e-10)
    np.testing.assert_allclose(float(loc.grad), np.exp(0.3 + 0.125), rtol=0.02)
