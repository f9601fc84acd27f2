"""The gamma-function family and ``erfinv``: ``lgamma``, ``digamma``, ``polygamma``,
``erfinv``, each one pointwise op with torch's node, computed in float64 and rounded.

* ``lgamma``: libm's ``lgamma`` (a compiled loop for large arrays, ``ops/nn_kernels``);
  gradient ``digamma``.
* ``digamma``: the recurrence ``psi(x) = psi(x + 1) - 1/x`` up to ``x >= 10``, then the
  asymptotic series to ``B_14``; ``x < 0.5`` by reflection, ``psi(1 - x) - pi / tan(pi x)``.
  About 1e-15 relative error away from the roots. Gradient ``polygamma(1, x)``.
* ``polygamma(n, x)``, ``n >= 1``: ``(-1)^(n+1) n! zeta(n + 1, x)``, the Hurwitz zeta by
  Euler-Maclaurin after 10 direct terms; ``n = 1`` below 0 by reflection. Gradient
  ``polygamma(n + 1, x)``.
* ``erfinv``: Giles' single-precision approximation refined by Newton steps on ``erf`` (on
  ``log(erfc)`` above 0.5, where ``1 - y`` is exact).
  Gradient ``sqrt(pi) / 2 * exp(erfinv(x)^2)``.

At the poles (non-positive integers) the values follow torch where torch is consistent
(``lgamma``: inf; ``digamma``: -inf at +0, inf at -0, nan at negative integers).
"""

from __future__ import annotations

import math

import numpy as np

from . import nn_kernels
from .dtype_rules import refuse_dtypes
from .registry import ELEMENTWISE, FLOAT, POINTWISE, Public, apply, defop
from .surface import public

_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
# the asymptotic series of digamma: sum B_2k / (2k) y^-2k, k = 1..7
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
# Euler-Maclaurin for the Hurwitz zeta: B_2j / (2j)!, j = 1..12
_EM = tuple(b / math.factorial(2 * j) for j, b in enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
     -174611 / 330, 854513 / 138, -236364091 / 2730), start=1))


def _float64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _rounded(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(like.dtype, copy=False)


# ---------------------------------------------------------------- lgamma


def _lgamma_impl(x: np.ndarray) -> np.ndarray:
    return _rounded(nn_kernels.special("lgamma", _float64(x)), x)


LGAMMA = defop("lgamma", _lgamma_impl, kind=POINTWISE, promote=FLOAT, save=(0,),
               check_operands=refuse_dtypes(complex="lgamma_vml_cpu"),
               vjp=(lambda g, ans, x: g * apply(DIGAMMA, x),), jvp=ELEMENTWISE,
               public=Public("lgamma", method=True, inplace=True))


# ---------------------------------------------------------------- digamma


def _digamma64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        y = np.where(reflect, 1.0 - x, x)
        shift = np.zeros_like(y)
        for _ in range(10):  # psi(y) = psi(y + 1) - 1/y, until y >= 10
            small = y < 10
            shift = np.where(small, shift - 1.0 / y, shift)
            y = np.where(small, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = 0.0
        for c in reversed(_DIGAMMA_SERIES):
            series = series * inv2 + c
        out = np.log(y) - 0.5 / y - series * inv2 + shift
        out = np.where(reflect, out - math.pi / np.tan(math.pi * x), out)
        # the poles: -inf at +0, +inf at -0, nan at negative integers (as torch)
        out = np.where(x == 0, np.where(np.signbit(x), np.inf, -np.inf), out)
        out = np.where((x < 0) & (x == np.floor(x)), np.nan, out)
        out = np.where(x == np.inf, np.inf, out)
        return np.where(x == -np.inf, np.nan, out)


def _digamma_impl(x: np.ndarray) -> np.ndarray:
    return _rounded(_digamma64(_float64(x)), x)


DIGAMMA = defop("digamma", _digamma_impl, kind=POINTWISE, promote=FLOAT, save=(0,),
                check_operands=refuse_dtypes(complex="digamma"),
                vjp=(lambda g, ans, x: g * apply(POLYGAMMA, x, n=1),), jvp=ELEMENTWISE,
                public=Public("digamma", method=True, inplace=True))


# ---------------------------------------------------------------- polygamma


def _hurwitz_zeta(s: float, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s > 1, q > 0 (Euler-Maclaurin after 10 terms)."""
    with np.errstate(all="ignore"):
        total = np.zeros_like(q)
        for k in range(10):
            total = total + (q + k) ** -s
        a = q + 10
        total = total + a ** (1 - s) / (s - 1) + 0.5 * a ** -s
        rising = s  # s (s+1) ... (s + 2j - 2)
        power = a ** (-s - 1)
        for j, c in enumerate(_EM, start=1):
            total = total + c * rising * power
            rising *= (s + 2 * j - 1) * (s + 2 * j)
            power = power / (a * a)
        return total


_MACHEP = 1.11022302462515654042e-16


def _zeta_below_zero(s: float, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) for an integer s > 1 and negative non-integer q, as Cephes (torch) sums it:
    (q + k)^-s from k = 0 until q + k > 9 (at least 10 terms; the terms below 0 cancel those
    above, so its order of summation is kept), then 12 Euler-Maclaurin terms."""
    from ._special24_data import COEF

    total = q ** -s
    a = q.copy()
    b = np.zeros_like(q)
    done = np.zeros(q.shape, dtype=bool)
    i = 0
    while True:
        active = ~done & ((i < 9) | (a <= 9.0))
        if not active.any():
            break
        i += 1
        a = np.where(active, a + 1.0, a)
        b = np.where(active, a ** -s, b)
        total = np.where(active, total + b, total)
        done |= active & (-_MACHEP * total < b) & (b < _MACHEP * total)
    tail = ~done
    w = a
    total = np.where(tail, total + b * w / (s - 1) - 0.5 * b, total)
    rising, k = 1.0, 0.0
    for coef in COEF["zeta.A"][:12]:
        rising *= s + k
        b = b / w
        t = rising * b / coef
        total = np.where(tail, total + t, total)
        tail &= ~(np.abs(t / total) < _MACHEP)
        k += 1.0
        rising *= s + k
        b = b / w
        k += 1.0
    return total


def _polygamma64(n: int, x: np.ndarray) -> np.ndarray:
    if n == 0:
        return _digamma64(x)
    sign = 1.0 if n % 2 else -1.0
    scale = sign * math.factorial(n)
    with np.errstate(all="ignore"):
        positive = (x > 0) & (x < np.inf)
        out = scale * _hurwitz_zeta(n + 1.0, np.where(positive, x, 1.0))
        if n == 1:  # psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
            mirror = scale * _hurwitz_zeta(2.0, np.where(positive, 1.0, 1.0 - x))
            reflected = (math.pi / np.sin(math.pi * x)) ** 2 - mirror
            out = np.where(positive, out, reflected)
            out = np.where((x <= 0) & (x == np.floor(x)), np.inf, out)
            out = np.where(x == np.inf, 0.0, out)
            return np.where(np.isnan(x) | (x == -np.inf), np.nan, out)
        # elsewhere torch's (-1)^(n+1) n! zeta(n + 1, x) (Cephes): a pole (inf) at the
        # non-positive integers and -inf, NaN at +inf, and for x < 0 the terms (x + k)^-(n+1)
        # up to x + m > 0, then zeta(n + 1, x + m)
        negative = (x < 0) & (x != np.floor(x)) & np.isfinite(x)
        if negative.any():
            out = np.array(out, dtype=np.float64, copy=True)
            out[negative] = scale * _zeta_below_zero(n + 1.0, x[negative])
        out = np.where((x <= 0) & (x == np.floor(x)), scale * np.inf, out)
        out = np.where(x == np.inf, np.nan, out)
        return np.where(np.isnan(x), np.nan, out)


def _polygamma_impl(x: np.ndarray, *, n: int) -> np.ndarray:
    return _rounded(_polygamma64(n, _float64(x)), x)


POLYGAMMA = defop("polygamma", _polygamma_impl, kind=POINTWISE, promote=FLOAT, save=(0,),
                  check_operands=refuse_dtypes(complex="polygamma"),
                  vjp=(lambda g, ans, x, *, n: g * apply(POLYGAMMA, x, n=n + 1),),
                  jvp=ELEMENTWISE)


_TRIGAMMA_CHECK = refuse_dtypes(complex="trigamma")


@public("polygamma")
def polygamma(n: int, input):  # noqa: A002
    """The ``n``-th derivative of the digamma function (``n = 0``: digamma)."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return apply(DIGAMMA, input)
    if n == 1:  # (torch's kernel for it: trigamma)
        _TRIGAMMA_CHECK((input,))
    return apply(POLYGAMMA, input, n=int(n))


@public(method="polygamma")
def _tensor_polygamma(input, n: int):  # noqa: A002 - Tensor.polygamma(n)
    """The ``n``-th derivative of the digamma function of this tensor."""
    return polygamma(n, input)


# ---------------------------------------------------------------- erfinv


def _erfinv64(y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        central = w < 5.0
        wc = np.where(central, w - 2.5, np.sqrt(np.where(central, 5.0, w)) - 3.0)
        p_central = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
        p_tail = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                  0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
        p = np.zeros_like(y)
        for a, b in zip(p_central, p_tail):
            p = p * wc + np.where(central, a, b)
        a = np.abs(y)
        x = p * a
        # Newton: on erf(x) = a in the centre; above 0.5 on log(erfc(x)) = log(1 - a), where
        # 1 - a is exact (1 - erf(x) is not) and the log keeps steps sane far in the tail
        tail = a > 0.5
        log_c = np.log(np.where(tail, 1.0 - a, 1.0))
        for _ in range(4):
            slope = 2 / math.sqrt(math.pi) * np.exp(-x * x)
            c = nn_kernels.special("erfc", x)
            step = np.where(tail, (np.log(c) - log_c) * c / slope,
                            -(nn_kernels.special("erf", x) - a) / slope)
            x = x + np.where(np.isfinite(step), step, 0.0)
        x = np.copysign(np.where(a == 1, np.inf, x), y)
        return np.where(a > 1, np.nan, x)


def _erfinv_impl(y: np.ndarray) -> np.ndarray:
    return _rounded(_erfinv64(_float64(y)), y)


ERFINV = defop("erfinv", _erfinv_impl, kind=POINTWISE, promote=FLOAT, save_output=True,
               check_operands=refuse_dtypes(complex="erfinv_vml_cpu"),
               vjp=(lambda g, ans, y: g * (_SQRT_PI_OVER_2 * (ans * ans).exp()),),
               jvp=ELEMENTWISE, public=Public("erfinv", method=True, inplace=True))


# ---------------------------------------------------------------- entr (torch.special)


def _entr_impl(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        value = -x * np.log(np.where(x > 0, x, 1))
        value = np.where(x == 0, 0, np.where(x < 0, -np.inf, value))
        return np.where(np.isnan(x), np.nan, value).astype(x.dtype, copy=False)


ENTR = defop("special_entr", _entr_impl, kind=POINTWISE, promote=FLOAT, save=(0,),
             check_operands=refuse_dtypes(complex="entr_cpu"),
             node_name="SpecialEntrBackward0",
             vjp=(lambda g, ans, x: g * -(1 + x.log()),), jvp=ELEMENTWISE)
