"""``jitgrad.linalg``: torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``).

``vector_norm`` is one primitive with its own node (``LinalgVectorNormBackward0``); the induced
matrix norms are sums and max/min of absolute values (``AmaxBackward0``/``AminBackward0``), as
in torch; the spectral (``ord=2``, ``-2``) and nuclear (``'nuc'``) norms reduce ``svdvals``
(``LinalgSvdBackward0``), whose second derivative is not implemented (it raises).
"""

from __future__ import annotations

from .ops.torch_extras import linalg_cross as cross
from .ops.norms import linalg_norm as norm
from .ops.norms import matrix_norm, svdvals, vector_norm

__all__ = ["cross", "matrix_norm", "norm", "svdvals", "vector_norm"]
