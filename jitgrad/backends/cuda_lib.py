"""The scalar functions CUDA kernels call (``_jg_exp``, ``_jg_max``, ...), as device functions.

The same names as ``kernel_lib`` (the ops' templates name them), with the same semantics:
``max``/``min`` propagate NaN as NumPy's ``maximum``/``minimum`` do, ``sigmoid`` is eager
mode's stable form, ``round`` goes to even. On the GPU they use CUDA's libdevice through the
``math`` module (``kernel_lib``'s polynomial versions exist for LLVM's CPU vectorizer).

Complex values call ``_jg_c_<name>`` (``cuda_render`` renames a complex equation's calls):
``cmath`` (which numba-cuda lowers for complex64/complex128), and closed forms for the
functions ``cmath`` lacks (``expm1``, ``log1p``, ``log2``, ``exp2``, ``sigmoid``, ``sign``).

Under numba's simulator a device function is Python: ``math.log(-1.0)`` or ``math.exp(1e4)``
raise where libdevice returns NaN or inf, so there each function falls back to NumPy's value
on such an argument (the device code is unchanged).
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from .kernel_lib import NAMES


def _jg_exp(x):
    return math.exp(x)


def _jg_log(x):
    return math.log(x)


def _jg_log1p(x):
    return math.log1p(x)


def _jg_expm1(x):
    return math.expm1(x)


def _jg_sqrt(x):
    return math.sqrt(x)


def _jg_sin(x):
    return math.sin(x)


def _jg_cos(x):
    return math.cos(x)


def _jg_tan(x):
    return math.tan(x)


def _jg_tanh(x):
    return math.tanh(x)


def _jg_sigmoid(x):
    e = math.exp(-abs(x))
    return (e if x < 0 else e - e + 1) / (1 + e)


def _jg_erf(x):
    return math.erf(x)


def _jg_max(a, b):
    return a if (a > b or a != a) else b


def _jg_min(a, b):
    return a if (a < b or a != a) else b


def _jg_abs(x):
    return abs(x)


def _jg_sign(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0  # zeros and NaN, as torch's


# ``math.floor`` is an int64 in numba (Python's int): only finite values below 2**52 go through
# it; every float of larger magnitude is an integer already (and NaN, inf are themselves).
def _jg_floor(x):
    return x - (x - math.floor(x)) if abs(x) < 4503599627370496.0 else x


def _jg_ceil(x):
    return x + (math.ceil(x) - x) if abs(x) < 4503599627370496.0 else x


def _jg_trunc(x):
    return _jg_floor(x) if x >= 0 else _jg_ceil(x)


def _jg_round(x):
    if not abs(x) < 4503599627370496.0:
        return x
    f = math.floor(x)
    d = x - f
    if d > 0.5 or (d == 0.5 and f % 2 != 0):
        return x - d + 1
    return x - d


def _jg_isfinite(x):
    return not (math.isinf(x) or x != x)


def _jg_isinf(x):
    return math.isinf(x)


def _jg_atan2(a, b):
    return math.atan2(a, b)


def _jg_hypot(a, b):
    return math.hypot(a, b)


# The division family, NumPy's values as in ``kernel_lib`` (there in the operands' dtype, here
# in float64 where a float32 meets a Python float, cast by the kernel: the same values). Written
# so that the simulator's Python runs them too: ``math.fmod`` raises on the operands where C's
# returns NaN, ``math.floor`` on NaN and inf.
def _jg_fmod_f(a, b):
    if b == 0 or a != a or b != b or math.isinf(a):
        return math.nan
    return math.fmod(a, b)


def _jg_remainder_f(a, b):
    if b == 0 or a != a or b != b or math.isinf(a):
        return math.nan
    mod = math.fmod(a, b)
    if mod != 0 and (b < 0) != (mod < 0):
        return mod + b
    return mod  # (a zero keeps fmod's sign, the dividend's, as torch's kernel)


def _jg_floordiv_f(a, b):
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    if a != a or b != b or math.isinf(a):
        return math.nan
    mod = math.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1.0
    if div != 0:
        if not abs(div) < 4503599627370496.0:
            return div
        fl = float(math.floor(div))
        return fl + 1.0 if div - fl > 0.5 else fl
    return math.copysign(0.0, a / b)


def _jg_fmod_i(a, b):
    if b == 0 or b == -1:
        return 0
    r = a % b
    return r - b if r != 0 and (r < 0) != (a < 0) else r


def _jg_remainder_i(a, b):
    if b == 0 or b == -1:
        return 0
    return a % b


def _jg_floordiv_i(a, b):
    if b == 0:
        return 0
    if b == -1:
        return 0 - a
    return a // b


def _jg_truncdiv_i(a, b):
    if b == 0:
        return 0
    if b == -1:
        return 0 - a
    q = a // b
    if q < 0 and q * b != a:
        return q + 1
    return q


def _jg_gelu_none(x):
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


def _jg_gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


_DEVICE: dict = {}


def device_functions() -> dict:
    """``{"_jg_exp": device function, ...}`` for a kernel module's namespace (made once)."""
    if not _DEVICE:
        import numba
        from numba import cuda

        g = globals()
        sim = bool(numba.config.ENABLE_CUDASIM)
        order = [n for n in NAMES if n not in ("trunc",)] + ["trunc"]  # trunc calls floor
        for name in order:
            fn = g[f"_jg_{name}"]
            if name == "trunc":
                fn = _trunc_with(_DEVICE["_jg_floor"], _DEVICE["_jg_ceil"])
            elif sim and name in _SIM_NUMPY:
                fn = _simulated(fn, _SIM_NUMPY[name], np.float64)
            _DEVICE[f"_jg_{name}"] = cuda.jit(device=True)(fn)
        for name in COMPLEX_NAMES:
            fn = g[f"_jg_c_{name}"]
            if sim:
                fn = _simulated(fn, _SIM_NUMPY.get(name), np.complex128)
            _DEVICE[f"_jg_c_{name}"] = cuda.jit(device=True)(fn)
    return _DEVICE


# The simulator's fallbacks: NumPy's value where Python's math raises (see the module's text).
_SIM_NUMPY = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
              "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
              "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh, "acosh": np.arccosh,
              "atanh": np.arctanh, "log2": np.log2, "log10": np.log10, "exp2": np.exp2,
              "tanh": np.tanh, "atan": np.arctan, "asinh": np.arcsinh}


def _simulated(fn, numpy_fn, dtype):
    def guarded(x):
        try:
            return fn(x)
        except (ValueError, OverflowError, ZeroDivisionError):
            if numpy_fn is None:
                raise
            with np.errstate(all="ignore"):
                return numpy_fn(dtype(x))
    guarded.__name__ = fn.__name__
    return guarded


def _trunc_with(floor, ceil):
    def _jg_trunc(x):
        return floor(x) if x >= 0 else ceil(x)
    return _jg_trunc


# asin ... erfc (elementwise2's templates)


def _jg_asin(x):
    return math.asin(x)


def _jg_acos(x):
    return math.acos(x)


def _jg_atan(x):
    return math.atan(x)


def _jg_sinh(x):
    return math.sinh(x)


def _jg_cosh(x):
    return math.cosh(x)


def _jg_asinh(x):
    return math.asinh(x)


def _jg_acosh(x):
    return math.acosh(x)


def _jg_atanh(x):
    return math.atanh(x)


def _jg_log2(x):
    return math.log2(x)


def _jg_log10(x):
    return math.log10(x)


def _jg_erfc(x):
    return math.erfc(x)


def _jg_exp2(x):
    return 2.0 ** x


# signbit, copysign, nextafter (elementwise3's templates; nextafter is fused in float64 only)


def _jg_signbit(x):
    return math.copysign(1.0, x) < 0.0


def _jg_copysign(x, y):
    return math.copysign(x, y)


def _jg_nextafter(x, y):
    # float64 (the only dtype nextafter's template fuses), by frexp/ldexp: the simulator has
    # no libdevice. The step is x's spacing towards y (half of it below a power of two).
    if x != x or y != y:
        return x + y
    if x == y:
        return y
    if x == 0.0:
        return math.copysign(5e-324, y)
    if math.isinf(x):
        return math.copysign(1.7976931348623157e308, x)
    m, e = math.frexp(x)
    toward_zero = (y > x) == (x < 0.0)
    step = math.ldexp(1.0, e - (54 if toward_zero and abs(m) == 0.5 else 53))
    step = max(step, 5e-324)
    return x + step if y > x else x - step
# Complex values (``cuda_render`` calls these for complex equations; see the module's text).
COMPLEX_NAMES = ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sinh",
                 "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10",
                 "exp2", "sigmoid", "sign", "isfinite", "isinf")


def _jg_c_exp(z):
    return cmath.exp(z)


def _jg_c_log(z):
    return cmath.log(z)


def _jg_c_sqrt(z):
    return cmath.sqrt(z)


def _jg_c_sin(z):
    return cmath.sin(z)


def _jg_c_cos(z):
    return cmath.cos(z)


def _jg_c_tan(z):
    return cmath.tan(z)


def _jg_c_tanh(z):
    return cmath.tanh(z)


def _jg_c_sinh(z):
    return cmath.sinh(z)


def _jg_c_cosh(z):
    return cmath.cosh(z)


def _jg_c_asin(z):
    return cmath.asin(z)


def _jg_c_acos(z):
    return cmath.acos(z)


def _jg_c_atan(z):
    return cmath.atan(z)


def _jg_c_asinh(z):
    return cmath.asinh(z)


def _jg_c_acosh(z):
    return cmath.acosh(z)


def _jg_c_atanh(z):
    return cmath.atanh(z)


def _jg_c_log10(z):
    return cmath.log10(z)


def _jg_c_log2(z):
    return cmath.log(z) / 0.6931471805599453


def _jg_c_exp2(z):
    return cmath.exp(z * 0.6931471805599453)


def _jg_c_expm1(z):
    # exp(x) cos(y) - 1 = expm1(x) cos(y) - 2 sin(y / 2)**2: no cancellation near 0
    x, y = z.real, z.imag
    s = math.sin(0.5 * y)
    return complex(math.expm1(x) * math.cos(y) - 2.0 * s * s, math.exp(x) * math.sin(y))


def _jg_c_log1p(z):
    # log|1 + z| = log1p(2x + x**2 + y**2) / 2, arg(1 + z) = atan2(y, 1 + x)
    x, y = z.real, z.imag
    return complex(0.5 * math.log1p(x * (2.0 + x) + y * y), math.atan2(y, 1.0 + x))


def _jg_c_sigmoid(z):
    return 1.0 / (1.0 + cmath.exp(-z))


def _jg_c_sign(z):
    a = abs(z)
    return z / a if a != 0 else z * 0.0


def _jg_c_isfinite(z):
    return not (math.isinf(z.real) or math.isinf(z.imag) or z != z)


def _jg_c_isinf(z):
    return math.isinf(z.real) or math.isinf(z.imag)
