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
    def forward(ctx: Any, alpha: Any, generator: Any = None) -> Any:
        x = _gamma_draws(alpha, generator)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        alpha, x = ctx.saved_tensors
        return grad_output * _standard_gamma_grad(alpha, x), None


# (torch's node for ``_standard_gamma`` is its own op's, not a Python Function's)
_StandardGamma._backward_cls.__name__ = "StandardGammaBackward0"
_StandardGamma._backward_cls.__qualname__ = "StandardGammaBackward0"


def _host_stream(generator: Any) -> Any:
    """The generator's (default: jitgrad's) host stream, torch's draws."""
    return (generator if generator is not None else jitgrad.default_generator)._host()


def _gamma_draws(alpha: Any, generator: Any) -> Any:
    a = alpha.detach().numpy().astype(np.float64)
    draws = _host_stream(generator).standard_gamma(a, alpha.dtype.itemsize <= 4)
    tiny = jitgrad.finfo(alpha.dtype).tiny
    return jitgrad.tensor(np.maximum(draws.reshape(a.shape), tiny), dtype=alpha.dtype)


def _dirichlet_draws(alpha: Any, generator: Any) -> Any:
    """Dirichlet(alpha) samples as torch draws them: float64 gammas, normalized in float64,
    kept in ``[tiny, 1)``."""
    a = alpha.detach().numpy().astype(np.float64)
    gammas = _host_stream(generator).standard_gamma(a, False).reshape(a.shape)
    gammas = np.maximum(gammas, np.finfo(np.float64).tiny)
    dt = alpha.dtype.np
    top = np.nextafter(dt.type(1), dt.type(0))
    value = (gammas / gammas.sum(-1, keepdims=True)).astype(dt)
    return jitgrad.tensor(np.clip(value, np.finfo(dt).tiny, top), dtype=alpha.dtype)


class _Dirichlet(Function):
    """``Dirichlet.rsample``'s Function (torch's ``_Dirichlet``, so its node is
    ``_DirichletBackward``): the backward holds each coordinate's marginal Beta CDF fixed
    (``_dirichlet_grad``)."""

    @staticmethod
    def forward(ctx: Any, alpha: Any) -> Any:
        x = _dirichlet_draws(alpha, None)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> Any:
        alpha, x = ctx.saved_tensors
        total = alpha.sum(-1, True).expand_as(alpha)
        dx = _dirichlet_grad(x, alpha, total)
        return dx * (grad_output - (x * grad_output).sum(-1, True))


def _check_floating(input: Any, kernel: str) -> None:  # noqa: A002
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{input.dtype._scalar_name}'")


def _standard_gamma(input: Any, generator: Any = None) -> Any:  # noqa: A002
    """``torch._standard_gamma``: ``Gamma(input, 1)`` draws elementwise, differentiable in
    ``input`` through the implicit gradient (``StandardGammaBackward0``)."""
    _check_floating(input, "gamma_cpu")
    return _StandardGamma.apply(input, generator)


def _sample_dirichlet(input: Any, generator: Any = None) -> Any:  # noqa: A002
    """``torch._sample_dirichlet``: ``Dirichlet(input)`` draws along the last dim. As torch's,
    not differentiable (its node's backward raises); ``Dirichlet.rsample`` is."""
    from jitgrad.ops.random_nodes import SAMPLE_DIRICHLET_NODE, record_draws

    _check_floating(input, "dirichlet")
    with jitgrad.no_grad():
        draws = _dirichlet_draws(input, generator)
    return record_draws(SAMPLE_DIRICHLET_NODE, (input,), draws)


def _standard_gamma_grad(input: Any, output: Any) -> Any:  # noqa: A002
    """``torch._standard_gamma_grad``: ``d output / d input`` of ``Gamma(input, 1)`` draws
    ``output`` (the implicit reparameterization gradient), not differentiable."""
    dx = standard_gamma_grad(input.detach().numpy(), output.detach().numpy())
    return jitgrad.tensor(np.asarray(dx), dtype=input.dtype)


def _dirichlet_grad(x: Any, alpha: Any, total: Any) -> Any:
    """``torch._dirichlet_grad``: ``dx/dalpha`` of ``Beta(alpha, total - alpha)`` draws ``x``
    (in float64, returned in ``x``'s dtype), not differentiable."""
    dx = dirichlet_grad(x.detach().numpy(), alpha.detach().numpy(), total.detach().numpy())
    return jitgrad.tensor(np.asarray(dx), dtype=x.dtype)


def _dirichlet_rsample(alpha: Any) -> Any:
    """``Dirichlet(alpha)`` draws along the last dim, differentiable in ``alpha``."""
    return _Dirichlet.apply(alpha)
