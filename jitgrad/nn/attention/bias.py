"""``jitgrad.nn.attention.bias``: torch's causal attention biases for
``scaled_dot_product_attention``: ``causal_upper_left`` (what ``is_causal=True`` means) and
``causal_lower_right`` (the last query aligned with the last key, as in decoding).

A ``CausalBias`` is a Tensor whose values are its materialized boolean mask (torch's holds no
meaningful values and prints the mask), so code that reads it as a plain mask gets the same
attention; ``scaled_dot_product_attention`` recognizes it and runs torch's dispatch.
"""

from __future__ import annotations

import enum
import warnings

from ... import dtypes
from ...device import device as _device
from ...ops.creation import ones
from ...tensor import Tensor
from ..._torch_function import _disabled_torch_function_impl

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """The two causal biases: ``UPPER_LEFT`` (``tril(ones(L, S))``) and ``LOWER_RIGHT``
    (``tril(ones(L, S), diagonal=S - L)``)."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal attention bias of ``variant`` for ``seq_len_q`` queries and ``seq_len_kv``
    keys, for ``scaled_dot_product_attention``'s ``attn_mask``."""

    # (no part in the __torch_function__ protocol, as torch's own subclasses)
    __torch_function__ = _disabled_torch_function_impl

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        """Args:
            variant: ``CausalVariant.UPPER_LEFT`` or ``CausalVariant.LOWER_RIGHT``.
            seq_len_q: the query's sequence length.
            seq_len_kv: the key's and value's sequence length.
        """
        if not isinstance(variant, CausalVariant):
            raise AssertionError(
                f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)
        mask = self._materialize()
        self._init(mask._data, mask.dtype)

    def _upper_left(self, device: _device) -> Tensor:
        return ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=dtypes.bool).tril()

    def _lower_right(self, device: _device) -> Tensor:
        return ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=dtypes.bool).tril(
            diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device: _device | None = None) -> Tensor:
        """The bias as a boolean mask (True: attend) on ``device`` (default cpu)."""
        device = _device("cpu") if device is None else device
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    def __repr__(self) -> str:
        return self._materialize().__repr__()


def causal_upper_left(*size: int) -> CausalBias:
    """The upper-left causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: what ``is_causal=True``
    means.

    Args:
        size: the two sequence lengths.
    """
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size: int) -> CausalBias:
    """The lower-right causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: the last query sees
    every key.

    Args:
        size: the two sequence lengths.
    """
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
