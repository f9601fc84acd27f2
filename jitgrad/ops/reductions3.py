"""Indexed writes and statistics torch scripts call: ``scatter_reduce`` (sum, prod, mean, amax,
amin; ``include_self``), ``index_copy`` and ``index_fill`` (defops with torch's node names and
backward formulas), and the compositions ``quantile``/``nanquantile`` (the five
interpolations), ``dist``, ``renorm``, ``cov`` and ``corrcoef`` (made of other ops, as torch
composes most of them: autograd, ``jit`` and ``vmap`` see their pieces)."""

from __future__ import annotations

import warnings

import numpy as np

from .indexing import first_out_of_range, scatter_operands
from .. import dtypes
from . import registry
from ._shape import wrap_dim
from .autocast_policy import FP32, autocast_policy
from .registry import LINEAR, OPAQUE, apply, defop
from .selection import _gather_to, _is_traced, where
from .surface import public

_REDUCES = ("sum", "prod", "mean", "amax", "amin")
# torch 2.13 also takes "max" and "min" (undocumented), reducing as amax and amin
_ALIASES = {"max": "amax", "min": "amin"}


# ---------------------------------------------------------------- scatter_reduce
def _identity(reduce: str, dt: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dt) if dt.kind in "iu" else None
    if info is None:
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_impl(x, index, src, dim, reduce, include_self):
    out = x.copy()
    if index.size == 0:
        return out
    target, pos, s = scatter_operands(out, index, src, dim)
    if not include_self:
        target[pos] = _identity(reduce, x.dtype)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    ufunc.at(target, pos, s)
    if reduce == "mean":
        count = np.ones(x.shape, np.int64) if include_self else np.zeros(x.shape, np.int64)
        np.add.at(count.reshape(target.shape), pos, 1)
        count = np.maximum(count, 1)
        out = out / count if x.dtype.kind in "fc" else np.floor_divide(out, count)
    return out.astype(x.dtype)


def _scatter_reduce_vjp(g, ans, x, index, src, dim, reduce, include_self):
    from .creation import ones, zeros

    if reduce == "sum":
        gs, gsrc = g, _gather_to(g, dim, index, src)
    elif reduce == "mean":
        n = (ones if include_self else zeros)(tuple(g.shape), dtype=g.dtype, device=g.device)
        n = n.scatter_add(dim, index, ones(tuple(index.shape), dtype=g.dtype, device=g.device))
        n = where(n == 0, 1.0, n)
        gs, gsrc = g / n, _gather_to(g / n, dim, index, src)
    elif reduce == "prod":  # torch's formula, exact where self or src hold (single) zeros
        masked_self = where(x == 0, 1.0, x)
        masked_self_result = apply(SCATTER_REDUCE, masked_self, index, src, dim=dim,
                                   reduce=reduce, include_self=include_self)
        gs = g * masked_self_result / masked_self
        src_zero = src == 0
        n_zeros = zeros(tuple(x.shape), dtype=g.dtype, device=g.device).scatter_add(
            dim, index, src_zero.to(g.dtype)).gather(dim, index)
        single = src_zero & (n_zeros == 1)
        masked_src = where(single, 1.0, src)
        masked_src_result = apply(SCATTER_REDUCE, x, index, masked_src, dim=dim, reduce=reduce,
                                  include_self=include_self)
        gsrc = where(single, (g * masked_src_result).gather(dim, index),
                     (g * ans).gather(dim, index) / where(src_zero, 1.0, src))
    else:  # amax, amin: shared evenly among the elements equal to the result
        value = ans.gather(dim, index)
        self_is = (x == ans).to(g.dtype)
        src_is = (src == value).to(g.dtype)
        share = g / self_is.scatter_add(dim, index, src_is)
        gs, gsrc = self_is * share, src_is * share.gather(dim, index)
    if not include_self:
        gs = gs.scatter(dim, index, 0)
    return gs, None, gsrc


def _scatter_reduce_meta(x, index, src, dim, reduce, include_self):
    if x.dtype != src.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    return tuple(x.shape), x.dtype


def _scatter_reduce_jvp(tangents, ans, x, index, src, dim, reduce, include_self):
    from .creation import zeros

    tx, _, ts = tangents
    tx = tx if tx is not None else zeros(tuple(x.shape), dtype=ans.dtype, device=ans.device)
    ts = ts if ts is not None else zeros(tuple(src.shape), dtype=ans.dtype, device=ans.device)
    if reduce in ("sum", "mean"):  # linear in (self, src)
        return apply(SCATTER_REDUCE, tx, index, ts, dim=dim, reduce=reduce,
                     include_self=include_self)
    if reduce == "prod":  # d log(result) = sum of d log(factor)
        own = tx / x * ans
        if not include_self:
            own = own.scatter(dim, index, 0)
        return own + ans * zeros(tuple(x.shape), dtype=ans.dtype, device=ans.device).scatter_add(
            dim, index, _cut(ts / src, index))
    value = ans.gather(dim, index)  # amax, amin: the mean tangent of the elements equal to it
    self_is = (x == ans).to(ans.dtype)
    if not include_self:
        self_is = self_is.scatter(dim, index, 0)
    src_is = (_cut(src, index) == value).to(ans.dtype)
    n = self_is.scatter_add(dim, index, src_is)
    return (self_is * tx).scatter_add(dim, index, src_is * _cut(ts, index)) / n


def _cut(src, index):
    """``src``'s leading part that ``index`` covers."""
    if tuple(src.shape) == tuple(index.shape):
        return src
    for d, n in enumerate(index.shape):
        src = src.narrow(d, 0, n)
    return src


SCATTER_REDUCE = defop("scatter_reduce", _scatter_reduce_impl, kind=OPAQUE, save=(0, 1, 2),
                       save_output=True, meta=_scatter_reduce_meta, vjp=_scatter_reduce_vjp,
                       jvp=_scatter_reduce_jvp)


@public("scatter_reduce", method=True, inplace=True)
def scatter_reduce(input, dim: int, index, src, reduce: str, *,  # noqa: A002
                   include_self: bool = True):
    """Reduces ``src`` into a copy of ``input`` at ``index`` along ``dim`` with ``reduce``
    (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``); with ``include_self=False``
    the written positions start from the reduction's identity instead of ``input``."""
    from .selection import _check_scatter

    reduce = _ALIASES.get(reduce, reduce)
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _check_scatter("scatter_reduce", input, dim, index, src)
    return apply(SCATTER_REDUCE, input, index, src, dim=d, reduce=reduce,
                 include_self=bool(include_self))


# ---------------------------------------------------------------- index_copy, index_fill
def _index_key(ndim: int, dim: int, index):
    return (slice(None),) * dim + (index,)


def _index_copy_impl(x, index, source, dim):
    out = x.copy()
    size = x.shape[dim] if x.ndim else 1
    first = first_out_of_range(index, size)
    if first is not None:
        raise IndexError(f"index_copy_(): index {first} is out of bounds for dimension {dim} "
                         f"with size {size}")
    if x.ndim == 0:
        return source.reshape(()).astype(x.dtype)
    out[_index_key(x.ndim, dim, index.reshape(-1))] = source if source.ndim else source.reshape(1)
    return out


def _index_fill_impl(x, index, dim, value):
    out = x.copy()
    if x.ndim == 0:
        return np.full((), value, x.dtype) if index.size else out
    out[_index_key(x.ndim, dim, index)] = value
    return out


def _index_fill_tensor_impl(x, index, value, dim):
    return _index_fill_impl(x, index, dim, value.reshape(()))


def _fill0(g, index, dim):
    return apply(INDEX_FILL, g, index, dim=dim, value=0)


def _selected(g, index, dim):
    return g.reshape(1) if g.ndim == 0 else g.index_select(dim, index)


def _index_meta(name: str):
    def meta(x, index, *rest, dim, **params):
        if index.dtype is not dtypes.int64:
            raise RuntimeError(f"{name}(): Expected a long tensor for index, but got "
                               f"{str(index.dtype).split('.')[-1].capitalize()}")
        if index.ndim > 1:
            raise IndexError(f"{name}(): Index is supposed to be a vector")
        return tuple(x.shape), x.dtype
    return meta


INDEX_COPY = defop(
    "index_copy", _index_copy_impl, kind=OPAQUE, save=(1,), meta=_index_meta("index_copy"),
    jvp=LINEAR,
    vjp=(lambda g, ans, x, index, source, dim: _fill0(g, index, dim), None,
         lambda g, ans, x, index, source, dim: _selected(g, index, dim).reshape(
             tuple(source.shape))))
INDEX_FILL = defop(
    "index_fill", _index_fill_impl, kind=OPAQUE, save=(1,), meta=_index_meta("index_fill"),
    jvp=lambda ts, ans, x, index, dim, value: None if ts[0] is None else _fill0(ts[0], index, dim),
    vjp=(lambda g, ans, x, index, dim, value: _fill0(g, index, dim), None))
INDEX_FILL_TENSOR = defop(
    "index_fill_tensor", _index_fill_tensor_impl, kind=OPAQUE, save=(1,),
    node_name="IndexFillBackward1", meta=_index_meta("index_fill"), jvp=LINEAR,
    vjp=(lambda g, ans, x, index, value, dim: _fill0(g, index, dim), None,
         lambda g, ans, x, index, value, dim: _selected(g, index, dim).sum()))


@public("index_copy", method=True, inplace=True)
def index_copy(input, dim: int, index, source):  # noqa: A002
    """A copy of ``input`` with its slices ``index`` along ``dim`` replaced by ``source``'s."""
    d = wrap_dim(dim, input.ndim)
    _check_index_copy(input, d, index, source)
    return apply(INDEX_COPY, input, index, source, dim=d)


def _check_index_copy(input, d: int, index, source) -> None:  # noqa: A002
    """torch's checks, in its order (a source of another slice shape would be broadcast)."""
    if index.ndim >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index.numel()
    if source.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if source.ndim != input.ndim and source.ndim and input.ndim:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{index.dtype._scalar_name}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {input.dtype._scalar_name} and (source) "
                           f"{source.dtype._scalar_name}")
    kept_input = [n for k, n in enumerate(input.shape) if k != d]
    kept_source = [n for k, n in enumerate(source.shape) if k != d]
    if kept_input != kept_source:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, kept_input))} "
                           f"at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, kept_source))} at dimension 0.")
    if source.ndim and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")


@public("index_fill", method=True, inplace=True)
def index_fill(input, dim: int, index, value):  # noqa: A002
    """A copy of ``input`` with its slices ``index`` along ``dim`` set to ``value`` (a number or
    a 0-d tensor)."""
    d = wrap_dim(dim, input.ndim)
    if isinstance(value, registry.Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    if index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    size = input.shape[d] if input.ndim else 1
    if index.is_cpu and not _is_traced(index):  # (cuda: checked on the device)
        first = first_out_of_range(index._data, size)
        if first is not None:
            raise IndexError(f"index {first} is out of bounds for dimension {d} with size {size}")
    if isinstance(value, registry.Tensor):
        return apply(INDEX_FILL_TENSOR, input, index, value.to(input.dtype), dim=d)
    return apply(INDEX_FILL, input, index, dim=d, value=value)


# ---------------------------------------------------------------- quantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, input, q, dim, keepdim, interpolation, ignore_nan):  # noqa: A002
    from .creation import tensor

    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    scalar_q = not isinstance(q, registry.Tensor)
    if scalar_q:
        if not 0 <= float(q) <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {float(q)}")
        q = tensor(float(q), dtype=input.dtype, device=input.device)
    elif q.dtype != input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if not scalar_q and q._trace is None:  # (a traced q's values are not known)
        qv = q.detach().numpy().reshape(-1)
        if ((qv < 0) | (qv > 1)).any():
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        x = input.reshape(-1)
        out_shape = [1] * input.ndim if keepdim else []
    else:
        d = wrap_dim(dim, input.ndim)
        x = input.movedim(d, -1) if input.ndim else input.reshape(1)
        out_shape = list(input.shape)
        if out_shape:
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
    if x.shape[-1] > 2 ** 24:  # (torch computes the ranks in float32)
        raise RuntimeError(f"{name}() input tensor is too large")
    srt = x.sort(-1).values  # NaN last
    n = srt.shape[-1]
    nan = srt.isnan()
    qs = q.reshape(-1, *([1] * (srt.ndim - 1)), 1)  # (Q, ..., 1); differentiable, as torch
    if ignore_nan:
        valid = (~nan).sum(-1, keepdim=True).to(input.dtype)
        ranks = qs * (valid - 1)
        ranks = where(ranks < 0, float(n - 1), ranks)  # an all-NaN row: its last value, NaN
    else:
        ranks = (qs * (n - 1)).expand((qs.shape[0],) + tuple(srt.shape[:-1]) + (1,))
        ranks = where(nan.sum(-1, keepdim=True) > 0, float(n - 1), ranks)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().long()
    above = ranks.ceil().long()
    big = srt.unsqueeze(0).expand(tuple(ranks.shape[:-1]) + (n,))
    v_below = big.gather(-1, below)
    if interpolation in ("lower", "higher", "nearest"):
        out = v_below
    else:
        v_above = big.gather(-1, above)
        w = (ranks - below.to(input.dtype)) if interpolation == "linear" else 0.5
        out = v_below.lerp(v_above, w)  # (torch's: its rounding, and inf - inf gives NaN)
    out = out.squeeze(-1)  # (Q, ...rest)
    out = out.reshape([out.shape[0]] + out_shape)
    return out.squeeze(0) if scalar_q or q.ndim == 0 else out


@public("quantile", method=True)
@autocast_policy(FP32)
def quantile(input, q, dim=None, keepdim: bool = False, *,  # noqa: A002
             interpolation: str = "linear"):
    """The ``q``-quantiles (a number or a 1-D tensor: then a leading dim of quantiles) of all
    elements or along ``dim``; a row holding NaN gives NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@public("nanquantile", method=True)
@autocast_policy(FP32)
def nanquantile(input, q, dim=None, keepdim: bool = False, *,  # noqa: A002
                interpolation: str = "linear"):
    """``quantile`` ignoring NaNs (NaN where a row holds nothing else)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ---------------------------------------------------------------- dist, renorm, cov, corrcoef
@public("dist", method=True)
def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast)."""
    from .norms import vector_norm

    return vector_norm(input - other, float(p))


@public("renorm", method=True, inplace=True)
def renorm(input, p, dim: int, maxnorm):  # noqa: A002
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as torch)."""
    from .norms import vector_norm

    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    d = wrap_dim(dim, input.ndim)
    dims = tuple(i for i in range(input.ndim) if i != d)
    norm = vector_norm(input, float(p), dims, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


@public("cov", method=True)
def cov(input, *, correction: int = 1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in ``input``'s rows (observations in columns),
    with frequency and observation weights; a 0-d result for a single variable."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(dtypes.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {wt.ndim} dimensions")
        if wt.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n_obs}")
        w = wt if w is None else w * wt
    if w is None:
        avg = x.mean(1)
        w_sum = float(n_obs)
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    low = norm_factor <= 0 if not isinstance(norm_factor, registry.Tensor) else \
        bool((norm_factor <= 0).item())
    if low:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, registry.Tensor) else 0.0
    xm = x - avg.unsqueeze(1)
    right = (xm if w is None else xm * w).t().conj()
    return (xm.mm(right) / norm_factor).squeeze()


@public("corrcoef", method=True)
def corrcoef(input):  # noqa: A002
    """Pearson's correlation coefficients of the variables in ``input``'s rows (clipped to
    [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c if c.dtype.is_complex else c.clamp(-1, 1)
