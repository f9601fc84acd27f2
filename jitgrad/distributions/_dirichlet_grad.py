"""The reparameterized gradient of a Dirichlet sample, torch's ``_dirichlet_grad``.

Each coordinate ``x`` of a ``Dirichlet(alpha)`` sample is ``Beta(a, b)``-distributed with
``a = alpha_i``, ``b = total - a`` (the other concentrations' sum, which ``alpha_i`` leaves
alone); torch differentiates it holding that Beta's CDF fixed: ``dx/da = -dI/da (x; a, b) /
f(x; a, b)``, with ``I`` the regularized incomplete beta function and ``f`` the Beta density
torch's ``_dirichlet_grad`` is that derivative divided by ``1 - x``, and the Dirichlet backward
``grad_alpha_i = _dirichlet_grad_i * (g_i - sum_j x_j g_j)`` (for a Beta, ``dx/da`` itself).
torch evaluates it by approximations good to about 5e-4; this evaluates it to about 1e-9.

``I_x(a, b) = front * h`` with ``front = x**a (1-x)**b / (a B(a, b))`` and ``h`` the continued
fraction of Numerical Recipes' ``betacf`` (fast for ``x < (a+1)/(a+b+2)``; above it, the
symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)``). The fraction is evaluated with its derivative in
one parameter carried along (dual numbers through Lentz's iteration), and the density cancels
against ``front`` analytically:
``dx/da / (1-x) = -x/a * ((log x - 1/a - digamma(a) + digamma(a+b)) h + dh/da)``.
"""

from __future__ import annotations

import numpy as np

_TINY = 1e-300
_EPS = 1e-15
_MAX_ITERATIONS = 2000


def _digamma_np(a: np.ndarray) -> np.ndarray:
    import jitgrad

    return jitgrad.digamma(jitgrad.tensor(a, dtype=jitgrad.float64)).numpy()


def _guard(v: np.ndarray) -> np.ndarray:
    return np.where(np.abs(v) < _TINY, _TINY, v)


def _continued_fraction(x: np.ndarray, a: np.ndarray, b: np.ndarray, ta: float,
                        tb: float) -> tuple:
    """``(h, h')``: betacf's fraction and its derivative along ``(da, db) = (ta, tb)``."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    tab = ta + tb  # (the tangents of a + b; a + 1 and a - 1 move as a)
    d_v = _guard(1.0 - qab * x / qap)
    d_t = -(tab * x * qap - qab * x * ta) / qap ** 2
    d_v, d_t = 1.0 / d_v, -d_t / d_v ** 2
    c_v, c_t = np.ones_like(x), np.zeros_like(x)
    h_v, h_t = d_v.copy(), d_t.copy()
    active = np.ones(x.shape, bool)
    for m in range(1, _MAX_ITERATIONS + 1):
        m2 = 2.0 * m
        # even step: aa = m (b - m) x / ((qam + m2)(a + m2))
        num, num_t = m * (b - m) * x, m * tb * x
        den = (qam + m2) * (a + m2)
        den_t = ta * (a + m2) + (qam + m2) * ta
        aa, aa_t = num / den, (num_t * den - num * den_t) / den ** 2
        d_v, d_t, c_v, c_t, step, step_t = _lentz(aa, aa_t, d_v, d_t, c_v, c_t)
        h_v, h_t = h_v * step, h_t * step + h_v * step_t
        # odd step: aa = -(a + m)(qab + m) x / ((a + m2)(qap + m2))
        num = -(a + m) * (qab + m) * x
        num_t = -(ta * (qab + m) + (a + m) * tab) * x
        den = (a + m2) * (qap + m2)
        den_t = ta * (qap + m2) + (a + m2) * ta
        aa, aa_t = num / den, (num_t * den - num * den_t) / den ** 2
        d_v, d_t, c_v, c_t, step, step_t = _lentz(aa, aa_t, d_v, d_t, c_v, c_t)
        h_v, h_t = h_v * step, h_t * step + h_v * step_t
        active &= (np.abs(step - 1.0) >= _EPS) | (np.abs(step_t) >= _EPS * np.abs(h_t)
                                                   / np.maximum(np.abs(h_v), _TINY))
        if not active.any():
            break
    return h_v, h_t


def _lentz(aa, aa_t, d_v, d_t, c_v, c_t):
    # d = 1 / (1 + aa d); c = 1 + aa / c; step = d c (values and tangents)
    d_new = _guard(1.0 + aa * d_v)
    d_new_t = aa_t * d_v + aa * d_t
    d_v, d_t = 1.0 / d_new, -d_new_t / d_new ** 2
    c_old = c_v
    c_v = _guard(1.0 + aa / c_old)
    c_t = aa_t / c_old - aa * c_t / c_old ** 2
    return d_v, d_t, c_v, c_t, d_v * c_v, d_t * c_v + d_v * c_t


def _grad_below(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``-dI/da / f / (1 - x)`` at ``x`` below ``(a+1)/(a+b+2)``."""
    h, h_a = _continued_fraction(x, a, b, 1.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_front = np.log(x) - 1.0 / a - _digamma_np(a) + _digamma_np(a + b)
        return -x / a * (log_front * h + h_a)


def _grad_above(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``-dI/da / f / (1 - x)`` at ``x = 1 - y`` above ``(a+1)/(a+b+2)``, through
    ``I_x(a, b) = 1 - I_y(b, a)``: ``dJ/db' / f / y`` of ``J = I_y(a', b')``, ``a' = b``,
    ``b' = a``."""
    h, h_b = _continued_fraction(y, b, a, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_front = np.log1p(-y) - _digamma_np(a) + _digamma_np(a + b)
        return (1.0 - y) / b * (log_front * h + h_b)


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """torch's ``_dirichlet_grad(x, alpha, total)``: ``dx/dalpha / (1 - x)`` of
    Beta(alpha, total - alpha) samples ``x``, the second parameter held (float64 arrays)."""
    x, a = np.asarray(x, np.float64), np.asarray(alpha, np.float64)
    b = np.asarray(total, np.float64) - a
    x, a, b = np.broadcast_arrays(x, a, b)
    flip = x > (a + 1.0) / (a + b + 2.0)
    out = np.empty(x.shape)
    if (~flip).any():
        out[~flip] = _grad_below(x[~flip], a[~flip], b[~flip])
    if flip.any():
        out[flip] = _grad_above(1.0 - x[flip], a[flip], b[flip])
    out[~np.isfinite(out)] = 0.0
    return out
