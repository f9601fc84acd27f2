"""Pointwise primitives: one ``defop`` each (NumPy impl, VJP in jitgrad ops, scalar template).

Templates are Python expressions over the inputs ``{0}``, ``{1}``, ... and params ``{p[name]}``;
``exp``/``log``/``tanh``/``erf`` name the scalar math functions the backends provide.
Gradient rules use ``conj()`` where torch's complex convention needs it (a no-op on reals).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _config, dtypes
from . import fused_arith, nn_kernels, registry
from .dtype_rules import not_implemented_for, refuse_dtypes
from .registry import (BOOL, ELEMENTWISE, FLOAT, LINEAR, OPAQUE, POINTWISE, SAME, Public, apply,
                       defop)

_BINARY = ("input", "other")  # the operands of a public binary op
_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)
_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
             "invert a mask, use the `~` or `logical_not()` operator instead.")
_CLAMP_COMPLEX = (NotImplementedError, "clamp is not supported for complex types")


def _pw(name: str, impl, vjp=None, template=None, promote=SAME, **kw):
    kw.setdefault("jvp", ELEMENTWISE if vjp is not None else None)
    return defop(name, impl, kind=POINTWISE, vjp=vjp, template=template, promote=promote, **kw)


def _erf(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        return nn_kernels.special("erf", x)
    from ._special import erf

    return erf(x)


# ---------------------------------------------------------------- unary
NEG = _pw("neg", np.negative, (lambda g, ans, x: -g,), "-{0}", involution=True,
          check_operands=refuse_dtypes(bool=(RuntimeError, _NEG_BOOL)),
          public=Public(("neg", "negative"), method=True, inplace="neg_"))
EXP = _pw("exp", np.exp, (lambda g, ans, x: g * ans.conj(),), "exp({0})", FLOAT,
          save_output=True, public=Public("exp", method=True, inplace=True))
LOG = _pw("log", np.log, (lambda g, ans, x: g / x.conj(),), "log({0})", FLOAT, save=(0,),
          public=Public("log", method=True, inplace=True))
LOG1P = _pw("log1p", np.log1p, (lambda g, ans, x: g / (x + 1).conj(),), "log1p({0})", FLOAT,
            save=(0,), node_name="Log1PBackward0",
            public=Public("log1p", method=True, inplace=True))
EXPM1 = _pw("expm1", np.expm1, (lambda g, ans, x: g * (ans + 1).conj(),), "expm1({0})", FLOAT,
            save_output=True, node_name="Expm1Backward0",
            public=Public("expm1", method=True, inplace=True))
SQRT = _pw("sqrt", np.sqrt, (lambda g, ans, x: g / (2 * ans.conj()),), "sqrt({0})", FLOAT,
           save_output=True, public=Public("sqrt", method=True, inplace=True))
RSQRT = _pw("rsqrt", fused_arith.half_in_float(lambda x: 1 / np.sqrt(x)),
            (lambda g, ans, x: g * (-0.5 * ans ** 3).conj(),), "1.0 / sqrt({0})", FLOAT,
            save_output=True, public=Public("rsqrt", method=True, inplace=True))
RECIPROCAL = _pw("reciprocal", lambda x: 1 / x, (lambda g, ans, x: -g * (ans * ans).conj(),),
                 "1.0 / {0}", FLOAT, save_output=True,
                 public=Public("reciprocal", method=True, inplace=True))
SIN = _pw("sin", np.sin, (lambda g, ans, x: g * x.cos().conj(),), "sin({0})", FLOAT, save=(0,),
          public=Public("sin", method=True, inplace=True))
COS = _pw("cos", np.cos, (lambda g, ans, x: -g * x.sin().conj(),), "cos({0})", FLOAT, save=(0,),
          public=Public("cos", method=True, inplace=True))
TAN = _pw("tan", np.tan, (lambda g, ans, x: g * (1 + ans * ans).conj(),), "tan({0})", FLOAT,
          save_output=True, public=Public("tan", method=True, inplace=True))


def _conj_if_complex(a: np.ndarray) -> np.ndarray:
    return np.conj(a) if a.dtype.kind == "c" else a


# torch's tanh_backward / sigmoid_backward: the backward of tanh and sigmoid is one op (one
# kernel, one node), and differentiable again with torch's formulas (derivatives.yaml). The
# values follow torch's CPU kernels' formulas and order: ``g * (1 - y*y)`` and
# ``g * (1 - y) * y``. (torch's vectorized kernel fuses ``1 - y*y`` into one FMA; emulating it
# exactly costs two more array passes per tanh backward, which the eager-overhead budget does
# not allow, so a tanh gradient may differ from torch's in the last bit.)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_ONE_F32, _ONE_F64 = np.ones((), _F32), np.ones((), _F64)  # (cheaper operands than 1.0)


def _tanh_backward_impl(g: np.ndarray, y: np.ndarray) -> np.ndarray:
    dt = y.dtype
    w = y * y
    if (dt is _F32 or dt is _F64) and type(w) is np.ndarray:  # (0-d: a NumPy scalar)
        w = np.subtract(_ONE_F32 if dt is _F32 else _ONE_F64, w, out=w)
        if g.dtype is not dt:
            return g * w
        try:
            w *= g  # (w is fresh: in place, as g * w)
        except ValueError:  # g broadcasts w
            return g * w
        return w
    if dt.kind == "c":
        return g * np.conj(1 - y * y)
    return g * (1 - y * y)


def _sigmoid_backward_impl(g: np.ndarray, y: np.ndarray) -> np.ndarray:
    if y.dtype.kind == "c":
        return g * np.conj((1 - y) * y)
    return g * (1 - y) * y


TANH_BACKWARD = _pw(
    "tanh_backward", _tanh_backward_impl,
    (lambda gg, ans, g, y: apply(TANH_BACKWARD, gg, y.conj()),
     lambda gg, ans, g, y: gg.conj() * (-2 * y.conj() * g).conj()),
    "{0} * (1 - {1} * {1})", save=(0, 1))
SIGMOID_BACKWARD = _pw(
    "sigmoid_backward", _sigmoid_backward_impl,
    (lambda gg, ans, g, y: apply(SIGMOID_BACKWARD, gg, y.conj()),
     lambda gg, ans, g, y: gg.conj() * g * (-2 * y.conj() + 1)),
    "{0} * (1 - {1}) * {1}", save=(0, 1))
TANH = _pw("tanh", np.tanh, (lambda g, ans, x: apply(TANH_BACKWARD, g, ans),), "tanh({0})",
           FLOAT, save_output=True, public=Public("tanh", method=True, inplace=True))
SIGMOID = _pw("sigmoid", lambda x: _sigmoid(x),
              (lambda g, ans, x: apply(SIGMOID_BACKWARD, g, ans),), "sigmoid({0})",
              FLOAT, save_output=True, public=Public("sigmoid", method=True, inplace=True))
ERF = _pw("erf", _erf, (lambda g, ans, x: g * (_SQRT_2_OVER_PI * (-(x * x)).exp()),), "erf({0})",
          FLOAT, save=(0,), check_operands=refuse_dtypes(complex="erf_vml_cpu"),
          public=Public("erf", method=True, inplace=True))


def masked_gradient(g: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """torch's ``keep ? grad : 0`` for the activations' gradients: a product with the mask
    (np.where is ~10x slower on random masks) plus +0.0, so that a negative gradient masked off
    is 0 and not -0.0 (a -0.0 gradient kept becomes 0 too); a gradient with an inf or NaN,
    which the product would turn into NaN where masked off, takes np.where."""
    out = np.asarray(np.multiply(g, keep, dtype=g.dtype))  # (0-d: a scalar otherwise)
    if not np.isfinite(out.sum()):
        return np.where(keep, g, np.zeros((), g.dtype))
    return np.add(out, 0.0, out=out)


def zero_vjp(gg, *args, **params):
    """A gradient op's VJP for the input its mask reads: zero (the op is flat in it)."""
    return gg * 0


def _threshold_backward_impl(g, y, *, threshold):
    # (the gradient passes at NaN, as torch's "y <= threshold ? 0 : grad")
    return masked_gradient(g, ~(y <= threshold))


# relu's gradient as torch's threshold_backward(grad, result, 0): a node that depends on the
# result too (its gradient there is zero), so under create_graph a ReLU network's second
# derivatives (a PINN's u_xx) are zeros that reach the weights, not "not used in the graph"
THRESHOLD_BACKWARD = _pw(
    "threshold_backward", _threshold_backward_impl,
    (lambda gg, ans, g, y, threshold: apply(THRESHOLD_BACKWARD, gg, y, threshold=threshold),
     zero_vjp),
    "0.0 if {1} <= {p[threshold]} else {0}", save=(1,))
RELU = _pw("relu", lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
           (lambda g, ans, x: apply(THRESHOLD_BACKWARD, g, ans, threshold=0),), "max({0}, 0)",
           save_output=True, check_operands=refuse_dtypes(
               complex=_CLAMP_COMPLEX,
               bool=(RuntimeError, "Boolean inputs not supported for relu")),
           public=Public("relu", method=True, inplace=True))
ABS = _pw("abs", np.abs, (lambda g, ans, x: g * x.sgn(),), "abs({0})", save=(0,),
          meta=lambda x: (tuple(x.shape), x.dtype.to_real()),
          check_operands=refuse_dtypes(bool="abs_cpu"),
          public=Public(("abs", "absolute"), method=True))  # |complex| is real


def _abs_inplace(input):  # noqa: A002
    """``abs`` written into ``input``: a complex tensor cannot hold its real result (torch)."""
    if input.dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return apply(ABS, input)


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":  # torch's (0 < x) - (x < 0): NaN's sign is 0, NumPy's is NaN
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
    if x.dtype == np.bool_:  # torch's sign of a bool is itself
        return x.copy()
    return np.sign(x)


SIGN = _pw("sign", _sign, (lambda g, ans, x: g * 0,), "sign({0})",
           check_operands=refuse_dtypes(complex=(
               NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex "
               "numbers. Please use torch.sgn instead.")),
           public=Public("sign", method=True, inplace=True))
def _sgn_grad(g, ans, x):
    # Real sgn is flat. For complex z != 0, sgn(z) = z/|z| has d/dz = 1/(2|z|) and
    # d/dconj(z) = -sgn^2/(2|z|): the VJP (torch's convention) and the JVP share one formula.
    if not x.dtype.is_complex:
        return g * 0
    a = x.abs()
    return where(a == 0, 0, (g - ans * ans * g.conj()) / (2 * a))


SGN = _pw("sgn", lambda x: np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x))).astype(x.dtype)
          if np.iscomplexobj(x) else _sign(x), (_sgn_grad,), "sign({0})", save=(0,),
          save_output=True, jvp=lambda ts, ans, x: _sgn_grad(ts[0], ans, x),
          public=Public("sgn", method=True))
CONJ = _pw("conj", np.conj, (lambda g, ans, x: g.conj(),),
           lambda p, work: "{0}.conjugate()" if work.kind == "c" else "{0}")
# ``Tensor.detach`` inside jit: the same values, cut from the graph (no VJP: not differentiable)
DETACH = defop("detach", lambda x: x, kind=POINTWISE, template="{0}", view=True,
               meta=lambda x: (tuple(x.shape), x.dtype))
CLONE = _pw("clone", lambda x: np.array(x, copy=True), (lambda g, ans, x: g,), "{0}",
            passthrough=True)
LOGICAL_NOT = _pw("logical_not", np.logical_not, template="not {0}", promote=BOOL,
                  public=Public("logical_not", method=True))
ISNAN = _pw("isnan", np.isnan, template="{0} != {0}", promote=BOOL,
            public=Public("isnan", method=True))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Stable for large |x| in both directions.
    if np.iscomplexobj(x):
        return 1 / (1 + np.exp(-x))
    # exp(min(x, 0)) / (1 + exp(-|x|)): e/(1+e) below 0 (the lower tail down to the
    # subnormals, as torch), 1/(1+e) above, and no overflow; branch-free (np.where over the
    # sign branched per element: 4x slower). float16 goes through float32, as torch's kernel.
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    e = np.asarray(np.exp(-np.abs(work)))  # (a 0-d input gives a NumPy scalar)
    np.add(e, 1, out=e)
    num = np.asarray(np.exp(np.minimum(work, 0)))
    np.divide(num, e, out=num)
    return num.astype(x.dtype, copy=False)


def _to_impl(x: np.ndarray, dtype: dtypes.dtype) -> np.ndarray:
    if x.dtype.kind == "c" and dtype.np.kind not in "cb":  # (bool: nonzero real or imaginary)
        _config.warn_complex_to_real()
        x = x.real
    return x.astype(dtype.np)


TO_COPY = defop("to_copy", _to_impl, kind=POINTWISE, node_name="ToCopyBackward0",
                meta=lambda x, dtype: (tuple(x.shape), dtype), vjp=(lambda g, ans, x, dtype: g,),
                template="{0}", jvp=ELEMENTWISE, passthrough=True)


def _to_device_impl(x, device: str, source: str):
    from .. import _cuda_array, _meta

    if device.startswith("meta"):  # (only the shape goes: a copy from meta is meta_compute's)
        return _meta.array(x.shape, x.dtype)
    if device == "cpu":
        return x.copy_to_host() if type(x) is _cuda_array.CudaArray else x.copy()
    return _cuda_array.to_device(x) if type(x) is np.ndarray else x.copy()


# A copy to another device (``x.cuda()``, ``x.cpu()``, ``x.to("cuda")``): torch records it as
# ``ToCopyBackward0`` too; the gradient is copied back to the source device.
def _to_device_meta(x: Any, device: str, source: str) -> tuple:
    if source.startswith("meta") and not device.startswith("meta"):
        from .._meta import NO_DATA

        raise NotImplementedError(NO_DATA)
    if device.startswith("cuda") and x.dtype is dtypes.bfloat16:
        raise RuntimeError(dtypes.NO_CUDA_BFLOAT16)
    return tuple(x.shape), x.dtype


TO_DEVICE = defop("to_device", _to_device_impl, kind=OPAQUE, node_name="ToCopyBackward0",
                  meta=_to_device_meta,
                  vjp=(lambda g, ans, x, device, source: registry.apply(
                      TO_DEVICE, g, device=source, source=device),), jvp=LINEAR)


def _real_part_vjp(g, ans, x):
    return g if not x.dtype.is_complex else g.to(x.dtype)


# (views of a complex input's parts, as torch's: writes reach the input)
REAL = defop("real", np.real, kind=POINTWISE, view=True,
             meta=lambda x: (tuple(x.shape), x.dtype.to_real()),
             vjp=(_real_part_vjp,),
             template=lambda p, work: "{0}.real" if work.kind == "c" else "{0}", jvp=ELEMENTWISE)
IMAG = defop("imag", np.imag, kind=POINTWISE, view=True,
             meta=lambda x: (tuple(x.shape), x.dtype.to_real()),
             vjp=(lambda g, ans, x: g.to(x.dtype) * 1j,),
             template=lambda p, work: "{0}.imag" if work.kind == "c" else None, jvp=ELEMENTWISE)



# ---------------------------------------------------------------- binary
ADD = _pw("add", np.add, (lambda g, ans, a, b: g, lambda g, ans, a, b: g), "{0} + {1}",
          identity={0: 0, 1: 0}, saved_names={"alpha": ("const", 1)})


def _no_bool_subtraction(args: tuple) -> None:
    bools = sum(getattr(a, "dtype", None) is dtypes.bool or type(a) is bool for a in args)
    if bools == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if bools:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


SUB = _pw("sub", np.subtract, (lambda g, ans, a, b: g, lambda g, ans, a, b: -g), "{0} - {1}",
          identity={1: 0}, saved_names={"alpha": ("const", 1)},
          check_operands=_no_bool_subtraction)
RSUB = _pw("rsub", lambda a, b: np.subtract(b, a),
           (lambda g, ans, a, b: -g, lambda g, ans, a, b: g), "{1} - {0}",
           node_name="RsubBackward1", check_operands=_no_bool_subtraction)
def _cj(x):
    # conj() of a tensor or of a Python number (rules see numbers for scalar operands)
    if type(x) is registry.Tensor:  # the common case, first: a real tensor is its own conj
        return x.conj() if x._dtype.is_complex else x
    return x.conj() if hasattr(x, "conj") else x.conjugate()


MUL = _pw("mul", np.multiply, (lambda g, ans, a, b: g * _cj(b),
                               lambda g, ans, a, b: g * _cj(a)), "{0} * {1}", save=(0, 1),
          save_if={0: (1,), 1: (0,)}, identity={0: 1, 1: 1})
# add/sub(input, other, alpha=): one op, ``input +- alpha * other`` rounded once (as torch
# computes it; float16 in float32), whose node keeps alpha as a number (nothing saved).
def _alpha_combined(sign: int):
    def impl(a: Any, b: Any, alpha: Any) -> Any:
        half = getattr(a, "dtype", None) == np.float16 or getattr(b, "dtype", None) == np.float16
        if half:
            a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
        dt = np.result_type(a, b)
        if not half and dt in fused_arith.FUSED and not isinstance(alpha, complex):
            return fused_arith.fma(sign * alpha, b, a, dt)  # (torch's kernel: one fma)
        out = a + b * alpha if sign > 0 else a - b * alpha
        return out.astype(np.float16) if half else out
    return impl


def _alpha_template(op: str):
    def template(p: dict, work: np.dtype) -> str | None:
        alpha = p["alpha"]
        if isinstance(alpha, complex) or work.kind not in "fiub" or \
                work.kind != "f" and not isinstance(alpha, int):
            return None
        return f"{{0}} {op} {{p[alpha]}} * {{1}}"
    return template


ADD_ALPHA = _pw("add_alpha", _alpha_combined(1),
                (lambda g, ans, a, b, alpha: g, lambda g, ans, a, b, alpha: g * _cj(alpha)),
                _alpha_template("+"), node_name="AddBackward0", jvp=LINEAR,
                saved_names={"alpha": ("param", "alpha")})
SUB_ALPHA = _pw("sub_alpha", _alpha_combined(-1),
                (lambda g, ans, a, b, alpha: g, lambda g, ans, a, b, alpha: -g * _cj(alpha)),
                _alpha_template("-"), node_name="SubBackward0", jvp=LINEAR,
                saved_names={"alpha": ("param", "alpha")}, check_operands=_no_bool_subtraction)
DIV = _pw("div", np.true_divide, (lambda g, ans, a, b: g / _cj(b),
                                  lambda g, ans, a, b: -g * (a / (b * b)).conj()),
          "{0} / {1}", FLOAT, save=(0, 1), save_if={0: (1,)}, identity={1: 1})


def _pow_exponent_grad(g, ans, a, b):
    # d(a**b)/db = a**b * log(a), taken as 0 where a == 0 and b >= 0 (torch's convention; a
    # complex b: its imaginary part 0 and its real part >= 0)
    nonnegative = (b.imag == 0) & (b.real >= 0) if b.dtype.is_complex else b >= 0
    safe = ((a == 0) & nonnegative).logical_not()
    return g * where(safe, ans * where(safe, a, 1).log(), 0).conj()


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" and (b < 0).any():
        # torch's integer pow: a negative exponent gives 1 / a**|b| truncated (NumPy raises)
        magnitude = np.power(a, np.abs(b))
        odd = (np.abs(b) % 2).astype(bool)
        negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return np.where(b < 0, negative, magnitude).astype(magnitude.dtype)
    return np.power(a, b)


def _power_scalar(x: np.ndarray, exponent) -> np.ndarray:
    if x.dtype.kind in "iu" and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if x.dtype in (np.float32, np.float64) and not isinstance(exponent, (bool, complex)):
        # torch's CPU kernel computes these as products, reciprocals and a square root (the
        # same roundings); NumPy's powf path for them is also ~100x slower (x ** 3 in a GELU)
        if exponent == 3:
            return x * x * x
        if exponent == -2:
            return np.reciprocal(x * x)
        if exponent == -1:
            return np.reciprocal(x)
        if exponent == -0.5:
            return np.reciprocal(np.sqrt(x))
    return np.power(x, np.asarray(exponent, dtype=x.dtype))


POW = _pw("pow", _power, (lambda g, ans, a, b: g * where(b == 0, 0, b * a ** (b - 1)).conj(),
                            _pow_exponent_grad), lambda p, work: _pow_template("{0}", "{1}", work),
          save=(0, 1), save_output=True, check_operands=refuse_dtypes(bool="pow"),
          node_name="PowBackward1",
          saved_names={"self": ("input", 0), "exponent": ("input", 1), "result": ("output", 0)})
POW_SCALAR = defop(
    "pow_scalar", _power_scalar,
    kind=POINTWISE, node_name="PowBackward0", save=(0,), identity={"exponent": 1},
    meta=lambda x, exponent: (tuple(x.shape), _pow_scalar_dtype(x.dtype, exponent)),
    vjp=(lambda g, ans, x, exponent: g * 0 if exponent == 0 else
         g * (exponent * x ** (exponent - 1)).conj(),), template=lambda p, work: _pow_template(
             "{0}", p["exponent"], work), jvp=ELEMENTWISE,
             saved_names={"self": ("input", 0), "exponent": ("param", "exponent")})
RPOW = defop(
    "rpow", lambda x, base: _power(np.asarray(base, dtype=x.dtype), x), kind=POINTWISE,
    node_name="PowBackward2", save_output=True,
    meta=lambda x, base: (tuple(x.shape), _pow_scalar_dtype(x.dtype, base)),
    vjp=(lambda g, ans, x, base: g * (ans * math.log(base)).conj() if base > 0 else
         g * where(ans == 0, 0, ans * math.log(abs(base)) if base != 0 else 0),),
    template=lambda p, work: _pow_template("{p[base]}", "{0}", work), jvp=ELEMENTWISE,
    saved_names={"self": ("param", "base"), "exponent": ("input", 0), "result": ("output", 0)})


def _pow_template(base: str, exponent, work: np.dtype) -> str | None:
    # Kernel template (see registry.OpDef.template). Integer powers are left to NumPy (its
    # overflow and negative-exponent rules); small constant exponents become products.
    if work.kind in "iub":
        return None
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        if exponent == 1:
            return base
        if exponent == 2:
            return f"({base} * {base})"
        if exponent == 3:
            return f"({base} * {base} * {base})"
        if exponent == 0.5:
            return f"sqrt({base})"
        if exponent in (-1, -2, -0.5):  # as the eager impl (and torch's CPU kernel) has them
            return "(1.0 / " + {-1: base, -2: f"({base} * {base})",
                                -0.5: f"sqrt({base})"}[exponent] + ")"
        exponent = "{p[exponent]}"
    return f"({base} ** {exponent})"


def _pow_scalar_dtype(d: dtypes.dtype, scalar) -> dtypes.dtype:
    return dtypes._combine_categories(d, dtypes.scalar_dtype(scalar))


def _max_vjp(pick_a):
    def rule(g, ans, a, b):
        w = where(a == b, 0.5, where(pick_a(a, b), 1.0, 0.0))
        return g * w

    def rule_b(g, ans, a, b):
        w = where(a == b, 0.5, where(pick_a(a, b), 0.0, 1.0))
        return g * w
    return (rule, rule_b)


MAXIMUM = _pw("maximum", np.maximum, _max_vjp(lambda a, b: a > b), "max({0}, {1})", save=(0, 1),
              check_operands=refuse_dtypes(complex=(
                  RuntimeError, "maximum not implemented for complex tensors.")))
MINIMUM = _pw("minimum", np.minimum, _max_vjp(lambda a, b: a < b), "min({0}, {1})", save=(0, 1),
              check_operands=refuse_dtypes(complex=(
                  RuntimeError, "minimum not implemented for complex tensors.")))
# (the default pointwise meta: the broadcast of all three shapes, the promotion of ``a`` and
# ``b`` alone, as the condition is not promoted)
WHERE = defop(
    "where", np.where, kind=POINTWISE, nonpromoted=(0,), save=(0,),
    vjp=(None, lambda g, ans, c, a, b: where(c, g, 0), lambda g, ans, c, a, b: where(c, 0, g)),
    template="{1} if {0} else {2}", jvp=ELEMENTWISE, saved_names={"condition": ("input", 0)})


def _bshape(*args) -> tuple:
    from .registry import broadcast_shapes

    return broadcast_shapes(*(tuple(a.shape) for a in args if hasattr(a, "shape")))


def _clamp_impl(x, min, max):  # noqa: A002
    out = x
    if min is not None:
        out = np.maximum(out, np.asarray(min, dtype=x.dtype))
    if max is not None:
        out = np.minimum(out, np.asarray(max, dtype=x.dtype))
    return out if out is not x else x.copy()


def _clamp_vjp(g, ans, x, min, max):  # noqa: A002
    mask = None
    if min is not None:
        mask = x >= min
    if max is not None:
        upper = x <= max
        mask = upper if mask is None else mask & upper
    return g * mask


CLAMP = defop("clamp", _clamp_impl, kind=POINTWISE, node_name="ClampBackward1", save=(0,),
              check_operands=refuse_dtypes(complex=_CLAMP_COMPLEX),
              meta=lambda x, min, max: (tuple(x.shape), _clamp_dtype(x, min, max)),
              vjp=(_clamp_vjp,), template=lambda p, work: _clamp_template(
                  "{0}", None if p["min"] is None else "{p[min]}",
                  None if p["max"] is None else "{p[max]}"), jvp=ELEMENTWISE,
                  saved_names={"self": ("input", 0), "min": ("param", "min"),
                               "max": ("param", "max")})


def _clamp_template(x: str, lo: str | None, hi: str | None) -> str:
    # torch's clamp: min(max(x, lo), hi), NaN-propagating; a None bound is no bound
    if lo is not None:
        x = f"max({x}, {lo})"
    return x if hi is None else f"min({x}, {hi})"


def _clamp_dtype(x, lo, hi) -> dtypes.dtype:
    return dtypes.result_type(x, *(v for v in (lo, hi) if v is not None))


def _clamp_tensor_impl(x, lo, hi):
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return out if out is not x else x.copy()


def _clamp_tensor_vjp(g, ans, x, lo, hi):
    # torch's clamp_backward and clamp_backward_min_max (clamp.Tensor)
    gx = gl = gh = None
    mask = None
    if lo is not None:
        mask = x >= lo
        gl = where((x < lo) & (lo < hi) if hi is not None else x < lo, g, 0)
    if hi is not None:
        upper = x <= hi
        mask = upper if mask is None else mask & upper
        gh = where((x > hi) | (hi < lo) if lo is not None else x > hi, g, 0)
    gx = where(mask, g, 0)
    return gx, gl, gh


def _clamp_tensor_check(args: tuple) -> None:
    """torch's refusals: a complex input, and a complex or bool result (its kernel's)."""
    if args[0].dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    dt = _clamp_dtype(*args)
    if dt.is_complex or dt is dtypes.bool:
        raise NotImplementedError(f"\"clamp_cpu\" not implemented for '{dt._scalar_name}'")


CLAMP_TENSOR = defop(
    "clamp_tensor", _clamp_tensor_impl, kind=POINTWISE, node_name="ClampBackward0",
    check_operands=_clamp_tensor_check,
    save=(0, 1, 2), vjp=_clamp_tensor_vjp, template=lambda p, work: _clamp_template(
        "{0}", "{1}", "{2}"),
    meta=lambda x, lo, hi: (_bshape(*(v for v in (x, lo, hi) if v is not None)),
                            _clamp_dtype(x, lo, hi)), jvp=ELEMENTWISE)


# ---------------------------------------------------------------- comparisons and logic
EQ = _pw("eq", np.equal, template="{0} == {1}", promote=BOOL,
         public=Public("eq", method=True, args=_BINARY))
NE = _pw("ne", np.not_equal, template="{0} != {1}", promote=BOOL,
         public=Public(("ne", "not_equal"), method=True, args=_BINARY))
LT = _pw("lt", np.less, template="{0} < {1}", promote=BOOL,
         check_operands=refuse_dtypes(complex="lt_cpu"),
         public=Public(("lt", "less"), method=True, args=_BINARY))
LE = _pw("le", np.less_equal, template="{0} <= {1}", promote=BOOL,
         check_operands=refuse_dtypes(complex="le_cpu"),
         public=Public(("le", "less_equal"), method=True, args=_BINARY))
GT = _pw("gt", np.greater, template="{0} > {1}", promote=BOOL,
         check_operands=refuse_dtypes(complex="gt_cpu"),
         public=Public(("gt", "greater"), method=True, args=_BINARY))
GE = _pw("ge", np.greater_equal, template="{0} >= {1}", promote=BOOL,
         check_operands=refuse_dtypes(complex="ge_cpu"),
         public=Public(("ge", "greater_equal"), method=True, args=_BINARY))
BITWISE_AND = _pw("bitwise_and", np.bitwise_and, meta=not_implemented_for("bitwise_and", "float"),
                  template="{0} & {1}",
                  public=Public("bitwise_and", method=True, args=_BINARY))
BITWISE_OR = _pw("bitwise_or", np.bitwise_or, meta=not_implemented_for("bitwise_or", "float"),
                 template="{0} | {1}",
                 public=Public("bitwise_or", method=True, args=_BINARY))
BITWISE_XOR = _pw("bitwise_xor", np.bitwise_xor, meta=not_implemented_for("bitwise_xor", "float"),
                  template="{0} ^ {1}",
                  public=Public("bitwise_xor", method=True, args=_BINARY))


def where(condition, input, other):  # noqa: A002
    """Elementwise ``input if condition else other`` (torch.where)."""
    return apply(WHERE, condition, input, other)


# ---------------------------------------------------------------- forward-mode (JVP) rules
