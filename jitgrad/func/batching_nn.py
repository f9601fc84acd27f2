"""Batching rules of the convolution and max-pooling ops (see ``batching.py``).

Convolutions batch as functorch's do: a batched input with a shared weight folds the batch
into the conv's own batch dim (one convolution); a batched weight becomes one *grouped*
convolution, the samples side by side along the channels (``groups * B`` groups), whose
result splits back into the samples. Each sample's groups stay contiguous, so a grouped
convolution batches the same way. The two backward ops (the input's and the weight's
gradients) batch alike, so ``vmap(grad(f))`` of a CNN (per-sample gradients) runs without the
Python loop. Max pooling works on any leading dims, so its ops take the batch as it is. Batch
norm puts the samples side by side along the channels too.
"""

from __future__ import annotations

from typing import Any

from ..ops.registry import apply


def lift(v: Any, flag: bool, size: int) -> Any:
    """An unbatched tensor repeated over the batch (an expand, no copy), as batching.lift."""
    if flag:
        return v
    return v.unsqueeze(0).expand((size,) + tuple(v.shape))


def _fold(v: Any) -> Any:
    """``(B, N, ...)`` -> ``(B * N, ...)``."""
    return v.reshape((v.shape[0] * v.shape[1],) + tuple(v.shape[2:]))


def _unfold(v: Any, size: int) -> Any:
    """``(B * N, ...)`` -> ``(B, N, ...)``."""
    return v.reshape((size, v.shape[0] // size) + tuple(v.shape[1:]))


def _to_channels(v: Any) -> Any:
    """``(B, N, C, ...)`` -> ``(N, B * C, ...)``: the samples side by side along channels."""
    v = v.movedim(0, 1)
    return v.reshape((v.shape[0], v.shape[1] * v.shape[2]) + tuple(v.shape[3:]))


def _from_channels(v: Any, size: int) -> Any:
    """``(N, B * C, ...)`` -> ``(B, N, C, ...)``."""
    v = v.reshape((v.shape[0], size, v.shape[1] // size) + tuple(v.shape[2:]))
    return v.movedim(1, 0)


def _add_bias(out: Any, bias: Any, flag: bool, size: int) -> Any:
    if bias is None:
        return out
    spatial = out.ndim - 3  # out: (B, N, O, ...)
    if flag:  # (B, O) -> (B, 1, O, 1...)
        return out + bias.reshape((size, 1, bias.shape[1]) + (1,) * spatial)
    return out + bias.reshape((bias.shape[0],) + (1,) * spatial)


def _conv_rule(op, values, flags, params, size):
    (x, w, b), (fx, fw, fb) = values, flags
    if not fw:
        if fb:  # a batched bias: added after a bias-free convolution
            out = _unfold(apply(op, _fold(lift(x, fx, size)), w, None, **params), size)
            return _add_bias(out, b, True, size)
        return _unfold(apply(op, _fold(x), w, b, **params), size)
    x = lift(x, fx, size)
    groups = params["groups"]
    out = apply(op, _to_channels(x), _fold(w), None, **dict(params, groups=groups * size))
    return _add_bias(_from_channels(out, size), b, fb, size)


def _conv_input_grad_rule(op, values, flags, params, size):
    (g, w), (fg, fw) = values, flags
    if not fw:
        return _unfold(apply(op, _fold(g), w, **params), size)
    g = lift(g, fg, size)
    out = apply(op, _to_channels(g), _fold(w), **dict(params, groups=params["groups"] * size))
    return _from_channels(out, size)


def _conv_weight_grad_rule(op, values, flags, params, size):
    (x, g), (fx, fg) = values, flags
    x, g = lift(x, fx, size), lift(g, fg, size)
    out = apply(op, _to_channels(x), _to_channels(g),
                **dict(params, groups=params["groups"] * size))
    return _unfold(out, size)


def _leading_dims_rule(op, values, flags, params, size):
    """Ops that work plane by plane over any leading dims: the batch is one more of them."""
    args = [lift(v, f, size) if v is not None else v for v, f in zip(values, flags)]
    return apply(op, *args, **params)


def _batch_norm_rule(op, values, flags, params, size):
    """Each sample normalised by its own statistics (training) or by the shared running ones
    (eval): the samples side by side along the channels, one batch norm of ``B * C`` channels.
    Running statistics updated in place by batched samples are refused by ``F.batch_norm``, as
    torch refuses them; per-sample running statistics take the loop."""
    (x, w, b, mean, var), (fx, fw, fb, fmean, fvar) = values, flags
    if fmean or fvar:
        return NotImplemented
    if params["training"] and mean is not None:
        return NotImplemented  # (F.batch_norm updates them itself: it refuses batched samples)

    def tiled(v, flag):
        if v is None:
            return None
        return v.reshape(-1) if flag else v.repeat(size)
    out, m, v = apply(op, _to_channels(lift(x, fx, size)), tiled(w, fw), tiled(b, fb),
                      tiled(mean, False), tiled(var, False), **params)
    return _from_channels(out, size), m.reshape((size, -1)), v.reshape((size, -1))


RULES = {
    "native_batch_norm": _batch_norm_rule,
    "convolution": _conv_rule,
    "convolution_backward_input": _conv_input_grad_rule,
    "convolution_backward_weight": _conv_weight_grad_rule,
    "conv_transpose": _conv_rule,  # (its weight's groups are along dim 0, as a convolution's)
    "max_pool2d_with_indices": _leading_dims_rule,
    "max_pool2d_with_indices_backward": _leading_dims_rule,
}
