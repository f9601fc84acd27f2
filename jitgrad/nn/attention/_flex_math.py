"""flex attention's math: the input checks (torch's errors), the evaluation of score_mod and
mask_mod over every (batch, head, query, key/value) position, and the attention itself
(torch's eager reference, written in jitgrad ops so autograd sees it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jitgrad
from jitgrad import Tensor

from ._flex_block_mask import _LARGE_SPARSE_BLOCK_SIZE, BlockMask, noop_mask

_BACKENDS = ("AUTO", "TRITON", "FLASH", "TRITON_DECODE")
_NEG_INF = float("-inf")


def _vmap_for_bhqkv(fn: Callable, prefix: tuple) -> Callable:
    """``fn`` vmapped over kv_idx, q_idx, head and batch in turn (torch's nesting)."""
    from jitgrad.func import vmap

    for dims in ((None, None, None, 0), (None, None, 0, None), (None, 0, None, None),
                 (0, None, None, None)):
        fn = vmap(fn, in_dims=prefix + dims, out_dims=0)
    return fn


def _apply_mod(fn: Callable, score: Tensor | None, sizes: tuple[int, int, int, int],
               device: Any) -> Tensor:
    """``fn`` (a score_mod when ``score`` is given, else a mask_mod) at every (b, h, q, kv) of
    ``sizes``: one call with broadcast index tensors, or vmap when that call raises or does not
    give a (B, H, Q, KV) broadcast (see ``flex_attention``'s module docstring)."""
    idx = [jitgrad.arange(n, device=device) for n in sizes]
    grids = [t.reshape([n if i == d else 1 for i in range(4)])
             for d, (t, n) in enumerate(zip(idx, sizes))]
    lead = (score,) if score is not None else ()
    try:
        out = fn(*lead, *grids)
    except Exception:  # noqa: BLE001 - e.g. Python control flow: vmap gives torch's behaviour
        out = None
    if isinstance(out, Tensor) and out.ndim == 4 and \
            all(o in (1, n) for o, n in zip(out.shape, sizes)):
        return out
    return _vmap_for_bhqkv(fn, (0,) if score is not None else ())(*lead, *idx)


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, block_mask: BlockMask | None,
                  enable_gqa: bool) -> None:
    """torch's input checks (and error texts) of flex_attention."""
    if query.device != key.device or query.device != value.device:
        raise ValueError(f"Expected query, key, and value to have the same device type, "
                         f"but got query.device: {query.device}, key.device: {key.device}, "
                         f"and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                         f"but got query.dim: {query.dim()}, key.dim: {key.dim()} and "
                         f"value.dim: {value.dim()} instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension "
                         f"but got E={query.size(-1)} and E={key.size(-1)}.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if (not enable_gqa) and query.size(-3) != key.size(-3):
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={query.size(-3)} and Hkv={key.size(-3)}. Try setting "
                         f"enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA "
                         f"but got Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(f"Expect query and key/value to have the same batch size, or "
                             f"non-none block_mask, but got block_mask=None, "
                             f"Bq={query.size(0)}, and Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(f"Expect query and key/value to have the same batch size, or "
                             f"block_mask and query to have the same batch size, but got "
                             f"Bq={query.size(0)}, Bkv={key.size(0)}, "
                             f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _check_block_mask_lengths(query: Tensor, key: Tensor, block_mask: BlockMask) -> None:
    """The block mask was made for these lengths (torch's errors)."""
    q_len, kv_len = block_mask.shape[-2], block_mask.shape[-1]
    if query.size(-2) > q_len or key.size(-2) > kv_len:
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={query.size(-2)} and kv_len={key.size(-2)}. As the block mask was created "
            "for a smaller length than you're using it for, you likely need to create a new "
            "block mask.")
    if (query.size(-2) < q_len and key.size(-2) <= kv_len) or \
            (query.size(-2) <= q_len and key.size(-2) < kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={query.size(-2)} and kv_len={key.size(-2)}. As the block mask was created "
            "for a larger length than you're using it for, you can either 1. create a new "
            "block mask with the correct length, or 2. 'adjust' the existing block mask to the "
            "correct length by calling block_mask._adjust(q_len, kv_len). This essentially "
            "'crops' the block mask to the upper left corner, which does not work for all "
            "mask_mods!")


def _check_kernel_options(kernel_options: dict | None) -> None:
    """torch's checks of the kernel options (jitgrad has no kernel to tune)."""
    opts = {} if kernel_options is None else dict(kernel_options)
    if "BACKEND" in opts and opts.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError("BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. "
                           "BACKEND supersedes the legacy knob; please drop "
                           "FORCE_USE_FLEX_ATTENTION and only specify the desired BACKEND.")
    if "BACKEND" in opts and opts["BACKEND"] not in _BACKENDS:
        raise ValueError(f"Invalid BACKEND value '{opts['BACKEND']}'. "
                         f"Must be one of {_BACKENDS}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in opts:
            raise AssertionError(f"{internal} must not be in kernel_options")


def _allowed(block_mask: BlockMask, sizes: tuple[int, int, int, int],
             device: Any) -> Tensor | None:
    """Where scores take part (a bool tensor broadcast to ``sizes``), None for everywhere: the
    full blocks, and the partial blocks where ``mask_mod`` holds."""
    elem = None
    if block_mask.mask_mod is not noop_mask:
        elem = _apply_mod(block_mask.mask_mod, None, sizes, device)
    if block_mask.BLOCK_SIZE == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return elem
    partial, full = block_mask._element_mask(sizes[2], sizes[3])
    allowed = partial if elem is None else partial & elem
    return allowed if full is None else allowed | full


def _math_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable | None,
                    block_mask: BlockMask, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """(output, logsumexp, max score): torch's eager math reference.

    The scores are float32 (float64 for float64 queries); a row with no position taking part
    has output 0, logsumexp -inf and max -inf. The softmax is written out so that such rows
    give zero gradients, not NaN.
    """
    wp = jitgrad.float64 if query.dtype is jitgrad.float64 else jitgrad.float32
    groups = query.size(1) // key.size(1)
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    bq, bkv = query.size(0), key.size(0)
    if not (bq == bkv or (bq > 1 and bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={bq} and Bkv={bkv}")
    key = key.expand((bq, *key.shape[1:]))
    value = value.expand((bq, *value.shape[1:]))
    scores = (query.to(wp) @ key.to(wp).transpose(-2, -1) * scale).to(wp)
    sizes = tuple(scores.shape)
    post = scores if score_mod is None else _apply_mod(score_mod, scores, sizes, query.device)
    allowed = _allowed(block_mask, sizes, query.device)
    if allowed is not None:
        post = jitgrad.where(allowed, post, jitgrad.full((), _NEG_INF, dtype=wp,
                                                         device=query.device))
    post = post.expand(sizes)
    max_scores = post.amax(-1)
    masked_rows = jitgrad.isneginf(max_scores)
    # the softmax shift (detached: the softmax does not depend on it), 0 for masked rows
    shift = jitgrad.where(masked_rows, 0.0, max_scores).detach().unsqueeze(-1)
    e = (post - shift).exp()
    denom = e.sum(-1)
    safe_denom = jitgrad.where(masked_rows, 1.0, denom)
    probs = e / safe_denom.unsqueeze(-1)
    lse = jitgrad.where(masked_rows, _NEG_INF, shift.squeeze(-1) + safe_denom.log())
    out = probs.to(query.dtype) @ value.to(query.dtype)
    return out, lse, max_scores
