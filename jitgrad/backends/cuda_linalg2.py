"""``linalg.inv``, ``det``, ``slogdet``, ``solve`` and ``cholesky`` on the device: numba-cuda
reaches no cuSOLVER, so each matrix of a batch is factored by one thread (as
``cuda_linalg``'s Jacobi SVD), in float64 / complex128 scratch copies, the results rounded to
the input's dtype. Meant for batches of small matrices.

* ``lu``: Gaussian elimination with partial pivoting (the first row of largest ``|a|``, as
  the CPU's ``_zero_pivot``), applied to right-hand sides ``B`` (the identity for ``inv``,
  ``b`` for ``solve``, none for ``det``/``slogdet``), then back substitution; the determinant
  is the pivots' product times the swaps' sign, ``slogdet`` the product of their phases and
  the sum of ``log|pivot|``. A zero pivot stops that matrix: its determinant is 0, its
  ``slogdet`` ``(0, -inf)``, and ``info`` holds the pivot's 1-based position, which ``inv`` and
  ``solve`` read back (one number) to raise torch's ``LinAlgError`` text.
* ``trsv``: ``solve_triangular``, one thread per (matrix, right-hand column): back (or
  forward) substitution over the upper (lower) triangle, ones on the diagonal with
  ``unitriangular``; a zero pivot gives inf/nan, as LAPACK's ``trtrs`` (and the CPU op);
* ``chol``: the Cholesky-Banachiewicz rows from the lower triangle; a non-positive (or NaN)
  diagonal stops the matrix with ``info`` its order, raised as torch's text.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .. import dtypes
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from .numba_cuda import compile_source, full, launch_config

_LU = """import math
def lu(W, B, info, det, sgn, logabs, batch, n, k):
    for b in range(cuda.grid(1), batch, cuda.gridsize(1)):
        s = W[b, 0, 0] * 0 + 1
        la = 0.0
        info[b] = 0
        for c in range(n):
            p = c
            best = abs(W[b, c, c])
            for r in range(c + 1, n):
                if abs(W[b, r, c]) > best:
                    best = abs(W[b, r, c])
                    p = r
            if not (best > 0.0):
                info[b] = c + 1
                break
            if p != c:
                for j in range(n):
                    t = W[b, c, j]
                    W[b, c, j] = W[b, p, j]
                    W[b, p, j] = t
                for j in range(k):
                    t = B[b, c, j]
                    B[b, c, j] = B[b, p, j]
                    B[b, p, j] = t
                s = -s
            piv = W[b, c, c]
            s = s * (piv / best)
            la += math.log(best)
            for r in range(c + 1, n):
                f = W[b, r, c] / piv
                for j in range(c + 1, n):
                    W[b, r, j] -= f * W[b, c, j]
                for j in range(k):
                    B[b, r, j] -= f * B[b, c, j]
        if info[b] != 0:
            det[b] = s * 0
            sgn[b] = s * 0
            logabs[b] = -math.inf
            continue
        sgn[b] = s
        logabs[b] = la
        det[b] = s * math.exp(la)
        for r in range(n - 1, -1, -1):
            for j in range(k):
                x = B[b, r, j]
                for q in range(r + 1, n):
                    x -= W[b, r, q] * B[b, q, j]
                B[b, r, j] = x / W[b, r, r]
"""

_CHOL = """import math
def chol(A, L, info, batch, n):
    for b in range(cuda.grid(1), batch, cuda.gridsize(1)):
        info[b] = 0
        for i in range(n):
            for j in range(n):
                L[b, i, j] = A[b, i, j] * 0
        for j in range(n):
            d = A[b, j, j].real
            for q in range(j):
                d -= abs(L[b, j, q]) ** 2
            if not (d > 0.0):
                info[b] = j + 1
                break
            root = math.sqrt(d)
            L[b, j, j] = root
            for i in range(j + 1, n):
                x = A[b, i, j]
                for q in range(j):
                    x -= L[b, i, q] * {CONJ}
                L[b, i, j] = x / root
"""


def _launch(src: str, name: str, count: int, *args) -> None:
    if count:
        blocks, threads = launch_config(count)
        compile_source(src, name)[blocks, threads](*args)


def _work(x: CudaArray, shape: tuple, complex_: bool = False) -> CudaArray:
    """A contiguous float64 / complex128 copy of ``x`` broadcast to ``shape`` (complex128 for
    complex ``x`` or with ``complex_``)."""
    dt = np.complex128 if x.dtype.kind == "c" or complex_ else np.float64
    out = ca.empty(shape, dt)
    if out.size:
        out.copy_from(x)
    return out


def _batch(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _cast(x: CudaArray, dt) -> CudaArray:
    out = ca.empty(x.shape, np.dtype(dt))
    if out.size:
        out.copy_from(x)
    return out


def lu(a: CudaArray, b: CudaArray | None, batch_shape: tuple):
    """``(solution or None, info, det, sign, logabsdet)`` of each matrix of ``a`` (broadcast
    to ``batch_shape``), with right-hand sides ``b`` (``(..., n, k)``) or none."""
    n = a.shape[-1]
    w = _work(a, batch_shape + (n, n))
    count = _batch(batch_shape)
    w3 = w.view((count, n, n))
    if b is None:
        k = 0
        rhs = ca.empty((count, n, 1), w.dtype)
    else:
        k = b.shape[-1]
        rhs = _work(b, batch_shape + (n, k), w.dtype.kind == "c").view((count, n, k))
    info = ca.empty((max(count, 1),), np.int64)
    det, sgn = ca.empty((max(count, 1),), w.dtype), ca.empty((max(count, 1),), w.dtype)
    logabs = ca.empty((max(count, 1),), np.float64)
    if n == 0:  # (the empty matrix: det 1, nothing to solve)
        det, sgn, logabs = (full((max(count, 1),), v, d) for v, d in
                            ((1, w.dtype), (1, w.dtype), (0, np.float64)))
        info = full((max(count, 1),), 0, np.int64)
    else:
        _launch(_LU, "lu", count, w3.dev(), rhs.dev(), info.dev(), det.dev(), sgn.dev(),
                logabs.dev(), count, n, k)
    return (None if b is None else rhs), info, det, sgn, logabs


def _first_bad(info: CudaArray, count: int) -> int:
    """The first nonzero ``info`` of the batch (one number read back), or 0."""
    from .cuda_eager import _no_grad
    from ..tensor import _make

    if not count:
        return 0
    t = _make(info.view((count,)), dtypes.int64)
    return int(_no_grad(lambda: t.amax()).item())


def _square(op, a: Tensor):
    from .cuda_eager import _standin

    return op.meta(_standin(a)) if op.name != "linalg_cholesky" else None


def _inv_op(op, args, params):
    from ..ops.linalg2 import _INV_SINGULAR, LinAlgError

    a = args[0]
    shape, dt = _square(op, a)
    n = a._data.shape[-1]
    batch = tuple(a._data.shape[:-2])
    eye = ca.to_device(np.eye(n, dtype=np.float64))
    solution, info, *_ = lu(a._data, eye, batch)
    bad = _first_bad(info, _batch(batch))
    if bad:
        raise LinAlgError(_INV_SINGULAR.format(bad))
    return _cast(solution.view(tuple(shape)), dt.np), dt


def _solve_op(op, args, params):
    from ..ops.linalg2 import LinAlgError
    from .cuda_eager import _standin

    a, b = args
    shape, dt = op.meta(_standin(a), _standin(b), **params)
    vector = params["vector"]
    n = a._data.shape[-1]
    rhs = b._data
    if vector:
        rhs = rhs.view(rhs.shape + (1,), rhs.strides + (0,), rhs.offset)
    batch = tuple(shape[:-1] if vector else shape[:-2])
    solution, info, *_ = lu(a._data, rhs, batch)
    if _first_bad(info, _batch(batch)):
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.")
    k = 1 if vector else rhs.shape[-1]
    out = solution.view(batch + (n, k))
    return _cast(out.view(tuple(shape)), dt.np), dt


def _det_op(op, args, params):
    a = args[0]
    meta = _square(op, a)
    batch = tuple(a._data.shape[:-2])
    _, _, det, sgn, logabs = lu(a._data, None, batch)
    count = _batch(batch)
    if op.name == "linalg_det":
        shape, dt = meta
        return _cast(det.view((count,)).view(tuple(shape)), dt.np), dt
    (s_shape, l_shape), (s_dt, l_dt) = meta
    return ((_cast(sgn.view((count,)).view(tuple(s_shape)), s_dt.np),
             _cast(logabs.view((count,)).view(tuple(l_shape)), l_dt.np)), (s_dt, l_dt))


def _cholesky_op(op, args, params):
    from ..ops.linalg2 import _NOT_PD, LinAlgError
    from .cuda_eager import _no_grad, _standin
    from ..tensor import _make

    a = args[0]
    shape, dt = op.meta(_standin(a), **params)
    n = a._data.shape[-1]
    batch = tuple(a._data.shape[:-2])
    count = _batch(batch)
    w = _work(a._data, batch + (n, n))
    low = ca.empty(w.shape, w.dtype)
    info = full((max(count, 1),), 0, np.int64)
    if n:
        code = _CHOL.format(CONJ="L[b, j, q].conjugate()" if w.dtype.kind == "c" else
                            "L[b, j, q]")
        _launch(code, "chol", count, w.view((count, n, n)).dev(), low.view((count, n, n)).dev(),
                info.dev(), count, n)
    bad = _first_bad(info, count)
    if bad:
        raise LinAlgError(_NOT_PD.format(bad))
    out = _make(_cast(low, dt.np), dt)
    if params["upper"]:
        out = _no_grad(lambda: (out.mH if dt.is_complex else out.mT).contiguous())
    return out._data, dt


_TRSV = """def trsv(T, B, X, count, n, k, upper, unit):
    for f in range(cuda.grid(1), count * k, cuda.gridsize(1)):
        b = f // k
        j = f % k
        for s in range(n):
            i = n - 1 - s if upper else s
            acc = B[b, i, j]
            if upper:
                for q in range(i + 1, n):
                    acc -= T[b, i, q] * X[b, q, j]
            else:
                for q in range(i):
                    acc -= T[b, i, q] * X[b, q, j]
            X[b, i, j] = acc if unit else acc / T[b, i, i]
"""


def _swap_last(x: CudaArray) -> CudaArray:
    return x.view(x.shape[:-2] + (x.shape[-1], x.shape[-2]),
                  x.strides[:-2] + (x.strides[-1], x.strides[-2]), x.offset)


def _solve_triangular_op(op, args, params):
    from .cuda_eager import _standin

    a, b = args
    shape, dt = op.meta(_standin(a), _standin(b), **params)
    upper, unit, left = params["upper"], params["unitriangular"], params["left"]
    ta, tb = a._data, b._data
    if not left:  # X A = B  <=>  A^T X^T = B^T
        ta, tb, upper = _swap_last(ta), _swap_last(tb), not upper
    n, k = ta.shape[-1], tb.shape[-1]
    batch = tuple(shape[:-2])
    count = _batch(batch)
    cplx = dt.is_complex
    t = _work(ta, batch + (n, n), cplx).view((count, n, n))
    rhs = _work(tb, batch + (n, k), cplx).view((count, n, k))
    x = ca.empty(rhs.shape, rhs.dtype)
    _launch(_TRSV, "trsv", count * k, t.dev(), rhs.dev(), x.dev(), count, n, k, bool(upper),
            bool(unit))
    out = x.view(batch + (n, k))
    if not left:
        out = _swap_last(out)
    return _cast(out, dt.np), dt


BY_NAME = {"linalg_inv": _inv_op, "linalg_solve": _solve_op, "linalg_det": _det_op,
           "linalg_slogdet": _det_op, "linalg_cholesky": _cholesky_op,
           "linalg_solve_triangular": _solve_triangular_op}
__all__ = ["BY_NAME", "lu"]
