"""Pointwise rounding and classification: round, floor, ceil, trunc, isfinite, isinf.

The rounding ops are piecewise constant: their gradient is zero everywhere (torch's
``zeros_like(grad)``), and on integer tensors they return the input's values unchanged.
"""

from __future__ import annotations

import numpy as np

from .dtype_rules import refuse_dtypes
from .registry import BOOL, ELEMENTWISE, POINTWISE, apply, defop
from .surface import public


def _zero_grad(g, ans, x, **params):
    return g * 0


def _same_if_integral(fn):
    def impl(x, **params):
        if x.dtype.kind in "biu":
            return x.copy()
        return fn(x, **params)
    return impl


def _round_decimals(x, decimals):
    # torch: nearbyint(x * 10**d) / 10**d, or nearbyint(x / 10**-d) * 10**-d for d < 0
    if decimals >= 0:
        f = x.dtype.type(10.0 ** decimals)
        return np.rint(x * f) / f
    f = x.dtype.type(10.0 ** -decimals)
    return np.rint(x / f) * f


def _rounding(name, fn, template, node_name=None, meta=None, **fields):
    if node_name:
        fields["node_name"] = node_name
    if meta is not None:
        fields["meta"] = meta
    return defop(name, _same_if_integral(fn), kind=POINTWISE, vjp=(_zero_grad,),
                 jvp=ELEMENTWISE, template=template, **fields)


def _no_complex(name: str) -> tuple:
    return (NotImplementedError, f"{name} is not supported for complex inputs")


ROUND = _rounding("round", np.rint, "round({0})",
                  check_operands=refuse_dtypes(complex="round_vml_cpu", bool="round_vml_cpu"))
ROUND_DECIMALS = _rounding("round_decimals", _round_decimals, None,  # (not fused)
                           node_name="RoundBackward1", check_operands=refuse_dtypes(
                               complex="round_cpu", bool="round_cpu", integer="round_cpu"),
                           meta=lambda x, decimals: (tuple(x.shape), x.dtype),
                           saved_names={"decimals": ("param", "decimals")})
FLOOR = _rounding("floor", np.floor, "floor({0})", check_operands=refuse_dtypes(
    complex=_no_complex("floor"), bool="floor_vml_cpu"))
CEIL = _rounding("ceil", np.ceil, "ceil({0})", check_operands=refuse_dtypes(
    complex=_no_complex("ceil"), bool="ceil_vml_cpu"))
TRUNC = _rounding("trunc", np.trunc, "trunc({0})", check_operands=refuse_dtypes(
    complex=_no_complex("trunc"), bool="trunc_vml_cpu"))
ISFINITE = defop("isfinite", np.isfinite, kind=POINTWISE, promote=BOOL,
                 template="isfinite({0})")
ISINF = defop("isinf", np.isinf, kind=POINTWISE, promote=BOOL, template="isinf({0})")


@public("round", method=True, inplace=True)
def round(input, *, decimals: int = 0):  # noqa: A001,A002
    """Rounds to the nearest integer (halves to even), or to ``decimals`` decimal places."""
    if decimals == 0:
        return apply(ROUND, input)
    return apply(ROUND_DECIMALS, input, decimals=int(decimals))


@public("floor", method=True, inplace=True)
def floor(input):  # noqa: A002
    """The largest integer not greater than each element."""
    return apply(FLOOR, input)


@public("ceil", method=True, inplace=True)
def ceil(input):  # noqa: A002
    """The smallest integer not less than each element."""
    return apply(CEIL, input)


def trunc(input):  # noqa: A002
    """Each element rounded toward zero."""
    return apply(TRUNC, input)


fix = trunc
public(("trunc", "fix"), method=True, inplace=("trunc_", "fix_"))(fix)


@public("isfinite", method=True)
def isfinite(input):  # noqa: A002
    """True where an element is neither infinite nor NaN."""
    return apply(ISFINITE, input)


@public("isinf", method=True)
def isinf(input):  # noqa: A002
    """True where an element is positive or negative infinity."""
    return apply(ISINF, input)


@public("isposinf", method=True)
def isposinf(input):  # noqa: A002
    """True where an element is positive infinity."""
    return isinf(input) & (input > 0)


@public("isneginf", method=True)
def isneginf(input):  # noqa: A002
    """True where an element is negative infinity."""
    return isinf(input) & (input < 0)

