"""torch.linalg's square-matrix functions: ``inv``, ``det``, ``slogdet``, ``solve``,
``cholesky`` (each one op with torch's node), and ``matrix_power`` / ``multi_dot`` (matmuls).

The gradients are the standard ones, written in jitgrad ops so that they differentiate again:
``inv``: ``-A^-H g A^-H``; ``det``: ``g det(A) A^-H``; ``slogdet``: ``g A^-H``; ``solve``:
``gB = A^-H g``, ``gA = -gB X^H``; ``cholesky``: ``L^-H Phi(L^H gL) L^-1``, symmetrized, where
Phi keeps the lower triangle with half the diagonal. A singular (or, for ``cholesky``, not
positive-definite) input raises ``LinAlgError`` with torch's text.
"""

from __future__ import annotations


import numpy as np

from .. import dtypes
from .memory_formats import column_major
from .registry import AUTOCAST_FP32, OPAQUE, apply, defop
from .vjp_apply import sum_to
from .return_types import return_type
from .surface import public


class LinAlgError(RuntimeError):
    """A linear-algebra function met a singular or not positive-definite matrix
    (``torch.linalg.LinAlgError``, which is ``torch._C._LinAlgError``: named so here too, in
    tracebacks, ``repr`` and pickles)."""


LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"
LinAlgError.__module__ = "jitgrad._C"


SlogdetResult = return_type("linalg_slogdet", ["sign", "logabsdet"])
TorchSlogdetResult = return_type("slogdet", ["sign", "logabsdet"])  # (torch.slogdet's own)


def _check_square(name: str, *mats, floating: bool = True) -> None:
    """torch's checks of square matrices (``floating``: that they are floating or complex;
    the ops whose kernel refuses integers themselves pass False and ``_refuse_kernel``)."""
    for a in mats:
        if a.ndim < 2:
            raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
        if floating and not (a.dtype.is_floating_point or a.dtype.is_complex):
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                               f"Got {a.dtype._scalar_name}")
        if a.shape[-1] != a.shape[-2]:
            raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                               f"{a.shape[-2]} by {a.shape[-1]} matrices")


LOW_PRECISION = "low precision"


def _refuse_kernel(a, kernel: str, name: str = "", ints: bool = False) -> None:
    """torch's error where its LAPACK kernel ``kernel`` has no float16/bfloat16 (nor, with
    ``ints``, integer and bool) version, after its shape checks: ``NotImplementedError:
    "lu_cpu" not implemented for 'Half'``, or with ``kernel=LOW_PRECISION`` the linalg
    function's own ``"{name}: Low precision dtypes not supported. Got Half"``."""
    dt = a.dtype
    if dt is dtypes.float16 or dt is dtypes.bfloat16 or ints and not (
            dt.is_floating_point or dt.is_complex):
        if kernel == LOW_PRECISION:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {dt._scalar_name}")
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dt._scalar_name}\'')


def _mh(t):
    return t.mH if t.dtype.is_complex else t.mT


# ---------------------------------------------------------------- inv


def _inv_meta(a):
    _check_square("linalg.inv", a)
    _refuse_kernel(a, LOW_PRECISION, "linalg.inv")
    return tuple(a.shape), a.dtype


_INV_SINGULAR = ("linalg.inv: The diagonal element {} is zero, the inversion could not be "
                 "completed because the input matrix is singular.")


def _inv_impl(a):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise LinAlgError(_INV_SINGULAR.format(_zero_pivot(a))) from None


def _zero_pivot(a) -> int:
    # the 1-based index of the first zero pivot of LU with partial pivoting, as LAPACK reports
    m = np.array(a.reshape(-1, *a.shape[-2:])[0], dtype=np.complex128)
    n = m.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(m[k:, k])))
        if m[p, k] == 0:
            return k + 1
        m[[k, p]] = m[[p, k]]
        m[k + 1:] -= np.outer(m[k + 1:, k] / m[k, k], m[k])
    return n


LINALG_INV = defop(
    "linalg_inv", column_major(_inv_impl), kind=OPAQUE, meta=_inv_meta, save_output=True,
    autocast=AUTOCAST_FP32,
    node_name="LinalgInvExBackward0",
    vjp=(lambda g, ans, a: -(_mh(ans) @ g @ _mh(ans)),),
    jvp=lambda tangents, ans, a: -(ans @ tangents[0] @ ans))


@public("inverse", method=True)
def inverse(input):  # noqa: A002
    """The inverse of (a batch of) square matrices (``torch.linalg.inv``)."""
    return apply(LINALG_INV, input)


# ---------------------------------------------------------------- det, slogdet


def _det_meta(a):
    _check_square("linalg.det", a)
    _refuse_kernel(a, "lu_cpu")
    return tuple(a.shape[:-2]), a.dtype


def _matrices(t):
    return t.unsqueeze(-1).unsqueeze(-1)


def _det_vjp(g, ans, a):
    if a._trace is None:
        # a singular matrix: no inverse (eager host tensors: the SVD has no cuda kernel)
        if type(ans._data) is np.ndarray and bool((ans._data == 0).any()):
            return _det_singular_vjp(g, a)
    elif getattr(a._trace, "rule_program", False):  # (the engine's programs: it reads values)
        raise NotImplementedError("linalg_det's VJP depends on the determinant's value")
    return _matrices(g * ans.conj()) * _mh(apply(LINALG_INV, a))


def _det_singular_vjp(g, a):
    """torch's gradient of ``det`` at a singular matrix: its cofactors through the SVD,
    ``conj(det U det V^H) U diag(prod_{j != i} s_j) V^H`` (exclusive products: no division)."""
    from .creation import ones_like
    from .movement import cat
    from .registry import OPS

    u, s, vh = apply(OPS["linalg_svd"], a, full_matrices=False)  # (linalg_decomp's op)
    alpha = (apply(LINALG_DET, u) * apply(LINALG_DET, vh)).conj()
    one = ones_like(s[..., :1])
    left = cat([one, s[..., :-1]], -1).cumprod(-1)
    right = cat([s[..., 1:], one], -1).flip(-1).cumprod(-1).flip(-1)
    weights = (left * right).to(u.dtype) * (g * alpha).unsqueeze(-1)
    return (u * weights.unsqueeze(-2)) @ vh


LINALG_DET = defop(
    "linalg_det", np.linalg.det, kind=OPAQUE, meta=_det_meta, save=(0,), save_output=True,
    node_name="LinalgDetBackward0", vjp=(_det_vjp,),
    jvp=lambda tangents, ans, a: ans * (apply(LINALG_INV, a).mT * tangents[0]).sum((-2, -1)))


def _slogdet_meta(a):
    _check_square("linalg.slogdet", a)
    _refuse_kernel(a, LOW_PRECISION, "linalg.slogdet")
    batch = tuple(a.shape[:-2])
    return (batch, batch), (a.dtype, a.dtype.to_real())


def _slogdet_vjp(grads, ans, a):
    g = grads[1]
    if g is None:
        return (None,)
    return (_matrices(g) * _mh(apply(LINALG_INV, a)),)


def _slogdet_jvp(tangents, ans, a):
    trace = (apply(LINALG_INV, a).mT * tangents[0]).sum((-2, -1))
    return None, (trace.real if trace.dtype.is_complex else trace)


LINALG_SLOGDET = defop(
    "linalg_slogdet", lambda a: np.linalg.slogdet(a), kind=OPAQUE, meta=_slogdet_meta,
    n_outputs=2, save=(0,), node_name="LinalgSlogdetBackward0", vjp=_slogdet_vjp,
    jvp=_slogdet_jvp)


@public("det", method=True)
def det(input):  # noqa: A002
    """The determinant of (a batch of) square matrices."""
    return apply(LINALG_DET, input)


def slogdet(input):  # noqa: A002
    """``(sign, log|det|)`` of (a batch of) square matrices; only ``logabsdet`` has a
    gradient."""
    return SlogdetResult(*apply(LINALG_SLOGDET, input))


@public("slogdet", method=True)
def torch_slogdet(input):  # noqa: A002
    """``linalg.slogdet``, as ``torch.slogdet`` returns it (``return_types.slogdet``)."""
    return TorchSlogdetResult(*apply(LINALG_SLOGDET, input))


@public("logdet", method=True)
def logdet(input):  # noqa: A002
    """``log(det(A))``: nan for a negative determinant, -inf for a zero one."""
    from .selection import where

    sign, logabs = apply(LINALG_SLOGDET, input)
    return where(sign < 0, float("nan"), logabs)


# ---------------------------------------------------------------- solve


def _solve_meta(a, b, vector):
    _check_square("linalg.solve", a)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {a.dtype._scalar_name} and B of type {b.dtype._scalar_name} "
                           "instead")
    rows = (b.shape[-1],) if vector else tuple(b.shape[-2:])
    if rows[0] != a.shape[-1]:
        cols = 1 if vector else b.shape[-1]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({a.shape[-2]}x{a.shape[-1]} and {rows[0]}x{cols})")
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-len(rows)]))
    _refuse_kernel(a, "lu_cpu")
    return batch + rows, a.dtype


def _solve_impl(a, b, vector):
    try:
        return np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None


def _as_matrix(t, vector):
    return t.unsqueeze(-1) if vector else t


def _solve_vjp_b(g, ans, a, b, vector):
    return sum_to(apply(LINALG_SOLVE, _mh(a), g, vector=vector), tuple(b.shape))


def _solve_vjp_a(g, ans, a, b, vector):
    gb = apply(LINALG_SOLVE, _mh(a), g, vector=vector)
    return sum_to(-(_as_matrix(gb, vector) @ _mh(_as_matrix(ans, vector))), tuple(a.shape))


def _solve_jvp(tangents, ans, a, b, vector):
    ta, tb = tangents
    rhs = tb if tb is not None else 0
    if ta is not None:
        product = ta @ _as_matrix(ans, vector)
        rhs = rhs - (product.squeeze(-1) if vector else product)
    return apply(LINALG_SOLVE, a, rhs, vector=vector)


LINALG_SOLVE = defop(
    "linalg_solve", column_major(_solve_impl), kind=OPAQUE, meta=_solve_meta, save=(0,),
    save_output=True,
    autocast=AUTOCAST_FP32,
    node_name="LinalgSolveExBackward0", vjp=(_solve_vjp_a, _solve_vjp_b), jvp=_solve_jvp)


def solve(A, B, *, left: bool = True):  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``); ``B`` a batch of
    matrices or of vectors (when its shape is ``A``'s without the last dim, or 1-D)."""
    if not left:
        return _mh(solve(_mh(A), _mh(B)))
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return apply(LINALG_SOLVE, A, B, vector=vector)


# ---------------------------------------------------------------- cholesky


_NOT_PD = ("linalg.cholesky: The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {} is not positive-definite).")


def _cholesky_impl(a, upper):
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        # torch's error names the first failing matrix of a batch and its first leading minor
        # that is not positive-definite
        n = a.shape[-1]
        i, order = next(((i, k) for i, mat in enumerate(a.reshape(-1, n, n))
                         for k in range(1, n + 1)
                         if np.any(np.linalg.eigvalsh(mat[:k, :k]) <= 0)), (0, n))
        where = f"(Batch element {i}): " if a.ndim > 2 else ""
        raise LinAlgError(_NOT_PD.replace("linalg.cholesky: ", f"linalg.cholesky: {where}")
                          .format(order)) from None
    return np.conj(np.swapaxes(low, -1, -2)) if upper else low


def _cholesky_meta(a, upper):
    _check_square("linalg.cholesky", a)
    _refuse_kernel(a, "cholesky_cpu")
    return tuple(a.shape), a.dtype


def _phi(x):
    # the lower triangle with half the diagonal
    return x.tril() - 0.5 * x.diagonal(0, -2, -1).diag_embed()


def _cholesky_vjp(g, ans, a, upper):
    low, g_low = (_mh(ans), _mh(g)) if upper else (ans, g)
    low_inv = apply(LINALG_INV, low)
    ga = _mh(low_inv) @ _phi(_mh(low) @ g_low) @ low_inv
    return 0.5 * (ga + _mh(ga))


def _cholesky_jvp(tangents, ans, a, upper):
    low = _mh(ans) if upper else ans
    low_inv = apply(LINALG_INV, low)
    t_low = low @ _phi(low_inv @ tangents[0] @ _mh(low_inv))
    return _mh(t_low) if upper else t_low


LINALG_CHOLESKY = defop(
    "linalg_cholesky", column_major(_cholesky_impl), kind=OPAQUE, meta=_cholesky_meta,
    save_output=True,
    autocast=AUTOCAST_FP32,
    node_name="LinalgCholeskyExBackward0", vjp=(_cholesky_vjp,), jvp=_cholesky_jvp)


def cholesky(A, *, upper: bool = False):  # noqa: N803
    """The Cholesky factor of (a batch of) Hermitian positive-definite matrices: lower ``L``
    with ``A = L L^H`` (``U = L^H`` with ``upper``). Only the lower triangle of ``A`` is read."""
    return apply(LINALG_CHOLESKY, A, upper=bool(upper))


# ---------------------------------------------------------------- compositions


@public("matrix_power", method=True)
def matrix_power(input, n: int):  # noqa: A002
    """``input`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse
    for negative ``n``), by repeated squaring."""
    from .creation import eye

    _check_square("linalg.matrix_power", input, floating=False)  # (integers: their products)
    if input.dtype is dtypes.bool and n >= 2:
        kernel = "bmm" if input.ndim > 2 else "addmm_impl_cpu_"  # (its matrix products')
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if n == 0:  # the identity, connected to input with a zero gradient (as torch's copy_)
        identity = eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return input.clone().copy_(identity.expand(tuple(input.shape)))
    base = input if n > 0 else apply(LINALG_INV, input)
    if n == 1:  # torch's small cases, its graph included
        return input.clone()
    if abs(n) <= 3:
        return base if n == -1 else base @ base if abs(n) == 2 else (base @ base) @ base
    k, result = abs(n), None
    while k:
        if k & 1:
            result = base if result is None else result @ base
        k >>= 1
        if k:
            base = base @ base
    return result


def multi_dot(tensors):
    """The product of a list of matrices (the first may be a vector, and the last), in the
    cheapest order, as torch's: 3 matrices by comparing both orders, more by the matrix-chain
    dynamic program; the result is ``mm``s, viewed to the output's shape."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    out_shape: list = []
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{first.ndim}D")
    if first.ndim == 2:
        out_shape.append(first.shape[0])
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{last.ndim}D")
    if last.ndim == 2:
        out_shape.append(last.shape[1])
    for i in range(1, n - 1):
        if tensors[i].ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].ndim}D")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(-1) if last.ndim == 1 else last]
    for i in range(1, n):
        if mats[i].dtype is not mats[0].dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{dtypes.CPP_NAMES[mats[0].dtype.name]} and tensor {i} "
                f"{dtypes.CPP_NAMES[mats[i].dtype.name]}")
        if mats[i].device != mats[0].device:
            raise RuntimeError(
                f"multi_dot(): all tensors must be on the same device but tensor 0 is on "
                f"{mats[0].device} and tensor {i} on {mats[i].device}")
        if mats[i - 1].shape[-1] != mats[i].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i - 1} and {i} with shapes {list(mats[i - 1].shape)} "
                f"and {list(mats[i].shape)} cannot be multiplied")
    if n == 2:
        out = mats[0].mm(mats[1])
    elif n == 3:  # (a x b) (b x c) (c x d): compare the two orders' costs
        a, b = mats[0].shape[0], mats[1].shape[0]
        c, d = mats[2].shape[0], mats[2].shape[1]
        if (a * c) * (b + d) > (b * d) * (a + c):
            out = mats[0].mm(mats[1].mm(mats[2]))
        else:
            out = mats[0].mm(mats[1]).mm(mats[2])
    else:
        out = _chain(mats, _chain_order(mats), 0, n - 1)
    return out.view(tuple(out_shape))


def _chain_order(mats: list) -> list:
    """torch's ``matrix_chain_order``: ``s[i][j]``, where the cheapest product of matrices
    ``i..j`` splits."""
    n = len(mats)
    p = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain(mats: list, split: list, i: int, j: int):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _chain(mats, split, i, k).mm(_chain(mats, split, k + 1, j))
