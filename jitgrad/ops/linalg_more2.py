"""torch.linalg's ``eig``/``eigvals`` (one op, ``LinalgEigBackward0``), the ``*_ex`` variants
with LAPACK's ``info``, and the functions torch composes from other ops: ``vecdot``, ``cond``,
``vander``, ``tensorinv``, ``tensorsolve``, ``householder_product``, and the top-level legacy
``svd``, ``pinverse``, ``cholesky_solve``, ``cholesky_inverse``, ``triangular_solve``,
``chain_matmul``.

``eig``'s gradient is torch's for losses invariant to each eigenvector's phase:
``gA = V^-H (diag(gL) + (V^H gV - V^H V Re diag(V^H gV)) / conj(E)) V^H``,
``E_ij = L_j - L_i`` (its real part for a real ``A``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .autocast_policy import FP32, LOWER, autocast_policy
from .. import dtypes
from ..errors import user_stacklevel
from .linalg2 import (
    _NOT_PD, LINALG_CHOLESKY, LINALG_INV, LINALG_SOLVE, LinAlgError, _check_square, _mh,
    _refuse_kernel)
from .linalg2 import solve as _solve
from .linalg_decomp import (SOLVE_TRIANGULAR, _check_matrix, _diag_embed, _eye_like,
                            svd as _svd)
from .linalg_more import LU_FACTOR_EX, lu_solve
from .memory_formats import column_major, to_column_major
from .registry import AUTOCAST_FP32, OPAQUE, apply, defop
from .op_fields import no_derivative
from .return_types import return_type
from .surface import public

EigResult = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
InvExResult = return_type("linalg_inv_ex", ["inverse", "info"])
SolveExResult = return_type("linalg_solve_ex", ["result", "info"])
CholeskyExResult = return_type("linalg_cholesky_ex", ["L", "info"])
SvdResult = return_type("svd", ["U", "S", "V"])
TriangularSolveResult = return_type("triangular_solve", ["solution", "cloned_coefficient"])


# ---------------------------------------------------------------- eig


def _eig_meta(a):
    if a.ndim >= 2 and not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {a.dtype._scalar_name}")
    _check_square("linalg.eig", a)
    _refuse_kernel(a, "linalg_eig_out_cpu")
    cdt = a.dtype if a.dtype.is_complex else a.dtype.to_complex()
    return (tuple(a.shape[:-1]), tuple(a.shape)), (cdt, cdt)


def _eig_impl(a):
    cdt = a.dtype if np.iscomplexobj(a) else (np.complex64 if a.dtype == np.float32
                                              else np.complex128)
    try:
        values, vectors = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.eig: The algorithm failed to converge because the input "
                          "matrix is ill-conditioned or has too many repeated eigenvalues "
                          "(error code: 1).") from None
    return values.astype(cdt, copy=False), vectors.astype(cdt, copy=False)


def _off_diagonal(e, fill):
    from .selection import where

    eye = _eye_like(e.shape[-1], e).bool()
    return eye, where(eye, fill, e)


def _eig_vjp(grads, ans, a):
    from .selection import where

    g_values, g_vectors = grads
    values, vectors = ans
    vh = _mh(vectors)
    eye = _eye_like(values.shape[-1], values).bool()
    if g_vectors is None:
        inner = _diag_embed(g_values)
    else:
        vhgv = vh @ g_vectors
        re_diag = vhgv.diagonal(0, -2, -1).real.to(vhgv.dtype)
        x = vhgv - vh @ (vectors * re_diag.unsqueeze(-2))
        conj = values.conj()
        e = conj.unsqueeze(-2) - conj.unsqueeze(-1)
        e = where(eye, 1.0, e)
        diag = _diag_embed(g_values) if g_values is not None else 0.0 * x
        inner = where(eye, diag, x / e)
    g_a = _solve(vh, inner @ vh)
    return (g_a if a.dtype.is_complex else g_a.real,)


def _eig_jvp(tangents, ans, a):
    from .selection import where

    values, vectors = ans
    da = tangents[0].to(vectors.dtype)
    dp = _solve(vectors, da @ vectors)
    d_values = dp.diagonal(0, -2, -1)
    eye = _eye_like(values.shape[-1], values).bool()
    e = where(eye, 1.0, values.unsqueeze(-2) - values.unsqueeze(-1))
    dv = vectors @ where(eye, 0.0, dp / e)
    dv = dv - vectors * (_mh(vectors) @ dv).diagonal(0, -2, -1).real.to(dv.dtype).unsqueeze(-2)
    return d_values, dv


LINALG_EIG = defop("linalg_eig", column_major(_eig_impl, (1,)), kind=OPAQUE, meta=_eig_meta,
                   n_outputs=2, autocast=AUTOCAST_FP32,
                   save=(0,), save_output=True, node_name="LinalgEigBackward0", vjp=_eig_vjp,
                   jvp=_eig_jvp)


def eig(A):  # noqa: N803
    """Eigenvalues and (unit-norm) eigenvectors of (a batch of) square matrices, complex even
    for a real ``A``. Differentiable for losses invariant to each eigenvector's phase, where
    the eigenvalues are distinct."""
    return EigResult(*apply(LINALG_EIG, A))


def eigvals(A):  # noqa: N803
    """The (complex) eigenvalues of (a batch of) square matrices."""
    return apply(LINALG_EIG, A)[0]


# ---------------------------------------------------------------- *_ex: with LAPACK's info


def _first_failure(info: np.ndarray) -> tuple[str, int]:
    """torch's ``"(Batch element i): "`` prefix (for a batch) and the code of the first
    failing matrix."""
    flat = info.reshape(-1)
    i = int(np.flatnonzero(flat > 0)[0])
    return (f"(Batch element {i}): " if info.ndim else ""), int(flat[i])


def _values(t):
    """``t``'s NumPy values, or None where it has none (traced by jit, batched by vmap): the
    ``*_ex`` functions and ``cond`` then take the non-singular path, whose op raises torch's
    ``LinAlgError`` at run time for a singular matrix."""
    from ..errors import ConcretizationError

    try:
        return t.detach().numpy()
    except (ConcretizationError, RuntimeError):
        return None


def _failed(info) -> bool:
    codes = _values(info)
    return codes is not None and bool((codes > 0).any())


def _info_tensor(info):
    from ..tensor import _new

    return _new(np.asarray(info, np.int32), dtypes.int32)


def inv_ex(A, *, check_errors: bool = False):  # noqa: N803
    """``(inverse, info)``: ``info > 0`` where a matrix is singular (its inverse then holds
    inf/nan as LAPACK's, and has no gradient); ``check_errors`` raises instead."""
    _check_square("linalg.inv_ex", A)
    lu, piv, info = apply(LU_FACTOR_EX, A.detach(), pivot=True)
    if not _failed(info):
        return InvExResult(apply(LINALG_INV, A), info)
    if check_errors:
        where, code = _first_failure(info.numpy())
        raise LinAlgError(f"linalg.inv_ex: {where}The diagonal element {code} is zero, the "
                          "inversion could not be completed because the input matrix is "
                          "singular.")
    eye = _eye_like(A.shape[-1], A).expand(tuple(A.shape))
    return InvExResult(lu_solve(lu, piv, eye), info)


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):  # noqa: N803
    """``(result, info)`` of ``linalg.solve``; ``info > 0`` where ``A`` is singular (the
    result then holds inf/nan, without gradient); ``check_errors`` raises instead."""
    _check_square("linalg.solve_ex", A)
    lu, piv, info = apply(LU_FACTOR_EX, A.detach(), pivot=True)
    if not _failed(info):
        return SolveExResult(_solve(A, B, left=left), info)
    if check_errors:
        where, _ = _first_failure(info.numpy())
        raise LinAlgError(f"torch.linalg.solve_ex: {where}The solver failed because the input "
                          "matrix is singular.")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.detach().unsqueeze(-1) if vector and left else B.detach()
    if vector and not left:
        b = b.unsqueeze(-2)
    x = lu_solve(lu, piv, b, left=left)
    return SolveExResult(x.squeeze(-1 if left else -2) if vector else x, info)


def _partial_cholesky(a):
    # LAPACK's unblocked potf2: columns before the failing one computed, that one's diagonal
    # the (non-positive) remainder, the rest the input's lower triangle
    m = np.tril(np.array(a, copy=True))
    n = m.shape[-1]
    for j in range(n):
        d = m[j, j] - np.vdot(m[j, :j], m[j, :j])
        if not (d.real > 0):
            m[j, j] = d
            return m, j + 1
        m[j, j] = np.sqrt(d.real)
        m[j + 1:, j] = (m[j + 1:, j] - m[j + 1:, :j] @ np.conj(m[j, :j])) / m[j, j].real
    return m, 0


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):  # noqa: N803
    """``(L, info)`` of ``linalg.cholesky``; ``info > 0`` (the order of the first leading
    minor that is not positive-definite) where a matrix is not positive-definite (``L`` is
    then LAPACK's partial factor, without gradient); ``check_errors`` raises instead."""
    from ..tensor import _new

    _check_square("linalg.cholesky", A)
    a = _values(A)
    if a is None:
        zeros = (A.real if A.dtype.is_complex else A)[..., 0, 0].detach() * 0
        return CholeskyExResult(apply(LINALG_CHOLESKY, A, upper=bool(upper)),
                                zeros.to(dtypes.int32))
    flat = a.reshape(-1, *a.shape[-2:])
    parts = [_partial_cholesky(m) for m in flat]
    info = np.array([p[1] for p in parts], np.int32).reshape(a.shape[:-2])
    if not (info > 0).any():
        return CholeskyExResult(apply(LINALG_CHOLESKY, A, upper=bool(upper)),
                                _info_tensor(info))
    if check_errors:
        where, code = _first_failure(info)
        raise LinAlgError(_NOT_PD.replace("linalg.cholesky: ", f"linalg.cholesky_ex: {where}")
                          .format(code))
    low = np.stack([p[0] for p in parts]).reshape(a.shape).astype(a.dtype, copy=False)
    out = np.conj(np.swapaxes(low, -1, -2)) if upper else low
    return CholeskyExResult(_new(np.ascontiguousarray(out), A.dtype), _info_tensor(info))


# ---------------------------------------------------------------- compositions


@autocast_policy(LOWER)
def vecdot(x, y, *, dim: int = -1):
    """``sum(x.conj() * y, dim)``: the dot products of (batches of) vectors along ``dim``."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype._scalar_name}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {x.dtype._scalar_name} and y of type {y.dtype._scalar_name} "
                           "instead")
    return ((x.conj() if x.dtype.is_complex else x) * y).sum(dim)


_COND_ORDS = (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc")


@autocast_policy(FP32)
def cond(A, p=None):  # noqa: N803
    """The condition number of (a batch of) matrices in the norm ``p``: the ratio of extreme
    singular values (``None``, ``2``, ``-2``; any shape), else ``norm(A) * norm(A^-1)``
    (square; ``inf`` for a singular matrix)."""
    from .norms import matrix_norm, svdvals
    from .selection import where

    if p not in _COND_ORDS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_matrix("linalg.cond", A)
    if p in (None, 2, -2):
        s = svdvals(A)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    label = p if isinstance(p, str) else (int(p) if abs(p) != math.inf else
                                          ("inf" if p > 0 else "-inf"))
    _check_square(f"linalg.cond(ord={label})", A)
    lu, piv, info = apply(LU_FACTOR_EX, A.detach(), pivot=True)
    singular = info > 0
    if not _failed(info):
        return matrix_norm(A, p) * matrix_norm(apply(LINALG_INV, A), p)
    eye = _eye_like(A.shape[-1], A).expand(tuple(A.shape))
    inverse = where(singular.unsqueeze(-1).unsqueeze(-1), eye, lu_solve(lu, piv, eye))
    return where(singular, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrix of ``x`` (``(*, n)``): columns ``x^0, x^1, ..., x^(N-1)``."""
    from .movement import cat
    from .scan import cumprod

    n = x.shape[-1] if x.ndim else 1
    n_cols = n if N is None else N
    if n_cols <= 1:
        raise RuntimeError("N must be greater than 1.")
    col = x.unsqueeze(-1)
    ones = (col * 0 + 1).detach()
    powers = cumprod(col.expand(tuple(col.shape[:-1]) + (n_cols - 1,)), -1)
    return cat([ones.to(powers.dtype), powers], -1)


def tensorinv(A, ind: int = 2):  # noqa: N803
    """The inverse of ``A`` as a tensor: ``tensordot(tensorinv(A, ind), A, ind)`` is the
    identity on ``A.shape[ind:]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p_rows, p_cols = math.prod(rows), math.prod(cols)
    if p_rows != p_cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {p_cols} != {p_rows}")
    return apply(LINALG_INV, A.reshape(p_rows, p_cols)).reshape(cols + rows)


def tensorsolve(A, B, dims=None):  # noqa: N803
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims``: dimensions of ``A`` moved to
    the end first."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)  # noqa: N806
    result_shape = tuple(A.shape[B.ndim:])
    n = math.prod(result_shape)
    if math.prod(A.shape) != B.numel() * n or B.numel() != n:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim"
                           ":]) == prod(self.shape[:other.ndim]), but got "
                           f"{n} != {math.prod(A.shape[:B.ndim])}")
    x = apply(LINALG_SOLVE, A.reshape(B.numel(), n), B.reshape(B.numel()), vector=True)
    return x.reshape(result_shape)


def householder_product(A, tau):  # noqa: N803
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i``
    the ``i``-th column of ``A`` below the diagonal and a 1 on it (LAPACK's orgqr)."""
    from .selection import tril

    _check_matrix("torch.linalg.householder_product", A)
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    eye = _eye_like(m, A)
    v = tril(A, -1) + eye[:, :n]
    q = eye.expand(tuple(A.shape[:-2]) + (m, m))
    for i in range(k):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) @ (tau[..., i:i + 1].unsqueeze(-1) * _mh(vi))
    return to_column_major(q)[..., :, :n]  # (LAPACK's layout, as torch's)


GeqrfResult = return_type("geqrf", ["a", "tau"])


def _geqrf_meta(a):
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not (a.dtype.is_floating_point or a.dtype.is_complex) or a.dtype.itemsize < 4:
        raise NotImplementedError(f'"geqrf_cpu" not implemented for \'{a.dtype._scalar_name}\'')
    batch, (m, n) = tuple(a.shape[:-2]), tuple(a.shape[-2:])
    return (tuple(a.shape), batch + (min(m, n),)), (a.dtype, a.dtype)


def _geqrf_impl(a):
    h, tau = np.linalg.qr(a, mode="raw")  # (LAPACK's geqrf, its matrix transposed)
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype, copy=False), \
        tau.astype(a.dtype, copy=False)


GEQRF = defop("geqrf", column_major(_geqrf_impl), kind=OPAQUE, meta=_geqrf_meta, n_outputs=2,
              node_name="GeqrfBackward0", vjp=no_derivative("geqrf"), jvp=no_derivative("geqrf"))


@public("geqrf", method=True)
def geqrf(input):  # noqa: A002
    """LAPACK's geqrf: ``(a, tau)``, R on and above ``a``'s diagonal, the Householder vectors
    of Q below it with their scales ``tau`` (``torch.linalg.householder_product(a, tau)`` is
    Q). Not differentiable, as torch's."""
    return GeqrfResult(*apply(GEQRF, input))


@public("orgqr", method=True)
def orgqr(input, input2):  # noqa: A002
    """``torch.orgqr``: ``linalg.householder_product(input, input2)`` (``input2`` is tau)."""
    return householder_product(input, input2)


def _check_ormqr(input, tau, other, left: bool) -> None:  # noqa: A002
    where = -2 if left else -1
    if input.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError("torch.ormqr: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{input.ndim}")
    if other.ndim != input.ndim:
        raise RuntimeError("torch.ormqr: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {other.ndim} and input.ndim is "
                           f"equal to {input.ndim}")
    batch = list(input.shape[:-2])
    for name, got in (("tau", list(tau.shape[:-1])), ("other", list(other.shape[:-2]))):
        if got != batch:
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {name} to be equal to "
                               f"input.shape[:-2], but got {got}")
    if other.shape[where] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{where}] must be equal to "
                           "input.shape[-2]")
    if tau.shape[-1] != min(other.shape[where], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{where}], input.shape[-1])")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, "
                               f"but input has dtype{input.dtype._scalar_name} and {name} has "
                               f"dtype {t.dtype._scalar_name}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or input.dtype.itemsize < 4:
        raise NotImplementedError(f'"ormqr_cpu" not implemented for '
                                  f"'{input.dtype._scalar_name}'")


@public("ormqr", method=True)
def ormqr(input, input2, input3, left: bool = True, transpose: bool = False):  # noqa: A002
    """``op(Q) @ other`` (``left``) or ``other @ op(Q)``, ``Q`` the product of the Householder
    reflectors ``(input, tau)`` of ``geqrf`` and ``op`` its conjugate transpose with
    ``transpose`` (LAPACK's ormqr): the reflectors applied one by one, so it is
    differentiable in all three arguments."""
    from .selection import tril

    tau, c = input2, input3
    _check_ormqr(input, tau, c, left)
    k = tau.shape[-1]
    v = tril(input[..., :, :k], -1) + _eye_like(input.shape[-2], input)[:, :k]
    scales = tau.conj() if transpose else tau
    order = range(k) if left == bool(transpose) else range(k - 1, -1, -1)
    for i in order:  # H_i = I - tau_i v_i v_i^H
        vi, ti = v[..., :, i:i + 1], scales[..., i:i + 1].unsqueeze(-1)
        c = c - vi @ (ti * (_mh(vi) @ c)) if left else c - ((c @ vi) * ti) @ _mh(vi)
    return to_column_major(c) if k else c.clone()


# ---------------------------------------------------------------- top-level legacy names


@public("svd", method=True)
def svd(input, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """``(U, S, V)`` with ``input = U diag(S) V^H`` (``torch.svd``; ``V``, not ``Vh``).
    ``some``: the reduced decomposition; ``compute_uv=False``: ``U`` and ``V`` are zeros."""
    from .creation import zeros
    from .norms import svdvals

    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return SvdResult(zeros(batch + (m, m), dtype=input.dtype, device=input.device),
                         svdvals(input),
                         zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    u, s, vh = _svd(input, full_matrices=not some)
    return SvdResult(u, s, _mh(vh))


@public("pinverse", method=True)
def pinverse(input, rcond: float = 1e-15):  # noqa: A002
    """The pseudo-inverse, singular values up to ``rcond`` times the largest dropped."""
    from .linalg_pinv import pinv

    return pinv(input, rtol=rcond)


def _cholesky_solve_impl(b, factor, upper):
    from .linalg_decomp import _solve_triangular_impl

    low = np.conj(np.swapaxes(factor, -1, -2)) if upper else factor
    with np.errstate(all="ignore"):
        y = _solve_triangular_impl(low, b, False, False, True)
        return _solve_triangular_impl(np.conj(np.swapaxes(low, -1, -2)), y, True, False, True)


def _cholesky_solve_meta(b, factor, upper):
    for name, t in (("b", b), ("u", factor)):
        if t.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {t.ndim} "
                               "dimensions instead")
    if b.dtype is factor.dtype and (not (b.dtype.is_floating_point or b.dtype.is_complex) or
                                    b.dtype in (dtypes.float16, dtypes.bfloat16)):
        raise NotImplementedError(f'"cholesky_solve_cpu" not implemented for '
                                  f"'{b.dtype._scalar_name}'")
    if b.dtype is not factor.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype._scalar_name} and A of type {factor.dtype._scalar_name} "
                           "instead.")
    if factor.shape[-1] != factor.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{factor.shape[-2]} by {factor.shape[-1]} matrices")
    if factor.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{factor.shape[-1]} by {factor.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    batch = np.broadcast_shapes(tuple(b.shape[:-2]), tuple(factor.shape[:-2]))
    return tuple(batch) + tuple(b.shape[-2:]), b.dtype


def _cholesky_solve_vjp_b(g, ans, b, factor, upper):
    from .vjp_apply import sum_to

    return sum_to(apply(CHOLESKY_SOLVE, g, factor, upper=upper), tuple(b.shape))


def _cholesky_solve_vjp_factor(g, ans, b, factor, upper):
    # torch's cholesky_solve_backward (the factor taken as a dense L with A = L L^H)
    from .vjp_apply import sum_to

    g_b = apply(CHOLESKY_SOLVE, g, factor, upper=upper)
    common = g_b @ _mh(ans)
    common = common + _mh(common)
    g_f = -(factor @ common) if upper else -(common @ factor)
    return sum_to(g_f, tuple(factor.shape))


def _cholesky_solve_jvp(tangents, ans, b, factor, upper):
    # dX = A^-1 (dB - dA X), A = L L^H (U^H U), dA = dL L^H + L dL^H
    d_b, d_f = tangents
    rhs = d_b
    if d_f is not None:
        d_a = _mh(d_f) @ factor + _mh(factor) @ d_f if upper else \
            d_f @ _mh(factor) + factor @ _mh(d_f)
        rhs = -(d_a @ ans) if rhs is None else rhs - d_a @ ans
    return apply(CHOLESKY_SOLVE, rhs, factor, upper=upper)


CHOLESKY_SOLVE = defop("cholesky_solve", column_major(_cholesky_solve_impl), kind=OPAQUE,
                       autocast=AUTOCAST_FP32,
                       meta=_cholesky_solve_meta, save=(1,), save_output=True,
                       node_name="CholeskySolveBackward0",
                       vjp=(_cholesky_solve_vjp_b, _cholesky_solve_vjp_factor),
                       jvp=_cholesky_solve_jvp)


@public("cholesky_solve", method=True)
def cholesky_solve(input, input2, upper: bool = False):  # noqa: A002
    """The solution ``X`` of ``A X = input`` for ``A = L L^H`` given its Cholesky factor
    ``input2`` (``U^H U`` with ``upper``; its triangle is read). The gradient of ``input2``
    is torch's, that of a dense factor."""
    return apply(CHOLESKY_SOLVE, input, input2, upper=bool(upper))


@public("cholesky_inverse", method=True)
def cholesky_inverse(input, upper: bool = False):  # noqa: A002
    """The inverse of ``L L^H`` (``U^H U`` with ``upper``) from its Cholesky factor."""
    _check_square("cholesky_inverse", input)
    eye = _eye_like(input.shape[-1], input).expand(tuple(input.shape))
    return cholesky_solve(eye, input, upper=upper)


@public("triangular_solve", method=True)
def triangular_solve(input, A, upper: bool = True, transpose: bool = False,  # noqa: A002,N803
                     unitriangular: bool = False):
    """(legacy) ``(solution, cloned_coefficient)``: ``X`` with ``op(A) X = input`` for the
    triangle of ``A`` (``op``: the transpose with ``transpose``), and a copy of ``A``."""
    if input.ndim < 2 or A.ndim < 2:
        raise RuntimeError("torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {input.ndim} dimensions instead" if input.ndim < 2 else
                           "torch.triangular_solve: Expected A to have at least 2 dimensions, "
                           f"but it has {A.ndim} dimensions instead")
    if input.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{input.dtype._scalar_name} and A of type {A.dtype._scalar_name} "
                           "instead.")
    if not _WARNED_TRIANGULAR_SOLVE:  # (torch warns once a process)
        _WARNED_TRIANGULAR_SOLVE.append(True)
        warnings.warn(
            "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand "
            "will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its "
            "arguments reversed and does not return a copy of one of the inputs.\nX = "
            "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
            "torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=user_stacklevel())
    coefficient = A.mT if transpose else A
    solution = apply(SOLVE_TRIANGULAR, coefficient, input, upper=bool(upper) != bool(transpose),
                     unitriangular=bool(unitriangular), left=True)
    batch = tuple(solution.shape[:-2])
    return TriangularSolveResult(solution, A.expand(batch + tuple(A.shape[-2:])).clone())


_WARNED_TRIANGULAR_SOLVE: list = []


@public("chain_matmul")
def chain_matmul(*matrices):
    """(deprecated) The product of the matrices, as ``linalg.multi_dot``."""
    from .linalg2 import multi_dot

    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(list(matrices))
