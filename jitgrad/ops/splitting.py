"""``split``, ``chunk`` and their ops (``split``, ``split_with_sizes`` and torch's
``unsafe_`` twins): the pieces are NumPy views of the input; a piece's gradient is the
concatenation of the pieces' gradients."""

from __future__ import annotations

import builtins

import numpy as np

from ._shape import wrap_dim
from .movement import cat
from .registry import LINEAR, MOVEMENT, MULTI_OUTPUT_VIEW, apply, defop
from .surface import public


def _split_meta(x, sizes, dim):
    shape = tuple(x.shape)
    outs = tuple(shape[:dim] + (s,) + shape[dim + 1:] for s in sizes)
    return outs, (x.dtype,) * len(sizes)


def _split_impl(x, sizes, dim):
    bounds = np.cumsum(sizes)[:-1].tolist()
    return tuple(np.split(x, bounds, axis=dim))


def _split_vjp(grads, ans, x, sizes, dim):
    return (cat(list(grads), dim),)


# (torch's multi-output views: a piece may not be changed in place while autograd records)
SPLIT = defop("split", _split_impl, kind=MOVEMENT, meta=_split_meta, n_outputs=0,
              view=MULTI_OUTPUT_VIEW, vjp=_split_vjp, jvp=LINEAR)
SPLIT_WITH_SIZES = defop("split_with_sizes", _split_impl, kind=MOVEMENT, meta=_split_meta,
                         n_outputs=0, view=MULTI_OUTPUT_VIEW, vjp=_split_vjp, jvp=LINEAR)
# torch's unsafe_split/unsafe_chunk (its RNN cells' gates): the same pieces, their own nodes,
# and pieces that may be changed in place
UNSAFE_SPLIT = defop("unsafe_split", _split_impl, kind=MOVEMENT, meta=_split_meta, n_outputs=0,
                     view=True, vjp=_split_vjp, jvp=LINEAR)
UNSAFE_SPLIT_WITH_SIZES = defop("unsafe_split_with_sizes", _split_impl, kind=MOVEMENT,
                                meta=_split_meta, n_outputs=0, view=True, vjp=_split_vjp,
                                jvp=LINEAR)


@public(method="split")
def _split_method(self, split_size, dim: int = 0):
    """``Tensor.split``: as ``split``, with torch's argument name for the method."""
    return split(self, split_size, dim)


@public("split")
def split(tensor, split_size_or_sections, dim: int = 0):
    """Splits into chunks of ``split_size`` (the last may be smaller) or of the given sizes."""
    return split_by(tensor, split_size_or_sections, dim, SPLIT, SPLIT_WITH_SIZES)


def split_by(tensor, split_size_or_sections, dim: int, by_size, by_sizes):
    """``split`` recorded as the op ``by_size`` (one size) or ``by_sizes`` (a list)."""
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, int) and split_size_or_sections < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size_or_sections}")
    d = wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size == 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = tuple(builtins.min(size, n - i) for i in range(0, n, size)) if n else (0,)
        return apply(by_size, tensor, sizes=sizes, dim=d)
    sizes = tuple(int(s) for s in split_size_or_sections)
    if builtins.sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {d}), but got split_sizes={list(sizes)}")
    return apply(by_sizes, tensor, sizes=sizes, dim=d)


@public("chunk", method=True)
def chunk(input, chunks: int, dim: int = 0):  # noqa: A002
    """Splits into ``chunks`` nearly equal pieces (torch.chunk)."""
    size = chunk_sizes(input, chunks, dim)
    d = wrap_dim(dim, input.ndim)
    if size is None:  # a dim of size 0: ``chunks`` empty pieces (torch's split_with_sizes)
        return apply(SPLIT_WITH_SIZES, input, sizes=(0,) * chunks, dim=d)
    return split(input, size, d)


def chunk_sizes(input, chunks: int, dim: int = 0):  # noqa: A002
    """The split size ``chunk`` uses (after its checks), or None for a dim of size 0 (then it
    makes ``chunks`` empty pieces)."""
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = input.shape[wrap_dim(dim, input.ndim)]
    return builtins.max(-(-n // chunks), 1) if n else None
