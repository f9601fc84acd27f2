"""The sparse ops: a few primitives with VJP rules, the rest composed from them and dense ops.

Primitives (``OpDef``s run by ``run`` and recorded by the autograd graph like any op; not in
``OPS``, which holds the dense ops):

* ``VALUES`` (a coalesced tensor's values, dense) and ``FROM_VALUES`` (values on a given
  pattern, sparse): each one's VJP is the other (``GATHER``, the values of a sparse cotangent
  at a pattern, when the cotangent is sparse).
* ``COALESCE``, ``TRANSPOSE``, ``SCALE``, ``CAST``, ``CLONE``, ``ADD`` (sparse + sparse),
  ``ADD_DENSE`` (dense + sparse), ``TO_DENSE``, ``TO_SPARSE``, ``CONVERT`` (between layouts) and
  ``MM`` (sparse @ dense): linear maps of the tensor, whose cotangents are tensors (sparse or
  dense) with the meaning of the dense tensor. A sparse operand's gradient is sparse on its
  coalesced pattern (the dense gradient masked to it), as torch's ``sparse.mm``.

Everything else (zero-preserving pointwise ops, ``sparse * dense``, sums, softmax) works on
the values: ``FROM_VALUES(f(VALUES(S.coalesce())), pattern)``, so the dense ops' own rules
differentiate it (twice, too). ``_dispatch`` maps the dense ops called on sparse tensors
(``S @ D``, ``S * 2``, ``S.t()``, ...) to these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..ops import registry
from ..ops.registry import OPAQUE, OpDef, Tensor
from ..tensor import _make
from ._storage import COO, CSR, _Sparse, coo_from_dense, csr_from_coo
from ._tensor import STORAGES, SparseTensor, as_sparse, backend, make_sparse


def run(op: OpDef, *args: Any, **params: Any) -> Any:
    """Runs sparse primitive ``op`` on ``args`` (tensors' data handed to ``op.impl``) and
    records it for autograd."""
    if registry.state.traces:
        raise NotImplementedError("jitgrad.jit cannot trace sparse tensors: call the sparse "
                                  "ops outside the compiled function")
    dt = op.meta(*args, **params)[1]
    out = op.impl(*[a._data if isinstance(a, Tensor) else a for a in args], **params)
    if isinstance(out, _Sparse):
        if out.values.dtype != dt.np:
            out = out.with_values(out.values.astype(dt.np))
        result = make_sparse(out, dt)
    else:
        result = _make(np.asarray(out, dtype=dt.np), dt)
    return registry._finish(op, args, params, result, (result,))


def _op(name: str, impl: Any, meta: Any, vjp: Any, save: tuple = (), node: str | None = None,
        jvp: Any = None):
    """A sparse primitive (``vjp``: the rule of its first input, or a tuple of one per input;
    ``jvp``: its forward-mode rule, if it has one)."""
    return OpDef(name, impl, kind=OPAQUE, meta=meta, vjp=vjp if type(vjp) is tuple else (vjp,),
                 jvp=jvp, save=save, node_name=node)


def _is_sparse(t: Any) -> bool:
    """A sparse tensor, or a plain ``Tensor`` on a sparse storage (an engine-wrapped gradient;
    other subclasses, tracers among them, are never sparse)."""
    return isinstance(t, SparseTensor) or type(t) is Tensor and type(t._data) in STORAGES


def _pattern(t: Any) -> _Sparse:
    """The storage whose indices a gradient w.r.t. sparse ``t`` lives on: the coalesced ones."""
    d = t._data
    return d.coalesce() if type(d) is COO else d


def _index(a: np.ndarray) -> Tensor:
    return _make(np.ascontiguousarray(a, dtype=np.int64), dtypes.int64)


def _at(g: Any, pattern: _Sparse) -> Any:
    """The values of cotangent ``g`` (sparse or dense) at ``pattern``'s indices (dense)."""
    g = as_sparse(g)
    if type(g) is SparseTensor:
        out = run(GATHER, g, like=pattern)
    else:
        idx = pattern.coo_indices()
        if idx.shape[0] == 1:
            return g.index_select(0, _index(idx[0]))
        out = g[tuple(_index(i) for i in idx)]
    if type(pattern) is CSR and pattern.blocksize is not None:  # (the values' blocks)
        out = out.reshape(pattern.values.shape)
    return out


def from_values(values: Any, pattern: _Sparse) -> SparseTensor:
    """A sparse tensor with ``pattern``'s indices and ``values`` (differentiable)."""
    return run(FROM_VALUES, values, like=pattern)


def values_of(s: Any) -> Tensor:
    """The values of a coalesced (or CSR) sparse tensor (differentiable)."""
    return run(VALUES, s)


def mask(g: Any, pattern: _Sparse) -> SparseTensor:
    """Cotangent ``g`` restricted to ``pattern`` (a sparse tensor with its indices)."""
    return from_values(_at(g, pattern), pattern)


def _dense(g: Any) -> Any:
    g = as_sparse(g)
    return to_dense(g) if type(g) is SparseTensor else g


def _meta_like(s: Any, **_: Any) -> tuple:
    return tuple(s.shape), s.dtype


# ---------------------------------------------------------------- primitives

VALUES = _op("values", lambda s: s.values,
             lambda s: ((s._data.nnz,) + s._data.values.shape[1:], s.dtype),
             lambda g, ans, s: from_values(g, s._data), save=(0,), node="ValuesBackward0")
FROM_VALUES = _op("sparse_coo_tensor", lambda v, like: like.with_values(v),
                  lambda v, like: (like.shape, v.dtype),
                  lambda g, ans, v, like: _at(g, like),
                  node="SparseCooTensorWithDimsAndTensorsBackward0")
GATHER = _op("sparse_mask_values", lambda s, like: s.gather(like),
             lambda s, like: ((like.coo_indices().shape[1],) + s._data.values.shape[1:],
                              s.dtype),
             lambda g, ans, s, like: from_values(g, like))
COALESCE = _op("coalesce", lambda s: s.coalesce(), _meta_like, lambda g, ans, s: g)
TO_DENSE = _op("to_dense", lambda s: s.to_dense(), _meta_like,
               lambda g, ans, s: mask(g, _pattern(s)), save=(0,))


def _to_sparse_impl(d: np.ndarray, sparse_dim: int, layout: str, blocksize: Any) -> _Sparse:
    if layout == "coo":
        return coo_from_dense(d, sparse_dim)
    return csr_from_coo(coo_from_dense(d, 2), layout, blocksize)


def _convert_impl(s: _Sparse, layout: str, blocksize: Any, src: tuple) -> _Sparse:
    return _coo_of(s) if layout == "coo" else csr_from_coo(s.to_coo(), layout, blocksize)


_SUFFIX = {"coo": "", "csr": "_csr", "csc": "_csc", "bsr": "_bsr", "bsc": "_bsc"}
# one primitive per target layout, for torch's node names (ToSparseCscBackward0, ...)
TO_SPARSE = {k: _op("to_sparse" + x, _to_sparse_impl, _meta_like,
                    lambda g, ans, d, sparse_dim, layout, blocksize: _dense(g),
                    node=f"ToSparse{x[1:].capitalize()}Backward0") for k, x in _SUFFIX.items()}
CONVERT = {k: _op("to_sparse" + x, _convert_impl, _meta_like,
                  lambda g, ans, s, layout, blocksize, src: _convert(g, *src),
                  node=f"ToSparse{x[1:].capitalize()}Backward{0 if x else 1}")
           for k, x in _SUFFIX.items()}
CLONE = _op("clone", lambda s: s.copy(), _meta_like, lambda g, ans, s: g)
CAST = _op("to_copy", lambda s, dtype: s.with_values(s.values.astype(dtype.np)),
           lambda s, dtype: (tuple(s.shape), dtype),
           lambda g, ans, s, dtype: as_sparse(g).to(s.dtype), node="ToCopyBackward0")


def _coo_of(s: _Sparse) -> COO:
    coo = s.to_coo()
    if type(s) is CSR and not coo.coalesced:  # (sorted columns in each row: coalesced)
        keys = coo.keys()
        coo = COO(coo.indices, coo.values, coo.shape, bool(np.all(keys[1:] > keys[:-1])))
    return coo


def _layout_of(d: _Sparse) -> tuple:
    return (d.layout, d.blocksize) if type(d) is CSR else ("coo", None)


def _convert(g: Any, layout: str, blocksize: tuple | None) -> Any:
    """Sparse cotangent ``g`` in ``layout`` (with ``blocksize``)."""
    g = as_sparse(g)
    if type(g) is not SparseTensor or _layout_of(g._data)[0] == layout:
        return g
    return convert(g, layout, blocksize)


def convert(s: SparseTensor, layout: str, blocksize: tuple | None = None) -> SparseTensor:
    """Sparse ``s`` in ``layout`` ("coo", "csr", "csc", "bsr", "bsc"; differentiable)."""
    if layout != "coo" and type(s._data) is COO:
        s = coalesce(s)
    return run(CONVERT[layout], s, layout=layout, blocksize=blocksize, src=_layout_of(s._data))


def _scale_meta(s: Any, c: Any, div: bool) -> tuple:
    dt = dtypes.result_type(s, c)
    if div and not (dt.is_floating_point or dt.is_complex):
        dt = dtypes.get_default_dtype()
    return tuple(s.shape), dt


SCALE = _op("mul", lambda s, c, div: s.with_values(s.values / c if div else s.values * c),
            _scale_meta, lambda g, ans, s, c, div: as_sparse(g) / c if div else as_sparse(g) * c,
            node="MulBackward0")


def _transpose_impl(s: COO, dim0: int, dim1: int) -> COO:
    return s.transpose(dim0, dim1)


def _transpose_meta(s: Any, dim0: int, dim1: int) -> tuple:
    shape = list(s.shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return tuple(shape), s.dtype


TRANSPOSE = _op("transpose", _transpose_impl, _transpose_meta,
                lambda g, ans, s, dim0, dim1: as_sparse(g).transpose(dim0, dim1))
T = _op("t", _transpose_impl, _transpose_meta,  # (S.t(): torch's node is TBackward0)
        lambda g, ans, s, dim0, dim1: as_sparse(g).transpose(dim0, dim1))


def _check_same_size(a: Any, b: Any) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a.shape)} != {list(b.shape)}")


def _add_meta(a: Any, b: Any, alpha: Any) -> tuple:
    _check_same_size(a, b)
    return tuple(a.shape), dtypes.result_type(a, b)


ADD = _op("add", lambda a, b, alpha: a.to_coo().add(b.to_coo(), alpha), _add_meta,
          (lambda g, ans, a, b, alpha: g, lambda g, ans, a, b, alpha: as_sparse(g) * alpha),
          node="AddBackward0")


def _add_dense_impl(d: np.ndarray, s: _Sparse, alpha: Any) -> np.ndarray:
    coo = s.to_coo()
    dt = np.result_type(d, coo.values)
    out = d.astype(dt, copy=True)
    if coo.nnz:
        np.add.at(out, tuple(coo.indices), coo.values * alpha if alpha != 1 else coo.values)
    return out


ADD_DENSE = _op("add", _add_dense_impl, _add_meta,
                (lambda g, ans, d, s, alpha: g,
                 lambda g, ans, d, s, alpha: mask(g, _pattern(s)) * alpha),
                save=(1,), node="AddBackward0")


def _mm_meta(s: Any, d: Any) -> tuple:
    if d.ndim != 2 or s.ndim != 2:
        raise RuntimeError(f"sparse.mm: expected 2-D matrices, got {s.ndim}-D and {d.ndim}-D")
    if d.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got "
                           f"{d.shape[0]}")
    if s.dtype is not d.dtype:
        raise RuntimeError(f"expected scalar type {s.dtype._scalar_name} but found "
                           f"{d.dtype._scalar_name}")
    return (s.shape[0], d.shape[1]), s.dtype


def _mm_grad_sparse(g: Any, ans: Any, s: Any, d: Any) -> SparseTensor:
    """d(S @ D)/dS on S's pattern: sum_f g[i, f] * D[j, f] at each (i, j)."""
    pattern = _pattern(s)
    rows, cols = pattern.coo_indices()
    vals = (g.index_select(0, _index(rows)) * d.index_select(0, _index(cols))).sum(-1)
    return from_values(vals, pattern)


MM = _op("mm", lambda s, d: s.mm(d), _mm_meta,
         (_mm_grad_sparse, lambda g, ans, s, d: spmm(transpose(s, 0, 1), g)), save=(0, 1),
         node="SparseAddmmBackward0")


# ---------------------------------------------------------------- composed ops


def coalesce(s: SparseTensor) -> SparseTensor:
    """``s`` with unique, sorted indices (itself when it has them)."""
    if type(s._data) is not COO:
        raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got "
                           f"{'SparseCsr' if type(s._data) is CSR else 'Strided'}")
    return s if s._data.coalesced else run(COALESCE, s)


def _canonical(s: SparseTensor) -> SparseTensor:
    """A COO tensor coalesced, a CSR one as it is: one entry per index, ready for values."""
    return coalesce(s) if type(s._data) is COO else s


def values(s: SparseTensor) -> Tensor:
    """``S.values()``: the values of a coalesced tensor (differentiable)."""
    if type(s._data) is COO and not s._data.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return values_of(s)


def map_values(s: SparseTensor, f: Any) -> SparseTensor:
    """``f`` (zero-preserving) applied to each stored value."""
    c = _canonical(s)
    return from_values(f(values_of(c)), c._data)


def to_dense(s: Any, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """The dense tensor (its gradient: sparse, on ``s``'s pattern)."""
    if not _is_sparse(s):
        return s if dtype is None else s.to(dtype)
    out = run(TO_DENSE, s)
    return out if dtype is None else out.to(dtype)


def to_sparse(t: Any, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: Any = None) -> SparseTensor:
    """COO (or ``layout``) of ``t``; ``sparse_dim``: how many leading dims are sparse."""
    from ._tensor import sparse_csr

    if layout is sparse_csr:
        return to_sparse_csr(t)
    if _is_sparse(t):
        if sparse_dim is not None and sparse_dim != t.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim="
                               f"{sparse_dim} is not implemented")
        return t if type(t._data) is COO else convert(t, "coo")
    nd = t.ndim if sparse_dim is None else int(sparse_dim)
    if dense_dim is not None:
        nd = t.ndim - int(dense_dim)
    if not 0 <= nd <= t.ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{t.ndim}] "
                           f"range, but {nd} is given")
    if nd == 0 and t.ndim:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                           "self.dim()>0")
    return run(TO_SPARSE["coo"], t, sparse_dim=nd, layout="coo", blocksize=None)


def to_sparse_csr(t: Any, dense_dim: Any = None) -> SparseTensor:
    """The compressed-rows layout of a 2-d tensor."""
    if t.ndim != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-D tensor, got {t.ndim}-D")
    if _is_sparse(t):
        return t if type(t._data) is CSR and t._data.layout == "csr" else convert(t, "csr")
    return run(TO_SPARSE["csr"], t, sparse_dim=2, layout="csr", blocksize=None)


def transpose(s: SparseTensor, dim0: int, dim1: int, t: bool = False) -> SparseTensor:
    """Sparse dims ``dim0`` and ``dim1`` swapped (COO; a CSR matrix goes through COO)."""
    n = s.ndim
    d0, d1 = dim0 % n, dim1 % n
    if type(s._data) is CSR:
        s = convert(s, "coo")
    if max(d0, d1) >= s._data.sparse_dim:
        raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got "
                           f"sparse_dim: {s._data.sparse_dim}, d0: {d0}, d1: {d1}")
    return s if d0 == d1 else run(T if t else TRANSPOSE, s, dim0=d0, dim1=d1)


def spmm(s: Any, d: Any) -> Tensor:
    """``s @ d`` for a sparse 2-d ``s`` and a dense matrix (or sparse ``d``: then dense ``s``)."""
    if not _is_sparse(s):  # dense @ sparse = (sparse^T @ dense^T)^T
        return spmm(transpose(d, 0, 1), s.t()).t()
    if _is_sparse(d):  # sparse @ sparse: sparse
        return _spspmm(s, d)
    if type(s._data) is COO and s._data.dense_dim:
        raise RuntimeError(f"addmm: matrices expected, got {s._data.sparse_dim}D tensor")
    if type(s._data) is CSR and s._data.layout == "bsc":  # (torch has no CPU kernel)
        raise RuntimeError("addmm: computation on CPU is not implemented for Strided + "
                           "SparseBsc @ Strided")
    return run(MM, s, d)


def _coo(s: SparseTensor) -> SparseTensor:
    c = _canonical(s)
    return convert(c, "coo") if type(c._data) is CSR else c


def _spspmm(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """Sparse @ sparse: each entry (i, k) of ``a`` times each entry (k, j) of ``b``'s row k,
    summed per (i, j); the products are of the values, so gradients reach both."""
    _mm_meta(a, b)
    a, b = _coo(a), _coo(b)
    (ra, ca), (rb, cb) = a._data.indices, b._data.indices
    counts = np.bincount(rb, minlength=b.shape[0])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    reps = counts[ca]
    ia = np.repeat(np.arange(ca.size), reps)
    ib = starts[ca[ia]] + np.arange(ia.size) - np.repeat(np.cumsum(reps) - reps, reps)
    pattern = COO(np.stack([ra[ia], cb[ib]]).reshape(2, -1), np.empty(ia.size, a._data.dtype),
                  (a.shape[0], b.shape[1]))
    vals = values_of(a).index_select(0, _index(ia)) * values_of(b).index_select(0, _index(ib))
    return coalesce(from_values(vals, pattern))


def add(a: Any, b: Any, alpha: Any = 1) -> Any:
    """``a + alpha * b``: sparse + sparse is sparse, dense + sparse dense."""
    if not _is_sparse(a):
        if not isinstance(a, Tensor):
            a = _make(np.asarray(a), dtypes.result_type(a, a))
        _check_same_size(a, b)
        return run(ADD_DENSE, a, b, alpha=alpha)
    if not _is_sparse(b):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    return _csr_if_both(run(ADD, a, b, alpha=alpha), a, b)


def _csr_if_both(out: SparseTensor, a: Any, b: Any) -> SparseTensor:
    """Two CSR operands give a CSR result, as torch's (the sum is computed in COO)."""
    if _layout_of(a._data)[0] == "csr" and _layout_of(b._data)[0] == "csr":
        return convert(out, "csr")
    return out


def mul(a: Any, b: Any) -> SparseTensor:
    """Sparse times a number, a dense tensor (on the sparse pattern) or a sparse tensor."""
    if not _is_sparse(a):
        a, b = b, a
    if not isinstance(b, Tensor) or b.ndim == 0 and not _is_sparse(b):
        return run(SCALE, a, b if not isinstance(b, Tensor) else b.item(), div=False)
    if not _is_sparse(b):
        if tuple(b.shape) != tuple(a.shape):
            raise RuntimeError(f"mul: a dense operand must have the sparse tensor's size "
                               f"{list(a.shape)}, got {list(b.shape)}")
        c = _canonical(a)
        v = values_of(c)
        w = _at(b, c._data)
        return from_values(v * w.reshape(tuple(w.shape) + (1,) * (v.ndim - w.ndim)), c._data)
    _check_same_size(a, b)
    return _csr_if_both(_mul_sparse(_canonical(a).to_sparse(), _canonical(b).to_sparse()), a, b)


def _mul_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """Elementwise product of two coalesced COO tensors: their common indices."""
    a, b = coalesce(a), coalesce(b)
    ka, kb = a._data.keys(), b._data.keys()
    common, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    pattern = COO(a._data.indices[:, ia], a._data.values[ia], a.shape, True)
    va = values_of(a).index_select(0, _index(ia))
    vb = values_of(b).index_select(0, _index(ib))
    return from_values(va * vb, pattern)


def div(a: SparseTensor, b: Any) -> SparseTensor:
    if _is_sparse(b) or isinstance(b, Tensor) and b.ndim:
        return NotImplemented
    return run(SCALE, a, b if not isinstance(b, Tensor) else b.item(), div=True)


def sparse_sum(s: SparseTensor, dim: Any = None, dtype: Any = None,
               keepdim: bool = False) -> Tensor:
    """``torch.sparse.sum``: all entries (a dense 0-d tensor), or over ``dim`` (sparse while
    a sparse dim is left or ``keepdim`` keeps them, else dense)."""
    c = _coo(s)
    v = values_of(c)
    if dtype is not None:
        v = v.to(dtype)
    if dim is None:
        return v.sum()
    dims = sorted({d % s.ndim for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = c._data.sparse_dim
    dense_red = tuple(d - sd + 1 for d in dims if d >= sd)
    if dense_red:
        v = v.sum(dense_red, keepdim=keepdim)
    keep = [d for d in range(sd) if d not in dims]
    if len(dims) == s.ndim:  # everything reduced: dense
        out = v.sum(0)
        return out.reshape((1,) * s.ndim) if keepdim else out
    if keepdim:  # the reduced sparse dims stay, of size 1, index 0
        indices = c._data.indices.copy()
        indices[[d for d in range(sd) if d in dims]] = 0
        shape = tuple(1 if d in dims else s.shape[d] for d in range(sd)) + tuple(v.shape[1:])
    elif not keep:
        return v.sum(0)
    else:
        indices = c._data.indices[keep]
        shape = tuple(s.shape[d] for d in keep) + tuple(v.shape[1:])
    pattern = COO(indices, c._data.values, shape, coalesced=len(keep) == sd)
    return coalesce(from_values(v, pattern))


def _softmax(s: SparseTensor, dim: int, dtype: Any, log: bool) -> SparseTensor:
    if type(s._data) is not COO:
        raise NotImplementedError(f"Could not run 'aten::_sparse_{'log_' if log else ''}softmax'"
                                  f" with arguments from the '{backend(s)}' backend.")
    c = coalesce(s if dtype is None else s.to(dtype))
    d = c._data
    dim = dim % s.ndim
    v = values_of(c)
    if dim >= d.sparse_dim:  # a dense dim: the values' own softmax
        f = v.log_softmax if log else v.softmax
        return from_values(f(dim - d.sparse_dim + 1), d)
    others = [i for i in range(d.sparse_dim) if i != dim]
    if others and d.nnz:
        keys = np.ravel_multi_index(tuple(d.indices[others]), tuple(s.shape[i] for i in others))
        _, group = np.unique(keys, return_inverse=True)
    else:
        group = np.zeros(d.nnz, dtype=np.int64)
    n = int(group.max()) + 1 if d.nnz else 0
    m = np.full((n,) + d.values.shape[1:], -np.inf, dtype=d.values.dtype)
    np.maximum.at(m, group, d.values)
    gi = _index(group)
    shifted = v - _make(m[group], c.dtype)  # (a constant per group: no gradient)
    e = shifted.exp()
    sums = _make(np.zeros(m.shape, dtype=m.dtype), c.dtype).index_add(0, gi, e)
    out = shifted - sums.log().index_select(0, gi) if log else e / sums.index_select(0, gi)
    return from_values(out, d)


def softmax(input: Any, dim: int, dtype: Any = None) -> SparseTensor:  # noqa: A002
    """``torch.sparse.softmax``: softmax over ``dim`` of the specified entries (unspecified
    ones count as -inf, so they stay unspecified)."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: Any, dim: int, dtype: Any = None) -> SparseTensor:  # noqa: A002
    """``torch.sparse.log_softmax`` (see ``softmax``)."""
    return _softmax(input, dim, dtype, log=True)


def empty_like_pattern(d: _Sparse) -> _Sparse:
    """A storage of ``d``'s size and layout with no entries."""
    if type(d) is CSR:
        return CSR(np.zeros(d.shape[0] + 1, np.int64), d.col[:0], d.values[:0], d.shape)
    return COO(d.indices[:, :0], d.values[:0], d.shape, True)


def select(s: SparseTensor, dim: int, index: int) -> Any:
    """``s[..., index, ...]`` along ``dim``: sparse while a sparse dim is left."""
    c = _canonical(s)
    if type(c._data) is CSR:
        c = convert(c, "coo")
    d = c._data
    dim = dim % s.ndim
    v = values_of(c)
    sd = d.sparse_dim
    if dim >= sd:  # a dense dim: each value's slice
        shape = d.shape[:dim] + d.shape[dim + 1:]
        return from_values(v.select(dim - sd + 1, index), COO(d.indices, d.values, shape, True))
    hit = np.flatnonzero(d.indices[dim] == index)
    v = v.index_select(0, _index(hit))
    if sd == 1:  # no sparse dim left: the dense slice
        return v.sum(0)
    rest = [i for i in range(sd) if i != dim]
    shape = d.shape[:dim] + d.shape[dim + 1:]
    return from_values(v, COO(d.indices[rest][:, hit], d.values[hit], shape, True))


def index_select(s: SparseTensor, dim: int, index: Any) -> SparseTensor:
    """``s.index_select(dim, index)`` of a COO tensor as torch's: along a sparse dim, for each
    position of ``index`` the entries at that index (in their stored order), renumbered; along
    a dense dim, each value's slices. The result is not coalesced. (Differentiable for a
    coalesced ``s``; torch has no backward at all.)"""
    if type(s._data) is CSR:
        s = convert(s, "coo")
    d = s._data
    idx = np.asarray(index._data, dtype=np.int64).reshape(-1)
    sd = d.sparse_dim
    v = values_of(s) if d.coalesced else _make(d.values, s.dtype)
    if dim >= sd:  # a dense dim: each value's slices
        shape = d.shape[:dim] + (idx.size,) + d.shape[dim + 1:]
        v = v.index_select(dim - sd + 1, _index(idx))
        return from_values(v, COO(d.indices, v._data, shape))
    hits = [np.flatnonzero(d.indices[dim] == i) for i in idx]
    take = np.concatenate(hits) if hits else np.zeros(0, np.int64)
    new = d.indices[:, take].copy()
    new[dim] = np.repeat(np.arange(idx.size), [h.size for h in hits])
    v = v.index_select(0, _index(take))
    shape = d.shape[:dim] + (idx.size,) + d.shape[dim + 1:]
    return from_values(v, COO(new, v._data, shape))


def cat(tensors: Any, dim: int) -> SparseTensor:
    """COO tensors concatenated along a sparse dim (their entries, indices shifted)."""
    parts = [_canonical(t) for t in tensors]
    parts = [convert(p, "coo") if type(p._data) is CSR else p for p in parts]
    first = parts[0]._data
    if dim >= first.sparse_dim or any(p._data.sparse_dim != first.sparse_dim for p in parts):
        raise NotImplementedError("cat of sparse tensors: only along a sparse dim of tensors "
                                  "with the same sparse dims")
    indices, offset = [], 0
    for p in parts:
        idx = p._data.indices.copy()
        idx[dim] += offset
        offset += p.shape[dim]
        indices.append(idx)
    shape = list(first.shape)
    shape[dim] = offset
    vals = [values_of(p) for p in parts]
    from ..ops.surface24 import fn

    pattern = COO(np.concatenate(indices, axis=1), np.concatenate([p._data.values for p in parts]),
                  tuple(shape), dim == 0)
    return from_values(fn("cat")(vals, 0), pattern)
