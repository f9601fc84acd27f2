"""torch's memory-format objects, the layout of a fresh tensor like another, and the row-major
results of the ops torch gives fresh contiguous outputs (a leaf module: the factories, the
samplers, ``clone`` and those ops use them)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class memory_format:  # noqa: N801 - named like torch.memory_format
    """A memory layout request (``jitgrad.contiguous_format``, ``jitgrad.preserve_format``,
    ``jitgrad.channels_last``, ``jitgrad.channels_last_3d``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"jitgrad.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def preserved_order(shape: tuple, strides: tuple) -> list[int]:
    """The dims of a fresh tensor laid out like one of these strides, innermost first, as
    torch's ``empty_like`` (``preserve_format``) and its elementwise outputs order them: by
    stride, the smaller size first among equal strides, and a stride-0 (broadcast) dim kept
    where row-major order puts it (an insertion sort, so the order of ties is row-major's)."""

    def comes_after(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    return _insertion_order(len(shape), comes_after)


def _insertion_order(ndim: int, comes_after: Callable) -> list[int]:
    """torch's ``reorder_dimensions``: the dims innermost first, by an insertion sort from
    row-major order whose comparison may be undecided (0: try the next dim further out)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            order = comes_after(perm[dim0], perm[dim1])
            if order > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif order < 0:
                break
    return perm


def laid_out_like(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``x`` (of ``like``'s shape) laid out as torch's ``empty_like(like)``: ``like``'s strides
    when its elements fill their memory once each (a transposed or channels-last tensor), else
    dense strides in ``like``'s order of dims (``preserved_order``)."""
    if min(like.strides, default=0) < 0 or like.strides == x.strides and x.flags.c_contiguous:
        return x  # (jitgrad's negative strides are torch's copies: flip, ``[::-1]``)
    if dense_in_some_order(like):
        out = np.lib.stride_tricks.as_strided(
            np.empty(x.size, x.dtype), x.shape,
            tuple(s // like.itemsize * x.itemsize for s in like.strides))
        out[...] = x
        return out
    outer = preserved_order(like.shape, like.strides)[::-1]
    if outer == sorted(outer):
        return x
    return np.ascontiguousarray(x.transpose(outer)).transpose(np.argsort(outer))


def dense_in_some_order(x: np.ndarray) -> bool:
    """Whether the array's elements fill a block of memory once each (torch's
    ``is_non_overlapping_and_dense``)."""
    span = x.itemsize
    for size, stride in sorted(zip(x.shape, x.strides), key=lambda d: abs(d[1])):
        if size > 1 and abs(stride) != span:
            return False
        span *= size
    return True


def row_major(impl: Callable) -> Callable:
    """An op's ``impl`` whose array results are row-major, as torch allocates the outputs of
    reductions, scans, ``layer_norm``, ``masked_fill``, ``tril``, ``repeat``: of a
    transposed or channels-last input too, so that a ``view`` of them works as in torch."""
    def run(*args, **kwargs):
        out = impl(*args, **kwargs)
        if type(out) is tuple:
            return tuple(_c_order(o) for o in out)
        return _c_order(out)

    run.__name__ = getattr(impl, "__name__", "impl")
    return run


def _c_order(a):
    if type(a) is np.ndarray and not a.flags.c_contiguous:
        return np.asarray(a, order="C")
    return a


def suggested_layout(impl: Callable) -> Callable:
    """An op's ``impl`` whose result follows torch's ``suggest_memory_format`` of its input
    (``roll``): channels-last for a channels-last input, else row-major."""
    def run(x, *args, **kwargs):
        out = _c_order(impl(x, *args, **kwargs))
        if out.shape == x.shape and _channels_last(x):
            return np.moveaxis(np.ascontiguousarray(np.moveaxis(out, 1, -1)), -1, 1)
        return out

    return run


def keeps_channels_last(impl: Callable) -> Callable:
    """An op's ``impl`` whose results of the input's rank are channels-last when its input is
    (torch's ``suggest_memory_format`` for pooling, batch norm, padding, resizing and
    transposed convolution), whatever their spatial sizes."""
    def run(x, *args, **kwargs):
        out = impl(x, *args, **kwargs)
        if not _channels_last(x):
            return out
        if type(out) is tuple:
            return tuple(_to_channels_last(o, x.ndim) for o in out)
        return _to_channels_last(out, x.ndim)

    run.__name__ = getattr(impl, "__name__", "impl")
    return run


def _to_channels_last(a, ndim: int):
    if type(a) is not np.ndarray or a.ndim != ndim or _channels_last(a) or a.shape[1] == 1:
        return a
    return channels_last_array(a)


def channels_last_array(x: np.ndarray) -> np.ndarray:
    """A copy of ``x`` (N, C, *spatial) laid out channels-last in memory, seen as (N, C, ...)
    (the strides of torch's ``channels_last`` / ``channels_last_3d``); a plain copy of an array
    with no spatial dims (the public functions refuse those ranks with torch's errors)."""
    if x.ndim < 3:
        return np.array(x, copy=True)
    moved = np.moveaxis(x, 1, -1)
    out = np.empty(moved.shape, x.dtype)  # (not ascontiguousarray: a copy, with fresh strides
    out[...] = moved  # for C = 1 too, torch's (N, 1, H, W) channels-last strides)
    return np.moveaxis(out, -1, 1)


def follow_channels_last(out, input):
    """``out`` (a tensor just made from ``input`` by several ops) re-laid channels-last in
    memory when ``input`` is, as torch's single kernel would have allocated it (its values
    unchanged; eager CPU tensors only)."""
    if out._trace is not None or input._trace is not None or out._base is not None:
        return out  # (a tracer has no memory; a view's layout is its base's)
    data = out._data
    if type(data) is np.ndarray and type(input._data) is np.ndarray \
            and _channels_last(input._data):
        out._data = _to_channels_last(data, input._data.ndim)
    return out


def column_major(impl: Callable, outputs: tuple = (0,)) -> Callable:
    """An op's ``impl`` whose ``outputs`` (of two or more dims) are column-major in their last
    two dims, as LAPACK writes torch's results (``qr``, ``inv``, ``solve``, ``cholesky``, the
    eigen- and singular vectors, ``lu_factor``'s LU): strides ``(..., 1, rows)``, which
    ``stride()``, ``is_contiguous()``, ``view`` and the ``*_like`` random fills see."""
    def run(*args, **kwargs):
        out = impl(*args, **kwargs)
        if type(out) is tuple:
            return tuple(_fortran(o) if i in outputs else o for i, o in enumerate(out))
        return _fortran(out)

    run.__name__ = getattr(impl, "__name__", "impl")
    return run


def to_column_major(t):
    """``t`` (a tensor just made by several ops) re-laid column-major in its last two dims, as
    LAPACK writes torch's results; its values unchanged (eager CPU tensors, not views)."""
    if t._trace is None and t._base is None and type(t._data) is np.ndarray:
        t._data = _fortran(t._data)
    return t


def _fortran(a):
    if type(a) is not np.ndarray or a.ndim < 2 or a.shape[-1] <= 1 or a.shape[-2] <= 1:
        return a
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


def concatenated_layout(out: np.ndarray, xs: tuple) -> np.ndarray:
    """``cat``/``stack``'s result laid out as torch's: as NumPy leaves it when every input is
    channels-last (torch keeps that format), else row-major."""
    if type(out) is not np.ndarray or out.flags.c_contiguous:
        return out
    if xs and all(_channels_last(x) for x in xs):
        return out
    return np.asarray(out, order="C")


def _channels_last(x) -> bool:
    """Whether ``x`` is a 4-d or 5-d array laid out channels-last (and not also row-major)."""
    return type(x) is np.ndarray and x.ndim in (4, 5) and not x.flags.c_contiguous \
        and np.moveaxis(x, 1, -1).flags.c_contiguous


def _broadcast_strides(a: np.ndarray, shape: tuple) -> list[int] | None:
    """``a``'s strides in elements over the broadcast ``shape`` (0 where it is broadcast), or
    None for a negative stride (jitgrad's flipped copies: left to NumPy)."""
    lead = len(shape) - a.ndim
    out = [0] * lead
    for size, stride, full in zip(a.shape, a.strides, shape[lead:]):
        if stride < 0:
            return None
        out.append(0 if size == 1 and full != 1 else stride // a.itemsize)
    return out


def _dense_strides(shape: tuple, outer_to_inner: list[int]) -> list[int]:
    strides = [0] * len(shape)
    step = 1
    for d in reversed(outer_to_inner):
        strides[d] = step
        step *= shape[d]
    return strides


def _contiguous_ignoring_ones(shape: tuple, strides: list[int]) -> bool:
    step = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != step:
                return False
            step *= size
    return True


def _pointwise_order(shape: tuple, operands: list) -> list[int] | None:
    """Torch's TensorIterator order of the dims of an elementwise result (outermost first), or
    None for row-major: same-shape operands all row-major, all channels-last, or all dense with
    one set of strides keep that layout; otherwise an insertion sort where, for each pair of
    dims, the first operand whose strides tell them apart decides (broadcast dims tell
    nothing; equal strides put the smaller size inside)."""
    same = [s for a, s in operands if a.shape == shape]
    if len(same) == len(operands):
        if all(_contiguous_ignoring_ones(shape, s) for s in same):
            return None
        if len(shape) == 4 and all(_contiguous_ignoring_ones(
                (shape[0], shape[2], shape[3], shape[1]), [s[0], s[2], s[3], s[1]])
                for s in same):
            return [0, 2, 3, 1]
        first = same[0]
        if all(s == first for s in same) and all(dense_in_some_order(a) for a, _ in operands):
            return preserved_order(shape, first)[::-1]

    def comes_after(d0: int, d1: int) -> int:
        for _, strides in operands:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    outer = _insertion_order(len(shape), comes_after)[::-1]
    return None if outer == sorted(outer) else outer


def pointwise_layout(out: np.ndarray, arrays: tuple) -> np.ndarray:
    """``out``, an elementwise result of ``arrays`` (NumPy's: where operands disagree about the
    order of dims, row-major order wins), laid out as torch allocates it (the first operand
    that orders two dims decides: ``channels_last + contiguous`` is channels-last)."""
    shape = out.shape
    operands = []
    for a in arrays:
        if type(a) is np.ndarray and a.ndim:
            strides = _broadcast_strides(a, shape)
            if strides is None:
                return out
            operands.append((a, strides))
    if not operands:
        return out
    outer = _pointwise_order(shape, operands)
    if outer is None:
        return out if out.flags.c_contiguous else np.ascontiguousarray(out)
    want = _dense_strides(shape, outer)
    if all(size == 1 or stride // out.itemsize == w
           for size, stride, w in zip(shape, out.strides, want)):
        return out
    return np.ascontiguousarray(out.transpose(outer)).transpose(np.argsort(outer))


def mixed_layouts(arrays: tuple) -> bool:
    """Whether NumPy's layout of an elementwise result of ``arrays`` may differ from torch's:
    two or more arrays of rank 2 or more, one of them not row-major."""
    n = 0
    mixed = False
    for a in arrays:
        if type(a) is np.ndarray and a.ndim > 1:
            n += 1
            if not a.flags.c_contiguous:
                mixed = True
    return mixed and n > 1
