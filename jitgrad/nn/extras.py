"""``RMSNorm``, ``CosineSimilarity`` and ``PairwiseDistance``: torch's modules over the
functions of ``ops/torch_extras3.py``."""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..ops.creation import empty
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["RMSNorm", "CosineSimilarity", "PairwiseDistance"]


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims, times a
    learned ``weight`` (ones at first).

    Args:
        normalized_shape: the trailing shape normalized over (an int or a sequence).
        eps: added to the mean square; default: the input dtype's machine epsilon.
        elementwise_affine: learn ``weight``. Default: True.
        device: only ``None``/``"cpu"``. dtype: parameter dtype.
    """

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: dtypes.dtype | None = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets ``weight`` to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class CosineSimilarity(Module):
    """``F.cosine_similarity(x1, x2, dim, eps)``.

    Args:
        dim: the dim compared along. Default: 1. eps: the norms' floor. Default: 1e-8.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``F.pairwise_distance(x1, x2, p, eps, keepdim)``.

    Args:
        p: the norm's degree. Default: 2. eps: added to the difference. Default: 1e-6.
        keepdim: keep the last dim. Default: False.
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
