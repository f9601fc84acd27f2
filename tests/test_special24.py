"""torch.special's Bessel, Airy, erfcx/log_ndtr/ndtri, incomplete-gamma, zeta and mvlgamma
functions (``jitgrad/ops/special24*.py``): values against torch in float64 over wide ranges,
edge cases (0, +-inf, NaN, the branch boundaries), dtype rules, ``out=``, the gradients torch
defines (gradcheck, and against torch) and the ones it does not."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
S = jg.special

_EDGES = [0.0, -0.0, 1e-300, 1e-10, -1e-10, 0.5, -0.5, 1.0, 2.0, 2.09, -2.09, 5.0, -5.0, 8.0,
          -8.0, 26.6, -26.8, -6.2, 50.0, 51.0, 103.9, 700.0, -700.0, 1e8, -1e8, np.inf, -np.inf,
          np.nan]


def _grid() -> np.ndarray:
    rng = np.random.default_rng(24)
    return np.concatenate([rng.uniform(-1, 1, 400), rng.uniform(-10, 10, 400),
                           rng.uniform(-60, 60, 400), rng.uniform(-800, 800, 200), _EDGES])


def _close(ours: np.ndarray, theirs: np.ndarray, ulps: float, atol: float = 0.0) -> None:
    """Equal NaN/inf pattern, and within ``ulps`` units in the last place (or ``atol``)."""
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite & ~np.isnan(theirs)],
                                  theirs[~finite & ~np.isnan(theirs)])
    err = np.abs(ours[finite] - theirs[finite])
    bound = ulps * np.spacing(np.abs(theirs[finite])) + atol
    assert (err <= bound).all(), (ours[finite][err > bound][:5], theirs[finite][err > bound][:5])


# (name, max ulps, absolute slack near the zeros of the oscillating functions)
_UNARY = [("i0", 8, 0), ("i0e", 8, 0), ("i1", 16, 0), ("i1e", 16, 0), ("erfcx", 4, 0),
          ("spherical_bessel_j0", 2, 0), ("bessel_j0", 8, 1e-15), ("bessel_j1", 8, 1e-15),
          ("bessel_y0", 8, 1e-15), ("bessel_y1", 8, 1e-15), ("modified_bessel_i0", 8, 0),
          ("modified_bessel_i1", 16, 0), ("modified_bessel_k0", 16, 0),
          ("modified_bessel_k1", 16, 0), ("scaled_modified_bessel_k0", 16, 0),
          ("scaled_modified_bessel_k1", 16, 0), ("airy_ai", 32, 1e-16)]


@pytest.mark.parametrize("name,ulps,atol", _UNARY)
def test_unary_matches_torch_float64(name, ulps, atol):
    x = _grid()
    ours = getattr(S, name)(jg.tensor(x)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(x)).numpy()
    _close(ours, theirs, ulps, atol)


def test_log_ndtr_matches_torch():
    x = _grid()
    ours = S.log_ndtr(jg.tensor(x)).numpy()
    theirs = torch.special.log_ndtr(torch.tensor(x)).numpy()
    # far in the upper tail the value is -erfc(x / sqrt 2) / 2 (~1e-267 at 35): libm's erfc
    # and torch's agree to 2e-12 relative there
    np.testing.assert_allclose(ours, theirs, rtol=2e-12, atol=0)


def test_ndtri_matches_torch():
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.uniform(0, 1, 1000), np.exp(-rng.uniform(0, 700, 300)),
                        1 - np.exp(-rng.uniform(0, 36, 300)),
                        [0.0, 1.0, -0.1, 1.1, np.nan, 0.5, np.exp(-2), 1 - np.exp(-2)]])
    _close(S.ndtri(jg.tensor(y)).numpy(), torch.special.ndtri(torch.tensor(y)).numpy(), 8)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_matches_torch(name):
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.uniform(0, 5, 500), np.exp(rng.uniform(-5, 7, 500)),
                        [0, 0, 1, np.inf, np.inf, 2, np.nan, -1, 30, 250, 1e-3]])
    x = np.concatenate([rng.uniform(0, 5, 500), a[500:1000] * np.exp(rng.normal(0, 0.3, 500)),
                        [0, 1, 0, np.inf, 2, np.inf, 1, 1, 31, 251, 1e-3]])
    ours = getattr(S, name)(jg.tensor(a), jg.tensor(x)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    # the prefactor x^a e^-x / Gamma(a) loses ~a * eps to rounding for a in the hundreds
    # (torch's and libm's log/lgamma round differently): relative 1e-10 there, 64 ulp below 20
    np.testing.assert_allclose(ours, theirs, rtol=2e-10, atol=1e-300)
    small = (a > 0.5) & (a < 20)  # (below, DLMF 8.7.3's cancellation: ~1e-10 relative)
    _close(ours[small], theirs[small], 64, 1e-16)


def test_zeta_matches_torch_including_poles():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(1, 20, 800), [1, 0.5, 2, 2, 3, np.inf, 2, 4, 2.5, np.nan]])
    q = np.concatenate([rng.uniform(-10, 30, 800), [1, 1, 0, -2, -2.5, 1, np.inf, -1.5, -1.5,
                                                    1]])
    ours = S.zeta(jg.tensor(x), jg.tensor(q)).numpy()
    theirs = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    _close(ours, theirs, 4)
    one = jg.tensor([1.0], dtype=jg.float64)
    assert float(S.zeta(2.0, one)[0]) == pytest.approx(np.pi ** 2 / 6, rel=1e-15)
    assert float(S.zeta(4 * one, 1.0)[0]) == pytest.approx(np.pi ** 4 / 90, rel=1e-15)


def test_mvlgamma_matches_torch_and_checks_its_domain():
    x = np.linspace(1.6, 9.0, 13)
    for p in (1, 2, 3, 5):
        xs = x + (p - 1) / 2
        np.testing.assert_allclose(jg.mvlgamma(jg.tensor(xs), p).numpy(),
                                   torch.mvlgamma(torch.tensor(xs), p).numpy(), rtol=1e-14)
    low = np.array([0.5, 0.7, -1.5, 1.0])  # computed, as torch 2.13 (inf at a term's pole)
    np.testing.assert_allclose(jg.mvlgamma(jg.tensor(low), 3).numpy(),
                               torch.mvlgamma(torch.tensor(low), 3).numpy(), rtol=1e-14)
    with pytest.raises(RuntimeError, match="^p has to be greater than or equal to 1$"):
        jg.mvlgamma(jg.tensor([2.5]), 0)
    t = jg.tensor([2.5, 3.0])
    assert t.mvlgamma_(2) is t
    np.testing.assert_allclose(t.numpy(), torch.tensor([2.5, 3.0]).mvlgamma(2).numpy(), rtol=1e-6)


# ---------------------------------------------------------------- dtypes, out=, the surface


def test_integer_inputs_promote_and_float32_rounds():
    ints = jg.tensor([0, 1, 2, 3])
    for name in ("i0e", "i1", "erfcx", "ndtri", "bessel_j0", "modified_bessel_k1", "airy_ai"):
        out = getattr(S, name)(ints)
        assert out.dtype == jg.float32, name
        want = getattr(torch.special, name)(torch.tensor([0, 1, 2, 3]))
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=2e-6, atol=1e-7)
    assert jg.i0(jg.tensor([1, 2])).dtype == jg.float32
    x32 = jg.tensor([0.5, 1.5], dtype=jg.float32)
    assert S.i1e(x32).dtype == jg.float32
    assert S.zeta(x32 + 2, 1.0).dtype == jg.float32
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        S.gammainc(jg.tensor([1, 2]), jg.tensor([1, 2]))


def test_out_argument_and_methods():
    x = jg.tensor([0.5, 1.5], dtype=jg.float64)
    out = jg.empty(2, dtype=jg.float64)
    assert S.i0e(x, out=out) is out
    tx = torch.tensor([0.5, 1.5], dtype=torch.float64)
    np.testing.assert_allclose(out.numpy(), torch.special.i0e(tx).numpy(), rtol=1e-15)
    out2 = jg.empty(2, dtype=jg.float64)
    assert S.gammainc(x, x, out=out2) is out2 and jg.igammac(x, x, out=out2) is out2
    assert S.chebyshev_polynomial_t(x, 3, out=out2) is out2
    a = x.clone()
    assert a.igamma_(jg.tensor([1.0, 2.0], dtype=jg.float64)) is a
    want = torch.tensor([0.5, 1.5], dtype=torch.float64).igamma(
        torch.tensor([1.0, 2.0], dtype=torch.float64))
    np.testing.assert_allclose(a.numpy(), want.numpy(), rtol=1e-14)
    b = x.clone()
    assert b.i0_() is b and float(b[0]) == pytest.approx(float(torch.i0(tx[0])))
    assert x.igammac(x).shape == (2,) and x.i0().shape == (2,)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        S.erfcx(x.clone().requires_grad_(), out=jg.empty(2, dtype=jg.float64))


# ---------------------------------------------------------------- gradients


_DIFFERENTIABLE = [("i0", -3, 3), ("i0e", -9, 9), ("i1", -3, 3), ("i1e", -9, 9),
                   ("erfcx", -2, 8), ("log_ndtr", -12, 4), ("ndtri", 0.02, 0.98)]


@pytest.mark.parametrize("name,lo,hi", _DIFFERENTIABLE)
def test_gradients_gradcheck_and_torch(name, lo, hi):
    x = np.random.default_rng(1).uniform(lo, hi, 7)
    xj = jg.tensor(x, requires_grad=True)
    assert gradcheck(getattr(S, name), (xj,))
    getattr(S, name)(xj).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    y = getattr(torch.special, name)(xt)
    y.sum().backward()
    assert getattr(S, name)(xj).grad_fn.name() == y.grad_fn.name()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_i1_gradients_at_zero_are_one_half():
    for name in ("i1", "i1e"):
        x = jg.tensor([0.0, 1e-20], dtype=jg.float64, requires_grad=True)
        getattr(S, name)(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5])


@pytest.mark.parametrize("name", ["gammainc", "gammaincc", "zeta"])
def test_second_argument_gradient_and_first_not_implemented(name):
    a = np.array([1.5, 2.5, 4.0])
    x = np.array([0.7, 2.0, 3.5])
    xj = jg.tensor(x, requires_grad=True)
    assert gradcheck(lambda t: getattr(S, name)(jg.tensor(a), t), (xj,))
    getattr(S, name)(jg.tensor(a), xj).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    yt = getattr(torch.special, name)(torch.tensor(a), xt)
    yt.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    assert getattr(S, name)(jg.tensor(a), xj).grad_fn.name() == yt.grad_fn.name()
    aj = jg.tensor(a, requires_grad=True)
    label = {"gammainc": "igamma: input", "gammaincc": "igammac: input", "zeta": "zeta"}[name]
    with pytest.raises(NotImplementedError, match=f"the derivative for '{label}' is not"):
        getattr(S, name)(aj, jg.tensor(x)).sum().backward()


def test_mvlgamma_gradient():
    x = jg.tensor([2.3, 3.1, 4.7], dtype=jg.float64, requires_grad=True)
    assert gradcheck(lambda t: jg.mvlgamma(t, 3), (x,))
    y = jg.mvlgamma(x, 3)
    assert y.grad_fn.name() == "MvlgammaBackward0"
    y.sum().backward()
    xt = torch.tensor([2.3, 3.1, 4.7], dtype=torch.float64, requires_grad=True)
    torch.mvlgamma(xt, 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_bessel_family_is_not_differentiable():
    x = jg.tensor([0.5, 1.5], dtype=jg.float64, requires_grad=True)
    for name in ("bessel_j0", "bessel_y1", "modified_bessel_k0", "airy_ai",
                 "spherical_bessel_j0", "scaled_modified_bessel_k1"):
        y = getattr(S, name)(x)
        assert not y.requires_grad and y.grad_fn is None, name
    assert not S.legendre_polynomial_p(x, 3).requires_grad


def test_complex_input_is_rejected_as_in_torch():
    z = jg.tensor([1 + 1j], dtype=jg.complex64)
    for call, kernel in ((jg.i0, "i0_vml"), (S.i0e, "i0e"), (S.bessel_y1, "bessel_y1"),
                         (S.airy_ai, "airy_ai"), (lambda t: S.zeta(t, t), "zeta"),
                         (lambda t: S.gammaincc(t, t), "igammac"),
                         (lambda t: S.hermite_polynomial_h(t, 2), "hermite_polynomial_h")):
        with pytest.raises(NotImplementedError,
                           match=f"\"{kernel}_cpu\" not implemented for 'ComplexFloat'"):
            call(z)


def test_forward_mode_where_torch_has_it():
    import jitgrad.autograd.forward_ad as fwd

    x = np.array([0.7, 2.0])
    t = np.array([1.0, -0.5])
    with fwd.dual_level():
        d = fwd.make_dual(jg.tensor(x + 2), jg.tensor(t))
        tangent = fwd.unpack_dual(jg.mvlgamma(d, 2)).tangent.numpy()
        ndtri_tangent = fwd.unpack_dual(S.ndtri(fwd.make_dual(jg.tensor(x / 3),
                                                              jg.tensor(t)))).tangent.numpy()
        with pytest.raises(NotImplementedError, match="forward AD with igammac"):
            jg.igammac(jg.tensor(x), fwd.make_dual(jg.tensor(x), jg.tensor(t)))
        with pytest.raises(NotImplementedError, match="forward AD with special_zeta"):
            S.zeta(jg.tensor(x + 1), fwd.make_dual(jg.tensor(x), jg.tensor(t)))
    xt = torch.tensor(x + 2, requires_grad=True)
    want = torch.autograd.functional.jvp(lambda v: torch.mvlgamma(v, 2), xt, torch.tensor(t))[1]
    np.testing.assert_allclose(tangent, want.numpy(), rtol=1e-12)
    want = torch.autograd.functional.jvp(torch.special.ndtri, torch.tensor(x / 3),
                                         torch.tensor(t))[1]
    np.testing.assert_allclose(ndtri_tangent, want.numpy(), rtol=1e-12)
