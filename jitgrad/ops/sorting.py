"""Sorting along a dim: sort, argsort, topk, msort.

``sort`` and ``topk`` have two outputs (values, indices); their VJP scatters the values'
cotangent back to the positions the indices name, recomputed from the saved input by the
non-differentiable ``argsort``/``argtopk`` ops exactly as the forward computed them. NaN sorts
as the largest value, as in torch; ``stable=False`` (the default) orders ties as torch's CPU
introsort does (``stl_order.py``). Among tied values ``topk`` returns the
indices torch's CPU kernel does (libstdc++'s unstable selection, in ``topk_select``), and so does
an unsorted result: the gradient goes where torch's goes.
"""

from __future__ import annotations


import numpy as np

from .. import dtypes
from ._shape import axis_alias, wrap_dim
from .dtype_rules import refuse_dtypes
from .memory_formats import laid_out_like
from .registry import OPAQUE, apply, defop
from .return_types import return_type
from .surface import public
from .stl_order import SORT_THRESHOLD, torch_sort_indices, torch_topk_indices


def _named_pair(name: str):
    return return_type(name, ["values", "indices"])


SortResult = _named_pair("sort")
TopkResult = _named_pair("topk")


def _stable_argsort(x, dim, descending):
    if not descending:
        return np.argsort(x, axis=dim, kind="stable").astype(np.int64)
    # stable descending with NaN first: a stable ascending sort of the reversed array, reversed
    n = x.shape[dim]
    rev = np.flip(x, axis=dim)
    idx = np.flip(np.argsort(rev, axis=dim, kind="stable"), axis=dim)
    return (n - 1 - idx).astype(np.int64)


def _argsort_impl(x, dim, descending, stable=True):
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    idx = _stable_argsort(x, dim, descending)
    if stable or (x.ndim == 1 and x.dtype.kind in "iu" and not descending and x.size >= 32768):
        return idx  # (torch's stable sort, or its radix sort of long 1-D integer input)
    rows = np.moveaxis(x, dim, -1)
    n = rows.shape[-1]
    if n <= SORT_THRESHOLD or x.size == 0:  # (libstdc++'s insertion sort of 16 is stable)
        return idx
    flat = np.moveaxis(idx, dim, -1).reshape(-1, n)
    order = torch_sort_indices(rows.reshape(-1, n), flat, descending)
    return idx if order is flat else np.moveaxis(order.reshape(rows.shape), -1, dim)


def _take(x, idx, dim):
    return x.copy() if x.ndim == 0 else np.take_along_axis(x, idx, axis=dim)


def _sort_impl(x, dim, descending, stable=True):
    idx = _argsort_impl(x, dim, descending, stable)  # (both laid out as torch's: like the input)
    return laid_out_like(_take(x, idx, dim), x), laid_out_like(idx, x)


def _argtopk_impl(x, k, dim, largest, sorted=True):  # noqa: A002
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    n = x.shape[dim]
    head = _stable_head(x, min(k + 1, n), dim, largest)
    if k == 0 or x.size == 0:
        return np.take(head, np.arange(k), axis=dim)
    rows = np.moveaxis(x, dim, -1)
    batch = rows.shape[:-1]
    first = np.moveaxis(head, dim, -1).reshape(-1, head.shape[dim])
    idx = torch_topk_indices(rows.reshape(-1, n), first, k, largest, sorted)
    return np.moveaxis(idx.reshape(batch + (k,)), -1, dim)


def _stable_head(x, m, dim, largest):
    """The first ``m`` indices of the stable sort along ``dim`` (descending for ``largest``)."""
    if 0 < m <= x.shape[dim] // 8 and x.shape[dim] >= 256 \
            and x.dtype.kind in "iuf" and not (x.dtype.kind == "f" and np.isnan(x).any()):
        return _argtopk_few(x, m, dim, largest)
    return np.take(_argsort_impl(x, dim, largest), np.arange(m), axis=dim)


def _argtopk_few(x, k, dim, largest):
    """The first ``k`` indices of the stable sort, without sorting all of ``x`` (a sampler's
    top-k over a vocabulary): the k-th value from a partition bounds the candidates; they are
    gathered in index order (a stable sort of a boolean mask, which NumPy does in linear time)
    and only they are sorted, stably, so ties keep the full sort's order."""
    n = x.shape[dim]
    kth = np.take(np.partition(x, n - k if largest else k - 1, axis=dim),
                  [n - k if largest else k - 1], axis=dim)
    outside = (x < kth) if largest else (x > kth)
    m = int((n - np.sum(outside, axis=dim)).max())  # the most candidates of a row (ties)
    cand = np.take(np.argsort(outside, axis=dim, kind="stable"), np.arange(m), axis=dim)
    order = _argsort_impl(np.take_along_axis(x, cand, axis=dim), dim, largest)
    first = np.take(order, np.arange(k), axis=dim)
    return np.take_along_axis(cand, first, axis=dim).astype(np.int64)


def _topk_impl(x, k, dim, largest, sorted=True):  # noqa: A002
    idx = _argtopk_impl(x, k, dim, largest, sorted)
    return _take(x, idx, dim), idx


def _check_sortable(x) -> None:
    if x.dtype.is_complex:
        raise RuntimeError(" Sort does not support complex dtypes on CPU")  # (torch's space)


def _sort_meta(x, dim, descending, stable=True):
    _check_sortable(x)
    shape = tuple(x.shape)
    return (shape, shape), (x.dtype, dtypes.int64)


def _topk_shape(x, k, dim) -> tuple:
    shape = list(x.shape)
    if shape:
        shape[dim] = k
    return tuple(shape)


def _topk_meta(x, k, dim, largest, sorted=True):  # noqa: A002
    _check_sortable(x)
    shape = _topk_shape(x, k, dim)
    return (shape, shape), (x.dtype, dtypes.int64)


def _scatter_back(g, x, dim, idx):
    from .creation import zeros
    from .indexing import scatter_add

    if x.ndim == 0:
        return g
    return scatter_add(zeros(tuple(x.shape), dtype=g.dtype, device=g.device), dim, idx, g)


def _sort_vjp(grads, ans, x, dim, descending, stable=True):
    idx = apply(ARGSORT, x, dim=dim, descending=descending, stable=stable)
    return (_scatter_back(grads[0], x, dim, idx),)


def _topk_vjp(grads, ans, x, k, dim, largest, sorted=True):  # noqa: A002
    idx = apply(ARGTOPK, x, k=k, dim=dim, largest=largest, sorted=sorted)
    return (_scatter_back(grads[0], x, dim, idx),)


def _gather_jvp(tangents, ans, x, dim, **params):
    t = tangents[0]
    return (t if x.ndim == 0 else t.gather(dim, ans[1])), None


def _argsort_meta(x, dim, descending, stable=True):
    _check_sortable(x)
    return tuple(x.shape), dtypes.int64


ARGSORT = defop("argsort", _argsort_impl, kind=OPAQUE, meta=_argsort_meta)
ARGTOPK = defop("argtopk", _argtopk_impl, kind=OPAQUE,
                meta=lambda x, k, dim, largest, sorted=True: (_topk_shape(x, k, dim), dtypes.int64))
SORT = defop("sort", _sort_impl, kind=OPAQUE, meta=_sort_meta, n_outputs=2, save=(0,),
             vjp=_sort_vjp, jvp=_gather_jvp,
             saved_names={"dim": ("param", "dim"), "indices": ("output", 1),
                          "self_sym_sizes": ("sizes", 0)},
                          saved_indices=("argsort", ("dim", "descending", "stable")))
TOPK = defop("topk", _topk_impl, kind=OPAQUE, meta=_topk_meta, n_outputs=2, save=(0,),
             vjp=_topk_vjp, jvp=_gather_jvp,
             check_operands=refuse_dtypes(
                 complex=(RuntimeError, " topk does not support complex dtypes on CPU"),
                 bool=(RuntimeError, "topk does not support bool dtypes on CPU")),
             saved_names={"dim": ("param", "dim"), "indices": ("output", 1),
                          "self_sym_sizes": ("sizes", 0)},
                          saved_indices=("argtopk", ("k", "dim", "largest", "sorted")))


@public("sort", method=True)
@axis_alias
def sort(input, dim: int = -1, descending: bool = False, stable: bool = False):  # noqa: A002
    """Sorts along ``dim``: ``(values, indices)``. With ``stable``, ties keep their order;
    without, they come in the order torch's CPU sort (libstdc++'s introsort) leaves them."""
    d = wrap_dim(dim, input.ndim)
    values, indices = apply(SORT, input, dim=d, descending=bool(descending), stable=bool(stable))
    return SortResult(values, indices)


@public("argsort", method=True)
@axis_alias
def argsort(input, dim: int = -1, descending: bool = False,  # noqa: A002
            stable: bool = False):
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    return apply(ARGSORT, input, dim=wrap_dim(dim, input.ndim), descending=bool(descending),
                 stable=bool(stable))


@public("msort", method=True)
def msort(input):  # noqa: A002
    """Sorts along the first dim (values only)."""
    return sort(input, dim=0).values


@public("topk", method=True)
@axis_alias
def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``."""
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = apply(TOPK, input, k=int(k), dim=d, largest=bool(largest),
                            sorted=bool(sorted))
    return TopkResult(values, indices)
