"""More of ``torch.nn.functional``'s losses, composed of jitgrad ops as torch composes them:
kl_div, margin_ranking_loss, hinge_embedding_loss, soft_margin_loss, cosine_embedding_loss,
triplet_margin_loss, poisson_nll_loss, gaussian_nll_loss and multilabel_soft_margin_loss."""

from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..errors import user_stacklevel
from ..ops.autocast_policy import FP32, autocast_policy
from ..ops.creation import full_like
from ..ops.nn_ops import SOFTPLUS
from ..ops.registry import apply
from ..ops.selection import where
from ..ops.torch_extras3 import pairwise_distance
from ..tensor import Tensor
from ._functional_loss import _reduce, _reduction

__all__ = ["kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "multilabel_soft_margin_loss"]

_BATCHMEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release.")


def softplus(x: Tensor) -> Tensor:
    return apply(SOFTPLUS, x, beta=1.0, threshold=20.0)


def _logsigmoid(x: Tensor) -> Tensor:
    return -softplus(-x)


@autocast_policy(FP32)
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """The Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    ``target * (log(target) - input)`` (``target`` as log-probabilities with ``log_target``);
    ``'batchmean'`` divides the sum by the batch size."""
    if reduction == "batchmean":
        mode = "batchmean" if size_average is None and reduce is None else \
            _reduction("mean", size_average, reduce)
    else:
        if reduction == "mean" and size_average is None and reduce is None:
            warnings.warn(_BATCHMEAN_WARNING, stacklevel=user_stacklevel())
        mode = _reduction(reduction, size_average, reduce)
    if input.dtype.is_complex or target.dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # target * log(target), 0 at target 0 (the log reads 1 there: no nan in the gradient)
        loss = target * where(target > 0, target, 1.0).log() - target * input
    if mode == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, mode)


@autocast_policy(FP32)
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor,
                        margin: float = 0.0, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {input1.shape}, input2: "
                           f"{input2.shape}, target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, _reduction(reduction, size_average, reduce))


@autocast_policy(FP32)
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1."""
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, _reduction(reduction, size_average, reduce))


@autocast_policy(FP32)
def soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                     size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``."""
    if isinstance(target, Tensor) and target.requires_grad and is_grad_enabled():
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect "
                           "to argument 'target'. This input cannot have requires_grad True.")
    loss = softplus(-target * input)
    return _reduce(loss, _reduction(reduction, size_average, reduce))


@autocast_policy(FP32)
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, size_average: bool | None = None,
                          reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``1 - cos(input1, input2)`` where ``target`` is 1, ``max(0, cos - margin)`` where it is
    -1 (cosines along the last dim, with torch's 1e-12 under the square root)."""
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / (mag1 * mag2).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, _reduction(reduction, size_average, reduce))


@autocast_policy(FP32)
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the pairwise
    ``p``-distance (``swap``: the smaller of d(a, n) and d(p, n))."""
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_pos - d_neg).clamp_min(0)
    return _reduce(loss, _reduction(reduction, size_average, reduce))


@autocast_policy(FP32)
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under a Poisson of rate ``input`` (``exp`` of
    it with ``log_input``); ``full`` adds Stirling's term for targets above 1."""
    mode = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, mode)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float,  # noqa: A002
                      full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under Gaussians of mean ``input`` and
    variance ``var`` (clamped at ``eps`` without a gradient through the clamp, as torch)."""
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1) \
                and var.ndim != 0:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if _eager_negative(var):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _eager_negative(t: Tensor) -> bool:
    from ..ops.registry import state

    return not state.traces and t._trace is None and bool((t < 0).any())


def multilabel_soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                                weight: Tensor | None = None, size_average: bool | None = None,
                                reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of the binary cross-entropy of ``sigmoid(input)``
    with ``target`` (each class weighted by ``weight``)."""
    mode = _reduction(reduction, size_average, reduce)
    from ._functional_act import _LOGSIGMOID_CHECK

    _LOGSIGMOID_CHECK((input,))  # (torch computes F.logsigmoid)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.ndim - 1) / input.shape[-1]
    return _reduce(loss, mode)
