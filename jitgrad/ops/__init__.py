"""Public op functions (``jitgrad.exp`` ...) and the Tensor methods and operators built on them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from . import elementwise as ew
from .composite import log_softmax, logsumexp, softmax, std, var
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       linspace, ones, ones_like, tensor, zeros, zeros_like)
from .elementwise import where
from .indexing import gather, getitem, index_add, index_select, scatter_add
from .linalg import addmm, bmm, dot, matmul, mm, mv, outer
from .movement import (cat, chunk, concat, concatenate, expand, flatten, narrow, permute, reshape,
                       select, split, squeeze, stack, t, transpose, unsqueeze, view)
from .reduce import amax, amin, argmax, argmin, max, mean, min, prod, sum  # noqa: A004
from .registry import OPS, OpDef, apply, defop

__all__ = ["OPS", "OpDef", "apply", "defop"]


def _operand(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return tensor(x)
    return x


def _unary(op: OpDef):
    def fn(input):  # noqa: A002
        return apply(op, input)
    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise {op.name} of ``input``."
    return fn


neg = negative = _unary(ew.NEG)
exp = _unary(ew.EXP)
log = _unary(ew.LOG)
log1p = _unary(ew.LOG1P)
expm1 = _unary(ew.EXPM1)
sqrt = _unary(ew.SQRT)
rsqrt = _unary(ew.RSQRT)
reciprocal = _unary(ew.RECIPROCAL)
sin = _unary(ew.SIN)
cos = _unary(ew.COS)
tan = _unary(ew.TAN)
tanh = _unary(ew.TANH)
sigmoid = _unary(ew.SIGMOID)
erf = _unary(ew.ERF)
relu = _unary(ew.RELU)
abs = absolute = _unary(ew.ABS)  # noqa: A001
sign = _unary(ew.SIGN)
sgn = _unary(ew.SGN)
clone = _unary(ew.CLONE)
logical_not = _unary(ew.LOGICAL_NOT)
isnan = _unary(ew.ISNAN)


def conj(input):  # noqa: A002
    """Complex conjugate; the tensor itself for real dtypes (as torch)."""
    if not input._dtype.is_complex:
        return input
    return apply(ew.CONJ, input)


def real(input):  # noqa: A002
    return input if not input.dtype.is_complex else apply(ew.REAL, input)


def imag(input):  # noqa: A002
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(ew.IMAG, input)


def add(input, other, *, alpha: Any = 1):  # noqa: A002
    """``input + alpha * other`` with broadcasting and torch's type promotion."""
    if alpha != 1:
        other = mul(other, alpha)
    return apply(ew.ADD, _operand(input), _operand(other))


def sub(input, other, *, alpha: Any = 1):  # noqa: A002
    """``input - alpha * other``."""
    if alpha != 1:
        other = mul(other, alpha)
    return apply(ew.SUB, _operand(input), _operand(other))


subtract = sub


def mul(input, other):  # noqa: A002
    """Elementwise product."""
    return apply(ew.MUL, _operand(input), _operand(other))


multiply = mul


def div(input, other, *, rounding_mode: str | None = None):  # noqa: A002
    """True division (``rounding_mode=None``), or floor/trunc division (not differentiable)."""
    if rounding_mode is None:
        return apply(ew.DIV, _operand(input), _operand(other))
    q = apply(ew.DIV, _operand(input), _operand(other)).detach()
    r = np.floor(q._data) if rounding_mode == "floor" else np.trunc(q._data)
    dt = dtypes.result_type(input, other)
    return tensor(r.astype(dt.np), dtype=dt)


divide = true_divide = div


def pow(input, exponent):  # noqa: A001,A002
    """``input ** exponent`` for tensors and/or numbers."""
    from .registry import Tensor

    if not isinstance(input, Tensor):
        return apply(ew.RPOW, exponent, base=input)
    if isinstance(exponent, Tensor):
        return apply(ew.POW, input, exponent)
    return apply(ew.POW_SCALAR, input, exponent=exponent)


def maximum(input, other):  # noqa: A002
    return apply(ew.MAXIMUM, input, other)


def minimum(input, other):  # noqa: A002
    return apply(ew.MINIMUM, input, other)


def clamp(input, min=None, max=None):  # noqa: F811
    """Clamps into ``[min, max]`` (numbers or tensors)."""
    from .registry import Tensor

    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = min if min is None or isinstance(min, Tensor) else tensor(min, dtype=input.dtype)
        hi = max if max is None or isinstance(max, Tensor) else tensor(max, dtype=input.dtype)
        return apply(ew.CLAMP_TENSOR, input, lo, hi)
    return apply(ew.CLAMP, input, min=min, max=max)


clip = clamp


def _cmp(op: OpDef):
    def fn(input, other):  # noqa: A002
        return apply(op, _operand(input), _operand(other))
    fn.__name__ = op.name
    return fn


eq, ne, lt, le, gt, ge = (_cmp(o) for o in (ew.EQ, ew.NE, ew.LT, ew.LE, ew.GT, ew.GE))
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne
bitwise_and, bitwise_or, bitwise_xor = (_cmp(o) for o in (ew.BITWISE_AND, ew.BITWISE_OR,
                                                          ew.BITWISE_XOR))
logical_and, logical_or = bitwise_and, bitwise_or


def masked_fill(input, mask, value):  # noqa: A002
    """``value`` where ``mask`` is True, else ``input``."""
    return where(mask, value, input)


def all(input, dim=None, keepdim: bool = False):  # noqa: A001,A002
    return tensor(np.all(input._data, axis=dim, keepdims=keepdim))


def any(input, dim=None, keepdim: bool = False):  # noqa: A001,A002
    return tensor(np.any(input._data, axis=dim, keepdims=keepdim))


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other) -> bool:  # noqa: A002
    return tuple(input.shape) == tuple(other.shape) and bool(np.all(input._data == other._data))


def numel(input) -> int:  # noqa: A002
    return input.numel()


def is_tensor(obj: Any) -> bool:
    from .registry import Tensor

    return isinstance(obj, Tensor)


def _to(self, *args: Any, **kwargs: Any):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; self if unchanged."""
    from ..device import check_device, device
    from .registry import Tensor

    dtype = kwargs.get("dtype")
    dev = kwargs.get("device")
    copy = kwargs.get("copy", False)
    for a in args:
        if isinstance(a, dtypes.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, (str, device)):
            dev = a
    check_device(dev)
    if (dtype is None or dtype is self.dtype) and not copy:
        return self
    return apply(ew.TO_COPY, self, dtype=dtype or self.dtype)


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


def _install(Tensor: type) -> None:  # noqa: N803
    """Attaches the op functions as Tensor methods and Python operators."""
    g = globals()
    for name in ("neg", "negative", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal",
                 "sin", "cos", "tan", "tanh", "sigmoid", "erf", "relu", "abs", "absolute", "sign",
                 "sgn", "clone", "conj", "add", "sub", "subtract", "mul", "multiply", "div",
                 "divide", "true_divide", "pow", "maximum", "minimum", "clamp", "clip", "eq",
                 "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
                 "not_equal", "logical_not", "logical_and", "logical_or", "isnan",
                 "masked_fill", "all", "any", "allclose", "equal", "sum", "mean", "prod", "amax",
                 "amin", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "softmax",
                 "log_softmax", "matmul", "mm", "bmm", "dot", "mv", "outer", "reshape", "view",
                 "flatten", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze",
                 "select", "narrow", "split", "chunk", "index_select", "gather", "scatter_add",
                 "index_add"):
        setattr(Tensor, name, g[name])
    Tensor.to = _to
    Tensor.swapaxes = Tensor.transpose
    Tensor.real = property(real)
    Tensor.imag = property(imag)
    Tensor.T = property(_reversed_dims)
    Tensor.mT = property(lambda self: self.transpose(-2, -1))
    Tensor.H = property(lambda self: self.t().conj())
    Tensor.mH = property(lambda self: self.transpose(-2, -1).conj())
    Tensor.contiguous = lambda self, memory_format=None: self if self.is_contiguous() \
        else self.clone()
    Tensor.view_as = lambda self, other: self.view(tuple(other.shape))
    Tensor.reshape_as = lambda self, other: self.reshape(tuple(other.shape))
    Tensor.expand_as = lambda self, other: self.expand(tuple(other.shape))
    Tensor.type_as = lambda self, other: self.to(other.dtype)
    Tensor.where = lambda self, condition, y: where(condition, self, y)
    for name, dt in (("float", dtypes.float32), ("double", dtypes.float64),
                     ("half", dtypes.float16), ("int", dtypes.int32), ("long", dtypes.int64),
                     ("bool", dtypes.bool), ("cfloat", dtypes.complex64),
                     ("cdouble", dtypes.complex128)):
        setattr(Tensor, name, (lambda d: lambda self: self.to(d))(dt))

    def binary(fn, reflected=False):
        def op(self, other):
            if not isinstance(other, (Tensor, int, float, complex, bool, np.ndarray, np.generic)):
                return NotImplemented
            return fn(other, self) if reflected else fn(self, other)
        return op

    def direct(opdef, slow):
        # The operators of eager hot loops: a tensor or Python number operand goes straight to
        # the dispatcher (what add/sub/mul/div do for it); anything else takes ``slow``.
        def op(self, other):
            kind = type(other)
            if kind is Tensor or kind is float or kind is int:
                return apply(opdef, self, other)
            return slow(self, other)
        return op

    Tensor.__add__ = Tensor.__radd__ = direct(ew.ADD, binary(add))
    Tensor.__sub__ = direct(ew.SUB, binary(sub))
    Tensor.__rsub__ = lambda self, other: apply(ew.RSUB, self, _operand(other))
    Tensor.__mul__ = Tensor.__rmul__ = direct(ew.MUL, binary(mul))
    Tensor.__truediv__ = direct(ew.DIV, binary(div))
    Tensor.__rtruediv__ = lambda self, other: reciprocal(self) * other
    Tensor.__pow__ = binary(pow)
    Tensor.__rpow__ = lambda self, other: apply(ew.RPOW, self, base=other)
    Tensor.__matmul__ = binary(matmul)
    Tensor.__rmatmul__ = binary(matmul, reflected=True)
    Tensor.__neg__ = neg
    Tensor.__abs__ = abs
    Tensor.__eq__ = binary(eq)
    Tensor.__ne__ = binary(ne)
    Tensor.__lt__ = binary(lt)
    Tensor.__le__ = binary(le)
    Tensor.__gt__ = binary(gt)
    Tensor.__ge__ = binary(ge)
    Tensor.__and__ = Tensor.__rand__ = binary(bitwise_and)
    Tensor.__or__ = Tensor.__ror__ = binary(bitwise_or)
    Tensor.__xor__ = Tensor.__rxor__ = binary(bitwise_xor)
    Tensor.__invert__ = lambda self: logical_not(self) if self.dtype is dtypes.bool else \
        tensor(~self._data)
    Tensor.__getitem__ = getitem
    Tensor.__hash__ = lambda self: id(self)
    from . import inplace

    inplace.install(Tensor)
    from . import extras

    extras.install(Tensor)  # issue 15's tensor ops (after inplace: their in-place variants)
