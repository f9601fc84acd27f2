"""Reduction primitives: sum, mean, prod, amax/amin, max/min (with and without dim).

Every reduction takes normalized params ``dims`` (a sorted tuple) and ``keepdim``. Where torch
records a different node for the all-dims form (``SumBackward0`` vs ``SumBackward1``) there are
two OpDefs sharing one rule. Templates are ``ReduceTemplate``s: identity, combine (over the
accumulator ``{acc}`` and the element ``{0}``), final (with the reduced count ``{n}``).
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes
from . import registry
from ._shape import normalize_dims, numel, reduced_shape, reduction_dims, wrap_dim
from .autocast_policy import FP32, autocast_policy
from .dtype_rules import refuse_dtypes
from .registry import LINEAR, OPS, REDUCE, ReduceTemplate, apply, defop
from .surface import public
from .memory_formats import row_major

SUM_T = ReduceTemplate("0", "{acc} + {0}", additive=True)
MEAN_T = ReduceTemplate("0", "{acc} + {0}", "{acc} / {n}", additive=True)
PROD_T = ReduceTemplate("1", "{acc} * {0}")
MAX_T = ReduceTemplate("-inf", "max({acc}, {0})", widen=False)
MIN_T = ReduceTemplate("inf", "min({acc}, {0})", widen=False)


def expand_reduced(g, shape: tuple, dims: tuple, keepdim: bool):
    """Broadcasts a reduction's cotangent back over the reduced dims of ``shape``."""
    if not keepdim:
        g = g.reshape(reduced_shape(shape, dims, True))
    return g.expand(shape)


def _sum_dtype(d: dtypes.dtype, dtype: dtypes.dtype | None) -> dtypes.dtype:
    if dtype is not None:
        return dtype
    return dtypes.int64 if dtypes.is_integral(d, include_bool=True) else d


def _reduce_meta(dtype_rule):
    def meta(x, dims, keepdim, **params):
        return reduced_shape(tuple(x.shape), dims, keepdim), dtype_rule(x.dtype, **params)
    return meta


def _accumulated(x, dtype) -> np.dtype:
    """The NumPy dtype a sum or product of array ``x`` accumulates in (``_sum_dtype``)."""
    return _sum_dtype(dtypes.from_numpy_dtype(x.dtype), dtype).np


_HALF = np.dtype(np.float16)


def _sum_impl(x, dims, keepdim, dtype=None):
    acc = _accumulated(x, dtype)
    if acc is _HALF:  # (torch accumulates half in float: NumPy would along a leading dim)
        return np.add.reduce(x, axis=dims, keepdims=keepdim, dtype=np.float32).astype(acc)
    return np.add.reduce(x, axis=dims, keepdims=keepdim, dtype=acc)


def _sum_vjp(g, ans, x, dims, keepdim, dtype=None):
    return expand_reduced(g, tuple(x.shape), dims, keepdim)


def _mean_dtype(d: dtypes.dtype, dtype=None, fname: str = "mean") -> dtypes.dtype:
    which = "Optional" if dtype is not None else "Input"
    d = dtype or d
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(
            f"{fname}(): could not infer output dtype. {which} dtype must be either a floating "
            f"point or complex dtype. Got: {d._scalar_name}")
    return d


def _mean_impl(x, dims, keepdim, dtype=None):
    d = _mean_dtype(dtypes.from_numpy_dtype(x.dtype), dtype)
    if x.size == 0:  # (NumPy warns "Mean of empty slice"; torch gives nan silently)
        return np.full_like(np.sum(x, axis=dims, keepdims=keepdim, dtype=d.np), np.nan)
    # np.mean's own steps (the sum in ``d``, one division by an intp count) without the cost
    # of its wrappers
    half = d.np is _HALF  # (accumulated and divided in float, rounded once, as torch)
    total = np.add.reduce(x, axis=dims, dtype=np.float32 if half else d.np, keepdims=keepdim)
    count = 1
    for k in dims:
        count *= x.shape[k]
    if half:
        return np.asarray(total / np.float32(count)).astype(np.float16)
    if type(total) is np.ndarray:
        return np.true_divide(total, np.intp(count), out=total, casting="unsafe")
    return total.dtype.type(total / np.intp(count))


def _mean_vjp(g, ans, x, dims, keepdim, dtype=None):
    n = numel(tuple(x.shape[d] for d in dims))
    return expand_reduced(g, tuple(x.shape), dims, keepdim) / n


def _prod_impl(x, dims, keepdim, dtype=None):
    return np.prod(x, axis=dims, keepdims=keepdim, dtype=_accumulated(x, dtype))


def _prod_vjp(g, ans, x, dims, keepdim, dtype=None):
    # The product of the other elements, exact where x has zeros (no division by zero).
    from .elementwise import where

    # With one zero at z, others_i = x_z * p / x_i for i != z, written with zsum (= x_z) so
    # that it stays differentiable in x_z (double backward); likewise for two zeros.
    is_zero = x == 0
    nonzero = where(is_zero, 1, x)
    zeros = _kept_sum(is_zero, dims)
    p = nonzero.prod(dim=dims, keepdim=True)
    zsum = _kept_sum(where(is_zero, x, 0), dims)
    others = where(zeros == 0, p / nonzero,
                   where(zeros == 1, where(is_zero, p, zsum * p / nonzero),
                         where((zeros == 2) & is_zero, (zsum - x) * p, 0)))
    return expand_reduced(g, tuple(x.shape), dims, keepdim) * others.conj()


def _kept_sum(t, dims: tuple):
    # (the op, not the public sum: the rules' empty dims reduce nothing, where sum(()) reduces
    # every dim, as torch's)
    return apply(SUM_DIM, t, dims=dims, keepdim=True, dtype=None)


def _evenly(g, ans, x, dims, keepdim):
    # amax/amin split the gradient evenly among tied extrema (NaN equals nothing: all NaN).
    shape = tuple(x.shape)
    mask = x == expand_reduced(ans, shape, dims, keepdim)
    count = _kept_sum(mask, dims)
    return expand_reduced(g, shape, dims, keepdim) * mask / count


def _evenly_nan_equal(g, ans, x, dims, keepdim):
    # The all-dims max/min: as amax, but a NaN result is shared among the NaNs (torch's
    # evenly_distribute_backward).
    shape = tuple(x.shape)
    value = expand_reduced(ans, shape, dims, keepdim)
    mask = (x == value) | (x.isnan() & value.isnan())
    count = _kept_sum(mask, dims)
    return expand_reduced(g, shape, dims, keepdim) * mask / count


def _same_dtype(d: dtypes.dtype) -> dtypes.dtype:
    return d


def _reduction(name, impl, vjp, node_name, template, dtype_rule=_same_dtype, **fields):
    def meta(x, dims, keepdim, **params):
        shape = tuple(x.shape)
        if not op.empty_forbidden or not shape or numel(shape) or \
                not builtins.any(shape[d] == 0 for d in dims):
            return reduced_shape(shape, dims, keepdim), dtype_rule(x.dtype, **params)
        public = {"max_all": "max", "min_all": "min"}.get(name, name)
        raise RuntimeError(f"{public}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    op = defop(name, row_major(impl), kind=REDUCE, meta=meta, vjp=(vjp,), node_name=node_name,
               template=template, **fields)
    return op


def _weighted_jvp(weights):
    # A reduction whose JVP is sum(t * w) over the reduced dims, w = the VJP of a ones cotangent.
    def rule(tangents, ans, x, dims, keepdim, **params):
        from .creation import ones

        g = ones(tuple(ans.shape), dtype=ans.dtype, device=ans.device)
        w = weights(g, ans, x, dims, keepdim, **params).conj()
        return apply(SUM_DIM, tangents[0] * w, dims=dims, keepdim=keepdim, dtype=None)
    return rule


def _amax(x, dims, keepdim):
    return np.maximum.reduce(x, axis=dims, keepdims=keepdim)


def _amin(x, dims, keepdim):
    return np.minimum.reduce(x, axis=dims, keepdims=keepdim)


SUM = _reduction("sum", _sum_impl, _sum_vjp, "SumBackward0", SUM_T, _sum_dtype, jvp=LINEAR,
                 saved_names={"self_sym_sizes": ("sizes", 0)})
SUM_DIM = _reduction("sum_dim", _sum_impl, _sum_vjp, "SumBackward1", SUM_T, _sum_dtype,
                     jvp=LINEAR,
                     saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                                  "self_sym_sizes": ("sizes", 0)})
MEAN = _reduction("mean", _mean_impl, _mean_vjp, "MeanBackward0", MEAN_T, _mean_dtype,
                  jvp=LINEAR,
                  saved_names={"self_sym_sizes": ("sizes", 0), "self_sym_numel": ("numel", 0)})
MEAN_DIM = _reduction("mean_dim", _mean_impl, _mean_vjp, "MeanBackward1", MEAN_T, _mean_dtype,
                      jvp=LINEAR,
                      saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                                   "self_sym_sizes": ("sizes", 0), "self_sym_numel": ("numel", 0)})
PROD = _reduction("prod", _prod_impl, _prod_vjp, "ProdBackward0", PROD_T, _sum_dtype, save=(0,),
                  jvp=_weighted_jvp(_prod_vjp),
                  saved_names={"self": ("input", 0), "result": ("output", 0)})
PROD_DIM = _reduction("prod_dim", _prod_impl, _prod_vjp, "ProdBackward1", PROD_T, _sum_dtype,
                      save=(0,), jvp=_weighted_jvp(_prod_vjp),
                      saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                                   "self": ("input", 0), "result": ("output", 0)})
_EXTREME = {"save": (0,), "save_output": True, "jvp": _weighted_jvp(_evenly),
            "empty_forbidden": True}
_EXTREME_ALL = dict(_EXTREME, jvp=_weighted_jvp(_evenly_nan_equal))
AMAX = _reduction("amax", _amax, _evenly, "AmaxBackward0", MAX_T, **_EXTREME,
                  check_operands=refuse_dtypes(complex="max_values_cpu"),
                  saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                               "self": ("input", 0), "result": ("output", 0)})
AMIN = _reduction("amin", _amin, _evenly, "AminBackward0", MIN_T, **_EXTREME,
                  check_operands=refuse_dtypes(complex="min_values_cpu"),
                  saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                               "self": ("input", 0), "result": ("output", 0)})
MAX_ALL = _reduction("max_all", _amax, _evenly_nan_equal, "MaxBackward1", MAX_T, **_EXTREME_ALL,
                     check_operands=refuse_dtypes(complex="max_all"),
                     saved_names={"self": ("input", 0), "result": ("output", 0)})
MIN_ALL = _reduction("min_all", _amin, _evenly_nan_equal, "MinBackward1", MIN_T, **_EXTREME_ALL,
                     check_operands=refuse_dtypes(complex="min_all"),
                     saved_names={"self": ("input", 0), "result": ("output", 0)})


def _arg_reduce(fn):
    def impl(x, dim, keepdim):
        if x.ndim == 0:  # (a 0-d tensor: its one value, index 0)
            return x.copy(), np.zeros((), np.int64)
        idx = fn(x, axis=dim, keepdims=True)
        values = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            idx, values = idx.squeeze(dim), values.squeeze(dim)
        return values, idx.astype(np.int64)
    return impl


def _select_vjp(arg_op_name):
    def rule(grads, ans, x, dim, keepdim):
        # Gradient flows only to the element whose index was returned (torch's MaxBackward0);
        # the index is recomputed from the saved input, exactly as the forward computed it.
        from .creation import zeros
        from .indexing import scatter_add

        g = grads[0]
        idx = apply(OPS[arg_op_name], x, dim=dim, keepdim=True)
        if not keepdim:
            g = g.unsqueeze(dim)
        return (scatter_add(zeros(tuple(x.shape), dtype=g.dtype, device=g.device), dim, idx, g),)
    return rule


def _dim_meta(x, dim, keepdim):
    shape = reduced_shape(tuple(x.shape), (dim,), keepdim)
    return (shape, shape), (x.dtype, dtypes.int64)


def _select_jvp(tangents, ans, x, dim, keepdim):
    idx = ans[1] if keepdim else ans[1].unsqueeze(dim)
    value = tangents[0].gather(dim, idx)
    return (value if keepdim else value.squeeze(dim)), None


def _no_complex(name: str, bool_too: bool = False):
    """torch's refusal of complex values (and bool: argmax, argmin) by the reductions along a
    dim that return indices."""
    kinds = {"complex": (RuntimeError, f"{name}(): does not support complex input")}
    if bool_too:
        kinds["bool"] = (RuntimeError, f"{name}(): does not support bool input")
    return refuse_dtypes(**kinds)


MAX_DIM = defop("max_dim", row_major(_arg_reduce(np.argmax)), kind=REDUCE, meta=_dim_meta,
                n_outputs=2,
                vjp=_select_vjp("argmax"), node_name="MaxBackward0", save=(0,), jvp=_select_jvp,
                check_operands=_no_complex("max"),
                saved_names={"dim": ("param", "dim"), "keepdim": ("param", "keepdim"),
                             "indices": ("output", 1), "self_sym_sizes": ("sizes", 0)},
                             saved_indices=("argmax", ("dim", "keepdim")))
MIN_DIM = defop("min_dim", row_major(_arg_reduce(np.argmin)), kind=REDUCE, meta=_dim_meta,
                n_outputs=2,
                vjp=_select_vjp("argmin"), node_name="MinBackward0", save=(0,), jvp=_select_jvp,
                check_operands=_no_complex("min"),
                saved_names={"dim": ("param", "dim"), "keepdim": ("param", "keepdim"),
                             "indices": ("output", 1), "self_sym_sizes": ("sizes", 0)},
                             saved_indices=("argmin", ("dim", "keepdim")))
ARGMAX = defop("argmax", row_major(lambda x, dim, keepdim: _arg_reduce(np.argmax)(x, dim,
                                                                                  keepdim)[1]),
               kind=REDUCE, check_operands=_no_complex("argmax", True),
               meta=lambda x, dim, keepdim: (
                   reduced_shape(tuple(x.shape), (dim,), keepdim), dtypes.int64))
ARGMIN = defop("argmin", row_major(lambda x, dim, keepdim: _arg_reduce(np.argmin)(x, dim,
                                                                                  keepdim)[1]),
               kind=REDUCE, check_operands=_no_complex("argmin", True),
               meta=lambda x, dim, keepdim: (
                   reduced_shape(tuple(x.shape), (dim,), keepdim), dtypes.int64))


# ---------------------------------------------------------------- public functions


def _dims_or_all(input, dim):  # noqa: A002
    return normalize_dims(dim, input.ndim)


@public("sum", method=True)
def sum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A001,A002
    """Sum of elements, over ``dim`` (an int or tuple) or over all of them."""
    if dim is None and not keepdim:
        return apply(SUM, input, dims=tuple(range(input.ndim)), keepdim=False, dtype=dtype)
    return apply(SUM_DIM, input, dims=reduction_dims(dim, input.ndim), keepdim=keepdim,
                 dtype=dtype)


@public("mean", method=True)
def mean(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """Mean of elements, over ``dim`` or over all of them (floating/complex inputs only)."""
    if dim is None and not keepdim:
        return apply(MEAN, input, dims=tuple(range(input.ndim)), keepdim=False, dtype=dtype)
    return apply(MEAN_DIM, input, dims=reduction_dims(dim, input.ndim), keepdim=keepdim,
                 dtype=dtype)


@public("prod", method=True)
@autocast_policy(FP32)
def prod(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """Product of elements, over one ``dim`` or over all of them."""
    if dim is None:
        return apply(PROD, input, dims=tuple(range(input.ndim)), keepdim=False, dtype=dtype)
    return apply(PROD_DIM, input, dims=normalize_dims(dim, input.ndim), keepdim=keepdim,
                 dtype=dtype)


@public("amax", method=True)
def amax(input, dim=(), keepdim: bool = False):  # noqa: A002
    """Maximum over ``dim`` (all dims when empty); ties share the gradient evenly."""
    dims = normalize_dims(None if dim == () else dim, input.ndim)
    if dim != ():
        _nonempty_dims("amax", input, dims)
    return apply(AMAX, input, dims=dims, keepdim=keepdim)


def _nonempty_dims(name: str, input, dims) -> None:  # noqa: A002
    """torch's IndexError for a reduction without identity over a dim of size 0."""
    for d in dims:
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


@public("amin", method=True)
def amin(input, dim=(), keepdim: bool = False):  # noqa: A002
    """Minimum over ``dim`` (all dims when empty); ties share the gradient evenly."""
    dims = normalize_dims(None if dim == () else dim, input.ndim)
    if dim != ():
        _nonempty_dims("amin", input, dims)
    return apply(AMIN, input, dims=dims, keepdim=keepdim)


_MAX_MIN_SIGNATURES = (
    "Tensor input, *, Tensor out = None", "Tensor input, Tensor other, *, Tensor out = None",
    "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None")


def _max_min(all_op, dim_op, pair_fn, name):
    def fn(input, dim=None, keepdim=False):  # noqa: A002
        if dim is None:
            return apply(all_op, input, dims=tuple(range(input.ndim)), keepdim=False)
        if isinstance(dim, registry.Tensor):
            return pair_fn(input, dim)
        if isinstance(dim, float):  # (a number is no Tensor other: torch's parser error)
            from .arg_errors import invalid_combination

            raise invalid_combination(name, (input, dim), {}, _MAX_MIN_SIGNATURES)
        d = wrap_dim(dim, input.ndim)
        _nonempty_dims(name, input, (d,))
        values, indices = apply(dim_op, input, dim=d, keepdim=keepdim)
        return ReturnTypes[name](values, indices)
    fn.__name__ = name
    fn.__doc__ = (f"{name}(input) over all elements, {name}(input, dim) -> (values, indices), "
                  f"or {name}(input, other) elementwise.")
    return fn


@public("argmax", method=True)
def argmax(input, dim=None, keepdim: bool = False):  # noqa: A002
    if dim is None:
        if input.numel() == 0:
            raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() "
                             "== 0.")
        flat = apply(ARGMAX, input.reshape(-1), dim=0, keepdim=False)
        return flat.reshape((1,) * input.ndim) if keepdim else flat
    d = wrap_dim(dim, input.ndim)
    _nonempty_dims("argmax", input, (d,))
    return apply(ARGMAX, input, dim=d, keepdim=keepdim)


@public("argmin", method=True)
def argmin(input, dim=None, keepdim: bool = False):  # noqa: A002
    if dim is None:
        if input.numel() == 0:
            raise IndexError("argmin(): Expected reduction dim to be specified for input.numel() "
                             "== 0.")
        flat = apply(ARGMIN, input.reshape(-1), dim=0, keepdim=False)
        return flat.reshape((1,) * input.ndim) if keepdim else flat
    d = wrap_dim(dim, input.ndim)
    _nonempty_dims("argmin", input, (d,))
    return apply(ARGMIN, input, dim=d, keepdim=keepdim)


def _named_pair(name):
    from .return_types import return_type

    return return_type(name, ["values", "indices"])


ReturnTypes = {"max": _named_pair("max"), "min": _named_pair("min")}


def _maximum(a, b):
    from .elementwise import MAXIMUM

    return apply(MAXIMUM, a, b)


def _minimum(a, b):
    from .elementwise import MINIMUM

    return apply(MINIMUM, a, b)


max = _max_min(MAX_ALL, MAX_DIM, _maximum, "max")  # noqa: A001
public("max", method=True)(max)
min = _max_min(MIN_ALL, MIN_DIM, _minimum, "min")  # noqa: A001
public("min", method=True)(min)


# ---------------------------------------------------------------- forward-mode (JVP) rules
