"""``jitgrad.linalg``: torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``) and
square-matrix functions (``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``,
``matrix_power``, ``multi_dot``; ``ops/linalg2.py``), decompositions and least squares
(``eigh``, ``eigvalsh``, ``qr``, ``svd``, ``pinv``, ``lstsq``, ``matrix_rank``,
``solve_triangular``; ``ops/linalg_decomp.py``).

``vector_norm`` is one primitive with its own node (``LinalgVectorNormBackward0``); the induced
matrix norms are sums and max/min of absolute values (``AmaxBackward0``/``AminBackward0``), as
in torch; the spectral (``ord=2``, ``-2``) and nuclear (``'nuc'``) norms reduce ``svdvals``
(``LinalgSvdBackward0``), whose second derivative is not implemented (it raises).
"""

from __future__ import annotations

from .ops import linalg2, linalg_decomp, norms, torch_extras
from .ops.linalg2 import LinAlgError
from .ops.out_arg import with_out

# each takes torch's out= (ops/out_arg.py)
cross = with_out("linalg_cross", torch_extras.linalg_cross)
matrix_norm = with_out("linalg_matrix_norm", norms.matrix_norm)
norm = with_out("linalg_norm", norms.linalg_norm)
svdvals = with_out("linalg_svdvals", norms.svdvals)
vector_norm = with_out("linalg_vector_norm", norms.vector_norm)
inv = with_out("linalg_inv", linalg2.inverse)
det = with_out("linalg_det", linalg2.det)
slogdet = with_out("linalg_slogdet", linalg2.slogdet)
solve = with_out("linalg_solve", linalg2.solve)
cholesky = with_out("linalg_cholesky", linalg2.cholesky)
matrix_power = with_out("linalg_matrix_power", linalg2.matrix_power)
multi_dot = with_out("linalg_multi_dot", linalg2.multi_dot)
eigh = with_out("linalg_eigh", linalg_decomp.eigh)
eigvalsh = with_out("linalg_eigvalsh", linalg_decomp.eigvalsh)
qr = with_out("linalg_qr", linalg_decomp.qr)
svd = with_out("linalg_svd", linalg_decomp.svd)
pinv = with_out("linalg_pinv", linalg_decomp.pinv)
matrix_rank = with_out("linalg_matrix_rank", linalg_decomp.matrix_rank)
solve_triangular = with_out("linalg_solve_triangular", linalg_decomp.solve_triangular)
lstsq = linalg_decomp.lstsq

__all__ = ["LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "lstsq",
           "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "solve_triangular", "svd", "svdvals", "vector_norm"]
