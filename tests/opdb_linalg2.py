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
