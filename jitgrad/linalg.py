"""``jitgrad.linalg``: torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``).

``vector_norm`` is one primitive with its own node (``LinalgVectorNormBackward0``); the induced
matrix norms are sums and max/min of absolute values (``AmaxBackward0``/``AminBackward0``), as
in torch; the spectral (``ord=2``, ``-2``) and nuclear (``'nuc'``) norms reduce ``svdvals``
(``LinalgSvdBackward0``), whose second derivative is not implemented (it raises).
"""

from __future__ import annotations

from .ops import norms, torch_extras
from .ops.out_arg import with_out

# each takes torch's out= (ops/out_arg.py)
cross = with_out("linalg_cross", torch_extras.linalg_cross)
matrix_norm = with_out("linalg_matrix_norm", norms.matrix_norm)
norm = with_out("linalg_norm", norms.linalg_norm)
svdvals = with_out("linalg_svdvals", norms.svdvals)
vector_norm = with_out("linalg_vector_norm", norms.vector_norm)

__all__ = ["cross", "matrix_norm", "norm", "svdvals", "vector_norm"]
