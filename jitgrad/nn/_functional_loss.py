"""Regression and binary losses of ``jitgrad.nn.functional``: l1, smooth L1, Huber and the
binary cross entropies (re-exported by ``functional``).

Each follows ``torch.nn.functional``: names, defaults, warnings, errors and the math of the
reductions. ``smooth_l1_loss``, ``huber_loss`` and the binary cross entropies are single ops
(``SmoothL1LossBackward0``, ...); ``l1_loss`` is composed, as in torch (``MeanBackward0``).
"""

from __future__ import annotations

import warnings

from ..ops.nn_ops2 import (BINARY_CROSS_ENTROPY, BINARY_CROSS_ENTROPY_WITH_LOGITS, HUBER_LOSS,
                           SMOOTH_L1_LOSS)
from ..ops.registry import apply, broadcast_shapes
from ..tensor import Tensor
from .functional import _reduction

__all__ = ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits"]


def _warn_size(input: Tensor, target: Tensor) -> None:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=3)


def _broadcast(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return (a if tuple(a.shape) == shape else a.expand(shape),
            b if tuple(b.shape) == shape else b.expand(shape))


def _weighted(loss: Tensor, weight: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error; ``weight`` weighs each element (the mean then divides by its sum)."""
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    x, y = _broadcast(input, target)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        return _weighted((x - y).abs(), weight, reduction, mean_by_weight=True)
    return _reduce((x - y).abs(), _reduction(reduction))


def smooth_l1_loss(input: Tensor, target: Tensor,  # noqa: A002
                   size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``).

    ``beta == 0`` is the L1 loss, as in torch.
    """
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, y = _broadcast(input, target)
    if beta == 0.0:
        return _reduce((x - y).abs(), reduction)
    return apply(SMOOTH_L1_LOSS, x, y, reduction=reduction, beta=float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    _warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, y = _broadcast(input, target)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        unweighted = apply(HUBER_LOSS, x, y, reduction="none", delta=float(delta))
        return _weighted(unweighted, weight, reduction, mean_by_weight=False)
    return apply(HUBER_LOSS, x, y, reduction=_reduction(reduction), delta=float(delta))


def binary_cross_entropy(input: Tensor, target: Tensor,  # noqa: A002
                         weight: Tensor | None = None, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``-w (t log(x) + (1 - t) log(1 - x))`` with the logs clamped at -100, as torch does.

    ``input`` holds probabilities in [0, 1]; ``weight`` broadcasts to the target's shape.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        shape = broadcast_shapes(tuple(target.shape), tuple(weight.shape))
        weight = weight.expand(shape)
    return apply(BINARY_CROSS_ENTROPY, input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits.

    ``pos_weight`` weighs the positive term (broadcast along the last dim, one per class);
    ``weight`` weighs each element.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    return apply(BINARY_CROSS_ENTROPY_WITH_LOGITS, input, target, weight, pos_weight,
                 reduction=reduction)
