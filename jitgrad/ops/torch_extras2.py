"""More torch ops that real scripts use, each with torch's node: unbind (``UnbindBackward0``),
diagonal (``DiagonalBackward0``, a view), diag_embed (``DiagEmbedBackward0``), diag, var_mean
(``VarMeanBackward0``), std_mean (``StdMeanBackward0``), nansum (``NansumBackward0``), nanmean
(composed, as torch composes it), ``Tensor.unfold`` (``UnfoldBackward0``, a view) and
index_put / ``index_put_`` (``IndexPutBackward0``) (cdist: ``distances``).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ._shape import numel, reduced_shape, reduction_dims, wrap_dim
from .dtype_rules import refuse_dtypes
from .composite import (_correction, _np_var, _std_vjp, _var_decompose, _var_jvp, _var_meta,
                        _var_vjp, _warn_no_dof)
from .index_keys import _normalize_key
from .indexing import INDEX_PUT
from .movement import stack
from .reduce import _mean_dtype, expand_reduced
from .registry import (LINEAR, MOVEMENT, MULTI_OUTPUT_VIEW, OPAQUE, apply,
                       defop)
from .selection import where
from .surface import public
from .memory_formats import row_major

_strided = np.lib.stride_tricks.as_strided


# ---------------------------------------------------------------- unbind


def _unbind_meta(x, dim):
    shape = tuple(x.shape)
    rest = shape[:dim] + shape[dim + 1:]
    return (rest,) * shape[dim], (x.dtype,) * shape[dim]


UNBIND = defop(
    "unbind", lambda x, dim: tuple(x[(slice(None),) * dim + (i, Ellipsis)]
                                   for i in range(x.shape[dim])),
    kind=MOVEMENT, meta=_unbind_meta, n_outputs=0, view=MULTI_OUTPUT_VIEW, jvp=LINEAR,
    vjp=lambda grads, ans, x, dim: (stack(list(grads), dim),),
    saved_names={"dim": ("param", "dim")})


@public("unbind", method=True)
def unbind(input, dim: int = 0) -> tuple:  # noqa: A002
    """The slices of ``input`` along ``dim`` (views), as a tuple."""
    return apply(UNBIND, input, dim=wrap_dim(dim, input.ndim))


# ---------------------------------------------------------------- diagonal family


def _diag_length(n1: int, n2: int, offset: int) -> int:
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


def _diagonal_impl(x, offset, dim1, dim2):
    """A writable view of the diagonal (NumPy's own is read-only): the other dims, then it."""
    n = _diag_length(x.shape[dim1], x.shape[dim2], offset)
    start = [0] * x.ndim
    start[dim1 if offset < 0 else dim2] = abs(offset) if n else 0
    corner = x[tuple(slice(s, None) for s in start)]
    rest = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    return _strided(corner, tuple(x.shape[d] for d in rest) + (n,),
                    tuple(x.strides[d] for d in rest) + (x.strides[dim1] + x.strides[dim2],))


def _diagonal_meta(x, offset, dim1, dim2):
    shape = tuple(x.shape)
    rest = tuple(n for d, n in enumerate(shape) if d not in (dim1, dim2))
    return rest + (_diag_length(shape[dim1], shape[dim2], offset),), x.dtype


def _embed_impl(g, shape, offset, dim1, dim2):
    out = np.zeros(shape, dtype=g.dtype)
    _diagonal_impl(out, offset, dim1, dim2)[...] = g
    return out


def _embed_meta(g, shape, offset, dim1, dim2):
    return shape, g.dtype


def _diag_mask(n1: int, n2: int, offset: int, device):
    """The (n1, n2) bool constant that is True on diagonal ``offset``."""
    from .creation import tensor

    return tensor(np.eye(n1, n2, offset, dtype=bool), device=device)


def _embed_pieces(g, shape, offset, dim1, dim2):
    """``diag_embed``/``diagonal_backward`` in primitives: the diagonal values padded to a
    full row (or column), broadcast over the other dim and kept on the diagonal only."""
    from .creation import zeros
    from .movement import cat

    n1, n2, n = shape[dim1], shape[dim2], g.shape[-1]
    full = n1 if offset >= 0 else n2
    if full > n:
        g = cat([g, zeros(tuple(g.shape[:-1]) + (full - n,), dtype=g.dtype, device=g.device)],
                -1)
    spread = g.unsqueeze(-1) if offset >= 0 else g.unsqueeze(-2)
    zero = False if g.dtype == dtypes.bool else 0  # (a 0 would promote bool to int64)
    out = where(_diag_mask(n1, n2, offset, g.device), spread, zero)
    return out.movedim((-2, -1), (dim1, dim2)) if (dim1, dim2) != (len(shape) - 2,
                                                                    len(shape) - 1) else out


def _diagonal_pieces(x, offset, dim1, dim2):
    """The diagonal as a copy, in primitives: the off-diagonal entries zeroed and summed away
    (adding zeros is exact), then the valid stretch."""
    n1, n2 = x.shape[dim1], x.shape[dim2]
    n = _diag_length(n1, n2, offset)
    y = x.movedim((dim1, dim2), (-2, -1))
    zero = False if x.dtype == dtypes.bool else 0
    kept = where(_diag_mask(n1, n2, offset, x.device), y, zero)
    line = kept.sum(-1) if offset >= 0 else kept.sum(-2)
    if line.dtype != x.dtype:  # (bool sums to int64: one True at most, so the cast is exact)
        line = line.to(x.dtype)
    return line.narrow(-1, 0, n)


_DIAG_SAVED = {"offset": ("param", "offset"), "dim1": ("param", "dim1"),
               "dim2": ("param", "dim2")}

DIAGONAL = defop(
    "diagonal", _diagonal_impl, kind=OPAQUE, view=True, meta=_diagonal_meta, jvp=LINEAR,
    vjp=(lambda g, ans, x, offset, dim1, dim2: apply(
        DIAGONAL_BACKWARD, g, shape=tuple(x.shape), offset=offset, dim1=dim1, dim2=dim2),),
    saved_names=dict(_DIAG_SAVED, input_sizes=("sizes", 0)))
# torch.diag of a matrix: the diagonal as a copy
DIAGONAL_COPY = defop(
    "diagonal_copy", lambda x, offset, dim1, dim2: _diagonal_impl(x, offset, dim1, dim2).copy(),
    kind=OPAQUE, meta=_diagonal_meta, jvp=LINEAR, node_name="DiagonalBackward0_copy",
    decompose=_diagonal_pieces,
    vjp=(lambda g, ans, x, offset, dim1, dim2: apply(
        DIAGONAL_BACKWARD, g, shape=tuple(x.shape), offset=offset, dim1=dim1, dim2=dim2),))
DIAGONAL_BACKWARD = defop(
    "diagonal_backward", _embed_impl, kind=OPAQUE, meta=_embed_meta, jvp=LINEAR,
    decompose=_embed_pieces,
    vjp=(lambda g, ans, x, shape, offset, dim1, dim2: apply(
        DIAGONAL, g, offset=offset, dim1=dim1, dim2=dim2),))
DIAG_EMBED = defop(
    "diag_embed", _embed_impl, kind=OPAQUE, meta=_embed_meta, jvp=LINEAR,
    decompose=_embed_pieces,
    vjp=(lambda g, ans, x, shape, offset, dim1, dim2: apply(
        DIAGONAL_COPY, g, offset=offset, dim1=dim1, dim2=dim2),), saved_names=_DIAG_SAVED)


def _diag_dims(ndim: int, dim1: int, dim2: int) -> tuple[int, int]:
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


@public("diagonal", method=True)
def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """The diagonal ``offset`` of the 2-D slices over ``dim1`` and ``dim2`` (a view), as the
    last dim."""
    d1, d2 = _diag_dims(input.ndim, dim1, dim2)
    return apply(DIAGONAL, input, offset=int(offset), dim1=d1, dim2=d2)


@public("diag_embed", method=True)
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """A tensor whose diagonal ``offset`` over ``dim1``/``dim2`` is the last dim of ``input``
    and zeros elsewhere."""
    ndim = input.ndim + 1
    d1, d2 = _diag_dims(ndim, dim1, dim2)
    n = input.shape[-1] + abs(int(offset))
    rest = list(input.shape[:-1])
    shape = []
    for d in range(ndim):
        shape.append(n if d in (d1, d2) else rest.pop(0))
    return apply(DIAG_EMBED, input, shape=tuple(shape), offset=int(offset), dim1=d1, dim2=d2)


@public("diag", method=True)
def diag(input, diagonal: int = 0):  # noqa: A002
    """A square matrix with ``input`` (1-D) on diagonal ``diagonal``, or the diagonal of a
    matrix (a copy)."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return apply(DIAGONAL_COPY, input, offset=int(diagonal), dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


# ---------------------------------------------------------------- var_mean / std_mean


def _moments_meta(name):
    def meta(x, dims, correction, keepdim):
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            raise RuntimeError(f"{name} only support floating point and complex dtypes")
        shape, dt = _var_meta(x, dims, correction, keepdim)
        return (shape, shape), (dt, x.dtype)
    return meta


def _var_mean_vjp(grads, ans, x, dims, correction, keepdim):
    gv, gm = grads
    shape = tuple(x.shape)
    mean_part = expand_reduced(gm, shape, dims, keepdim) / numel(tuple(shape[d] for d in dims))
    return (_var_vjp(gv, None, x, dims, correction, keepdim) + mean_part,)


def _std_mean_vjp(grads, ans, x, dims, correction, keepdim):
    gs, gm = grads
    shape = tuple(x.shape)
    mean_part = expand_reduced(gm, shape, dims, keepdim) / numel(tuple(shape[d] for d in dims))
    return (_std_vjp(gs, ans[0], x, dims, correction, keepdim) + mean_part,)


def _moments_impl(root):
    def impl(x, dims, correction, keepdim):
        v = _np_var(x, dims, correction, keepdim)
        if x.size:
            mean = np.mean(x, axis=dims, keepdims=keepdim)
        else:  # (NumPy warns "Mean of empty slice"; torch gives nan silently)
            mean = np.full_like(np.sum(x, axis=dims, keepdims=keepdim), np.nan)
        return (np.sqrt(v) if root else v), mean
    return impl


_MOMENTS_SAVED = {"dim": ("param", "dims"), "correction": ("param", "correction"),
                  "keepdim": ("param", "keepdim"), "self": ("input", 0)}
def _moments_decompose(root):
    def pieces(x, dims, correction, keepdim):
        v = _var_decompose(x, dims, correction, keepdim)
        return (v.sqrt() if root else v), x.mean(dims, keepdim=keepdim)
    return pieces


def _moments_jvp(root):
    def jvp(tangents, ans, x, dims, correction, keepdim):
        tv = _var_jvp(tangents, ans[0], x, dims, correction, keepdim)
        tm = tangents[0].mean(dims, keepdim=keepdim)
        return (tv / (2 * ans[0]) if root else tv), tm
    return jvp


VAR_MEAN = defop("var_mean", row_major(_moments_impl(False)), kind=OPAQUE,
                 meta=_moments_meta("var_mean"), n_outputs=2, save=(0,), vjp=_var_mean_vjp,
                 saved_names=_MOMENTS_SAVED,
                 decompose=_moments_decompose(False), jvp=_moments_jvp(False))
STD_MEAN = defop("std_mean", row_major(_moments_impl(True)), kind=OPAQUE,
                 meta=_moments_meta("std_mean"), n_outputs=2, save=(0,), save_output=True,
                 vjp=_std_mean_vjp,
                 saved_names=_MOMENTS_SAVED, decompose=_moments_decompose(True),
                 jvp=_moments_jvp(True))


def _moments(op):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
        if isinstance(dim, bool):  # var_mean(input, unbiased)
            dim, unbiased = None, dim
        dims, correction = reduction_dims(dim, input.ndim), _correction(unbiased, correction)
        _warn_no_dof(op.name, input, dims, correction)
        return apply(op, input, dims=dims, correction=correction, keepdim=keepdim)
    return fn


var_mean = public("var_mean")(_moments(VAR_MEAN))
std_mean = public("std_mean")(_moments(STD_MEAN))
var_mean.__name__, std_mean.__name__ = "var_mean", "std_mean"
var_mean.__doc__ = "``(var(input, dim), mean(input, dim))`` as one op (``correction`` 1)."
std_mean.__doc__ = "``(std(input, dim), mean(input, dim))`` as one op (``correction`` 1)."


# ---------------------------------------------------------------- nansum / nanmean


def _nansum_meta(x, dims, keepdim, dtype):
    if dtype is not None:
        out = dtype
    elif x.dtype.is_floating_point or x.dtype.is_complex:
        out = x.dtype
    else:
        out = dtypes.int64
    return reduced_shape(tuple(x.shape), dims, keepdim), out


NANSUM = defop(
    "nansum", lambda x, dims, keepdim, dtype: np.asarray(np.nansum(
        x, axis=dims, keepdims=keepdim), dtype=(dtype.np if dtype is not None else
                                                np.int64 if x.dtype.kind in "biu" else x.dtype)),
    kind=OPAQUE, meta=_nansum_meta, save=(0,),
    decompose=lambda x, dims, keepdim, dtype: where(x.isnan(), 0, x).sum(
        dims, keepdim=keepdim, dtype=dtypes.int64 if dtype is None and not (
            x.dtype.is_floating_point or x.dtype.is_complex) else dtype),
    vjp=(lambda g, ans, x, dims, keepdim, dtype: expand_reduced(  # (torch's: inf * 0 is nan)
        g, tuple(x.shape), dims, keepdim) * x.isnan().logical_not(),),
    jvp=lambda ts, ans, x, dims, keepdim, dtype: where(x.isnan(), 0.0, ts[0]).sum(
        dims, keepdim=keepdim),
    saved_names={"dim": ("param", "dims"), "keepdim": ("param", "keepdim"),
                 "self": ("input", 0)})


# (on the input, before a cast to ``dtype``)
_NANSUM_CHECK = refuse_dtypes(complex=(RuntimeError,
                                       "nansum on CPU does not support complex inputs"))


@public("nansum", method=True)
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The sum over ``dim`` with NaNs counted as zero."""
    _NANSUM_CHECK((input,))
    x = input
    if dtype is not None and dtype is not input.dtype:
        if input.dtype.is_floating_point:  # (NaNs count as zero before the cast, as torch)
            if dtype.is_complex:
                raise NotImplementedError(f"\"nansum_cpu\" not implemented for "
                                          f"'{dtype._scalar_name}'")
            x = where(input.isnan(), 0, input)
        x = x.to(dtype)
    return apply(NANSUM, x, dims=reduction_dims(dim, x.ndim), keepdim=keepdim, dtype=dtype)


@public("nanmean", method=True)
def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The mean over ``dim`` of the non-NaN elements (``nansum`` over their count)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {input.dtype._scalar_name}")
    if dtype is not None:  # (before the complex refusal, as torch)
        _mean_dtype(input.dtype, dtype, "nanmean")
    _NANSUM_CHECK((input,))
    count = input.isnan().logical_not().sum(dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


# ---------------------------------------------------------------- Tensor.unfold


def _unfold_impl(x, dimension, size, step):
    shape, strides = list(x.shape), list(x.strides)
    if x.ndim == 0:
        return _strided(x, (size,), (0,))
    shape[dimension] = (shape[dimension] - size) // step + 1
    strides[dimension] *= step
    return _strided(x, tuple(shape) + (size,), tuple(strides) + (x.strides[dimension],))


def _unfold_meta(x, dimension, size, step):
    shape = list(x.shape)
    if not shape:
        return (size,), x.dtype
    shape[dimension] = (shape[dimension] - size) // step + 1
    return tuple(shape) + (size,), x.dtype


def _unfold_backward_impl(g, shape, dimension, size, step):
    out = np.zeros(shape, dtype=g.dtype)
    if not shape:
        return np.asarray(g.sum(), dtype=g.dtype)
    windows = g.shape[dimension]
    moved = np.moveaxis(out, dimension, -1)
    gm = np.moveaxis(g, dimension, -2)  # (..., windows, size)
    for j in range(size):
        moved[..., j:j + step * (windows - 1) + 1:step] += gm[..., j]
    return out


UNFOLD_BACKWARD = defop(
    "unfold_backward", _unfold_backward_impl, kind=OPAQUE, jvp=LINEAR,
    meta=lambda g, shape, dimension, size, step: (shape, g.dtype),
    vjp=(lambda g, ans, x, shape, dimension, size, step: apply(
        UNFOLD, g, dimension=dimension, size=size, step=step),))
UNFOLD = defop(
    "unfold", _unfold_impl, kind=OPAQUE, view=True, meta=_unfold_meta, jvp=LINEAR,
    vjp=(lambda g, ans, x, dimension, size, step: apply(
        UNFOLD_BACKWARD, g, shape=tuple(x.shape), dimension=dimension, size=size,
        step=step),),
    saved_names={"dimension": ("param", "dimension"), "size": ("param", "size"),
                 "step": ("param", "step"), "self_sym_sizes": ("sizes", 0)})


@public(method="unfold")
def unfold(self, dimension: int, size: int, step: int):
    """``Tensor.unfold``: the windows of ``size`` elements every ``step`` along ``dimension``
    (a view), as a new last dim."""
    d = wrap_dim(dimension, max(self.ndim, 1))
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply(UNFOLD, self, dimension=d, size=int(size), step=int(step))


# ---------------------------------------------------------------- index_put


def _check_values(input, values) -> None:  # noqa: A002
    from .registry import Tensor

    if not isinstance(values, Tensor):
        raise TypeError("index_put(): argument 'values' (position 3) must be Tensor, not "
                        f"{type(values).__name__}")
    if values.dtype is not input.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{input.dtype._scalar_name} for the destination and {values.dtype._scalar_name} "
            f"for the source.")


@public("index_put", method=True)
def index_put(input, indices, values, accumulate: bool = False):  # noqa: A002
    """``input`` with ``input[indices] = values`` (or ``+=`` with ``accumulate``), out of
    place; ``indices`` is a tuple of index (or mask) tensors."""
    _check_values(input, values)
    spec, tensors = _normalize_key(input, tuple(indices))
    return apply(INDEX_PUT, input, values, *tensors, spec=spec, accumulate=bool(accumulate))


@public(method="index_put_")
def index_put_(self, indices, values, accumulate: bool = False):
    """In-place ``index_put``."""
    from .inplace import inplace

    _check_values(self, values)
    return inplace(self, lambda s, v: index_put(s, indices, v, accumulate), values)
