"""The regularized incomplete gamma functions ``igamma``/``igammac`` (torch.special's
``gammainc``/``gammaincc``), the Hurwitz zeta function ``special_zeta`` and ``mvlgamma``.

``igamma``/``igammac`` follow Cephes' ``igam``/``igamc`` as SciPy and torch refine them: the
power series (DLMF 8.11.4), the continued fraction for the upper tail, DLMF 8.7.3 for small
``x``, and Temme's uniform asymptotic series (DLMF 8.12.3/8.12.4, table ``IGAM_D``) for large
``a`` near ``x``; the prefactor ``x^a e^-x / Gamma(a)`` through Boost's Lanczos sum where the
direct form would cancel. ``zeta(x, q)`` sums ``(q + k)^-x`` until ``q + k > 9`` (at least 9
terms), then adds the Euler-Maclaurin tail (Cephes ``zeta``).

The scalar functions are plain Python over ``math`` (one element at a time, about 2-20 us per
element: these ops are not on any hot path). Gradients as torch's: only with respect to the
second argument (``IgammaBackward0``: ``exp((a - 1) log x - x - lgamma(a))``; zeta:
``-x zeta(x + 1, q)``); the first raises torch's "the derivative for ... is not implemented".
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ._special24_data import COEF
from ._special24_tables import IGAM_D
from .registry import ELEMENTWISE, POINTWISE, apply, defop
from .op_fields import no_derivative
from .special24 import real_op
from .surface import _operand, need_tensor, public, tensor_operands

_MACHEP = 1.11022302462515654042e-16
_MAXLOG = 7.09782712893383996843e2
_LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_NUM = COEF["lanczos.num"]
_LANCZOS_DEN = COEF["lanczos.denom"]
_ZETA_A = COEF["zeta.A"]


def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


def _ratevl(x: float, num: tuple, den: tuple) -> float:
    """A rational function, evaluated in ``1 / x`` for ``|x| > 1`` (Cephes ``ratevl``)."""
    if abs(x) > 1:
        y = 1 / x
        n = 0.0
        for c in reversed(num):
            n = n * y + c
        d = 0.0
        for c in reversed(den):
            d = d * y + c
        return x ** (len(den) - len(num)) * n / d
    n = 0.0
    for c in num:
        n = n * x + c
    d = 0.0
    for c in den:
        d = d * x + c
    return n / d


def _igam_fac(a: float, x: float) -> float:
    """``x^a e^-x / Gamma(a)``."""
    if abs(a - x) > 0.4 * abs(a):
        ax = a * math.log(x) - x - _lgamma(a)
        return 0.0 if ax < -_MAXLOG else math.exp(ax)
    fac = a + _LANCZOS_G - 0.5
    res = math.sqrt(fac / math.e) / _ratevl(a, _LANCZOS_NUM, _LANCZOS_DEN)
    if a < 200 and x < 200:
        return res * math.exp(a - x) * (x / fac) ** a
    num = x - a - _LANCZOS_G + 0.5
    numfac = num / fac
    return res * math.exp(a * (math.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac)


def _igam_series(a: float, x: float) -> float:
    ax = _igam_fac(a, x)
    if ax == 0.0:
        return 0.0
    r, c, ans = a, 1.0, 1.0
    for _ in range(2000):
        r += 1.0
        c *= x / r
        ans += c
        if c <= _MACHEP * ans:
            break
    return ans * ax / a


def _igamc_series(a: float, x: float) -> float:
    fac, total = 1.0, 0.0
    for n in range(1, 2000):
        fac *= -x / n
        term = fac / (a + n)
        total += term
        if abs(term) <= _MACHEP * abs(total):
            break
    logx = math.log(x)
    return -math.expm1(a * logx - _lgamma(1 + a)) - math.exp(a * logx - _lgamma(a)) * total


def _igam_asymptotic(a: float, x: float, igam: bool) -> float:
    sgn = -1 if igam else 1
    lam = x / a
    sigma = (x - a) / a
    if lam > 1:
        eta = math.sqrt(-2 * (math.log1p(sigma) - sigma))
    elif lam < 1:
        eta = -math.sqrt(-2 * (math.log1p(sigma) - sigma))
    else:
        eta = 0.0
    res = 0.5 * math.erfc(sgn * eta * math.sqrt(a / 2))
    etapow = [1.0] + [0.0] * 24
    maxpow = 0
    total = 0.0
    afac = 1.0
    absoldterm = math.inf
    for k in range(25):
        ck = IGAM_D[25 * k]
        for n in range(1, 25):
            if n > maxpow:
                etapow[n] = eta * etapow[n - 1]
                maxpow += 1
            ckterm = IGAM_D[25 * k + n] * etapow[n]
            ck += ckterm
            if abs(ckterm) < _MACHEP * abs(ck):
                break
        term = ck * afac
        absterm = abs(term)
        if absterm > absoldterm:
            break
        total += term
        if absterm < _MACHEP * abs(total):
            break
        absoldterm = absterm
        afac /= a
    # (torch multiplies by the float32 value of pi here)
    return res + sgn * math.exp(-0.5 * a * eta * eta) * total / math.sqrt(2 * _PI_F32 * a)


_PI_F32 = float(np.float32(math.pi))


def _igamc_fraction(a: float, x: float) -> float:
    ax = _igam_fac(a, x)
    if ax == 0.0:
        return 0.0
    big, biginv = 4.503599627370496e15, 2.22044604925031308085e-16
    y = 1.0 - a
    z = x + y + 1.0
    c = 0.0
    pkm2, qkm2 = 1.0, x
    pkm1, qkm1 = x + 1.0, z * x
    ans = pkm1 / qkm1
    for _ in range(2000):
        c += 1.0
        y += 1.0
        z += 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        if qk != 0:
            r = pk / qk
            t = abs((ans - r) / r)
            ans = r
        else:
            t = 1.0
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        if abs(pk) > big:
            pkm2 *= biginv
            pkm1 *= biginv
            qkm2 *= biginv
            qkm1 *= biginv
        if t <= _MACHEP:
            break
    return ans * ax


def _asymptotic_region(a: float, x: float) -> bool:
    ratio = abs(x - a) / a
    return (20.0 < a < 200.0 and ratio < 0.3) or (a > 200.0 and ratio < 4.5 / math.sqrt(a))


def igammac_scalar(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function ``Q(a, x)`` (torch's order of the special
    cases: a NaN operand gives NaN unless an earlier case decides, e.g. ``Q(nan, 0) = 1``)."""
    if x < 0 or a < 0:
        return math.nan
    if a == 0:
        return 0.0 if x > 0 else math.nan
    if x == 0:
        return 1.0
    if math.isinf(a):
        return math.nan if math.isinf(x) else 1.0
    if math.isinf(x):
        return 0.0
    if math.isnan(a) or math.isnan(x):
        return math.nan
    if _asymptotic_region(a, x):
        return _igam_asymptotic(a, x, False)
    if x > 1.1:
        return 1.0 - _igam_series(a, x) if x < a else _igamc_fraction(a, x)
    if x <= 0.5:
        return 1.0 - _igam_series(a, x) if -0.4 / math.log(x) < a else _igamc_series(a, x)
    return 1.0 - _igam_series(a, x) if x * 1.1 < a else _igamc_series(a, x)


def igamma_scalar(a: float, x: float) -> float:
    """The regularized lower incomplete gamma function ``P(a, x)`` (torch's order of the special
    cases: ``P(nan, 0) = 0``, ``P(inf, nan) = 0``, ``P(nan, inf) = 1``)."""
    if x < 0 or a < 0:
        return math.nan
    if a == 0:
        return 1.0 if x > 0 else math.nan
    if x == 0:
        return 0.0
    if math.isinf(a):
        return math.nan if math.isinf(x) else 0.0
    if math.isinf(x):
        return 1.0
    if math.isnan(a) or math.isnan(x):
        return math.nan
    if _asymptotic_region(a, x):
        return _igam_asymptotic(a, x, True)
    if x > 1.0 and x > a:
        return 1.0 - igammac_scalar(a, x)
    return _igam_series(a, x)


def zeta_scalar(x: float, q: float) -> float:
    """The Hurwitz zeta function ``sum_k (q + k)^-x`` (Cephes ``zeta``; its order of the special
    cases, so ``zeta(1, nan)`` and ``zeta(nan, 0)`` are inf as torch's)."""
    if x == 1:
        return math.inf
    if x < 1:
        return math.nan
    if q <= 0:
        if q == -math.inf or q == math.floor(q):
            return math.inf
        if math.isfinite(x) and x != math.floor(x):
            return math.nan
    if math.isnan(x) or math.isnan(q):
        return math.nan
    s = _pow(q, -x)
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = _pow(a, -x)
        s += b
        if -_MACHEP * s < b < _MACHEP * s:
            return s
    w = a
    s += b * w / (x - 1)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for i in range(12):
        a *= x + k
        b /= w
        t = a * b / _ZETA_A[i]
        s = s + t
        if s != 0 and abs(t / s) < _MACHEP:  # (C's 0 / 0 is NaN: no exit)
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


def _pow(base: float, exponent: float) -> float:
    try:
        return base ** exponent if base >= 0 or exponent == math.floor(exponent) \
            else math.nan
    except (OverflowError, ZeroDivisionError):
        return math.inf


def _binary(scalar):
    ufunc = np.frompyfunc(scalar, 2, 1)

    def impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
        dtype = np.result_type(a, x)
        out = ufunc(np.asarray(a, np.float64), np.asarray(x, np.float64))
        return np.asarray(out, dtype=np.float64).astype(dtype, copy=False)
    impl.__name__ = scalar.__name__.replace("_scalar", "_impl")
    return impl


def _no_forward_ad(name: str):
    def jvp(tangents, ans, *inputs, **params):
        raise NotImplementedError(
            f"Trying to use forward AD with {name} that does not support it because it has not "
            "been implemented yet.")
    return jvp


def _float_only(name: str):
    """igamma/igammac take floating tensors only (torch: not implemented for 'Long')."""
    def meta(a, x):
        from .registry import broadcast_shapes

        dtype = _result_dtype(a, x)
        if not dtype.is_floating_point:
            raise NotImplementedError(
                f"\"{name}_cpu\" not implemented for '{dtype._scalar_name}'")
        return broadcast_shapes(tuple(a.shape), tuple(x.shape)), dtype
    return meta


def _result_dtype(a, x):
    from .. import dtypes

    return dtypes.promote_types(a.dtype, x.dtype)


def _igamma_grad(g, ans, a, x):
    return g * ((a - 1) * x.log() - x - apply(_LGAMMA, a)).exp()


from .special_fns import LGAMMA as _LGAMMA  # noqa: E402 - (after the scalar code)

IGAMMA = defop("igamma", _binary(igamma_scalar), kind=POINTWISE, meta=_float_only("igamma"),
               save=(0, 1), vjp=(no_derivative("igamma: input"), _igamma_grad),
               jvp=_no_forward_ad("igamma"))
IGAMMAC = defop("igammac", _binary(igammac_scalar), kind=POINTWISE,
                meta=_float_only("igammac"), save=(0, 1),
                vjp=(no_derivative("igammac: input"),
                     lambda g, ans, a, x: -_igamma_grad(g, ans, a, x)),
                jvp=_no_forward_ad("igammac"))
ZETA = real_op("special_zeta", _binary(zeta_scalar), half=True, save=(0, 1),
               node_name="SpecialZetaBackward0",
               vjp=(no_derivative("zeta"),
                    lambda g, ans, x, q: g * -x * apply(ZETA, x + 1.0, q)),
               jvp=_no_forward_ad("special_zeta"))



def _inplace_form(op, fname: str):
    def fn(input, other):  # noqa: A002
        from .inplace import inplace

        need_tensor(fname, "other", 1, _operand(other))
        return inplace(input, lambda t: apply(op, t, _operand(other)))
    fn.__name__ = fn.__qualname__ = fname
    return fn


igamma = public("igamma")(tensor_operands(IGAMMA, "igamma", False))
igammac = public("igammac")(tensor_operands(IGAMMAC, "igammac", False))
_igamma_method = public(method="igamma")(tensor_operands(IGAMMA, "igamma", True))
_igammac_method = public(method="igammac")(tensor_operands(IGAMMAC, "igammac", True))
_igamma_ = public(method="igamma_")(_inplace_form(IGAMMA, "igamma_"))
_igammac_ = public(method="igammac_")(_inplace_form(IGAMMAC, "igammac_"))
igamma.__doc__ = "The regularized lower incomplete gamma function ``P(input, other)``."
igammac.__doc__ = "The regularized upper incomplete gamma function ``Q(input, other)``."

# ---------------------------------------------------------------- mvlgamma


def _mvlgamma_impl(x: np.ndarray, *, p: int) -> np.ndarray:
    from . import nn_kernels

    x64 = np.asarray(x, dtype=np.float64)
    total = np.full_like(x64, p * (p - 1) / 4 * math.log(math.pi))
    for j in range(p):
        total = total + nn_kernels.special("lgamma", x64 - j / 2)
    return total.astype(x.dtype, copy=False)


def _mvlgamma_vjp(g, ans, x, *, p):
    from .special_fns import DIGAMMA

    total = apply(DIGAMMA, x)
    for j in range(1, p):
        total = total + apply(DIGAMMA, x - j / 2)
    return g * total


MVLGAMMA = real_op("mvlgamma", _mvlgamma_impl, "arange", save=(0,), vjp=(_mvlgamma_vjp,),
                   jvp=ELEMENTWISE)


def _check_mvlgamma(x, p: int):
    """torch's checks: no bool input, ``p >= 1`` (values at or below ``(p - 1) / 2`` are
    computed: ``inf`` at the poles of a term, as torch 2.13 no longer refuses them)."""
    if x.dtype is dtypes.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")


@public("mvlgamma", method=True)
def mvlgamma(input, p: int):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2)`` (``MvlgammaBackward0``)."""
    _check_mvlgamma(input, p)
    return apply(MVLGAMMA, input, p=int(p))


@public(method="mvlgamma_")
def _mvlgamma_(input, p: int):  # noqa: A002
    """``mvlgamma`` in place."""
    from .inplace import inplace

    _check_mvlgamma(input, p)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # (torch's words)
        raise RuntimeError(f"mvlgamma: result type {input.dtype._scalar_name} "
                           "can't be cast to the desired output type "
                           f"{dtypes.get_default_dtype()._scalar_name}")
    return inplace(input, lambda t: apply(MVLGAMMA, t, p=int(p)))
