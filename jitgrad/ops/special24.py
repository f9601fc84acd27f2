"""torch.special's Bessel-type functions and the normal-distribution helpers, each one pointwise
op computed in float64 (NumPy, vectorized) and rounded to the input's floating dtype (integer
and bool inputs promote to the default dtype, as torch's ``special_*`` ops do).

The approximations are Cephes' (S. L. Moshier) as torch evaluates them, coefficients in
``_special24_data``; ``erfcx`` is S. G. Johnson's (Faddeeva package: 100 piecewise Chebyshev
polynomials on ``400 / (4 + x)``, a continued fraction above 50).

* ``i0``/``i0e``/``i1``/``i1e``: Chebyshev series on ``[0, 8]`` and ``(8, inf)``; gradients as
  torch's (``I0Backward0``, ``SpecialI0EBackward0``, ...).
* ``erfcx``, ``log_ndtr``, ``ndtri``: differentiable (``SpecialErfcxBackward0``, ...).
* ``bessel_j0/j1/y0/y1``, ``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1``,
  ``airy_ai``, ``spherical_bessel_j0``: not differentiable in torch (no ``grad_fn``), nor here.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ._special24_data import COEF
from ._special24_tables import ERFCX_Y100
from .elementwise import where
from .registry import ELEMENTWISE, FLOAT, POINTWISE, Public, apply, broadcast_shapes, \
    compute_dtype, defop

_ERFCX_TABLE = np.array(ERFCX_Y100, dtype=np.float64)
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_PI_4 = 0.785398163397448309615660845819875721
_3PI_4 = 2.356194490192344928846982537459627163


def _c(name: str) -> tuple:
    return COEF[name]


def _float64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _chbevl(x: np.ndarray, coef: tuple) -> np.ndarray:
    """Clenshaw's sum of a Chebyshev series (Cephes ``chbevl``)."""
    b0 = np.full_like(x, coef[0])
    b1 = np.zeros_like(x)
    b2 = np.zeros_like(x)
    for c in coef[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _polevl(x: np.ndarray, coef: tuple) -> np.ndarray:
    """Horner's rule, highest coefficient first (Cephes ``polevl``)."""
    out = np.zeros_like(x)
    for c in coef:
        out = out * x + c
    return out


def _pointwise(fn):
    """A float64 NumPy function of one array as an op impl: float64 in, the input dtype out."""
    def impl(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(_float64(x))).astype(x.dtype, copy=False)
    impl.__name__ = fn.__name__.lstrip("_") + "_impl"
    return impl


def real_meta(kernel: str):
    """A pointwise meta (broadcast shapes, FLOAT promotion) that rejects complex operands with
    torch's error (``"<kernel>_cpu" not implemented for 'ComplexFloat'``). Returns the meta and
    the list to append the op to once defined (the promotion rule reads it)."""
    holder: list = []

    def meta(*args, **params):
        shape = broadcast_shapes(*(a.shape for a in args if hasattr(a, "shape")))
        dtype = compute_dtype(holder[0], args)[1]
        if dtype.is_complex:
            raise NotImplementedError(f'"{kernel}_cpu" not implemented for '
                                      f"'{dtype._scalar_name}'")
        return shape, dtype
    return meta, holder


def real_op(name: str, impl, kernel: str | None = None, half: bool = False, **fields):
    """``defop(name, impl, kind=POINTWISE, promote=FLOAT, **fields)`` rejecting complex input
    (and, with ``half``, float16/bfloat16: torch builds these kernels for float32/64 only)."""
    kernel = kernel or name.removeprefix("special_")
    meta, holder = real_meta(kernel)
    if half:
        from .dtype_rules import refuse_dtypes

        fields["check_operands"] = refuse_dtypes(half=f"{kernel}_cpu")
    op = defop(name, impl, kind=POINTWISE, promote=FLOAT, meta=meta, **fields)
    holder.append(op)
    return op


def _signed(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.where(x < 0, -value, value)


# ---------------------------------------------------------------- i0, i0e, i1, i1e


def _i0e_abs(ax: np.ndarray) -> np.ndarray:
    small = ax <= 8.0
    lo = _chbevl(ax / 2.0 - 2.0, _c("i0e.A"))
    hi = _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0, _c("i0e.B")) / np.sqrt(ax)
    return np.where(small, lo, hi)


def _i0(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    small = ax <= 8.0
    lo = np.exp(ax) * _chbevl(ax / 2.0 - 2.0, _c("i0e.A"))
    hi = np.exp(ax) * _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0, _c("i0e.B")) / np.sqrt(ax)
    return np.where(small, lo, hi)


def _i0e(x: np.ndarray) -> np.ndarray:
    return _i0e_abs(np.abs(x))


def _i1(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    small = ax <= 8.0
    lo = np.exp(ax) * ax * _chbevl(ax / 2.0 - 2.0, _c("i1e.A"))
    hi = np.exp(ax) * _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0, _c("i1e.B")) / np.sqrt(ax)
    return _signed(x, np.where(small, lo, hi))


def _i1e(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    small = ax <= 8.0
    lo = _chbevl(ax / 2.0 - 2.0, _c("i1e.A")) * ax
    hi = _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0, _c("i1e.B")) / np.sqrt(ax)
    return _signed(x, np.where(small, lo, hi))


def _eps(x) -> float:
    return float(np.finfo(np.float32 if x.dtype == dtypes.float32 else np.float64).eps)


def _i1_vjp(g, ans, x):
    # torch's i1_backward: 0.5 at |x| <= eps, where i0(x) - i1(x) / x cancels
    tiny = x.abs() <= _eps(x)
    safe = where(tiny, _eps(x), x)
    return g * where(tiny, 0.5, apply(I0, safe) - ans / safe)


def _i1e_vjp(g, ans, x):
    tiny = x.abs() <= _eps(x)
    safe = where(tiny, _eps(x), x)
    return g * where(tiny, 0.5, apply(I0E, safe) - ans * (safe.sign() + 1 / safe))


I0 = real_op("i0", _pointwise(_i0), "i0_vml", save=(0,),
             vjp=(lambda g, ans, x: g * apply(I1, x),), jvp=ELEMENTWISE,
             public=Public("i0", method=True, inplace=True))
I0E = real_op("special_i0e", _pointwise(_i0e), save=(0,), save_output=True,
              node_name="SpecialI0EBackward0",
              vjp=(lambda g, ans, x: g * (apply(I1E, x) - x.sign() * ans),), jvp=ELEMENTWISE)
I1 = real_op("special_i1", _pointwise(_i1), save=(0,), save_output=True,
             node_name="SpecialI1Backward0", vjp=(_i1_vjp,), jvp=ELEMENTWISE)
I1E = real_op("special_i1e", _pointwise(_i1e), save=(0,), save_output=True,
              node_name="SpecialI1EBackward0", vjp=(_i1e_vjp,), jvp=ELEMENTWISE)


# ---------------------------------------------------------------- erfcx, log_ndtr, ndtri


def _erfcx_y100(y100: np.ndarray) -> np.ndarray:
    k = np.clip(np.floor(np.nan_to_num(y100)), 0, 100).astype(np.int64)
    rows = _ERFCX_TABLE[np.minimum(k, 99)]
    t = 2 * y100 - (2 * k + 1)
    out = rows[..., 6]
    for j in range(5, -1, -1):
        out = rows[..., j] + out * t
    return np.where(k >= 100, 1.0, out)  # y = 1: |x| < 4 eps, erfcx within 1e-15 of 1


def _erfcx(x: np.ndarray) -> np.ndarray:
    ispi = 0.56418958354775628694807945156  # 1 / sqrt(pi)
    ax = np.abs(x)
    x2 = x * x
    # x > 50: the continued fraction ispi / (x + 0.5 / (x + 1 / (x + 1.5 / (x + 2 / x))))
    far = np.where(x > 5e7, ispi / x, ispi * (x2 * (x2 + 4.5) + 2) / (x * (x2 * (x2 + 5) + 3.75)))
    near = _erfcx_y100(400 / (4 + ax))
    neg = np.where(x < -6.1, 2 * np.exp(x2), 2 * np.exp(x2) - near)
    neg = np.where(x < -26.7, np.inf, neg)
    out = np.where(x >= 0, np.where(x > 50, far, near), neg)
    return np.where(np.isnan(x), x, out)


def _log_ndtr(x: np.ndarray) -> np.ndarray:
    t = x * (1 / math.sqrt(2))
    left = np.log(_erfcx(-t) / 2) - t * t
    from . import nn_kernels

    right = np.log1p(-nn_kernels.special("erfc", np.where(x < -1, 0.0, t)) / 2)
    return np.where(x < -1, left, right)


def _ndtri(y0: np.ndarray) -> np.ndarray:
    s2pi = 2.50662827463100050242
    e2 = 0.13533528323661269189  # exp(-2)
    upper = y0 > 1 - e2
    y = np.where(upper, 1 - y0, y0)
    yc = y - 0.5
    y2 = yc * yc
    central = s2pi * (yc + yc * (y2 * _polevl(y2, _c("ndtri.P0")) / _polevl(y2, _c("ndtri.Q0"))))
    ys = np.where((y > 0) & (y <= e2), y, e2)
    x = np.sqrt(-2.0 * np.log(ys))
    x0 = x - np.log(x) / x
    z = 1 / x
    x1 = np.where(x < 8.0, z * _polevl(z, _c("ndtri.P1")) / _polevl(z, _c("ndtri.Q1")),
                  z * _polevl(z, _c("ndtri.P2")) / _polevl(z, _c("ndtri.Q2")))
    tail = np.where(upper, x0 - x1, -(x0 - x1))
    out = np.where(y > e2, central, tail)
    out = np.where(y0 == 0, -np.inf, np.where(y0 == 1, np.inf, out))
    return np.where((y0 < 0) | (y0 > 1) | np.isnan(y0), np.nan, out)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)

ERFCX = real_op("special_erfcx", _pointwise(_erfcx), half=True, save=(0,), save_output=True,
                node_name="SpecialErfcxBackward0",
                vjp=(lambda g, ans, x: g * (2.0 * x * ans - _TWO_OVER_SQRT_PI),),
                jvp=ELEMENTWISE)
LOG_NDTR = real_op("special_log_ndtr", _pointwise(_log_ndtr), half=True, save=(0,),
                   save_output=True,
                   node_name="SpecialLogNdtrBackward0",
                   vjp=(lambda g, ans, x: g / _SQRT_2PI * (-(ans + x * x / 2)).exp(),),
                   jvp=ELEMENTWISE)
NDTRI = real_op("special_ndtri", _pointwise(_ndtri), half=True, save_output=True,
                node_name="SpecialNdtriBackward0",
                vjp=(lambda g, ans, x: g * _SQRT_2PI * (ans * ans / 2).exp(),), jvp=ELEMENTWISE)


# ---------------------------------------------------------------- Bessel J, Y


def _bessel_far(x, c, name, phase, sine):
    """The asymptotic form ``sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase))``
    (``sine``: with sin/cos swapped and the sign of the Q term flipped: the Y functions)."""
    w = 25.0 / (x * x) if name in ("bessel_j0", "bessel_y0") else 5.0 / x * (5.0 / x)
    p = _polevl(w, c(name + ".PP")) / _polevl(w, c(name + ".PQ"))
    q = _polevl(w, c(name + ".QP")) / _polevl(w, c(name + ".QQ"))
    if sine:
        return (p * np.sin(x - phase) + 5.0 / x * q * np.cos(x - phase)) * _SQRT_2_OVER_PI \
            / np.sqrt(x)
    return (p * np.cos(x - phase) - 5.0 / x * q * np.sin(x - phase)) * _SQRT_2_OVER_PI / np.sqrt(x)


def _bessel_j0(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    x2 = x * x
    near = (x2 - 5.78318596294678452118) * (x2 - 3.04712623436620863991e1) \
        * _polevl(x2, _c("bessel_j0.RP")) / _polevl(x2, _c("bessel_j0.RQ"))
    near = np.where(x < 1e-5, 1.0 - x2 / 4.0, near)
    far = _bessel_far(np.where(x <= 5, 10.0, x), _c, "bessel_j0", _PI_4, False)
    return np.where(x <= 5, near, far)


def _bessel_j1(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    x2 = ax * ax
    near = _polevl(x2, _c("bessel_j1.RP")) / _polevl(x2, _c("bessel_j1.RQ")) * ax \
        * (x2 - 1.46819706421238932572e1) * (x2 - 4.92184563216946036703e1)
    far = _bessel_far(np.where(ax <= 5, 10.0, ax), _c, "bessel_j1", _3PI_4, False)
    return _signed(x, np.where(ax <= 5, near, far))


def _bessel_y0(x: np.ndarray) -> np.ndarray:
    xs = np.where(x > 0, x, 1.0)
    x2 = xs * xs
    near = _polevl(x2, _c("bessel_y0.YP")) / _polevl(x2, _c("bessel_y0.YQ")) \
        + _TWO_OVER_PI * np.log(xs) * _bessel_j0(xs)
    near = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, near))
    far = _bessel_far(np.where(x <= 5, 10.0, x), _c, "bessel_y0", _PI_4, True)
    return np.where(np.isnan(x), x, np.where(x <= 5, near, far))


def _bessel_y1(x: np.ndarray) -> np.ndarray:
    xs = np.where(x > 0, x, 1.0)
    x2 = xs * xs
    near = xs * (_polevl(x2, _c("bessel_y1.YP")) / _polevl(x2, _c("bessel_y1.YQ"))) \
        + _TWO_OVER_PI * (_bessel_j1(xs) * np.log(xs) - 1.0 / xs)
    near = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, near))
    far = _bessel_far(np.where(x <= 5, 10.0, x), _c, "bessel_y1", _3PI_4, True)
    return np.where(np.isnan(x), x, np.where(x <= 5, near, far))


# ---------------------------------------------------------------- modified Bessel I, K


def _mod_i0(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    small = ax <= 8.0
    lo = np.exp(ax) * _chbevl(ax / 2.0 - 2.0, _c("modified_bessel_i0.A"))
    hi = np.exp(ax) * _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0,
                              _c("modified_bessel_i0.B")) / np.sqrt(ax)
    return np.where(small, lo, hi)


def _mod_i1(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    small = ax <= 8.0
    lo = _chbevl(ax / 2.0 - 2.0, _c("modified_bessel_i1.A")) * ax * np.exp(ax)
    hi = np.exp(ax) * _chbevl(32.0 / np.where(small, 32.0, ax) - 2.0,
                              _c("modified_bessel_i1.B")) / np.sqrt(ax)
    return _signed(x, np.where(small, lo, hi))


def _k_domain(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.where(x == 0, np.inf, np.where(x < 0, np.nan, value))


def _mod_k0(x: np.ndarray, scaled: bool = False) -> np.ndarray:
    xs = np.where(x > 0, x, 1.0)
    name = "scaled_modified_bessel_k0" if scaled else "modified_bessel_k0"
    small = xs <= 2.0
    lo = _chbevl(xs * xs - 2.0, _c(name + ".A")) - np.log(0.5 * xs) * _mod_i0(xs)
    chb = _chbevl(8.0 / xs - 2.0, _c(name + ".B"))
    out = np.where(small, lo * np.exp(xs), chb / np.sqrt(xs)) if scaled \
        else np.where(small, lo, np.exp(-xs) * chb / np.sqrt(xs))
    return np.where(np.isnan(x), x, _k_domain(x, out))


def _mod_k1(x: np.ndarray, scaled: bool = False) -> np.ndarray:
    xs = np.where(x > 0, x, 1.0)
    name = "scaled_modified_bessel_k1" if scaled else "modified_bessel_k1"
    small = xs <= 2.0
    lo = np.log(0.5 * xs) * _mod_i1(xs) + _chbevl(xs * xs - 2.0, _c(name + ".A")) / xs
    chb = _chbevl(8.0 / xs - 2.0, _c(name + ".B"))
    out = np.where(small, lo * np.exp(xs), chb / np.sqrt(xs)) if scaled \
        else np.where(small, lo, np.exp(-xs) * chb / np.sqrt(xs))
    return np.where(np.isnan(x), x, _k_domain(x, out))


def _scaled_k0(x: np.ndarray) -> np.ndarray:
    return _mod_k0(x, scaled=True)


def _scaled_k1(x: np.ndarray) -> np.ndarray:
    return _mod_k1(x, scaled=True)


# ---------------------------------------------------------------- Airy Ai, spherical j0


def _airy_ai(x: np.ndarray) -> np.ndarray:
    c = _c
    # x < -2.09: the oscillating asymptotic form
    xn = np.where(x < -2.09, x, -3.0)
    zeta_n = -2.0 * xn * np.sqrt(-xn) / 3.0
    z = 1.0 / zeta_n
    zz = z * z
    afn = _polevl(zz, c("airy_ai.AFN")) / _polevl(zz, c("airy_ai.AFD"))
    agn = _polevl(zz, c("airy_ai.AGN")) / _polevl(zz, c("airy_ai.AGD"))
    t = zeta_n + 0.25 * math.pi
    neg = 5.64189583547756286948e-01 / np.sqrt(np.sqrt(-xn)) \
        * (np.sin(t) * (1.0 + zz * afn) - np.cos(t) * (z * agn))
    # x >= 2.09: the decaying asymptotic form
    xp = np.where(x >= 2.09, x, 3.0)
    zeta_p = 2.0 * xp * np.sqrt(xp) / 3.0
    r = 1.0 / zeta_p
    pos = 5.64189583547756286948e-01 * (_polevl(r, c("airy_ai.AN")) / _polevl(r, c("airy_ai.AD"))) \
        / (2.0 * np.sqrt(np.sqrt(xp)) * np.exp(zeta_p))
    # otherwise: the Maclaurin series c1 f(x) - c2 g(x), summed until its terms vanish
    xm = np.where((x >= -2.09) & (x < 2.09), x, 0.0)
    f = np.ones_like(xm)
    g = xm.copy()
    k = 1.0
    m = np.ones_like(xm)
    n = xm.copy()
    cube = xm * xm * xm
    eps = np.finfo(np.float64).eps
    active = np.ones(xm.shape, dtype=bool)
    while active.any():
        m = m * cube / (k + 1) / (k + 2)
        n = n * cube / (k + 2) / (k + 3)
        k += 3.0
        f = np.where(active, f + m, f)
        g = np.where(active, g + n, g)
        active = active & (np.abs(m / f) > eps)
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    out = np.where(x < -2.09, neg, np.where(x >= 2.09, pos, series))
    out = np.where(x > 103.892, 0.0, out)
    return np.where(np.isinf(x), np.nan, np.where(np.isnan(x), x, out))


def _spherical_bessel_j0(x: np.ndarray) -> np.ndarray:
    x2 = x * x
    series = 1.0 + x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (
        1.0 / 362880.0 + x2 * (-1.0 / 39916800.0 + x2 * (1.0 / 6227020800.0))))))
    out = np.where(np.abs(x) < 0.5, series, np.sin(x) / x)
    return np.where(np.isinf(x), 0.0, out)


# (torch's special_* ops here have no derivative: their results do not require grad)
_NOT_DIFFERENTIABLE = {
    "bessel_j0": _bessel_j0, "bessel_j1": _bessel_j1, "bessel_y0": _bessel_y0,
    "bessel_y1": _bessel_y1, "modified_bessel_i0": _mod_i0, "modified_bessel_i1": _mod_i1,
    "modified_bessel_k0": _mod_k0, "modified_bessel_k1": _mod_k1,
    "scaled_modified_bessel_k0": _scaled_k0, "scaled_modified_bessel_k1": _scaled_k1,
    "airy_ai": _airy_ai, "spherical_bessel_j0": _spherical_bessel_j0,
}
BESSEL_OPS = {name: real_op("special_" + name, _pointwise(fn), half=True, differentiable=False)
              for name, fn in _NOT_DIFFERENTIABLE.items()}
