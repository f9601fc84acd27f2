"""torch functions of transformer scripts: ``clamp_min``/``clamp_max`` (torch's
``ClampMinBackward0/1`` and ``ClampMaxBackward0/1`` nodes, fused by ``jit``), and the composites
``cosine_similarity``, ``pairwise_distance`` and ``rms_norm`` (composed as torch composes them,
so their nodes are their pieces')."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ._shape import int_tuple_arg, wrap_dim
from .dtype_rules import refuse_bool_bounds, refuse_dtypes
from .elementwise import _bshape, _clamp_dtype, _clamp_impl
from .norms import _vector_norm_impl, _vector_norm_jvp, _vector_norm_meta, _vector_norm_vjp
from . import registry
from .registry import ELEMENTWISE, OPAQUE, POINTWISE, apply, defop
from .selection import where
from .surface import public


def _bound_meta(name: str):
    def meta(x, **params):
        return tuple(x.shape), _clamp_dtype(x, params[name], None)
    return meta


# torch's clamp_min/clamp_max with a number bound refuse complex as clamp does; with a tensor
# bound they are maximum/minimum
_NO_COMPLEX_BOUND = refuse_dtypes(
    complex=(NotImplementedError, "clamp is not supported for complex types"))
CLAMP_MIN = defop(
    "clamp_min", lambda x, min: _clamp_impl(x, min, None), kind=POINTWISE,  # noqa: A006
    node_name="ClampMinBackward0", save=(0,), meta=_bound_meta("min"), jvp=ELEMENTWISE,
    vjp=(lambda g, ans, x, min: g * (x >= min),), template="max({0}, {p[min]})",  # noqa: A006
    check_operands=_NO_COMPLEX_BOUND,
    saved_names={"self": ("input", 0), "min": ("param", "min")})
CLAMP_MAX = defop(
    "clamp_max", lambda x, max: _clamp_impl(x, None, max), kind=POINTWISE,  # noqa: A006
    node_name="ClampMaxBackward0", save=(0,), meta=_bound_meta("max"), jvp=ELEMENTWISE,
    vjp=(lambda g, ans, x, max: g * (x <= max),), template="min({0}, {p[max]})",  # noqa: A006
    check_operands=_NO_COMPLEX_BOUND,
    saved_names={"self": ("input", 0), "max": ("param", "max")})


def _tensor_bound_meta(x, bound):
    return _bshape(x, bound), _clamp_dtype(x, bound, None)


CLAMP_MIN_TENSOR = defop(
    "clamp_min_tensor", lambda x, lo: _clamp_impl(x, lo, None), kind=POINTWISE,
    node_name="ClampMinBackward1", save=(0, 1), meta=_tensor_bound_meta, jvp=ELEMENTWISE,
    vjp=(lambda g, ans, x, lo: where(x >= lo, g, 0), lambda g, ans, x, lo: where(x < lo, g, 0)),
    template="max({0}, {1})", check_operands=refuse_dtypes(complex="maximum_cpu"))
CLAMP_MAX_TENSOR = defop(
    "clamp_max_tensor", lambda x, hi: _clamp_impl(x, None, hi), kind=POINTWISE,
    node_name="ClampMaxBackward1", save=(0, 1), meta=_tensor_bound_meta, jvp=ELEMENTWISE,
    vjp=(lambda g, ans, x, hi: where(x <= hi, g, 0), lambda g, ans, x, hi: where(x > hi, g, 0)),
    template="min({0}, {1})", check_operands=refuse_dtypes(complex="minimum_cpu"))


@public("clamp_min", method=True, inplace=True)
def clamp_min(input, min):  # noqa: A002
    """``max(input, min)`` elementwise (``min`` a number or a tensor), NaN-propagating."""
    if isinstance(min, registry.Tensor):
        return apply(CLAMP_MIN_TENSOR, input, min)
    refuse_bool_bounds("clamp_min", input, min)
    return apply(CLAMP_MIN, input, min=min)


@public("clamp_max", method=True, inplace=True)
def clamp_max(input, max):  # noqa: A002
    """``min(input, max)`` elementwise (``max`` a number or a tensor), NaN-propagating."""
    if isinstance(max, registry.Tensor):
        return apply(CLAMP_MAX_TENSOR, input, max)
    refuse_bool_bounds("clamp_max", input, max)
    return apply(CLAMP_MAX, input, max=max)


def _floored(norm, eps: float):
    """``norm`` floored at ``eps`` in value, with the gradient of ``norm`` itself (torch
    clamps the norms in place under no_grad)."""
    lifted = norm.detach().clamp(min=eps) - norm.detach()
    return norm + lifted


@public("cosine_similarity", functional="cosine_similarity")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps))``, broadcasting ``x1`` and
    ``x2`` (each divided by its norm first, as torch computes it)."""
    from .arranging import broadcast_tensors

    common = dtypes.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{common._scalar_name}")
    a, b = broadcast_tensors(x1, x2)
    if a.dtype is not common or b.dtype is not common:
        a, b = a.to(common), b.to(common)
    d = wrap_dim(dim, max(a.ndim, 1))
    na = _floored(a.norm(2, dim=d, keepdim=True), eps)
    nb = _floored(b.norm(2, dim=d, keepdim=True), eps)
    return ((a / na) * (b / nb)).sum(d)


# at::norm (what pairwise_distance calls): the vector norm under torch's older node name
NORM = defop("norm_p", _vector_norm_impl, kind=OPAQUE, meta=_vector_norm_meta, save=(0,),
             save_output=True, vjp=(_vector_norm_vjp,), jvp=_vector_norm_jvp,
             node_name="NormBackward1",
             saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                          "p": ("param", "ord"), "self": ("input", 0), "result": ("output", 0)})


@public("pairwise_distance", functional="pairwise_distance")
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        return diff.abs() if p != 0 else (diff != 0).to(diff.dtype)
    return apply(NORM, diff, ord=float(p), dims=(diff.ndim - 1,), keepdim=bool(keepdim),
                 dtype=None)


_RMS_NORM_CHECK = refuse_dtypes(integer="rms_norm", bool="rms_norm")


@public("rms_norm", functional="rms_norm")
def rms_norm(input, normalized_shape: Any, weight=None, eps: float | None = None):  # noqa: A002
    """``input / sqrt(mean(input**2 over normalized_shape) + eps) * weight``; ``eps`` defaults
    to the dtype's machine epsilon."""
    import numpy as np

    shape = int_tuple_arg("rms_norm", "normalized_shape", 2, normalized_shape)
    n = len(shape)
    if tuple(input.shape[input.ndim - n:]) != shape or input.ndim < n:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    _RMS_NORM_CHECK((input,))
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.ndim - n, input.ndim))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    out = out if weight is None else out * weight
    return out.contiguous()  # (torch's ends so: a copy, CloneBackward0, of a strided result)
