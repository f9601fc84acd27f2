"""``F.linear_cross_entropy`` and ``nn.LinearCrossEntropyOptions`` (torch 2.13): the cross
entropy of a linear projection.

jitgrad computes torch's reference path (``cross_entropy(linear(input, linear_weight,
linear_bias), target, ...)``) for every call. ``options`` is validated as torch validates it
and accepted, but jitgrad has no chunked kernel: the values and gradients are the same, the
memory saving of torch's chunked path is not there.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Literal

from .. import dtypes
from ..tensor import Tensor
from ._functional_core import linear
from ._functional_loss import cross_entropy

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Chunking options of ``linear_cross_entropy`` (fields and validation as torch's; jitgrad
    computes the reference path whatever they say)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        supported = {dtypes.float16, dtypes.float32, dtypes.float64}  # no bfloat16 in jitgrad
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(
                f"acc_dtype must be one of {{None, jitgrad.float16, "
                f"jitgrad.float32, jitgrad.float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically.")


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    Args:
        input: ``(N, in_features)`` or ``(in_features,)`` samples.
        linear_weight: ``(C, d_1, ..., d_K, in_features)``: ``C`` classes, and a K-dimensional
            loss when ``K > 0``.
        target: class indices, or class probabilities of the logits' shape.
        linear_bias: optional ``(C, d_1, ..., d_K)`` bias.
        weight: optional ``(C,)`` class weights.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        ignore_index: the ignored class index (``-100`` when None; an error with
            probabilities).
        label_smoothing: in ``[0, 1]``.
        options: a ``LinearCrossEntropyOptions`` (accepted; see the module docstring).

    Returns:
        The loss.
    """
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore = -100 if ignore_index is None else ignore_index
    if options is not None and (out_features or label_smoothing != 0.0
                                or target.dtype != dtypes.int64):
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features =="
            f" (). Got reduction={reduction!r}, label_smoothing={label_smoothing}, "
            f"target.dtype={target.dtype}, out_features={out_features}, tracing=False, "
            f"linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    flat_w = linear_weight.reshape(-1, in_features)
    flat_b = linear_bias.reshape(-1) if linear_bias is not None else None
    logits = linear(input, flat_w, flat_b).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, ignore_index=ignore,
                         reduction=reduction, label_smoothing=label_smoothing)
