"""The piecewise-linear activations torch records as single nodes: hardtanh (relu6), threshold,
hardshrink, softshrink and prelu, each with its gradient as its own op, as torch's
derivatives.yaml (``hardtanh_backward(grad, self, min_val, max_val)``,
``threshold_backward(grad, self, threshold)``, ``hardshrink_backward``, ``softshrink_backward``,
``_prelu_kernel_backward``).

A gradient op depends on the input too (its gradient there is zero), so under
``create_graph=True`` the second derivatives of a network with these activations are zeros that
reach its weights and input, as torch's (``HardtanhBackwardBackward0``, ...), where a gradient
made of ``where`` and constants was "not used in the graph". Backward impls multiply by the mask
(np.where is several times slower on random masks); templates are the same product, so the jit
fuses them and both engines agree.
"""

from __future__ import annotations

import numpy as np

from .dtype_rules import refuse_dtypes
from .elementwise import THRESHOLD_BACKWARD, masked_gradient, zero_vjp
from .registry import ELEMENTWISE, POINTWISE, apply, defop

_SELF = ("input", 0)


# ---------------------------------------------------------------- hardtanh (relu6)


def _hardtanh_backward_impl(g, x, *, min_val, max_val):
    # (torch's gradient is zero at NaN too)
    return masked_gradient(g, (x > min_val) & (x < max_val))


HARDTANH_BACKWARD = defop(
    "hardtanh_backward", _hardtanh_backward_impl, kind=POINTWISE, save=(1,),
    vjp=(lambda gg, ans, g, x, **p: apply(HARDTANH_BACKWARD, gg, x, **p), zero_vjp),
    jvp=ELEMENTWISE,
    template="{0} if {1} > {p[min_val]} and {1} < {p[max_val]} else 0.0")


def _hardtanh_impl(x, *, min_val, max_val):
    # (np.clip keeps -0.0 and NaN as torch's clamp; np.maximum(-0.0, 0) is +0.0)
    return np.clip(x, min_val, max_val).astype(x.dtype, copy=False)


HARDTANH = defop(
    "hardtanh", _hardtanh_impl, kind=POINTWISE, save=(0,),
    check_operands=refuse_dtypes(
        complex=(NotImplementedError, "clamp is not supported for complex types"),
        bool=(RuntimeError, "Bool inputs not supported for hardtanh")),
    vjp=(lambda g, ans, x, **p: apply(HARDTANH_BACKWARD, g, x, **p),), jvp=ELEMENTWISE,
    template="({p[min_val]} if {0} < {p[min_val]} else "
             "({p[max_val]} if {0} > {p[max_val]} else {0}))",
    saved_names={"self": _SELF, "min_val": ("param", "min_val"),
                 "max_val": ("param", "max_val")})

# ---------------------------------------------------------------- threshold


def _threshold_impl(x, *, threshold, value):
    # torch: x <= threshold ? value : x (NaN stays NaN)
    return np.where(x <= threshold, np.asarray(value, x.dtype), x)


THRESHOLD = defop(
    "threshold", _threshold_impl, kind=POINTWISE, save=(0,),
    check_operands=refuse_dtypes(complex="threshold_cpu", bool="threshold_cpu"),
    vjp=(lambda g, ans, x, threshold, value: apply(THRESHOLD_BACKWARD, g, x,
                                                   threshold=threshold),),
    jvp=ELEMENTWISE, template="{p[value]} if {0} <= {p[threshold]} else {0}",
    saved_names={"self": _SELF, "threshold": ("param", "threshold")})
# threshold_ (in place): the same op under torch's node name for it, ThresholdBackward1
THRESHOLD_INPLACE = defop(
    "threshold_", _threshold_impl, kind=POINTWISE, save=(0,), node_name="ThresholdBackward1",
    check_operands=THRESHOLD.check_operands, vjp=THRESHOLD.vjp, jvp=ELEMENTWISE,
    template=THRESHOLD.template, saved_names={"self": _SELF, "threshold": ("param", "threshold")})

# ---------------------------------------------------------------- hardshrink, softshrink


def _shrink_backward_impl(g, x, *, lambd):
    # torch (both): grad outside [-lambd, lambd], else 0 (and 0 at NaN)
    return masked_gradient(g, (x < -lambd) | (x > lambd))


_SHRINK_BACKWARD_TEMPLATE = "{0} if {1} < -{p[lambd]} or {1} > {p[lambd]} else 0.0"
HARDSHRINK_BACKWARD = defop(
    "hardshrink_backward", _shrink_backward_impl, kind=POINTWISE, save=(1,),
    vjp=(lambda gg, ans, g, x, lambd: apply(HARDSHRINK_BACKWARD, gg, x, lambd=lambd),
         zero_vjp), jvp=ELEMENTWISE, template=_SHRINK_BACKWARD_TEMPLATE)
SOFTSHRINK_BACKWARD = defop(
    "softshrink_backward", _shrink_backward_impl, kind=POINTWISE, save=(1,),
    vjp=(lambda gg, ans, g, x, lambd: apply(SOFTSHRINK_BACKWARD, gg, x, lambd=lambd),
         zero_vjp), jvp=ELEMENTWISE, template=_SHRINK_BACKWARD_TEMPLATE)


def _hardshrink_impl(x, *, lambd):
    return np.where((x >= -lambd) & (x <= lambd), np.zeros((), x.dtype), x)


def _softshrink_impl(x, *, lambd):
    # x - lambd above lambd, x + lambd below -lambd, else x - x: +0.0 as torch's, NaN stays NaN
    # (two passes where nested np.where took five)
    return np.subtract(x, np.clip(x, -lambd, lambd), dtype=x.dtype)


_LAMBD_NAMES = {"self": _SELF, "lambd": ("param", "lambd")}
HARDSHRINK = defop(
    "hardshrink", _hardshrink_impl, kind=POINTWISE, save=(0,),
    vjp=(lambda g, ans, x, lambd: apply(HARDSHRINK_BACKWARD, g, x, lambd=lambd),),
    jvp=ELEMENTWISE,
    template="({0} - {0}) if {0} >= -{p[lambd]} and {0} <= {p[lambd]} else {0}",
    saved_names=_LAMBD_NAMES)
SOFTSHRINK = defop(
    "softshrink", _softshrink_impl, kind=POINTWISE, save=(0,),
    vjp=(lambda g, ans, x, lambd: apply(SOFTSHRINK_BACKWARD, g, x, lambd=lambd),),
    jvp=ELEMENTWISE,
    template="{0} - ({p[lambd]} if {0} > {p[lambd]} else "
             "(-{p[lambd]} if {0} < -{p[lambd]} else {0}))",
    saved_names=_LAMBD_NAMES)

# ---------------------------------------------------------------- prelu
# torch's _prelu_kernel(self, weight) on a weight already shaped to broadcast: x > 0 ? x : w * x,
# with _prelu_kernel_backward's two gradients as ops of their own (PreluKernelBackwardBackward0)
# whose rules are torch's (derivatives.yaml masks them with self >= 0); the engine sums the
# weight's gradient to its shape.


def _prelu_backward_input_impl(g, x, w):
    return np.where(x > 0, g, g * w).astype(np.result_type(g, w), copy=False)


def _prelu_backward_weight_impl(g, x):
    return np.where(x > 0, np.zeros((), g.dtype), x * g)


def _nonneg_or(x, value):
    """``where(x >= 0, 0, value)``."""
    from .selection import where

    return where(x >= 0, 0.0, value)


def _prelu_backward_input_vjp_g(gg, ans, g, x, w):
    from .selection import where

    return where(x >= 0, gg, gg * w)


PRELU_BACKWARD_INPUT = defop(
    "prelu_kernel_backward_input", _prelu_backward_input_impl, kind=POINTWISE, save=(0, 1, 2),
    node_name="PreluKernelBackwardBackward0",
    vjp=(_prelu_backward_input_vjp_g, zero_vjp,
         lambda gg, ans, g, x, w: _nonneg_or(x, g * gg)),
    jvp=ELEMENTWISE, template="{0} if {1} > 0 else {0} * {2}")
PRELU_BACKWARD_WEIGHT = defop(
    "prelu_kernel_backward_weight", _prelu_backward_weight_impl, kind=POINTWISE, save=(0, 1),
    node_name="PreluKernelBackwardBackward0",
    vjp=(lambda gg, ans, g, x: _nonneg_or(x, gg * x),
         lambda gg, ans, g, x: _nonneg_or(x, g * gg)),
    jvp=ELEMENTWISE, template="0 if {1} > 0 else {1} * {0}")


def _prelu_impl(x, w):
    return np.where(x > 0, x, w * x).astype(np.result_type(x, w), copy=False)


PRELU = defop(
    "prelu_kernel", _prelu_impl, kind=POINTWISE, save=(0, 1), node_name="PreluKernelBackward0",
    check_operands=refuse_dtypes(complex="prelu_cpu", integer="prelu_cpu", bool="prelu_cpu"),
    vjp=(lambda g, ans, x, w: apply(PRELU_BACKWARD_INPUT, g, x, w),
         lambda g, ans, x, w: apply(PRELU_BACKWARD_WEIGHT, g, x)),
    jvp=ELEMENTWISE, template="{0} if {0} > 0 else {1} * {0}",
    saved_names={"self": _SELF, "weight": ("input", 1)})

# ---------------------------------------------------------------- hardsigmoid
# torch's gradient is hardsigmoid_backward(grad, self), whose own derivative torch does not
# implement: its node is "NotImplemented" and a double backward through it raises. The rule
# here raises torch's error, so a second derivative through hardsigmoid fails as torch's does
# (it was silently missing: the gradient did not depend on the input).

_SIXTH = float(np.float32(1 / 6))  # (torch's coefficient, float32 even for float64)


def _hardsigmoid_backward_impl(g, x):
    kept = masked_gradient(g, (x > -3) & (x < 3))
    return (kept * _SIXTH).astype(g.dtype, copy=False)  # (as the template, on integers too)


def _hardsigmoid_backward_vjp(gg, ans, g, x):
    raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


HARDSIGMOID_BACKWARD = defop(
    "hardsigmoid_backward", _hardsigmoid_backward_impl, kind=POINTWISE, save=(1,),
    node_name="NotImplemented",
    vjp=(_hardsigmoid_backward_vjp, _hardsigmoid_backward_vjp), jvp=ELEMENTWISE,
    template="{0} * " + repr(_SIXTH) + " if {1} > -3 and {1} < 3 else 0.0")


def _hardsigmoid_impl(x):
    return (np.clip(x + np.asarray(3, x.dtype), 0, 6) / np.asarray(6, x.dtype)).astype(
        x.dtype, copy=False)


HARDSIGMOID = defop(
    "hardsigmoid", _hardsigmoid_impl, kind=POINTWISE, save=(0,),
    vjp=(lambda g, ans, x: apply(HARDSIGMOID_BACKWARD, g, x),), jvp=ELEMENTWISE,
    template="min(max({0} + 3, 0), 6) / 6", saved_names={"self": _SELF})

# ---------------------------------------------------------------- hardswish
# torch's hardswish_backward(grad, self) and its derivative (derivatives.yaml): with respect to
# the input, grad * grad_output / 3 strictly inside (-3, 3), else 0


def _hardswish_backward_impl(g, x):
    # torch: x <= -3 ? 0 : (x < 3 ? grad * (x / 3 + 0.5) : grad) (the gradient passes at NaN)
    inner = np.where(x < 3, g * (x / 3 + 0.5), g)
    return np.where(x <= -3, np.zeros((), inner.dtype), inner).astype(g.dtype, copy=False)


def _hardswish_backward_vjp_x(gg, ans, g, x):
    from .selection import where

    return where((x > -3) & (x < 3), gg * g / 3, 0.0)


HARDSWISH_BACKWARD = defop(
    "hardswish_backward", _hardswish_backward_impl, kind=POINTWISE, save=(0, 1),
    vjp=(lambda gg, ans, g, x: apply(HARDSWISH_BACKWARD, gg, x), _hardswish_backward_vjp_x),
    jvp=ELEMENTWISE, template="0 if {1} <= -3 else ({0} * ({1} / 3 + 0.5) if {1} < 3 else {0})")


def _hardswish_impl(x):
    # torch: x * min(max(x + 3, 0), 6) / 6 (so -0.0 below -3, as torch's)
    return (x * np.clip(x + np.asarray(3, x.dtype), 0, 6) / np.asarray(6, x.dtype)).astype(
        x.dtype, copy=False)


HARDSWISH = defop(
    "hardswish", _hardswish_impl, kind=POINTWISE, save=(0,),
    vjp=(lambda g, ans, x: apply(HARDSWISH_BACKWARD, g, x),), jvp=ELEMENTWISE,
    template="{0} * min(max({0} + 3, 0), 6) / 6", saved_names={"self": _SELF})
