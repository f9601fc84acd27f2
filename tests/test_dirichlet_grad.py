"""The reparameterized gradient of Dirichlet and Beta samples (torch's ``_dirichlet_grad``:
each coordinate's marginal Beta CDF held fixed): against finite differences of SciPy's
incomplete beta function, against torch's own (whose approximations are good to about 5e-4),
and through ``Beta``/``Dirichlet.rsample`` sample by sample."""

import numpy as np
import pytest

import jitgrad
from jitgrad.distributions._dirichlet_grad import dirichlet_grad

PARAMETERS = [(0.5, 2.0), (2.0, 3.0), (0.1, 0.1), (10.0, 50.0), (100.0, 3.0), (0.01, 5.0),
              (30.0, 30.0), (500.0, 800.0), (1.0, 1.0), (3.0, 0.02), (0.3, 300.0)]


def _samples(a, b):
    x = np.random.default_rng(int(a * 1000 + b)).beta(a, b, size=8)
    return np.clip(x, 1e-12, 1 - 1e-12)


@pytest.mark.parametrize("a,b", PARAMETERS)
def test_the_implicit_derivative_of_the_beta_cdf(a, b):
    """``dx/da = -(dI/da)(x; a, b) / f(x; a, b)``, b held; ``_dirichlet_grad`` is it over
    ``1 - x``."""
    special = pytest.importorskip("scipy.special")
    x = _samples(a, b)
    ours = dirichlet_grad(x, np.full(8, a), np.full(8, a + b)) * (1 - x)
    h = 1e-6 * a
    d_cdf = (special.betainc(a + h, b, x) - special.betainc(a - h, b, x)) / (2 * h)
    density = np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - special.betaln(a, b))
    np.testing.assert_allclose(ours, -d_cdf / density, rtol=1e-7)


@pytest.mark.parametrize("a,b", PARAMETERS)
def test_matches_torch_dirichlet_grad(a, b):
    torch = pytest.importorskip("torch")
    x = _samples(a, b)
    theirs = torch._dirichlet_grad(torch.tensor(x), torch.full((8,), a, dtype=torch.float64),
                                   torch.full((8,), a + b, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(dirichlet_grad(x, np.full(8, a), np.full(8, a + b)), theirs,
                               rtol=1e-3)


def test_beta_and_dirichlet_rsample_gradients_match_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        a = lib.tensor([0.5, 3.0, 40.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([2.0, 0.7, 60.0], dtype=lib.float64, requires_grad=True)
        x = lib.distributions.Beta(a, b).rsample((5,))
        x.pow(2).sum().backward()
        c = lib.tensor([[0.3, 2.0, 5.0], [1.0, 1.0, 1.0]], dtype=lib.float64,
                       requires_grad=True)
        s = lib.distributions.Dirichlet(c).rsample((4,))
        (s * lib.arange(3.0, dtype=lib.float64)).sum().backward()
        results.append([t.detach().numpy() for t in (x, a.grad, b.grad, s, c.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-9)


def test_a_beta_sample_moves_with_its_parameters_as_its_cdf_says():
    """Without torch or SciPy: the gradient predicts the sample's change when the parameter
    moves and the sample's CDF value (its quantile) is kept, checked against bisection on the
    Beta CDF computed by quadrature."""
    a, b, x = 2.5, 4.0, 0.31

    def cdf(t, aa):
        grid = np.linspace(0.0, t, 20001)
        pdf = grid ** (aa - 1) * (1 - grid) ** (b - 1)
        norm = np.linspace(0.0, 1.0, 20001)
        return np.trapezoid(pdf, grid) / np.trapezoid(norm ** (aa - 1) * (1 - norm) ** (b - 1),
                                                      norm)

    target, h = cdf(x, a), 1e-3
    lo, hi = 0.0, 1.0
    for _ in range(60):  # the x' with the same quantile under a + h
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid, a + h) < target else (lo, mid)
    moved = (lo - x) / h
    predicted = dirichlet_grad(np.array([x]), np.array([a]), np.array([a + b]))[0] * (1 - x)
    assert predicted == pytest.approx(moved, rel=2e-3)
