"""``torch.linalg.ldl_factor``/``ldl_factor_ex``/``ldl_solve``: the LDL^T factorization of
symmetric (or Hermitian) indefinite matrices with Bunch-Kaufman pivoting, in LAPACK's
``?sytrf``/``?hetrf`` (``uplo='L'``) format, as torch returns it.

``LD`` holds the unit lower triangular ``L`` below its diagonal and the block diagonal ``D``
(1x1 and 2x2 blocks) on the diagonal and first subdiagonal; its strict upper triangle is 0.
``pivots`` (int32, 1-based): ``pivots[k] = p > 0``: rows/columns ``k`` and ``p - 1`` were
swapped and ``D[k, k]`` is a 1x1 block; ``pivots[k] = pivots[k + 1] = -p < 0``: rows/columns
``k + 1`` and ``p - 1`` were swapped and ``D[k:k+2, k:k+2]`` is a 2x2 block. ``info > 0``: the
column ``info - 1`` of ``D`` is exactly zero (singular ``A``). The factorization is LAPACK's
unblocked ``?sytf2``/``?hetf2`` written in NumPy (one rank-1 or rank-2 update of the trailing
matrix per step); pivot choices use ``|re| + |im|`` for complex entries, as LAPACK does.

Neither op is differentiable in torch ("derivative for aten::linalg_ldl_factor_ex is not
implemented"), nor here.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .out_arg import with_out
from .memory_formats import column_major
from .registry import OPAQUE, apply, defop
from .return_types import return_type

LDLFactorResult = return_type("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _cabs1(v):
    return np.abs(v.real) + np.abs(v.imag) if np.iscomplexobj(v) else np.abs(v)


def _factor_one(a: np.ndarray, herm: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """LAPACK's ``?sytf2``/``?hetf2`` (lower) on one matrix: (LD, 1-based pivots, info)."""
    a = np.array(a, copy=True)
    n = a.shape[0]
    ipiv = np.zeros(n, dtype=np.int32)
    info = 0
    herm = herm and np.iscomplexobj(a)
    conj = np.conj if herm else (lambda v: v)
    if herm:
        a[np.diag_indices(n)] = a.diagonal().real
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k].real) if herm else float(_cabs1(a[k, k]))
        if k < n - 1:
            col = _cabs1(a[k + 1:, k])
            imax = k + 1 + int(np.argmax(col))
            colmax = float(col[imax - k - 1])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or math.isnan(absakk):
            info = info or k + 1
            ipiv[k] = k + 1
            k += 1
            continue
        if absakk >= _ALPHA * colmax:
            kp = k
        else:
            row = _cabs1(a[imax, k:imax])
            rowmax = float(row.max())
            if imax < n - 1:
                rowmax = max(rowmax, float(_cabs1(a[imax + 1:, imax]).max()))
            diag = abs(a[imax, imax].real) if herm else float(_cabs1(a[imax, imax]))
            if absakk >= _ALPHA * colmax * (colmax / rowmax):
                kp = k
            elif diag >= _ALPHA * rowmax:
                kp = imax
            else:
                kp, kstep = imax, 2
        kk = k + kstep - 1
        if kp != kk:  # swap rows and columns kk and kp of the trailing (lower) matrix
            if kp < n - 1:
                a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
            seg = a[kk + 1:kp, kk].copy()
            a[kk + 1:kp, kk] = conj(a[kp, kk + 1:kp])
            a[kp, kk + 1:kp] = conj(seg)
            if herm:
                a[kp, kk] = np.conj(a[kp, kk])
            a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
            if kstep == 2:
                a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
        if kstep == 1:
            if k < n - 1:
                r1 = 1.0 / (a[k, k].real if herm else a[k, k])
                x = a[k + 1:, k].copy()
                upd = np.tril(r1 * np.outer(x, conj(x)))
                a[k + 1:, k + 1:] -= upd
                a[k + 1:, k] = r1 * x
                if herm:
                    idx = np.arange(k + 1, n)
                    a[idx, idx] = a[idx, idx].real
        elif k < n - 2:
            if herm:
                d = abs(a[k + 1, k])
                d11 = a[k + 1, k + 1].real / d
                d22 = a[k, k].real / d
                tt = 1.0 / (d11 * d22 - 1.0)
                d21 = a[k + 1, k] / d
                d = tt / d
                ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d * (d11 * ck - d21 * ck1)
                wkp1 = d * (d22 * ck1 - np.conj(d21) * ck)
            else:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * ck - ck1)
                wkp1 = d21 * (d22 * ck1 - ck)
            upd = np.tril(np.outer(ck, conj(wk)) + np.outer(ck1, conj(wkp1)))
            a[k + 2:, k + 2:] -= upd
            a[k + 2:, k] = wk
            a[k + 2:, k + 1] = wkp1
            if herm:
                idx = np.arange(k + 2, n)
                a[idx, idx] = a[idx, idx].real
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return np.tril(a), ipiv, info


def _factor_impl(a: np.ndarray, *, hermitian: bool):
    *batch, n, _ = a.shape
    flat = a.reshape(-1, n, n)
    ld = np.zeros_like(flat)
    piv = np.zeros((flat.shape[0], n), dtype=np.int32)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for i in range(flat.shape[0]):
        ld[i], piv[i], info[i] = _factor_one(flat[i], hermitian)
    return ld.reshape(a.shape), piv.reshape(*batch, n), info.reshape(batch)


def _no_half(a, kernel: str) -> None:
    """torch's error: its LAPACK-style kernel has no float16/bfloat16 version."""
    if a.dtype in (dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{a.dtype._scalar_name}'")


def _factor_meta(a, *, hermitian):
    name = "torch.linalg.ldl_factor_ex"
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {a.dtype._scalar_name}")
    _no_half(a, "ldl_factor_kernel_cpu")
    batch = tuple(a.shape[:-2])
    return ((tuple(a.shape), batch + (a.shape[-1],), batch),
            (a.dtype, dtypes.int32, dtypes.int32))


def _no_derivative(name: str):
    def vjp(*args, **kwargs):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return vjp


LDL_FACTOR_EX = defop("linalg_ldl_factor_ex", column_major(_factor_impl), kind=OPAQUE,
                      meta=_factor_meta,
                      n_outputs=3, node_name="NotImplemented",
                      vjp=_no_derivative("linalg_ldl_factor_ex"),
                      jvp=_no_derivative("linalg_ldl_factor_ex"),
                      outputs_requiring_grad=lambda args, params: (True, False, False))


def _solve_one(ld: np.ndarray, ipiv: np.ndarray, b: np.ndarray, herm: bool) -> np.ndarray:
    """LAPACK's ``?sytrs``/``?hetrs`` (lower): solves ``A X = B`` from ``A``'s factorization."""
    n = ld.shape[0]
    b = np.array(b, copy=True)
    conj = np.conj if herm and np.iscomplexobj(ld) else (lambda v: v)
    k = 0
    while k < n:  # L D Y = P B
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] = b[k] / (ld[k, k].real if conj is np.conj else ld[k, k])
            k += 1
        else:
            kp = -ipiv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1 = ld[k, k] / conj(akm1k)
            ak = ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1 = b[k] / conj(akm1k)
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y (L^H: Hermitian)
        if ipiv[k] > 0:
            b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
            kp = ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= conj(ld[k + 1:, k - 1]) @ b[k + 1:]
            kp = -ipiv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def _solve_impl(ld: np.ndarray, piv: np.ndarray, b: np.ndarray, *, hermitian: bool):
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    lds = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape(-1, n, n)
    pivs = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape(-1, n)
    bs = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, *b.shape[-2:])
    dtype = np.result_type(ld, b)
    out = np.empty(bs.shape, dtype=dtype)
    for i in range(bs.shape[0]):
        out[i] = _solve_one(lds[i], pivs[i], bs[i].astype(dtype), hermitian)
    return out.reshape(batch + b.shape[-2:])


def _solve_meta(ld, piv, b, *, hermitian):
    name = "torch.linalg.ldl_solve"
    if ld.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    if piv.ndim < 1:
        raise RuntimeError(f"{name}: The input tensor pivots must have at least 1 dimension.")
    if b.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{ld.shape[-2]} by {ld.shape[-1]} matrices")
    if ld.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{ld.shape[-2]} by {ld.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if piv.dtype != dtypes.int32 and piv.dtype != dtypes.int64:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got "
                           f"{piv.dtype._scalar_name}")
    if ld.dtype != b.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but found "
                           f"LD of type {ld.dtype._scalar_name} and B of type "
                           f"{b.dtype._scalar_name} instead")
    if piv.shape[-1] != ld.shape[-1]:
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(piv.shape)} instead")
    if not (ld.dtype.is_floating_point or ld.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {ld.dtype._scalar_name}")
    _no_half(ld, "ldl_solve_kernel_cpu")
    batch = tuple(np.broadcast_shapes(tuple(ld.shape[:-2]), tuple(piv.shape[:-1]),
                                      tuple(b.shape[:-2])))
    return batch + tuple(b.shape[-2:]), b.dtype


LDL_SOLVE = defop("linalg_ldl_solve", column_major(_solve_impl), kind=OPAQUE, meta=_solve_meta,
                  node_name="NotImplemented",
                  vjp=_no_derivative("linalg_ldl_solve"), jvp=_no_derivative("linalg_ldl_solve"))


def _raise_info(name: str, info) -> None:
    from ..errors import ConcretizationError

    try:
        bad = np.asarray(info.numpy()).reshape(-1)
    except (ConcretizationError, RuntimeError):  # traced (jit) or batched (vmap): no values
        return
    for i, code in enumerate(bad):
        if code > 0:
            where = f"(Batch element {i}): " if info.ndim else ""
            raise RuntimeError(f"{name}: {where}The factorization could not be completed: "
                               f"D[{code - 1}, {code - 1}] is exactly zero (A is singular).")


def _ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False):  # noqa: N803
    """The LDL^T factorization with Bunch-Kaufman pivoting of (a batch of) symmetric or
    Hermitian matrices, in LAPACK's ``sytrf`` format, with LAPACK's ``info``.

    Args:
        A: a tensor of shape ``(*, n, n)``; only its lower triangle is read.
        hermitian: complex ``A`` is Hermitian (else complex symmetric); no effect for real.
        check_errors: raise when ``info`` is nonzero.

    Returns:
        ``(LD, pivots, info)``.
    """
    ld, piv, info = apply(LDL_FACTOR_EX, A, hermitian=bool(hermitian))
    if check_errors:
        _raise_info("torch.linalg.ldl_factor_ex", info)
    return LDLFactorExResult(ld, piv, info)


def _ldl_factor(A, *, hermitian: bool = False):  # noqa: N803
    """``(LD, pivots)``: the compact LDL^T factorization (``ldl_factor_ex``), raising where
    ``A`` is singular (a zero column of ``D``).

    Args:
        A: a tensor of shape ``(*, n, n)``; only its lower triangle is read.
        hermitian: complex ``A`` is Hermitian (else complex symmetric); no effect for real.
    """
    ld, piv, info = apply(LDL_FACTOR_EX, A, hermitian=bool(hermitian))
    _raise_info("torch.linalg.ldl_factor", info)
    return LDLFactorResult(ld, piv)


def _ldl_solve(LD, pivots, B, *, hermitian: bool = False):  # noqa: N803
    """Solves ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` of ``A``.

    Args:
        LD: the compact factorization, ``(*, n, n)``.
        pivots: its pivots, ``(*, n)`` (integers).
        B: the right-hand sides, ``(*, n, k)`` (batch dimensions broadcast).
        hermitian: as given to ``ldl_factor``.
    """
    return apply(LDL_SOLVE, LD, pivots, B, hermitian=bool(hermitian))


ldl_factor_ex = with_out("linalg_ldl_factor_ex", _ldl_factor_ex)
ldl_factor = with_out("linalg_ldl_factor", _ldl_factor)
ldl_solve = with_out("linalg_ldl_solve", _ldl_solve)
ldl_factor_ex.__name__, ldl_factor.__name__, ldl_solve.__name__ = (
    "ldl_factor_ex", "ldl_factor", "ldl_solve")
