"""More pointwise primitives torch scripts call: ``logit``, ``xlogy``, ``sinc``, ``signbit``,
``fmax``/``fmin``, ``heaviside``, ``logical_xor``, ``bitwise_not``, ``logaddexp2``,
``copysign``, ``nextafter`` (and the composite ``positive``). One ``defop`` each (torch's node
names, NumPy impl, VJP in jitgrad ops, scalar template naming ``backends/kernel_lib.py``'s and
``cuda_lib.py``'s functions); the Python-number forms of ``xlogy`` and ``copysign`` are ops of
their own, as torch's nodes are (``XlogyBackward1/2``, ``CopysignBackward1``)."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from . import registry
from .dtype_rules import not_implemented_for as _not_for
from .dtype_rules import refuse_dtypes
from .arg_errors import invalid_combination
from .elementwise import _BINARY, _abs_inplace, _pw, where
from .registry import BOOL, ELEMENTWISE, FLOAT, POINTWISE, Public, apply, defop
from .surface import public, tensor_operands

_PI = math.pi
_LOG2E = 1.0 / math.log(2.0)


# ---------------------------------------------------------------- logit, sinc
def _logit_impl(x, *, eps):
    z = x if eps is None else np.clip(x, eps, 1 - eps)
    return np.log(z / (1 - z))


def _logit_vjp(g, ans, x, eps):
    if eps is None:
        return where((x < 0) | (x > 1), math.nan, g / (x * (1 - x)))
    return where((x < eps) | (x > 1 - eps), 0.0, g / (x * (1 - x)))


def _logit_template(p, work):
    if work.kind not in "f":
        return None
    z = "{0}" if p["eps"] is None else "min(max({0}, {p[eps]}), 1 - {p[eps]})"
    return f"log({z} / (1 - {z}))"


LOGIT = defop("logit", _logit_impl, kind=POINTWISE, promote=FLOAT, save=(0,),
              check_operands=refuse_dtypes(complex="logit_cpu"),
              vjp=(_logit_vjp,), jvp=ELEMENTWISE, template=_logit_template,
              saved_names={"self": ("input", 0), "eps": ("param", "eps")},
              public=Public("logit", method=True, inplace=True, params={"eps": None}))


def _sinc_impl(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0, np.ones((), x.dtype), np.sin(_PI * x) / (_PI * x)).astype(x.dtype)


def _sinc_vjp(g, ans, x):
    px = x * _PI
    return g * where(x == 0, 0.0, (px * px.cos() - px.sin()) / (px * x))


SINC = _pw("sinc", _sinc_impl, (_sinc_vjp,),
           f"(1 if {{0}} == 0 else sin({_PI!r} * {{0}}) / ({_PI!r} * {{0}}))", FLOAT, save=(0,),
           public=Public("sinc", method=True, inplace=True))


# ---------------------------------------------------------------- xlogy
_XLOGY_CHECK = refuse_dtypes(complex="xlogy_cpu")


def _xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(x == 0, np.zeros((), np.result_type(x, y)), x * np.log(y))
    return np.where(np.isnan(y), y, out).astype(np.result_type(x, y))


_XLOGY_T = "({1} if {1} != {1} else 0 if {0} == 0 else {0} * log({1}))"


def _xlogy_self_grad(g, x, y):
    # torch: xlogy(grad, other), 0 where self == 0 and other <= 0
    if isinstance(y, (int, float)):
        d = apply(XLOGY_SCALAR_OTHER, g, other=y)
        return where(x == 0, 0.0, d) if y <= 0 else d
    return where((x == 0) & (y <= 0), 0.0, apply(XLOGY, g, y))


XLOGY = _pw("xlogy", _xlogy, (lambda g, ans, x, y: _xlogy_self_grad(g, x, y),
                              lambda g, ans, x, y: g * x / y), _XLOGY_T, FLOAT, save=(0, 1),
            check_operands=_XLOGY_CHECK)
XLOGY_SCALAR_OTHER = defop(
    "xlogy_scalar_other", lambda x, *, other: _xlogy(x, np.asarray(other, x.dtype)),
    kind=POINTWISE, promote=FLOAT, node_name="XlogyBackward2", save=(0,), jvp=ELEMENTWISE,
    check_operands=_XLOGY_CHECK,
    vjp=(lambda g, ans, x, other: _xlogy_self_grad(g, x, other),),
    template="({p[other]} if {p[other]} != {p[other]} else 0 if {0} == 0 else "
             "{0} * log({p[other]}))")
XLOGY_SCALAR_SELF = defop(
    "xlogy_scalar_self", lambda y, *, self: _xlogy(np.asarray(self, y.dtype), y),
    kind=POINTWISE, promote=FLOAT, node_name="XlogyBackward1", save=(0,), jvp=ELEMENTWISE,
    check_operands=_XLOGY_CHECK,
    vjp=(lambda g, ans, y, self: g * self / y,),
    template="({0} if {0} != {0} else 0 if {p[self]} == 0 else {p[self]} * log({0}))")


XLOGY_SIGNATURES = ("Tensor input, Tensor other, *, Tensor out = None",
                    "Number self, Tensor other, *, Tensor out = None",
                    "Tensor input, Number other, *, Tensor out = None")


@public("xlogy", method=True, inplace=True)
def xlogy(input, other):  # noqa: A002
    """``input * log(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN); either may
    be a Python number."""
    tensor_type = registry.Tensor
    if not isinstance(input, tensor_type):
        if not isinstance(other, tensor_type):
            raise invalid_combination("xlogy", (input, other), {}, XLOGY_SIGNATURES)
        return apply(XLOGY_SCALAR_SELF, other, self=input)
    if not isinstance(other, tensor_type):
        return apply(XLOGY_SCALAR_OTHER, input, other=other)
    return apply(XLOGY, input, other)


# ---------------------------------------------------------------- sign bits
def _signbit_impl(x):
    return np.zeros(x.shape, bool) if x.dtype.kind == "b" else np.signbit(x)


def _signbit_meta(x):
    if x.dtype.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    return tuple(x.shape), dtypes.bool


SIGNBIT = _pw("signbit", _signbit_impl, template="signbit({0})", promote=BOOL,
              meta=_signbit_meta, public=Public("signbit", method=True))


def _copysign_self_grad(g, ans, x):
    # torch's copysign_tensor_self_backward: grad * result / self, 0 where self is 0
    return g * where(x == 0, 0.0, ans / x)


COPYSIGN = _pw("copysign", np.copysign, (lambda g, ans, x, y: _copysign_self_grad(g, ans, x),
                                         lambda g, ans, x, y: g * 0), "copysign({0}, {1})",
               FLOAT, save=(0,), save_output=True,
               check_operands=refuse_dtypes(complex="copysign_cpu"))
COPYSIGN_SCALAR = defop(
    "copysign_scalar", lambda x, *, other: np.copysign(x, np.asarray(other, x.dtype)),
    kind=POINTWISE, promote=FLOAT, node_name="CopysignBackward1", save=(0,), save_output=True,
    check_operands=refuse_dtypes(complex="copysign_cpu"),
    vjp=(lambda g, ans, x, other: _copysign_self_grad(g, ans, x),), jvp=ELEMENTWISE,
    template="copysign({0}, {p[other]})")


@public("copysign", method=True, inplace=True)
def copysign(input, other):  # noqa: A002
    """The magnitude of ``input`` with the sign (bit) of ``other`` (a tensor or a number)."""
    if not isinstance(other, registry.Tensor):
        return apply(COPYSIGN_SCALAR, input, other=other)
    return apply(COPYSIGN, input, other)


def _nextafter_meta(x, y):
    dt = dtypes.result_type(x, y)
    if not dt.is_floating_point:
        raise NotImplementedError(f'"nextafter_cpu" not implemented for \'{dt._scalar_name}\'')
    return registry.broadcast_shapes(tuple(x.shape), tuple(y.shape)), dt


# float64 only: CUDA's libdevice nextafter works in double, a float32 value would round back
NEXTAFTER = _pw("nextafter", np.nextafter, meta=_nextafter_meta,
                template=lambda p, work: "nextafter({0}, {1})" if work == np.float64 else None,
                public=Public("nextafter", method=True, inplace=True, args=_BINARY))


# ---------------------------------------------------------------- fmax, fmin
def _fmax_vjp(ge):
    def pick(a, b):
        return (ge(a, b)) | b.isnan()
    return (lambda g, ans, a, b: g * pick(a, b), lambda g, ans, a, b: g * pick(a, b).logical_not())


def _fminmax_template(cmp: str) -> str:
    return "({1} if {0} != {0} else {0} if {1} != {1} else {0} if {0} " + cmp + " {1} else {1})"


FMAX = _pw("fmax", np.fmax, _fmax_vjp(lambda a, b: a >= b), _fminmax_template(">="),
           save=(0, 1), meta=_not_for("fmax", "complex"), check_operands=refuse_dtypes(
               complex=(RuntimeError, "fmax not implemented for complex tensors.")))
FMIN = _pw("fmin", np.fmin, _fmax_vjp(lambda a, b: a <= b), _fminmax_template("<="),
           save=(0, 1), meta=_not_for("fmin", "complex"), check_operands=refuse_dtypes(
               complex=(RuntimeError, "fmin not implemented for complex tensors.")))
# (two Tensors, no number: torch's TypeError otherwise)
fmax = public("fmax")(tensor_operands(FMAX, "fmax", False))
fmin = public("fmin")(tensor_operands(FMIN, "fmin", False))
_fmax_method = public(method="fmax")(tensor_operands(FMAX, "fmax", True))
_fmin_method = public(method="fmin")(tensor_operands(FMIN, "fmin", True))
fmax.__doc__ = "The elementwise maximum of two tensors, ignoring a NaN against a number."
fmin.__doc__ = "The elementwise minimum of two tensors, ignoring a NaN against a number."


# ---------------------------------------------------------------- heaviside, logic, bits
def _heaviside_meta(x, v):
    if x.dtype.is_complex or v.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if x.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return registry.broadcast_shapes(tuple(x.shape), tuple(v.shape)), x.dtype


def _heaviside_impl(x, v):
    return np.heaviside(x, v) if x.dtype.kind == "f" else \
        np.where(x == 0, v, (x > 0).astype(x.dtype)).astype(np.result_type(x, v))


HEAVISIDE = _pw("heaviside", _heaviside_impl, meta=_heaviside_meta,
                template="({0} if {0} != {0} else 0 if {0} < 0 else {1} if {0} == 0 else 1)",
                public=Public("heaviside", method=True, inplace=True,
                              args=("input", "values")))
LOGICAL_XOR = _pw("logical_xor", np.logical_xor, template="(({0} != 0) != ({1} != 0))",
                  promote=BOOL, public=Public("logical_xor", method=True, inplace=True,
                                              args=_BINARY))
BITWISE_NOT = _pw(
    "bitwise_not", np.invert, meta=_not_for("bitwise_not", "float"),
    template=lambda p, work: "(not {0})" if work.kind == "b" else "(~{0})",
    public=Public("bitwise_not", method=True, inplace=True))


@public("positive", method=True)
def positive(input):  # noqa: A002
    """``input`` itself (``+input``); bool tensors are refused, as torch does."""
    if input.dtype == dtypes.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---------------------------------------------------------------- logaddexp2
def _logaddexp2_meta(a, b):
    dt = dtypes.result_type(a, b)
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"logaddexp2_cpu" not implemented for \'{dt._scalar_name}\'')
    return registry.broadcast_shapes(tuple(a.shape), tuple(b.shape)), dt


LOGADDEXP2 = _pw(
    "logaddexp2", np.logaddexp2,
    (lambda g, ans, a, b: g / (1 + (b - a).exp2()), lambda g, ans, a, b: g / (1 + (a - b).exp2())),
    # NumPy's npy_logaddexp2: equal operands (infinities too) give x + 1
    f"({{0}} + 1 if {{0}} == {{1}} else {{0}} + log1p(exp2({{1}} - {{0}})) * {_LOG2E!r} "
    f"if {{0}} > {{1}} else {{1}} + log1p(exp2({{0}} - {{1}})) * {_LOG2E!r} "
    "if {0} < {1} else {0} - {1})", FLOAT, save=(0, 1), meta=_logaddexp2_meta,
    check_operands=refuse_dtypes(complex="logaddexp2_cpu", bool="logaddexp2_cpu",
                                 integer="logaddexp2_cpu"),
    node_name="Logaddexp2Backward0", public=Public("logaddexp2", method=True, args=_BINARY))


public(inplace="abs_")(_abs_inplace)  # (elementwise.py cannot import surface: declared here)
