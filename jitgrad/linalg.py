"""``jitgrad.linalg``: torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``) and
square-matrix functions (``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``,
``matrix_power``, ``multi_dot``; ``ops/linalg2.py``), decompositions (``eigh``,
``eigvalsh``, ``qr``, ``svd``, ``solve_triangular``; ``ops/linalg_decomp.py``), the
pseudo-inverse and least squares (``pinv``, ``matrix_rank``, ``lstsq``;
``ops/linalg_pinv.py``), the LU family and ``matrix_exp``
(``ops/linalg_more.py``), ``eig``/``eigvals``, the ``*_ex`` variants and ``vecdot``, ``cond``,
``vander``, ``tensorinv``, ``tensorsolve``, ``householder_product`` (``ops/linalg_more2.py``).

``vector_norm`` is one primitive with its own node (``LinalgVectorNormBackward0``); the induced
matrix norms are sums and max/min of absolute values (``AmaxBackward0``/``AminBackward0``), as
in torch; the spectral (``ord=2``, ``-2``) and nuclear (``'nuc'``) norms reduce ``svdvals``
(``LinalgSvdBackward0``), whose second derivative is not implemented (it raises).
"""

from __future__ import annotations

from .ops import (linalg2, linalg_decomp, linalg_more, linalg_more2, linalg_pinv, norms,
                  torch_extras)
from .ops.linalg import matmul as _matmul
from .ops.torch_extras2 import diagonal as _diagonal
from .ops.linalg2 import LinAlgError
from .ops.numpy_compat import torch_names
from .ops.out_arg import with_out
from .ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: F401 - (LDL^T)

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
pinv = with_out("linalg_pinv", linalg_pinv.pinv)
matrix_rank = with_out("linalg_matrix_rank", linalg_pinv.matrix_rank)
solve_triangular = with_out("linalg_solve_triangular", linalg_decomp.solve_triangular)
lstsq = linalg_pinv.lstsq
lu_factor = with_out("linalg_lu_factor", linalg_more.lu_factor)
lu_factor_ex = with_out("linalg_lu_factor_ex", linalg_more.lu_factor_ex)
lu = with_out("linalg_lu", linalg_more.lu)
lu_solve = with_out("linalg_lu_solve", linalg_more.lu_solve)
matrix_exp = linalg_more.matrix_exp
eig = with_out("linalg_eig", linalg_more2.eig)
eigvals = with_out("linalg_eigvals", linalg_more2.eigvals)
inv_ex = with_out("linalg_inv_ex", linalg_more2.inv_ex)
solve_ex = with_out("linalg_solve_ex", linalg_more2.solve_ex)
cholesky_ex = with_out("linalg_cholesky_ex", linalg_more2.cholesky_ex)
vecdot = with_out("linalg_vecdot", linalg_more2.vecdot)
cond = with_out("linalg_cond", linalg_more2.cond)
vander = linalg_more2.vander
tensorinv = with_out("linalg_tensorinv", linalg_more2.tensorinv)
tensorsolve = with_out("linalg_tensorsolve", linalg_more2.tensorsolve)
householder_product = with_out("linalg_householder_product", linalg_more2.householder_product)
matmul = with_out("linalg_matmul", _matmul)


# torch's parser names (native_functions.yaml's, ``self`` read as ``input``) where its docs say
# ``A``, ``B``, ``x``: ``torch.linalg.cholesky(input=a)`` works, ``cholesky(A=a)`` does not
_INPUT_A = ("cholesky", "cholesky_ex", "cond", "eig", "eigh", "eigvals", "eigvalsh",
            "householder_product", "ldl_factor", "ldl_factor_ex", "matrix_norm",
            "matrix_rank", "norm", "pinv", "tensorinv")
for _name in _INPUT_A:
    globals()[_name] = torch_names(globals()[_name], f"linalg_{_name}", input="A")
lstsq = torch_names(lstsq, "linalg_lstsq", input="A", b="B")
solve_triangular = torch_names(solve_triangular, "linalg_solve_triangular", input="A")
tensorsolve = torch_names(tensorsolve, "linalg_tensorsolve", input="A", other="B")
vector_norm = torch_names(vector_norm, "linalg_vector_norm", input="x")
inv = torch_names(inv, "linalg_inv", A="input")
det = torch_names(det, "linalg_det", A="input")
slogdet = torch_names(slogdet, "linalg_slogdet", A="input")


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: N803
    """The diagonals of (a batch of) matrices (``torch.diagonal`` with matrix defaults)."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
           "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve",
           "vander", "vecdot", "vector_norm"]
