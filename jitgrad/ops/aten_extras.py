"""torch's remaining top-level ATen functions built on the existing ops: ``segment_reduce``,
``empty_permuted``, ``slice_inverse`` and the in-place ``as_strided_``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .storage import set_
from .surface import public
from .surface24_math import as_strided

_REDUCES = {"sum": "sum", "mean": "mean", "max": "amax", "amax": "amax", "min": "amin",
            "amin": "amin", "prod": "prod"}
_EMPTY = {"sum": 0.0, "mean": float("nan"), "amax": float("-inf"), "amin": float("inf"),
          "prod": 1.0}


def _lengths_of(data: Any, lengths: Any, indices: Any, offsets: Any) -> np.ndarray:
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    given = lengths if lengths is not None else offsets
    if given.dtype not in (dtypes.int64, dtypes.int32):
        kernel = "lengths" if lengths is not None else "offsets"
        raise NotImplementedError(f'"_segment_reduce_{kernel}_cpu_kernel1" not implemented for '
                                  f"'{given.dtype._scalar_name}'")
    arr = given.detach().cpu().numpy().astype(np.int64)
    return arr if lengths is not None else np.diff(arr, axis=-1)


@public("segment_reduce")
def segment_reduce(data: Any, reduce: str, *, lengths: Any = None, indices: Any = None,
                   offsets: Any = None, axis: int = 0, unsafe: bool = False,
                   initial: Any = None) -> Any:
    """Reduces consecutive segments of ``data`` along ``axis``.

    Args:
        data: the values.
        reduce: ``"sum"``, ``"mean"``, ``"max"``/``"amax"``, ``"min"``/``"amin"`` or
            ``"prod"``.
        lengths: the segment lengths, of shape ``data.shape[:axis] + (segments,)``.
        indices: not supported (as torch).
        offsets: instead of ``lengths``, the segment boundaries (``segments + 1`` of them).
        axis: the dim the segments run along (``lengths.dim() - 1``).
        unsafe: skip the check that the lengths add up to ``data.size(axis)``.
        initial: a value each segment's reduction starts from (the result of an empty one).

    Returns:
        ``data.shape[:axis] + (segments,) + data.shape[axis + 1:]``: an empty segment gives
        ``initial``, else 0 (sum), nan (mean), -inf (max), inf (min) or 1 (prod). Gradients
        are those of the reductions (a max/min's shared among ties, as torch).
    """
    from .creation import full
    from .movement import stack

    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    how = _REDUCES[reduce]
    lens = _lengths_of(data, lengths, indices, offsets)
    axis = axis % max(data.ndim, 1)
    if axis != lens.ndim - 1:  # (the segments run along the lengths' last dim)
        kind = "lengths" if lengths is not None else "offsets"
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {kind} "
                           f"but got {axis}.")
    if (lens < 0).any():
        raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    if not unsafe and (lens.sum(-1) != data.shape[axis]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    lead = data.shape[:axis]
    rows = data.reshape((-1,) + tuple(data.shape[axis:]))
    lens = lens.reshape(-1, lens.shape[-1])
    rest = tuple(data.shape[axis + 1:])
    out_rows = []
    for b in range(rows.shape[0]):
        starts = np.concatenate([[0], np.cumsum(lens[b])[:-1]]) if lens.shape[1] else []
        segments = []
        for start, n in zip(starts, lens[b]):
            start, n = int(start), int(n)
            if n == 0:
                empty = _EMPTY[how] if initial is None else initial
                segments.append(full(rest, empty, dtype=data.dtype, device=data.device))
                continue
            piece = rows[b, start:start + n]
            segments.append(_reduce(piece, how, initial, n))
        out_rows.append(stack(segments) if segments else
                        full((0,) + rest, 0, dtype=data.dtype, device=data.device))
    return stack(out_rows).reshape(tuple(lead) + (lens.shape[1],) + rest)


def _reduce(piece: Any, how: str, initial: Any, n: int) -> Any:
    """One non-empty segment (its dim 0) reduced, starting from ``initial``."""
    if how == "mean":
        total = piece.sum(0)
        return (total if initial is None else total + initial) / n
    out = getattr(piece, how)(0)
    if initial is None:
        return out
    if how == "sum":
        return out + initial
    if how == "prod":
        return out * initial
    return out.clamp(min=initial) if how == "amax" else out.clamp(max=initial)


@public("empty_permuted")
def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Any:
    """An uninitialized tensor of shape ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first): ``empty_permuted((2, 3, 4), (2, 0, 1))`` has
    strides ``(3, 1, 6)``.

    Args:
        size: the logical shape.
        physical_layout: a permutation of the dims, outermost in memory first.
        dtype, layout, device, requires_grad, pin_memory: as ``empty``'s.
    """
    from .creation import empty

    size, perm = tuple(int(s) for s in size), tuple(int(p) for p in physical_layout)
    if len(size) != len(perm):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}")
    if len(set(perm)) != len(perm) or any(not 0 <= p < len(perm) for p in perm):
        raise RuntimeError("Duplicate dim not allowed")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    # (layout: strided, the only one; pin_memory: nothing to pin on the CPU)
    physical = empty(tuple(size[p] for p in perm), dtype=dtype, device=device)
    out = physical.permute(*inverse) if perm else physical
    out = out.detach()  # (a view of nothing the caller holds: a leaf)
    if requires_grad:
        out.requires_grad_(True)
    return out


@public("slice_inverse", method=True)
def slice_inverse(input: Any, src: Any, dim: int = 0, start: Any = None,  # noqa: A002
                  end: Any = None, step: int = 1) -> Any:
    """The inverse of ``src.slice(dim, start, end, step)`` (functionalization's): ``input``'s
    storage seen with ``src``'s sizes, strides and storage offset, i.e.
    ``input.as_strided(src.size(), src.stride(), src.storage_offset())`` (the slice
    arguments only say which slice ``input`` stands for)."""
    return as_strided(input, tuple(src.shape), src.stride(), src.storage_offset())


@public("as_strided_", method=True)
def as_strided_(input: Any, size: Any, stride: Any,  # noqa: A002
                storage_offset: Any = None) -> Any:
    """In-place version of ``as_strided``: ``input`` becomes the view of its storage with
    ``size``, ``stride`` and ``storage_offset`` (default: its own), and is returned.

    Tensors that take part in autograd are refused: a leaf that requires grad with torch's
    error, a non-leaf because jitgrad's ``as_strided`` (which carries gradients) copies."""
    from ..autograd.grad_mode import is_grad_enabled

    if input._grad_fn is not None and is_grad_enabled():
        raise NotImplementedError("as_strided_ of a tensor with autograd history is not "
                                  "supported in jitgrad (use as_strided, which records a "
                                  "gradient)")
    if input.is_cuda:
        raise NotImplementedError("as_strided_ of a cuda tensor is not supported in jitgrad")
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    return set_(input, input, offset, size, stride)

