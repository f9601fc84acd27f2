"""Reductions and searches torch scripts call: cummax/cummin, aminmax, median and
nanmedian, kthvalue, mode (one ``defop`` each, with torch's node names and backward formulas:
the value-selecting ones scatter the gradient to the selected index), and the
non-differentiable searchsorted, bucketize, bincount, histc and isin. The indexing writes
(scatter_reduce, index_copy, index_fill) and the statistics composed of other ops (quantile,
dist, renorm, cov, corrcoef) are in ``reductions3.py``, logcumsumexp in ``logcumsumexp.py``."""

from __future__ import annotations

import numpy as np

from .dtype_rules import refuse_dtypes
from .. import dtypes
from .._config import warn_once
from . import registry
from ._shape import wrap_dim
from .registry import OPAQUE, apply, defop
from .return_types import return_type
from .selection import where
from .surface import public
from .stl_order import torch_mode
from .memory_formats import row_major


def _named(name: str, fields=("values", "indices")):
    return return_type(name, list(fields))


CummaxResult, CumminResult = _named("cummax"), _named("cummin")
AminmaxResult = _named("aminmax", ("min", "max"))
MedianResult, NanmedianResult = _named("median"), _named("nanmedian")
KthvalueResult, ModeResult = _named("kthvalue"), _named("mode")


def _moved(x: np.ndarray, dim: int) -> np.ndarray:
    return np.moveaxis(x, dim, -1) if x.ndim else x.reshape(1)


def _back(a: np.ndarray, dim: int, ndim: int, keepdim: bool) -> np.ndarray:
    """A result computed along the last axis of ``_moved`` (that axis reduced away) put back:
    the reduced dim kept as size 1 or dropped."""
    if ndim == 0:
        return a.reshape(())
    return np.expand_dims(a, dim) if keepdim else a


def _reduced_shape(x, dim: int, keepdim: bool) -> tuple:
    shape = list(x.shape)
    if not shape:
        return ()
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    return tuple(shape)


def _pair_meta(x, dim, keepdim=False, **params):
    shape = _reduced_shape(x, dim, keepdim)
    return (shape, shape), (x.dtype, dtypes.int64)


def _select_vjp(grads, ans, x, dim, keepdim=False, **params):
    """torch's value_selecting_reduction_backward: the gradient at the selected index."""
    from .creation import zeros

    g, idx = grads[0], ans[1]
    if x.ndim == 0:
        return (g,)
    if not keepdim:
        g, idx = g.unsqueeze(dim), idx.unsqueeze(dim)
    return (zeros(tuple(x.shape), dtype=g.dtype, device=g.device).scatter(dim, idx, g),)


def _select_jvp(tangents, ans, x, dim, keepdim=False, **params):
    """The tangent of a value-selecting reduction: the input's tangent at the index."""
    t, idx = tangents[0], ans[1]
    if t is None or x.ndim == 0:
        return t, None
    if keepdim:
        return t.gather(dim, idx), None
    return t.gather(dim, idx.unsqueeze(dim)).squeeze(dim), None


def _check_dim_size(x, dim: int, name: str) -> None:
    if x.ndim and x.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


# ---------------------------------------------------------------- cummax, cummin
def _cum_extreme(x, dim, greater: bool):
    # torch's cummax_cummin_helper: take x where it is NaN, or (best not NaN and) x >= best
    a = _moved(x, dim).copy()
    idx = np.zeros(a.shape, np.int64)
    cmp = np.greater_equal if greater else np.less_equal
    for i in range(1, a.shape[-1]):
        v, best = a[..., i], a[..., i - 1]
        take = np.isnan(v) | (~np.isnan(best) & cmp(v, best))
        a[..., i] = np.where(take, v, best)
        idx[..., i] = np.where(take, i, idx[..., i - 1])
    if x.ndim == 0:
        return a.reshape(()), idx.reshape(())
    return np.moveaxis(a, -1, dim), np.moveaxis(idx, -1, dim)


def _cum_vjp(grads, ans, x, dim):
    from .creation import zeros

    if x.ndim == 0:
        return (grads[0],)
    return (zeros(tuple(x.shape), dtype=grads[0].dtype, device=grads[0].device).scatter_add(
        dim, ans[1], grads[0]),)


def _cum_meta(x, dim):
    return (tuple(x.shape), tuple(x.shape)), (x.dtype, dtypes.int64)


def _cum_jvp(tangents, ans, x, dim):
    t = tangents[0]
    return (t if t is None or x.ndim == 0 else t.gather(dim, ans[1])), None


CUMMAX = defop("cummax", row_major(lambda x, dim: _cum_extreme(x, dim, True)), kind=OPAQUE,
               n_outputs=2,
               meta=_cum_meta, save=(0,), save_output=True, vjp=_cum_vjp, jvp=_cum_jvp)
CUMMIN = defop("cummin", row_major(lambda x, dim: _cum_extreme(x, dim, False)), kind=OPAQUE,
               n_outputs=2,
               meta=_cum_meta, save=(0,), save_output=True, vjp=_cum_vjp, jvp=_cum_jvp)


@public("cummax", method=True)
def cummax(input, dim: int):  # noqa: A002
    """The running maximum along ``dim`` and the index where each was taken (NaN propagates)."""
    _scalar_dim("cummax", input, dim)
    return CummaxResult(*apply(CUMMAX, input, dim=wrap_dim(dim, input.ndim)))


def _scalar_dim(name: str, input, dim: int) -> None:  # noqa: A002
    if input.ndim == 0 and dim not in (-1, 0):
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")


@public("cummin", method=True)
def cummin(input, dim: int):  # noqa: A002
    """The running minimum along ``dim`` and the index where each was taken (NaN propagates)."""
    _scalar_dim("cummin", input, dim)
    return CumminResult(*apply(CUMMIN, input, dim=wrap_dim(dim, input.ndim)))


# ---------------------------------------------------------------- aminmax
@row_major
def _aminmax_impl(x, dim, keepdim):
    if dim is None:
        lo, hi = np.min(x), np.max(x)
        shape = (1,) * x.ndim if keepdim else ()
        return np.reshape(lo, shape), np.reshape(hi, shape)
    if x.ndim == 0:
        return x.copy(), x.copy()
    return np.min(x, axis=dim, keepdims=keepdim), np.max(x, axis=dim, keepdims=keepdim)


def _aminmax_meta(x, dim, keepdim):
    if (dim is None and 0 in tuple(x.shape)) or (dim is not None and x.ndim and
                                                  x.shape[dim] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    shape = ((1,) * x.ndim if keepdim else ()) if dim is None else _reduced_shape(x, dim, keepdim)
    return (shape, shape), (x.dtype, x.dtype)


def _evenly(g, x, value, dim, keepdim, nan_equal=True):
    """The gradient of a max/min/median: shared evenly among the elements equal to ``value``
    (torch's aminmax counts no NaN as equal: its NaN rows get NaN gradients)."""
    if dim is None:
        value, g = value.reshape(()), g.reshape(())
    elif not keepdim and x.ndim:
        value, g = value.unsqueeze(dim), g.unsqueeze(dim)
    mask = (x == value) | (x.isnan() & value.isnan()) if nan_equal else x == value
    count = mask.sum() if dim is None else mask.sum(dim, keepdim=True)
    return where(mask, g / count, 0.0) if nan_equal else g / count * mask


def _aminmax_vjp(grads, ans, x, dim, keepdim):
    return (_evenly(grads[0], x, ans[0], dim, keepdim, False) +
            _evenly(grads[1], x, ans[1], dim, keepdim, False),)


def _shared_tangent(t, x, value, dim, keepdim, nan_equal=True):
    """The tangent of a max/min/median: the mean of the tangents of the elements equal to it."""
    from .creation import ones

    w = _evenly(ones(tuple(value.shape), dtype=t.dtype, device=t.device), x, value, dim, keepdim,
                nan_equal)
    out = (w * t).sum() if dim is None else (w * t).sum(dim, keepdim=keepdim)
    return out.reshape(tuple(value.shape))


def _aminmax_jvp(tangents, ans, x, dim, keepdim):
    t = tangents[0]
    return (_shared_tangent(t, x, ans[0], dim, keepdim, False),
            _shared_tangent(t, x, ans[1], dim, keepdim, False))


AMINMAX = defop("aminmax", _aminmax_impl, kind=OPAQUE, n_outputs=2, meta=_aminmax_meta,
                save=(0,), save_output=True, vjp=_aminmax_vjp, jvp=_aminmax_jvp,
                check_operands=refuse_dtypes(complex="aminmax_cpu"))


@public("aminmax", method=True)
def aminmax(input, *, dim=None, keepdim: bool = False):  # noqa: A002
    """``(min, max)`` of the tensor (or along ``dim``); NaN propagates."""
    d = None if dim is None else wrap_dim(dim, input.ndim)
    if d is not None and input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return AminmaxResult(*apply(AMINMAX, input, dim=d, keepdim=bool(keepdim)))


# ---------------------------------------------------------------- median, nanmedian, kthvalue
def _kth_along(a: np.ndarray, k: np.ndarray | int, quick_select: bool = False):
    """(values, indices) of the k-th smallest (0-based; one ``k`` per row or for all) along
    the last axis, NaN sorting last. Among tied values the index is the first of the stable
    sort (torch's median), or with ``quick_select`` the one torch's kthvalue picks."""
    order = np.argsort(a, axis=-1, kind="stable")
    k = np.broadcast_to(np.asarray(k, np.int64), a.shape[:-1])[..., None]
    idx = np.take_along_axis(order, k, -1)[..., 0]
    values = np.take_along_axis(a, idx[..., None], -1)[..., 0]
    if not quick_select:
        return values, idx.astype(np.int64)
    same = a == values[..., None]
    if a.dtype.kind in "fc":
        same |= np.isnan(a) & np.isnan(values)[..., None]
    tied = np.flatnonzero(same.sum(-1) > 1)
    if tied.size:  # (torch's quickselect, compiled, only for the rows where it matters)
        from .nn_kernels import kernel

        rows = np.ascontiguousarray(a.reshape(-1, a.shape[-1]))
        ks = np.ascontiguousarray(k.reshape(-1), dtype=np.int64)
        out = idx.reshape(-1).astype(np.int64)
        kernel("quick_select_rows")(rows, ks, tied.astype(np.int64), out)
        idx = out.reshape(idx.shape)
    return values, idx.astype(np.int64)


@row_major
def _median_dim_impl(x, dim, keepdim, ignore_nan):
    a = _moved(x, dim)
    n = a.shape[-1]
    if ignore_nan:
        valid = (~np.isnan(a)).sum(-1) if a.dtype.kind == "f" else np.full(a.shape[:-1], n)
        k = np.where(valid > 0, (valid - 1) // 2, 0)
        # an all-NaN row: torch returns NaN and the index of the first element
        v, i = _kth_along(a, k)
        if a.dtype.kind == "f":
            i = np.where(valid > 0, i, 0)
    else:
        v, i = _kth_along(a, (n - 1) // 2)
        if a.dtype.kind == "f":
            nan = np.isnan(a)
            first_nan = np.argmax(nan, -1)
            has = nan.any(-1)
            v, i = np.where(has, np.nan, v).astype(a.dtype), np.where(has, first_nan, i)
    return _back(v, dim, x.ndim, keepdim), _back(i.astype(np.int64), dim, x.ndim, keepdim)


def _median_all_impl(x, ignore_nan):
    v, _ = _median_dim_impl(x.reshape(-1), 0, False, ignore_nan)
    return np.asarray(v, x.dtype).reshape(())


def _median_all_vjp(g, ans, x, ignore_nan):
    return _evenly(g, x, ans, None, False)


def _median_all_meta(x, ignore_nan):
    return (), x.dtype


# torch's median kernels (over all elements, and along a dim) take no complex or bool
_MEDIAN_ALL = refuse_dtypes(complex="median_cpu", bool="median_cpu")
_MEDIAN_OUT = refuse_dtypes(complex="median_out", bool="median_out")
MEDIAN_ALL = defop("median", lambda x, ignore_nan: _median_all_impl(x, ignore_nan),
                   kind=OPAQUE, meta=_median_all_meta, save=(0,), save_output=True,
                   vjp=(_median_all_vjp,), node_name="MedianBackward0",
                   check_operands=_MEDIAN_ALL,
                   jvp=lambda ts, ans, x, ignore_nan: _shared_tangent(ts[0], x, ans, None, False))
MEDIAN_DIM = defop("median_dim", lambda x, dim, keepdim: _median_dim_impl(x, dim, keepdim, False),
                   kind=OPAQUE, n_outputs=2, meta=_pair_meta, save=(0,), save_output=True,
                   vjp=_select_vjp, jvp=_select_jvp, node_name="MedianBackward1",
                   check_operands=_MEDIAN_OUT)
NANMEDIAN_ALL = defop("nanmedian", lambda x, ignore_nan: _median_all_impl(x, ignore_nan),
                      kind=OPAQUE, meta=_median_all_meta, save=(0,), save_output=True,
                      vjp=(_median_all_vjp,), node_name="NanmedianBackward0",
                      check_operands=_MEDIAN_ALL,
                      jvp=lambda ts, ans, x, ignore_nan: _shared_tangent(ts[0], x, ans, None,
                                                                         False))
NANMEDIAN_DIM = defop(
    "nanmedian_dim", lambda x, dim, keepdim: _median_dim_impl(x, dim, keepdim, True),
    kind=OPAQUE, n_outputs=2, meta=_pair_meta, save=(0,), save_output=True, vjp=_select_vjp,
    jvp=_select_jvp, node_name="NanmedianBackward1", check_operands=_MEDIAN_OUT)


def _median(name, all_op, dim_op, result, input, dim, keepdim):  # noqa: A002
    if dim is None:
        if input.numel() == 0:
            _MEDIAN_ALL((input,))
            from .creation import full

            return full((), float("nan"), dtype=input.dtype, device=input.device)
        return apply(all_op, input, ignore_nan=all_op is NANMEDIAN_ALL)
    d = wrap_dim(dim, input.ndim)
    _check_dim_size(input, d, name)
    return result(*apply(dim_op, input, dim=d, keepdim=bool(keepdim)))


@public("median", method=True)
def median(input, dim=None, keepdim: bool = False):  # noqa: A002
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
    propagates."""
    return _median("median", MEDIAN_ALL, MEDIAN_DIM, MedianResult, input, dim, keepdim)


@public("nanmedian", method=True)
def nanmedian(input, dim=None, keepdim: bool = False):  # noqa: A002
    """The lower median ignoring NaNs (NaN where every value is NaN)."""
    return _median("nanmedian", NANMEDIAN_ALL, NANMEDIAN_DIM, NanmedianResult, input, dim,
                   keepdim)


@row_major
def _kthvalue_impl(x, k, dim, keepdim):
    v, i = _kth_along(_moved(x, dim), k - 1, quick_select=True)
    return _back(v, dim, x.ndim, keepdim), _back(i, dim, x.ndim, keepdim)


KTHVALUE = defop("kthvalue", _kthvalue_impl, kind=OPAQUE, n_outputs=2,
                 meta=lambda x, k, dim, keepdim: _pair_meta(x, dim, keepdim), save=(0,),
                 save_output=True, vjp=_select_vjp, jvp=_select_jvp,
                 check_operands=refuse_dtypes(complex="kthvalue_cpu", bool="kthvalue_cpu"))


@public("kthvalue", method=True)
def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The ``k``-th smallest value along ``dim`` (1-based) and its index."""
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return KthvalueResult(*apply(KTHVALUE, input, k=int(k), dim=d, keepdim=bool(keepdim)))


@row_major
def _mode_impl(x, dim, keepdim):
    a = _moved(x, dim)
    vals, idx = torch_mode(a.reshape(-1, a.shape[-1]))
    shape = a.shape[:-1]
    return (_back(vals.reshape(shape), dim, x.ndim, keepdim),
            _back(idx.reshape(shape), dim, x.ndim, keepdim))


MODE = defop("mode", _mode_impl, kind=OPAQUE, n_outputs=2, meta=_pair_meta, save=(0,),
             save_output=True, vjp=_select_vjp, jvp=_select_jvp,
             check_operands=refuse_dtypes(complex="mode_cpu"))


@public("mode", method=True)
def mode(input, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest among equally frequent ones; each
    NaN counts once) and an index where it occurs: torch's, which its unstable sort chooses."""
    d = wrap_dim(dim, input.ndim)
    _check_dim_size(input, d, "mode")
    return ModeResult(*apply(MODE, input, dim=d, keepdim=bool(keepdim)))


# ---------------------------------------------------------------- searches and counts
def _searchsorted_impl(seq, values, right, out_int32):
    side = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        s2 = seq.reshape(-1, seq.shape[-1])
        v2 = values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(s2, v2)]).reshape(
            values.shape)
    return np.asarray(out, np.int32 if out_int32 else np.int64)


def _searchsorted_meta(seq, values, right, out_int32):
    if seq.ndim != 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError(
            f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
    return tuple(values.shape), dtypes.int32 if out_int32 else dtypes.int64


SEARCHSORTED = defop("searchsorted", _searchsorted_impl, kind=OPAQUE, meta=_searchsorted_meta,
                     check_operands=refuse_dtypes(complex="searchsorted_out_cpu",
                                                  bool="searchsorted_out_cpu"))


@public("searchsorted")
def searchsorted(sorted_sequence, input, *, out_int32: bool = False,  # noqa: A002
                 right: bool = False, side: str | None = None, sorter=None):
    """The indices where ``input``'s values would be inserted into the (innermost, sorted) rows
    of ``sorted_sequence``: the first such place, or the last with ``right`` (``side="right"``)."""
    from .creation import tensor

    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    if not isinstance(input, registry.Tensor):
        input = tensor(input, dtype=sorted_sequence.dtype)  # noqa: A001
    for kind, t in (("input value", input), ("boundary", sorted_sequence)):
        if t._trace is None and not t.is_contiguous():  # (torch's TORCH_WARN_ONCE, each kind)
            warn_once(f"searchsorted {kind}", _NON_CONTIGUOUS.format(kind))
    return apply(SEARCHSORTED, sorted_sequence.detach(), input.detach(), right=bool(right),
                 out_int32=bool(out_int32))


_NON_CONTIGUOUS = ("torch.searchsorted(): {0} tensor is non-contiguous, this will lower the "
                   "performance due to extra data copy when converting non-contiguous tensor to "
                   "contiguous, please use contiguous {0} tensor if possible. This message will "
                   "only appear once per program.")


@public("bucketize")
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):  # noqa: A002
    """The bucket of each value among the sorted 1-D ``boundaries`` (``searchsorted`` of the
    boundaries)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _bincount_impl(x, weights, minlength):
    return np.bincount(x, weights, minlength=minlength).astype(  # (torch: float32 stays)
        np.int64 if weights is None else np.float32 if weights.dtype == np.float32
        else np.float64)


@public("bincount", method=True)
def bincount(input, weights=None, minlength: int = 0):  # noqa: A002
    """The number of occurrences of each value ``0 .. max(input)`` (at least ``minlength``
    bins), or the sums of ``weights`` at them. Its size depends on the values: eager only."""
    from .creation import tensor

    if input.dtype.is_floating_point or input.dtype.is_complex:
        raise NotImplementedError('"bincount_cpu" not implemented for '
                                  f"'{input.dtype._scalar_name}'")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = input.numpy()
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else weights.detach().to(
        dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64).numpy()
    return tensor(_bincount_impl(x.astype(np.int64), w, minlength), device=input.device)


def _histc_impl(x, bins, min, max):  # noqa: A002
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = np.histogram(x[~np.isnan(x)] if x.dtype.kind == "f" else x, bins=bins,
                             range=(lo, hi))
    return counts.astype(x.dtype)


def _histc_meta(x, bins, min, max):  # noqa: A002
    if x.dtype == dtypes.bool:  # (torch fails building the bin edges first)
        raise NotImplementedError('"linspace_cpu" not implemented for \'Bool\'')
    if x.dtype.is_complex and min == max:  # (and the data's range before that)
        raise NotImplementedError(f'"aminmax_cpu" not implemented for \'{x.dtype._scalar_name}\'')
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{x.dtype._scalar_name}\'')
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins))
    if min > max:
        raise RuntimeError("torch.histc(): max must be larger than min")
    return (bins,), x.dtype


HISTC = defop("histc", _histc_impl, kind=OPAQUE, meta=_histc_meta)


@public("histc", method=True)
def histc(input, bins: int = 100, min=0, max=0):  # noqa: A002
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when they are
    equal); values outside are ignored."""
    return apply(HISTC, input.detach(), bins=int(bins), min=min, max=max)


def _isin_impl(elements, test, invert):
    return np.isin(elements, test, invert=invert)


ISIN = defop("isin", _isin_impl, kind=OPAQUE,
             meta=lambda e, t, invert: (tuple(e.shape), dtypes.bool))


@public("isin")
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number)."""
    from .creation import tensor

    tensor_type = registry.Tensor
    if not isinstance(elements, tensor_type) and not isinstance(test_elements, tensor_type):
        raise TypeError("isin() received an invalid combination of arguments")
    ref = elements if isinstance(elements, tensor_type) else test_elements
    e = elements if isinstance(elements, tensor_type) else \
        tensor(elements, dtype=ref.dtype, device=ref.device)
    t = test_elements if isinstance(test_elements, tensor_type) else \
        tensor(test_elements, dtype=ref.dtype, device=ref.device)
    for x in (e, t):  # (torch's sort-based kernel takes no bool or complex values)
        if x.dtype is dtypes.bool or x.dtype.is_complex:
            raise RuntimeError("Unsupported input type encountered for isin(): "
                               f"{x.dtype._scalar_name}")
    return apply(ISIN, e.detach(), t.detach(), invert=bool(invert))
