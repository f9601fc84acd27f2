"""opdb records of ``jitgrad/ops/linalg_more.py`` and ``linalg_more2.py`` (lu_factor_ex, lu,
lu_unpack, lu_solve, matrix_exp, eig, cholesky_solve), appended to ``opdb.OP_DB``.

Samples are well conditioned (a random matrix plus 3 times the identity, distinct eigenvalues);
``eig`` is checked through phase-invariant real outputs (moduli of the eigenvalues, of their
distances to 2i and of the eigenvectors' entries), ``lu_factor_ex`` through its ``LU``, ``lu``
and ``lu_unpack`` through ``L`` and ``U`` (pivots, info and ``P`` have no gradient: tested in
tests/test_linalg_more.py)."""

from __future__ import annotations

import importlib

import numpy as np


def _lib(t):
    return importlib.import_module(type(t).__module__.split(".")[0])  # jitgrad or torch


def _square(*batch, n=3):
    return lambda rng: rng.uniform(-1.0, 1.0, batch + (n, n)) + 3 * np.eye(n)


def _lu_ref(a):
    """(P, L, U) by the textbook partial pivoting (the reference for LAPACK's getrf)."""
    *batch, m, n = a.shape
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    ps, ls, us = [], [], []
    for mat in flat:
        u = mat.astype(np.float64).copy()
        perm = np.arange(m)
        low = np.zeros((m, k))
        for j in range(k):
            p = j + int(np.argmax(np.abs(u[j:, j])))
            u[[j, p]], low[[j, p]], perm[[j, p]] = u[[p, j]], low[[p, j]], perm[[p, j]]
            low[j + 1:, j] = u[j + 1:, j] / u[j, j]
            u[j + 1:] -= np.outer(low[j + 1:, j], u[j])
        low[np.arange(k), np.arange(k)] = 1
        p_mat = np.zeros((m, m))
        p_mat[perm, np.arange(m)] = 1
        ps.append(p_mat)
        ls.append(low)
        us.append(np.triu(u[:k]))
    shape = tuple(batch)
    return (np.stack(ps).reshape(shape + (m, m)), np.stack(ls).reshape(shape + (m, k)),
            np.stack(us).reshape(shape + (k, n)))


def _packed_ref(a):
    _, low, up = _lu_ref(a)
    k = min(a.shape[-2:])
    lu = np.zeros(a.shape)
    lu[..., :, :k] += np.tril(low, -1)
    lu[..., :k, :] += up
    return lu


def _lu_factor_call(f, a, **kw):
    return f(a, **kw)[0]


def _lu_unpack_call(f, a):
    lu, piv, _ = _lib(a).linalg.lu_factor_ex(a)
    return f(lu, piv)[1:]


def _lu_call(f, a):
    return f(a)[1:]  # (P has no gradient: tests/test_linalg_more.py checks it)


def _l_u_ref(a):
    return _lu_ref(a)[1:]


def _lu_solve_call(f, a, b, **kw):
    lu, piv, _ = _lib(a).linalg.lu_factor_ex(a)
    return f(lu, piv, b, **kw)


def _lu_solve_ref(a, b, left=True, adjoint=False):
    m = np.swapaxes(a, -1, -2) if adjoint else a
    if left:
        return np.linalg.solve(m, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(m, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _expm_ref(a):
    out = np.zeros_like(a)
    term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    for k in range(1, 40):  # the Taylor series (samples have norm below 2)
        out += term
        term = term @ a / k
    return out


def _eig_call(f, a):
    values, vectors = f(a)
    return values.abs(), (values - 2j).abs(), vectors.abs()


def _eig_ref(a):
    values, vectors = np.linalg.eig(a)
    return np.abs(values), np.abs(values - 2j), np.abs(vectors)


def _cholesky_solve_call(f, b, factor, upper=False):
    return f(b, factor.triu() if upper else factor.tril(), upper=upper)


def _cholesky_solve_ref(b, factor, upper=False):
    t = np.triu(factor) if upper else np.tril(factor)
    a = np.swapaxes(t, -1, -2) @ t if upper else t @ np.swapaxes(t, -1, -2)
    return np.linalg.solve(a, b)


def _geqrf_call(f, a):
    """``Q R`` from geqrf's reflectors and ``tau`` (Q by ``householder_product``): ``a``."""
    reflectors, tau = f(a)
    k = min(a.shape[-2], a.shape[-1])
    q = _lib(a).linalg.householder_product(reflectors[..., :, :k], tau)
    return q @ reflectors.triu()[..., :k, :]


def linalg_more_records() -> list:
    """The records (``opdb.OpInfo``); opdb's helpers are imported here, when opdb calls this."""
    from opdb import OpInfo, _arr, _many, _s

    loose = {"rtol": {"float32": 1e-3, "float64": 1e-8}, "atol": {"float32": 1e-4,
                                                                  "float64": 1e-10}}
    return [
        OpInfo("linalg.lu_factor_ex", "linalg.lu_factor_ex",
               _many(_s(_square(), name="3x3"), _s(_arr(2, 3, 4), name="wide"),
                     _s(_arr(4, 3), name="tall")),
               _packed_ref, call=_lu_factor_call, **loose),
        OpInfo("linalg.lu", "linalg.lu",
               _many(_s(_square(2), name="batch"), _s(_arr(3, 5), name="wide"),
                     _s(_arr(2, 5, 3), name="tall")),
               _l_u_ref, call=_lu_call, **loose),
        OpInfo("lu_unpack", "lu_unpack", _many(_s(_square(), name="3x3"),
                                               _s(_arr(2, 4, 3), name="tall")),
               _l_u_ref, call=_lu_unpack_call, **loose),
        OpInfo("linalg.lu_solve", "linalg.lu_solve",
               _many(_s(_square(), _arr(3, 2), name="left"),
                     _s(_square(2), _arr(2, 3, 2), adjoint=True, name="adjoint"),
                     _s(_square(), _arr(2, 3), left=False, name="right"),
                     _s(_square(), _arr(2, 2, 3), left=False, adjoint=True, name="right_adj")),
               _lu_solve_ref, call=_lu_solve_call, **loose),
        OpInfo("geqrf", "geqrf", _many(_s(_arr(4, 3), name="tall"), _s(_arr(3, 5), name="wide"),
                                       _s(_arr(2, 3, 3), name="batch")),
               lambda a: a, call=_geqrf_call, differentiable=False, **loose),
        OpInfo("linalg.matrix_exp", "linalg.matrix_exp",
               _many(_s(lambda rng: rng.uniform(-0.6, 0.6, (3, 3)), name="3x3"),
                     _s(lambda rng: rng.uniform(-0.6, 0.6, (2, 4, 4)), name="batch")),
               _expm_ref, **loose),
        OpInfo("linalg.eig", "linalg.eig",
               _many(_s(lambda rng: np.diag([1.0, 2.5, 4.0]) + rng.uniform(-0.3, 0.3, (3, 3)),
                        name="real_spectrum"),
                     _s(lambda rng: np.array([[0.5, -2.0, 0.1], [2.0, 0.3, 0.2],
                                              [0.1, 0.0, 3.0]])
                        + rng.uniform(-0.1, 0.1, (2, 3, 3)), name="complex_pair")),
               _eig_ref, call=_eig_call, **loose),
        OpInfo("cholesky_solve", "cholesky_solve",
               _many(_s(_arr(3, 2), _square(), name="lower"),
                     _s(_arr(2, 3, 2), _square(), upper=True, name="upper")),
               _cholesky_solve_ref, call=_cholesky_solve_call, **loose),
    ]
