"""The keys of ``x[key]``: a key normalized to the ``index`` op's spec and index tensors
(Ellipsis expanded, masks as positions, torch's bool scalars as a new size-1 dim), with torch's
checks of bounds, steps and mask shapes."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from . import registry
from .movement import unsqueeze


def _as_index(k, meta_count: int | None = None):
    """The index tensors of key ``k`` (a mask gives one per dim, its nonzero positions). A
    mask on a meta tensor has no positions: with ``meta_count`` (a write, whose result's shape
    does not depend on them) it stands for ``meta_count`` positions, else it raises."""
    from .creation import tensor as make_tensor

    if isinstance(k, registry.Tensor):
        t = k
    else:
        t = make_tensor(k)
        if t.numel() == 0:  # (an empty list indexes nothing: torch makes it a long tensor)
            t = t.to(dtypes.int64)
    if t.dtype is dtypes.bool or t.dtype is dtypes.uint8:
        if t._trace is not None:
            from ..errors import data_dependent_shape_error

            raise data_dependent_shape_error("boolean mask indexing")
        if t.is_meta:
            if meta_count is not None:
                from .creation import meta_empty

                return [meta_empty((meta_count,), dtypes.int64)] * max(t.ndim, 1)
            from .._meta import data_dependent_error

            raise data_dependent_error("boolean mask indexing")
        if t.is_cuda:  # (the nonzero op: its count is read back, its indices stay there)
            return list(t.nonzero(as_tuple=True)) if t.ndim else [t.nonzero()[:, 0]]
        return [make_tensor(nz) for nz in np.nonzero(t._data)]
    if not dtypes.is_integral(t.dtype):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return [t]


def _sequence_as_tuple(key) -> bool:
    """torch's (and old NumPy's) rule: a short list holding a sequence, slice, tensor, None or
    Ellipsis is a tuple of indices (``x[[[0, 1]]]`` is ``x[[0, 1]]``), other lists one index."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    return any(isinstance(k, (list, tuple, slice, registry.Tensor, str)) or k is None or
               k is Ellipsis for k in key)


def _is_bool_scalar(k) -> bool:
    return isinstance(k, (bool, np.bool_)) or (
        isinstance(k, registry.Tensor) and k.ndim == 0 and k.dtype is dtypes.bool)


def _without_bool_scalars(x, key):
    """torch's reading of a bool in a key (a Python bool or a 0-d bool tensor): a new dim of
    size 1 there, indexed by ``[0]`` (True) or by nothing (False). As (x with those dims, the
    key with long index tensors in their place, the new dims), or None for a key without."""
    parts = key if isinstance(key, tuple) else (key,)
    if not any(_is_bool_scalar(k) for k in parts):
        return None
    from .creation import tensor as make_tensor

    taken = sum(0 if k is None or k is Ellipsis or _is_bool_scalar(k) else
                k.ndim if isinstance(k, registry.Tensor) and k.dtype is dtypes.bool else 1
                for k in parts)
    if taken > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    new_parts, new_dims, dim = [], [], 0
    for k in parts:
        if _is_bool_scalar(k):
            if isinstance(k, registry.Tensor) and k._trace is not None:
                from ..errors import data_dependent_shape_error

                raise data_dependent_shape_error("indexing with a 0-d boolean tensor")
            new_dims.append(dim)
            new_parts.append(make_tensor([0] if bool(k) else [], dtype=dtypes.int64,
                                         device=x.device))
            dim += 1
            continue
        new_parts.append(k)
        if k is Ellipsis:
            dim += max(x.ndim - taken, 0)
        elif k is not None:
            dim += k.ndim if isinstance(k, registry.Tensor) and k.dtype is dtypes.bool else 1
    for d in new_dims:
        x = unsqueeze(x, d)
    return x, tuple(new_parts), new_dims


def _normalize_key(x, key, meta_count: int | None = None) -> tuple[tuple, list]:
    """(spec, index tensors) for ``x[key]``, with Ellipsis expanded and masks as indices
    (``meta_count``: see ``_as_index``)."""
    if not isinstance(key, tuple):
        if x.ndim == 0 and isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if key:
                raise _out_of_bounds(int(key), 0, 0)
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        key = tuple(key) if _sequence_as_tuple(key) else (key,)
    consumed = 0
    for k in key:
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, registry.Tensor) and k.dtype is dtypes.bool:
            consumed += k.ndim
        else:
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    spec, tensors = [], []
    dim = 0  # the dimension of x that k indexes
    for k in key:
        if k is Ellipsis:
            spec.extend([("slice", None, None, None)] * (x.ndim - consumed))
            dim += x.ndim - consumed
            consumed = x.ndim
        elif k is None:
            spec.append(None)
        elif isinstance(k, slice):
            _check_step(k.step)
            spec.append(("slice", _int(k.start), _int(k.stop), _int(k.step)))
            dim += 1
        elif isinstance(k, (float, np.floating)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
        elif type(k) is int:
            size = x.shape[dim]
            if not -size <= k < size:
                raise _out_of_bounds(k, dim, size)
            spec.append(k)
            dim += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, registry.Tensor) and k.ndim == 0 and
                                                  dtypes.is_integral(k.dtype) and
                                                  k._trace is None and not k.is_meta):
            _check_bounds(np.asarray(int(k)), dim, x.shape[dim])
            spec.append(int(k))
            dim += 1
        else:
            _check_mask_shape(x, key, k, dim)
            for t in _as_index(k, meta_count):
                if x.is_cuda and not t.is_cuda:  # (as torch: host indices for a cuda tensor)
                    t = t.cuda()
                elif x.is_meta and not t.is_meta:  # (and for a meta tensor)
                    t = t.to("meta")
                if t.is_cuda:
                    _check_bounds_on_device(t, len(tensors), x.shape[dim])
                elif t._trace is None and not t.is_meta:
                    # (torch numbers these by advanced index, not by dim)
                    _check_bounds(t._data, len(tensors), x.shape[dim])
                spec.append(("t", len(tensors)))
                tensors.append(t)
                dim += 1
    return tuple(spec), tensors


def _check_mask_shape(x, key: tuple, k, dim: int) -> None:
    """torch's error for a mask whose shape is not that of the dims it indexes (NumPy's
    nonzero would index with the positions it has)."""
    if isinstance(k, list):
        try:
            as_array = np.asarray(k)
        except ValueError:
            return
        if as_array.dtype != np.bool_ or as_array.size == 0:
            return
        shape = as_array.shape
    elif isinstance(k, registry.Tensor) and k.dtype is dtypes.bool:
        shape = tuple(k.shape)
    else:
        return
    for j, n in enumerate(shape):
        if n != x.shape[dim + j]:
            break
    else:
        return
    basic, position = [], dim  # (torch names the tensor its slices and ints leave, and the dim)
    for part in key:
        if part is k:
            position += sum(1 for b in basic if b is None) - sum(type(b) is int for b in basic)
        if isinstance(part, registry.Tensor) and part.ndim > 0:
            is_mask = part.dtype is dtypes.bool
            basic.extend([slice(None)] * (part.ndim if is_mask else 1))
        elif isinstance(part, list):
            array = np.asarray(part)
            basic.extend([slice(None)] * (array.ndim if array.dtype == np.bool_ else 1))
        else:
            basic.append(int(part) if isinstance(part, registry.Tensor) else part)
    indexed = np.broadcast_to(np.zeros((), np.int8), tuple(x.shape))[tuple(basic)].shape
    raise IndexError(f"The shape of the mask {list(shape)} at index {j} does not match the shape "
                     f"of the indexed tensor {list(indexed)} at index {position + j}")


def _check_step(step) -> None:
    if step is not None and step <= 0:
        raise ValueError("step must be greater than zero" if step else "slice step cannot be zero")


def _check_bounds(index: np.ndarray, dim: int, size: int) -> None:
    bad = (index >= size) | (index < -size)
    if bad.any():
        raise _out_of_bounds(int(index[bad].flat[0]), dim, size)


def _out_of_bounds(index: int, dim: int, size: int) -> IndexError:
    return IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")


def _check_bounds_on_device(index, dim: int, size: int) -> None:
    """``_check_bounds`` for a cuda index tensor: the count of bad indices is read back (and
    the first one, to name it)."""
    bad = (index >= size) | (index < -size)  # (integer tensors: nothing is recorded)
    if bad.sum().item():
        first = int(index.masked_select(bad)[0].item())
        raise _out_of_bounds(first, dim, size)


def _int(v):
    return None if v is None else int(v)
