"""Loss modules with torch.nn's constructor arguments: MSELoss, L1Loss, SmoothL1Loss,
HuberLoss, BCELoss, BCEWithLogitsLoss, NLLLoss and CrossEntropyLoss.

Class weights (``weight``, ``pos_weight``) are registered as buffers, so they appear in
``state_dict`` and follow ``.to()``, as in torch.
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from ._functional_loss import _legacy_reduction
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "NLLLoss", "CrossEntropyLoss"]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.weight: Tensor | None


class MSELoss(_Loss):
    """Mean squared error between ``input`` and ``target``.

    Args:
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error between ``input`` and ``target`` (arguments as ``MSELoss``)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above it.

    Args:
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
        beta: the switch point. Default: 1.0.
    """

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
        delta: the switch point. Default: 1.0.
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities.

    Args:
        weight: rescales each element's loss (broadcast to the target).
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (sigmoid folded in, computed stably).

    Args:
        weight: rescales each element's loss.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
        pos_weight: weight of the positive examples, one per class.
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.weight: Tensor | None
        self.pos_weight: Tensor | None

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices given log-probabilities.

    Args:
        weight: a weight per class.
        size_average: deprecated (see ``reduction``).
        ignore_index: a target value that contributes nothing. Default: -100.
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and class indices or class probabilities.

    Args:
        weight: a weight per class.
        size_average: deprecated (see ``reduction``).
        ignore_index: a target value that contributes nothing. Default: -100.
        reduce: deprecated (see ``reduction``).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.
        label_smoothing: mixes the target with the uniform distribution. Default: 0.0.
    """

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)
