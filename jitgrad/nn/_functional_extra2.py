"""``torch.nn.functional``'s instance_norm, local_response_norm, adaptive_avg_pool1d,
adaptive_max_pool1d/2d (with indices), gumbel_softmax and embedding_bag, composed of jitgrad ops
(re-exported by ``nn.functional`` through ``_functional_extra``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.creation import tensor
from ..ops.memory_formats import follow_channels_last
from ..tensor import Tensor

__all__ = ["instance_norm", "local_response_norm", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "gumbel_softmax", "embedding_bag"]


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalizes each channel of each sample of ``(N, C, *)`` input over its positions
    (biased variance), then scales by ``weight`` and shifts by ``bias`` (per channel).

    With ``use_input_stats`` and running statistics given, those become ``(1 - momentum) *
    running + momentum * stat`` averaged over the batch (the unbiased variance, as torch);
    without ``use_input_stats`` the running statistics normalize.
    """
    from .functional_conv import batch_norm

    if use_input_stats:
        spatial = int(np.prod(input.shape[2:])) if input.ndim > 2 else 1
        if spatial <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape!r}")
    n, c = input.shape[:2]
    x = input.reshape(1, n * c, *input.shape[2:])
    rep = (lambda t: None if t is None else t.repeat(n))  # noqa: E731
    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            for run, stat in ((running_mean, rm), (running_var, rv)):
                if run is not None:
                    run.copy_(stat.reshape(n, c).mean(0))
    return out.reshape(input.shape)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4,  # noqa: A002
                        beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Divides each element by ``(k + alpha * mean of the squares over ``size`` neighbouring
    channels) ** beta`` (channels beyond the edges count as zeros)."""
    from ._functional_core import pad

    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = (input * input).movedim(1, -1)  # (N, *, C)
    sq = pad(sq, (size // 2, (size - 1) // 2))
    div = sq.unfold(-1, size, 1).mean(-1).movedim(-1, 1)
    return input / (div * alpha + k).pow(beta)


def _check_1d(input: Tensor, output_size: Any, name: str) -> int:  # noqa: A002
    """torch's checks of a 1-d adaptive pooling's input dims and ``output_size``."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {name})")
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 1:
            raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got "
                               f"{len(output_size)})")
        return output_size[0]
    return output_size


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """1-d average pooling of ``(N, C, L)`` (or ``(C, L)``) input to ``output_size`` (torch's
    2-d pooling of the input with a unit height)."""
    from .functional_conv import adaptive_avg_pool2d

    size = _check_1d(input, output_size, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def _windows(n_in: int, n_out: int) -> tuple[np.ndarray, int]:
    """The positions of torch's adaptive windows, ``(n_out, kmax)``, short windows padded
    with their first position (which leaves their max and its first index unchanged)."""
    starts = (np.arange(n_out) * n_in) // n_out
    ends = -((-(np.arange(n_out) + 1) * n_in) // n_out)
    kmax = int((ends - starts).max())
    pos = starts[:, None] + np.arange(kmax)[None, :]
    return np.where(pos < ends[:, None], pos, starts[:, None]), kmax


def _adaptive_max(input: Tensor, size: tuple[int, ...], name: str) -> tuple[Tensor, Tensor]:
    spatial = len(size)
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{name}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but "
                           f"got: {list(input.shape)}")
    from .functional_conv import check_nonempty

    check_nonempty(input, range(1, input.ndim), name)
    if not input.dtype.is_floating_point:  # (torch: 1-d is a 2-d pooling, by that name)
        from ..ops.pool import refuse_dtype

        refuse_dtype(input, "adaptive_max_pool2d")
    batched = input.ndim == spatial + 2
    x = input if batched else input.unsqueeze(0)
    n, c, *ins = x.shape
    size = tuple(ins[i] if o is None else int(o) for i, o in enumerate(size))
    if any(o < 0 for o in size):  # (torch's output: (N, C, 1, L_out) for 1-d)
        shape = [*input.shape[:-spatial], *((1,) if spatial == 1 else ()), *size]
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(size)}: {shape}")
    if n == 0 or any(o == 0 for o in size):
        from ..ops.creation import empty

        shape = (*input.shape[:-spatial], *size)
        return (empty(shape, dtype=input.dtype, device=input.device) + input.sum() * 0,
                empty(shape, dtype=dtypes.int64, device=input.device))
    wins = [_windows(i, o) for i, o in zip(ins, size)]
    for d, (pos, _) in enumerate(wins):  # gather (..., out_d * k_d, ...)
        x = x.index_select(2 + 2 * d, tensor(pos.reshape(-1).astype(np.int64), device=x.device))
        x = x.reshape(*x.shape[:2 + 2 * d], size[d], pos.shape[1], *x.shape[3 + 2 * d:])
    if spatial == 2:  # (n, c, oh, kh, ow, kw) -> (n, c, oh, ow, kh * kw)
        x = x.permute(0, 1, 2, 4, 3, 5).reshape(n, c, size[0], size[1], -1)
    values, local = x.max(-1)
    # the flat input position of every window tap, picked by the argmax (traceable by jit)
    if spatial == 1:
        flat = wins[0][0]
    else:
        hs, ws = wins[0][0], wins[1][0]
        flat = (hs[:, None, :, None] * ins[1] + ws[None, :, None, :]).reshape(
            size[0], size[1], -1)
    table = tensor(flat.astype(np.int64), device=input.device)
    indices = table.expand(*local.shape, flat.shape[-1]).gather(-1, local.unsqueeze(-1))
    indices = indices.squeeze(-1)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """1-d max pooling of ``(N, C, L)`` (or ``(C, L)``) input to ``output_size``, with the
    positions of the maxima along ``L``."""
    return _adaptive_max(input, (_check_1d(input, output_size, "adaptive_max_pool1d"),),
                         "adaptive_max_pool1d")


def adaptive_max_pool1d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """1-d max pooling to ``output_size``; with ``return_indices`` also the positions."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """2-d max pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to ``output_size``, with
    the flat ``h * W + w`` positions of the maxima."""
    size = tuple(output_size) if isinstance(output_size, (list, tuple)) else \
        (output_size, output_size)
    values, indices = _adaptive_max(input, size, "adaptive_max_pool2d")
    return follow_channels_last(values, input), follow_channels_last(indices, input)


def adaptive_max_pool2d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """2-d max pooling to ``output_size``; with ``return_indices`` also the positions."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with
    ``g`` standard Gumbel noise; with ``hard`` a one-hot of its argmax whose gradient is the
    soft sample's (straight-through)."""
    from ..random import rand

    if not logits.dtype.is_floating_point:  # (torch draws its noise in the logits' dtype)
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {logits.dtype._scalar_name}")

    if logits.is_cuda:
        u = rand(tuple(logits.shape), dtype=dtypes.float64, device=logits.device)
        exp = (-(1.0 - u).log()).to(logits.dtype)  # Exponential(1), never log(0)
    else:  # (torch's: exponential_ draws in the logits' dtype)
        from ..ops.rng import sample

        exp = sample("exponential", tuple(logits.shape), logits.dtype, device=logits.device)
    gumbels = -exp.log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = (y_soft.detach() * 0).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _check_bags(input: Tensor, offsets: Tensor | None, starts: np.ndarray, n: int,  # noqa: A002
                rows: int) -> None:
    """torch's checks of embedding_bag's indices and offsets: integer dtypes, bags starting at
    0 and ending within the input, indices within the table."""
    for t in (input, offsets):
        if t is not None and (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(
                "Expected tensor for argument #1 'indices' to have one of the following scalar "
                f"types: Long, Int; but got jitgrad.{t.dtype._legacy} instead (while checking "
                "arguments for embedding_bag)")
    if len(starts) and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {int(starts[0])}\n[ jitgrad.LongTensor{{}} ]")
    if len(starts) and starts[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(starts[-1])}")
    if not n or input._trace is not None or not input.is_cpu:  # (a trace reads no values)
        return
    ids = np.asarray(input._data).reshape(-1)
    bad = np.flatnonzero((ids < 0) | (ids >= rows))
    if len(bad):
        raise RuntimeError(f"Index {int(bad[0])} of input takes value {int(ids[bad[0]])} which "
                           f"is not in the valid range [0, {rows})")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The ``sum``, ``mean`` or ``max`` of the embeddings of each bag of indices: the rows of
    2-D ``input``, or the slices of 1-D ``input`` starting at ``offsets``. Indices equal to
    ``padding_idx`` are left out of their bag (and of its mean's count); empty bags give
    zeros; ``per_sample_weights`` (``mode='sum'`` only) scale each embedding first."""
    from ._functional_core import _embedding_renorm_, embedding

    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             "of type " + ("<class 'jitgrad.Tensor'>" if isinstance(offsets, Tensor)
                                           else str(type(offsets))))
        starts = np.arange(0, input.numel(), max(input.shape[1], 1))
        include_last_offset = False
        input = input.reshape(-1)  # noqa: A001
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = np.asarray(offsets.numpy()).astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    n = input.numel()
    _check_bags(input, offsets, starts, n, weight.shape[0])
    ends = np.append(starts[1:], n) if not include_last_offset else starts[1:]
    starts = starts if not include_last_offset else starts[:-1]
    ends = np.minimum(ends, n)
    if padding_idx is not None and padding_idx < 0:
        padding_idx = weight.shape[0] + padding_idx
    emb = embedding(input, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                    sparse=sparse)
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(-1)
    # the bags as a padded (B, longest) table of positions into input, masked
    lengths = np.maximum(ends - starts, 0)
    longest = max(int(lengths.max()) if len(lengths) else 0, 1)
    pos = starts[:, None] + np.arange(longest)[None, :]
    valid = np.arange(longest)[None, :] < lengths[:, None]
    if padding_idx is not None and n:
        ids = np.asarray(input.numpy()).reshape(-1)
        valid &= ids[np.where(valid, pos, 0)] != padding_idx
    pos = np.where(valid, pos, 0)
    b, d = len(starts), weight.shape[1]
    if n == 0 or b == 0:
        return (weight.sum() * 0).expand(b, d).clone()
    table = emb.index_select(0, tensor(pos.reshape(-1))).reshape(b, longest, d)
    mask = tensor(valid[:, :, None], device=weight.device)
    if mode == "max":
        out = table.masked_fill(~mask, float("-inf")).max(1)[0]
        return out.masked_fill(tensor(~valid.any(1)[:, None]), 0.0)
    out = table.masked_fill(~mask, 0.0).sum(1)
    if mode == "mean":
        counts = np.maximum(valid.sum(1), 1).astype(np.float64)[:, None]
        out = out / tensor(counts, dtype=out.dtype, device=out.device)
    return out
