"""torch functions that torch itself composes of other ops (no node of their own: autograd,
``jit`` and ``vmap`` see their pieces): repeat_interleave, broadcast_tensors, meshgrid,
tensordot, diff, square, isclose, count_nonzero; and the pieces that the ops of
``torch_extras`` decompose into under ``jit`` and ``vmap`` (roll, repeat, cross, diagonal).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ._shape import wrap_dim
from .creation import tensor
from .ranges import arange
from .movement import cat, stack
from .registry import broadcast_shapes
from .surface import public


@public("repeat_interleave", method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Repeats each element ``repeats`` times (an int, or one count per element along
    ``dim``); with ``dim=None`` the flattened tensor."""
    if repeats is None:  # torch.repeat_interleave(counts): the indices repeated by count
        counts = input
        return arange(counts.shape[0], device=counts.device).repeat_interleave(counts)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if not isinstance(repeats, int) and getattr(repeats, "ndim", 1) == 0:
        repeats = int(repeats.item())
    if isinstance(repeats, int):  # as torch: a broadcast copy, then one reshape
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(x.shape)
        spread = shape[:d + 1] + [repeats] + shape[d + 1:]
        merged = shape[:d] + [n * repeats] + shape[d + 1:]
        return x.unsqueeze(d + 1).expand(spread).contiguous().view(merged)
    counts = repeats.detach().numpy() if hasattr(repeats, "detach") else np.asarray(repeats)
    if counts.shape == (1,):  # (one count for every element, as torch's)
        counts = np.repeat(counts, n)
    if counts.shape != (n,):
        raise RuntimeError("repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.shape[0] if counts.ndim else 1} and "
                           f"input.size({d}) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return x.index_select(d, tensor(np.repeat(np.arange(n), counts), device=x.device))


@public("broadcast_tensors")
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (one of that shape already is
    returned as it is, as torch's: a distribution's parameter stays the caller's leaf)."""
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


@public("meshgrid")
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D tensors: ``indexing="ij"`` (matrix, torch's default) or
    ``"xy"`` (Cartesian: the first two grids' dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
    flat = [t if t.ndim == 1 else t.reshape(-1) for t in tensors]  # (one view each, as torch)
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    grids = []
    for k, t in enumerate(flat):
        view = [1] * len(flat)
        view[k] = shape[k]
        grids.append(t.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def roll_pieces(x, shifts: tuple, dims: tuple | None):
    """``roll`` as slices and a concatenation."""
    if dims is None:
        return roll_pieces(x.reshape(-1), shifts, (0,)).reshape(tuple(x.shape))
    for s, d in zip(shifts, dims):
        n = x.shape[d]
        s = s % n if n else 0
        if s:
            x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x


def tile_pieces(x, sizes: tuple):
    """``repeat`` as a reshape, an expand and a reshape."""
    x = x.reshape((1,) * (len(sizes) - x.ndim) + tuple(x.shape))
    spread, merged = [], []
    for r, n in zip(sizes, x.shape):
        spread += [1, n]
        merged.append(r * n)
    x = x.reshape(spread)
    return x.expand([v for r, n in zip(sizes, x.shape[1::2]) for v in (r, n)]).reshape(merged)


def _diagonal_of(x, offset: int):
    n, m = x.shape
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    if length == 0:
        return x.reshape(-1)[:0]
    start = offset if offset >= 0 else -offset * m
    return x.reshape(-1)[start:start + (length - 1) * (m + 1) + 1:m + 1]


@public("tensordot")
def tensordot(a, b, dims: Any = 2):
    """Contracts ``dims`` dims of ``a`` with ``dims`` of ``b``: the last ``dims`` of ``a`` with
    the first of ``b`` (an int), or the listed pairs (two lists)."""
    if hasattr(dims, "tolist"):  # (a tensor: an int, or the two lists)
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))
    else:
        given_a, given_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(given_a) != len(given_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = [wrap_dim(d, a.ndim) for d in given_a]
    db = [wrap_dim(d, b.ndim) for d in given_b]
    for i, j, gi, gj in zip(da, db, given_a, given_b):  # (torch names the dims as given)
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {gi} and second has size {b.shape[j]} in "
                               f"dim {gj}")
    ka = [d for d in range(a.ndim) if d not in da]
    kb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da], dtype=np.int64))
    # (a full contraction is one dot of two vectors, as torch's: DotBackward0, bool's error)
    left = a.permute(ka + da).reshape((-1, k) if ka or kb else (k,))
    right = b.permute(db + kb).reshape((k, -1) if ka or kb else (k,))
    return (left @ right).reshape([a.shape[d] for d in ka] + [b.shape[d] for d in kb])


@public("diff", method=True)
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (after concatenating ``prepend`` and
    ``append``)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # (torch copies the input then, its dim unchecked: CopyBackwards)
        from .creation import empty_like

        return empty_like(input).copy_(input)
    d = wrap_dim(dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi.logical_xor(lo) if x.dtype is dtypes.bool else hi - lo  # (torch: xor of bools)
    return x


def _cross(a, b, d: int):
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@public("square", method=True, inplace=True)
def square(input):  # noqa: A002
    """``input ** 2``."""
    return input ** 2


@public("isclose", method=True)
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (equal infinities are close;
    NaNs only with ``equal_nan``)."""
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype._scalar_name} did not match {other.dtype._scalar_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = input.detach(), other.detach()
    close = a == b
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        a, b = a.to(dtypes.get_default_dtype()), b.to(dtypes.get_default_dtype())
    finite = a.isfinite() & b.isfinite()
    return close | (finite & ((a - b).abs() <= atol + rtol * b.abs()))


@public("count_nonzero", method=True)
def count_nonzero(input, dim=None):  # noqa: A002
    """The number of nonzero elements (over ``dim``: an int or a tuple)."""
    nz = input != 0
    return nz.sum() if dim is None else nz.sum(dim)
