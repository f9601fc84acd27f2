"""``jitgrad.nn.utils.rnn``: padding variable-length sequences into one batch, and packing them
(``PackedSequence``) so that the recurrent layers skip the padding, as torch's."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...ops.creation import full, tensor
from ...ops.movement import _plain_arrays, cat, stack
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]

_UNSORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
             "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
             "to sidestep this requirement if you do not need ONNX exportability.")


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                    "unsorted_indices"])):
    """The time steps of a batch of sequences, longest first, packed one after another: ``data``
    holds step 0 of every sequence, then step 1 of those that are that long, ...;
    ``batch_sizes[t]`` is how many sequences have a step ``t``. ``sorted_indices`` (or None)
    orders the original batch by decreasing length; ``unsorted_indices`` undoes it. Make one
    with ``pack_padded_sequence`` or ``pack_sequence``, not directly."""

    __slots__ = ()

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` moved or cast with ``Tensor.to``; the indices stay (on ``data``'s device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned memory (False: jitgrad's CPU memory is not pinned)."""
        return self.data.is_pinned()

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` on the GPU (``Tensor.cuda``'s arguments)."""
        data = self.data.cuda(*args, **kwargs)
        return self.to(data.device)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` on the CPU."""
        return self.to("cpu")


def _cast(name: str, dtype_name: str):
    def cast(self: PackedSequence) -> PackedSequence:
        from ... import dtypes

        return self.to(dtype=getattr(dtypes, dtype_name))

    cast.__name__ = name
    cast.__doc__ = f"``data`` cast to {dtype_name} (the indices stay int64)."
    return cast


for _name, _dtype in (("double", "float64"), ("float", "float32"), ("half", "float16"),
                      ("long", "int64"), ("int", "int32"), ("short", "int16"),
                      ("char", "int8"), ("byte", "uint8")):
    setattr(PackedSequence, _name, _cast(_name, _dtype))


def _invert(permutation: Tensor) -> Tensor:
    p = permutation.numpy()
    inverse = np.empty_like(p)
    inverse[p] = np.arange(len(p))
    return tensor(inverse, device=permutation.device)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (``None`` stays ``None``)."""
    if permutation is None:
        return None
    from ...ops.creation import empty_like
    from ...ops.ranges import arange

    inverse = empty_like(permutation, memory_format=None)
    inverse.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return inverse


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return lengths.cpu().numpy().astype(np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of
    ``lengths``.

    Args:
        input: the padded batch.
        lengths: the length of each sequence (a list or a 1-D CPU tensor).
        batch_first: ``input`` is ``(B, T, *)``. Default: False.
        enforce_sorted: the lengths must be decreasing (else the batch is sorted here and the
            permutation kept in ``sorted_indices``). Default: True.
    """
    if isinstance(lengths, Tensor):
        n, where = lengths.cpu().numpy().astype(np.int64), str(lengths.device)
    else:
        n, where = np.asarray(lengths, dtype=np.int64), "cpu"
    sorted_indices = None
    if not enforce_sorted:
        if n.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if n.ndim == 1:
            order = np.argsort(-n, kind="stable")
            n = n[order]
            sorted_indices = tensor(order, device=input.device)
            input = input.index_select(0 if batch_first else 1, sorted_indices)  # noqa: A001
    if batch_first:
        input = input.transpose(0, 1)  # noqa: A001
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if n.ndim != 1 or where != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{n.ndim}D {where} Long tensor")
    if len(n) != input.size(1):
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(n)} "
                           f"(batch_size={input.size(1)})")
    if n[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if np.any(n[1:] > n[:-1]):
        raise RuntimeError(_UNSORTED)
    if n[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to the "
                           f"maximum length {int(n[0])}, but got {input.shape[0]}")
    batch_sizes = np.array([(n > t).sum() for t in range(int(n[0]))], dtype=np.int64)
    data = cat([input[t, :int(b)] for t, b in enumerate(batch_sizes)])
    unsorted = None if sorted_indices is None else _invert(sorted_indices)
    return PackedSequence(data, tensor(batch_sizes), sorted_indices, unsorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Undoes ``pack_padded_sequence``: the padded batch (in the original order) and the
    lengths (a CPU int64 tensor).

    Args:
        sequence: the packed batch.
        batch_first: return ``(B, T, *)`` instead of ``(T, B, *)``. Default: False.
        padding_value: the value of the padding. Default: 0.
        total_length: pad to this many steps (at least the longest sequence).
    """
    data, batch_sizes = sequence.data, sequence.batch_sizes.numpy()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
    else:
        total_length = steps
    batch = int(batch_sizes[0]) if steps else 0
    rows, start = [], 0
    for b in batch_sizes:
        step = data[start:start + int(b)]
        start += int(b)
        if b < batch:
            step = cat([step, full((batch - int(b), *data.shape[1:]), padding_value,
                                   dtype=data.dtype, device=data.device)])
        rows.append(step)
    rows += [full((batch, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
             for _ in range(total_length - steps)]
    padded = stack(rows) if rows else data.reshape(0, batch, *data.shape[1:])
    lengths = np.array([(batch_sizes > i).sum() for i in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of tensors of shape ``(L_i, *)`` (decreasing ``L_i`` unless
    ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences that ``pack_sequence`` packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """The list of sequences of ``lengths`` in a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences.unbind(0),
                                           _lengths_array(lengths))]


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stacks tensors of shape ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), padding each with ``padding_value`` on ``padding_side``.

    As torch's kernel: the result takes the first sequence's dtype and trailing dims, and each
    sequence is copied into its slot (cast to that dtype, broadcast to those dims).

    Args:
        sequences: the tensors (an iterable; a tensor gives its rows).
        batch_first: put the batch dim first. Default: False.
        padding_value: the value of the padded elements. Default: 0.
        padding_side: ``"right"`` or ``"left"``. Default: ``"right"``.
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    if first.ndim == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    longest = max(s.size(0) for s in sequences)
    batch = len(sequences)
    dims = (batch, longest) if batch_first else (longest, batch)
    out = full((*dims, *first.shape[1:]), padding_value, dtype=first.dtype, device=first.device)
    arrays = _plain_arrays(list(sequences), stacked=True)
    if arrays is not None and all(a.shape[1:] == out.shape[2:] for a in arrays):
        # a batch of data: straight into the array (no autograd to see)
        for i, s in enumerate(sequences):
            n = s.shape[0]
            start = longest - n if padding_side == "left" else 0
            rows = slice(start, start + n)
            out._data[(i, rows) if batch_first else (rows, i)] = s._data
        return out
    for i, s in enumerate(sequences):
        n = s.size(0)
        start = longest - n if padding_side == "left" else 0
        slot = out.select(0, i).narrow(0, start, n) if batch_first else \
            out.narrow(0, start, n).select(1, i)
        slot.copy_(s)
    return out

