"""``unique``, ``unique(dim=)`` and ``unique_consecutive`` on the device, as compositions of
ops with kernels (the stable line sort, ``cumsum``, ``nonzero``, ``masked_select``,
``scatter``, ``index_select``):

* the elements (or the slices along ``dim``, as rows) are sorted: one stable sort of the
  flattened elements (NaN last), or, for slices, a stable sort of the rows by each column from
  the last to the first (so the rows end in lexicographic order); ``unique_consecutive`` keeps
  the input order;
* a row starts a new value where it differs from the row before (NaN differs from NaN: every
  NaN is its own value, as in torch);
* the values are the starting rows (``masked_select`` / ``index_select``), the inverse is the
  running count of starts minus one written back through the sort's permutation, the counts
  the distances between the starts (their number is read back, as torch synchronizes there).

The CPU op's meta runs the op on host values to learn the sizes; here the sizes come from the
device results. Complex values have no order (the CPU op refuses them too).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from ..tensor import _make
from .numba_cuda import full


def _zeros(shape: tuple) -> Tensor:
    return _make(full(shape, 0, np.int64), dtypes.int64)


def _pieces(x: Tensor, dim: int | None, consecutive: bool):
    """``(values, inverse, counts)`` as tensors (see the module docstring)."""
    from ..ops.movement import cat

    if dim is None:
        rows = x.reshape(-1, 1)
    else:
        rows = x.movedim(dim, 0).reshape(x.shape[dim], -1)
    n = rows.shape[0]
    if n == 0:
        empty = _zeros((0,))
        values = x.reshape(-1) if dim is None else x
        return values, _zeros(tuple(x.shape) if dim is None else (0,)), empty
    order = None
    if not consecutive:
        order = _arange(n)
        for c in reversed(range(rows.shape[1])):  # (lexicographic: last column first)
            key = rows[:, c].index_select(0, order)
            order = order.index_select(0, key.sort(stable=True)[1])
        rows = rows.index_select(0, order)
    differs = (rows[1:] != rows[:-1]).sum(1) > 0
    first = _make(full((1,), True, np.bool_), dtypes.bool)
    starts_mask = cat([first, differs], 0)
    starts = starts_mask.nonzero()[:, 0]
    rank = starts_mask.to(dtypes.int64).cumsum(0) - 1
    if order is None:
        inverse = rank
        picked = starts
    else:
        inverse = _zeros((n,)).scatter(0, order, rank)
        picked = order.index_select(0, starts)
    ends = cat([starts[1:], _make(full((1,), n, np.int64), dtypes.int64)], 0)
    counts = ends - starts
    if dim is None:
        values = x.reshape(-1).index_select(0, picked)
        inverse = inverse.reshape(tuple(x.shape))
    else:
        values = x.index_select(dim, picked)
    return values, inverse, counts


def _arange(n: int) -> Tensor:
    from ..ops.ranges import arange

    return arange(n, device="cuda")


def _unique_op(op, args, params):
    from .cuda_eager import _no_grad, unsupported
    from .cuda_lines2 import _no_order

    x = args[0]
    _no_order(op, x)
    if x.ndim == 0 and params["dim"] is not None:
        raise unsupported(op, "a 0-d input with a dim")
    out = _no_grad(lambda: _pieces(x, params["dim"], params["consecutive"]))
    data = tuple(t._data for t in out)
    assert all(isinstance(d, CudaArray) for d in data)
    return data, (x._dtype, dtypes.int64, dtypes.int64)


BY_NAME = {"unique": _unique_op, "unique_dim": _unique_op, "unique_consecutive": _unique_op}
__all__ = ["BY_NAME"]
