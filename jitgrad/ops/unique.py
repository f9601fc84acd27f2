"""``unique`` and ``unique_consecutive``, as torch's: sorted unique values (of the flattened input,
or of the slices along ``dim``), with the inverse indices and the counts on request.

The number of values depends on the data, so these run eagerly only (under ``jit`` they raise the
data-dependent-shape error). As in torch, the values of a tensor that requires grad get a node
(``Unique2Backward0``, ``UniqueDimBackward0``, ``UniqueConsecutiveBackward0``) whose backward
raises: the derivative is not implemented. NaNs are all distinct, as in torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ._shape import wrap_dim
from .registry import OPAQUE, apply, defop
from .op_fields import no_derivative
from .selection import _data_dependent
from .surface import public


def _unique_impl(x, dim, consecutive):
    if consecutive:
        return _consecutive(x, dim)
    if dim is None:
        values, inverse, counts = np.unique(x.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        return values, inverse.reshape(x.shape).astype(np.int64), counts.astype(np.int64)
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def _consecutive(x, dim):
    rows = x.reshape(-1, 1) if dim is None else np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    n = rows.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        changed = np.any(rows[1:] != rows[:-1], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(changed) + 1]).astype(np.int64)
    counts = np.diff(np.append(starts, n)).astype(np.int64)
    inverse = np.repeat(np.arange(len(starts), dtype=np.int64), counts)
    if dim is None:
        return x.reshape(-1)[starts], inverse.reshape(x.shape), counts
    return np.take(x, starts, axis=dim), inverse, counts


def _unique_meta(x, dim, consecutive):
    _data_dependent("unique_consecutive" if consecutive else "unique", x)
    if x.dtype.is_complex:
        kernel = "unique" if dim is None else "unique_dim"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{x.dtype._scalar_name}'")
    values, inverse, counts = _unique_impl(np.asarray(x._data), dim, consecutive)
    return ((values.shape, inverse.shape, counts.shape), (x.dtype, dtypes.int64, dtypes.int64))


def _unique_op(name: str, node_name: str, derivative_name: str):
    rule = no_derivative(derivative_name)
    return defop(name, _unique_impl, kind=OPAQUE, meta=_unique_meta, n_outputs=3,
                 node_name=node_name, vjp=rule, jvp=rule)


UNIQUE = _unique_op("unique", "Unique2Backward0", "_unique2")
UNIQUE_DIM = _unique_op("unique_dim", "UniqueDimBackward0", "unique_dim")
UNIQUE_CONSECUTIVE = _unique_op("unique_consecutive", "UniqueConsecutiveBackward0",
                                "unique_consecutive")


def _select(values, inverse, counts, return_inverse: bool, return_counts: bool) -> Any:
    if not (return_inverse or return_counts):
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())


@public("unique", method=True)
def unique(input, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The sorted unique elements of ``input`` (or unique slices along ``dim``), and on request
    the index of each element's value in them (``return_inverse``) and how often each occurs
    (``return_counts``). ``sorted=False`` sorts too, as torch does on CPU."""
    if dim is None:
        out = apply(UNIQUE, input, dim=None, consecutive=False)
    else:
        d = wrap_dim(dim, max(input.ndim, 1))
        out = apply(UNIQUE_DIM, input, dim=d, consecutive=False)
    return _select(*out, return_inverse, return_counts)


@public("unique_consecutive", method=True)
def unique_consecutive(input, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None):
    """Collapses each run of equal consecutive elements (or slices along ``dim``) to one."""
    d = None if dim is None else wrap_dim(dim, max(input.ndim, 1))
    out = apply(UNIQUE_CONSECUTIVE, input, dim=d, consecutive=True)
    return _select(*out, return_inverse, return_counts)
