"""Masks, triangles and scatters: masked_fill, masked_select, masked_scatter, nonzero, tril,
triu, scatter.

``masked_select`` and ``nonzero`` give results whose shape depends on the data: under
``jitgrad.jit`` they raise ``ConcretizationError`` (as boolean-mask indexing does) rather than
guess a shape.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ._shape import wrap_dim
from . import registry
from .indexing import scatter_operands
from .registry import LINEAR, OPAQUE, apply, broadcast_shapes, defop
from .surface import public
from .memory_formats import row_major


def _is_traced(*ts) -> bool:
    return any(isinstance(t, registry.Tensor) and t._trace is not None for t in ts)


def _data_dependent(what: str, *ts) -> None:
    """Raises ConcretizationError unless every ``t`` is an eager tensor with values (a meta
    tensor's stand-in: NotImplementedError, as torch's meta kernels)."""
    for t in ts:
        if isinstance(t, registry.Tensor) and "_meta_standin" in t.__dict__:
            from .._meta import data_dependent_error

            raise data_dependent_error(what)
    if registry.state.traces or any(type(t) is not registry.Tensor and not (
            isinstance(t, registry.Tensor) and t._trace is None) for t in ts):
        from ..errors import data_dependent_shape_error

        raise data_dependent_shape_error(what)


# ---------------------------------------------------------------- masked_fill


def _masked_fill_impl(x, mask, value):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.where(mask, np.asarray(value).astype(x.dtype), np.broadcast_to(x, shape))


def _masked_fill_meta(x, mask, value):
    return broadcast_shapes(tuple(mask.shape), tuple(x.shape)), x.dtype  # (torch's order)


MASKED_FILL = defop(
    "masked_fill", row_major(lambda x, mask, value: _masked_fill_impl(x, mask, value)),
    kind=OPAQUE,
    meta=_masked_fill_meta, save=(1,),
    vjp=(lambda g, ans, x, mask, value: g.masked_fill(mask, 0), None),
    jvp=lambda ts, ans, x, mask, value: ts[0].expand(tuple(ans.shape)).masked_fill(mask, 0)
    if ts[0] is not None else None, saved_names={"mask": ("input", 1)})
MASKED_FILL_TENSOR = defop(
    "masked_fill_tensor", row_major(_masked_fill_impl), kind=OPAQUE,
    node_name="MaskedFillBackward1",
    meta=lambda x, mask, value: _masked_fill_meta(x, mask, None), save=(1,),
    vjp=(lambda g, ans, x, mask, value: g.masked_fill(mask, 0), None,
         lambda g, ans, x, mask, value: g.masked_fill(mask.logical_not(), 0).sum()),
    jvp=lambda ts, ans, x, mask, value: _masked_fill_tensor_jvp(ts, ans, mask),
    saved_names={"mask": ("input", 1)})


def _masked_fill_tensor_jvp(ts, ans, mask):
    from .elementwise import where

    tx = ts[0] if ts[0] is not None else ans * 0
    tv = ts[2] if ts[2] is not None else 0
    return where(mask, tv, tx)


@public("masked_fill", method=True, inplace=True)
def masked_fill(input, mask, value):  # noqa: A002
    """``value`` (a number or a 0-d tensor) where ``mask`` is True, else ``input``."""
    if mask.dtype is not dtypes.bool:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{dtypes.CPP_NAMES.get(mask.dtype.name, mask.dtype.name)}")
    if isinstance(value, registry.Tensor):
        if value.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        if value.dtype is not input.dtype:
            value = value.to(input.dtype)
        return apply(MASKED_FILL_TENSOR, input, mask, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from .creation import fitted_scalar  # (torch's overflow check of the number)

        value = fitted_scalar(value, input.dtype)
    return apply(MASKED_FILL, input, mask, value=value)


# ---------------------------------------------------------------- masked_select / scatter


def _masked_select_impl(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _masked_select_meta(x, mask):
    _data_dependent("masked_select", mask)
    shape = broadcast_shapes(tuple(mask.shape), tuple(x.shape))  # (torch's order, its texts)
    return (int(np.count_nonzero(np.broadcast_to(mask._data, shape))),), x.dtype


def _masked_scatter_impl(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.array(np.broadcast_to(x, shape))
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[:int(np.count_nonzero(m))]
    return out


def _masked_scatter_meta(x, mask, source):
    shape = broadcast_shapes(tuple(mask.shape), tuple(x.shape))  # (torch's order)
    return shape, x.dtype


def _masked_scatter_source_grad(g, ans, x, mask, source):
    # source element k went to the k-th True position of the (broadcast) mask: its gradient is
    # g there. Written with static shapes (a scatter into n + 1 slots, the last one collecting
    # the False positions), so it traces under jit.
    from .creation import zeros
    from .elementwise import where
    from .indexing import scatter_add
    from .scan import cumsum

    n = 1
    for s in source.shape:
        n *= s
    m = mask.expand(tuple(g.shape)).reshape(-1)
    slot = where(m, cumsum(m, 0) - 1, n)
    buf = scatter_add(zeros((n + 1,), dtype=g.dtype, device=g.device), 0, slot, g.reshape(-1))
    return buf[:n].reshape(tuple(source.shape))


MASKED_SELECT = defop(
    "masked_select", _masked_select_impl, kind=OPAQUE, meta=_masked_select_meta, save=(1,),
    vjp=(lambda g, ans, x, mask: apply(MASKED_SCATTER, _zeros_of(ans, g, x, mask), mask, g),
         None),
    jvp=lambda ts, ans, x, mask: apply(MASKED_SELECT, ts[0], mask),
    saved_names={"mask": ("input", 1), "self_sym_sizes": ("sizes", 0)})
MASKED_SCATTER = defop(
    "masked_scatter", row_major(_masked_scatter_impl), kind=OPAQUE, meta=_masked_scatter_meta,
    save=(1,),
    vjp=(lambda g, ans, x, mask, source: g.masked_fill(mask, 0), None,
         _masked_scatter_source_grad),
    jvp=lambda ts, ans, x, mask, source: _masked_scatter_jvp(ts, ans, mask, source),
    saved_names={"mask": ("input", 1), "source_sym_sizes": ("sizes", 2)})


def _masked_scatter_jvp(ts, ans, mask, source):
    from .creation import zeros

    tx = ts[0] if ts[0] is not None else ans * 0
    ts_ = ts[2] if ts[2] is not None else zeros(tuple(source.shape), dtype=ans.dtype,
                                                device=ans.device)
    return apply(MASKED_SCATTER, tx, mask, ts_)


def _zeros_of(ans, g, x, mask):
    from .creation import zeros

    return zeros(broadcast_shapes(tuple(x.shape), tuple(mask.shape)), dtype=g.dtype,
                 device=g.device)


@public("masked_select", method=True)
def masked_select(input, mask):  # noqa: A002
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor (shapes broadcast)."""
    if mask.dtype is not dtypes.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return apply(MASKED_SELECT, input, mask)


@public("masked_scatter", method=True, inplace=True)
def masked_scatter(input, mask, source):  # noqa: A002
    """``input`` with the positions where ``mask`` is True filled, in order, from ``source``."""
    if mask.dtype is not dtypes.bool:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype._scalar_name}")
    if source.dtype is not input.dtype:  # (torch's text has no space after "got")
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but "
                           f"got{input.dtype._scalar_name} and {source.dtype._scalar_name}")
    if not _is_traced(mask):
        shape = broadcast_shapes(tuple(mask.shape), tuple(input.shape))  # (torch's order)
        ones = int(mask.expand(shape).sum().item()) if mask.is_cuda else \
            int(np.count_nonzero(np.broadcast_to(mask._data, shape)))
        if ones > source.numel():
            raise RuntimeError("Number of elements of source < number of ones in mask")
    return apply(MASKED_SCATTER, input, mask, source)


def _nonzero_meta(x):
    _data_dependent("nonzero", x)
    return (int(np.count_nonzero(x._data)), x.ndim), dtypes.int64


NONZERO = defop("nonzero", lambda x: np.argwhere(x).astype(np.int64), kind=OPAQUE,
                meta=_nonzero_meta)


@public("nonzero", method=True)
def nonzero(input, *, as_tuple: bool = False):  # noqa: A002
    """The indices of the non-zero elements: an ``(n, ndim)`` tensor, or with ``as_tuple`` one
    1-D tensor per dim."""
    idx = apply(NONZERO, input)
    if not as_tuple:
        return idx
    if input.ndim == 0:  # (index 0 once if the scalar is non-zero)
        return (idx.sum(dim=1),)
    return tuple(idx[:, d] for d in range(input.ndim))


@public("argwhere", method=True)
def argwhere(input):  # noqa: A002
    """``nonzero(input)``: the indices of the non-zero elements, one row each."""
    return nonzero(input)


# ---------------------------------------------------------------- tril / triu


def _tri_meta(name):
    def meta(x, diagonal):
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return tuple(x.shape), x.dtype
    return meta


TRIL = defop("tril", row_major(lambda x, diagonal: np.tril(x, diagonal)), kind=OPAQUE,
             meta=_tri_meta("tril"), vjp=(lambda g, ans, x, diagonal: tril(g, diagonal),),
             jvp=LINEAR, saved_names={"diagonal": ("param", "diagonal")})
TRIU = defop("triu", row_major(lambda x, diagonal: np.triu(x, diagonal)), kind=OPAQUE,
             meta=_tri_meta("triu"), vjp=(lambda g, ans, x, diagonal: triu(g, diagonal),),
             jvp=LINEAR, saved_names={"diagonal": ("param", "diagonal")})


@public("tril", method=True, inplace=True)
def tril(input, diagonal: int = 0):  # noqa: A002
    """The lower triangle of the last two dims (elements on and below ``diagonal``)."""
    return apply(TRIL, input, diagonal=int(diagonal))


@public("triu", method=True, inplace=True)
def triu(input, diagonal: int = 0):  # noqa: A002
    """The upper triangle of the last two dims (elements on and above ``diagonal``)."""
    return apply(TRIU, input, diagonal=int(diagonal))


# ---------------------------------------------------------------- scatter


def _scatter_impl(x, index, src, dim):
    out = x.copy()
    if index.size:
        target, positions, values = scatter_operands(out, index, src, dim)
        target[positions] = values
    return out


def _scatter_value_impl(x, index, dim, value):
    out = x.copy()
    if index.size:
        target, positions, _ = scatter_operands(out, index, None, dim)
        target[positions] = value
    return out


SCATTER = defop(
    "scatter", _scatter_impl, kind=OPAQUE, save=(1,),
    meta=lambda x, index, src, dim: (tuple(x.shape), x.dtype),
    vjp=(lambda g, ans, x, index, src, dim: scatter(g, dim, index, 0), None,
         lambda g, ans, x, index, src, dim: _gather_to(g, dim, index, src)),
    jvp=LINEAR, saved_names={"dim": ("param", "dim"), "index": ("input", 1)})
SCATTER_VALUE = defop(
    "scatter_value", _scatter_value_impl, kind=OPAQUE, save=(1,), node_name="ScatterBackward1",
    meta=lambda x, index, dim, value: (tuple(x.shape), x.dtype),
    vjp=(lambda g, ans, x, index, dim, value: scatter(g, dim, index, 0), None),
    jvp=lambda ts, ans, x, index, dim, value: apply(SCATTER_VALUE, ts[0], index, dim=dim,
                                                     value=0),
                                                     saved_names={"dim": ("param", "dim"),
                                                                  "index": ("input", 1)})


def _no_scatter_derivative(*args, **params):
    raise RuntimeError("derivative for aten::scatter is not implemented")


def _scatter_multiply_impl(x, index, src, dim):
    out = x.copy()
    if index.size:
        np.multiply.at(*scatter_operands(out, index, src, dim))
    return out


def _scatter_multiply_value_impl(x, index, dim, value):
    out = x.copy()
    if index.size:
        target, positions, _ = scatter_operands(out, index, None, dim)
        np.multiply.at(target, positions, np.asarray(value, dtype=x.dtype))
    return out


# scatter(reduce="multiply"): torch records a node whose backward raises (no derivative)
SCATTER_MULTIPLY = defop(
    "scatter_multiply", _scatter_multiply_impl, kind=OPAQUE, node_name="NotImplemented",
    meta=lambda x, index, src, dim: (tuple(x.shape), x.dtype),
    vjp=_no_scatter_derivative, jvp=_no_scatter_derivative)
SCATTER_MULTIPLY_VALUE = defop(
    "scatter_multiply_value", _scatter_multiply_value_impl, kind=OPAQUE,
    node_name="NotImplemented", meta=lambda x, index, dim, value: (tuple(x.shape), x.dtype),
    vjp=_no_scatter_derivative, jvp=_no_scatter_derivative)


def _gather_to(g, dim, index, src):
    picked = g.gather(dim, index)
    if tuple(picked.shape) == tuple(src.shape):
        return picked
    if src.ndim == 0:  # (one element, as torch reads a 0-d src: the index covers at most it)
        return picked.reshape(())
    from .creation import zeros
    from .indexing import INDEX_PUT

    key = tuple(("slice", 0, n, None) for n in index.shape)
    return apply(INDEX_PUT, zeros(tuple(src.shape), dtype=g.dtype, device=g.device), picked,
                 spec=key, accumulate=False)


def _size(t, k: int) -> int:
    return t.shape[k] if t.ndim else 1


def _check_scatter_shape(input, d: int, index, src) -> None:  # noqa: A002
    """torch's scatter_shape_check: ``index`` no larger than ``input`` in every dim but ``d``
    and no larger than ``src`` in every dim (a larger one would write past ``src``)."""
    if index.numel() == 0:
        return
    dims = max(input.ndim, 1)
    wrong = any(k != d and _size(index, k) > _size(input, k) for k in range(dims))
    if src is None:
        if wrong:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
        return
    for k in range(dims) if not wrong else ():
        if src.ndim and k >= src.ndim:  # (torch reads src.size(k) here)
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-src.ndim}, {src.ndim - 1}], but got {k})")
        if _size(index, k) > _size(src, k):
            wrong = True
            break
    if max(src.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if wrong:
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                           f"{list(input.shape)} apart from dimension {d} and to be no larger "
                           f"size than src {list(src.shape)}")


def _check_scatter(name, input, dim, index, src=None) -> int:  # noqa: A002
    d = wrap_dim(dim, input.ndim)
    if index.dtype not in (dtypes.int64, dtypes.int32):  # (torch's names scatter for all)
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if max(index.ndim, 1) != max(input.ndim, 1) and index.numel() > 0:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and src.dtype is not input.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    _check_scatter_shape(input, d, index, src)
    if not _is_traced(index) and index.numel() and index.is_cpu:  # (cuda: on the device)
        size = _size(input, d)
        bad = (index._data < 0) | (index._data >= size)
        if bad.any():
            raise RuntimeError(f"index {int(index._data[bad].flat[0])} is out of bounds for "
                               f"dimension {d} with size {size}")
    return d


_WARNED_REDUCE = []


def _warn_reduce_with_tensor_src() -> None:
    """torch's deprecation of ``scatter(..., src_tensor, reduce=...)``, once per process."""
    if not _WARNED_REDUCE:
        import warnings

        from ..errors import user_stacklevel

        _WARNED_REDUCE.append(True)
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning,
                      stacklevel=user_stacklevel(3))


@public("scatter", method=True, inplace=True)
def scatter(input, dim: int, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """Writes ``src`` (a tensor, or a number: ``value``) into a copy of ``input`` at ``index``
    along ``dim`` (torch.scatter). ``reduce="add"`` adds instead of writing and
    ``reduce="multiply"`` multiplies (not differentiable, as in torch)."""
    if value is None and not isinstance(src, registry.Tensor):
        src, value = None, src
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if src is not None:
            _warn_reduce_with_tensor_src()
        if reduce == "multiply":
            d = _check_scatter("scatter", input, dim, index, src)
            if src is None:
                return apply(SCATTER_MULTIPLY_VALUE, input, index, dim=d, value=value)
            return apply(SCATTER_MULTIPLY, input, index, src, dim=d)
        if src is None:
            from .creation import full

            src = full(tuple(index.shape), value, dtype=input.dtype, device=input.device)
        from .indexing import scatter_add

        return scatter_add(input, dim, index, src)
    d = _check_scatter("scatter", input, dim, index, src)
    if src is None:
        return apply(SCATTER_VALUE, input, index, dim=d, value=value)
    return apply(SCATTER, input, index, src, dim=d)


@public("scatter_add", method=True, inplace=True)
def scatter_add(input, dim: int, index, src):  # noqa: A002
    """Adds ``src`` into a copy of ``input`` at ``index`` along ``dim`` (torch.scatter_add),
    with torch's checks of the index and dtypes."""
    from .indexing import SCATTER_ADD

    d = _check_scatter("scatter", input, dim, index, src)
    return apply(SCATTER_ADD, input, index, src, dim=d)


@public("index_add", method=True, inplace=True)
def index_add(input, dim: int, index, source, *, alpha=1):  # noqa: A002
    """Adds ``alpha * source`` into a copy of ``input`` at the entries ``index`` (1-D) along
    ``dim`` (torch.index_add)."""
    from .indexing import INDEX_ADD

    d = wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {index.dtype._scalar_name} and size: "
                         f"{list(index.shape)}")
    if not dtypes.is_integral(index.dtype) or index.dtype is dtypes.bool:
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype._scalar_name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype._scalar_name}) and source "
                           f"({source.dtype._scalar_name}) must have the same scalar type")
    if d != 0 and d >= source.ndim:
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source "
                           f"tensor with dim {source.ndim}")
    n = index.numel()
    size = _size(source, d)
    if n != size:
        if source.ndim == 0:  # (torch reads source.size(dim) for its message)
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({size}), for dim: {d}")
    kept_input, kept_source = list(input.shape), list(source.shape)
    if input.ndim and source.ndim:
        del kept_input[d], kept_source[d]
    if kept_input != kept_source:  # (NumPy would broadcast source: a wrong result)
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if not _is_traced(index) and n and input.numel() and not index.is_cuda:  # (cuda: on device)
        bad = (index._data < 0) | (index._data >= _size(input, d))
        if bad.any():
            if input.ndim <= 1:  # (torch's loop over a vector checks as index_select does)
                raise IndexError("index out of range in self")
            raise RuntimeError(f"index {int(index._data[bad].flat[0])} is out of bounds for "
                               f"dimension {d} with size {_size(input, d)}")
    if alpha != 1:
        source = source * alpha
    return apply(INDEX_ADD, input, index.reshape(-1), source, dim=d)


@public("where")
def where(condition, input=None, other=None):  # noqa: A002
    """``where(condition, input, other)``: ``input`` where ``condition`` else ``other``;
    ``where(condition)``: ``nonzero(condition, as_tuple=True)``, as torch."""
    from .elementwise import where as select

    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() received an invalid combination of arguments - expected "
                        "(Tensor condition) or (Tensor condition, Tensor input, Tensor other)")
    if isinstance(condition, registry.Tensor) and condition.dtype not in (dtypes.bool,
                                                                          dtypes.uint8):
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype._scalar_name}")
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (input, other)]
    if any(numbers) and not all(numbers):  # (a number meets a tensor's dtype: torch's check)
        from .creation import fitted_scalar

        dt = dtypes.result_type(input, other)
        input, other = (fitted_scalar(v, dt) if n else v for v, n in zip((input, other), numbers))
    return select(condition, input, other)
