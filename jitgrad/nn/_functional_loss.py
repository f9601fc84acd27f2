"""The losses of ``jitgrad.nn.functional`` (re-exported there): mse, nll, cross entropy, l1,
smooth L1, Huber and the binary cross entropies, and the reduction argument they share.

Each follows ``torch.nn.functional``: names, defaults, warnings, errors and the math of the
reductions. ``smooth_l1_loss``, ``huber_loss`` and the binary cross entropies are single ops
(``SmoothL1LossBackward0``, ...); ``l1_loss`` is composed, as in torch (``MeanBackward0``).
"""

from __future__ import annotations

import warnings

from ..ops.autocast_policy import FP32, autocast_policy
from .. import dtypes
from ..errors import user_stacklevel
from ..ops.nn_ops import MSE_LOSS, NLL_LOSS
from ..ops.nn_ops2 import (BINARY_CROSS_ENTROPY, BINARY_CROSS_ENTROPY_WITH_LOGITS, HUBER_LOSS,
                           SMOOTH_L1_LOSS)
from ..ops.registry import apply, broadcast_shapes
from ..tensor import Tensor
from ._functional_core import log_softmax

__all__ = ["mse_loss", "nll_loss", "cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits"]


_REDUCTIONS = ("none", "mean", "sum")


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        stacklevel=user_stacklevel())
    return ret


def _reduction(reduction: str, size_average: bool | None = None,
               reduce: bool | None = None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _checked_reduction(reduction)


def _checked_reduction(reduction: str) -> str:
    """torch's ``_Reduction.get_enum``: the deprecated ``'elementwise_mean'`` is ``'mean'``."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=user_stacklevel())
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# ---------------------------------------------------------------- losses


@autocast_policy(FP32)
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error (``MseLossBackward0``); ``weight`` weighs each element."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=user_stacklevel())
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif weight is None:
        reduction = _checked_reduction(reduction)
    from ..ops.registry import broadcast_shapes

    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    x = input if tuple(input.shape) == shape else input.expand(shape)
    y = target if tuple(target.shape) == shape else target.expand(shape)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        sq = (x - y) ** 2 * weight
        if reduction == "none":
            return sq
        if reduction == "sum":
            return sq.sum()
        if reduction == "mean":
            return sq.sum() / weight.sum()
        raise ValueError(
            f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return apply(MSE_LOSS, x, y, reduction=reduction)


def _check_target_dtype(target: Tensor) -> None:
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        name = target.dtype._scalar_name
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")


def _check_weight(weight: Tensor | None, n_classes: int) -> None:
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}")


def _to_rows(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """(N, C, d1, ...) -> (N*d1*..., C) rows and their flat targets."""
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(*perm).reshape(-1, c), target.reshape(-1)


@autocast_policy(FP32)
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (``NllLossBackward0``).

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``; the mean divides by the summed
    weights of the non-ignored targets.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim <= 2:
        if target.ndim > 1 or target.ndim != input.ndim - 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        _check_target_dtype(target)
        _check_weight(weight, input.shape[-1])
        return apply(NLL_LOSS, input, target, weight, reduction=reduction,
                     ignore_index=int(ignore_index))
    if tuple(target.shape[:1]) != tuple(input.shape[:1]):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]}).")
    if tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(
            f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
            f"{list(target.shape)}")
    _check_target_dtype(target)
    _check_weight(weight, input.shape[1])
    rows, flat = _to_rows(input, target)
    out = apply(NLL_LOSS, rows, flat, weight, reduction=reduction,
                ignore_index=int(ignore_index))
    return out.reshape(tuple(target.shape)) if reduction == "none" else out


@autocast_policy(FP32)
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits and class indices or class probabilities, as torch computes.

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``. ``target`` holds class indices
    (shape of ``input`` without the class dim) or probabilities (same shape as ``input``).
    ``weight`` rescales classes, ``ignore_index`` skips targets (indices only), and
    ``label_smoothing`` mixes the target with the uniform distribution.
    """
    reduction = _reduction(reduction, size_average, reduce)
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if tuple(input.shape) == tuple(target.shape) and not target.dtype.is_floating_point:
        name = target.dtype._scalar_name  # (torch checks before its kernels)
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {name}")
    logp = log_softmax(input, class_dim)
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(logp, target, weight, ignore_index, reduction,
                                    label_smoothing, class_dim, n_classes)
    if label_smoothing > 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return nll
    ignore = target == ignore_index
    if weight is not None:
        shape = [1] * logp.ndim
        shape[class_dim] = n_classes
        smooth = -(logp * weight.reshape(tuple(shape))).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            safe = target.masked_fill(ignore, 0).reshape(-1)
            denom = weight.index_select(0, safe).masked_fill(ignore.reshape(-1), 0.0).sum()
        else:
            denom = (~ignore).sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def _cross_entropy_probs(logp: Tensor, target: Tensor, weight: Tensor | None,
                         ignore_index: int, reduction: str, label_smoothing: float,
                         class_dim: int, n_classes: int) -> Tensor:
    if not (target.dtype.is_floating_point or target.dtype.is_complex):
        name = target.dtype._scalar_name
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {name}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(
                f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        _check_weight(weight, n_classes)
        shape = [1] * logp.ndim
        shape[class_dim] = n_classes
        prod = prod * weight.reshape(tuple(shape))
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    batch = logp.numel() // n_classes if n_classes else 0
    return -prod.sum() / batch if batch else -prod.sum() * float("nan")


def _warn_size(input: Tensor, target: Tensor) -> None:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=user_stacklevel())


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


@autocast_policy(FP32)
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


@autocast_policy(FP32)
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


@autocast_policy(FP32)
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


@autocast_policy(FP32)
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
    if target.dtype is not input.dtype:  # (a Long or Bool label: torch's kernel refuses it)
        raise RuntimeError(f"Found dtype {target.dtype._scalar_name} but "
                           f"expected {input.dtype._scalar_name}")
    if weight is not None:
        shape = broadcast_shapes(tuple(target.shape), tuple(weight.shape))
        weight = weight.expand(shape)
    return apply(BINARY_CROSS_ENTROPY, input, target, weight, reduction=reduction)


@autocast_policy(FP32)
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
