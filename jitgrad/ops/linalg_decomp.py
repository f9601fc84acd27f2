"""torch.linalg's decompositions: ``eigh``/``eigvalsh``, ``qr``, ``svd``,
``solve_triangular`` (each decomposition one op with torch's node; NumPy's LAPACK computes
them; the pseudo-inverse and least squares built on them are in ``linalg_pinv``).

The gradients are torch's formulas, written in jitgrad ops:

* ``eigh``: ``gA = Q (diag(gL) + sym(Q^H gQ) / E) Q^H`` with ``E_ij = L_j - L_i`` (only the
  part of ``Q^H gQ`` that does not rotate the eigenvectors' phases counts);
* ``qr`` (``m >= n``): ``gA = (gQ + Q copyltu(M)) R^-H``, ``M = R gR^H - gQ^H Q``; for
  ``m < n`` the first ``m`` columns are the square case and the rest ``Q gR_rest``;
* ``svd``: ``gA = U [(skew(U^H gU) / E) S + S (skew(V^H gV) / E) + diag(gS)] V^H`` plus the
  parts of ``gU``/``gV`` outside the spans of ``U``/``V``, ``E_ij = S_j^2 - S_i^2``.

Like torch's, the eigenvector and singular-vector gradients are only defined where the
eigenvalues (singular values) are distinct, and for losses that do not depend on the vectors'
signs (or phases).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _config
from .linalg2 import LinAlgError, _check_square, _mh, _refuse_kernel
from .memory_formats import column_major
from .registry import AUTOCAST_FP32, OPAQUE, apply, defop
from .return_types import return_type

EighResult = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
QRResult = return_type("linalg_qr", ["Q", "R"])
SVDResult = return_type("linalg_svd", ["U", "S", "Vh"])


def _check_matrix(name: str, a) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{a.dtype._scalar_name}")


def _eye_like(n: int, like):
    from .creation import eye

    return eye(n, dtype=like.dtype, device=like.device)


def _diag_embed(v):
    from .torch_extras2 import diag_embed

    return diag_embed(v)


def _off_diagonal_inverse(e):
    # 1 / e off the diagonal, 0 on it (the diagonal of e is 0: no division by it)
    from .selection import where

    n = e.shape[-1]
    eye = _eye_like(n, e).bool()
    return where(eye, 0.0, 1.0 / where(eye, 1.0, e))


# ---------------------------------------------------------------- eigh


def _eigh_meta(a, uplo):
    _check_square("linalg.eigh", a, floating=False)
    _refuse_kernel(a, "linalg_eigh_cpu", ints=True)
    return (tuple(a.shape[:-1]), tuple(a.shape)), (a.dtype.to_real(), a.dtype)


def _eigh_impl(a, uplo):
    try:
        values, vectors = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input "
                          "matrix is ill-conditioned or has too many repeated eigenvalues "
                          "(error code: 1).") from None
    return values, vectors


def _times(x, factor):
    """``x * factor`` where a zero of ``x`` against an infinite ``factor`` gives 0, not NaN:
    the engine hands an unused output a zero cotangent, which repeated eigen- or singular
    values (an inf of ``factor``) must not turn into NaN (torch skips an undefined one). A
    finite factor is kept as it is, so the rule stays linear in ``x`` (forward mode takes its
    transpose at a zero cotangent)."""
    from .selection import where

    return x * where((x == 0) & factor.isinf(), 0.0, factor)


def _check_phase(imag_diag, where: str, depends: str) -> None:
    """torch's refusal of a complex loss that depends on the eigen- or singular vectors'
    phases (``imag_diag``, the imaginary parts of the phase derivative, must vanish): checked
    on eager host tensors; the engine's traced programs leave such rules to the tensor path."""
    if imag_diag._trace is None:
        data = imag_diag._data
        if type(data) is np.ndarray and not np.all(np.abs(data) <= 1e-2):
            raise RuntimeError(f"{where}: The {depends}")
    elif getattr(imag_diag._trace, "rule_program", False):
        raise NotImplementedError(f"{where} checks the loss's phase dependence on values")


def _eigh_vjp(grads, ans, a, uplo):
    g_values, g_vectors = grads
    values, vectors = ans
    vh = _mh(vectors)
    if g_vectors is None:
        inner = _diag_embed(g_values.to(a.dtype))
    else:
        x = vh @ g_vectors
        if a.dtype.is_complex:
            _check_phase(x.diagonal(0, -2, -1).imag, "linalg_eigh_backward",
                         "eigenvectors in the complex case are specified up to multiplication "
                         "by e^{i phi}. The specified loss function depends on this quantity, "
                         "so it is ill-defined.")
        x = 0.5 * (x - _mh(x))
        inner = _times(x, _off_diagonal_inverse(values.unsqueeze(-2) - values.unsqueeze(-1)))
        inner = inner.to(a.dtype)
        if g_values is not None:
            inner = inner + _diag_embed(g_values.to(a.dtype))
    return (vectors @ inner @ vh,)


def _eigh_jvp(tangents, ans, a, uplo):
    # dL = diag(Q^H dA Q), dQ = Q (F o Q^H dA Q), F_ij = 1/(L_j - L_i) off the diagonal (dA
    # taken Hermitian, as the VJP's gradient is)
    values, vectors = ans
    da = tangents[0]
    da = 0.5 * (da + _mh(da))
    p = _mh(vectors) @ da @ vectors
    d_values = p.diagonal(0, -2, -1)
    d_values = d_values.real if d_values.dtype.is_complex else d_values
    inv_e = _off_diagonal_inverse(values.unsqueeze(-2) - values.unsqueeze(-1)).to(a.dtype)
    return d_values, vectors @ (p * inv_e)


LINALG_EIGH = defop("linalg_eigh", column_major(_eigh_impl, (1,)), kind=OPAQUE, meta=_eigh_meta,
                    n_outputs=2,
                    autocast=AUTOCAST_FP32,
                    save_output=True, node_name="LinalgEighBackward0", vjp=_eigh_vjp,
                    jvp=_eigh_jvp)


def _check_uplo(uplo: str) -> str:
    if uplo not in ("L", "U", "l", "u"):  # (torch takes either case)
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    return uplo.upper()


def eigh(A, UPLO: str = "L"):  # noqa: N803
    """Eigenvalues (ascending, real) and eigenvectors of (a batch of) Hermitian matrices,
    read from the lower (``UPLO="L"``) or upper triangle."""
    return EighResult(*apply(LINALG_EIGH, A, uplo=_check_uplo(UPLO)))


def eigvalsh(A, UPLO: str = "L"):  # noqa: N803
    """Eigenvalues (ascending, real) of (a batch of) Hermitian matrices."""
    return apply(LINALG_EIGH, A, uplo=_check_uplo(UPLO))[0]


# ---------------------------------------------------------------- solve_triangular


def _triangle(a, upper: bool, unitriangular: bool):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return t


def _solve_triangular_impl(a, b, upper, unitriangular, left):
    if b.dtype != a.dtype:  # (torch copies B into a result of A's dtype)
        if b.dtype.kind == "c" and a.dtype.kind != "c":
            _config.warn_complex_to_real()
            b = b.real
        b = b.astype(a.dtype)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(_solve_triangular_impl(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2),
                                                  not upper, unitriangular, True), -1, -2)
    t = _triangle(a, upper, unitriangular)
    with np.errstate(all="ignore"):  # a zero pivot gives inf/nan, as LAPACK's trtrs
        if np.any(np.diagonal(t, axis1=-2, axis2=-1) == 0):
            return _substitute(t, b, upper)
        return np.linalg.solve(t, b).astype(a.dtype, copy=False)


def _substitute(t, b, upper):
    # back (or forward) substitution, for triangles with a zero pivot (np.linalg.solve raises)
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(t, b))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        acc = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
        x[..., i, :] = acc / t[..., i, i][..., None]
    return x


def _solve_triangular_meta(a, b, upper, unitriangular, left):
    # (torch's result has A's dtype, B copied into it: a kernel for A's dtype is all it needs)
    _check_square("linalg.solve_triangular", a, floating=False)
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    rows = b.shape[-2] if left else b.shape[-1]
    if rows != a.shape[-1]:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError("linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {equation} ({a.shape[-2]}x{a.shape[-1]} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    _refuse_kernel(a, "triangular_solve_cpu", ints=True)
    return tuple(batch) + tuple(b.shape[-2:]), a.dtype


def _solve_triangular_vjp(g, ans, a, b, upper, unitriangular, left):
    from .vjp_apply import sum_to
    from .selection import tril, triu

    if not left:  # the transposed left solve's gradients, transposed back
        g, ans, a = g.mT, ans.mT, a.mT
        upper = not upper
    g_b = apply(SOLVE_TRIANGULAR, _mh(a), g, upper=not upper, unitriangular=unitriangular,
                left=True)
    g_a = -(g_b @ _mh(ans))
    g_a = triu(g_a, 1 if unitriangular else 0) if upper else tril(g_a, -1 if unitriangular
                                                                  else 0)
    if not left:
        g_a, g_b = g_a.mT, g_b.mT
    if g_b.dtype is not b.dtype:  # (B of another dtype: its gradient in B's)
        g_b = (g_b.real if g_b.dtype.is_complex and not b.dtype.is_complex else g_b).to(b.dtype)
    return sum_to(g_a, tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]) if not left
                  else tuple(a.shape)), sum_to(g_b, tuple(b.shape))


def _solve_triangular_jvp(tangents, ans, a, b, upper, unitriangular, left):
    # left: dX = T^-1 (dB - dT X); right: dX = (dB - X dT) T^-1 (dT: dA's triangle)
    from .selection import tril, triu

    da, db = tangents
    rhs = db if db is not None else None
    if da is not None:
        dt = triu(da, 1 if unitriangular else 0) if upper else tril(da, -1 if unitriangular
                                                                    else 0)
        term = -(dt @ ans) if left else -(ans @ dt)
        rhs = term if rhs is None else rhs + term
    return apply(SOLVE_TRIANGULAR, a, rhs, upper=upper, unitriangular=unitriangular, left=left)


_REQUIRED: Any = object()

SOLVE_TRIANGULAR = defop("linalg_solve_triangular", column_major(_solve_triangular_impl),
                         kind=OPAQUE,
                         meta=_solve_triangular_meta, save=(0,), save_output=True,
                         node_name="LinalgSolveTriangularBackward0", vjp=_solve_triangular_vjp,
                         jvp=_solve_triangular_jvp)


def solve_triangular(A, B, *, upper: bool = _REQUIRED, left: bool = True,  # noqa: N803
                     unitriangular: bool = False):
    """The solution ``X`` of ``A X = B`` (``left=False``: ``X A = B``) for a triangular ``A``
    (its upper or lower triangle is read; ``unitriangular``: its diagonal is taken as ones).
    The result has ``A``'s dtype, as torch's (``B`` is cast to it)."""
    if upper is _REQUIRED:
        raise TypeError('linalg_solve_triangular() missing 1 required positional arguments: '
                        '"upper"')
    return apply(SOLVE_TRIANGULAR, A, B, upper=bool(upper), unitriangular=bool(unitriangular),
                 left=bool(left))


# ---------------------------------------------------------------- qr


def _qr_shapes(shape, mode):
    *batch, m, n = shape
    k = min(m, n)
    if mode == "complete":
        return tuple(batch) + (m, m), tuple(batch) + (m, n)
    if mode == "r":
        return (0,), tuple(batch) + (k, n)
    return tuple(batch) + (m, k), tuple(batch) + (k, n)


def _qr_meta(a, mode):
    _check_matrix("linalg.qr", a)
    _refuse_kernel(a, "geqrf_cpu")
    return _qr_shapes(tuple(a.shape), mode), (a.dtype, a.dtype)


def _qr_impl(a, mode):
    if mode == "r":
        return np.empty((0,), a.dtype), np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _copyltu(x):
    # the lower triangle mirrored to the upper one (conjugated): a Hermitian matrix
    from .selection import tril

    low = tril(x, -1)
    return low + _mh(low) + _diag_embed(x.diagonal(0, -2, -1).real.to(x.dtype)
                                        if x.dtype.is_complex else x.diagonal(0, -2, -1))


def _qr_square_backward(g_q, g_r, q, r):
    # m >= n: gA = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q
    m_term = 0
    if g_r is not None:
        m_term = r @ _mh(g_r)
    if g_q is not None:
        m_term = m_term - _mh(g_q) @ q
    b = q @ _copyltu(m_term) if not isinstance(m_term, int) else 0
    if g_q is not None:
        b = b + g_q
    # X R^H = b  <=>  R X^H = b^H
    return _mh(apply(SOLVE_TRIANGULAR, r, _mh(b), upper=True, unitriangular=False,
                     left=True))


def _qr_vjp(grads, ans, a, mode):
    from .movement import cat

    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    g_q, g_r = grads
    q, r = ans
    m, n = a.shape[-2], a.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    if m >= n:
        return (_qr_square_backward(g_q, g_r, q, r),)
    # m < n: A = [X | Y], X = Q U square; R = [U | V], V = Q^H Y
    y = a[..., m:]
    u = r[..., :m]
    g_u = g_r[..., :m] if g_r is not None else None
    g_v = g_r[..., m:] if g_r is not None else None
    g_q_x = g_q
    if g_v is not None:
        g_q_x = y @ _mh(g_v) if g_q_x is None else g_q_x + y @ _mh(g_v)
    g_x = _qr_square_backward(g_q_x, g_u, q, u)
    g_y = q @ g_v if g_v is not None else a[..., m:] * 0
    return (cat([g_x, g_y], -1),)


def _qr_square_jvp(da, q, r):
    # C = Q^H dA R^-1 = Q^H dQ + dR R^-1: the skew part Omega (from C's strict lower triangle;
    # an imaginary diagonal keeps diag(R) real) is Q^H dQ, the rest dR R^-1
    from .selection import tril

    c = _mh(apply(SOLVE_TRIANGULAR, r, _mh(_mh(q) @ da), upper=True, unitriangular=False,
                  left=True))
    low = tril(c, -1)
    omega = low - _mh(low)
    if c.dtype.is_complex:
        omega = omega + _diag_embed(c.diagonal(0, -2, -1).imag.to(c.dtype) * 1j)
    d_r = (c - omega) @ r
    d_ar = _mh(apply(SOLVE_TRIANGULAR, r, _mh(da), upper=True, unitriangular=False, left=True))
    d_q = d_ar - q @ (c - omega)
    return d_q, d_r


def _qr_jvp(tangents, ans, a, mode):
    from .movement import cat

    m, n = a.shape[-2], a.shape[-1]
    if mode == "r" or (mode == "complete" and m > n):
        _qr_vjp((None, None), ans, a, mode)  # (raises torch's error)
    q, r = ans
    da = tangents[0]
    if m >= n:
        return _qr_square_jvp(da, q, r)
    d_q, d_u = _qr_square_jvp(da[..., :m], q, r[..., :m])
    d_v = _mh(d_q) @ a[..., m:] + _mh(q) @ da[..., m:]
    return d_q, cat([d_u, d_v], -1)


LINALG_QR = defop("linalg_qr", column_major(_qr_impl, (0, 1)), kind=OPAQUE, meta=_qr_meta,
                  n_outputs=2, save=(0,),
                  autocast=AUTOCAST_FP32,
                  save_output=True, node_name="LinalgQrBackward0", vjp=_qr_vjp, jvp=_qr_jvp)


def qr(A, mode: str = "reduced"):  # noqa: N803
    """The QR decomposition ``A = QR`` of (a batch of) matrices: ``mode="reduced"`` (Q is
    ``m x k``), ``"complete"`` (Q is ``m x m``) or ``"r"`` (R only; Q is empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    return QRResult(*apply(LINALG_QR, A, mode=mode))


# ---------------------------------------------------------------- svd


def _svd_meta(a, full_matrices):
    _check_matrix("linalg.svd", a)
    _refuse_kernel(a, "linalg_svd_cpu")
    *batch, m, n = a.shape
    k = min(m, n)
    batch = tuple(batch)
    shapes = (batch + (m, m if full_matrices else k), batch + (k,),
              batch + (n if full_matrices else k, n))
    return shapes, (a.dtype, a.dtype.to_real(), a.dtype)


def _svd_impl(a, full_matrices):
    try:
        return tuple(np.linalg.svd(a, full_matrices=full_matrices))
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                          "matrix is ill-conditioned or has too many repeated singular values "
                          "(error code: 1).") from None


def _svd_vjp(grads, ans, a, full_matrices):
    g_u, g_s, g_vh = grads
    u, s, vh = ans
    k = s.shape[-1]
    m, n = a.shape[-2], a.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    if g_u is not None:
        g_u = g_u[..., :k]
    if g_vh is not None:
        g_vh = g_vh[..., :k, :]
    if g_u is None and g_vh is None:
        return ((u * g_s.to(a.dtype).unsqueeze(-2)) @ vh,)
    s2 = s * s
    inv_e = _off_diagonal_inverse(s2.unsqueeze(-2) - s2.unsqueeze(-1))
    v = _mh(vh)
    inner = 0
    inv_s = 1.0 / s  # (inf for a zero singular value: _times keeps a zero cotangent zero)
    if a.dtype.is_complex:  # (U and V may turn by one phase together: the loss must not see it)
        phase = 0
        if g_u is not None:
            phase = phase + (_mh(u) @ g_u).diagonal(0, -2, -1).imag
        if g_vh is not None:
            phase = phase + (vh @ _mh(g_vh)).diagonal(0, -2, -1).imag
        if g_u is not None or g_vh is not None:
            _check_phase(phase, "svd_backward",
                         "singular vectors in the complex case are specified up to "
                         "multiplication by e^{i phi}. The specified loss function depends on "
                         "this phase term, making it ill-defined.")
    if g_u is not None:
        x = _mh(u) @ g_u
        inner = inner + _times(x - _mh(x), inv_e).to(a.dtype) * s.unsqueeze(-2).to(a.dtype)
        if a.dtype.is_complex:  # the phase part of U^H gU's diagonal
            phase = _times(x.diagonal(0, -2, -1).imag, inv_s)
            inner = inner + _diag_embed(phase.to(a.dtype) * 1j)
    if g_vh is not None:
        y = vh @ _mh(g_vh)
        inner = inner + s.unsqueeze(-1).to(a.dtype) * _times(y - _mh(y), inv_e).to(a.dtype)
    if g_s is not None:
        inner = inner + _diag_embed(g_s.to(a.dtype))
    g_a = u @ inner @ vh
    if g_u is not None and m > k:
        g_a = g_a + _times(g_u - u @ (_mh(u) @ g_u), inv_s.unsqueeze(-2)).to(a.dtype) @ vh
    if g_vh is not None and n > k:
        rest = g_vh - (g_vh @ v) @ vh
        g_a = g_a + u @ _times(rest, inv_s.unsqueeze(-1)).to(a.dtype)
    return (g_a,)


def _svd_jvp(tangents, ans, a, full_matrices):
    # dP = U^H dA V: dS = Re diag(dP); dU = U (F o (dP S + S dP^H)) + (I - U U^H) dA V / S;
    # dV = V (F o (S dP + dP^H S)) + (I - V V^H) dA^H U / S; F_ij = 1/(S_j^2 - S_i^2)
    u, s, vh = ans
    m, n = a.shape[-2], a.shape[-1]
    k = s.shape[-1]
    if a.dtype.is_complex:
        raise NotImplementedError("jitgrad: forward-mode AD of linalg.svd is not implemented "
                                  "for complex inputs")
    if full_matrices and m != n:
        raise NotImplementedError("jitgrad: forward-mode AD of linalg.svd with "
                                  "full_matrices=True needs a square input (the extra singular "
                                  "vectors are arbitrary); pass full_matrices=False")
    da = tangents[0]
    u, vh = u[..., :k], vh[..., :k, :]
    v = _mh(vh)
    p = _mh(u) @ da @ v
    d_s = p.diagonal(0, -2, -1)
    s2 = s * s
    inv_e = _off_diagonal_inverse(s2.unsqueeze(-2) - s2.unsqueeze(-1))
    row, col = s.unsqueeze(-1), s.unsqueeze(-2)
    d_u = u @ (inv_e * (p * col + row * _mh(p)))
    d_v = v @ (inv_e * (row * p + _mh(p) * col))
    if m > k:
        d_u = d_u + (da @ v - u @ p) / col
    if n > k:
        d_v = d_v + (_mh(da) @ u - v @ _mh(p)) / col
    return d_u, d_s, _mh(d_v)


LINALG_SVD = defop("linalg_svd", column_major(_svd_impl, (0, 2)), kind=OPAQUE, meta=_svd_meta,
                   n_outputs=3, save=(0,),
                   autocast=AUTOCAST_FP32,
                   save_output=True, node_name="LinalgSvdBackward0", vjp=_svd_vjp, jvp=_svd_jvp)


def svd(A, full_matrices: bool = True, *, driver=None):  # noqa: N803
    """The singular value decomposition ``A = U diag(S) Vh`` of (a batch of) matrices,
    singular values in descending order."""
    return SVDResult(*apply(LINALG_SVD, A, full_matrices=bool(full_matrices)))
