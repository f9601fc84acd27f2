"""More of ``torch.nn.functional``'s losses, composed of jitgrad ops: multi_margin_loss,
multilabel_margin_loss and triplet_margin_with_distance_loss (``ctc_loss`` is in
``_functional_ctc``). The values and gradients are torch's; the graph nodes are the
composition's (torch has one ``MultiMarginLossBackward0`` node)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ops.autocast_policy import FP32, autocast_policy
from ..ops.ranges import arange
from ..ops.dtype_rules import refuse_dtypes
from ..ops.registry import state
from ..ops.torch_extras3 import pairwise_distance
from ..tensor import Tensor
from ._functional_loss import _reduction

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss"]


def _concrete(t: Tensor) -> bool:
    """Whether ``t`` has values to check (not a ``jit`` tracer)."""
    return not state.traces and t._trace is None


def _reduce_samples(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# (torch's CPU kernels of these two losses are built for float32 and float64 only)
_NOT_SINGLE_OR_DOUBLE = ("complex", "integer", "bool", "half")
_MULTI_MARGIN_CHECK = refuse_dtypes(
    (0,), **dict.fromkeys(_NOT_SINGLE_OR_DOUBLE, "multi_margin_loss_cpu_kernel"))
_MULTILABEL_MARGIN_CHECK = refuse_dtypes(
    (0,), **dict.fromkeys(_NOT_SINGLE_OR_DOUBLE, "multilabel_margin_loss_forward_out_frame"))


@autocast_policy(FP32)
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1,  # noqa: A002
                      margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: for each sample,
    ``sum_{i != y} weight[y] * max(0, margin - x[y] + x[i]) ** p / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: ``(N,)`` (or 0-d / ``(1,)``) class indices.
        p: 1 or 2.
        margin: the margin.
        weight: optional ``(C,)`` class weights.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    mode = _reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x = input.unsqueeze(0) if input.ndim <= 1 else input
    if input.ndim == 0:
        x = x.reshape(1, 1)
    batch, classes = x.shape[0], x.shape[-1]
    if x.ndim != 2 or target.numel() != batch or (input.ndim == 2 and target.ndim != 1):
        raise RuntimeError(
            f"multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{batch}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    _MULTI_MARGIN_CHECK((input,))
    y = target.reshape(-1)
    if _concrete(y):
        yv = np.asarray(y.detach().cpu().numpy())
        if np.any((yv < 0) | (yv >= classes)):
            raise RuntimeError("target out of range")
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got "
                           f"{list(weight.shape)}")
    idx = y.to(device=x.device)
    picked = x.gather(1, idx.unsqueeze(1))  # (N, 1): x[y]
    others = arange(classes, device=x.device).unsqueeze(0) != idx.unsqueeze(1)
    hinge = (margin - picked + x).clamp_min(0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight.index_select(0, idx).unsqueeze(1)
    loss = (hinge * others.to(hinge.dtype)).sum(1) / classes
    if mode == "none":
        return loss.reshape(target.shape) if input.ndim <= 1 else loss
    return _reduce_samples(loss, mode)


@autocast_policy(FP32)
def multilabel_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                           size_average: bool | None = None, reduce: bool | None = None,
                           reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: for each sample, with ``y`` the target classes (the
    entries of ``target`` before the first -1), ``sum_{j in y} sum_{i not in y}
    max(0, 1 - (x[j] - x[i])) / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: class indices of ``input``'s shape, padded with -1.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    mode = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape) or input.ndim > 2:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    _MULTILABEL_MARGIN_CHECK((input,))
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    batch, classes = x.shape
    tg = target.reshape(batch, classes).to(device=x.device)
    if _concrete(tg):
        tv = np.asarray(tg.detach().cpu().numpy())
        listed = np.cumprod(tv >= 0, axis=1).astype(bool)
        if np.any(listed & (tv >= classes)):
            raise RuntimeError("argument #2 'target' is out of range")
    # the entries before the first -1 are the targets; count how often each class is one
    listed = (tg >= 0).to(x.dtype).cumprod(1)  # [n, k]
    hits = (tg.unsqueeze(2) == arange(classes, device=x.device)).to(x.dtype)  # [n, k, c]
    counts = (hits * listed.unsqueeze(2)).sum(1)  # [n, c]
    cnt = counts.unsqueeze(2)
    non = (counts == 0).to(x.dtype).unsqueeze(1)
    hinge = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # [n, j, i]
    loss = (hinge * cnt * non).sum((1, 2)) / classes
    if mode == "none":
        return loss.reshape(()) if input.ndim <= 1 else loss
    return _reduce_samples(loss, mode)


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for a user-given
    distance (``pairwise_distance`` by default); ``swap`` uses the smaller of
    ``d(anchor, negative)`` and ``d(positive, negative)``.

    Args:
        anchor: the anchors.
        positive: the positive examples.
        negative: the negative examples.
        distance_function: a function of two tensors returning their distances.
        margin: the margin (> 0).
        swap: the distance swap.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        The loss.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce_samples(loss, reduction)
