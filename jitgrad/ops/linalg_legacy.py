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


# torch's functions removed in 1.9: each raises torch's text naming its torch.linalg replacement
_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_REMOVED_TEXTS = {
    "solve": (
        " `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has "
        "its arguments reversed and does not return the LU factorization.\n\nTo get the LU "
        "factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
        "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = "
        "torch.linalg.solve(A, B)"),
    "eig": (
        " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
        "real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced "
        "with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
        "eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
        "torch.linalg.eig(A)"),
    "lstsq": (
        " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` "
        "has reversed arguments and does not return the QR decomposition in the returned tuple "
        "(although it returns other information about the problem).\n\nTo get the QR "
        "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
        "`torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
        "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
        "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ "
        "= torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = "
        "torch.linalg.lstsq(A, B).solution"),
    "symeig": (
        " The default behavior has changed from using the upper triangular portion of the "
        "matrix by default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, "
        "upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper "
        "else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced "
        "with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"),
    "matrix_rank": (
        "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
        "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."),
}


def _removed(name: str):
    def removed(*args, **kwargs):
        raise RuntimeError(_REMOVED + _REMOVED_TEXTS[name])

    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"(removed in torch 1.9) raises torch's RuntimeError naming ``{name}``'s " \
        "``linalg`` replacement."
    return public(name, method=name != "matrix_rank")(removed)


solve, eig, lstsq, symeig, matrix_rank = (_removed(n) for n in _REMOVED_TEXTS)
