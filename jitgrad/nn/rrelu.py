"""Randomized leaky ReLU: ``F.rrelu``/``F.rrelu_`` and the RReLU layer (torch's arguments).

In training each negative element is scaled by its own slope drawn uniformly from
``[lower, upper]`` (the gradient is that slope); in eval by ``(lower + upper) / 2``.
"""

from __future__ import annotations

from typing import Any

from ..ops.selection import where
from ..tensor import Tensor
from ._functional_core import leaky_relu
from .module import Module

__all__ = ["rrelu", "rrelu_"]


def _rrelu(input: Tensor, lower: float, upper: float, training: bool,  # noqa: A002
           generator: Any = None) -> Tensor:
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    from ..random import rand

    noise = rand(input.shape, dtype=input.dtype, device=input.device, generator=generator)
    slope = noise * (upper - lower) + lower
    return where(input >= 0, input, input * slope)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative elements times a slope drawn from ``U(lower, upper)``
    in training, times ``(lower + upper) / 2`` otherwise.

    Args:
        input: the input.
        lower: the lower bound of the slopes. Default: 1/8.
        upper: the upper bound of the slopes. Default: 1/3.
        training: draw the slopes. Default: False.
        inplace: write the result into ``input``. Default: False.
    """
    out = _rrelu(input, lower, upper, training)
    return input.copy_(out) if inplace else out


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, True)


class RReLU(Module):
    """Randomized leaky ReLU (torch.nn.RReLU); see ``F.rrelu``.

    Args:
        lower: the lower bound of the slopes. Default: 1/8.
        upper: the upper bound of the slopes. Default: 1/3.
        inplace: operate in place. Default: False.
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")
