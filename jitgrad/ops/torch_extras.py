"""torch ops with a node of their own that real scripts use: flip, roll, repeat (and tile),
trace, linalg.cross, and the pointwise addcmul, addcdiv, lerp, logaddexp, hypot, nan_to_num.

Each is one ``defop`` with torch's node name (``FlipBackward0``, ``LerpBackward1``, ...); the
rearranging ones have a ``decompose`` (``ops/arranging.py``) that ``jit`` and ``vmap`` run
instead, so their pieces fuse and batch.
"""

from __future__ import annotations

import numpy as np

from .autocast_policy import FP32, autocast_policy
from .. import dtypes
from ..errors import user_stacklevel
from ._shape import by_keyword, wrap_dim
from .arranging import _cross, _diagonal_of, roll_pieces, tile_pieces
from . import fused_arith
from .creation import eye
from .dtype_rules import refuse_dtypes
from .overloads import scalar_first
from .registry import (BILINEAR, ELEMENTWISE, FLOAT, LINEAR, OPAQUE, POINTWISE, apply,
                       broadcast_shapes, defop)
from .selection import where
from .surface import public
from .memory_formats import row_major, suggested_layout


def _same_meta(x, **params):
    return tuple(x.shape), x.dtype


# ---------------------------------------------------------------- rearranging
FLIP = defop(
    "flip", lambda x, dims: np.flip(x, dims).copy(order="K"), kind=OPAQUE, meta=_same_meta,
    vjp=(lambda g, ans, x, dims: apply(FLIP, g, dims=dims),), jvp=LINEAR,
    decompose=lambda x, dims: _flip_pieces(x, dims))


def _flip_pieces(x, dims):
    from .ranges import arange

    for d in dims:
        x = x.index_select(d, arange(x.shape[d] - 1, -1, -1, device=x.device))
    return x


@public("flip")
def flip(input, dims):  # noqa: A002
    """Reverses the order of elements along ``dims`` (a copy, as in torch)."""
    if isinstance(dims, int):
        raise TypeError("flip(): argument 'dims' (position 2) must be tuple of ints, not int")
    dims = list(dims)
    wrapped = tuple(wrap_dim(d, max(input.ndim, 1)) for d in dims)
    seen = set()
    for d in wrapped:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return apply(FLIP, input, dims=wrapped if input.ndim else ())


@public(method="flip")
def _flip_method(self, *dims, **kwargs):
    """``Tensor.flip(*dims)``: dims as separate ints, one sequence or ``dims=``."""
    if kwargs:
        if dims or set(kwargs) != {"dims"}:
            raise TypeError(f"flip() got an unexpected keyword argument "
                            f"'{next(k for k in kwargs if k != 'dims' or dims)}'")
        dims = (kwargs["dims"],)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return flip(self, dims)


@public("fliplr", method=True)
def fliplr(input):  # noqa: A002
    """Flips a tensor of 2 or more dims left/right (dim 1)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


@public("flipud", method=True)
def flipud(input):  # noqa: A002
    """Flips a tensor of 1 or more dims up/down (dim 0)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


ROLL = defop(
    "roll", suggested_layout(lambda x, shifts, dims: np.roll(x, shifts, dims)), kind=OPAQUE,
    meta=_same_meta,
    vjp=(lambda g, ans, x, shifts, dims: apply(
        ROLL, g, shifts=tuple(-s for s in shifts), dims=dims),),
    jvp=LINEAR, decompose=lambda x, shifts, dims: roll_pieces(x, shifts, dims))


@public("roll", method=True)
def roll(input, shifts, dims=None):  # noqa: A002
    """Rolls elements along ``dims`` by ``shifts`` (wrapping around); with ``dims=None`` the
    flattened tensor is rolled and reshaped back."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               "dims:0")
        return apply(ROLL, input, shifts=shifts, dims=None)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    return apply(ROLL, input, shifts=shifts,
                 dims=tuple(wrap_dim(d, max(input.ndim, 1)) for d in dims))


def _repeat_impl(x, sizes):
    return np.tile(x.reshape((1,) * (len(sizes) - x.ndim) + x.shape), sizes)


def _repeat_vjp(g, ans, x, sizes):
    padded = (1,) * (len(sizes) - len(x.shape)) + tuple(x.shape)
    spread = [v for r, n in zip(sizes, padded) for v in (r, n)]
    summed = g.reshape(spread).sum(tuple(range(0, 2 * len(sizes), 2))) if sizes else g
    return summed.reshape(tuple(x.shape))


REPEAT = defop(
    "repeat", row_major(_repeat_impl), kind=OPAQUE,
    meta=lambda x, sizes: (tuple(r * n for r, n in zip(
        sizes, (1,) * (len(sizes) - len(x.shape)) + tuple(x.shape))), x.dtype),
    vjp=(_repeat_vjp,), jvp=LINEAR, decompose=lambda x, sizes: tile_pieces(x, sizes))


@public(method="repeat")
def repeat(self, *sizes, repeats=None):
    """Tiles the tensor ``sizes[i]`` times along each dim (``Tensor.repeat``)."""
    sizes = by_keyword("repeat", sizes, repeats)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                           "number of dimensions of tensor")
    return apply(REPEAT, self, sizes=sizes)


@public("tile", method=True)
def tile(input, *sizes, dims=None):  # noqa: A002
    """``repeat`` with ``dims`` padded with leading ones to the tensor's rank (``x.tile(2, 2)``
    or ``tile(x, (2, 2))``)."""
    if dims is None:
        dims = sizes[0] if len(sizes) == 1 else sizes
    dims = (dims,) if isinstance(dims, int) else tuple(int(d) for d in dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


TRACE = defop(
    "trace", lambda x: np.asarray(np.trace(x), dtype=np.int64 if x.dtype.kind in "biu"
                                  else x.dtype), kind=OPAQUE,
    check_operands=refuse_dtypes(bool="trace"),
    meta=lambda x: ((), x.dtype if x.dtype.is_floating_point or x.dtype.is_complex
                    else dtypes.int64),
    vjp=(lambda g, ans, x: eye(*x.shape, dtype=g.dtype, device=g.device) * g,), jvp=LINEAR,
    decompose=lambda x: _diagonal_of(x, 0).sum())


@public("trace", method=True)
@autocast_policy(FP32)
def trace(input):  # noqa: A002
    """The sum of a matrix's main diagonal."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return apply(TRACE, input)


LINALG_CROSS = defop(
    "linalg_cross", lambda a, b, dim: np.cross(a, b, axis=dim), kind=OPAQUE, save=(0, 1),
    check_operands=refuse_dtypes(bool="cross"),
    meta=lambda a, b, dim: (broadcast_shapes(tuple(a.shape), tuple(b.shape)),
                            dtypes.result_type(a, b)),
    vjp=(lambda g, ans, a, b, dim: apply(LINALG_CROSS, b, g, dim=dim),
         lambda g, ans, a, b, dim: apply(LINALG_CROSS, g, a, dim=dim)),
    jvp=BILINEAR, node_name="LinalgCrossBackward0",
    decompose=lambda a, b, dim: _cross(*_expanded(a, b), dim))


def _expanded(a, b):
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return a.expand(shape), b.expand(shape)


def linalg_cross(input, other, *, dim: int = -1):  # noqa: A002
    """``jitgrad.linalg.cross``: the cross product of 3-vectors along ``dim`` (default -1)."""
    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    d = wrap_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d] if d < input.ndim else 1} and "
                           f"{other.shape[d] if d < other.ndim else 1}")
    return apply(LINALG_CROSS, input, other, dim=d)


@public("cross", method=True)
def cross(input, other, dim: int | None = None):  # noqa: A002
    """The cross product along ``dim`` (None: the first dim of size 3, with torch's
    deprecation warning)."""
    if dim is None:
        import warnings

        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning,
                      stacklevel=user_stacklevel())
        shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((k for k, s in enumerate(shape) if s == 3), -1)
    return linalg_cross(input, other, dim=dim)


# ---------------------------------------------------------------- pointwise
def _addcmul_impl(a, b, c, value):
    if a.dtype.kind in "iu" and not isinstance(value, complex):
        value = int(value)  # torch casts ``value`` to the integer dtype (0.5 -> 0)
    dt = np.result_type(a, b, c)
    if dt in fused_arith.FUSED and not isinstance(value, complex):
        return fused_arith.fma(dt.type(value) * b, c, a, dt)  # (torch's kernel: one fma)
    return a + value * b * c


def _addcdiv_impl(a, b, c, value):
    return a + value * b / c  # (torch's order: the product, then the quotient)


def _addcmul_template(p, work):
    # (integers: the value's truncation is the impl's, unfused)
    return None if work.kind in "iub" else "{0} + {p[value]} * {1} * {2}"


ADDCMUL = defop(
    "addcmul", fused_arith.half_in_float(_addcmul_impl), kind=POINTWISE, save=(1, 2),
    check_operands=refuse_dtypes(bool="addcmul_cpu_out"),
    vjp=(lambda g, ans, a, b, c, value: g, lambda g, ans, a, b, c, value: g * c * value,
         lambda g, ans, a, b, c, value: g * b * value),
    jvp=ELEMENTWISE, template=_addcmul_template)


@public("addcmul", method=True, inplace=True)
def addcmul(input, tensor1, tensor2, *deprecated, value=1):  # noqa: A002
    """``input + value * tensor1 * tensor2`` (also torch's deprecated ``addcmul(input, value,
    tensor1, tensor2)``)."""
    if deprecated:
        value, (tensor1, tensor2) = scalar_first("addcmul", "value", ("tensor1", "tensor2"),
                                                 tensor1, (tensor2, *deprecated))
    return apply(ADDCMUL, input, tensor1, tensor2, value=value)
ADDCDIV = defop(
    "addcdiv", fused_arith.half_in_float(_addcdiv_impl), kind=POINTWISE, save=(1, 2),
    promote=FLOAT,
    vjp=(lambda g, ans, a, b, c, value: g, lambda g, ans, a, b, c, value: g * value / c,
         lambda g, ans, a, b, c, value: -g * value * b / (c * c)),
    jvp=ELEMENTWISE, template="{0} + {p[value]} * {1} / {2}")


@public("addcdiv", method=True, inplace=True)
def addcdiv(input, tensor1, tensor2, *deprecated, value=1):  # noqa: A002
    """``input + value * tensor1 / tensor2`` (true division; also torch's deprecated
    ``addcdiv(input, value, tensor1, tensor2)``)."""
    if deprecated:
        value, (tensor1, tensor2) = scalar_first("addcdiv", "value", ("tensor1", "tensor2"),
                                                 tensor1, (tensor2, *deprecated))
    if not (tensor1.dtype.is_floating_point or tensor1.dtype.is_complex) and \
            not (tensor2.dtype.is_floating_point or tensor2.dtype.is_complex):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all "
                           "dtypes.")
    return apply(ADDCDIV, input, tensor1, tensor2, value=value)


def _lerp(a, b, w):
    return fused_arith.lerp(a, b, w, np.result_type(a, b))


def _lerp_scalar_impl(a, b, weight):
    if a.shape == b.shape and a.dtype == b.dtype:  # (one pass of a Numba kernel where it can)
        out = np.array(a, order="C")
        fused_arith.lerp_(out, b, weight)
        return out
    return _lerp(a, b, weight)


def _lerp_scalar_template(p, work):
    # the side is chosen here, and ``1 - weight`` taken in float64 and rounded to the dtype, as
    # NumPy does with a Python float; a lerp of integers (torch has none) stays unfused
    w = p["weight"]
    if work.kind != "f" or not np.isfinite(w):
        return None
    return "{0} + {p[weight]} * ({1} - {0})" if abs(w) < 0.5 else \
        f"{{1}} - ({{1}} - {{0}}) * {1 - w!r}"


LERP_SCALAR = defop(
    "lerp_scalar", fused_arith.half_in_float(_lerp_scalar_impl), kind=POINTWISE,
    vjp=(lambda g, ans, a, b, weight: g * (1 - weight), lambda g, ans, a, b, weight: g * weight),
    jvp=ELEMENTWISE, node_name="LerpBackward0", template=_lerp_scalar_template,
    check_operands=refuse_dtypes(bool="lerp_kernel_scalar", integer="lerp_kernel_scalar"))
LERP_TENSOR = defop(
    "lerp_tensor", fused_arith.half_in_float(_lerp), kind=POINTWISE, save=(0, 1, 2),
    vjp=(lambda g, ans, a, b, w: g * (1 - w), lambda g, ans, a, b, w: g * w,
         lambda g, ans, a, b, w: g * (b - a)),
    jvp=ELEMENTWISE, node_name="LerpBackward1",
    check_operands=refuse_dtypes(bool="lerp_kernel_tensor", integer="lerp_kernel_tensor"),
    template="({0} + {2} * ({1} - {0}) if abs({2}) < 0.5 else {1} - ({1} - {0}) * (1 - {2}))")


def _same_dtype_as(input, other, name: str) -> None:  # noqa: A002
    """torch's lerp refusal of an ``end`` (or a weight with dims) of another dtype."""
    if other.dtype is not input.dtype:
        cpp = dtypes.CPP_NAMES
        raise RuntimeError(f"expected dtype {cpp[input.dtype.name]} for `{name}` but got dtype "
                           f"{cpp[other.dtype.name]}")


@public("lerp", method=True, inplace=True)
def lerp(input, end, weight):  # noqa: A002
    """``input + weight * (end - input)``, in torch's two-sided form (exact at both ends)."""
    _same_dtype_as(input, end, "end")
    if isinstance(weight, (int, float)):
        return apply(LERP_SCALAR, input, end, weight=float(weight))
    if weight.ndim:
        _same_dtype_as(input, weight, "weight")
    return apply(LERP_TENSOR, input, end, weight)


def _logaddexp_impl(a, b):
    if a.dtype.kind != "c":
        return np.logaddexp(a, b)
    # torch's complex kernel: max + log1p(exp(min - max)), the operands ordered by real part;
    # NaN (in either part) gives NaN + NaNj, equal infinite real parts -inf: the smaller
    # operand, +inf: log(exp(min) + exp(max))
    a, b = np.broadcast_arrays(a, b)
    swap = a.real < b.real
    hi, lo = np.where(swap, b, a), np.where(swap, a, b)
    with np.errstate(all="ignore"):
        out = np.asarray(hi + np.log1p(np.exp(lo - hi)), dtype=a.dtype)
        both_inf = np.isinf(lo.real) & (lo.real == hi.real)
        if both_inf.any():
            out = np.where(both_inf & (lo.real < 0), lo, out)
            out = np.where(both_inf & (lo.real > 0), np.log(np.exp(lo) + np.exp(hi)), out)
    nan = np.isnan(lo) | np.isnan(hi)
    if nan.any():
        out = np.where(nan, np.asarray(complex(np.nan, np.nan), a.dtype), out)
    return out.astype(a.dtype, copy=False)


def _logaddexp_template(p, work):
    # NumPy's npy_logaddexp: equal operands (infinities too) give x + log(2) (complex: unfused)
    if work.kind == "c":
        return None
    return ("({0} + 0.6931471805599453 if {0} == {1} else {0} + log1p(exp({1} - {0})) "
            "if {0} > {1} else {1} + log1p(exp({0} - {1})) if {0} < {1} else {0} - {1})")


LOGADDEXP = defop(
    "logaddexp", _logaddexp_impl, kind=POINTWISE, promote=FLOAT, save=(0, 1), save_output=True,
    check_operands=refuse_dtypes(bool="logaddexp_cpu", integer="logaddexp_cpu"),
    vjp=(lambda g, ans, a, b: g * (a - ans).exp().conj(),
         lambda g, ans, a, b: g * (b - ans).exp().conj()),
    jvp=ELEMENTWISE, template=_logaddexp_template)
HYPOT = defop(
    "hypot", np.hypot, kind=POINTWISE, promote=FLOAT, save=(0, 1), save_output=True,
    check_operands=refuse_dtypes(complex="hypot_cpu", bool="hypot_cpu", integer="hypot_cpu"),
    vjp=(lambda g, ans, a, b: g * a / ans, lambda g, ans, a, b: g * b / ans),
    jvp=ELEMENTWISE, template="hypot({0}, {1})")


def _tensor_other(name: str, other) -> None:
    from ..tensor import Tensor

    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")


@public("logaddexp", method=True)
def logaddexp(input, other):  # noqa: A002
    """``log(exp(input) + exp(other))`` without overflow."""
    _tensor_other("logaddexp", other)
    return apply(LOGADDEXP, input, other)


@public("hypot", method=True, inplace=True)
def hypot(input, other):  # noqa: A002
    """``sqrt(input**2 + other**2)`` without overflow."""
    _tensor_other("hypot", other)
    return apply(HYPOT, input, other)


def _nan_to_num_impl(x, nan, posinf, neginf):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_template(p, work):
    # integers and bools have no NaN or inf: the values themselves (complex: not fused)
    if work.kind != "f":
        return "{0}" if work.kind in "iub" else None
    info = np.finfo(work)
    pos = repr(float(info.max)) if p["posinf"] is None else "{p[posinf]}"
    neg = repr(float(info.min)) if p["neginf"] is None else "{p[neginf]}"
    return (f"({{p[nan]}} if {{0}} != {{0}} else ({pos} if {{0}} > 0 else {neg}) "
            f"if isinf({{0}}) else {{0}})")


NAN_TO_NUM = defop(
    "nan_to_num", _nan_to_num_impl, kind=POINTWISE, save=(0,),
    vjp=(lambda g, ans, x, nan, posinf, neginf: where(x.isfinite(), g, 0),),
    jvp=ELEMENTWISE, template=_nan_to_num_template)


@public("nan_to_num", method=True, inplace=True)
def nan_to_num(input, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the
    dtype's largest and lowest finite values); the gradient flows where the input is
    finite."""
    return apply(NAN_TO_NUM, input, nan=float(nan),
                 posinf=None if posinf is None else float(posinf),
                 neginf=None if neginf is None else float(neginf))


# ---------------------------------------------------------------- division family
ATAN2 = defop(
    "atan2", np.arctan2, kind=POINTWISE, promote=FLOAT, save=(0, 1),
    check_operands=refuse_dtypes(complex="atan2_cpu"),
    vjp=(lambda g, ans, a, b: g * b / (a * a + b * b),
         lambda g, ans, a, b: -g * a / (a * a + b * b)),
    jvp=ELEMENTWISE, template="atan2({0}, {1})")


@public(("atan2", "arctan2"), method=True, inplace=True)
def atan2(input, other):  # noqa: A002
    """The angle of the point ``(other, input)`` (``arctan(input / other)`` in the right
    quadrant)."""
    _tensor_other("atan2", other)
    return apply(ATAN2, input, other)


def _division(helper: str):
    """The kernel template of a division-family op: the float or the integer helper of
    ``backends/kernel_lib`` (NumPy's values for each, an integer divisor of 0 included)."""
    def template(p, work):
        if work.kind not in "fiub":
            return None
        return f"{helper}_{'f' if work.kind == 'f' else 'i'}({{0}}, {{1}})"
    return template


def _floor_quotient(a, b):
    return (a / b).floor()


def _trunc_quotient(a, b):
    return (a / b).trunc()


def _integer_checked(fn):
    """``fn`` refusing an integer division by zero as torch does (NumPy returns 0).

    The CPU jit leaves such an op out of its kernels when it divides integers
    (``backends.numba_cpu.fusible`` reads ``checks_integer_divisor``): this check runs there too.
    """
    def impl(a, b):
        a_kind, b = np.asarray(a).dtype.kind, np.asarray(b)
        if a_kind in "iu" and b.dtype.kind in "iu" and not b.all():
            raise RuntimeError("ZeroDivisionError")
        return fn(a, b)
    impl.checks_integer_divisor = True
    return impl


def _remainder(a, b):
    """Python's ``%`` with torch's zeros: ``fmod``, moved into the divisor's sign (NumPy's
    ``remainder`` gives a zero the divisor's sign, torch's kernel keeps the dividend's)."""
    if np.result_type(a, b).kind != "f":
        return np.remainder(a, b)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


_REMAINDER_CHECK = refuse_dtypes(complex="remainder_cpu", bool="remainder_cpu")
_FMOD_CHECK = refuse_dtypes(complex="fmod_cpu", bool="fmod_cpu")
_DIV_FLOOR_CHECK = refuse_dtypes(complex="div_floor_cpu", bool="div_floor_cpu")
REMAINDER = defop(
    "remainder", _integer_checked(_remainder), kind=POINTWISE, save=(0, 1),
    check_operands=_REMAINDER_CHECK,
    vjp=(lambda g, ans, a, b: g, lambda g, ans, a, b: -g * _floor_quotient(a, b)),
    jvp=ELEMENTWISE, node_name="RemainderBackward1", template=_division("remainder"))
REMAINDER_SCALAR = defop(
    "remainder_scalar", _integer_checked(_remainder), kind=POINTWISE,
    check_operands=_REMAINDER_CHECK,
    vjp=(lambda g, ans, a, b: g, None),
    jvp=ELEMENTWISE, node_name="RemainderBackward0", template=_division("remainder"))
FMOD = defop(
    "fmod", _integer_checked(np.fmod), kind=POINTWISE, save=(0, 1), check_operands=_FMOD_CHECK,
    vjp=(lambda g, ans, a, b: g, lambda g, ans, a, b: -g * _trunc_quotient(a, b)),
    jvp=ELEMENTWISE, node_name="FmodBackward1", template=_division("fmod"))
FMOD_SCALAR = defop(
    "fmod_scalar", _integer_checked(np.fmod), kind=POINTWISE, vjp=(lambda g, ans, a, b: g, None),
    check_operands=_FMOD_CHECK,
    jvp=ELEMENTWISE, node_name="FmodBackward0", template=_division("fmod"))


def _no_floor_divide_derivative(g, ans, *inputs):
    raise RuntimeError("the derivative for 'floor_divide' is not implemented.")


FLOOR_DIVIDE = defop(
    "floor_divide", _integer_checked(np.floor_divide), kind=POINTWISE,
    check_operands=_DIV_FLOOR_CHECK,
    vjp=(_no_floor_divide_derivative, _no_floor_divide_derivative), node_name="NotImplemented",
    template=_division("floordiv"),
    jvp=lambda tangents, ans, *inputs: _no_floor_divide_derivative(None, ans))


def _zero_grad(g, ans, a, b):
    return g * 0


def _truncating_divide(a, b):
    if np.asarray(a).dtype.kind in "iub":  # exact: the floor quotient, one up where inexact < 0
        q = np.floor_divide(a, b)
        return q + ((q < 0) & (q * b != a)).astype(q.dtype)
    return np.trunc(np.true_divide(a, b))


def _truncating_template(p, work):
    if work.kind == "f":
        return "trunc({0} / {1})"
    return "truncdiv_i({0}, {1})" if work.kind in "iub" else None


# div(a, b, rounding_mode=...): torch's values (floor: NumPy's and c10's fmod-based quotient,
# so 1.0 // 0.1 is 9.0; trunc: trunc(a / b)) and torch's zero gradient (DivBackward2).
DIV_FLOOR = defop(
    "div_floor", _integer_checked(np.floor_divide), kind=POINTWISE, vjp=(_zero_grad, _zero_grad),
    check_operands=_DIV_FLOOR_CHECK,
    jvp=ELEMENTWISE, node_name="DivBackward2", template=_division("floordiv"))
DIV_TRUNC = defop(
    "div_trunc", _integer_checked(_truncating_divide), kind=POINTWISE,
    check_operands=refuse_dtypes(complex="div_trunc_cpu", bool="div_trunc_cpu"),
    vjp=(_zero_grad, _zero_grad), jvp=ELEMENTWISE, node_name="DivBackward2",
    template=_truncating_template)


def _by_operand(tensor_op, scalar_op):
    def fn(input, other):  # noqa: A002
        from ..tensor import Tensor

        return apply(tensor_op if isinstance(other, Tensor) else scalar_op, input, other)
    return fn


remainder = public("remainder", method=True, inplace=True)(_by_operand(REMAINDER,
                                                                        REMAINDER_SCALAR))
remainder.__doc__ = "Python's ``%``: the remainder with the sign of the divisor."
fmod = public("fmod", method=True, inplace=True)(_by_operand(FMOD, FMOD_SCALAR))
fmod.__doc__ = "C's ``fmod``: the remainder with the sign of the dividend."


@public("floor_divide", method=True, inplace=True)
def floor_divide(input, other):  # noqa: A002
    """``input // other`` rounded toward minus infinity (no derivative, as in torch)."""
    return apply(FLOOR_DIVIDE, input, other)


def install_operators(Tensor: type) -> None:  # noqa: N803
    """``%`` and ``//`` on tensors."""

    def reflected(op):
        def fn(self, other):
            if isinstance(other, np.generic) and other.ndim == 0 and other.dtype.kind in "biufc":
                other = other.item()  # (a NumPy scalar counts as a Python number, as in torch)
            if not isinstance(other, (int, float, bool, complex)):
                return NotImplemented
            # (the number as a wrapped scalar: 2.5 // int_tensor is float32, as torch)
            return apply(op, other, self)
        return fn

    Tensor.__mod__ = lambda self, other: remainder(self, other)
    Tensor.__rmod__ = reflected(REMAINDER)
    Tensor.__floordiv__ = lambda self, other: floor_divide(self, other)
    Tensor.__rfloordiv__ = reflected(FLOOR_DIVIDE)
