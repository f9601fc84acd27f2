"""torch.linalg's pseudo-inverse and what is built on it: ``pinv`` (one op, torch's
``pinv_backward``), ``matrix_rank`` and ``lstsq`` (``pinv(A) @ B``, differentiable, with
LAPACK's ranks, residuals and singular values as torch reports them)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .autocast_policy import FP32, autocast_policy
from .linalg2 import _mh
from .linalg_decomp import _check_matrix
from .memory_formats import to_column_major
from .registry import OPAQUE, apply, defop
from .return_types import return_type

LstsqResult = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# ---------------------------------------------------------------- pinv


def _tolerances(a, atol, rtol, hermitian):
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    largest = s.max(axis=-1, initial=0.0)
    eps = np.finfo(np.dtype(a.dtype).type(0).real.dtype).eps
    atol = 0.0 if atol is None else atol
    if rtol is None:
        rtol = eps * max(a.shape[-2:]) if atol == 0 else 0.0
    return s, np.maximum(atol, rtol * largest)


def _pinv_impl(a, atol, rtol, hermitian):
    _, cutoff = _tolerances(a, atol, rtol, hermitian)
    if a.shape[-1] == 0 or a.shape[-2] == 0:
        return np.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > np.asarray(cutoff)[..., None]
    s_inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return np.asarray((vh.conj().swapaxes(-1, -2) * s_inv[..., None, :])
                      @ u.conj().swapaxes(-1, -2), dtype=a.dtype)


def _pinv_vjp(g, ans, a, atol, rtol, hermitian):
    # torch's pinv_backward
    pinv, pinv_h, g_h = ans, _mh(ans), _mh(g)
    m, n = a.shape[-2], a.shape[-1]
    if m <= n:
        k = g_h @ pinv
        k_pinv_h = k @ pinv_h
        return (-_mh(pinv @ k) + k_pinv_h - (a @ pinv) @ k_pinv_h
                + (pinv_h @ pinv) @ (g_h - k @ a))
    k = pinv @ g_h
    pinv_h_k = pinv_h @ k
    return (-_mh(k @ pinv) + pinv_h_k - pinv_h_k @ (pinv @ a)
            + (g_h - a @ k) @ (pinv @ pinv_h))


def _pinv_meta(a, atol, rtol, hermitian):
    if a.ndim < 2 or a.dtype not in (dtypes.float32, dtypes.float64, dtypes.complex64,
                                     dtypes.complex128):
        raise RuntimeError(f"linalg.pinv({a.dtype._scalar_name}{{{list(a.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")
    return tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), a.dtype


def _pinv_jvp(tangents, ans, a, atol, rtol, hermitian):
    # d(A+) = -A+ dA A+ + A+ A+^H dA^H (I - A A+) + (I - A+ A) dA^H A+^H A+  (constant rank)
    p, da = ans, tangents[0]
    da_h, p_h = _mh(da), _mh(ans)
    return (-p @ da @ p + p @ p_h @ da_h - p @ p_h @ da_h @ a @ p
            + da_h @ p_h @ p - p @ a @ da_h @ p_h @ p)


LINALG_PINV = defop("linalg_pinv", _pinv_impl, kind=OPAQUE, meta=_pinv_meta, save=(0,),
                    save_output=True, node_name="LinalgPinvBackward0", vjp=(_pinv_vjp,),
                    jvp=_pinv_jvp)


def _number(x):
    if x is None or isinstance(x, (int, float, np.integer, np.floating)):
        return None if x is None else float(x)
    if getattr(x, "numel", None) is not None and x.numel() == 1:  # (a one-element tensor)
        return float(x.item())
    raise NotImplementedError("jitgrad: linalg tolerances given as tensors of one value per "
                              "matrix are not supported; pass one number for the batch")


_PINV_SIGNATURES = (
    "Tensor input, *, Tensor atol = None, Tensor rtol = None, bool hermitian = False, "
    "Tensor out = None",
    "Tensor input, *, float atol = None, float rtol = None, bool hermitian = False, "
    "Tensor out = None",
    "Tensor input, Tensor rcond, bool hermitian = False, *, Tensor out = None",
    "Tensor input, float rcond, bool hermitian = False, *, Tensor out = None")


def pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None):  # noqa: N803
    """The Moore-Penrose pseudo-inverse of (a batch of) matrices: singular values at or below
    ``max(atol, rtol * largest)`` count as zero (default ``rtol``: ``eps * max(m, n)``);
    torch's older ``rcond`` is ``rtol``."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            from .arg_errors import invalid_combination

            given = {k: v for k, v in (("rcond", rcond), ("rtol", rtol), ("atol", atol))
                     if v is not None}  # (as passed, rcond first: torch lists them reversed)
            raise invalid_combination("linalg_pinv", (A,), given, _PINV_SIGNATURES)
        rtol = rcond
    return apply(LINALG_PINV, A, atol=_number(atol), rtol=_number(rtol),
                 hermitian=bool(hermitian))


@autocast_policy(FP32)
def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False):  # noqa: N803
    """The number of singular values above ``max(atol, rtol * largest)`` (as ``pinv``)."""
    from ..tensor import _new

    _check_matrix("linalg.matrix_rank", A)
    a = A.detach().cpu().numpy()
    s, cutoff = _tolerances(a, _number(atol), _number(rtol), hermitian)
    rank = (s > np.asarray(cutoff)[..., None]).sum(axis=-1).astype(np.int64)
    return _new(np.asarray(rank), dtypes.int64)


# ---------------------------------------------------------------- lstsq


_DRIVERS = ("gelsy", "gelsd", "gelss", "gels")


@autocast_policy(FP32)
def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of ``A X = B`` for (a batch of) ``m x n`` matrices ``A``,
    with torch's fields: ``solution``; ``residuals`` (the squared residual norms, when
    ``m > n``, every ``A`` has full rank and the driver is not ``gelsy``; else empty);
    ``rank`` (drivers other than ``gels``); ``singular_values`` (``gelsd``, ``gelss``). The
    solution is ``pinv(A) @ B``, differentiable in ``A`` and ``B``."""
    from ..tensor import _new

    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"({', '.join(_DRIVERS)})")
    _check_matrix("torch.linalg.lstsq", A)
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    if A.shape[-2] != b.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    eps = float(np.finfo(np.dtype(A.dtype.to_real().np)).eps)
    r = eps * max(A.shape[-2:]) if rcond is None else float(rcond)
    solution = to_column_major(pinv(A, rtol=r) @ b)  # (LAPACK's layout, as torch's)
    real = A.dtype.to_real()
    empty = _new(np.empty((0,), real.np), real)
    m, n = A.shape[-2], A.shape[-1]
    if min(m, n):  # (tensor ops: under vmap and jit the values are not known)
        from .norms import svdvals

        s = svdvals(A.detach())
        rank = (s > r * s.amax(-1, keepdim=True)).sum(-1)
    else:
        s = _new(np.zeros(tuple(A.shape[:-2]) + (0,), real.np), real)
        rank = _new(np.zeros(tuple(A.shape[:-2]), np.int64), dtypes.int64)
    residuals = empty
    # (the residuals' presence depends on the ranks: data-dependent under a trace)
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        diff = A @ solution - b
        residuals = (diff.abs() ** 2).sum(-2).detach() if diff.dtype.is_complex \
            else (diff * diff).sum(-2).detach()
    rank_t = rank if driver != "gels" else _new(np.empty((0,), np.int64), dtypes.int64)
    values = s if driver in ("gelsd", "gelss") else empty
    return LstsqResult(solution.squeeze(-1) if vector else solution, residuals, rank_t, values)
