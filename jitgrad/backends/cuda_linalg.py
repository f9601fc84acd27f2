"""Singular values on the device: ``linalg.svdvals`` and its backward (and JVP) ops.

numba-cuda reaches no cuSOLVER, so each matrix is handled by one thread running a one-sided
Jacobi SVD (Hestenes): columns of a float64 working copy ``W`` (the matrix, transposed first
when it is wide, so ``W`` is ``M x N`` with ``M >= N``) are rotated pairwise until every pair is
orthogonal to ``N * 2.2e-16`` (at most ``SWEEPS`` sweeps), accumulating the rotations in ``V``.
Then ``W = U diag(s)`` and ``s_j = ||W[:, j]||``; an insertion sort orders them descending.

The backward ``U diag(g) V^T`` and the JVP ``s_i' = u_i^T T v_i`` read ``U`` and ``V`` from the
same kernel (run again on the saved input, as the CPU op recomputes its SVD). Where a singular
value is zero its ``u`` is taken as zero (the CPU's LAPACK picks some unit vector there: the
gradient of a rank-deficient matrix is not unique). One thread per matrix, O(sweeps * N^2 * M)
each: meant for batches of small matrices, not for one large one.
"""

from __future__ import annotations

import numpy as np

from .. import _cuda_array as ca
from .._cuda_array import CudaArray
from ..ops.registry import Tensor
from .numba_cuda import compile_source, launch_config

SWEEPS = 30

_JACOBI = """import math
def jacobi(W, V, S, O, batch, m, n, sweeps, tol):
    for b in range(cuda.grid(1), batch, cuda.gridsize(1)):
        for i in range(n):
            for j in range(n):
                V[b, i, j] = 1.0 if i == j else 0.0
        for sweep in range(sweeps):
            rotated = False
            for p in range(n - 1):
                for q in range(p + 1, n):
                    alpha = 0.0
                    beta = 0.0
                    gamma = 0.0
                    for k in range(m):
                        wp = W[b, k, p]
                        wq = W[b, k, q]
                        alpha += wp * wp
                        beta += wq * wq
                        gamma += wp * wq
                    if gamma != 0.0 and abs(gamma) > tol * math.sqrt(alpha * beta):
                        rotated = True
                        zeta = (beta - alpha) / (2.0 * gamma)
                        sign = 1.0 if zeta >= 0.0 else -1.0
                        t = sign / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                        c = 1.0 / math.sqrt(1.0 + t * t)
                        s = c * t
                        for k in range(m):
                            wp = W[b, k, p]
                            wq = W[b, k, q]
                            W[b, k, p] = c * wp - s * wq
                            W[b, k, q] = s * wp + c * wq
                        for k in range(n):
                            vp = V[b, k, p]
                            vq = V[b, k, q]
                            V[b, k, p] = c * vp - s * vq
                            V[b, k, q] = s * vp + c * vq
            if not rotated:
                break
        for j in range(n):
            acc = 0.0
            for k in range(m):
                acc += W[b, k, j] * W[b, k, j]
            S[b, j] = math.sqrt(acc)
            O[b, j] = j
        for j in range(1, n):
            cur = O[b, j]
            at = j - 1
            while at >= 0 and S[b, O[b, at]] < S[b, cur]:
                O[b, at + 1] = O[b, at]
                at -= 1
            O[b, at + 1] = cur
"""
_VALUES = """def values(S, O, out, batch, n):
    for f in range(cuda.grid(1), batch * n, cuda.gridsize(1)):
        b = f // n
        i = f % n
        out[b, i] = {D}(S[b, O[b, i]])
"""
_GRAD = """def grad(W, V, S, O, g, out, batch, m, n):
    for f in range(cuda.grid(1), batch * m * n, cuda.gridsize(1)):
        c = f % n
        r = (f // n) % m
        b = f // (m * n)
        acc = 0.0
        for i in range(n):
            j = O[b, i]
            if S[b, j] > 0.0:
                acc += W[b, r, j] / S[b, j] * g[b, i] * V[b, c, j]
        out[b, r, c] = acc
"""
_JVP = """def jvp(W, V, S, O, t, out, batch, m, n):
    for f in range(cuda.grid(1), batch * n, cuda.gridsize(1)):
        b = f // n
        i = f % n
        j = O[b, i]
        acc = 0.0
        if S[b, j] > 0.0:
            for r in range(m):
                u = W[b, r, j] / S[b, j]
                for c in range(n):
                    acc += u * t[b, r, c] * V[b, c, j]
        out[b, i] = {D}(acc)
"""


def _launch(src: str, name: str, count: int, *args) -> None:
    if count:
        blocks, threads = launch_config(count)
        compile_source(src, name)[blocks, threads](*args)


def _tall(x: CudaArray, dt=np.float64) -> tuple[CudaArray, bool]:
    """A contiguous ``dt`` copy of ``x`` as ``(batch, M, N)`` with ``M >= N`` (transposed when
    wide), and whether it was transposed."""
    wide = x.shape[-2] < x.shape[-1]
    if wide:
        x = x.view(x.shape[:-2] + (x.shape[-1], x.shape[-2]),
                   x.strides[:-2] + (x.strides[-1], x.strides[-2]), x.offset)
    out = ca.empty(x.shape, dt)
    if out.size:
        out.copy_from(x)
    batch = int(np.prod(x.shape[:-2], dtype=np.int64))
    return out.view((batch,) + x.shape[-2:]), wide


def _svd(x: CudaArray):
    """``(W, V, S, O, wide)`` of the one-sided Jacobi SVD of each matrix of ``x``."""
    w, wide = _tall(x)
    batch, m, n = w.shape
    v = ca.empty((batch, n, n), np.float64)
    s = ca.empty((batch, n), np.float64)
    order = ca.empty((batch, n), np.int64)
    _launch(_JACOBI, "jacobi", batch if m * n else 0, w.dev(), v.dev(), s.dev(), order.dev(),
            batch, m, n, SWEEPS, n * 2.2e-16)
    return w, v, s, order, wide


def svdvals(x: CudaArray) -> CudaArray:
    """The singular values of each matrix of ``x``, descending, in ``x``'s dtype."""
    w, v, s, order, _ = _svd(x)
    batch, _, n = w.shape
    out = ca.empty((batch, n), x.dtype)
    _launch(_VALUES.format(D=f"np.{x.dtype.name}"), "values", batch * n, s.dev(),
            order.dev(), out.dev(), batch, n)
    return out.view(x.shape[:-2] + (n,))


def svdvals_backward(g: CudaArray, x: CudaArray) -> CudaArray:
    """``U diag(g) V^T`` for each matrix of ``x``, in ``x``'s dtype."""
    w, v, s, order, wide = _svd(x)
    batch, m, n = w.shape
    gg = ca.empty(g.shape, np.float64)
    if gg.size:
        gg.copy_from(g)
    out = ca.empty((batch, m, n), np.float64)
    _launch(_GRAD, "grad", out.size, w.dev(), v.dev(), s.dev(), order.dev(),
            gg.view((batch, n)).dev(), out.dev(), batch, m, n)
    full = out.view(x.shape[:-2] + (m, n))
    if wide:
        d = full.ndim
        full = full.view(full.shape[:d - 2] + (n, m),
                         full.strides[:d - 2] + (full.strides[-1], full.strides[-2]))
    res = ca.empty(x.shape, x.dtype)
    if res.size:
        res.copy_from(full)
    return res


def svdvals_jvp(t: CudaArray, x: CudaArray) -> CudaArray:
    """``u_i^T T v_i`` for each matrix of ``x`` and its tangent ``t``."""
    w, v, s, order, wide = _svd(x)
    batch, m, n = w.shape
    tt, _ = _tall(t)
    out = ca.empty((batch, n), x.dtype)
    _launch(_JVP.format(D=f"np.{x.dtype.name}"), "jvp", batch * n, w.dev(), v.dev(), s.dev(),
            order.dev(), tt.dev(), out.dev(), batch, m, n)
    return out.view(x.shape[:-2] + (n,))


def _check(op, *ts: Tensor) -> None:
    from .cuda_eager import unsupported

    for t in ts:
        if t._dtype.np.kind != "f":
            raise unsupported(op, f"dtype {t._dtype}")


def _svdvals_op(op, args, params):
    x = args[0]
    _check(op, x)
    op.meta(_stand(x))
    return svdvals(x._data), x._dtype


def _backward_op(op, args, params):
    g, x = args
    _check(op, g, x)
    return svdvals_backward(g._data, x._data), x._dtype


def _jvp_op(op, args, params):
    t, x = args
    _check(op, t, x)
    return svdvals_jvp(t._data, x._data), x._dtype


def _stand(a: Tensor):
    from .cuda_eager import _standin

    return _standin(a)


BY_NAME = {"linalg_svdvals": _svdvals_op, "svdvals_backward": _backward_op,
           "svdvals_jvp": _jvp_op}
__all__ = ["BY_NAME", "svdvals", "svdvals_backward", "svdvals_jvp"]
