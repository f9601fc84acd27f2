"""More pointwise primitives torch scripts call: inverse and hyperbolic trigonometry, ``log2``,
``log10``, ``exp2``, ``erfc``. One ``defop`` each (NumPy impl, VJP in jitgrad ops, scalar
template naming the ``_jg_*`` functions of ``backends/kernel_lib.py`` and ``cuda_lib.py``)."""

from __future__ import annotations

import math

import numpy as np

from . import nn_kernels
from .dtype_rules import refuse_dtypes
from .elementwise import _erf, _pw
from .registry import FLOAT, Public, apply

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfc(x: np.ndarray) -> np.ndarray:
    return 1.0 - _erf(x) if x.dtype.kind != "f" else _erfc_real(x)


def _erfc_real(x: np.ndarray) -> np.ndarray:
    # libm's erfc keeps the tail's precision (1 - erf(x) loses it for large x)
    return nn_kernels.special("erfc", x)


def _unary(name: str, impl, vjp, template: str, **kw):
    return _pw(name, impl, (vjp,), template, FLOAT, save=(0,),
               public=Public(name, method=True, inplace=True), **kw)


ASIN = _unary("asin", np.arcsin, lambda g, ans, x: g / (1 - x * x).sqrt().conj(), "asin({0})")
ACOS = _unary("acos", np.arccos, lambda g, ans, x: -g / (1 - x * x).sqrt().conj(), "acos({0})")
ATAN = _unary("atan", np.arctan, lambda g, ans, x: g / (1 + x * x).conj(), "atan({0})")
SINH = _unary("sinh", np.sinh, lambda g, ans, x: g * apply(COSH, x).conj(), "sinh({0})")
COSH = _unary("cosh", np.cosh, lambda g, ans, x: g * apply(SINH, x).conj(), "cosh({0})")
ASINH = _unary("asinh", np.arcsinh, lambda g, ans, x: g / (x * x + 1).sqrt().conj(),
               "asinh({0})")
ACOSH = _unary("acosh", np.arccosh, lambda g, ans, x: g / (x * x - 1).sqrt().conj(),
               "acosh({0})")
ATANH = _unary("atanh", np.arctanh, lambda g, ans, x: g / (1 - x * x).conj(), "atanh({0})")
LOG2 = _unary("log2", np.log2, lambda g, ans, x: g / (x * _LN2).conj(), "log2({0})")
LOG10 = _unary("log10", np.log10, lambda g, ans, x: g / (x * _LN10).conj(), "log10({0})")
EXP2 = _pw("exp2", np.exp2, (lambda g, ans, x: g * (ans * _LN2).conj(),), "exp2({0})", FLOAT,
           save_output=True, public=Public("exp2", method=True, inplace=True))
ERFC = _unary("erfc", _erfc, lambda g, ans, x: -g * (_TWO_OVER_SQRT_PI * (-(x * x)).exp()),
              "erfc({0})", check_operands=refuse_dtypes(complex="erfc_vml_cpu"))

_D2R = math.pi / 180.0
DEG2RAD = _pw("deg2rad", lambda x: x * _D2R, (lambda g, ans, x: g * _D2R,),
              "{0} * " + repr(_D2R), FLOAT, node_name="Deg2RadBackward0",
              check_operands=refuse_dtypes(complex=(
                  RuntimeError, "deg2rad is not supported for complex tensors.")),
              public=Public("deg2rad", method=True, inplace=True))
RAD2DEG = _pw("rad2deg", lambda x: x * (1 / _D2R), (lambda g, ans, x: g * (1 / _D2R),),
              "{0} * " + repr(1 / _D2R), FLOAT, node_name="Rad2DegBackward0",
              check_operands=refuse_dtypes(complex=(
                  RuntimeError, "rad2deg is not supported for complex tensors.")),
              public=Public("rad2deg", method=True, inplace=True))
def _frac_meta(x):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise NotImplementedError(f"\"frac_cpu\" not implemented for "
                                  f"'{x.dtype._scalar_name}'")
    return tuple(x.shape), x.dtype


FRAC = _pw("frac", lambda x: x - np.trunc(x), (lambda g, ans, x: g * 1,), "{0} - trunc({0})",
           meta=_frac_meta, check_operands=refuse_dtypes(complex="frac_cpu"),
           public=Public("frac", method=True, inplace=True))
