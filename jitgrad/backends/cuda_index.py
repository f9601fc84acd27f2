"""Advanced indexing on the device: ``index`` (``x[idx]``, ``x[mask]``, ``x[:, [0, 2], 1]``)
and ``index_put`` with index tensors (``x[idx] = v``, ``x[idx] += v``, and ``index``'s
backward).

NumPy's rules (the CPU op's): every integer of a key that holds an index tensor counts as an
advanced index too; the advanced indices broadcast together to ``B``; their dims of the result
go where the first of them stood when they are adjacent in the key, else first. On the device:

* ``None`` becomes a size-1 dim and slices become views, so what is left is a view ``y`` of
  ``x`` whose advanced dims ``P`` take the index tensors;
* ``y`` with ``P`` moved to the front, as a contiguous ``(prod(P's sizes), rest...)`` array,
  is indexed along dim 0 by the row-major linear index of the advanced indices (index tensor
  ops on the device): ``index_select`` reads, ``index_add`` accumulates and ``scatter`` writes
  (the last of duplicate indices wins, as on the CPU);
* the result's ``B`` dims are moved to their place.

Boolean masks arrive as their ``nonzero`` columns (``ops/indexing.py`` takes them on the
device), and the indices are range-checked on the device.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from ..tensor import _make
from .cuda_composite import _no_grad
from .numba_cuda import full


def _geometry(x: CudaArray, idx: tuple, spec: tuple):
    """``(y, advanced)``: the view of ``x`` with slices and ``None`` applied, and the
    ``(dim of y, index tensor or int)`` of each advanced index."""
    shape, strides, offset = x.shape, x.strides, x.offset
    new_shape, new_strides, adv = [], [], []
    dim = 0
    for s in spec:
        if s is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        if isinstance(s, tuple) and s[0] == "slice":
            start, stop, step = slice(s[1], s[2], s[3]).indices(shape[dim])
            new_shape.append(len(range(start, stop, step)))
            offset += start * strides[dim] if new_shape[-1] else 0
            new_strides.append(strides[dim] * step)
        else:
            adv.append((len(new_shape), idx[s[1]] if isinstance(s, tuple) else int(s)))
            new_shape.append(shape[dim])
            new_strides.append(strides[dim])
        dim += 1
    new_shape += shape[dim:]
    new_strides += strides[dim:]
    return x.view(tuple(new_shape), tuple(new_strides), offset), adv


def _plan(x: CudaArray, idx: tuple, spec: tuple):
    """What both ops need: the front-moved view of ``y`` (a view of ``x``), the linear index
    (a flat device tensor), ``B``, the rest's shape and where ``B`` goes in the result."""
    y, adv = _geometry(x, idx, spec)
    pos = [p for p, _ in adv]
    place = pos[0] if pos == list(range(pos[0], pos[0] + len(pos))) else 0
    others = [d for d in range(y.ndim) if d not in pos]
    order = pos + others
    front = y.view(tuple(y.shape[d] for d in order), tuple(y.strides[d] for d in order),
                   y.offset)
    sizes = [y.shape[p] for p in pos]

    def linear():
        from ..ops.elementwise import where

        total = None
        step = 1
        for (_, i), n in zip(reversed(adv), reversed(sizes)):
            if isinstance(i, Tensor):
                i = i.to(dtypes.int64)
                term = where(i < 0, i + n, i) * step
            else:
                term = (i + n if i < 0 else i) * step
            total = term if total is None else total + term
            step *= n
        if not isinstance(total, Tensor):
            total = _make(full((), total, np.int64), dtypes.int64)
        return total

    lin = _no_grad(linear)
    rest = tuple(y.shape[d] for d in others)
    return front, len(pos), lin, tuple(lin.shape), rest, place


def _flat2d(front: CudaArray, n_adv: int) -> CudaArray:
    lead = int(np.prod(front.shape[:n_adv], dtype=np.int64))
    src = front if front.is_contiguous() else front.copy()
    return src.view((lead,) + front.shape[n_adv:])


def _result_order(nb: int, rest: tuple, place: int) -> tuple:
    """The permutation of ``B + rest`` dims into the result's order."""
    r = len(rest)
    return tuple(nb + j for j in range(place)) + tuple(range(nb)) + \
        tuple(nb + j for j in range(place, r))


def index(op, args, params):
    """``x[key]`` with index tensors."""
    x, idx = args[0], args[1:]
    spec = params["spec"]
    if not idx:  # (basic indexing: a view, as the movement op it is)
        from .cuda_eager import _movement

        return _movement(op, args, params)
    front, n_adv, lin, b, rest, place = _plan(x._data, idx, spec)
    table = _make(_flat2d(front, n_adv), x._dtype)

    def forward():
        picked = table.index_select(0, lin.reshape(-1)).reshape(b + rest)
        return picked.permute(*_result_order(len(b), rest, place)).contiguous()

    out = _no_grad(forward)
    return out._data, x._dtype


def index_put(op, args, params):
    """``x`` with ``x[key] = values`` (or ``+=`` with ``accumulate``), index tensors in the
    key."""
    if len(args) == 2:  # (no index tensors: a write into a view)
        from .cuda_composite import _copy_slices

        return _copy_slices(op, args, params)
    x, values, idx = args[0], args[1], args[2:]
    spec, accumulate = params["spec"], params["accumulate"]
    out = x._data.copy()
    front, n_adv, lin, b, rest, place = _plan(out, idx, spec)
    table = _make(_flat2d(front, n_adv).copy(), x._dtype)
    if not isinstance(values, Tensor):
        values = _make(full((), values, x._dtype.np), x._dtype)

    def forward():
        nb = len(b)
        res_shape = tuple(rest[:place]) + b + tuple(rest[place:])
        order = _result_order(nb, rest, place)
        inverse = tuple(int(k) for k in np.argsort(order))
        v = values.to(x._dtype).expand(res_shape).permute(*inverse).contiguous()
        flat = lin.reshape(-1)
        v = v.reshape((flat.shape[0],) + rest)
        if accumulate:
            return table.index_add(0, flat, v)
        where = flat.reshape((flat.shape[0],) + (1,) * len(rest)).expand(v.shape)
        return table.scatter(0, where.contiguous(), v)

    new = _no_grad(forward)
    if new._data.size:
        front.copy_from(new._data.view(front.shape))
    return out, x._dtype


BY_NAME = {"index": index, "index_put": index_put}
__all__ = ["BY_NAME", "index", "index_put"]
