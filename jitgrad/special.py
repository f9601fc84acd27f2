"""``jitgrad.special``: torch.special's functions, on jitgrad's ops.

Most names are the top-level ops under torch.special's names (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``psi`` is ``digamma``); ``entr`` is an op with torch's node, ``ndtr``
composes ``erfc`` as torch does. ``xlog1py`` and ``multigammaln`` are compositions of ops:
values and gradients are torch's, the autograd nodes are their pieces'. The Bessel, Airy,
orthogonal-polynomial, incomplete-gamma and zeta functions, ``erfcx``, ``i0``/``i1``, ``ndtri``
and ``log_ndtr`` come from ``jitgrad.special24``.
"""

from __future__ import annotations

import math
from typing import Any

from . import dtypes as _dtypes
from . import ops as _ops
from ._type_info import can_cast
from .ops.arg_errors import invalid_combination
from .ops.out_arg import write_out
from .ops.out_dtype import check_out_dtypes
from .ops.dtype_rules import refuse_dtypes
from .ops.elementwise3 import XLOGY_SIGNATURES
from .ops.registry import apply
from .ops.registry import state as _state
from .dtypes import get_default_dtype
from .ops.special_fns import ENTR
from .ops.special_fns import polygamma as _polygamma
from .special24 import *  # noqa: F403 - (the Bessel, gamma, zeta and polynomial functions)
from .special24 import __all__ as _all24

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln",
           "log1p", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "polygamma",
           "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", *_all24]

erf = _ops.erf
erfc = _ops.erfc
erfinv = _ops.erfinv
exp2 = _ops.exp2
expit = _ops.sigmoid
expm1 = _ops.expm1
gammaln = _ops.lgamma
digamma = psi = _ops.digamma
log1p = _ops.log1p
logit = _ops.logit
logsumexp = _ops.logsumexp
sinc = _ops.sinc

_XLOG1PY_CHECK = refuse_dtypes(complex="xlog1py_cpu")
_NDTR_CHECK = refuse_dtypes(complex="erf_vml_cpu")
_MULTIGAMMALN_CHECK = refuse_dtypes(
    complex="arange_cpu", bool=(RuntimeError, "The input tensor may not be a boolean tensor."))


_ROUND_CHECK = refuse_dtypes(integer="round_vml_cpu", bool="round_vml_cpu")


def round(input: Any, decimals: int = 0, *, out: Any = None) -> Any:  # noqa: A001,A002
    """``torch.round`` for floating and complex input; unlike it, torch.special.round refuses
    integers (its kernel is the vectorised one; with ``decimals``, round's own "round_cpu").
    ``out`` must have the input's dtype (torch: "Found dtype Double but expected Float")."""
    if out is not None:  # (out's dtype first, as torch; round's rule: the input's dtype)
        check_out_dtypes("round", [out], [input], single=True)
    if decimals == 0:
        _ROUND_CHECK((input,))
    result = _ops.round(input, decimals=decimals)
    return result if out is None else write_out("round", out, result)


def polygamma(n: int, input: Any, *, out: Any = None) -> Any:  # noqa: A002
    """The ``n``-th derivative of the digamma function (``n = 0``: digamma)."""
    result = _polygamma(n, input)
    return result if out is None else write_out("polygamma", out, result)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    return _ops.softmax(input, dim, dtype=dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    """``log(softmax(x))`` along ``dim``, computed stably."""
    return _ops.log_softmax(input, dim, dtype=dtype)


def xlogy(input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
    """``torch.xlogy``: ``input * log(other)``, 0 where ``input`` is 0."""
    from .tensor import Tensor

    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise invalid_combination("special_xlogy", (input, other), {}, XLOGY_SIGNATURES)
    return _ops.xlogy(input, other, out=out)


def xlog1py(input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    from .tensor import Tensor

    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise invalid_combination("special_xlog1py", (input, other), {}, XLOGY_SIGNATURES)
    # a Python number takes the type torch's promotion gives it (2.5 with an int tensor: float)
    common = _dtypes.result_type(input, other)
    x = input if isinstance(input, Tensor) else _ops.tensor(input, dtype=common)
    y = other if isinstance(other, Tensor) else _ops.tensor(other, dtype=common)
    _XLOG1PY_CHECK((x, y))
    log1p_y = _ops.log1p(y)  # (masked before the product: x's gradient at x == 0 is 0, not nan)
    zero = (x == 0) & ~_ops.isnan(y)
    result = x * _ops.where(zero, _ops.zeros_like(log1p_y), log1p_y)
    return result if out is None else write_out("special_xlog1py", out, result)


def entr(input: Any, *, out: Any = None) -> Any:  # noqa: A002
    """The entropy term ``-x * log(x)``: 0 at 0, ``-inf`` below 0 (``SpecialEntrBackward0``)."""
    result = apply(ENTR, input)
    return result if out is None else write_out("special_entr", out, result)


def ndtr(input: Any, *, out: Any = None) -> Any:  # noqa: A002
    """The standard normal distribution function ``(1 + erf(x / sqrt(2))) / 2``, computed as
    ``erfc(-x / sqrt(2)) / 2`` so the lower tail keeps its relative accuracy (torch's nodes).
    With ``out``, as torch's composite: the result is copied into it (``CopyBackwards`` when
    it requires grad)."""
    _NDTR_CHECK((input,))
    dt = input.dtype
    if dt in (_dtypes.float16, _dtypes.bfloat16):  # torch's half kernel: (1 + erf) / 2, each
        result = (1 + _ops.erf(input * (1 / math.sqrt(2)))) * 0.5  # step rounded to the dtype
    else:
        x = input if dt.is_floating_point else input.to(get_default_dtype())
        result = _ops.erfc(x * (-1 / math.sqrt(2))) * 0.5
    if out is None:
        return result
    grad = _state.grad_enabled
    if grad and getattr(out, "requires_grad", False) and out.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if not (grad and (result.requires_grad or out.requires_grad)):
        return write_out("special_ndtr", out, result)
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype._scalar_name} can't be cast to the desired "
                           f"output type {out.dtype._scalar_name}")
    return out.copy_(result)


def multigammaln(input: Any, p: int, *, out: Any = None) -> Any:  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2)``."""
    if p < 1:  # (before the dtype checks, as torch; values at or below (p - 1) / 2 are computed)
        if input.dtype is _dtypes.bool:
            raise RuntimeError("The input tensor may not be a boolean tensor.")
        raise RuntimeError("p has to be greater than or equal to 1")
    _MULTIGAMMALN_CHECK((input,))
    total = p * (p - 1) / 4 * math.log(math.pi)
    for j in range(p):
        total = total + _ops.lgamma(input - j / 2)
    if out is None:
        return total
    if isinstance(getattr(out, "dtype", None), _dtypes.dtype) and not (
            out.dtype.is_floating_point or out.dtype.is_complex):  # (torch's words)
        raise RuntimeError(f"mvlgamma: result type {input.dtype._scalar_name} can't be cast to the "
                           f"desired output type {total.dtype._scalar_name}")
    return write_out("mvlgamma", out, total)
