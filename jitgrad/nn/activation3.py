"""More activation modules with torch.nn's arguments and reprs: RReLU, Softmax2d and
CrossMapLRN2d."""

from __future__ import annotations

from ..tensor import Tensor
from . import _functional_act3 as F3
from ._functional_core import softmax
from .module import Module

__all__ = ["RReLU", "Softmax2d", "CrossMapLRN2d"]


class RReLU(Module):
    """Randomized leaky ReLU (``F.rrelu``): random slopes in ``[lower, upper]`` in training,
    their mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F3.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"


class Softmax2d(Module):
    """Softmax over the channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return softmax(input, -3)


class CrossMapLRN2d(Module):
    """Local response normalization across channels of a 4-D input, torch's legacy module
    (its channel window is kept exactly)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F3.cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
