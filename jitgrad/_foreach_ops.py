"""torch's ``torch._foreach_*`` functions: one op applied to each tensor of a list (torch's
multi-tensor kernels; the optimizers' ``foreach`` code and EMA helpers call them).

Each is the per-tensor op in a loop, so values, dtypes, errors and autograd are the op's own
(a result's ``grad_fn`` is the op's node, where torch's is its foreach node). The second
operand may be a scalar, a list of scalars, a list of tensors or (for add/sub/mul/div) one
tensor; out-of-place forms return a tuple, in-place forms (``_``) change the tensors and return
the list, as torch's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .ops.registry import OPS, Tensor, apply

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
BINARY = ("add", "sub", "mul", "div", "clamp_min", "clamp_max", "maximum", "minimum", "pow")
_ONE_TENSOR = ("add", "sub", "mul", "div")  # (a single tensor as the second operand)
_NO_INPLACE_METHOD = ("maximum", "minimum")


def _check_list(tensors: Any) -> list:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor)
                                                          for t in tensors):
        raise TypeError("expected a list of tensors as the first argument, got "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _per_tensor(name: str, others: Any, n: int) -> Sequence:
    """The second operand spread over ``n`` tensors."""
    if isinstance(others, (list, tuple)):
        if len(others) != n:
            kind = "tensors" if others and isinstance(others[0], Tensor) else "scalars"
            if kind == "tensors":
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                                   f"{n} and {len(others)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return others
    if isinstance(others, Tensor) and others.ndim == 1 and name in ("addcmul", "addcdiv"):
        return others.tolist()  # (torch's "scalars" tensor: one value per tensor)
    return [others] * n


def _unary(op: str, inplace: bool) -> Callable:
    def fn(self: Sequence[Tensor]) -> Any:
        tensors = _check_list(self)
        if inplace:
            for t in tensors:
                getattr(t, op + "_")()
            return self
        return tuple(getattr(t, op)() for t in tensors)

    fn.__name__ = f"_foreach_{op}{'_' if inplace else ''}"
    return fn


def _extremum(op: str, t: Tensor, other: Any) -> Tensor:
    """``maximum``/``minimum`` of a tensor and a tensor or a number (the foreach ops take a
    scalar, which ``torch.maximum`` itself refuses)."""
    return apply(OPS[op], t, other)


def _binary(op: str, inplace: bool) -> Callable:
    def fn(self: Sequence[Tensor], other: Any, *, alpha: Any = None) -> Any:
        tensors = _check_list(self)
        if isinstance(other, Tensor) and op not in _ONE_TENSOR:
            raise TypeError(f"_foreach_{op}(): a single tensor is not a valid second operand")
        seconds = _per_tensor(op, other, len(tensors))
        extra = {} if alpha is None else {"alpha": alpha}
        if inplace:
            for t, o in zip(tensors, seconds):
                if op in _NO_INPLACE_METHOD:  # (no Tensor.maximum_: the result written back)
                    t.copy_(_extremum(op, t, o))
                else:
                    getattr(t, op + "_")(o, **extra)
            return self
        if op in _NO_INPLACE_METHOD:
            return tuple(_extremum(op, t, o) for t, o in zip(tensors, seconds))
        return tuple(getattr(t, op)(o, **extra) for t, o in zip(tensors, seconds))

    fn.__name__ = f"_foreach_{op}{'_' if inplace else ''}"
    return fn


def _pointwise(op: str, inplace: bool) -> Callable:
    def fn(self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor],
           scalars: Any = 1, *, value: Any = None) -> Any:
        tensors = _check_list(self)
        firsts = _per_tensor(op, _check_list(tensor1), len(tensors))
        seconds = _per_tensor(op, _check_list(tensor2), len(tensors))
        values = _per_tensor(op, scalars if value is None else value, len(tensors))
        method = op + "_" if inplace else op
        out = [getattr(t, method)(a, b, value=v)
               for t, a, b, v in zip(tensors, firsts, seconds, values)]
        return self if inplace else tuple(out)

    fn.__name__ = f"_foreach_{op}{'_' if inplace else ''}"
    return fn


def _lerp(inplace: bool) -> Callable:
    def fn(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> Any:
        tensors = _check_list(self)
        ends = _per_tensor("lerp", _check_list(tensors1), len(tensors))
        weights = _per_tensor("lerp", weight, len(tensors))
        method = "lerp_" if inplace else "lerp"
        out = [getattr(t, method)(e, w) for t, e, w in zip(tensors, ends, weights)]
        return self if inplace else tuple(out)

    fn.__name__ = "_foreach_lerp_" if inplace else "_foreach_lerp"
    return fn


def _foreach_norm(self: Sequence[Tensor], ord: Any = 2, dtype: Any = None) -> tuple:  # noqa: A002
    from . import linalg

    return tuple(linalg.vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_max(self: Sequence[Tensor]) -> tuple:
    return tuple(t.max() for t in _check_list(self))


def _foreach_powsum(self: Sequence[Tensor], exponent: Any = 2, dtype: Any = None) -> tuple:
    return tuple(t.abs().pow(exponent).sum(dtype=dtype) for t in _check_list(self))


def _foreach_pow(self: Any, exponent: Any) -> tuple:
    if not isinstance(self, (list, tuple)):  # pow(scalar, tensors)
        return tuple(self ** t for t in _check_list(exponent))
    return _binary("pow", False)(self, exponent)


def _foreach_copy_(self: Sequence[Tensor], src: Sequence[Tensor],
                   non_blocking: bool = False) -> list:
    tensors = _check_list(self)
    for t, s in zip(tensors, _per_tensor("copy", _check_list(src), len(tensors))):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self: Sequence[Tensor]) -> list:
    tensors = _check_list(self)
    for t in tensors:
        t.zero_()
    return self


def _foreach_clone(self: Sequence[Tensor], *, memory_format: Any = None) -> tuple:
    extra = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**extra) for t in _check_list(self))


def _foreach_mm(self: Sequence[Tensor], mat2: Sequence[Tensor]) -> tuple:
    tensors = _check_list(self)
    return tuple(t.mm(m) for t, m in zip(tensors, _per_tensor("mm", _check_list(mat2),
                                                              len(tensors))))


def _functions() -> dict[str, Callable]:
    out: dict[str, Callable] = {}
    for inplace in (False, True):
        for op in UNARY:
            out[f"_foreach_{op}{'_' if inplace else ''}"] = _unary(op, inplace)
        for op in BINARY:
            out[f"_foreach_{op}{'_' if inplace else ''}"] = _binary(op, inplace)
        for op in ("addcmul", "addcdiv"):
            out[f"_foreach_{op}{'_' if inplace else ''}"] = _pointwise(op, inplace)
        out["_foreach_lerp_" if inplace else "_foreach_lerp"] = _lerp(inplace)
    out.update(_foreach_norm=_foreach_norm, _foreach_max=_foreach_max,
               _foreach_powsum=_foreach_powsum, _foreach_pow=_foreach_pow,
               _foreach_copy_=_foreach_copy_, _foreach_zero_=_foreach_zero_,
               _foreach_clone=_foreach_clone, _foreach_mm=_foreach_mm)
    return out


FUNCTIONS = _functions()
