"""``nn.LinearCrossEntropyLoss`` (torch 2.13): a Linear and the cross entropy of its output
(``F.linear_cross_entropy``, in ``_functional_lce``)."""

from __future__ import annotations

import math

from ..tensor import Tensor
from ._functional_lce import LinearCrossEntropyOptions, linear_cross_entropy
from .layers import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyOptions", "LinearCrossEntropyLoss"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear(in_features, num_classes * prod(out_features))`` (``self.linear``) followed
    by the cross entropy (``F.linear_cross_entropy``), arguments as torch.

    Args:
        in_features: the input size.
        num_classes: ``C``.
        out_features: ``(d_1, ..., d_K)`` for a K-dimensional loss.
        bias: whether the linear has a bias.
        device: the parameters' device.
        dtype: the parameters' dtype.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        weight: optional ``(C,)`` class weights (a buffer).
        ignore_index: the ignored class index.
        label_smoothing: in ``[0, 1]``.
        options: a ``LinearCrossEntropyOptions``.
    """

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: tuple[int, ...] = (), bias: bool = False,
                 device=None, dtype=None, reduction: str = "mean",  # noqa: ANN001
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        w = self.linear.weight.reshape((self.num_classes, *self.out_features,
                                        self.linear.in_features))
        b = (self.linear.bias.reshape((self.num_classes, *self.out_features))
             if self.linear.bias is not None else None)
        return linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
