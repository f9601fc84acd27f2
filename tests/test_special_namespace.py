"""jitgrad.special against torch.special: values and gradients of every name it has."""

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.special as S
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
TS = torch.special

X = np.array([-3.0, -1.2, -0.0, 0.0, 0.3, 0.9, 2.5, 7.0])
P = np.array([0.01, 0.3, 0.5, 0.77, 0.99])

CASES = [
    ("erf", X, ()), ("erfc", X, ()), ("erfinv", 2 * P - 1, ()), ("exp2", X, ()),
    ("expit", X, ()), ("expm1", X, ()), ("gammaln", X[X > 0], ()),
    ("digamma", X[X > 0], ()), ("psi", X[X > 0], ()), ("log1p", P, ()), ("logit", P, ()),
    ("sinc", X, ()), ("entr", np.array([-1.0, 0.0, 0.2, 1.0, 3.5]), ()),
    ("ndtr", np.array([-1.0, 0.0, 0.7, 5.0]), ()),  # (torch loses the lower tail: below)
    ("round", np.array([0.5, 1.5, -2.5, 2.4449]), ()),
]


@pytest.mark.parametrize("name,values,extra", CASES, ids=[c[0] for c in CASES])
def test_unary_values_and_gradients_match_torch(name, values, extra):
    mine = jg.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    got, want = getattr(S, name)(mine, *extra), getattr(TS, name)(theirs, *extra)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-300)
    if name == "round":
        return
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-300)


def test_binary_and_reducing_functions_match_torch():
    x, y = np.array([0.0, 0.0, 1.5, -2.0, 3.0]), np.array([0.5, np.nan, 2.0, 0.25, -0.5])
    for name in ("xlogy", "xlog1py"):
        got = getattr(S, name)(jg.tensor(x), jg.tensor(y)).numpy()
        want = getattr(TS, name)(torch.tensor(x), torch.tensor(y)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    a = np.random.default_rng(0).standard_normal((3, 4))
    for name in ("softmax", "log_softmax"):
        np.testing.assert_allclose(getattr(S, name)(jg.tensor(a), 1).numpy(),
                                   getattr(TS, name)(torch.tensor(a), 1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(S.logsumexp(jg.tensor(a), 0).numpy(),
                               TS.logsumexp(torch.tensor(a), 0).numpy(), rtol=1e-12)
    np.testing.assert_allclose(S.polygamma(2, jg.tensor(P)).numpy(),
                               TS.polygamma(2, torch.tensor(P)).numpy(), rtol=1e-9)
    m = np.array([2.0, 3.5, 10.0])
    np.testing.assert_allclose(S.multigammaln(jg.tensor(m), 3).numpy(),
                               TS.multigammaln(torch.tensor(m), 3).numpy(), rtol=1e-12)
    # torch 2.13 computes at or below (p - 1) / 2 (inf at a term's pole) instead of refusing
    low = np.array([0.5, 0.7, -1.5])
    np.testing.assert_allclose(S.multigammaln(jg.tensor(low), 3).numpy(),
                               TS.multigammaln(torch.tensor(low), 3).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="^p has to be greater than or equal to 1$"):
        S.multigammaln(jg.tensor([0.5]), 0)


def test_compositions_gradcheck():
    x = jg.tensor([0.4, 1.3, 2.2], dtype=jg.float64, requires_grad=True)
    y = jg.tensor([0.1, -0.3, 2.0], dtype=jg.float64, requires_grad=True)
    assert gradcheck(S.xlog1py, (x, y))
    assert gradcheck(S.entr, (x,))
    assert gradcheck(S.ndtr, (y,))
    assert gradcheck(lambda t: S.multigammaln(t + 2, 2), (x,))


def test_ndtr_keeps_the_lower_tail():
    mpmath = pytest.importorskip("mpmath")
    x = np.array([-40.0, -20.0, -8.0, -5.0])
    want = [float(mpmath.ncdf(v)) for v in x]
    np.testing.assert_allclose(S.ndtr(jg.tensor(x)).numpy(), want, rtol=1e-13)
