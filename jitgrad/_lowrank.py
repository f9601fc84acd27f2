"""torch's randomized low-rank decompositions, ``svd_lowrank`` and ``pca_lowrank`` (Halko,
Martinsson and Tropp, 2009, Algorithms 4.4 and 5.1), written with jitgrad's ops as torch's
``torch._lowrank`` is with torch's: differentiable, and drawing their random matrix from
jitgrad's generator (``manual_seed`` makes them repeatable)."""

from __future__ import annotations

from typing import Any

from . import dtypes
from .linalg import qr, svd
from .random import randn

__all__ = ["svd_lowrank", "pca_lowrank", "get_approximate_basis"]


def _floating(A: Any) -> dtypes.dtype:  # noqa: N803
    return A.dtype if A.dtype.is_floating_point else dtypes.float32


def get_approximate_basis(A: Any, q: int, niter: int | None = 2,  # noqa: N803
                          M: Any = None) -> Any:  # noqa: N803
    """A tensor ``Q`` of ``q`` orthonormal columns such that ``Q Q^H (A - M)`` approximates
    ``A - M`` (``M`` None: ``A``), from ``niter`` subspace iterations on a Gaussian sketch.

    Args:
        A: ``(*, m, n)``.
        q: the dimension of the subspace.
        niter: the subspace iterations (default 2).
        M: ``A``'s mean, ``(*, m, n)``, or None.
    """
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.is_complex() else _floating(A)
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)  # noqa: N806
    X = A @ R  # noqa: N806
    if M is not None:
        X = X - M @ R  # noqa: N806
    Q = qr(X).Q  # noqa: N806
    for _ in range(niter):
        X = A.mH @ Q  # noqa: N806
        if M is not None:
            X = X - M.mH @ Q  # noqa: N806
        Q = qr(X).Q  # noqa: N806
        X = A @ Q  # noqa: N806
        if M is not None:
            X = X - M @ Q  # noqa: N806
        Q = qr(X).Q  # noqa: N806
    return Q


def _svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2,  # noqa: N803
                 M: Any = None) -> tuple:  # noqa: N803
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))  # noqa: N806
    if m < n:
        A = A.mH  # noqa: N806
        if M is not None:
            M = M.mH  # noqa: N806
    Q = get_approximate_basis(A, q, niter=niter, M=M)  # noqa: N806
    B = Q.mH @ A  # noqa: N806
    if M is not None:
        B = B - Q.mH @ M  # noqa: N806
    U, S, Vh = svd(B, full_matrices=False)  # noqa: N806
    V = Vh.mH  # noqa: N806
    U = Q @ U  # noqa: N806
    if m < n:
        U, V = V, U  # noqa: N806
    return U, S, V


def svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2,  # noqa: N803
                M: Any = None) -> tuple:  # noqa: N803
    """The singular value decomposition ``(U, S, V)`` of a matrix or batch of matrices ``A``
    (of ``A - M`` when ``M`` is given) such that ``A ~ U diag(S) V^H``, approximated from a
    randomized ``q``-dimensional subspace.

    Args:
        A: ``(*, m, n)``.
        q: a slightly overestimated rank of ``A`` (default 6).
        niter: the subspace iterations (default 2).
        M: ``(*, 1, n)`` or ``(*, m, n)``, subtracted from ``A``; or None.

    Returns:
        ``U`` ``(*, m, q)``, ``S`` ``(*, q)``, ``V`` ``(*, n, q)``.
    """
    return _svd_lowrank(A, q, niter=niter, M=M)


def pca_lowrank(A: Any, q: int | None = None, center: bool = True,  # noqa: N803
                niter: int = 2) -> tuple:
    """Linear Principal Component Analysis of a low-rank matrix or batch of them: the
    ``svd_lowrank`` of ``A`` with its column means subtracted (``center``), so that the
    columns of ``V`` are the principal directions and ``S ** 2 / (m - 1)`` the variances.

    Args:
        A: ``(*, m, n)``: ``m`` samples of ``n`` features.
        q: a slightly overestimated rank of ``A`` (default ``min(6, m, n)``).
        center: subtract the column means first.
        niter: the subspace iterations (default 2).

    Returns:
        ``U`` ``(*, m, q)``, ``S`` ``(*, q)``, ``V`` ``(*, n, q)``.
    """
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, "
                         f"n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)  # noqa: N806
    return _svd_lowrank(A - C, q, niter=niter, M=None)
