"""Indexing: ``__getitem__``/``__setitem__``, index_select, gather, scatter_add, index_add.

Basic indexing decomposes into select/slice/unsqueeze as in torch (so node names match);
anything with tensor indices is one ``index`` op whose params are a hashable ``spec``: a tuple
of ints, ``("slice", start, stop, step)``, None, Ellipsis, and ``("t", k)`` for the k-th index
tensor input.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ._shape import wrap_dim
from . import registry
from .movement import select, slice_dim, unsqueeze
from .registry import LINEAR, MOVEMENT, OPAQUE, apply, defop
from .index_keys import (_check_step, _int, _normalize_key, _out_of_bounds,
                         _without_bool_scalars)
from .surface import public


def _np_key(spec: tuple, idx: tuple) -> tuple:
    key = []
    for s in spec:
        if isinstance(s, tuple) and s[0] == "slice":
            key.append(slice(s[1], s[2], s[3]))
        elif isinstance(s, tuple) and s[0] == "t":
            key.append(idx[s[1]])
        else:
            key.append(s)
    return tuple(key)


def _index_impl(x, *idx, spec):
    return x[_np_key(spec, idx)]


def _index_meta(x, *idx, spec):
    dummy = np.broadcast_to(np.zeros((), dtype=x.dtype.np), tuple(x.shape))
    fake = tuple(np.zeros(tuple(i.shape), dtype=np.int64) for i in idx)
    try:
        return dummy[_np_key(spec, fake)].shape, x.dtype
    except IndexError as e:
        raise _index_broadcast_error(e, idx) from None


def _index_broadcast_error(error: IndexError, idx: tuple) -> IndexError:
    """torch's text for index tensors that do not broadcast together (else ``error``)."""
    if "could not be broadcast" not in str(error):
        return error
    shapes = ", ".join(str(list(i.shape)) for i in idx)
    return IndexError(f"shape mismatch: indexing tensors could not be broadcast together with "
                      f"shapes {shapes}")


def _index_vjp(g, ans, x, *idx, spec):
    from .creation import zeros

    base = zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    return (apply(INDEX_PUT, base, g, *idx, spec=spec, accumulate=True),) + (None,) * len(idx)


def _index_put_impl(x, values, *idx, spec, accumulate):
    out = x.copy()
    key = _np_key(spec, idx)
    try:
        if accumulate:
            np.add.at(out, key, values)
        else:
            out[key] = values
    except ValueError:  # (torch's text for a value that does not broadcast)
        raise _put_shape_error(np.shape(values), out[key].shape) from None
    except IndexError as e:
        raise _index_broadcast_error(e, idx) from None
    return out


def _put_shape_error(value_shape: tuple, result_shape: tuple) -> RuntimeError:
    shown = list(value_shape)
    while shown and shown[0] == 1:  # (torch names the value's shape without leading ones)
        shown.pop(0)
    return RuntimeError(f"shape mismatch: value tensor of shape {shown} cannot be broadcast "
                        f"to indexing result of shape {list(result_shape)}")


def _index_put_vjp(g, ans, x, values, *idx, spec, accumulate):
    gx = g if accumulate else apply(INDEX_PUT, g, 0.0, *idx, spec=spec, accumulate=False)
    gv = apply(INDEX, g, *idx, spec=spec)
    return (gx, gv) + (None,) * len(idx)


INDEX = defop("index", _index_impl, kind=MOVEMENT, meta=_index_meta, vjp=_index_vjp,
              save=(1, 2, 3, 4, 5, 6, 7, 8), jvp=LINEAR)
INDEX_PUT = defop(
    "index_put", _index_put_impl, kind=MOVEMENT, vjp=_index_put_vjp,
    meta=lambda x, values, *idx, spec, accumulate: (tuple(x.shape), x.dtype),
    save=(2, 3, 4, 5, 6, 7, 8, 9), jvp=LINEAR)


def getitem(x, key):
    """``x[key]``: basic indexing as views (select/slice/unsqueeze), advanced as ``index``.

    As torch: in a tuple key, a slice that takes a whole dimension records nothing, and a key
    that leaves ``x`` as it is returns an alias (AliasBackward0); a lone slice is recorded."""
    if key is Ellipsis or (type(key) is tuple and len(key) == 1 and key[0] is Ellipsis):
        return apply(ALIAS, x)  # x[...] is an alias (torch's AliasBackward0)
    if type(key) is int and x.ndim:  # (the common x[i], without the general key's walk)
        size = x.shape[0]
        if not -size <= key < size:
            raise _out_of_bounds(key, 0, size)
        return select(x, 0, key)
    if type(key) is slice:
        _check_step(key.step)
        if x.ndim == 0:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return slice_dim(x, 0, _int(key.start), _int(key.stop),
                         1 if key.step is None else int(key.step))
    rewritten = _without_bool_scalars(x, key)
    if rewritten is not None:
        return getitem(rewritten[0], rewritten[1])
    spec, tensors = _normalize_key(x, key)
    if tensors:
        split = split_int_selects(spec, tensors)
        if split is not None:
            return getitem(getitem(x, split[0]), split[1])
        return apply(INDEX, x, *tensors, spec=spec)
    out, dim = x, 0
    for s in spec:
        if s is None:
            out = unsqueeze(out, dim)
            dim += 1
        elif isinstance(s, int):
            out = select(out, dim, s)
        else:
            _, start, stop, step = s
            if not (start in (None, 0) and step in (None, 1)
                    and (stop is None or stop >= out.shape[dim])):
                out = slice_dim(out, dim, start, stop, 1 if step is None else step)
            dim += 1
    return apply(ALIAS, x) if out is x else out


def split_int_selects(spec: tuple, tensors: list) -> tuple | None:
    """torch selects the integer entries of a key first (``x[0, :, [1, 3]]`` is
    ``x[0][:, [1, 3]]``), so they never join the advanced indices (NumPy's would, moving the
    broadcast dims to the front): a key with both, as (basic key, the rest), else None."""
    if not any(type(s) is int for s in spec):
        return None
    basic = tuple(s if type(s) is int else slice(None) for s in spec if s is not None)
    rest = tuple(None if s is None else tensors[s[1]] if s[0] == "t" else slice(*s[1:])
                 for s in spec if type(s) is not int)
    return basic, rest


ALIAS = defop("alias", lambda x: x.view(), kind=MOVEMENT, meta=lambda x: (tuple(x.shape), x.dtype),
              index_map=True, view=True, vjp=(lambda g, ans, x: g,), jvp=LINEAR)


def _advanced(key) -> bool:
    """Whether ``key`` holds an index tensor, array or sequence (torch's index_put_)."""
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (np.ndarray, list, tuple)) or isinstance(k, registry.Tensor) and not (
        k.ndim == 0 and dtypes.is_integral(k.dtype) and k.dtype is not dtypes.bool)
        for k in parts)


def _lone_mask(key) -> bool:
    if type(key) is tuple and len(key) == 1:
        key = key[0]
    if isinstance(key, list) and key and all(isinstance(k, bool) for k in key):
        return True
    return isinstance(key, registry.Tensor) and key.dtype is dtypes.bool


def _check_put_shape(x, spec, tensors, value) -> None:
    """torch checks a written value's shape before its dtype."""
    if not x.is_cpu or any(not t.is_cpu or t._trace is not None for t in tensors):
        return
    try:
        result = x._data[_np_key(spec, tuple(t._data for t in tensors))].shape
    except IndexError as e:
        raise _index_broadcast_error(e, tuple(tensors)) from None
    try:
        np.broadcast_to(np.empty(_without_leading_ones(value.shape), np.bool_), result)
    except ValueError:
        raise _put_shape_error(tuple(value.shape), result) from None


def _without_leading_ones(shape) -> tuple:
    """A written value's shape as torch's ``__setitem__`` takes it: leading 1s dropped."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _copy_slices_impl(x, values, spec):
    out = x.copy()
    out[_np_key(spec, ())] = values
    return out


COPY_SLICES = defop(
    "copy_slices", _copy_slices_impl, kind=MOVEMENT, node_name="CopySlices",
    meta=lambda x, values, spec: (tuple(x.shape), x.dtype),
    vjp=(lambda g, ans, x, v, spec: apply(COPY_SLICES, g, 0.0, spec=spec),
         lambda g, ans, x, v, spec: apply(INDEX, g, spec=spec)), jvp=LINEAR)


def index_put_value(x, key, value, same_dtype: bool = False):
    """The out-of-place value of ``x[key] = value`` (what ``__setitem__`` writes back). With
    ``same_dtype`` (``__setitem__``), torch's error for a value tensor of another dtype written
    through index tensors (torch's index_put_; a lone mask with a 0-d value is masked_fill_,
    which converts it)."""
    if key is True:  # (torch copies the value into x, as a view with a new first dim)
        return index_put_value(unsqueeze(x, 0), Ellipsis, value, same_dtype).squeeze(0)
    rewritten = _without_bool_scalars(x, key)
    if rewritten is not None:
        wide, wide_key, new_dims = rewritten
        return index_put_value(wide, wide_key, value, same_dtype).squeeze(tuple(new_dims))
    meta_count = None
    if x.is_meta:  # a mask selects as many positions as ``value`` has rows (or one)
        meta_count = value.shape[0] if isinstance(value, registry.Tensor) and value.ndim else 1
    if same_dtype and isinstance(value, registry.Tensor) and value.dtype is not x.dtype and \
            _advanced(key) and not (value.ndim == 0 and _lone_mask(key)):
        try:  # (torch checks the value's shape first, and the indices' bounds after)
            spec, tensors = _normalize_key(x, key, meta_count)
        except IndexError as e:
            if "out of bounds" not in str(e):
                raise
        else:
            _check_put_shape(x, spec, tensors, value)
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{x.dtype._scalar_name} for the destination and "
                           f"{value.dtype._scalar_name} for the source.")
    if same_dtype and not isinstance(value, registry.Tensor):
        _check_assigned_number(x, value)
    elif same_dtype and value.ndim == 0 and value.dtype.is_complex and _lone_mask(key) \
            and not x.is_meta:  # (masked_fill_ takes the 0-d value as a number)
        _check_assigned_number(x, complex(value.item()), from_tensor=True)
    given = value
    spec, tensors = _normalize_key(x, key, meta_count)
    if not isinstance(value, registry.Tensor):
        from .creation import fitted_scalar, tensor as make_tensor

        value = make_tensor(fitted_scalar(value, x.dtype), dtype=x.dtype, device=x.device)
    if value.dtype is not x.dtype:
        value = value.to(x.dtype)
    split = split_int_selects(spec, tensors) if tensors else None
    if split is not None:  # (the integers select first, as in getitem)
        region = index_put_value(getitem(x, split[0]), split[1], value)
        return apply(COPY_SLICES, x, region, spec=_normalize_key(x, split[0])[0])
    if tensors:
        return apply(INDEX_PUT, x, value, *tensors, spec=spec, accumulate=False)
    try:
        return apply(COPY_SLICES, x, value, spec=spec)
    except (ValueError, TypeError):  # (NumPy's broadcasting error: torch's expand instead)
        given.reshape(_without_leading_ones(given.shape)).expand(*x[key].shape)
        raise


def _check_assigned_number(x, value, from_tensor: bool = False) -> None:
    """torch's ``__setitem__`` takes a number (or a tensor), unpacked as a C long long or
    double: no list or tuple, no int beyond int64, no complex into a real tensor unless its
    imaginary part is 0 (bool takes any)."""
    if isinstance(value, (list, tuple)):
        raise TypeError(f"can't assign a {type(value).__name__} to a jitgrad.{x.dtype._legacy}")
    if type(value) is int and not -9223372036854775808 <= value <= 9223372036854775807:
        raise ValueError("Overflow when unpacking long long")
    if isinstance(value, complex) and value.imag != 0 and not x.dtype.is_complex and \
            x.dtype is not dtypes.bool:
        from .creation import _CPP_SCALAR

        name = _CPP_SCALAR.get(x.dtype.name, "c10::Half" if from_tensor and
                               x.dtype is dtypes.float16 else "double")
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


# ---------------------------------------------------------------- gather / scatter


def _full_index(index: np.ndarray, dim: int) -> tuple:
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def first_out_of_range(index: np.ndarray, size: int) -> int | None:
    """The first index outside ``[0, size)`` (torch's gather/index_select take no negative
    indices: NumPy would wrap them), or None."""
    bad = (index < 0) | (index >= size)
    return int(index[bad].flat[0]) if bad.any() else None


def scatter_operands(out: np.ndarray, index: np.ndarray, src: np.ndarray | None, dim: int):
    """(target, positions, values) of a scatter into ``out`` (written in place through
    ``target``): a 0-d ``out``, ``index`` or ``src`` is one element along dim 0 (torch's
    ensure_nonempty), and ``src`` is cut to ``index``'s shape."""
    target = out.reshape(1) if out.ndim == 0 else out
    index = index.reshape(1) if index.ndim == 0 else index
    if src is not None:
        src = src.reshape(1) if src.ndim == 0 else src
        src = src[tuple(slice(0, n) for n in index.shape)]
    return target, _full_index(index, dim), src


def _gather_impl(x, index, dim):
    if index.size == 0:
        return np.empty(index.shape, x.dtype)
    size = x.shape[dim] if x.ndim else 1
    first = first_out_of_range(index, size)
    if first is not None:
        raise RuntimeError(f"index {first} is out of bounds for dimension {dim} with size "
                           f"{size}")
    picked = (x.reshape(1) if x.ndim == 0 else x)[
        _full_index(index.reshape(1) if index.ndim == 0 else index, dim)]
    return picked.reshape(index.shape)


def _index_select_impl(x, index, dim):
    if x.ndim == 0:  # (one element: index holds one 0)
        if first_out_of_range(index, 1) is not None:
            raise IndexError("index out of range in self")
        return x.copy()
    first = first_out_of_range(index, x.shape[dim])
    if first is not None:
        if dim == 0:
            raise IndexError("index out of range in self")
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={first} "
                           f"axis_dim={x.shape[dim]}")
    return np.take(x, index, axis=dim)


def _scatter_add_impl(x, index, src, dim):
    out = x.copy()
    if index.size:
        np.add.at(*scatter_operands(out, index, src, dim))
    return out


def _index_add_impl(x, index, src, dim):
    out = x.copy()
    if x.size == 0:  # (torch checks no index against an empty self)
        return out
    if x.ndim == 0:  # (one element along dim 0: src is 0-d or has one element)
        np.add.at(out.reshape(1), index, src.reshape(-1))
        return out
    key = (slice(None),) * dim + (index,)
    np.add.at(out, key, src if src.ndim else src.reshape(1))
    return out


def _check_index(index, name):
    if index.dtype not in (dtypes.int64, dtypes.int32):  # (torch takes both)
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


GATHER = defop("gather", _gather_impl, kind=OPAQUE, save=(1,),
               meta=lambda x, index, dim: (tuple(index.shape), x.dtype),
               vjp=(lambda g, ans, x, index, dim: scatter_add(_zeros(x, g), dim, index, g), None),
               jvp=LINEAR, saved_names={"dim": ("param", "dim"), "index": ("input", 1)})
SCATTER_ADD = defop("scatter_add", _scatter_add_impl, kind=OPAQUE, save=(1,),
                    meta=lambda x, index, src, dim: (tuple(x.shape), x.dtype),
                    vjp=(lambda g, ans, x, index, src, dim: g, None,
                         lambda g, ans, x, index, src, dim: gather(g, dim, index)), jvp=LINEAR,
                         saved_names={"dim": ("param", "dim"), "index": ("input", 1)})
INDEX_SELECT = defop(
    "index_select", _index_select_impl, kind=OPAQUE, save=(1,),
    meta=lambda x, index, dim: (tuple(x.shape[:dim]) + tuple(index.shape) +
                                tuple(x.shape[dim + 1:]) if x.ndim else (), x.dtype),
    vjp=(lambda g, ans, x, index, dim: index_add(_zeros(x, g), dim, index, g), None), jvp=LINEAR,
    saved_names={"dim": ("param", "dim"), "index": ("input", 1), "self_sym_sizes": ("sizes", 0)})
INDEX_ADD = defop("index_add", _index_add_impl, kind=OPAQUE, save=(1,),
                  meta=lambda x, index, src, dim: (tuple(x.shape), x.dtype),
                  vjp=(lambda g, ans, x, index, src, dim: g, None,
                       lambda g, ans, x, index, src, dim: index_select(g, dim, index)), jvp=LINEAR,
                       saved_names={"dim": ("param", "dim"), "index": ("input", 1)})


def _zeros(x, g):
    from .creation import zeros

    return zeros(tuple(x.shape), dtype=g.dtype, device=g.device)


@public("gather", method=True)
def gather(input, dim: int, index, *, sparse_grad: bool = False):  # noqa: A002
    """Gathers values along ``dim`` at ``index`` (torch.gather). ``sparse_grad`` asks torch
    for a sparse gradient of ``input``; jitgrad's is dense, with the same values."""
    d = wrap_dim(dim, input.ndim)
    _check_index(index, "gather")
    if index.numel() == 0:  # (torch checks no shapes then: the result is index-shaped)
        return apply(GATHER, input, index, dim=d)
    if max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(index.ndim):  # (torch's gather_shape_check)
        if k != d and index.shape[k] > (input.shape[k] if input.ndim else 1):
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
    return apply(GATHER, input, index, dim=d)


def scatter_add(input, dim: int, index, src):  # noqa: A002
    """Adds ``src`` into a copy of ``input`` at ``index`` along ``dim`` (torch.scatter_add)."""
    return apply(SCATTER_ADD, input, index, src, dim=wrap_dim(dim, input.ndim))


@public("index_select", method=True)
def index_select(input, dim: int, index):  # noqa: A002
    """Selects entries ``index`` (1-D int64) along ``dim``."""
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    if input.ndim and input.shape[d] == 0 and index.numel():
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    return apply(INDEX_SELECT, input, index.reshape(-1), dim=d)


def index_add(input, dim: int, index, source):  # noqa: A002
    """Adds ``source`` into a copy of ``input`` at ``index`` along ``dim``."""
    return apply(INDEX_ADD, input, index, source, dim=wrap_dim(dim, input.ndim))


# ---------------------------------------------------------------- forward-mode (JVP) rules
