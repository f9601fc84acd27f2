"""torch's shape helpers, composed of existing ops (autograd, ``jit`` and ``vmap`` see their
pieces): the ``*stack`` family, ``atleast_*d``, ``ravel``, ``swapdims``, ``unflatten``,
``tensor_split`` and the ``*split`` family, ``broadcast_to``/``broadcast_shapes``,
``take_along_dim``, ``rot90``, ``tril_indices``/``triu_indices``, ``block_diag``, ``kron``,
``cartesian_prod``, ``inner``, ``vander`` and ``baddbmm``."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .autocast_policy import LOWER, autocast_policy
from .. import dtypes
from ._shape import wrap_dim
from .arranging import meshgrid, tensordot
from .creation import ones, tensor, zeros
from .movement import cat, stack
from .selection import where
from . import registry
from .registry import broadcast_shapes as _broadcast
from .surface import public


def _tensors(args: tuple) -> list:
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)


def _atleast(args: tuple, fix) -> Any:
    one = len(args) == 1 and not isinstance(args[0], (list, tuple))
    out = tuple(fix(t) for t in _tensors(args))
    return out[0] if one else out


@public("atleast_1d")
def atleast_1d(*tensors) -> Any:
    """Each tensor viewed with at least one dim (0-d becomes shape ``(1,)``)."""
    return _atleast(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


@public("atleast_2d")
def atleast_2d(*tensors) -> Any:
    """Each tensor viewed with at least two dims (a new leading dim of size 1)."""
    return _atleast(tensors, lambda t: t.reshape(1, 1) if t.ndim == 0 else
                    t.unsqueeze(0) if t.ndim == 1 else t)


def _3d(t):
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.ndim == 2 else t


@public("atleast_3d")
def atleast_3d(*tensors) -> Any:
    """Each tensor viewed with at least three dims (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` ->
    ``(m, n, 1)``)."""
    return _atleast(tensors, _3d)


def _nonempty(name: str, tensors) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@public("hstack")
def hstack(tensors):
    """Concatenates along dim 1 (along dim 0 when every tensor is 1-D)."""
    ts = [atleast_1d(t) for t in _nonempty("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


@public(("vstack", "row_stack"))
def vstack(tensors):
    """Concatenates along dim 0 after ``atleast_2d``."""
    return cat([atleast_2d(t) for t in _nonempty("vstack", tensors)], 0)


@public("dstack")
def dstack(tensors):
    """Concatenates along dim 2 after ``atleast_3d``."""
    return cat([atleast_3d(t) for t in _nonempty("dstack", tensors)], 2)


@public("column_stack")
def column_stack(tensors):
    """Concatenates along dim 1, 0-d and 1-D tensors as columns."""
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t
          for t in _nonempty("column_stack", tensors)]
    return cat(ts, 1)


@public("ravel", method=True)
def ravel(input):  # noqa: A002
    """The flattened tensor (a view when contiguous)."""
    return input.reshape(-1)


@public("swapdims", method=True)
def swapdims(input, dim0: int, dim1: int):  # noqa: A002
    """``transpose(input, dim0, dim1)``."""
    return input.transpose(dim0, dim1)


@public("swapaxes", method=True)
def swapaxes(input, axis0: int, axis1: int):  # noqa: A002
    """``transpose(input, axis0, axis1)``."""
    return input.transpose(axis0, axis1)


@public("unflatten", method=True)
def unflatten(input, dim: int, sizes):  # noqa: A002
    """Dim ``dim`` expanded into ``sizes`` (one of them may be -1)."""
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    rest = int(np.prod([s for s in sizes if s != -1], dtype=np.int64))
    if -1 in sizes and rest and n % rest == 0:
        sizes[sizes.index(-1)] = n // rest
    if int(np.prod(sizes, dtype=np.int64)) != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of "
                           f"dim {dim} ({n}) in the input tensor")
    shape = list(input.shape)
    return input.reshape(shape[:d] + sizes + shape[d + 1:])


def _split_at(x, bounds: list, d: int) -> tuple:
    n = x.shape[d]
    edges = [0] + [builtins.min(builtins.max(b + n if b < 0 else b, 0), n) for b in bounds] + [n]
    return tuple(x.narrow(d, lo, builtins.max(hi, lo) - lo) for lo, hi in zip(edges, edges[1:]))


@public("tensor_split", method=True)
def tensor_split(input, indices_or_sections=None, dim: int = 0, *, sections=None,  # noqa: A002
                 indices=None, tensor_indices_or_sections=None):
    """Splits into ``sections`` nearly equal pieces (the first ``n % sections`` one longer),
    or at the given indices; always views."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input.ndim)
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes one of indices_or_sections, sections, indices or "
                        "tensor_indices_or_sections")
    ios = given[0]
    if isinstance(ios, registry.Tensor):
        if ios.dtype != dtypes.long:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {str(ios.dtype).split('.')[-1].capitalize()}")
        if ios.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else [int(i) for i in ios.tolist()]
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        n = input.shape[d]
        small, extra = divmod(n, ios)
        bounds, at = [], 0
        for k in range(ios - 1):
            at += small + (1 if k < extra else 0)
            bounds.append(at)
        return _split_at(input, bounds, d)
    return _split_at(input, [int(i) for i in ios], d)


def _hvd_split(name: str, d: int, need: int, input, sections):  # noqa: A002
    if input.ndim < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int):
        n = input.shape[d]
        if sections == 0 or n % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the "
                               f"size of the dimension {n} is not divisible by the split_size "
                               f"{sections}!")
    return tensor_split(input, sections, d)


@public("hsplit", method=True)
def hsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dim 1 (dim 0 for a 1-D tensor); sections must divide evenly."""
    d = 0 if input.ndim == 1 else 1
    return _hvd_split("hsplit", d, 1, input, indices_or_sections)


@public("vsplit", method=True)
def vsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dim 0 of a tensor of at least 2 dims."""
    return _hvd_split("vsplit", 0, 2, input, indices_or_sections)


@public("dsplit", method=True)
def dsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dim 2 of a tensor of at least 3 dims."""
    return _hvd_split("dsplit", 2, 3, input, indices_or_sections)


@public("broadcast_to", method=True)
def broadcast_to(input, size):  # noqa: A002
    """``input.expand(size)``."""
    return input.expand(tuple(size))


@public("broadcast_shapes")
def broadcast_shapes(*shapes) -> Any:
    """The broadcast shape of ``shapes`` (each a sequence of ints or an int) as a ``Size``."""
    from ..tensor import Size

    fixed = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(int(v) for v in s)
        if any(v < 0 for v in s):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(s)}: "
                               f"{list(s)}")
        fixed.append(s)
    return Size(_broadcast(*fixed))


@public("take_along_dim", method=True)
def take_along_dim(input, indices, dim: int | None = None):  # noqa: A002
    """Picks values along ``dim`` at ``indices`` (broadcast against ``input`` except along
    ``dim``); with ``dim=None``, from the flattened input."""
    if indices.dtype != dtypes.long:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype._scalar_name}")
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0:  # (torch reads the size of dim 0)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    a = list(input.shape)
    b = list(indices.shape)
    a[d] = b[d] = 1
    common = list(_broadcast(tuple(a), tuple(b)))
    xs, ix = list(common), list(common)
    xs[d], ix[d] = input.shape[d], indices.shape[d]
    if indices._trace is None and not indices.is_meta and (indices < 0).any():
        indices = where(indices < 0, indices + input.shape[d], indices)  # (torch wraps them)
    return input.expand(xs).gather(d, indices.expand(ix))


@public("rot90", method=True)
def rot90(input, k: int = 1, dims=(0, 1)):  # noqa: A002
    """Rotates by ``k`` quarter turns in the plane of ``dims`` (from the first dim towards the
    second)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if d0 == d1:  # (torch names the dims as given)
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def _tri_indices(fn, row: int, col: int, offset: int, dtype, device):
    r, c = fn(row, offset, col)
    return tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1),
                  dtype=dtype or dtypes.long, device=device)


@public("tril_indices")
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None):
    """The (2, N) row and column indices of the lower triangle (``offset`` above the main
    diagonal included), row by row."""
    _check_tri_sizes("tril_indices", row, col, offset)
    return _tri_indices(np.tril_indices, row, col, offset, dtype, device)


def _check_tri_sizes(fname: str, row: Any, col: Any, offset: Any) -> None:
    from .creation import _check_int_arg

    for position, (name, value) in enumerate((("row", row), ("col", col), ("offset", offset))):
        _check_int_arg(fname, name, position + 1, value)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")  # (torch's text: no space)
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")


@public("triu_indices")
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None):
    """The (2, N) row and column indices of the upper triangle, row by row."""
    _check_tri_sizes("triu_indices", row, col, offset)
    return _tri_indices(np.triu_indices, row, col, offset, dtype, device)


@public("block_diag")
def block_diag(*tensors):
    """The tensors (0-d, 1-D rows or matrices) placed along the diagonal of one matrix."""
    ts = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        ts.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    dt = dtypes.result_type(*ts) if ts else dtypes.get_default_dtype()
    width = builtins.sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        r, c = t.shape
        parts = [zeros(r, left, dtype=dt, device=t.device), t.to(dt),
                 zeros(r, width - left - c, dtype=dt, device=t.device)]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0) if rows else zeros(0, 0, dtype=dt)


@public("kron", method=True)
def kron(input, other):  # noqa: A002
    """The Kronecker product (the shapes' ranks padded with leading 1s)."""
    n = builtins.max(input.ndim, other.ndim)
    a = input.reshape((1,) * (n - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
    a = a.reshape([v for s in a.shape for v in (s, 1)])
    b = b.reshape([v for s in b.shape for v in (1, s)])
    return (a * b).reshape([x * y for x, y in zip(a.shape[::2], b.shape[1::2])])


@public("cartesian_prod")
def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors: one row per combination (a single tensor is
    returned as is)."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


@public("inner", method=True)
def inner(input, other):  # noqa: A002
    """The sum of products over the last dims (a product when either is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


@public("vander")
def vander(x, N: int | None = None, increasing: bool = False):  # noqa: N803 - torch's name
    """The Vandermonde matrix of 1-D ``x``: columns ``x**(N-1) ... x**0`` (or increasing)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(dtypes.long)
    if n == 0:
        return zeros(x.shape[0], 0, dtype=x.dtype, device=x.device)
    cols = [ones(x.shape[0], 1, dtype=x.dtype, device=x.device)]
    if n > 1:
        cols.append(x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    out = cat(cols, 1)
    return out if increasing else out.flip(1)


def integral_coefficients(input, beta, alpha, refuse_floats: bool = False):  # noqa: A002
    """torch's ``beta`` and ``alpha`` for an integral ``input``: floats truncated (or, with
    ``refuse_floats``, addr's errors)."""
    if input.dtype.is_floating_point or input.dtype.is_complex:
        return beta, alpha
    for name, v in (("beta", beta), ("alpha", alpha)):
        if refuse_floats and isinstance(v, bool) and input.dtype is not dtypes.bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if refuse_floats and isinstance(v, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    return tuple(int(v) if isinstance(v, float) else v for v in (beta, alpha))


def summed_in_float32(compute, input, a, b):  # noqa: A002
    """``compute(input, a, b)``; for half or bfloat16 operands of one dtype, computed in float32
    and rounded once, as torch sums a low-precision product and its scaled input."""
    low = {input.dtype, a.dtype, b.dtype}
    if len(low) == 1 and low <= {dtypes.float16, dtypes.bfloat16}:
        f32 = dtypes.float32
        return compute(input.to(f32), a.to(f32), b.to(f32)).to(input.dtype)
    return compute(input, a, b)


@public("baddbmm", method=True, inplace=True)
@autocast_policy(LOWER)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (batch1 @ batch2)`` over a batch of matrices (``input`` is
    ignored, NaNs included, when ``beta`` is 0)."""
    if batch1.ndim == 3 and batch2.ndim == 3 and batch2.shape[:2] != (batch1.shape[0],
                                                                     batch1.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    return summed_in_float32(lambda i, a, b: _baddbmm(i, a, b, beta, alpha), input, batch1, batch2)


def _baddbmm(input, batch1, batch2, beta, alpha):  # noqa: A002
    beta, alpha = integral_coefficients(input, beta, alpha)
    prod = batch1.bmm(batch2)
    if alpha != 1:
        prod = prod * alpha
    shape = _broadcast(tuple(input.shape), tuple(prod.shape))  # (torch's error if it cannot)
    if beta == 0:  # input's gradient is zero, its values (NaN included) are not read
        return where(zeros(shape, dtype=dtypes.bool, device=prod.device), input, prod)
    return (input if beta == 1 else input * beta) + prod
