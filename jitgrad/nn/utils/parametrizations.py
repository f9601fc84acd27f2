"""``torch.nn.utils.parametrizations.weight_norm``: weight normalization as a
parametrization (``parametrizations.weight.original0`` holds ``g``, ``original1`` holds
``v``), recomputed on every access of ``module.weight``."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from ..module import Module
from .parametrize import register_parametrization
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """Parametrizes ``module.<name>`` as ``g * v / ||v||`` (the norm over every dim but
    ``dim``; ``None``: the whole tensor).

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``'weight'``.
        dim: the dim kept by the norm. Default: 0.

    Returns:
        ``module``.
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
