"""The public functions that wrap ops in plain Python (keyword arguments, several ops, type
dispatch), declared with ``@public``; and the Tensor operators and properties."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _torch_function as _tf
from .. import dtypes
from ..device import check_device
from ..device import device as _device
from . import elementwise as ew
from .complex_views import VIEW_AS_REAL
from . import extras, registry
from .arg_errors import invalid_combination
from .creation import host_device, tensor
from .dtype_rules import refuse_bool_bounds
from .elementwise import where
from .elementwise3 import positive as _positive
from .indexing import getitem
from .linalg import matmul
from .overloads import scalar_first
from ._shape import normalize_dims
from .registry import OPS, apply, lane
from .surface import public, tensor_operands


def _operand(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return tensor(x)
    return x


@public("conj", method=True)
def conj(input):  # noqa: A002
    """Complex conjugate; the tensor itself for real dtypes (as torch)."""
    if not input._dtype.is_complex:
        return input
    return apply(ew.CONJ, input)


@public("real")
def real(input):  # noqa: A002
    """The real parts of a complex tensor, a view (``view_as_real(input)[..., 0]``, as torch's);
    the tensor itself for real dtypes."""
    if not input.dtype.is_complex:
        return input
    return apply(VIEW_AS_REAL, input).select(-1, 0)


@public("imag")
def imag(input):  # noqa: A002
    """The imaginary parts of a complex tensor, a view (``view_as_real(input)[..., 1]``)."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(VIEW_AS_REAL, input).select(-1, 1)


def _alpha_checked(input, other, alpha):  # noqa: A002
    dt = dtypes.result_type(input, other)
    if isinstance(alpha, bool) and dt is not dtypes.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and dtypes.is_integral(dt, include_bool=True):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if isinstance(alpha, complex) and not dt.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                           "complex number.")
    return isinstance(alpha, (int, float, complex))


@public("add", method=True, inplace=True)
def add(input, other, *deprecated, alpha: Any = 1):  # noqa: A002
    """``input + alpha * other`` with broadcasting and torch's type promotion (also torch's
    deprecated ``add(input, alpha, other)``, with its warning)."""
    if deprecated:
        alpha, (other,) = scalar_first("add", "alpha", ("other",), other, deprecated)
    if (alpha != 1 or alpha is True) and _alpha_checked(input, other, alpha):
        return apply(ew.ADD_ALPHA, _operand(input), _operand(other), alpha=alpha)
    if alpha != 1:
        other = mul(other, alpha)
    return apply(ew.ADD, _operand(input), _operand(other))


@public(("sub", "subtract"), method=True, inplace="sub_")
def sub(input, other, *deprecated, alpha: Any = 1):  # noqa: A002
    """``input - alpha * other`` (also torch's deprecated ``sub(input, alpha, other)``)."""
    if deprecated:
        alpha, (other,) = scalar_first("sub", "alpha", ("other",), other, deprecated)
    if (alpha != 1 or alpha is True) and _alpha_checked(input, other, alpha):
        return apply(ew.SUB_ALPHA, _operand(input), _operand(other), alpha=alpha)
    if alpha != 1:
        other = mul(other, alpha)
    return apply(ew.SUB, _operand(input), _operand(other))


@public(("mul", "multiply"), method=True, inplace="mul_")
def mul(input, other):  # noqa: A002
    """Elementwise product."""
    return apply(ew.MUL, _operand(input), _operand(other))


@public(("div", "divide", "true_divide"), method=True, inplace="div_")
def div(input, other, *, rounding_mode: str | None = None):  # noqa: A002
    """True division (``rounding_mode=None``), or floor/trunc division (not differentiable)."""
    if rounding_mode is None:
        return apply(ew.DIV, _operand(input), _operand(other))
    from .torch_extras import DIV_FLOOR, DIV_TRUNC

    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                         f"found '{rounding_mode}'")
    op = DIV_FLOOR if rounding_mode == "floor" else DIV_TRUNC
    return apply(op, _operand(input), _operand(other))


def _rpow(exponent, base):
    """``base ** exponent`` for a number ``base``: torch's refusal of a bool power of bools."""
    if type(base) is bool and exponent.dtype is dtypes.bool:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if type(base) is int and base < 0 and exponent.dtype is dtypes.uint8:
        base %= 256  # (torch's scalar wraps into uint8: -3 is 253)
    return apply(ew.RPOW, exponent, base=base)


@public("pow", method=True, inplace=True)
def pow(input, exponent):  # noqa: A001,A002
    """``input ** exponent`` for tensors and/or numbers."""
    Tensor = registry.Tensor
    if not isinstance(input, Tensor):
        return _rpow(exponent, input)
    if isinstance(exponent, Tensor):
        return apply(ew.POW, input, exponent)
    out = apply(ew.POW_SCALAR, input, exponent=exponent)
    if input.dtype is dtypes.bfloat16 and exponent in (3, -2) and \
            type(exponent) is not bool and type(out._data) is np.ndarray and out._trace is None:
        # torch's bfloat16 kernel forms x * x in bfloat16 first (two roundings), then x * x * x
        # or 1 / (x * x): the same node, torch's values
        x = input._data
        square = dtypes.round_to_bfloat16(x * x)
        out._data = dtypes.round_to_bfloat16(square * x if exponent == 3 else 1 / square)
    return out


# (two Tensors, no number: torch's TypeError otherwise)
maximum = public("maximum")(tensor_operands(ew.MAXIMUM, "maximum", False))
minimum = public("minimum")(tensor_operands(ew.MINIMUM, "minimum", False))
_maximum_method = public(method="maximum")(tensor_operands(ew.MAXIMUM, "maximum", True))
_minimum_method = public(method="minimum")(tensor_operands(ew.MINIMUM, "minimum", True))
maximum.__doc__ = "The elementwise maximum of two tensors (NaN if either is NaN)."
minimum.__doc__ = "The elementwise minimum of two tensors (NaN if either is NaN)."


@public(("clamp", "clip"), method=True, inplace=("clamp_", "clip_"))
def clamp(input, min=None, max=None):  # noqa: F811
    """Clamps into ``[min, max]`` (numbers or tensors)."""
    from .registry import Tensor

    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        dev = host_device(input)
        lo = min if min is None or isinstance(min, Tensor) else tensor(min, dtype=input.dtype,
                                                                       device=dev)
        hi = max if max is None or isinstance(max, Tensor) else tensor(max, dtype=input.dtype,
                                                                       device=dev)
        return apply(ew.CLAMP_TENSOR, input, lo, hi)
    refuse_bool_bounds("clamp_min" if max is None else "clamp_max" if min is None else "clamp",
                       input, min, max)
    return apply(ew.CLAMP, input, min=min, max=max)



def _batched(t) -> bool:
    """Whether ``t`` is a vmap value (its samples are reduced by ops, one level down)."""
    return getattr(t._trace, "batching", False)


def _whole_batch(t):
    """A vmap value's whole batch (every level's), where a reduction over all samples is
    asked for; else ``t``."""
    while _batched(t):
        t = t._value  # (ops on it run below every vmap level it is not batched at)
    return t


def _bool_only(t):
    if t.dtype is not dtypes.bool:
        raise RuntimeError("self.scalar_type() == at::kBool INTERNAL ASSERT FAILED")
    return t


@public("_is_all_true")
def _is_all_true(input):  # noqa: A002
    """Whether every element of a bool tensor is True (a 0-d bool tensor). Under ``vmap``,
    over every sample too (torch's batching rule: distribution checks call it)."""
    return all(_whole_batch(_bool_only(input)))


@public("_is_any_true")
def _is_any_true(input):  # noqa: A002
    """Whether an element of a bool tensor is True (over every sample under ``vmap``)."""
    return any(_whole_batch(_bool_only(input)))


@public("all", method=True)
def all(input, dim=None, keepdim: bool = False):  # noqa: A001,A002
    if input.is_meta or _batched(input):  # (no values here: the shape and dtype from ops)
        out = (input == 0).sum(dim=dim, keepdim=keepdim) == 0
    else:
        axis = None if dim is None else normalize_dims(dim, input.ndim)  # (torch's errors)
        out = tensor(np.asarray(np.all(input._data, axis=axis, keepdims=keepdim), order="C"))
    return out.to(dtypes.uint8) if input.dtype is dtypes.uint8 else out  # (torch keeps uint8)


@public("any", method=True)
def any(input, dim=None, keepdim: bool = False):  # noqa: A001,A002
    if input.is_meta or _batched(input):  # (no values here: the shape and dtype from ops)
        out = (input != 0).sum(dim=dim, keepdim=keepdim) > 0
    else:
        axis = None if dim is None else normalize_dims(dim, input.ndim)  # (torch's errors)
        out = tensor(np.asarray(np.any(input._data, axis=axis, keepdims=keepdim), order="C"))
    return out.to(dtypes.uint8) if input.dtype is dtypes.uint8 else out  # (torch keeps uint8)


@public("allclose", method=True)
def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@public("equal", method=True)
def equal(input, other) -> bool:  # noqa: A002
    return tuple(input.shape) == tuple(other.shape) and bool(np.all(input._data == other._data))


@public("numel")
def numel(input) -> int:  # noqa: A002
    return input.numel()


@public("is_tensor")
def is_tensor(obj: Any) -> bool:
    from .registry import Tensor

    return isinstance(obj, Tensor)


_TO_SIGNATURES = (
    "jitgrad.device device = None, jitgrad.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, jitgrad.memory_format memory_format = None",
    "jitgrad.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "jitgrad.memory_format memory_format = None",
    "Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "jitgrad.memory_format memory_format = None")
_TO_FLAGS = ("non_blocking", "copy")


def _to_arguments(args: tuple, kwargs: dict) -> dict | None:
    """torch's three ``to`` overloads: ``(device, dtype, non_blocking, copy)``, ``(dtype,
    non_blocking, copy)``, ``(tensor, non_blocking, copy)``, each with ``memory_format=``; the
    arguments by name, None when no overload takes them."""
    Tensor = registry.Tensor
    first = args[0] if args else None
    if isinstance(first, Tensor) or "tensor" in kwargs:
        names = ("tensor",) + _TO_FLAGS
    elif isinstance(first, dtypes.dtype) or first in dtypes.PYTHON_TYPES:
        names = ("dtype",) + _TO_FLAGS
    else:
        names = ("device", "dtype") + _TO_FLAGS
    if len(args) > len(names):
        return None
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in bound or (k not in names and k != "memory_format"):
            return None
        bound[k] = v
    dev, dt = bound.get("device"), bound.get("dtype")
    if dev is not None and not isinstance(dev, (str, int, _device)) or isinstance(dev, bool):
        return None
    if dt is not None and not isinstance(dt, dtypes.dtype) and dt not in dtypes.PYTHON_TYPES:
        return None
    if "tensor" in bound and not isinstance(bound["tensor"], Tensor):
        return None
    fmt = bound.get("memory_format")
    if fmt is not None and type(fmt) is not type(extras.contiguous_format):
        return None
    for k in _TO_FLAGS:  # (this module's ``any`` is torch.any)
        if not isinstance(bound.get(k, False), bool):
            return None
    return bound


@public(method="to")
def _to(self, *args: Any, **kwargs: Any):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``, with
    ``non_blocking``, ``copy`` and ``memory_format=``; self if unchanged."""
    if not kwargs and len(args) == 1 and type(args[0]) is dtypes.dtype:  # (the common call)
        dtype = args[0]
        return self if dtype is self._dtype else apply(ew.TO_COPY, self, dtype=dtype)
    bound = _to_arguments(args, kwargs)
    if bound is None:
        raise invalid_combination("to", args, kwargs, _TO_SIGNATURES)
    if "tensor" in bound:  # to(other): its dtype and device
        dtype, dev = bound["tensor"].dtype, bound["tensor"].device
    else:
        dtype, dev = dtypes.as_dtype_arg(bound.get("dtype")), bound.get("device")
    copy = bound.get("copy", False)
    target = check_device(dev) if dev is not None else None
    fmt = bound.get("memory_format")
    out = self
    if target is not None and target != self.device:
        out = apply(ew.TO_DEVICE, self, device=str(target), source=str(self.device))
        copy = False
    if (dtype is not None and dtype is not out.dtype) or copy:
        out = apply(ew.TO_COPY, out, dtype=dtype or out.dtype)
    if fmt is not None and fmt is not extras.preserve_format:  # (a copy in that layout if needed)
        out = _contiguous(out, fmt)
    return out


def _contiguous(self, memory_format=None):
    """``self`` if it is dense in ``memory_format``'s order (row-major by default), else a
    copy that is."""
    fmt = extras.contiguous_format if memory_format is None else memory_format
    if fmt is extras.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous() if fmt is extras.contiguous_format \
            else self.is_contiguous(memory_format=fmt):
        return self
    return extras.clone(self, memory_format=fmt)


def _reversed_dims(self):
    """``x.T``: all dims reversed (torch warns that this is deprecated unless ``x`` is 2-D)."""
    if self.ndim != 2:
        import warnings

        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*jitgrad.arange(x.ndim - 1, -1, -1))` "
            "to reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return self.permute(*range(self.ndim - 1, -1, -1))


def _pair(op):
    return lambda input, other: apply(op, _operand(input), _operand(other))


def _matrices(t, name: str):
    if t.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                           f"matrices. Got {t.ndim}-D tensor.")
    return t


def _adjoint(t):
    if t.ndim not in (0, 2):  # (torch's H: a 0-d tensor is its own adjoint)
        extra = " For batches of matrices, consider using tensor.mH" if t.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{t.ndim}-D tensor.{extra}")
    return t.t().conj()


def install_operators(Tensor: type) -> None:  # noqa: N803
    """The Python operators, properties and small conveniences of Tensor (what is not a
    declared function or method: see ``surface``)."""
    # (views: assigning copies into them, as torch's setters do)
    Tensor.real = property(real, lambda self, value: real(self).copy_(value))
    Tensor.imag = property(imag, lambda self, value: imag(self).copy_(value))
    Tensor.T = property(_reversed_dims)
    Tensor.mT = property(lambda self: _matrices(self, "mT").transpose(-2, -1))
    Tensor.H = property(_adjoint)
    Tensor.mH = property(lambda self: _matrices(self, "mH").transpose(-2, -1).conj())
    Tensor.contiguous = _contiguous
    Tensor.view_as = lambda self, other: self.view(tuple(other.shape))
    Tensor.reshape_as = lambda self, other: self.reshape(tuple(other.shape))
    Tensor.expand_as = lambda self, other: self.expand(tuple(other.shape))
    Tensor.type_as = lambda self, other: self.to(other)  # (its dtype and device, as torch)
    Tensor.where = lambda self, condition, y: where(condition, self, y)
    for name, dt in (("float", dtypes.float32), ("double", dtypes.float64),
                     ("half", dtypes.float16), ("bfloat16", dtypes.bfloat16),
                     ("int", dtypes.int32), ("long", dtypes.int64),
                     ("bool", dtypes.bool), ("cfloat", dtypes.complex64),
                     ("cdouble", dtypes.complex128)):
        setattr(Tensor, name, (lambda d: lambda self: self.to(d))(dt))

    def binary(fn, reflected=False, name=None):
        def op(self, other):
            if not isinstance(other, (Tensor, int, float, complex, bool, np.ndarray, np.generic)):
                if name is not None and not registry.torch_function_live \
                        and _tf.tensor_like_in((other,)):
                    # a Tensor-like operand seen first here: its __torch_function__ decides
                    _tf.activate()
                    return getattr(Tensor, name)(self, other)
                return NotImplemented
            return fn(other, self) if reflected else fn(self, other)
        return op

    def direct(opdef, slow):
        # The operators of eager hot loops: the op's lane, where a tensor or Python number
        # operand goes straight to the dispatcher (what add/sub/mul/div do for it); anything
        # else takes ``slow``.
        return lane(opdef, slow)

    Tensor.__add__ = Tensor.__radd__ = direct(ew.ADD, binary(add, name="__add__"))
    Tensor.__sub__ = direct(ew.SUB, binary(sub, name="__sub__"))
    Tensor.__rsub__ = lambda self, other: apply(ew.RSUB, self, _operand(other))
    Tensor.__mul__ = Tensor.__rmul__ = direct(ew.MUL, binary(mul, name="__mul__"))
    Tensor.__truediv__ = direct(ew.DIV, binary(div, name="__truediv__"))
    Tensor.__rtruediv__ = lambda self, other: apply(ew.RECIPROCAL, self) * other
    Tensor.__pow__ = binary(pow, name="__pow__")
    Tensor.__rpow__ = lambda self, other: _rpow(self, other)
    Tensor.__matmul__ = binary(matmul, name="__matmul__")
    Tensor.__rmatmul__ = binary(matmul, reflected=True)
    Tensor.__neg__ = lambda self: apply(ew.NEG, self)
    Tensor.__pos__ = _positive  # (torch.positive: the tensor itself, bool refused)
    Tensor.__abs__ = lambda self: apply(ew.ABS, self)
    Tensor.__eq__ = binary(_pair(ew.EQ))
    Tensor.__ne__ = binary(_pair(ew.NE))
    Tensor.__lt__ = binary(_pair(ew.LT))
    Tensor.__le__ = binary(_pair(ew.LE))
    Tensor.__gt__ = binary(_pair(ew.GT))
    Tensor.__ge__ = binary(_pair(ew.GE))
    Tensor.__and__ = Tensor.__rand__ = binary(_pair(ew.BITWISE_AND))
    Tensor.__or__ = Tensor.__ror__ = binary(_pair(ew.BITWISE_OR))
    Tensor.__xor__ = Tensor.__rxor__ = binary(_pair(ew.BITWISE_XOR))

    def invert(self):
        if self.dtype is dtypes.bool:
            return apply(ew.LOGICAL_NOT, self)
        if self.dtype.is_floating_point or self.dtype.is_complex:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                            "tensors")
        if self.is_meta:
            return apply(OPS["bitwise_not"], self)
        return tensor(~self._data, device=host_device(self))
    Tensor.__invert__ = invert
    Tensor.__getitem__ = getitem
    Tensor.__hash__ = lambda self: id(self)
    from .extras import install_factories
    from .inplace import install_special
    from .torch_extras import install_operators as install_division_operators

    install_division_operators(Tensor)

    install_special(Tensor)
    install_factories(Tensor)
