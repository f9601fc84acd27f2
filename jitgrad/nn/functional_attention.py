"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``, written as
torch's math reference writes them (matmuls, a softmax, dropout), so autograd, ``jit`` and
``vmap`` see their pieces."""

from __future__ import annotations

import math
import warnings

from .. import dtypes
from ..ops.autocast_policy import LOWER, autocast_policy
from ..ops.creation import ones, zeros
from ..dtypes import CPP_NAMES
from ..ops.movement import cat
from ..ops.selection import where
from ..tensor import Tensor
from .attention.bias import CausalBias, CausalVariant

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _none_or_dtype(input: Tensor | None) -> dtypes.dtype | None:  # noqa: A002 - torch's name
    """A mask's dtype, or None (torch's ``F._none_or_dtype``)."""
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or jitgrad.Tensor")


def _canonical_mask(mask: Tensor | None, mask_name: str, other_type: dtypes.dtype | None,
                    other_name: str, target_type: dtypes.dtype,
                    check_other: bool = True) -> Tensor | None:
    """torch's ``F._canonical_mask``: a bool mask as a float one (-inf where True), a float
    mask as it is; any other dtype is refused, and a mask whose dtype is not ``other_type`` (the
    other mask's) warns that mixing them is deprecated.

    Args:
        mask: the mask, or None. mask_name: its name in the texts.
        other_type: the other mask's dtype (None: no other mask). other_name: its name.
        target_type: the float mask's dtype. check_other: compare with ``other_type``.
    """
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not dtypes.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=2)
    if not is_float:
        mask = zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill_(
            mask, float("-inf"))
    return mask


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor,
                     key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                     num_heads: int) -> bool:
    """torch's checks of the inputs' dims (``F._mha_shape_check``); whether they are batched."""
    if query.ndim == 3:
        batched, kind, kpm_dim = True, "batched (3-D)", 2
    elif query.ndim == 2:
        batched, kind, kpm_dim = False, "unbatched (2-D)", 1
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                             f"{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             "respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != kpm_dim:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{kpm_dim}-D but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.ndim}-D tensor instead")
        if not batched and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
    return batched


def _additive(mask: Tensor | None, dtype: dtypes.dtype) -> Tensor | None:
    """An SDPA mask (bool: True means attend; or float, already checked) as an additive float
    mask of ``dtype``."""
    if mask is None:
        return None
    if mask.dtype is dtypes.bool:
        return where(mask.logical_not(), float("-inf"), zeros((), dtype=dtype,
                                                               device=mask.device))
    return mask.to(dtype) if mask.dtype is not dtype else mask


@autocast_policy(LOWER)
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key.mT * scale + mask) @ value`` (torch's math reference; float16 and
    bfloat16 inputs are computed in float32 and the result rounded once, as torch's).

    Args:
        query: (..., L, E). key: (..., S, E). value: (..., S, Ev).
        attn_mask: a bool mask (True: take part in attention) or a float mask added to the
            scores; broadcast to (..., L, S).
        dropout_p: dropout probability applied to the attention weights.
        is_causal: a lower-triangular (causal) mask; with ``attn_mask`` too only where torch's
            CPU flash kernel runs (4-D inputs, no dropout), which applies both.
        scale: the scores' factor; default ``1 / sqrt(E)``.
        enable_gqa: grouped-query attention: key/value heads (dim -3) are repeated to the
            query's number of heads.

    Returns:
        (..., L, Ev).
    """
    from ._functional_core import dropout, softmax
    from .attention import check_backend_enabled

    check_backend_enabled()
    if isinstance(attn_mask, CausalBias):  # torch's CausalBias dispatch
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or \
                attn_mask.variant == CausalVariant.UPPER_LEFT:
            attn_mask, is_causal = None, True
        else:
            attn_mask = attn_mask._materialize(query.device)
    L, S = query.shape[-2], key.shape[-2]
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    if is_causal and attn_mask is not None and not _flash_selected(query, key, value, dropout_p):
        # (torch's CPU flash kernel applies both masks; its math path refuses them)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if attn_mask is not None and attn_mask.dtype not in (dtypes.bool, dtypes.float32,
                                                         query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: "
                           f"{CPP_NAMES[attn_mask.dtype.name]} and  query.dtype: "
                           f"{CPP_NAMES[query.dtype.name]} instead.")
    origin = query.dtype
    if origin in (dtypes.float16, dtypes.bfloat16):  # (torch's math path: in float32, for
        query, key, value = (t.to(dtypes.float32) for t in (query, key, value))  # accuracy)
    bias = _additive(attn_mask, query.dtype)
    if is_causal:
        causal = _additive(ones((L, S), dtype=dtypes.bool, device=query.device).tril(),
                           query.dtype)
        bias = causal if bias is None else bias + causal
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
        value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    scores = query.matmul(key.transpose(-2, -1)) * factor
    if bias is None:
        weights = softmax(scores, dim=-1)
    else:  # torch's safe softmax: a row whose keys are all masked attends to nothing (zeros)
        scores = scores + bias
        empty = scores.detach().amax(-1, keepdim=True) == float("-inf")
        weights = where(empty, 0.0, softmax(where(empty, 0.0, scores), dim=-1))
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    out = weights.matmul(value)
    return _in_query_layout(out if out.dtype is origin else out.to(origin), query, key, value,
                            dropout_p)


def _flash_selected(query: Tensor, key: Tensor, value: Tensor, dropout_p: float) -> bool:
    """Whether torch's CPU build runs its flash kernel: 4-D inputs with unit last strides, no
    dropout, FLASH_ATTENTION allowed."""
    from .attention import flash_enabled

    return query.ndim == 4 and dropout_p == 0.0 and flash_enabled() and \
        all(t.ndim == 4 and t.stride(-1) == 1 for t in (query, key, value))


def _in_query_layout(out: Tensor, query: Tensor, key: Tensor, value: Tensor,
                     dropout_p: float) -> Tensor:
    """``out`` laid out in memory as ``query`` is, where torch's CPU build runs its flash
    kernel (4-D inputs with unit last strides, no dropout, FLASH_ATTENTION allowed), whose
    output follows the query's layout: code relies on it, as the SDPA tutorial's
    ``y.transpose(1, 2).view(N, L, H * E)`` after heads split by ``view(...).transpose(1, 2)``."""
    if not _flash_selected(query, key, value, dropout_p):
        return out
    strides = query.stride()
    order = sorted(range(4), key=lambda d: -strides[d])  # outermost first (stable on ties)
    if order == [0, 1, 2, 3]:
        return out
    inverse = [order.index(d) for d in range(4)]
    return out.permute(order).contiguous().permute(inverse)


def _in_projection(query: Tensor, key: Tensor, value: Tensor, in_proj_weight: Tensor | None,
                   in_proj_bias: Tensor | None, q_w: Tensor | None, k_w: Tensor | None,
                   v_w: Tensor | None, use_separate: bool) -> tuple[Tensor, Tensor, Tensor]:
    from ._functional_core import linear

    E = query.shape[-1]
    if use_separate:
        weights = (q_w, k_w, v_w)
    else:
        weights = tuple(in_proj_weight[i * E:(i + 1) * E] for i in range(3))
    biases = (None,) * 3 if in_proj_bias is None else tuple(
        in_proj_bias[i * E:(i + 1) * E] for i in range(3))
    if not use_separate and query is key and key is value:  # one matmul for all three
        packed = linear(query, in_proj_weight, in_proj_bias)
        return tuple(packed[..., i * E:(i + 1) * E] for i in range(3))
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """torch's multi-head attention on (L, N, E) inputs (or unbatched (L, E)).

    Returns:
        The output (L, N, E) and, with ``need_weights``, the attention weights (N, L, S),
        averaged over heads with ``average_attn_weights`` (else (N, heads, L, S)).
    """
    from ._functional_core import dropout, linear, pad, softmax

    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not "
                                  "supported")
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # (the causal hint is given to SDPA instead)
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight and key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                             f"value's {value.shape[:2]}")
    if not use_separate_proj_weight and key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, q_proj_weight,
                             k_proj_weight, v_proj_weight, use_separate_proj_weight)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                               f"should be {(bsz * num_heads, tgt_len, src_len)}.")
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        k = cat([k, zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype, device=v.device)], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        for i, want in enumerate((bsz, src_len)):
            if key_padding_mask.shape[i] != want:
                raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be {want}, but got "
                                     f"{key_padding_mask.shape[i]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        if attn_mask is not None and attn_mask.dtype is not q.dtype:  # (torch's baddbmm)
            raise RuntimeError(f"Input dtypes must be the same, got: input "
                               f"{CPP_NAMES[attn_mask.dtype.name]}, batch1: "
                               f"{CPP_NAMES[q.dtype.name]}, batch2: {CPP_NAMES[k.dtype.name]}")
        scores = (q * math.sqrt(1.0 / float(head_dim))).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.matmul(v).transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.view(
            bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
    return (out if batched else out.squeeze(1)), None
