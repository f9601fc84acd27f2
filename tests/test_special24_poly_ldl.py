"""torch.special's orthogonal polynomials (``ops/special24_poly.py``) against torch on grids of
``x`` and ``n`` (negative, fractional and huge orders, the interval ends, the trigonometric
branches), their dtype rules; and ``linalg.ldl_factor``/``ldl_factor_ex``/``ldl_solve``
(``ops/linalg_ldl.py``): LAPACK's pivots and LD as torch returns them, the reconstruction, the
solves, batches, errors and ``info``."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _grid():
    rng = np.random.default_rng(11)
    # (NaN x is left out: torch returns an uninitialized value for some of these there)
    xs = np.concatenate([rng.uniform(-1.5, 1.5, 120), rng.uniform(-0.2, 1.2, 40),
                         [-1.0, 1.0, 0.0, 0.5, np.inf, -np.inf, 2.0, -2.0, 1e-300, 0.75]])
    ns = np.concatenate([np.arange(-2, 30), [2.7, -0.5, 100, 513, 600, np.nan, np.inf]])
    return np.meshgrid(xs, ns)


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_polynomial_matches_torch_on_a_grid(name):
    xx, nn = _grid()
    ours = getattr(jg.special, name)(jg.tensor(xx), jg.tensor(nn)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(xx), torch.tensor(nn)).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    # the recurrences and the trigonometric forms (cos(n acos x), n up to 600) round as
    # torch's up to ~1e-12 of the value (or of 1, near a root)
    err = np.abs(ours[finite] - theirs[finite]) / np.maximum(np.abs(theirs[finite]), 1.0)
    assert err.max() < 5e-12
    # exact at the small orders (the recurrence's first steps and the edge rules)
    small = (nn >= -2) & (nn <= 3) & np.isfinite(xx) & (np.abs(xx) <= 2)
    np.testing.assert_allclose(ours[small], theirs[small], rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_polynomial_dtypes_and_scalar_operands(name):
    fn, tfn = getattr(jg.special, name), getattr(torch.special, name)
    x32 = np.array([0.25, -0.5, 0.9], dtype=np.float32)
    for n in (3, jg.tensor([1, 4, 6]), jg.tensor([2.0, 3.0, 5.0], dtype=jg.float64)):
        out = fn(jg.tensor(x32), n)
        tn = torch.tensor(n.numpy()) if isinstance(n, jg.Tensor) else n
        want = tfn(torch.tensor(x32), tn)
        assert str(out.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    out = fn(0.25, jg.tensor([0, 1, 4, 6]))  # a number x with integer orders: the default dtype
    want = tfn(0.25, torch.tensor([0, 1, 4, 6]))
    assert out.dtype == jg.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    ints = fn(jg.tensor([1, 2]), 3)
    assert ints.dtype == jg.float32
    np.testing.assert_allclose(ints.numpy(), tfn(torch.tensor([1, 2]), 3).numpy(), rtol=1e-6)


def test_polynomial_known_values():
    x = jg.tensor([0.3], dtype=jg.float64)
    assert float(jg.special.chebyshev_polynomial_t(x, 2)[0]) == pytest.approx(2 * 0.09 - 1)
    assert float(jg.special.hermite_polynomial_h(x, 2)[0]) == pytest.approx(4 * 0.09 - 2)
    assert float(jg.special.hermite_polynomial_he(x, 3)[0]) == pytest.approx(0.027 - 0.9)
    assert float(jg.special.legendre_polynomial_p(x, 2)[0]) == pytest.approx((3 * 0.09 - 1) / 2)
    assert float(jg.special.laguerre_polynomial_l(x, 2)[0]) == pytest.approx(
        (0.09 - 4 * 0.3 + 2) / 2)
    assert float(jg.special.chebyshev_polynomial_u(x, -1)[0]) == 0.0


# ---------------------------------------------------------------- LDL^T


def _symmetric(rng, n, batch=(), complex_=False, hermitian=False):
    a = rng.normal(size=(*batch, n, n))
    if complex_:
        a = a + 1j * rng.normal(size=(*batch, n, n))
    return a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("kind", ["float64", "float32", "complex_symmetric", "hermitian"])
def test_ldl_factor_pivots_and_ld_match_torch(kind):
    rng = np.random.default_rng(4)
    complex_ = kind in ("complex_symmetric", "hermitian")
    herm = kind == "hermitian"
    for trial in range(40):
        n = 1 + trial % 9
        a = _symmetric(rng, n, complex_=complex_, hermitian=herm)
        if trial % 5 == 0:
            a[..., :, 0] *= 1e-3  # small first column: 2x2 pivots
            a[..., 0, :] *= 1e-3
        if kind == "float32":
            a = a.astype(np.float32)
        ld, piv = jg.linalg.ldl_factor(jg.tensor(a), hermitian=herm)
        tld, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=herm)
        assert piv.dtype == jg.int32
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        tol = 1e-4 if kind == "float32" else 1e-11
        np.testing.assert_allclose(ld.numpy(), tld.numpy(), rtol=tol, atol=tol)
        b = rng.normal(size=(n, 2)).astype(a.dtype)
        x = jg.linalg.ldl_solve(ld, piv, jg.tensor(b), hermitian=herm).numpy()
        np.testing.assert_allclose(a @ x, b, rtol=tol * 100, atol=tol * 100)


def test_ldl_reconstruction_from_the_lapack_format():
    rng = np.random.default_rng(8)
    a = _symmetric(rng, 7)
    a[:2, :2] = [[0.0, 3.0], [3.0, 0.0]]  # zero diagonal: a 2x2 pivot first
    ld, piv = (t.numpy() for t in jg.linalg.ldl_factor(jg.tensor(a)))
    n = 7
    # A = P1 L1 D ... : rebuild by applying the elementary steps (LAPACK's sytrf, uplo=L)
    big_l = np.eye(n)
    d = np.zeros((n, n))
    k = 0
    while k < n:
        s = 1 if piv[k] > 0 else 2
        p = abs(piv[k]) - 1
        d[k:k + s, k:k + s] = np.tril(ld[k:k + s, k:k + s]) + np.tril(ld[k:k + s, k:k + s], -1).T
        step = np.eye(n)
        step[k + s:, k:k + s] = ld[k + s:, k:k + s]
        perm = np.eye(n)
        perm[[k + s - 1, p]] = perm[[p, k + s - 1]]
        big_l = big_l @ perm @ step
        k += s
    assert (piv[:2] < 0).all()
    np.testing.assert_allclose(big_l @ d @ big_l.T, a, atol=1e-12)


def test_ldl_batches_info_and_errors():
    rng = np.random.default_rng(9)
    a = _symmetric(rng, 4, (2, 3))
    res = jg.linalg.ldl_factor_ex(a_t := jg.tensor(a))
    tres = torch.linalg.ldl_factor_ex(torch.tensor(a))
    assert res.LD.shape == (2, 3, 4, 4) and res.pivots.shape == (2, 3, 4)
    assert res.info.shape == (2, 3) and res.info.dtype == jg.int32
    np.testing.assert_array_equal(res.pivots.numpy(), tres.pivots.numpy())
    b = rng.normal(size=(4, 2))  # broadcast over the batch
    x = jg.linalg.ldl_solve(res.LD, res.pivots, jg.tensor(b)).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a, np.broadcast_to(b, (2, 3, 4, 2))),
                               rtol=1e-9, atol=1e-10)
    zero = jg.linalg.ldl_factor_ex(jg.zeros(3, 3, dtype=jg.float64))
    assert int(zero.info) == 1 and zero.pivots.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="ldl_factor"):
        jg.linalg.ldl_factor(jg.zeros(3, 3, dtype=jg.float64))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they "
                                           "are 3 by 4 matrices"):
        jg.linalg.ldl_factor(jg.zeros(3, 4))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        jg.linalg.ldl_factor(jg.zeros(3, 3, dtype=jg.int64))
    ld, piv = jg.linalg.ldl_factor(a_t[0, 0])
    with pytest.raises(RuntimeError, match="each A matrix is 4 by 4 but each b matrix is 3 by 2"):
        jg.linalg.ldl_solve(ld, piv, jg.zeros(3, 2, dtype=jg.float64))
    with pytest.raises(RuntimeError, match="Expected pivots to be integers. Got Double"):
        jg.linalg.ldl_solve(ld, piv.double(), jg.zeros(4, 2, dtype=jg.float64))
    out = (jg.empty(0, dtype=jg.float64), jg.empty(0, dtype=jg.int32))
    got = jg.linalg.ldl_factor(a_t[0, 0], out=out)
    assert got[0] is out[0] and out[1].tolist() == piv.tolist()


def test_ldl_is_not_differentiable_as_in_torch():
    rng = np.random.default_rng(10)
    a = jg.tensor(_symmetric(rng, 3), requires_grad=True)
    ld, piv = jg.linalg.ldl_factor(a)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not "
                                           "implemented"):
        ld.sum().backward()
    b = jg.tensor(rng.normal(size=(3, 1)), requires_grad=True)
    x = jg.linalg.ldl_solve(ld.detach(), piv, b)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not "
                                           "implemented"):
        x.sum().backward()
