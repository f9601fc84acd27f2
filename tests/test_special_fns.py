"""lgamma, digamma, polygamma, erfinv: values (poles and tails included) and gradients against
torch and mpmath, gradcheck, node names."""

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 30

X = np.array([1e-8, 0.1, 0.5, 1.0, 2.5, 7.3, 15.0, 100.0, 1e5, -0.3, -1.7, -2.5, -10.2])


def _exact(fn, values):
    return np.array([float(fn(mpmath.mpf(float(v)))) for v in values])


@pytest.mark.parametrize("name,exact", [
    ("lgamma", lambda v: mpmath.log(abs(mpmath.gamma(v)))), ("digamma", mpmath.digamma)])
def test_values_match_mpmath_in_float64(name, exact):
    got = getattr(jg, name)(jg.tensor(X, dtype=jg.float64)).numpy()
    np.testing.assert_allclose(got, _exact(exact, X), rtol=2e-14, atol=1e-300)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_matches_mpmath(n):
    values = X if n == 1 else X[X > 0]
    got = jg.polygamma(n, jg.tensor(values, dtype=jg.float64)).numpy()
    np.testing.assert_allclose(got, _exact(lambda v: mpmath.polygamma(n, v), values),
                               rtol=1e-13)
    np.testing.assert_allclose(jg.tensor(values, dtype=jg.float32).polygamma(n).numpy(),
                               torch.tensor(values, dtype=torch.float32).polygamma(n).numpy(),
                               rtol=2e-5)


def test_erfinv_matches_mpmath_to_the_last_bits():
    y = np.concatenate([np.linspace(-0.9999999, 0.9999999, 401),
                        [1 - 1e-15, -(1 - 1e-12), 1 - 2 ** -53, 1e-300, 0.5]])
    got = jg.erfinv(jg.tensor(y, dtype=jg.float64)).numpy()
    np.testing.assert_allclose(got, _exact(mpmath.erfinv, y), rtol=1e-15, atol=1e-300)
    y32 = y.astype(np.float32)
    np.testing.assert_allclose(jg.erfinv(jg.tensor(y32)).numpy(),
                               torch.erfinv(torch.tensor(y32)).numpy(), rtol=2e-6)


def test_poles_and_specials_follow_torch():
    v = torch.tensor([0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan], dtype=torch.float64)
    mine = jg.tensor(v.numpy())
    for name in ("lgamma", "digamma"):
        np.testing.assert_array_equal(getattr(jg, name)(mine).numpy(),
                                      getattr(torch, name)(v).numpy(), err_msg=name)
    e = torch.tensor([-1.0, 1.0, 1.5, -2.0, 0.0, -0.0, np.nan], dtype=torch.float64)
    got = jg.erfinv(jg.tensor(e.numpy())).numpy()
    np.testing.assert_array_equal(got, torch.erfinv(e).numpy())
    assert np.signbit(got[5])
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n."):
        jg.polygamma(-1, mine)
    np.testing.assert_array_equal(jg.polygamma(0, mine).numpy(), jg.digamma(mine).numpy())


@pytest.mark.parametrize("name,call", [
    ("lgamma", lambda m, x: m.lgamma(x)), ("digamma", lambda m, x: m.digamma(x)),
    ("polygamma", lambda m, x: m.polygamma(2, x)), ("erfinv", lambda m, x: m.erfinv(x / 5))])
def test_gradients_match_torch_and_gradcheck(name, call):
    values = np.array([0.3, 1.7, 2.5, 4.1]) if name != "lgamma" else np.array([-1.5, 0.3, 4.1])
    mine = jg.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    out = call(jg, mine)
    out.sum().backward()
    call(torch, theirs).sum().backward()
    if name == "digamma":  # torch's trigamma is good to 1e-10 here: the exact one instead
        want = _exact(lambda v: mpmath.polygamma(1, v), values)
        np.testing.assert_allclose(mine.grad.numpy(), want, rtol=1e-14)
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-9)
    else:
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    torch_name = call(torch, theirs).grad_fn.name()
    if name != "erfinv":
        assert out.grad_fn.name() == torch_name
    assert gradcheck(lambda t: call(jg, t), (mine.detach().requires_grad_(),))
    assert jg.autograd.gradgradcheck(lambda t: call(jg, t), (mine.detach().requires_grad_(),))


def test_large_arrays_take_the_compiled_loop():
    x = jg.rand(20000, dtype=jg.float64) * 20 + 0.01
    np.testing.assert_allclose(jg.lgamma(x).numpy(),
                               torch.lgamma(torch.tensor(x.numpy())).numpy(), rtol=1e-14)
    y = x.float()
    want = jg.lgamma(y.double()).float()  # (float32 rounds the float64 result once)
    y.lgamma_()
    np.testing.assert_array_equal(y.numpy(), want.numpy())
