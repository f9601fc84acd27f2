"""``jitgrad.nn.utils.rnn``: padding variable-length sequences into one batch."""

from __future__ import annotations

from collections.abc import Sequence

from ...ops.creation import full
from ...ops.movement import cat, stack
from ...tensor import Tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stacks tensors of shape ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), padding each with ``padding_value`` on ``padding_side``.

    Args:
        sequences: the tensors (their trailing dims must agree).
        batch_first: put the batch dim first. Default: False.
        padding_value: the value of the padded elements. Default: 0.
        padding_side: ``"right"`` or ``"left"``. Default: ``"right"``.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0)) if hasattr(sequences, "unbind") else \
            [sequences[i] for i in range(sequences.shape[0])]
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)
