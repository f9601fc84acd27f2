"""The gradient of ``lobpcg``'s eigenpairs with respect to ``A`` (torch's
``_symeig_backward``): the complete-eigenspace formula, and for ``k < m`` eigenpairs the
polynomial solution of a Sylvester equation on the orthogonal complement (Hu and Cheng, 2006),
written with jitgrad ops as torch's ``torch._lobpcg`` is with torch's."""

from __future__ import annotations

from typing import Any

from .linalg import cholesky
from .ops.creation import eye, zeros
from .ops.elementwise import where
from .ops.linalg_more2 import cholesky_solve
from .random import Generator, randn

__all__ = ["symeig_backward"]


def _complete(D_grad: Any, U_grad: Any, D: Any, U: Any) -> Any:  # noqa: N803
    """``U (diag(D_grad) + (U^T U_grad) * F) U^T`` with ``F_ij = 1 / (d_j - d_i)``, 0 on the
    diagonal."""
    diff = D.unsqueeze(-2) - D.unsqueeze(-1)
    n = D.shape[-1]
    F = 1 / where(eye(n, dtype=D.dtype, device=D.device).bool(), float("inf"), diff)  # noqa: N806
    Ut = U.mT  # noqa: N806
    return U @ ((D_grad.diag_embed() + (Ut @ U_grad) * F) @ Ut)


def _polynomial_coefficients_given_roots(roots: Any) -> Any:
    """The coefficients ``(a_0, ..., a_n == 1)`` of ``prod_i (x - r_i)`` (Horner's rule)."""
    order = roots.shape[-1]
    shape = tuple(roots.shape[:-1]) + (order + 2,)
    coeffs = zeros(shape, dtype=roots.dtype, device=roots.device)
    coeffs[..., 0] = 1
    coeffs[..., -1] = 1
    for i in range(1, order + 1):
        new = coeffs.clone()
        new[..., order - i:order + 1] = (coeffs[..., order - i:order + 1]
                                         - roots[..., i - 1:i] * coeffs[..., order - i + 1:
                                                                         order + 2])
        coeffs = new
    return coeffs[..., 1:order + 2]


def _vector_polynomial_value(poly: Any, x: Any) -> Any:
    res = x.new_ones(1).expand(tuple(x.shape))
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = poly[..., k].unsqueeze(-1) + x * res
    return res


def _matrix_polynomial_value(poly: Any, x: Any) -> Any:
    n = x.shape[-1]
    ident = eye(n, dtype=x.dtype, device=x.device)
    res = ident.reshape((1,) * (x.ndim - 2) + (n, n))
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = x @ res + poly[..., k].unsqueeze(-1).unsqueeze(-1) * ident
    return res


def _partial(D_grad: Any, U_grad: Any, A: Any, D: Any, U: Any,  # noqa: N803
             largest: bool) -> Any:
    Ut = U.mT  # noqa: N806
    n = A.shape[-1]
    proj = eye(n, dtype=A.dtype, device=A.device) - U @ Ut
    gen = Generator()  # (a fixed generator: deterministic, as torch's)
    U_ortho = proj @ randn(tuple(A.shape[:-1]) + (n - D.shape[-1],), dtype=A.dtype,  # noqa: N806
                           generator=gen)
    U_ortho_t = U_ortho.mT  # noqa: N806
    chr_poly = _polynomial_coefficients_given_roots(D)
    projected = U_grad
    series = zeros(tuple(U_grad.shape), dtype=U_grad.dtype, device=U_grad.device)
    k = 0
    for k in range(1, chr_poly.shape[-1]):
        series = series + projected * _vector_polynomial_value(chr_poly[..., k:], D).unsqueeze(-2)
        projected = A @ projected
    at_ortho = U_ortho_t @ (_matrix_polynomial_value(chr_poly, A) @ U_ortho)
    sign = -1 if (largest and k % 2 == 1) else 1
    L = cholesky(sign * at_ortho)  # noqa: N806
    res = _complete(D_grad, U_grad, D, U)
    return res - (U_ortho @ (sign * cholesky_solve(U_ortho_t @ series, L))) @ Ut


def symeig_backward(D_grad: Any, U_grad: Any, A: Any, D: Any, U: Any,  # noqa: N803
                    largest: bool) -> Any:
    """The gradient with respect to the symmetric ``A`` of its eigenpairs ``(D, U)`` (all of
    them, or the ``k`` largest/smallest), given the gradients of ``D`` and ``U``."""
    if U.shape[-1] == U.shape[-2]:
        return _complete(D_grad, U_grad, D, U)
    return _partial(D_grad, U_grad, A, D, U, largest)
