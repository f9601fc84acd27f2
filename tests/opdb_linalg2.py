"""opdb records of ``jitgrad/ops/linalg2.py`` (linalg.inv, det, slogdet, solve, cholesky,
matrix_power), appended to ``opdb.OP_DB``. Samples are well conditioned: a random matrix plus
3 times the identity; cholesky factors ``B B^T + 3 I`` of its sample ``B``."""

from __future__ import annotations

import numpy as np


def _square(*batch, n=3):
    return lambda rng: rng.uniform(-1.0, 1.0, batch + (n, n)) + 3 * np.eye(n)


def _spd_of(b):
    return b @ np.swapaxes(b, -1, -2) + 3 * np.eye(b.shape[-1])


def _cholesky_call(f, b, **kw):
    return f(b @ b.mT + 3 * _eye_like(b), **kw)


def _eye_like(b):
    import importlib

    lib = importlib.import_module(type(b).__module__.split(".")[0])  # jitgrad or torch
    return lib.eye(b.shape[-1], dtype=b.dtype, device=b.device)


def linalg2_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _many, _s

    loose = {"rtol": {"float32": 1e-4, "float64": 1e-9}, "atol": {"float32": 1e-5,
                                                                   "float64": 1e-11}}
    return [
        OpInfo("linalg.inv", "linalg.inv", _many(_s(_square(), name="3x3"),
                                                 _s(_square(2), name="batch")),
               np.linalg.inv, **loose),
        OpInfo("linalg.det", "linalg.det", _many(_s(_square(), name="3x3"),
                                                 _s(_square(2), name="batch")),
               np.linalg.det, **loose),
        OpInfo("linalg.slogdet", "linalg.slogdet",
               _many(_s(_square(), name="3x3"), _s(lambda rng: -_square(2)(rng), name="neg")),
               lambda a: tuple(np.linalg.slogdet(a)), **loose),
        OpInfo("linalg.solve", "linalg.solve",
               _many(_s(_square(), _arr(3, 2), name="matrix"),
                     _s(_square(2), _arr(3), name="vector"),
                     _s(_square(), _arr(2, 3, 2), name="broadcast_a")),
               lambda a, b: (np.linalg.solve(a, b[..., None])[..., 0]
                             if b.ndim == 1 or b.shape == a.shape[:-1]
                             else np.linalg.solve(a, b)), **loose),
        OpInfo("linalg.cholesky", "linalg.cholesky",
               _many(_s(_arr(3, 3), name="3x3"), _s(_arr(2, 3, 3), upper=True, name="upper")),
               lambda b, upper=False: (np.swapaxes(np.linalg.cholesky(_spd_of(b)), -1, -2)
                                       if upper else np.linalg.cholesky(_spd_of(b))),
               call=_cholesky_call, **loose),
        OpInfo("linalg.matrix_power", "linalg.matrix_power",
               _many(_s(_square(), 3, name="cube"), _s(_square(2), -2, name="inverse_sq")),
               np.linalg.matrix_power, **loose),
    ]


def _column_signs(v):
    # +-1 per column (the sign of its sum): vectors are unique up to these signs, and LAPACK's
    # choice differs between drivers and UPLO (a constant sign has no gradient)
    return (v.sum(-2, keepdims=True) if isinstance(v, np.ndarray)
            else v.sum(-2, keepdim=True).detach()) > 0


def _signed(v, positive):
    return v * (positive * 2.0 - 1.0) if isinstance(v, np.ndarray) else \
        v * (positive.to(v.dtype) * 2 - 1)


def _eigh_call(f, a, **kw):
    values, vectors = f(a + a.mT, **kw)
    return values, _signed(vectors, _column_signs(vectors))


def _eigh_ref(a, UPLO="L"):  # noqa: N803
    values, vectors = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return values, _signed(vectors, _column_signs(vectors))


def _svd_call(f, a, **kw):
    u, s, vh = f(a, **kw)
    k = s.shape[-1]
    positive = _column_signs(u[..., :k])
    keep = u.shape[-1] - k  # (the columns past k are not unique at all: left as they are)
    u = _signed(u[..., :k], positive) if not keep else u
    return u, s, _signed(vh[..., :k, :].mT, positive).mT if not keep else vh


def _svd_ref(a, full_matrices=True):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    positive = _column_signs(u[..., :k])
    if u.shape[-1] == k:
        u = _signed(u, positive)
        vh = np.swapaxes(_signed(np.swapaxes(vh[..., :k, :], -1, -2), positive), -1, -2)
    return u, s, vh


def _triangular_ref(a, b, upper, left=True):
    t = np.triu(a) if upper else np.tril(a)
    return np.linalg.solve(t, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def linalg_decomp_records() -> list:
    """Records of ``jitgrad/ops/linalg_decomp.py`` (eigh, qr, svd, pinv, solve_triangular):
    distinct eigenvalues and singular values, so the vectors' gradients are defined."""
    from opdb import OpInfo, _arr, _many, _s

    loose = {"rtol": {"float32": 1e-3, "float64": 1e-8}, "atol": {"float32": 1e-4,
                                                                  "float64": 1e-10}}
    return [
        OpInfo("linalg.eigh", "linalg.eigh",
               _many(_s(_arr(3, 3), name="3x3"), _s(_arr(2, 3, 3), UPLO="U", name="upper")),
               _eigh_ref, call=_eigh_call, **loose),
        OpInfo("linalg.qr", "linalg.qr",
               _many(_s(_arr(4, 3), name="tall"), _s(_arr(2, 3, 4), name="wide"),
                     _s(_arr(3, 3), mode="complete", name="complete")),
               lambda a, mode="reduced": tuple(np.linalg.qr(a, mode=mode)), **loose),
        OpInfo("linalg.svd", "linalg.svd",
               _many(_s(_arr(4, 3), full_matrices=False, name="tall"),
                     _s(_arr(2, 3, 3), name="batch")),
               _svd_ref, call=_svd_call, **loose),
        OpInfo("linalg.pinv", "linalg.pinv",
               _many(_s(_arr(4, 3), name="tall"), _s(_arr(2, 3, 4), name="wide")),
               np.linalg.pinv, **loose),
        OpInfo("linalg.solve_triangular", "linalg.solve_triangular",
               _many(_s(_square(), _arr(3, 2), upper=True, name="upper"),
                     _s(_square(2), _arr(2, 3), upper=False, left=False, name="right")),
               _triangular_ref, **loose),
    ]
