"""torch.special's orthogonal polynomials ``P_n(x)``: Chebyshev T/U/V/W (and shifted, on
``[0, 1]``), physicists' and probabilists' Hermite H/He, Laguerre L, Legendre P.

Each is one pointwise op of ``(x, n)`` with torch's rules: the result dtype is the promoted
floating dtype of both, ``n`` is truncated to an integer (non-finite: -1), ``n < 0`` gives 0,
the values at ``|x| == 1`` (``x`` in {0, 1} for the shifted ones) are exact, Chebyshev's large
``n`` inside the interval use the trigonometric forms, Hermite above ``n = 512`` is NaN, and
otherwise the three-term recurrence runs ``n - 1`` steps (vectorized over the elements still
running), in the result's dtype as torch's kernels. None is differentiable in torch (no
``grad_fn``), nor here.
"""

from __future__ import annotations

import numpy as np

from .special24 import real_op


def _orders(n: np.ndarray) -> np.ndarray:
    finite = np.isfinite(n)
    return np.where(finite, np.trunc(np.where(finite, n, -1)), -1).astype(np.int64)


def _recurrence(x, n, q0, step):
    """``n - 1`` steps of ``r = step(j, x, p, q)`` from ``(p, q) = (1, q0)``, j = 1, 2, ...
    (elements with ``n < 2`` keep ``q0``)."""
    p = np.ones_like(x)
    q = np.array(q0, dtype=x.dtype, copy=True)
    idx = np.flatnonzero(n >= 2)
    xs, ns = x[idx], n[idx]
    ps, qs = p[idx], q[idx]
    j = 1
    while idx.size:
        r = step(float(j), xs, ps, qs)
        ps, qs = qs, r
        done = (ns - 1 <= j) | np.isnan(qs)
        if done.any():
            q[idx[done]] = qs[done]
            keep = ~done
            idx, xs, ns, ps, qs = idx[keep], xs[keep], ns[keep], ps[keep], qs[keep]
        j += 1
    return q


def _flat(fn):
    def impl(x: np.ndarray, n: np.ndarray) -> np.ndarray:
        dtype = np.result_type(x, n)
        # in the result's dtype, as torch's kernels (float32's recurrence overflows to inf, then
        # NaN, where float64's value only rounds to inf at the end)
        work = dtype if dtype in (np.float32, np.float64) else np.float64
        xb, nb = np.broadcast_arrays(np.asarray(x, work), np.asarray(n, np.float64))
        with np.errstate(all="ignore"):
            out = fn(xb.ravel().copy(), _orders(nb.ravel()))
        return out.reshape(xb.shape).astype(dtype, copy=False)
    impl.__name__ = fn.__name__.lstrip("_") + "_impl"
    return impl


def _finish(n, out, q0):
    out = np.where(n == 1, q0, out)
    out = np.where(n == 0, 1.0, out)
    return out


def _parity(n, even, odd):
    return np.where(n % 2 == 0, even, odd)


def _cheb(kind: str, shifted: bool):
    def fn(x, n):
        y = x + x - 1.0 if shifted else x
        q0 = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
        out = _recurrence(y, n, q0, lambda j, y_, p, q: (y_ + y_) * q - p)
        out = _finish(n, out, q0)
        nf = n.astype(x.dtype)
        with np.errstate(all="ignore"):
            theta = np.arccos(np.clip(y, -1.0, 1.0))
            if kind == "t":
                trig = np.cos(nf * theta)
            elif kind == "u":
                s = np.sin(theta)
                trig = np.where(s != 0, np.sin((nf + 1) * theta) / s,
                                (nf + 1) * np.cos((nf + 1) * theta) / y)
            elif kind == "v":
                trig = np.where(np.sin(theta / 2) != 1, np.cos((nf + 0.5) * theta)
                                / np.cos(theta / 2), _parity(n, nf + nf + 1, -(nf + nf + 1)))
            else:
                edge = np.where(y > 0, nf + nf + 1, _parity(n, 1.0, -1.0))
                if shifted:
                    edge = _parity(n, 1.0, -1.0)
                trig = np.where(np.cos(theta / 2) != 1, np.sin((nf + 0.5) * theta)
                                / np.sin(theta / 2), edge)
        threshold = (4 if kind == "w" else 6) if shifted else (6 if kind == "t" else 8)
        out = np.where((n > threshold) & (np.abs(y) < 1), trig, out)
        # the ends of the interval
        hi = {"t": 1.0, "u": nf + 1, "v": 1.0, "w": nf + nf + 1}[kind]
        lo = {"t": _parity(n, 1.0, -1.0), "u": _parity(n, nf + 1, -(nf + 1)),
              "v": _parity(n, nf + nf + 1, -(nf + nf + 1)), "w": _parity(n, 1.0, -1.0)}[kind]
        if shifted:
            out = np.where(x == 0, lo, out)
            out = np.where(x == 1, hi, out)
        else:
            out = np.where(np.abs(x) == 1, np.where(x > 0, hi, lo), out)
        return np.where(n < 0, 0.0, out)
    fn.__name__ = ("_shifted_" if shifted else "_") + "chebyshev_polynomial_" + kind
    return fn


def _hermite_h(x, n):
    out = _recurrence(x, n, x + x, lambda j, x_, p, q: (x_ + x_) * q - (2 * j) * p)
    out = np.where(n > 512, np.nan, _finish(n, out, x + x))
    return np.where(n < 0, 0.0, out)


def _hermite_he(x, n):
    out = _recurrence(x, n, x, lambda j, x_, p, q: x_ * q - j * p)
    out = np.where(n > 512, np.nan, _finish(n, out, x))
    return np.where(n < 0, 0.0, out)


def _laguerre_l(x, n):
    out = _recurrence(x, n, 1.0 - x,
                      lambda j, x_, p, q: (((j + j) + (1.0 - x_)) * q - j * p) / (j + 1))
    out = np.where(x == 0, 1.0, _finish(n, out, 1.0 - x))
    return np.where(n < 0, 0.0, out)


def _legendre_p(x, n):
    out = _recurrence(x, n, x, lambda j, x_, p, q: ((j + j + 1) * x_ * q - j * p) / (j + 1))
    out = _finish(n, out, x)
    out = np.where(np.abs(x) == 1, np.where(x > 0, 1.0, _parity(n, 1.0, -1.0)), out)
    return np.where(n < 0, 0.0, out)


_FUNCTIONS = {
    **{f"chebyshev_polynomial_{k}": _cheb(k, False) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _cheb(k, True) for k in "tuvw"},
    "hermite_polynomial_h": _hermite_h, "hermite_polynomial_he": _hermite_he,
    "laguerre_polynomial_l": _laguerre_l, "legendre_polynomial_p": _legendre_p,
}
POLYNOMIAL_OPS = {name: real_op("special_" + name, _flat(fn), half=True,
                                  differentiable=False)
                  for name, fn in _FUNCTIONS.items()}
