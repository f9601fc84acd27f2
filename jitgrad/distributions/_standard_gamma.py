"""Standard-gamma sampling with a reparameterized (implicit) gradient.

``_standard_gamma(alpha)`` draws ``X ~ Gamma(alpha, 1)`` from jitgrad's default generator and,
like torch's ``_standard_gamma``, differentiates through the sample with the implicit
reparameterization gradient ``dX/dalpha = -(dF/dalpha)(alpha, X) / f(alpha, X)``, where ``F`` is
the gamma CDF (the regularized lower incomplete gamma ``P(alpha, x)``) and ``f`` its density.

The ratio is computed in forms where the density's factor ``x**(alpha-1) e**-x / Gamma(alpha)``
cancels analytically, so it stays accurate far into both tails:

* below and around the bulk (``x <= alpha + 3 sqrt(alpha) + 5``), from the series
  ``P = x**alpha e**-x sum_n x**n / Gamma(alpha + n + 1)``, which gives
  ``dX/dalpha = -x sum_n c_n (log x - digamma(alpha + n + 1))`` with
  ``c_n = Gamma(alpha) x**n / Gamma(alpha + n + 1)`` (``c_0 = 1/alpha``,
  ``c_n = c_{n-1} x / (alpha + n)``);
* in the upper tail, from ``dP/dalpha = -dQ/dalpha`` with ``Q`` the upper integral:
  ``dX/dalpha = int_0^inf e**-s (1 + s/x)**(alpha-1) (log(x + s) - digamma(alpha)) ds``,
  evaluated by Gauss-Laguerre quadrature after rescaling ``s`` by the integrand's decay rate;
* for very large ``alpha`` (> 1e4, where the series would need ~12 sqrt(alpha) terms), from the
  Wilson-Hilferty representation ``X = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))**3``
  differentiated at fixed ``z`` (its error shrinks like ``alpha**-1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jitgrad
from jitgrad.autograd import Function

from ._dirichlet_grad import _digamma_np, dirichlet_grad

_LAGUERRE = np.polynomial.laguerre.laggauss(64)


def _series_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dX/dalpha`` from the lower series (accurate for ``x`` up to a little past the bulk)."""
    if alpha.size == 0:
        return np.zeros_like(x)
    n0 = max(0.0, float(np.max(x - alpha)))
    n_terms = int(n0 + 12.0 * np.sqrt(float(np.max(alpha)) + n0) + 40)
    logx = np.log(x)
    psi = _digamma_np(alpha + 1.0)  # digamma(alpha + n + 1) for n = 0
    c = 1.0 / alpha
    total = c * (logx - psi)
    for n in range(1, n_terms):
        psi = psi + 1.0 / (alpha + n)
        c = c * x / (alpha + n)
        total = total + c * (logx - psi)
    return -x * total


def _tail_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dX/dalpha`` from the upper integral (for ``x`` past the bulk, ``x > alpha - 1``)."""
    if alpha.size == 0:
        return np.zeros_like(x)
    nodes, weights = _LAGUERRE
    lam = 1.0 - (alpha - 1.0) / x  # the integrand's decay rate at s = 0, in (0, 1]
    s = nodes[None, :] / lam[:, None]
    a1 = (alpha - 1.0)[:, None]
    xx = x[:, None]
    # e**-s (1 + s/x)**(alpha-1) = e**-t * exp((alpha-1) log1p(s/x) - s + t), t = lam * s
    log_g = a1 * np.log1p(s / xx) - s + nodes[None, :]
    integrand = np.exp(log_g) * (np.log(xx + s) - _digamma_np(alpha)[:, None])
    return (integrand * weights[None, :]).sum(-1) / lam


_LARGE_ALPHA = 1e4


def _wilson_hilferty_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dX/dalpha`` at fixed quantile from the Wilson-Hilferty cube-root normal form."""
    c = np.cbrt(x / alpha)
    z = (c - 1.0 + 1.0 / (9.0 * alpha)) * 3.0 * np.sqrt(alpha)
    dc = 1.0 / (9.0 * alpha**2) - z / (6.0 * alpha**1.5)
    return c**3 + 3.0 * alpha * c**2 * dc


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The implicit reparameterization gradient ``dX/dalpha`` of gamma samples (float64).

    Args:
        alpha: Concentrations (positive).
        x: Samples of ``Gamma(alpha, 1)`` (positive).

    Returns:
        ``-(dP/dalpha)(alpha, x) / p(alpha, x)`` elementwise (0 where ``x`` is 0).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    alpha, x = np.broadcast_arrays(alpha, x)
    shape = alpha.shape
    alpha, x = alpha.ravel(), x.ravel()
    out = np.zeros_like(x)
    pos = x > 0
    large = pos & (alpha > _LARGE_ALPHA)
    tail = pos & ~large & (x > alpha + 3.0 * np.sqrt(alpha) + 5.0)
    low = pos & ~large & ~tail
    out[low] = _series_grad(alpha[low], x[low])
    out[tail] = _tail_grad(alpha[tail], x[tail])
    out[large] = _wilson_hilferty_grad(alpha[large], x[large])
    out[~np.isfinite(out)] = 0.0
    return out.reshape(shape)


class _StandardGamma(Function):
    """Draws ``Gamma(alpha, 1)`` samples; the backward is the implicit gradient."""

    @staticmethod
    def forward(ctx: Any, alpha: Any) -> Any:
        a = alpha.detach().numpy().astype(np.float64)
        draws = _draw_gammas(a, single=alpha.dtype.itemsize <= 4)
        tiny = jitgrad.finfo(alpha.dtype).tiny
        x = jitgrad.tensor(np.maximum(draws, tiny), dtype=alpha.dtype)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        alpha, x = ctx.saved_tensors
        dx = standard_gamma_grad(alpha.detach().numpy(), x.detach().numpy())
        return grad_output * jitgrad.tensor(dx, dtype=alpha.dtype)


def _draw_gammas(alpha: np.ndarray, single: bool) -> np.ndarray:
    """Gamma(alpha, 1) draws from the default generator, torch's (``_torch_stream``)."""
    stream = jitgrad.default_generator._host()
    return stream.standard_gamma(alpha, single).reshape(alpha.shape)


class _DirichletSample(Function):
    """Draws Dirichlet(alpha) samples as torch does (float64 gammas, normalized in float64);
    the backward is torch's: each coordinate's marginal Beta CDF held fixed
    (``_dirichlet_grad``)."""

    @staticmethod
    def forward(ctx: Any, alpha: Any) -> Any:
        a = alpha.detach().numpy().astype(np.float64)
        gammas = np.maximum(_draw_gammas(a, single=False), np.finfo(np.float64).tiny)
        total = gammas.sum(-1, keepdims=True)
        dt = alpha.dtype.np
        top = np.nextafter(dt.type(1), dt.type(0))  # (torch keeps samples below 1)
        value = np.clip((gammas / total).astype(dt), np.finfo(dt).tiny, top)
        x = jitgrad.tensor(value, dtype=alpha.dtype)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        alpha, x = ctx.saved_tensors
        a = alpha.detach().numpy().astype(np.float64)
        value = x.detach().numpy().astype(np.float64)
        dx = dirichlet_grad(value, a, np.broadcast_to(a.sum(-1, keepdims=True), a.shape))
        g = grad_output.detach().numpy().astype(np.float64)
        grad = dx * (g - (g * value).sum(-1, keepdims=True))
        return jitgrad.tensor(grad, dtype=alpha.dtype)


def _sample_dirichlet(alpha: Any) -> Any:
    """Samples ``Dirichlet(alpha)`` along the last dim, differentiable in ``alpha``."""
    return _DirichletSample.apply(alpha)


def _standard_gamma(alpha: Any) -> Any:
    """Samples ``Gamma(alpha, 1)`` elementwise, differentiable in ``alpha`` (as torch's)."""
    return _StandardGamma.apply(alpha)
