"""torch's deprecated linear-algebra functions, each on its ``torch.linalg`` replacement and
warning once per process, as torch does: ``cholesky``, ``qr``, ``lu``, ``lu_solve``."""

from __future__ import annotations

from collections import namedtuple

from .._config import warn_once
from .linalg2 import LinAlgError
from .linalg2 import cholesky as _cholesky
from .linalg_decomp import qr as _qr
from .linalg_more import lu_factor_ex
from .linalg_more import lu_solve as _lu_solve
from .surface import public

QRResult = namedtuple("qr", ["Q", "R"])


@public("cholesky", method=True)
def cholesky(input, upper: bool = False):  # noqa: A002
    """(deprecated) ``linalg.cholesky(input)``, or its conjugate transpose with ``upper``."""
    warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and "
               "will be removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
               "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
               "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
               "transform will produce equivalent results for all valid (symmetric positive "
               "definite) inputs.")
    try:
        low = _cholesky(input)
    except LinAlgError as e:  # (torch's kernel names the function it serves)
        raise LinAlgError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None
    return low.mH if upper else low


@public("qr", method=True)
def qr(input, some: bool = True):  # noqa: A002
    """(deprecated) ``(Q, R)`` of ``linalg.qr(input, "reduced" if some else "complete")``."""
    warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in "
               "a future PyTorch release.\nThe boolean parameter 'some' has been replaced with "
               "a string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    q, r = _qr(input, "reduced" if some else "complete")
    return QRResult(q, r)


@public("lu", method=True)
def lu(A, pivot: bool = True, get_infos: bool = False):  # noqa: N803
    """(deprecated) ``(LU, pivots)`` (and ``infos`` with ``get_infos``) of
    ``linalg.lu_factor_ex``."""
    warn_once("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
               "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
               "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots = "
               "torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
               "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
               "torch.linalg.lu_factor_ex(A, compute_pivots)")
    factors, pivots, infos = lu_factor_ex(A, pivot=pivot)
    return (factors, pivots, infos) if get_infos else (factors, pivots)


@public("lu_solve", method=True)
def lu_solve(input, LU_data, LU_pivots):  # noqa: A002,N803
    """(deprecated) ``linalg.lu_solve(LU_data, LU_pivots, input)``."""
    warn_once("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand "
               "will be removed in a future PyTorch release.\nNote that torch.linalg.lu_solve "
               "has its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be "
               "replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return _lu_solve(LU_data, LU_pivots, input)
