"""``jitgrad.nn.attention.flex_attention``: attention with a user score modification and a
block-sparse mask (torch.nn.attention.flex_attention's API).

jitgrad runs torch's math reference (what torch's eager mode runs): the scores
``query @ key^T * scale`` in float32 (float64 for float64 inputs), ``score_mod(score, b, h,
q_idx, kv_idx)`` applied to every score, the masked positions set to -inf, a softmax whose
fully masked rows are 0 (their logsumexp is -inf), and the product with ``value``. Everything
is jitgrad ops, so gradients reach ``query``, ``key``, ``value`` and every tensor the
``score_mod`` captures (a learned bias), on the CPU too (torch's CPU build has no backward).

``score_mod`` and ``mask_mod`` are first called once with broadcast index tensors
(``b: (B,1,1,1)``, ``h: (1,H,1,1)``, ``q_idx: (1,1,L,1)``, ``kv_idx: (1,1,1,S)``), which is
one vectorized evaluation for the functions written with elementwise ops and indexing, as
flex attention's examples are. When that call raises or its result is not a (B, H, L, S)
broadcast, the function is run under ``jitgrad.func.vmap`` over the four indices instead
(torch's way: each call then sees scalars).

A ``block_mask`` masks as torch's kernels do: a position takes part when its block is a full
block, or a partial block where ``mask_mod`` is True. For a mask from ``create_block_mask``
that is exactly ``mask_mod``; for a hand-built ``BlockMask.from_kv_blocks`` layout it also
drops the blocks the layout leaves out (torch's eager CPU reference ignores the layout there).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, NamedTuple, TypedDict

import numpy as np

import jitgrad
from jitgrad import Tensor

from ._flex_block_mask import (
    _DEFAULT_SPARSE_BLOCK_SIZE,
    _LARGE_SPARSE_BLOCK_SIZE,
    BlockMask,
    _dense_to_ordered,
    _mask_mod_signature,
    _sliced_mask_mod_error,
    noop_mask,
)
from ._flex_math import (
    _apply_mod,
    _check_block_mask_lengths,
    _check_inputs,
    _check_kernel_options,
    _math_attention,
)

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions",
           "create_block_mask", "create_mask", "or_masks", "and_masks", "noop_mask"]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_Backend = Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]
_WARNINGS_SHOWN: set[str] = set()


class FlexKernelOptions(TypedDict, total=False):
    """torch's kernel options; jitgrad checks ``BACKEND`` and otherwise ignores them (it has
    one implementation, the math reference)."""

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_M1: int
    BLOCK_N1: int
    BLOCK_M2: int
    BLOCK_N2: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    kpack: int
    matrix_instr_nonkdim: int
    waves_per_eu: int
    BACKEND: _Backend


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention`` returns."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs of ``flex_attention`` (None where not requested)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _ModificationType(Enum):
    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn: Callable[..., Any]) -> _ModificationType:
    """A score_mod has 5 positional parameters, a mask_mod 4 (torch's rule)."""
    if hasattr(fn, "__code__"):
        num = fn.__code__.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    else:
        import inspect

        num = sum(1 for p in inspect.signature(fn).parameters.values()
                  if p.default is inspect.Parameter.empty)
    if num not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {num}")
    return _ModificationType.SCORE_MOD if num == 5 else _ModificationType.MASK_MOD


def _identity(score: Tensor, batch: Tensor, head: Tensor, token_q: Tensor,
              token_kv: Tensor) -> Tensor:
    return score


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the union of provided mask_mods."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_zeros((), dtype=jitgrad.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the intersection of provided mask_mods."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_ones((), dtype=jitgrad.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


def _default_device(device: Any) -> Any:
    if device is None:
        return jitgrad.accelerator.current_accelerator() or "cpu"
    return device


def create_mask(mod_fn: _score_mod_signature | _mask_mod_signature, B: int | None,  # noqa: N803
                H: int | None, Q_LEN: int, KV_LEN: int, device: Any = None) -> Tensor:  # noqa: N803
    """The (B, H, Q_LEN, KV_LEN) bool mask of a mask_mod (or of a score_mod: True where it
    does not give -inf).

    Args:
        mod_fn: a mask_mod ``(b, h, q_idx, kv_idx) -> bool`` or a score_mod.
        B: batch size (None: 1).
        H: number of query heads (None: 1).
        Q_LEN: query length.
        KV_LEN: key/value length.
        device: the mask's device.

    Returns:
        The mask.
    """
    device = _default_device(device)
    B = 1 if B is None else B
    H = 1 if H is None else H
    sizes = (B, H, Q_LEN, KV_LEN)
    if _get_mod_type(mod_fn) is _ModificationType.SCORE_MOD:
        out = _apply_mod(mod_fn, jitgrad.zeros(sizes, device=device), sizes, device)
        return jitgrad.where(jitgrad.isneginf(out), False, True).expand(sizes).contiguous()
    return _apply_mod(mod_fn, None, sizes, device).expand(sizes).contiguous()


def _convert_mask_to_block_mask(mask: np.ndarray, q_block: int, kv_block: int,
                                separate_full_blocks: bool) -> tuple[np.ndarray,
                                                                     np.ndarray | None]:
    """An element mask (B, H, Q, KV) -> (partial, full) 0/1 block grids (int8)."""
    while mask.ndim < 4:
        mask = mask[None]
    pad_q = -mask.shape[-2] % q_block
    pad_kv = -mask.shape[-1] % kv_block
    mask = np.pad(mask, ((0, 0), (0, 0), (0, pad_q), (0, pad_kv)))
    B, H, Q, KV = mask.shape
    sums = mask.reshape(B, H, Q // q_block, q_block, KV // kv_block,
                        kv_block).sum(axis=(3, 5))
    if separate_full_blocks:
        full_size = q_block * kv_block
        return (((sums > 0) & (sums < full_size)).astype(np.int8),
                (sums == full_size).astype(np.int8))
    return (sums > 0).astype(np.int8), None


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None, Q_LEN: int,  # noqa: N803
                      KV_LEN: int, device: Any = None,  # noqa: N803
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,  # noqa: N803
                      _compile: bool = False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    """A BlockMask from a mask_mod.

    Args:
        mask_mod: ``(b, h, q_idx, kv_idx) -> bool``: which positions take part.
        B: batch size (None: 1, broadcast over the batch).
        H: number of query heads (None: 1, broadcast over the heads).
        Q_LEN: query length.
        KV_LEN: key/value length.
        device: the mask's device.
        BLOCK_SIZE: block size, an int or (query, key/value).
        _compile: deprecated in torch (it compiled the mask creation); ignored.
        separate_full_blocks: keep the fully unmasked blocks apart (``full_kv_*``).
        compute_dq_write_order: torch's metadata for a deterministic GPU backward (not
            supported: jitgrad has no block-sparse kernel).
        dq_kv_order: the order that metadata would use.

    Returns:
        The BlockMask.
    """
    device = _default_device(device)
    if _get_mod_type(mask_mod) is not _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    q_bs, kv_bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    if _compile:
        warnings.warn("_compile flag on create_block_mask was originally added to work around a "
                      "torch.compile limitation. That limitation has since been addressed. So, "
                      "to compile create_block_mask, we suggest doing "
                      "torch.compile(create_block_mask). This still works for now, but will be "
                      "removed in the future.", DeprecationWarning, stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    if compute_dq_write_order:
        raise NotImplementedError("create_block_mask(compute_dq_write_order=True): jitgrad has "
                                  "no deterministic block-sparse GPU backward to order")
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial, full = _convert_mask_to_block_mask(mask.cpu().numpy(), q_bs, kv_bs,
                                                separate_full_blocks)
    to_t = lambda a: jitgrad.from_numpy(a).to(device)  # noqa: E731
    kv_nb, kv_idx = _dense_to_ordered(to_t(partial))
    full_nb = full_idx = None
    if full is not None:
        full_nb, full_idx = _dense_to_ordered(to_t(full))
    return BlockMask.from_kv_blocks(kv_nb, kv_idx, full_nb, full_idx, BLOCK_SIZE=(q_bs, kv_bs),
                                    mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))


def _create_empty_block_mask(query: Tensor) -> BlockMask:
    """The BlockMask of no masking: one block as large as any sequence."""
    return BlockMask.from_kv_blocks(
        kv_num_blocks=jitgrad.ones([1, 1, 1], dtype=jitgrad.int32, device=query.device),
        kv_indices=jitgrad.zeros([1, 1, 1, 1], dtype=jitgrad.int32, device=query.device),
        BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE, seq_lengths=(1, 1))


def _warn_once(warning_id: str, message: str, category: type[Warning]) -> None:
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: FlexKernelOptions | None = None, *,
                   return_aux: AuxRequest | None = None) -> Any:
    r"""Scaled dot product attention with a score modification and a block-sparse mask.

    ``softmax(score_mod(query @ key^T * scale) masked by block_mask) @ value``.

    Args:
        query: (B, Hq, L, E).
        key: (B, Hkv, S, E).
        value: (B, Hkv, S, Ev).
        score_mod: ``(score, b, h, q_idx, kv_idx) -> score``, applied to every score.
        block_mask: a ``BlockMask`` (from ``create_block_mask``): the positions that take part.
        scale: the scores' factor; default ``1 / sqrt(E)``.
        enable_gqa: grouped-query attention (Hq a multiple of Hkv).
        return_lse: also return the logsumexp of the scores (deprecated: ``return_aux``).
        kernel_options: torch's kernel options (checked, otherwise unused).
        return_aux: ``AuxRequest(lse=..., max_scores=...)``: return ``(out, AuxOutput)``.

    Returns:
        The (B, Hq, L, Ev) output; with ``return_lse`` also the (B, Hq, L) logsumexp; with
        ``return_aux`` an ``AuxOutput``.
    """
    _check_inputs(query, key, value, block_mask, enable_gqa)
    if score_mod is None:
        score_mod = _identity
    if block_mask is None:
        block_mask = _create_empty_block_mask(query)
    if getattr(block_mask, "mask_mod", None) is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if block_mask.BLOCK_SIZE[0] != _LARGE_SPARSE_BLOCK_SIZE or \
            block_mask.BLOCK_SIZE[1] != _LARGE_SPARSE_BLOCK_SIZE:
        _check_block_mask_lengths(query, key, block_mask)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got "
                           f"{query.device} and {block_mask.kv_num_blocks.device}.")
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse", "return_lse is deprecated and will be removed in "
                   "v2.10. Please use return_aux=AuxRequest(lse=True) instead.", FutureWarning)
    _check_kernel_options(kernel_options)
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    out, lse, max_scores = _math_attention(
        query, key, value, None if score_mod is _identity else score_mod, block_mask, scale)
    lse = lse if want_lse and lse.numel() > 0 else None
    max_scores = max_scores if want_max and max_scores.numel() > 0 else None
    if return_aux is not None:
        return out, AuxOutput(lse=lse, max_scores=max_scores)
    if return_lse:
        return out, lse
    return out
