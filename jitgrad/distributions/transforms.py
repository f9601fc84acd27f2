"""Transforms between constrained and unconstrained spaces, as ``torch.distributions.transforms``.

``Transform`` and the element-wise transforms are in ``_transforms_base``, the structured ones
(simplex, Cholesky, correlation, reshape, concatenation, stacking, CDF) in
``_transforms_matrix``; this module exports them under torch's names.
"""

from jitgrad.distributions._transforms_base import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
    Transform,
    _InverseTransform,
    identity_transform,
)
from jitgrad.distributions._transforms_matrix import (
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "_InverseTransform",
    "identity_transform",
]
