"""torch.linalg's LU family (``lu_factor``/``lu_factor_ex``, ``lu``, ``lu_solve``,
``lu_unpack``) and ``matrix_exp``: each one op with torch's node, computed in NumPy.

The gradients are torch's, written in jitgrad ops so that they differentiate again:

* ``lu`` (``A = P L U``, square): ``gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H``, with
  torch's wide and tall variants; ``lu_factor`` is the same on the packed ``LU``;
* ``lu_solve``: the gradient of ``op(A)^-1 B`` (``op``: the adjoint or not, on the left or the
  right) with ``A = P L U``, carried to the packed ``LU`` (``gL = tril(P^T gA U^H, -1)``,
  ``gU = triu(L^H P^T gA)``), and ``gB`` a solve with the other adjoint;
* ``matrix_exp``: ``gA`` is the upper-right block of ``exp([[A^H, g], [0, A^H]])``, the JVP
  that of ``exp([[A, dA], [0, A]])``.
"""

from __future__ import annotations


import numpy as np

from .. import dtypes
from .linalg2 import LinAlgError, _check_square, _mh, _refuse_kernel
from .linalg_decomp import SOLVE_TRIANGULAR, _solve_triangular_impl
from .memory_formats import column_major
from .registry import OPAQUE, apply, defop
from .vjp_apply import sum_to
from .return_types import return_type
from .surface import public

LUFactorResult = return_type("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = return_type("linalg_lu", ["P", "L", "U"])
LUUnpackResult = return_type("lu_unpack", ["P", "L", "U"])


# ---------------------------------------------------------------- NumPy kernels


def _lu_np(a):
    """LAPACK's getrf on a batch: (packed LU, 1-based int32 pivots, int32 info)."""
    *batch, m, n = a.shape
    k = min(m, n)
    lu = np.array(a, dtype=a.dtype, copy=True).reshape(-1, m, n)
    rows = np.arange(lu.shape[0])
    piv = np.zeros((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    for j in range(k):
        col = lu[:, j:, j]  # LAPACK's i?amax: |re| + |im| for complex entries
        p = j + np.argmax(np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col)
                          else np.abs(col), axis=1)
        piv[:, j] = p + 1
        top = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = top
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[zero & (info == 0)] = j + 1
        scale = np.where(zero, 1, pivot)
        lu[:, j + 1:, j] /= scale[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return (lu.reshape(a.shape), piv.reshape(tuple(batch) + (k,)),
            info.reshape(tuple(batch)))


def _perm_np(piv, m):
    """The permutation matrices ``P`` (``A = P L U``) of a batch of 1-based pivots."""
    flat = piv.reshape(-1, piv.shape[-1]).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        top = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = top
    eye = np.zeros((flat.shape[0], m, m))
    eye[rows[:, None], perm, np.arange(m)[None, :]] = 1  # P^T A = A[perm]: P[perm[i], i] = 1
    return eye.reshape(piv.shape[:-1] + (m, m))


def _unpack_np(lu, piv, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    p = _perm_np(piv, m).astype(lu.dtype) if unpack_pivots else np.empty((0,), lu.dtype)
    if not unpack_data:
        return p, np.empty((0,), lu.dtype), np.empty((0,), lu.dtype)
    low = np.tril(lu[..., :, :k], -1)
    idx = np.arange(k)
    low[..., idx, idx] = 1
    return p, low, np.triu(lu[..., :k, :])


def _lu_solve_np(lu, piv, b, left, adjoint):
    if not left:  # X op(A) = B  <=>  op(A)^H X^H = B^H
        return np.conj(np.swapaxes(_lu_solve_np(lu, piv, np.conj(np.swapaxes(b, -1, -2)),
                                                True, not adjoint), -1, -2))
    p, low, up = _unpack_np(lu, piv)
    if adjoint:  # U^H L^H P^T X = B
        y = _solve_triangular_impl(np.conj(np.swapaxes(up, -1, -2)), b, False, False, True)
        y = _solve_triangular_impl(np.conj(np.swapaxes(low, -1, -2)), y, True, True, True)
        return (p @ y).astype(np.result_type(lu, b), copy=False)
    y = _solve_triangular_impl(low, np.swapaxes(p, -1, -2) @ b, False, True, True)
    return _solve_triangular_impl(up, y, True, False, True)


# ---------------------------------------------------------------- gradients (jitgrad ops)


def _tri_solve(a, b, upper, left=True, unitriangular=False):
    return apply(SOLVE_TRIANGULAR, a, b, upper=upper, unitriangular=unitriangular, left=left)


def _lu_backward(g_l, g_u, p, low, up, m, n):
    """torch's ``linalg_lu_backward``: the gradient of ``A = P L U`` (``P`` may be None)."""
    from .movement import cat
    from .selection import tril, triu

    k = min(m, n)
    if m == n:
        g_a = tril(_mh(low) @ g_l, -1) if g_l is not None else 0
        if g_u is not None:
            g_a = g_a + triu(g_u @ _mh(up))
        g_a = _tri_solve(_mh(up), g_a, upper=False, left=False)
        g_a = _tri_solve(_mh(low), g_a, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        u1 = up[..., :k]
        g_a = _mh(low) @ g_l if g_l is not None else 0
        if g_u is not None:
            g_a = g_a - triu(g_u) @ _mh(up)
        g_a = _tri_solve(_mh(u1), tril(g_a, -1), upper=False, left=False)
        if g_u is not None:
            g_a = cat([g_a + triu(g_u[..., :k]), g_u[..., k:]], -1)
        g_a = _tri_solve(_mh(low), g_a, upper=True, unitriangular=True)
        if g_u is None:
            g_a = cat([g_a, (up[..., k:] * 0).detach()], -1)
    else:  # tall: L = [L1; L2]
        l1 = low[..., :k, :]
        g_a = g_u @ _mh(up) if g_u is not None else 0
        if g_l is not None:
            g_a = g_a - _mh(low) @ tril(g_l, -1)
        g_a = _tri_solve(_mh(l1), triu(g_a), upper=True, unitriangular=True)
        if g_l is not None:
            g_a = cat([g_a + tril(g_l[..., :k, :], -1), g_l[..., k:, :]], -2)
        g_a = _tri_solve(_mh(up), g_a, upper=False, left=False)
        if g_l is None:
            g_a = cat([g_a, (low[..., k:, :] * 0).detach()], -2)
    return p @ g_a if p is not None else g_a


def _lu_jvp_parts(da, p, low, up, m, n):
    """(dL, dU) of ``A = P L U`` for a tangent ``dA``."""
    from .movement import cat
    from .selection import tril, triu

    k = min(m, n)
    pda = _mh(p) @ da if p is not None else da
    low1, up1 = low[..., :k, :], up[..., :, :k]
    x = _tri_solve(low1, pda[..., :k, :k], upper=False, unitriangular=True)
    x = _tri_solve(up1, x, upper=True, left=False)
    d_l1 = low1 @ tril(x, -1)
    d_u1 = triu(x) @ up1
    if m == n:
        return d_l1, d_u1
    if m < n:  # dU2 = L^-1 (P^T dA2 - dL U2)
        d_u2 = _tri_solve(low1, pda[..., k:] - d_l1 @ up[..., k:], upper=False,
                          unitriangular=True)
        return d_l1, cat([d_u1, d_u2], -1)
    d_l2 = _tri_solve(up1, pda[..., k:, :] - low[..., k:, :] @ d_u1, upper=True, left=False)
    return cat([d_l1, d_l2], -2), d_u1


def _unpacked(lu, piv):
    p, low, up = apply(LU_UNPACK, lu, piv, unpack_data=True, unpack_pivots=True)
    return p.detach(), low, up


def _pack(low, up, m, n):
    """``tril(L, -1) + triu(U)`` as one ``m x n`` matrix (zeros where neither reaches)."""
    from .movement import cat
    from .selection import tril, triu

    k = min(m, n)
    low, up = tril(low, -1), triu(up)
    if m == n:
        return low + up
    if m < n:
        return cat([low + up[..., :k], up[..., k:]], -1)
    return cat([low[..., :k, :] + up, low[..., k:, :]], -2)


# ---------------------------------------------------------------- lu_factor_ex


def _check_lu_input(name: str, a) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(a.shape)} instead")
    if not (a.dtype.is_floating_point or a.dtype.is_complex) or a.dtype in (
            dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{a.dtype._scalar_name}\'')


def _lu_factor_meta(a, pivot):
    _check_lu_input("torch.lu_factor", a)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    *batch, m, n = a.shape
    batch = tuple(batch)
    return ((tuple(a.shape), batch + (min(m, n),), batch),
            (a.dtype, dtypes.int32, dtypes.int32))


def _lu_factor_vjp(grads, ans, a, pivot):
    from .selection import tril, triu

    g = grads[0]
    if g is None:
        return (None,)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    p, low, up = _unpacked(ans[0], ans[1])
    return (_lu_backward(tril(g[..., :, :k], -1), triu(g[..., :k, :]), p, low, up, m, n),)


def _lu_factor_jvp(tangents, ans, a, pivot):
    m, n = a.shape[-2], a.shape[-1]
    p, low, up = _unpacked(ans[0], ans[1])
    d_l, d_u = _lu_jvp_parts(tangents[0], p, low, up, m, n)
    return _pack(d_l, d_u, m, n), None, None


LU_FACTOR_EX = defop(
    "linalg_lu_factor_ex", column_major(lambda a, pivot: _lu_np(a)), kind=OPAQUE,
    meta=_lu_factor_meta,
    n_outputs=3, save_output=True, node_name="LinalgLuFactorExBackward0", vjp=_lu_factor_vjp,
    jvp=_lu_factor_jvp, outputs_requiring_grad=lambda args, params: (True, False, False))


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):  # noqa: N803
    """The packed LU decomposition with partial pivoting of (a batch of) matrices, with
    LAPACK's ``info`` (``i > 0``: ``U[i-1, i-1]`` is exactly zero)."""
    lu, piv, info = apply(LU_FACTOR_EX, A, pivot=bool(pivot))
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info)
    return LUFactorExResult(lu, piv, info)


def _raise_info(name, info):
    from ..errors import ConcretizationError

    try:
        bad = info.numpy().reshape(-1)
    except (ConcretizationError, RuntimeError):  # traced (jit) or batched (vmap): no values
        return
    for i, code in enumerate(bad):
        if code > 0:
            where = f"(Batch element {i}): " if info.ndim else ""
            raise LinAlgError(f"{name}: {where}U[{code},{code}] is zero and using it on lu_solve "
                              "would result in a division by zero. If you still want to perform "
                              "the factorization, consider calling linalg.lu(A, pivot) or "
                              "linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot: bool = True):  # noqa: N803
    """``(LU, pivots)``: the packed LU decomposition with partial pivoting of (a batch of)
    matrices (``A = P L U``, ``L`` unit lower triangular below ``LU``'s diagonal, ``U`` on and
    above it; ``pivots`` LAPACK's 1-based row interchanges, int32). A singular matrix raises
    (``lu_factor_ex`` does not). Differentiable where the matrices are invertible."""
    lu, piv, info = apply(LU_FACTOR_EX, A, pivot=bool(pivot))
    _raise_info("torch.linalg.lu_factor", info)
    return LUFactorResult(lu, piv)


# ---------------------------------------------------------------- lu (P, L, U)


def _lu_meta(a, pivot):
    _check_lu_input("linalg.lu", a)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    *batch, m, n = a.shape
    batch, k = tuple(batch), min(m, n)
    return (batch + (m, m), batch + (m, k), batch + (k, n)), (a.dtype,) * 3


def _lu_impl(a, pivot):
    lu, piv, _ = _lu_np(a)
    return _unpack_np(lu, piv)


def _lu_vjp(grads, ans, a, pivot):
    _, g_l, g_u = grads
    p, low, up = ans
    return (_lu_backward(g_l, g_u, p.detach(), low, up, a.shape[-2], a.shape[-1]),)


def _lu_jvp(tangents, ans, a, pivot):
    p, low, up = ans
    d_l, d_u = _lu_jvp_parts(tangents[0], p.detach(), low, up, a.shape[-2], a.shape[-1])
    return None, d_l, d_u


LINALG_LU = defop("linalg_lu", _lu_impl, kind=OPAQUE, meta=_lu_meta, n_outputs=3,
                  save_output=True, node_name="LinalgLuBackward0", vjp=_lu_vjp, jvp=_lu_jvp,
                  outputs_requiring_grad=lambda args, params: (False, True, True))


def lu(A, *, pivot: bool = True):  # noqa: N803
    """``(P, L, U)`` with ``A = P L U`` for (a batch of) ``m x n`` matrices: ``P`` a
    permutation, ``L`` ``m x k`` unit lower triangular, ``U`` ``k x n`` upper triangular."""
    p, low, up = apply(LINALG_LU, A, pivot=bool(pivot))
    return LUResult(p.detach(), low, up)  # (detach: P has no gradient under jit too)


# ---------------------------------------------------------------- lu_unpack


def _check_pivots(lu, piv):
    if piv.dtype is not dtypes.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype.\nNote: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    if tuple(piv.shape) != tuple(lu.shape[:-2]) + (min(lu.shape[-2:]),):
        raise RuntimeError("torch.lu_unpack: Expected the pivots to have shape "
                           f"{tuple(lu.shape[:-2]) + (min(lu.shape[-2:]),)}, got "
                           f"{tuple(piv.shape)}")


def _lu_unpack_meta(lu, piv, unpack_data, unpack_pivots):
    if lu.ndim < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(lu.shape)} instead")
    _check_pivots(lu, piv)
    *batch, m, n = lu.shape
    batch, k = tuple(batch), min(m, n)
    shapes = (batch + (m, m) if unpack_pivots else (0,),
              batch + (m, k) if unpack_data else (0,), batch + (k, n) if unpack_data else (0,))
    return shapes, (lu.dtype,) * 3


def _lu_unpack_vjp(grads, ans, lu, piv, unpack_data, unpack_pivots):
    _, g_l, g_u = grads
    if not unpack_data or (g_l is None and g_u is None):
        return None, None
    m, n = lu.shape[-2], lu.shape[-1]
    g_l = g_l if g_l is not None else (ans[1] * 0).detach()
    g_u = g_u if g_u is not None else (ans[2] * 0).detach()
    return _pack(g_l, g_u, m, n), None


def _lu_unpack_jvp(tangents, ans, lu, piv, unpack_data, unpack_pivots):
    from .selection import tril, triu

    if not unpack_data:
        return None, None, None
    k = min(lu.shape[-2], lu.shape[-1])
    t = tangents[0]
    return None, tril(t[..., :, :k], -1), triu(t[..., :k, :])


LU_UNPACK = defop(
    "lu_unpack", lambda lu, piv, unpack_data, unpack_pivots: _unpack_np(lu, piv, unpack_data,
                                                                        unpack_pivots),
    kind=OPAQUE, meta=_lu_unpack_meta, n_outputs=3, save_output=True,
    node_name="LuUnpackBackward0", vjp=_lu_unpack_vjp, jvp=_lu_unpack_jvp,
    outputs_requiring_grad=lambda args, params: (False, params["unpack_data"],
                                                 params["unpack_data"]))


@public("lu_unpack")
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True):
    """``(P, L, U)`` from ``lu_factor``'s packed ``LU`` and ``pivots`` (empty tensors for the
    parts not asked for)."""
    p, low, up = apply(LU_UNPACK, LU_data, LU_pivots, unpack_data=bool(unpack_data),
                       unpack_pivots=bool(unpack_pivots))
    return LUUnpackResult(p.detach(), low, up)  # (detach: P has no gradient under jit too)


# ---------------------------------------------------------------- lu_solve


def _lu_solve_meta(lu, piv, b, left, adjoint):
    _check_square("torch.linalg.lu_solve", lu)
    _check_pivots(lu, piv)
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    if lu.dtype is not b.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {lu.dtype._scalar_name} and B of type "
                           f"{b.dtype._scalar_name} instead")
    n = lu.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{equation} ({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    batch = np.broadcast_shapes(tuple(lu.shape[:-2]), tuple(b.shape[:-2]))
    _refuse_kernel(lu, "linalg.lu_solve_cpu")
    return tuple(batch) + tuple(b.shape[-2:]), lu.dtype


def _lu_solve_impl(lu, piv, b, left, adjoint):
    with np.errstate(all="ignore"):
        return _lu_solve_np(lu, piv, b, left, adjoint)


def _op_grad_to_lu(g_m, lu, piv, adjoint):
    """The gradient of ``op(A)`` (``A = P L U``) carried to the packed ``LU``."""
    from .selection import tril, triu

    g_a = _mh(g_m) if adjoint else g_m
    p, low, up = _unpacked(lu, piv)
    pg = _mh(p) @ g_a
    return tril(pg @ _mh(up), -1) + triu(_mh(low) @ pg)


def _lu_solve_vjp_lu(g, ans, lu, piv, b, left, adjoint):
    g_b = apply(LU_SOLVE, lu, piv, g, left=left, adjoint=not adjoint)
    g_m = -(g_b @ _mh(ans)) if left else -(_mh(ans) @ g_b)
    return sum_to(_op_grad_to_lu(g_m, lu, piv, adjoint), tuple(lu.shape))


def _lu_solve_vjp_b(g, ans, lu, piv, b, left, adjoint):
    return sum_to(apply(LU_SOLVE, lu, piv, g, left=left, adjoint=not adjoint), tuple(b.shape))


def _lu_solve_jvp(tangents, ans, lu, piv, b, left, adjoint):
    from .selection import tril, triu

    d_lu, _, d_b = tangents
    rhs = d_b
    if d_lu is not None:
        p, low, up = _unpacked(lu, piv)
        d_a = p @ (tril(d_lu, -1) @ up + low @ triu(d_lu))
        d_m = _mh(d_a) if adjoint else d_a
        term = -(d_m @ ans) if left else -(ans @ d_m)
        rhs = term if rhs is None else rhs + term
    return apply(LU_SOLVE, lu, piv, rhs, left=left, adjoint=adjoint)


LU_SOLVE = defop(
    "linalg_lu_solve", column_major(_lu_solve_impl), kind=OPAQUE, meta=_lu_solve_meta, save=(0, 1),
    save_output=True, node_name="LinalgLuSolveBackward0",
    vjp=(_lu_solve_vjp_lu, None, _lu_solve_vjp_b), jvp=_lu_solve_jvp)


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):  # noqa: N803
    """The solution of ``A X = B`` (``X A = B`` with ``left=False``; ``A^H`` for ``A`` with
    ``adjoint=True``) from ``lu_factor``'s ``(LU, pivots)`` of ``A``."""
    return apply(LU_SOLVE, LU, pivots, B, left=bool(left), adjoint=bool(adjoint))


# ---------------------------------------------------------------- matrix_exp

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _matrix_exp_np(a):
    """Higham's scaling and squaring with the [13/13] Pade approximant, in double precision."""
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    if a.size == 0:
        return np.asarray(a, a.dtype).copy()
    x = np.asarray(a, wide).reshape(-1, *a.shape[-2:])
    n = x.shape[-1]
    norm = np.abs(x).sum(axis=-2).max(axis=-1)
    with np.errstate(divide="ignore"):
        s = np.maximum(0, np.ceil(np.log2(np.where(norm > 0, norm, 1) / _THETA13))).astype(int)
    x = x / (2.0 ** s)[:, None, None]
    b = _PADE13
    eye = np.eye(n, dtype=wide)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for step in range(int(s.max(initial=0))):
        sq = step < s
        r[sq] = r[sq] @ r[sq]
    return r.reshape(a.shape).astype(a.dtype, copy=False)


def _matrix_exp_meta(a):
    _check_square("linalg.matrix_exp", a)
    return tuple(a.shape), a.dtype


def _block_exp(top_left, top_right):
    # the upper-right block of exp([[X, Y], [0, X]])
    from .movement import cat

    n = top_left.shape[-1]
    zeros = (top_left * 0).detach()
    block = cat([cat([top_left, top_right], -1), cat([zeros, top_left], -1)], -2)
    return apply(MATRIX_EXP, block)[..., :n, n:]


def _matrix_exp_vjp(g, ans, a):
    return _block_exp(_mh(a), g)


def _matrix_exp_jvp(tangents, ans, a):
    return _block_exp(a, tangents[0])


MATRIX_EXP = defop("linalg_matrix_exp", _matrix_exp_np, kind=OPAQUE, meta=_matrix_exp_meta,
                   save=(0,), node_name="LinalgMatrixExpBackward0", vjp=(_matrix_exp_vjp,),
                   jvp=_matrix_exp_jvp)


@public("matrix_exp", method=True)
def matrix_exp(input):  # noqa: A002
    """The matrix exponential of (a batch of) square matrices (``torch.linalg.matrix_exp``)."""
    return apply(MATRIX_EXP, input)
