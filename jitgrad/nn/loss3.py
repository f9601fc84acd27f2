"""More loss modules with torch.nn's constructor arguments: CTCLoss, MultiMarginLoss,
MultiLabelMarginLoss, TripletMarginWithDistanceLoss, NLLLoss2d (deprecated) and
AdaptiveLogSoftmaxWithLoss (see ``nn.functional`` for the math)."""

from __future__ import annotations

import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np

from ..ops.creation import tensor
from ..tensor import Tensor
from . import _functional_ctc, _functional_loss3
from ._functional_core import log_softmax
from .container import ModuleList
from .layers import Linear, Sequential
from .loss import NLLLoss, _Loss, _WeightedLoss
from .module import Module

__all__ = ["CTCLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
           "TripletMarginWithDistanceLoss", "NLLLoss2d", "AdaptiveLogSoftmaxWithLoss"]


class CTCLoss(_Loss):
    """``F.ctc_loss`` with ``blank`` (default 0), ``reduction`` and ``zero_infinity``."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
                target_lengths: Tensor) -> Tensor:
        return _functional_ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths,
                                        self.blank, self.reduction, self.zero_infinity)


class MultiMarginLoss(_WeightedLoss):
    """``F.multi_margin_loss`` with ``p`` (1 or 2), ``margin`` and a class ``weight``."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _functional_loss3.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """``F.multilabel_margin_loss``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _functional_loss3.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``F.triplet_margin_with_distance_loss`` (keyword-only ``distance_function``,
    ``margin``, ``swap``, ``reduction``)."""

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return _functional_loss3.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of ``NLLLoss`` (warns a FutureWarning, as torch)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
                      FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation for large output spaces (Grave et al.), as torch:
    a ``head`` Linear over the shortlist plus one entry per cluster, and a ``tail`` of
    ``Sequential(Linear(in, in // div_value ** (i + 1)), Linear(.., cluster size))``.

    Args:
        in_features: the number of input features.
        n_classes: the number of classes.
        cutoffs: increasing cluster boundaries in ``[1, n_classes - 1]``.
        div_value: the divisor of each tail cluster's hidden size.
        head_bias: whether ``head`` has a bias.
        device: the parameters' device.
        dtype: the parameters' dtype.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,  # noqa: ANN001
                 dtype=None) -> None:  # noqa: ANN001
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initializes ``head`` and the tail's Linears."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """Returns ``(output, loss)``: each sample's log-probability of its target, and the
        mean negative of those."""
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        inp = input_ if batched else input_.unsqueeze(0)
        tg = np.asarray(target_.detach().cpu().numpy()).astype(np.int64).reshape(-1)
        batch = tg.shape[0]
        gather = np.zeros(batch, dtype=np.int64)
        output = inp.new_zeros(batch)
        bounds = [0] + self.cutoffs
        used = 0
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            rows = np.nonzero((tg >= low) & (tg < high))[0]
            if rows.size == 0:
                continue
            if i == 0:
                gather[rows] = tg[rows]
            else:
                row_t = tensor(rows, device=inp.device)
                rel = tensor(tg[rows] - low, device=inp.device)
                cluster = log_softmax(self.tail[i - 1](inp.index_select(0, row_t)), 1)
                local = cluster.gather(1, rel.unsqueeze(1)).squeeze(1)
                output = output.index_copy(0, row_t, local)
                gather[rows] = self.shortlist_size + i - 1
            used += rows.size
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{tg.min()}, {tg.max()}] were found. ")
        head_logprob = log_softmax(self.head(inp), 1)
        idx = tensor(gather, device=inp.device).unsqueeze(1)
        output = output + head_logprob.gather(1, idx).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:  # noqa: A002
        head_logprob = log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, _ in enumerate(pairwise(self.cutoffs)):
            cluster = log_softmax(self.tail[i](input), 1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        from ..ops.movement import cat

        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """The ``(N, n_classes)`` log-probabilities of every class."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """The most probable class of each sample (``log_prob(input).argmax(1)``)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = np.asarray((output >= self.shortlist_size).numpy())
        if not outside.any():
            return output
        if outside.all():
            return self._get_full_log_prob(input, head_output).argmax(1)
        rows = tensor(np.nonzero(outside)[0], device=input.device)
        best = self._get_full_log_prob(input.index_select(0, rows),
                                       head_output.index_select(0, rows)).argmax(1)
        return output.index_copy(0, rows, best)
