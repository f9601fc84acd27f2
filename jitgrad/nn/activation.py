"""Activation modules: Sigmoid, LeakyReLU, ELU, Softplus, Softmax and LogSoftmax.

(``ReLU``, ``Tanh``, ``GELU`` and ``SiLU`` live in ``layers.py``.) Each calls its
``jitgrad.nn.functional`` function and prints its arguments as torch does.
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Sigmoid", "LeakyReLU", "ELU", "Softplus", "Softmax", "LogSoftmax"]


class Sigmoid(Module):
    """Elementwise logistic sigmoid ``1 / (1 + exp(-x))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.sigmoid()


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``.

    Args:
        negative_slope: slope for negative inputs. Default: 0.01.
        inplace: operate in place. Default: False.
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``.

    Args:
        alpha: the saturation value for negative inputs. Default: 1.0.
        inplace: operate in place. Default: False.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

    Args:
        beta: the sharpness. Default: 1.0.
        threshold: above it the function is the identity. Default: 20.0.
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """Softmax along ``dim`` (``None`` picks torch's legacy implicit dim, with a warning).

    Args:
        dim: the dimension the outputs sum to 1 along.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``.

    Args:
        dim: the dimension to normalize along.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
