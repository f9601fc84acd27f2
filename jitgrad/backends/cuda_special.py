"""The gamma-function family, ``erfinv`` and ``special.entr`` on the device: one pointwise
kernel per function (one thread per element of a contiguous copy), each element computed in
float64 and rounded to the result dtype, with the CPU's formulas (``ops/special_fns.py``):

* ``lgamma``: libdevice's ``lgamma`` (the CPU calls libm's), ``inf`` at the poles;
* ``digamma``: the recurrence ``psi(x) = psi(x + 1) - 1/x`` up to ``x >= 10``, the asymptotic
  series to ``B_14``, reflection below 0.5; torch's values at the poles;
* ``polygamma(n, x)``, ``n >= 1``: ``(-1)^(n+1) n! zeta(n + 1, x)``, the Hurwitz zeta by
  Euler-Maclaurin after 10 direct terms, reflection below 0 for ``n = 1``; for ``n >= 2``
  below 0 Cephes' order of summation (torch's), poles of the sign ``(-1)^(n+1)``;
* ``erfinv``: Giles' approximation and four Newton steps (on ``log(erfc)`` above 0.5);
* ``special.entr``: ``-x log x`` (0 at 0, ``-inf`` below);
* complex ``round`` and ``nan_to_num``: NumPy's rule on the real and imaginary parts
  separately (real dtypes keep their templates' kernels).

The device functions test their special points before calling ``math`` (under numba's
simulator they run as Python, where ``math.log(0)`` raises). Complex input has no kernel (the
CPU casts it to float64, dropping the imaginary part; torch raises).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _cuda_array as ca
from ..ops._special24_data import COEF
from .._cuda_array import CudaArray
from .numba_cuda import compile_source, launch_config


def _horner(var: str, coefs) -> str:
    """``((c0 * var + c1) * var + ...)`` for ``coefs`` from the highest power."""
    out = repr(float(coefs[0]))
    for c in coefs[1:]:
        out = f"({out} * {var} + {float(c)!r})"
    return out


_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_EM = tuple(b / math.factorial(2 * j) for j, b in enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
     -174611 / 330, 854513 / 138, -236364091 / 2730), start=1))
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _zeta_source() -> str:
    lines = ["@cuda.jit(device=True)", "def _zeta(s, q):", "    total = 0.0",
             "    for k in range(10):", "        total += (q + k) ** -s", "    a = q + 10.0",
             "    total += a ** (1.0 - s) / (s - 1.0) + 0.5 * a ** -s", "    rising = s",
             "    power = a ** (-s - 1.0)"]
    for j, c in enumerate(_EM, start=1):
        lines += [f"    total += {c!r} * rising * power",
                  f"    rising *= (s + {2 * j - 1}.0) * (s + {2 * j}.0)",
                  "    power = power / (a * a)"]
    return "\n".join(lines + ["    return total"]) + "\n"


_LIB = """import math


@cuda.jit(device=True)
def _lgamma(x):
    if x != x:
        return x
    if x == math.inf or x == -math.inf:
        return math.inf
    if x <= 0.0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


@cuda.jit(device=True)
def _digamma(x):
    if x != x or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    if x == 0.0:
        return math.inf if math.copysign(1.0, x) < 0.0 else -math.inf
    if x < 0.0 and x == math.floor(x):
        return math.nan
    reflect = x < 0.5
    y = 1.0 - x if reflect else x
    shift = 0.0
    for _ in range(10):
        if y < 10.0:
            shift = shift - 1.0 / y
            y = y + 1.0
    inv2 = 1.0 / (y * y)
    out = math.log(y) - 0.5 / y - (SERIES) * inv2 + shift
    if reflect:
        out = out - math.pi / math.tan(math.pi * x)
    return out


ZETA
@cuda.jit(device=True)
def _zeta_below(s, q):
    total = q ** -s
    a = q
    b = 0.0
    i = 0
    done = False
    while i < 9 or a <= 9.0:
        i += 1
        a = a + 1.0
        b = a ** -s
        total = total + b
        if -MACHEP * total < b and b < MACHEP * total:
            done = True
            break
    if done:
        return total
    w = a
    total = total + b * w / (s - 1.0) - 0.5 * b
    rising = 1.0
    k = 0.0
    for j in range(12):
        rising *= s + k
        b = b / w
        t = rising * b / CEPHES_A[j]
        total = total + t
        if abs(t / total) < MACHEP:
            return total
        k += 1.0
        rising *= s + k
        b = b / w
        k += 1.0
    return total


@cuda.jit(device=True)
def _polygamma(n, scale, x):
    if x != x:
        return math.nan
    if n == 1:
        if x == -math.inf:
            return math.nan
        if x == math.inf:
            return 0.0
        if x <= 0.0 and x == math.floor(x):
            return math.inf
        if x > 0.0:
            return scale * _zeta(2.0, x)
        r = math.pi / math.sin(math.pi * x)
        return r * r - scale * _zeta(2.0, 1.0 - x)
    if x == math.inf:
        return math.nan
    if x == -math.inf or x <= 0.0 and x == math.floor(x):
        return scale * math.inf
    if x > 0.0:
        return scale * _zeta(n + 1.0, x)
    return scale * _zeta_below(n + 1.0, x)


@cuda.jit(device=True)
def _erfinv(y):
    if y != y:
        return y
    a = abs(y)
    if a > 1.0:
        return math.nan
    if a == 1.0:
        return math.copysign(math.inf, y)
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        wc = w - 2.5
        p = CENTRAL
    else:
        wc = math.sqrt(w) - 3.0
        p = TAIL
    x = p * a
    tail = a > 0.5
    log_c = math.log(1.0 - a) if tail else 0.0
    for _ in range(4):
        slope = 1.1283791670955126 * math.exp(-x * x)
        if slope > 0.0:
            if tail:
                c = math.erfc(x)
                step = (math.log(c) - log_c) * c / slope if c > 0.0 else math.nan
            else:
                step = -(math.erf(x) - a) / slope
            if step - step == 0.0:
                x = x + step
    return math.copysign(x, y)


@cuda.jit(device=True)
def _entr(x):
    if x != x:
        return x
    if x == 0.0:
        return 0.0
    if x < 0.0:
        return -math.inf
    return -x * math.log(x)
""".replace("SERIES", _horner("inv2", _DIGAMMA_SERIES[::-1])).replace(
    "ZETA", _zeta_source()).replace("CEPHES_A", repr(tuple(COEF["zeta.A"][:12]))).replace(
    "MACHEP", "1.11022302462515654042e-16").replace(
    "CENTRAL", _horner("wc", _ERFINV_CENTRAL)).replace("TAIL", _horner("wc", _ERFINV_TAIL))

_KERNEL = """
def special(x, o, total, n, scale):
    for f in range(cuda.grid(1), total, cuda.gridsize(1)):
        o[f] = {D}({CALL})
"""
_CALLS = {"lgamma": "_lgamma(np.float64(x[f]))", "digamma": "_digamma(np.float64(x[f]))",
          "polygamma": "_polygamma(n, scale, np.float64(x[f]))",
          "erfinv": "_erfinv(np.float64(x[f]))", "special_entr": "_entr(np.float64(x[f]))"}


def special(name: str, x: CudaArray, out_dt: np.dtype, n: int = 0) -> CudaArray:
    """``name`` (``lgamma``, ``digamma``, ``polygamma`` with ``n``, ``erfinv``,
    ``special_entr``) of ``x``, elementwise, in ``out_dt``."""
    out_dt = np.dtype(out_dt)
    out = ca.empty(x.shape, out_dt)
    total = x.size
    if total:
        src = (x if x.is_contiguous() else x.copy()).view((total,))
        scale = float((1 if n % 2 else -1) * math.factorial(n)) if n else 0.0
        code = _LIB + _KERNEL.format(D=f"np.{out_dt.name}", CALL=_CALLS[name])
        blocks, threads = launch_config(total)
        compile_source(code, "special")[blocks, threads](src.dev(), out.view((total,)).dev(),
                                                         total, int(n), scale)
    return out


def _special_op(op, args, params):
    from .cuda_eager import _standin, unsupported

    x = args[0]
    if x._dtype.is_complex:
        raise unsupported(op, "no complex kernel: the CPU casts to float64, torch raises")
    _, dt = op.meta(_standin(x), **params)
    return special(op.name, x._data, dt.np, params.get("n", 0)), dt


# complex round / nan_to_num: NumPy's, applied to the real and imaginary parts separately
_PARTS = """def parts(x, o, total, nan, posinf, neginf):
    for f in range(cuda.grid(1), total, cuda.gridsize(1)):
        z = x[f]
        o[f] = {D}(complex({F}(z.real), {F}(z.imag)))
"""


def _parts_source(name: str, dt: np.dtype) -> str:
    if name == "round":
        return _PARTS.format(D=f"np.{dt.name}", F="_jg_round")
    # (the replacements are the kernel's arguments, so the rule is written inline)
    body = ("(nan if {v} != {v} else (posinf if {v} > 0 else neginf) "
            "if ({v} == math.inf or {v} == -math.inf) else {v})")
    return ("import math\n" + _PARTS.replace("{F}(z.real)", body.format(v="z.real"))
            .replace("{F}(z.imag)", body.format(v="z.imag")).format(D=f"np.{dt.name}"))


def _complex_parts_op(op, args, params):
    from .cuda_eager import _kernel_op

    x = args[0]
    if not x._dtype.is_complex:
        return _kernel_op(op, args, params)
    dt = x._dtype.np
    part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
    info = np.finfo(part)
    nan = params.get("nan", 0.0)
    posinf = params.get("posinf") if params.get("posinf") is not None else float(info.max)
    neginf = params.get("neginf") if params.get("neginf") is not None else float(info.min)
    out = ca.empty(x._data.shape, dt)
    total = x._data.size
    if total:
        src = (x._data if x._data.is_contiguous() else x._data.copy()).view((total,))
        blocks, threads = launch_config(total)
        compile_source(_parts_source(op.name, dt), "parts")[blocks, threads](
            src.dev(), out.view((total,)).dev(), total, part.type(nan), part.type(posinf),
            part.type(neginf))
    return out, x._dtype


BY_NAME = {name: _special_op for name in _CALLS}
BY_NAME.update({"round": _complex_parts_op, "nan_to_num": _complex_parts_op})
__all__ = ["BY_NAME", "special"]
