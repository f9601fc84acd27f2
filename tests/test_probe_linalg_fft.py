"""Probes of torch.linalg, torch.fft and the matmul family (mm/bmm/mv/dot/einsum/tensordot/
kron/addmm ...): each case runs the same code on torch and on jitgrad and compares values,
dtypes, shapes, gradients, warnings and the error type/text. Only cases where jitgrad agrees
with torch are kept."""

import math
import re
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

_CASES = []


def case(fn):
    _CASES.append(fn)
    return fn


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        a = np.asarray(x.detach().resolve_conj().resolve_neg().numpy())
        return ("T", tuple(x.shape), d, a, x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, dict):
        return ("dict", [(k, _norm(v)) for k, v in x.items()])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size, jitgrad.Size)):
        return ("Size", tuple(x))
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    return ("other", type(x).__name__)


_RTOL = {"float64": (1e-6, 1e-9), "complex128": (1e-6, 1e-9), "float32": (1e-5, 1e-6)}


def _eq(a, b, rtol=(1e-6, 1e-9)):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=rtol[0], atol=rtol[1], equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, tuple) and len(a) == 5 and a[0] == "T":
        r = _RTOL.get(a[2], (1e-5, 1e-6))
        return a[:3] == b[:3] and a[4] == b[4] and _eq(a[3], b[3], r)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y, rtol) for x, y in zip(a, b))
    return a == b


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, str(e).replace("jitgrad", "torch"))


def _wtext(m):
    # torch's C++ warnings end with the path of its own source file
    return re.sub(r" \(Triggered internally at .*\)$", "", str(m)).replace("jitgrad", "torch")


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, _wtext(x.message)) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, str(e).replace("jitgrad", "torch"), _norm(log))


# ---- inputs: the same numbers for both libraries ----
def A(seed, shape, lo=-2.0, hi=2.0):  # noqa: N802
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def t(T, arr, dtype="float32", rg=False):
    return T.tensor(np.asarray(arr).tolist(), dtype=getattr(T, dtype), requires_grad=rg)


def tc(T, seed, shape, dtype="complex128", rg=False):
    a = A(seed, shape) + 1j * A(seed + 100, shape)
    return T.tensor(a.tolist(), dtype=getattr(T, dtype), requires_grad=rg)


def spd(seed, n, batch=()):
    a = A(seed, batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def g(T, out, *xs):
    # the gradient of a fixed weighted sum of the outputs
    outs = out if isinstance(out, (tuple, list)) else (out,)
    tot = 0
    for i, o in enumerate(outs):
        w = T.tensor(A(50 + i, tuple(o.shape)).tolist(), dtype=o.dtype)
        tot = tot + (o * w).sum().real if o.is_complex() else tot + (o * w).sum()
    return T.autograd.grad(tot, xs)


# ---- solve / inv / det ----
@case
def solve_basic(T, log):
    a = t(T, spd(1, 3), "float64", rg=True)
    b = t(T, A(2, (3, 2)), "float64", rg=True)
    x = T.linalg.solve(a, b)
    return x, g(T, x, a, b)


@case
def solve_vector_rhs(T, log):
    a = t(T, spd(3, 3), "float64", rg=True)
    b = t(T, A(4, (3,)), "float64", rg=True)
    x = T.linalg.solve(a, b)
    return x, g(T, x, a, b)


@case
def solve_batched_broadcast(T, log):
    a = t(T, spd(5, 3, (2, 1)), "float64", rg=True)
    b = t(T, A(6, (4, 3, 2)), "float64", rg=True)
    x = T.linalg.solve(a, b)
    return x, g(T, x, a, b)


@case
def solve_left_false(T, log):
    a = t(T, spd(7, 3), "float64", rg=True)
    b = t(T, A(8, (2, 3)), "float64", rg=True)
    x = T.linalg.solve(a, b, left=False)
    return x, g(T, x, a, b)


@case
def solve_float32(T, log):
    a = t(T, spd(9, 4))
    b = t(T, A(10, (4, 1)))
    return T.linalg.solve(a, b)


@case
def solve_complex(T, log):
    a = tc(T, 11, (3, 3), rg=True)
    b = tc(T, 12, (3, 2), rg=True)
    x = T.linalg.solve(a, b)
    return x, g(T, x, a, b)


@case
def solve_singular(T, log):
    a = T.tensor([[1.0, 2.0], [2.0, 4.0]])
    return E(lambda: T.linalg.solve(a, T.ones(2))), E(
        lambda: T.linalg.solve(T.zeros(3, 3), T.ones(3))
    )


@case
def solve_errors(T, log):
    return (
        E(lambda: T.linalg.solve(T.ones(2, 3), T.ones(2))),
        E(lambda: T.linalg.solve(T.eye(3), T.ones(2))),
        E(lambda: T.linalg.solve(T.eye(3), T.ones(3, 2, dtype=T.float64))),
        E(lambda: T.linalg.solve(T.ones(3), T.ones(3))),
        E(lambda: T.linalg.solve(T.eye(2, dtype=T.int64), T.ones(2, dtype=T.int64))),
    )


@case
def solve_ex(T, log):
    a = T.tensor([[1.0, 2.0], [2.0, 4.0]])
    r = T.linalg.solve_ex(T.eye(2) * 2, T.ones(2))
    r2 = T.linalg.solve_ex(a, T.ones(2))
    return (
        r.result,
        r.info,
        type(r).__name__,
        r2.info,
        E(lambda: T.linalg.solve_ex(a, T.ones(2), check_errors=True)),
    )


@case
def inv_basic(T, log):
    a = t(T, spd(13, 3, (2,)), "float64", rg=True)
    x = T.linalg.inv(a)
    return x, g(T, x, a), T.inverse(a.detach()), a.detach().inverse()


@case
def inv_complex(T, log):
    a = tc(T, 14, (2, 3, 3), rg=True)
    x = T.linalg.inv(a)
    return x, g(T, x, a)


@case
def inv_errors(T, log):
    return (
        E(lambda: T.linalg.inv(T.ones(2, 3))),
        E(lambda: T.linalg.inv(T.ones(3, 3))),
        E(lambda: T.linalg.inv(T.ones(3))),
        E(lambda: T.linalg.inv(T.eye(2, dtype=T.int32))),
    )


@case
def inv_ex(T, log):
    r = T.linalg.inv_ex(T.stack([T.eye(2) * 2, T.zeros(2, 2)]))
    return r.inverse[0], r.info, type(r).__name__


@case
def inv_empty(T, log):
    return T.linalg.inv(T.ones(0, 0)), T.linalg.inv(T.ones(3, 0, 0)), T.linalg.det(T.ones(2, 0, 0))


@case
def det_basic(T, log):
    a = t(T, A(15, (2, 3, 3)), "float64", rg=True)
    d = T.linalg.det(a)
    return d, g(T, d, a), T.det(a.detach()), a.detach().det()


@case
def det_float32_int_err(T, log):
    a = t(T, A(16, (4, 4)))
    return (
        T.linalg.det(a),
        E(lambda: T.linalg.det(T.ones(2, 2, dtype=T.int64))),
        E(lambda: T.linalg.det(T.ones(2, 3))),
    )


@case
def det_singular_grad(T, log):
    a = t(T, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], "float64", rg=True)
    d = T.linalg.det(a)
    return d, T.autograd.grad(d, a)


@case
def det_complex(T, log):
    a = tc(T, 17, (3, 3), rg=True)
    d = T.linalg.det(a)
    return d, g(T, d, a)


@case
def slogdet_basic(T, log):
    a = t(T, A(18, (2, 3, 3)), "float64", rg=True)
    r = T.linalg.slogdet(a)
    return tuple(r), type(r).__name__, r.sign, g(T, r.logabsdet, a), tuple(T.slogdet(a.detach()))


@case
def slogdet_singular_complex(T, log):
    r = T.linalg.slogdet(T.zeros(2, 2))
    c = tc(T, 19, (3, 3))
    return tuple(r), tuple(T.linalg.slogdet(c)), T.logdet(t(T, spd(20, 3), "float64"))


@case
def logdet_negative(T, log):
    return T.logdet(T.tensor([[-1.0, 0.0], [0.0, 2.0]])), T.logdet(T.zeros(2, 2))


# ---- eig family ----
@case
def eigh_basic(T, log):
    a = t(T, spd(21, 4), "float64", rg=True)
    w, v = T.linalg.eigh(a)
    s = T.sign(v[0:1])
    r = T.linalg.eigh(a.detach())
    return w, v * s, g(T, (w, (v * s)), a), type(r).__name__, r.eigenvalues


@case
def eigh_uplo(T, log):
    a = t(T, A(22, (3, 3)), "float64", rg=True)
    wl = T.linalg.eigvalsh(a)
    wu = T.linalg.eigvalsh(a, UPLO="U")
    w2, _ = T.linalg.eigh(a.detach(), UPLO="U")
    return wl, wu, w2, g(T, (wl, wu), a)


@case
def eigh_uplo_err(T, log):
    return E(lambda: T.linalg.eigh(T.eye(2), UPLO="X")), E(lambda: T.linalg.eigvalsh(T.ones(2, 3)))


@case
def eigh_complex(T, log):
    c = tc(T, 23, (3, 3))
    h = (c + c.mH) / 2
    h.requires_grad_()
    w = T.linalg.eigvalsh(h)
    return w, g(T, w, h)


@case
def eigvalsh_batched_f32(T, log):
    return T.linalg.eigvalsh(t(T, spd(24, 3, (2, 2)))), T.linalg.eigvalsh(T.ones(0, 0))


@case
def eig_real(T, log):
    a = t(T, [[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 0.0, 5.0]], "float64")
    w, v = T.linalg.eig(a)
    vals = T.linalg.eigvals(a)
    return w, v.abs(), vals, w.dtype


@case
def eig_complex_values(T, log):
    a = t(T, [[0.0, -1.0], [1.0, 0.0]], "float64")
    vals = T.linalg.eigvals(a)
    return vals.real.sort().values, vals.imag.sort().values, T.linalg.eigvals(a.float()).dtype


@case
def eigvals_grad(T, log):
    a = t(T, [[4.0, 1.0, 0.5], [0.2, 2.0, 0.3], [0.1, 0.4, -1.0]], "float64", rg=True)
    w = T.linalg.eigvals(a)
    return T.autograd.grad(w.real.sum() + (w.abs() ** 2).sum(), a)


@case
def eig_errors(T, log):
    return E(lambda: T.linalg.eig(T.ones(2, 3))), E(lambda: T.linalg.eig(T.ones(3)))


# ---- svd ----
@case
def svd_reduced(T, log):
    a = t(T, A(25, (4, 3)), "float64", rg=True)
    u, s, vh = T.linalg.svd(a, full_matrices=False)
    rec = u @ T.diag_embed(s) @ vh
    return s, u.shape, vh.shape, rec, g(T, (s, rec), a)


@case
def svd_full(T, log):
    a = t(T, A(26, (2, 4, 3)), "float64")
    r = T.linalg.svd(a)
    return r.S, r.U.shape, r.Vh.shape, type(r).__name__, (r.U.mT @ r.U).diagonal(dim1=-2, dim2=-1)


@case
def svd_grad_uv(T, log):
    a = t(T, A(27, (3, 3)), "float64", rg=True)
    u, s, vh = T.linalg.svd(a)
    # sign-invariant products
    p = u[:, 0:1] @ vh[0:1, :]
    return g(T, (s, p), a)


@case
def svdvals_complex(T, log):
    a = tc(T, 28, (3, 2), rg=True)
    s = T.linalg.svdvals(a)
    return s, g(T, s, a), T.linalg.svdvals(t(T, A(29, (2, 5)))), T.linalg.svdvals(T.ones(0, 3))


@case
def svd_legacy(T, log):
    a = t(T, A(30, (4, 3)), "float64")
    u, s, v = T.svd(a)
    u2, s2, v2 = T.svd(a, some=False)
    return s, u.shape, v.shape, u2.shape, v2.shape, T.svd(a, compute_uv=False)[0].shape


# ---- qr ----
@case
def qr_modes(T, log):
    a = t(T, A(31, (4, 3)), "float64", rg=True)
    q, r = T.linalg.qr(a)
    q2, r2 = T.linalg.qr(a.detach(), mode="complete")
    q3, r3 = T.linalg.qr(a.detach(), mode="r")
    return q, r, q2.shape, r2, q3, r3, g(T, (q, r), a)


@case
def qr_wide_batched(T, log):
    a = t(T, A(32, (2, 2, 4)), "float64", rg=True)
    q, r = T.linalg.qr(a)
    res = T.linalg.qr(a.detach())
    return q, r, g(T, (q, r), a), type(res).__name__, res.Q.shape, T.qr(a.detach())[1]


@case
def qr_errors(T, log):
    return (
        E(lambda: T.linalg.qr(T.eye(2), mode="x")),
        E(lambda: T.linalg.qr(T.ones(3))),
        E(lambda: T.linalg.qr(T.eye(3, requires_grad=True)[:, :2].T, mode="r")[1].sum().backward()),
    )


@case
def qr_complex(T, log):
    a = tc(T, 33, (3, 2), rg=True)
    q, r = T.linalg.qr(a)
    return q, r, g(T, (q, r), a)


# ---- cholesky ----
@case
def cholesky_basic(T, log):
    a = t(T, spd(34, 3, (2,)), "float64", rg=True)
    lo = T.linalg.cholesky(a)
    up = T.linalg.cholesky(a.detach(), upper=True)
    return lo, up, g(T, lo, a), T.cholesky(a.detach(), upper=True)


@case
def cholesky_errors(T, log):
    return (
        E(lambda: T.linalg.cholesky(T.tensor([[1.0, 2.0], [2.0, 1.0]]))),
        E(lambda: T.linalg.cholesky(T.stack([T.eye(2), -T.eye(2)]))),
        E(lambda: T.linalg.cholesky(T.ones(2, 3))),
    )


@case
def cholesky_ex(T, log):
    r = T.linalg.cholesky_ex(T.tensor([[1.0, 2.0], [2.0, 1.0]]))
    r2 = T.linalg.cholesky_ex(t(T, spd(35, 2)), upper=True)
    return r.info, type(r).__name__, r2.L, r2.info


@case
def cholesky_complex(T, log):
    c = tc(T, 36, (3, 3))
    h = c @ c.mH + 3 * T.eye(3)
    h.requires_grad_()
    lo = T.linalg.cholesky(h)
    return lo, T.linalg.cholesky(h.detach(), upper=True)


@case
def cholesky_solve_inverse(T, log):
    a = t(T, spd(37, 3), "float64", rg=True)
    b = t(T, A(38, (3, 2)), "float64", rg=True)
    lo = T.linalg.cholesky(a)
    x = T.cholesky_solve(b, lo)
    xi = T.cholesky_inverse(lo)
    return x, xi, g(T, (x, xi), a, b)


# ---- lu ----
@case
def lu_basic(T, log):
    a = t(T, A(40, (3, 3)), "float64", rg=True)
    p, lo, u = T.linalg.lu(a)
    r = T.linalg.lu(a.detach())
    return p, lo, u, g(T, (lo, u), a), type(r).__name__, r.P.dtype


@case
def lu_rect_pivot_false_err(T, log):
    a = t(T, A(41, (2, 3, 4)), "float64", rg=True)
    p, lo, u = T.linalg.lu(a)
    return p, lo, u, g(T, (lo, u), a), E(lambda: T.linalg.lu(T.eye(2), pivot=False))


@case
def lu_tall(T, log):
    a = t(T, A(42, (4, 2)))
    return tuple(T.linalg.lu(a))


@case
def lu_factor_solve(T, log):
    a = t(T, A(43, (2, 3, 3)), "float64", rg=True)
    b = t(T, A(44, (2, 3, 2)), "float64", rg=True)
    lu_, piv = T.linalg.lu_factor(a)
    x = T.linalg.lu_solve(lu_, piv, b)
    xa = T.linalg.lu_solve(lu_, piv, b, adjoint=True)
    xl = T.linalg.lu_solve(lu_, piv, b.mT, left=False)
    return lu_, piv, x, xa, xl, g(T, (x, xa, xl), a, b)


@case
def lu_factor_ex_singular(T, log):
    r = T.linalg.lu_factor_ex(T.zeros(2, 2))
    return r.LU, r.pivots, r.info, type(r).__name__


@case
def lu_unpack_legacy(T, log):
    a = t(T, A(45, (3, 3)), "float64")
    lu_, piv = T.linalg.lu_factor(a)
    p, lo, u = T.lu_unpack(lu_, piv)
    return p, lo, u, T.lu_solve(t(T, A(46, (3, 1)), "float64"), lu_, piv)


@case
def lu_solve_errors(T, log):
    lu_, piv = T.linalg.lu_factor(T.eye(3))
    return (
        E(lambda: T.linalg.lu_solve(lu_, piv, T.ones(2, 1))),
        E(lambda: T.linalg.lu_factor(T.ones(3))),
    )


# ---- lstsq ----
@case
def lstsq_basic(T, log):
    a = t(T, A(47, (5, 3)), "float64", rg=True)
    b = t(T, A(48, (5, 2)), "float64", rg=True)
    r = T.linalg.lstsq(a, b)
    return r.solution, type(r).__name__, g(T, r.solution, a, b)


@case
def lstsq_drivers(T, log):
    a = t(T, A(49, (5, 3)), "float64")
    b = t(T, A(50, (5, 2)), "float64")
    out = []
    for d in ["gels", "gelsy", "gelsd", "gelss"]:
        r = T.linalg.lstsq(a, b, driver=d)
        out.append((r.solution, r.residuals, r.rank, r.singular_values))
    return out


@case
def lstsq_default_fields(T, log):
    a = t(T, A(51, (2, 5, 3)))
    b = t(T, A(52, (2, 5)))[..., None]
    r = T.linalg.lstsq(a, b)
    return r.solution, r.residuals, r.rank, r.singular_values


@case
def lstsq_underdetermined(T, log):
    a = t(T, A(53, (2, 4)), "float64")
    b = t(T, A(54, (2, 1)), "float64")
    r = T.linalg.lstsq(a, b, driver="gelsd")
    return r.solution, r.residuals, r.rank, r.singular_values


@case
def lstsq_rcond(T, log):
    a = t(T, [[1.0, 0.0], [0.0, 1e-8], [0.0, 0.0]], "float64")
    b = t(T, [[1.0], [1.0], [1.0]], "float64")
    r = T.linalg.lstsq(a, b, rcond=1e-4, driver="gelsy")
    return r.solution, r.rank


@case
def lstsq_errors(T, log):
    return (E(lambda: T.linalg.lstsq(T.ones(3, 2), T.ones(4, 1))),)


# ---- pinv / rank ----
@case
def pinv_basic(T, log):
    a = t(T, A(55, (4, 3)), "float64", rg=True)
    p = T.linalg.pinv(a)
    return p, g(T, p, a), T.pinverse(a.detach())


@case
def pinv_hermitian_tols(T, log):
    a = t(T, spd(56, 3), "float64", rg=True)
    p = T.linalg.pinv(a, hermitian=True)
    s = t(T, [[1.0, 0.0, 0.0], [0.0, 1e-3, 0.0], [0.0, 0.0, 0.0]], "float64")
    return (
        p,
        g(T, p, a),
        T.linalg.pinv(s),
        T.linalg.pinv(s, rtol=1e-2),
        T.linalg.pinv(s, atol=0.5),
        T.linalg.pinv(s, atol=1e-5, rtol=0.0),
        T.linalg.pinv(s, hermitian=True, rtol=1e-2),
    )


@case
def pinv_batched_complex(T, log):
    a = tc(T, 57, (2, 3, 2))
    return T.linalg.pinv(a), T.linalg.pinv(T.zeros(2, 3))


@case
def matrix_rank(T, log):
    a = t(T, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], "float64")
    s = t(T, [[1.0, 0.0], [0.0, 1e-3]], "float64")
    return (
        T.linalg.matrix_rank(a),
        T.linalg.matrix_rank(T.eye(3).expand(2, 3, 3)),
        T.linalg.matrix_rank(s, rtol=1e-2),
        T.linalg.matrix_rank(s, atol=1e-4),
        T.linalg.matrix_rank(s, hermitian=True, atol=0.01),
        T.linalg.matrix_rank(T.zeros(2, 2)),
        T.linalg.matrix_rank(t(T, A(58, (2, 5)))),
    )


# ---- matrix_power / matrix_exp ----
@case
def matrix_power(T, log):
    a = t(T, spd(59, 3), "float64", rg=True)
    outs = (
        T.linalg.matrix_power(a, 3),
        T.linalg.matrix_power(a, 0),
        T.linalg.matrix_power(a, -2),
        T.linalg.matrix_power(a, 1),
        T.matrix_power(a, 2),
        a.matrix_power(-1),
    )
    return outs, g(T, outs, a)


@case
def matrix_power_int_batched(T, log):
    m = T.tensor([[[1, 1], [1, 0]], [[2, 0], [0, 3]]])
    return (
        T.linalg.matrix_power(m, 5),
        T.linalg.matrix_power(m, 0),
        E(lambda: T.linalg.matrix_power(m, -1)),
        E(lambda: T.linalg.matrix_power(T.ones(2, 3), 2)),
        E(lambda: T.linalg.matrix_power(T.zeros(2, 2), -1)),
    )


@case
def matrix_exp(T, log):
    a = t(T, A(60, (2, 3, 3)), "float64", rg=True)
    e = T.linalg.matrix_exp(a)
    return e, g(T, e, a), T.matrix_exp(a.detach()), a.detach().matrix_exp()


@case
def matrix_exp_special(T, log):
    return (
        T.linalg.matrix_exp(T.zeros(3, 3)),
        T.linalg.matrix_exp(t(T, [[0.0, 1.0], [-1.0, 0.0]])),
        T.linalg.matrix_exp(tc(T, 61, (2, 2))),
        E(lambda: T.linalg.matrix_exp(T.ones(2, 3))),
        E(lambda: T.linalg.matrix_exp(T.eye(2, dtype=T.int64))),
    )


# ---- norms / cond ----
@case
def norm_ords(T, log):
    x = t(T, A(62, (3, 4)), "float64", rg=True)
    LA = T.linalg
    outs = (
        LA.norm(x, "fro"),
        LA.norm(x, "nuc"),
        LA.norm(x, 1),
        LA.norm(x, -1),
        LA.norm(x, float("inf")),
        LA.norm(x, -float("inf")),
        LA.norm(x, -2),
        LA.norm(x, ord=2, dim=1),
        LA.norm(x, 0, dim=0),
        LA.norm(x, dim=(1, 0)),
        LA.norm(x, keepdim=True),
    )
    return outs, g(T, outs, x)


@case
def norm_complex_dtype(T, log):
    c = tc(T, 63, (3, 3), rg=True)
    outs = (T.linalg.norm(c), T.linalg.matrix_norm(c, 2), T.linalg.vector_norm(c, 3, dim=0))
    return outs, g(T, outs, c), T.linalg.norm(t(T, A(64, (3,))), dtype=T.float64)


@case
def norm_errors2(T, log):
    x = T.ones(2, 3)
    return (
        E(lambda: T.linalg.norm(T.ones(2, 2, 2), "nuc")),
        E(lambda: T.linalg.norm(x, "abc")),
        E(lambda: T.linalg.vector_norm(x, "fro")),
        E(lambda: T.linalg.vector_norm(T.ones(0), float("inf"))),
    )


@case
def vector_norm_empty_and_0d(T, log):
    return (
        T.linalg.vector_norm(T.ones(0)),
        T.linalg.vector_norm(T.tensor(-3.0)),
        T.linalg.vector_norm(T.tensor(-3.0), 0),
        T.linalg.vector_norm(T.ones(0, 3), dim=0),
        T.linalg.vector_norm(T.ones(2, 3), dim=()),
    )


@case
def cond_ords(T, log):
    a = t(T, A(65, (2, 3, 3)), "float64", rg=True)
    outs = tuple(T.linalg.cond(a, p) for p in [None, 2, -2, "fro", "nuc", 1, -1, float("inf")])
    return outs, g(T, outs[:3] + outs[4:5], a)


@case
def cond_singular_and_errors(T, log):
    return (
        T.linalg.cond(T.tensor([[1.0, 0.0], [0.0, 0.0]])),
        T.linalg.cond(T.tensor([[1.0, 0.0], [0.0, 0.0]]), 1),
        T.linalg.cond(t(T, A(66, (3, 2)))),
        E(lambda: T.linalg.cond(T.ones(3, 2), 1)),
        E(lambda: T.linalg.cond(T.eye(2), 3)),
    )


# ---- cross / vecdot / multi_dot ----
@case
def cross(T, log):
    a = t(T, A(67, (4, 3)), "float64", rg=True)
    b = t(T, A(68, (1, 3)), "float64", rg=True)
    c = T.linalg.cross(a, b)
    c2 = T.linalg.cross(a.mT, b.mT.expand(3, 4), dim=0)
    return c, c2, g(T, (c, c2), a, b), T.cross(a.detach(), b.detach().expand(4, 3), dim=1)


@case
def cross_errors(T, log):
    return (
        E(lambda: T.linalg.cross(T.ones(2, 4), T.ones(2, 4))),
        E(lambda: T.linalg.cross(T.ones(2, 3), T.ones(3, 3))),
        E(
            lambda: (
                T.linalg.cross(T.ones(3, 2), T.ones(3, 2), dim=0)[0]
                + T.linalg.cross(T.ones(3), T.ones(3), dim=1)
            )
        ),
        T.linalg.cross(T.tensor([1, 0, 0]), T.tensor([0, 1, 0])),
    )


@case
def vecdot(T, log):
    a = tc(T, 69, (2, 3), rg=True)
    b = tc(T, 70, (3,), rg=True)
    v = T.linalg.vecdot(a, b)
    r = t(T, A(71, (3, 2)))
    return v, g(T, v, a, b), T.linalg.vecdot(r, r, dim=0), T.vecdot(r, r)


@case
def multi_dot(T, log):
    a = t(T, A(72, (3,)), "float64", rg=True)
    b = t(T, A(73, (3, 4)), "float64", rg=True)
    c = t(T, A(74, (4, 2)), "float64", rg=True)
    d = t(T, A(75, (2,)), "float64", rg=True)
    outs = (
        T.linalg.multi_dot([a, b, c, d]),
        T.linalg.multi_dot([b, c]),
        T.linalg.multi_dot((a, b, c)),
    )
    return outs, g(T, outs, a, b, c, d)


@case
def multi_dot_errors(T, log):
    return (
        E(lambda: T.linalg.multi_dot([T.ones(3)])),
        E(lambda: T.linalg.multi_dot([T.ones(2, 3), T.ones(2, 3)])),
        E(lambda: T.linalg.multi_dot([T.ones(2, 2, 2), T.ones(2, 2)])),
        E(lambda: T.linalg.multi_dot([])),
    )


# ---- householder / triangular ----
@case
def householder_product(T, log):
    a = t(T, A(76, (4, 3)), "float64", rg=True)
    tau = t(T, [1.2, 0.5, 1.7], "float64", rg=True)
    q = T.linalg.householder_product(a, tau)
    q2 = T.linalg.householder_product(a.detach()[:, :2], tau.detach()[:1])
    return q, q2, g(T, q, a, tau), T.orgqr(a.detach(), tau.detach())


@case
def householder_errors(T, log):
    return (
        E(lambda: T.linalg.householder_product(T.ones(2, 3), T.ones(2))),
        E(lambda: T.linalg.householder_product(T.ones(3, 2), T.ones(3))),
    )


@case
def solve_triangular(T, log):
    a = t(T, np.triu(A(77, (3, 3))) + 3 * np.eye(3), "float64", rg=True)
    b = t(T, A(78, (3, 2)), "float64", rg=True)
    outs = (
        T.linalg.solve_triangular(a, b, upper=True),
        T.linalg.solve_triangular(a.mT, b, upper=False),
        T.linalg.solve_triangular(a, b.mT, upper=True, left=False),
        T.linalg.solve_triangular(a, b, upper=True, unitriangular=True),
    )
    return outs, g(T, outs, a, b)


@case
def solve_triangular_batched_errors(T, log):
    a = t(T, np.tril(A(79, (2, 1, 3, 3))) + 3 * np.eye(3))
    b = t(T, A(80, (4, 3, 1)))
    return (
        T.linalg.solve_triangular(a, b, upper=False),
        E(lambda: T.linalg.solve_triangular(T.eye(3), T.ones(3), upper=True)),
        E(lambda: T.linalg.solve_triangular(T.eye(3), T.ones(2, 1), upper=True)),
        E(lambda: T.linalg.solve_triangular(T.eye(3), T.ones(3, 1))),
        T.triangular_solve(b[0], a[0, 0], upper=False).solution,
    )


# ---- tensorinv / tensorsolve / vander / diagonal ----
@case
def tensorinv(T, log):
    a = t(T, np.eye(6).reshape(6, 6) + 0.1 * A(82, (6, 6)), "float64").reshape(6, 2, 3)
    a.requires_grad_()
    ai = T.linalg.tensorinv(a, ind=1)
    return (
        ai,
        g(T, ai, a),
        E(lambda: T.linalg.tensorinv(T.ones(2, 3), ind=1)),
        E(lambda: T.linalg.tensorinv(a, ind=0)),
    )


@case
def tensorsolve(T, log):
    a = t(T, np.eye(6) + 0.1 * A(83, (6, 6)), "float64").reshape(2, 3, 6)
    a.requires_grad_()
    b = t(T, A(84, (2, 3)), "float64", rg=True)
    x = T.linalg.tensorsolve(a, b)
    a2 = t(T, np.eye(6) + 0.1 * A(85, (6, 6)), "float64").reshape(6, 2, 3)
    x2 = T.linalg.tensorsolve(a2.permute(1, 2, 0), t(T, A(86, (6,)), "float64"), dims=(0, 1))
    return x, x2, g(T, x, a, b)


@case
def vander(T, log):
    x = t(T, [1.0, 2.0, 3.0], "float64", rg=True)
    v = T.linalg.vander(x)
    v2 = T.linalg.vander(x, N=5)
    return (
        v,
        v2,
        g(T, (v, v2), x),
        T.linalg.vander(T.tensor([[1, 2], [3, 4]])),
        T.linalg.vander(x.detach(), N=1),
        E(lambda: T.linalg.vander(T.tensor(2.0))),
        E(lambda: T.linalg.vander(x, N=0)),
        T.vander(T.tensor([1, 2, 3]), N=3, increasing=False),
    )


@case
def linalg_diagonal(T, log):
    a = t(T, A(87, (2, 3, 4)), rg=True)
    d = T.linalg.diagonal(a)
    d2 = T.linalg.diagonal(a, offset=1, dim1=0, dim2=2)
    d3 = T.linalg.diagonal(a, offset=-1)
    return d, d2, d3, g(T, (d, d2, d3), a), E(lambda: T.linalg.diagonal(T.ones(3)))


# ---- torch.fft ----
@case
def fft_basic(T, log):
    x = t(T, A(100, (8,)), "float64", rg=True)
    outs = (T.fft.fft(x), T.fft.ifft(x), T.fft.fft(x, n=5), T.fft.fft(x, n=12, norm="ortho"))
    return outs, g(T, outs, x)


@case
def fft_dtypes(T, log):
    return (
        T.fft.fft(t(T, A(101, (4,)))).dtype,
        T.fft.fft(T.arange(4)).dtype,
        T.fft.fft(T.tensor([True, False])).dtype,
        T.fft.rfft(t(T, A(102, (6,)), "float64")).dtype,
        T.fft.irfft(tc(T, 103, (4,), "complex64")).dtype,
        T.fft.hfft(tc(T, 104, (4,), "complex64")).dtype,
        T.fft.ihfft(t(T, A(105, (4,)))).dtype,
        T.fft.fft(T.arange(4)),
    )


@case
def fft_complex_norms(T, log):
    x = tc(T, 106, (3, 6), rg=True)
    outs = tuple(T.fft.fft(x, dim=0, norm=n) for n in [None, "backward", "forward", "ortho"])
    outs2 = tuple(T.fft.ifft(x, norm=n) for n in ["backward", "forward", "ortho"])
    return outs, outs2, g(T, outs + outs2, x)


@case
def fft_errors(T, log):
    x = T.ones(4)
    return (
        E(lambda: T.fft.fft(x, norm="bad")),
        E(lambda: T.fft.fft(x, n=0)),
        E(lambda: T.fft.fft(x, dim=1)),
        E(lambda: T.fft.fft(T.tensor(1.0))),
        E(lambda: T.fft.rfft(T.ones(4, dtype=T.complex64))),
        E(lambda: T.fft.irfft(x, n=0)),
        E(lambda: T.fft.fft(T.ones(0))),
    )


@case
def rfft_irfft(T, log):
    x = t(T, A(107, (2, 7)), "float64", rg=True)
    r = T.fft.rfft(x)
    r2 = T.fft.rfft(x, n=10, dim=0, norm="ortho")
    ir = T.fft.irfft(r)
    ir2 = T.fft.irfft(r, n=7, norm="forward")
    return r, r2, ir, ir2, g(T, (r, r2, ir, ir2), x)


@case
def irfft_complex_grad(T, log):
    c = tc(T, 108, (5,), rg=True)
    y = T.fft.irfft(c)
    y2 = T.fft.irfft(c, n=9, norm="ortho")
    return y, y2, g(T, (y, y2), c)


@case
def hfft_ihfft(T, log):
    c = tc(T, 109, (2, 4), rg=True)
    x = t(T, A(110, (6,)), "float64", rg=True)
    h = T.fft.hfft(c)
    h2 = T.fft.hfft(c, n=5, dim=0, norm="ortho")
    ih = T.fft.ihfft(x)
    ih2 = T.fft.ihfft(x, n=4, norm="forward")
    return h, h2, ih, ih2, g(T, (h, h2), c), g(T, (ih, ih2), x)


@case
def fft2_variants(T, log):
    x = t(T, A(111, (2, 4, 6)), "float64", rg=True)
    outs = (
        T.fft.fft2(x),
        T.fft.ifft2(x, s=(3, 5)),
        T.fft.fft2(x, dim=(0, 2), norm="ortho"),
        T.fft.rfft2(x),
        T.fft.rfft2(x, s=(4, 4), dim=(-1, -2)),
    )
    return outs, g(T, outs, x)


@case
def irfft2_hfft2(T, log):
    c = tc(T, 112, (3, 4, 3), rg=True)
    outs = (
        T.fft.irfft2(c),
        T.fft.irfft2(c, s=(4, 6), norm="forward"),
        T.fft.hfft2(c),
        T.fft.hfft2(c, s=(3, 5)),
    )
    x = t(T, A(113, (3, 6)), "float64", rg=True)
    ih = T.fft.ihfft2(x)
    return outs, ih, g(T, outs, c), g(T, ih, x)


@case
def fftn_variants(T, log):
    x = tc(T, 114, (2, 3, 4), rg=True)
    outs = (
        T.fft.fftn(x),
        T.fft.fftn(x, s=(4,), dim=(0,)),
        T.fft.ifftn(x, dim=(-1, 0)),
        T.fft.fftn(x, s=(2, 2, 2), norm="forward"),
        T.fft.ifftn(x, s=(5, 3)),
    )
    return outs, g(T, outs, x)


@case
def rfftn_irfftn(T, log):
    x = t(T, A(115, (2, 3, 6)), "float64", rg=True)
    r = T.fft.rfftn(x)
    r2 = T.fft.rfftn(x, dim=(0, 1))
    ir = T.fft.irfftn(r)
    ir2 = T.fft.irfftn(r, s=(2, 3, 6))
    ir3 = T.fft.irfftn(r, s=(4, 5), norm="ortho")
    return r, r2, ir, ir2, ir3, g(T, (r, r2, ir, ir2, ir3), x)


@case
def hfftn_ihfftn(T, log):
    c = tc(T, 116, (2, 3, 4), rg=True)
    x = t(T, A(117, (2, 3, 4)), "float64", rg=True)
    outs = (T.fft.hfftn(c), T.fft.hfftn(c, s=(3, 6), dim=(0, 2)))
    ih = (T.fft.ihfftn(x), T.fft.ihfftn(x, dim=(1,)))
    return outs, ih, g(T, outs, c), g(T, ih, x)


@case
def fftn_errors(T, log):
    x = T.ones(2, 3)
    return (
        E(lambda: T.fft.fftn(x, s=(2, 2, 2, 2))),
        E(lambda: T.fft.fftn(x, s=(2, 2), dim=(0,))),
        E(lambda: T.fft.fft2(T.ones(3))),
        E(lambda: T.fft.fftn(x, dim=(0, 0))),
        E(lambda: T.fft.rfftn(x, dim=(0, 5))),
        E(lambda: T.fft.irfftn(x, s=(2, 0))),
    )


@case
def fft_float32(T, log):
    x = t(T, A(118, (3, 8)))
    return T.fft.fft(x), T.fft.rfft2(x), T.fft.irfft(T.fft.rfft(x)), T.fft.fftn(x.to(T.complex64))


@case
def fft_nonlast_dim_grad(T, log):
    x = t(T, A(119, (5, 3)), "float64", rg=True)
    r = T.fft.rfft(x, dim=0)
    h = T.fft.ihfft(x, dim=0, n=6)
    return r, h, g(T, (r, h), x)


@case
def fftfreq(T, log):
    return (
        T.fft.fftfreq(5),
        T.fft.fftfreq(6, d=0.5),
        T.fft.rfftfreq(7),
        T.fft.rfftfreq(8, 2.0),
        T.fft.fftfreq(4, dtype=T.float64),
        T.fft.fftfreq(1),
        T.fft.fftfreq(0),
        T.fft.fftfreq(3, requires_grad=True).requires_grad,
    )


@case
def fftshift(T, log):
    x = T.arange(12).reshape(3, 4)
    return (
        T.fft.fftshift(x),
        T.fft.ifftshift(x),
        T.fft.fftshift(x, dim=0),
        T.fft.ifftshift(x, dim=(-1,)),
        T.fft.fftshift(T.arange(5)),
        T.fft.ifftshift(T.arange(5)),
        T.fft.fftshift(T.fft.fftfreq(5)),
        T.fft.fftshift(x, dim=1),
    )


@case
def fftshift_grad(T, log):
    x = t(T, A(120, (3, 5)), rg=True)
    y = T.fft.fftshift(x)
    z = T.fft.ifftshift(x, dim=0)
    return y, g(T, (y, z), x)


@case
def fft_roundtrip_int_n(T, log):
    x = t(T, A(121, (4, 5)), "float64")
    return (
        T.fft.ifft(T.fft.fft(x)).real,
        T.fft.irfft(T.fft.rfft(x), n=5),
        T.fft.irfftn(T.fft.rfftn(x), s=x.shape),
        T.fft.hfft(T.fft.ihfft(x), n=5),
    )


# ---- matmul family ----
@case
def matmul_shapes(T, log):
    a = t(T, A(130, (2, 1, 3, 4)), "float64", rg=True)
    b = t(T, A(131, (5, 4, 2)), "float64", rg=True)
    v = t(T, A(132, (4,)), "float64", rg=True)
    w = t(T, A(133, (3,)), "float64", rg=True)
    outs = (a @ b, T.matmul(a, v), T.matmul(w, a), T.matmul(v, v), v @ b)
    return outs, g(T, outs, a, b, v, w)


@case
def matmul_errors(T, log):
    return (
        E(lambda: T.matmul(T.ones(2, 3), T.ones(2, 3))),
        E(lambda: T.ones(3) @ T.ones(4)),
        E(lambda: T.matmul(T.ones(2, 2, 3), T.ones(3, 3, 2))),
        E(lambda: T.matmul(T.tensor(1.0), T.ones(2))),
        E(lambda: T.matmul(T.ones(2, 2), T.ones(2, 2, dtype=T.float64))),
        E(lambda: T.matmul(T.ones(2, 3), T.ones(4))),
    )


@case
def matmul_int_empty(T, log):
    return (
        T.matmul(T.tensor([[1, 2], [3, 4]]), T.tensor([[5], [6]])),
        T.matmul(T.ones(2, 0), T.ones(0, 3)),
        T.matmul(T.ones(0, 2), T.ones(2, 3)),
        T.matmul(T.ones(3, 0, 2), T.ones(2)),
        T.matmul(tc(T, 134, (2, 2), "complex64"), tc(T, 135, (2,), "complex64")),
    )


@case
def mm_bmm_mv(T, log):
    a = t(T, A(136, (3, 4)), "float64", rg=True)
    b = t(T, A(137, (4, 2)), "float64", rg=True)
    ba = t(T, A(138, (2, 3, 4)), "float64", rg=True)
    bb = t(T, A(139, (2, 4, 5)), "float64", rg=True)
    v = t(T, A(140, (4,)), "float64", rg=True)
    outs = (T.mm(a, b), a.mm(b), T.bmm(ba, bb), T.mv(a, v), a.mv(v))
    return outs, g(T, outs, a, b, ba, bb, v)


@case
def mm_bmm_mv_errors(T, log):
    return (
        E(lambda: T.mm(T.ones(2, 3), T.ones(2, 3))),
        E(lambda: T.mm(T.ones(3), T.ones(3, 2))),
        E(lambda: T.bmm(T.ones(2, 3, 4), T.ones(3, 4, 5))),
        E(lambda: T.bmm(T.ones(2, 3, 4), T.ones(2, 3, 5))),
        E(lambda: T.bmm(T.ones(3, 4), T.ones(4, 5))),
        E(lambda: T.mv(T.ones(2, 3), T.ones(2))),
        E(lambda: T.mv(T.ones(3), T.ones(3))),
        E(lambda: T.mm(T.ones(2, 2), T.ones(2, 2, dtype=T.int64))),
    )


@case
def dot_vdot_inner_outer(T, log):
    a = tc(T, 141, (3,), rg=True)
    b = tc(T, 142, (3,), rg=True)
    outs = (T.dot(a, b), T.vdot(a, b), T.inner(a, b), T.outer(a, b), a.dot(b), T.ger(a, b))
    return outs, g(T, outs, a, b)


@case
def inner_outer_real(T, log):
    a = t(T, A(143, (2, 3)), "float64", rg=True)
    b = t(T, A(144, (4, 3)), "float64", rg=True)
    outs = (T.inner(a, b), T.inner(a, T.tensor(2.0, dtype=T.float64)), T.outer(a[0], b[:, 0]))
    return outs, g(T, outs, a, b), T.dot(T.tensor([1, 2]), T.tensor([3, 4]))


@case
def dot_errors(T, log):
    return (
        E(lambda: T.dot(T.ones(3), T.ones(4))),
        E(lambda: T.dot(T.ones(2, 2), T.ones(2, 2))),
        E(lambda: T.dot(T.ones(2), T.ones(2, dtype=T.float64))),
        E(lambda: T.vdot(T.ones(3), T.ones(2))),
        E(lambda: T.inner(T.ones(2, 3), T.ones(2))),
        T.dot(T.ones(0), T.ones(0)),
    )


@case
def einsum_forms(T, log):
    a = t(T, A(145, (2, 3)), "float64", rg=True)
    b = t(T, A(146, (3, 4)), "float64", rg=True)
    c = t(T, A(147, (2, 3, 3)), "float64", rg=True)
    outs = (
        T.einsum("ij,jk->ik", a, b),
        T.einsum("ij,jk", a, b),
        T.einsum("bii->b", c),
        T.einsum("bii", c),
        T.einsum("...j,jk->...k", c, b),
        T.einsum("ij->", a),
        T.einsum("i,i->i", a[0], a[1]),
        T.einsum("ij,kj->ikj", a, c[0]),
        T.einsum(a, [0, 1], b, [1, 2], [0, 2]),
        T.einsum("ij, jk -> ik", [a, b]),
    )
    return outs, g(T, outs, a, b, c)


@case
def einsum_errors(T, log):
    return (
        E(lambda: T.einsum("ij,jk->ik", T.ones(2, 3))),
        E(lambda: T.einsum("ij,jk->ik", T.ones(2, 3), T.ones(4, 2))),
        E(lambda: T.einsum("ij->k", T.ones(2, 3))),
        E(lambda: T.einsum("ijk", T.ones(2, 3))),
        E(lambda: T.einsum("ij->ii", T.ones(2, 2))),
    )


@case
def tensordot(T, log):
    a = t(T, A(148, (2, 3, 4)), "float64", rg=True)
    b = t(T, A(149, (4, 3, 5)), "float64", rg=True)
    outs = (
        T.tensordot(a, b, dims=([1, 2], [1, 0])),
        T.tensordot(a, b.permute(1, 0, 2), dims=2),
        T.tensordot(a, b, dims=0).shape,
        T.tensordot(a, b, dims=([2], [0])),
        T.tensordot(a, b, dims=[[2], [0]]),
        T.tensordot(a, b, 1),
    )
    return outs, g(T, (outs[0], outs[1], outs[3]), a, b)


@case
def tensordot_errors(T, log):
    return (
        E(lambda: T.tensordot(T.ones(2, 3), T.ones(2, 3), dims=([0], [1]))),
        E(lambda: T.tensordot(T.ones(2, 3), T.ones(3, 3), dims=-1)),
        E(lambda: T.tensordot(T.ones(2, 3), T.ones(3, 3), dims=([0, 1], [0]))),
        E(lambda: T.tensordot(T.ones(2, 3), T.ones(3, 3), dims=3)),
    )


@case
def kron(T, log):
    a = t(T, A(150, (2, 3)), "float64", rg=True)
    b = t(T, A(151, (2, 2)), "float64", rg=True)
    c = t(T, A(152, (3,)), "float64", rg=True)
    outs = (T.kron(a, b), T.kron(a, c), T.kron(c, c), a.kron(b))
    return outs, g(T, outs, a, b, c), T.kron(T.tensor([1, 2]), T.tensor([[1], [10]]))


@case
def addmm_alpha_beta(T, log):
    m = t(T, A(153, (3, 2)), "float64", rg=True)
    a = t(T, A(154, (3, 4)), "float64", rg=True)
    b = t(T, A(155, (4, 2)), "float64", rg=True)
    bias = t(T, A(156, (2,)), "float64", rg=True)
    outs = (
        T.addmm(m, a, b),
        T.addmm(m, a, b, beta=0.5, alpha=2.0),
        T.addmm(bias, a, b, alpha=-1),
        m.addmm(a, b, beta=0),
        T.addmv(bias[:1].expand(3), a, t(T, A(157, (4,)), "float64"), beta=2, alpha=3),
        T.addr(m, a[:, 0], bias, alpha=2),
    )
    return outs, g(T, outs, m, a, b, bias)


@case
def addmm_beta0_nan(T, log):
    m = T.tensor([[float("nan"), 1.0]])
    return T.addmm(m, T.ones(1, 2), T.ones(2, 2), beta=0), T.addmm(m, T.ones(1, 2), T.ones(2, 2))


@case
def baddbmm_addbmm(T, log):
    m = t(T, A(158, (2, 3, 5)), "float64", rg=True)
    a = t(T, A(159, (2, 3, 4)), "float64", rg=True)
    b = t(T, A(160, (2, 4, 5)), "float64", rg=True)
    m2 = t(T, A(161, (3, 5)), "float64", rg=True)
    outs = (
        T.baddbmm(m, a, b),
        T.baddbmm(m, a, b, beta=0.25, alpha=-2.0),
        T.baddbmm(m2[0], a, b, alpha=0.5),
        T.addbmm(m2, a, b, beta=3),
        m.baddbmm(a, b, beta=0),
    )
    return outs, g(T, outs, m, a, b, m2)


@case
def addmm_errors(T, log):
    return (
        E(lambda: T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(2, 2))),
        E(lambda: T.baddbmm(T.ones(2, 3, 3), T.ones(2, 3, 4), T.ones(3, 4, 3))),
        E(lambda: T.addmv(T.ones(3), T.ones(3, 2), T.ones(3))),
    )


@case
def addmm_int(T, log):
    i = T.tensor([[1, 2], [3, 4]])
    return T.addmm(i, i, i, beta=2, alpha=3), T.baddbmm(i[None], i[None], i[None], alpha=2)


# ---- more: methods, aliases, LinAlgError, complex decompositions ----
@case
def linalg_error_class(T, log):
    LE = T.linalg.LinAlgError
    try:
        T.linalg.inv(T.zeros(2, 2))
    except RuntimeError as e:
        caught = (isinstance(e, LE), type(e).__name__, str(e))
    return LE.__name__, issubclass(LE, RuntimeError), caught, LE is T._C._LinAlgError


@case
def cholesky_error_is_linalg_error(T, log):
    try:
        T.linalg.cholesky(-T.eye(3))
    except T.linalg.LinAlgError as e:
        return type(e).__name__, str(e)


@case
def tensor_methods(T, log):
    a = t(T, spd(200, 3), "float64")
    return (
        a.det(),
        a.logdet(),
        tuple(a.slogdet()),
        a.inverse(),
        a.cholesky(),
        a.pinverse(),
        a.matrix_power(2),
        a.cholesky_inverse(),
        a.trace(),
    )


@case
def linalg_matmul_alias(T, log):
    a = t(T, A(201, (2, 3)))
    b = t(T, A(202, (3,)))
    return T.linalg.matmul(a, b), E(lambda: T.linalg.matmul(a, a))


@case
def svd_complex(T, log):
    a = tc(T, 203, (2, 3, 2), rg=True)
    u, s, vh = T.linalg.svd(a, full_matrices=False)
    rec = u @ T.diag_embed(s).to(a.dtype) @ vh
    return s, rec, g(T, (s, rec), a)


@case
def svd_errors(T, log):
    return (
        E(lambda: T.linalg.svd(T.ones(3))),
        E(lambda: T.linalg.svdvals(T.ones(3, dtype=T.int64).reshape(1, 3))),
    )


@case
def svd_empty(T, log):
    u, s, vh = T.linalg.svd(T.ones(3, 0))
    u2, s2, vh2 = T.linalg.svd(T.ones(3, 0), full_matrices=False)
    return u, s, vh, u2, s2, vh2


@case
def eigh_batched_grad(T, log):
    a0 = spd(204, 3, (2,))
    a = t(T, a0, "float64", rg=True)
    w = T.linalg.eigvalsh(a)
    return w, g(T, w, a)


@case
def eigh_errors_dtype(T, log):
    return (
        E(lambda: T.linalg.eigh(T.eye(2, dtype=T.int64))),
        E(lambda: T.linalg.eigh(T.ones(3))),
        E(lambda: T.linalg.eigh(T.eye(2), UPLO="LU")),
    )


@case
def eig_complex_input(T, log):
    a = tc(T, 205, (3, 3))
    w = T.linalg.eigvals(a)
    return w.abs().sort().values, w.dtype, T.linalg.eig(a)[1].shape


@case
def eigh_complex_vectors(T, log):
    c = tc(T, 206, (3, 3))
    h = c + c.mH
    w, v = T.linalg.eigh(h)
    rec = v @ T.diag_embed(w).to(h.dtype) @ v.mH
    return w, rec, v.abs()


@case
def qr_empty_and_square(T, log):
    q, r = T.linalg.qr(T.ones(0, 3))
    q2, r2 = T.linalg.qr(T.ones(3, 0), mode="complete")
    a = t(T, A(207, (3, 3)), "float64", rg=True)
    q3, r3 = T.linalg.qr(a, mode="complete")
    return q.shape, r.shape, q2, r2.shape, q3, r3, g(T, (q3, r3), a)


@case
def qr_complete_tall_grad_err(T, log):
    a = t(T, A(208, (4, 2)), "float64", rg=True)
    q, r = T.linalg.qr(a, mode="complete")
    return E(lambda: T.autograd.grad(q.sum(), a))


@case
def qr_r_mode_grad_err(T, log):
    a = t(T, A(209, (3, 3)), "float64", rg=True)
    q, r = T.linalg.qr(a, mode="r")
    return q.shape, E(lambda: T.autograd.grad(r.sum(), a))


@case
def lu_complex(T, log):
    a = tc(T, 210, (3, 3), rg=True)
    p, lo, u = T.linalg.lu(a)
    return p, lo, u, g(T, (lo, u), a)


@case
def lu_solve_complex_adjoint(T, log):
    a = tc(T, 211, (3, 3))
    b = tc(T, 212, (3, 2))
    lu_, piv = T.linalg.lu_factor(a)
    return T.linalg.lu_solve(lu_, piv, b, adjoint=True), T.linalg.lu_solve(
        lu_, piv, b.mT, left=False, adjoint=True
    )


@case
def lu_factor_pivot_false(T, log):
    a = t(T, spd(213, 3), "float64")
    lu_, piv = T.linalg.lu_factor(a, pivot=False)
    return lu_, piv, tuple(T.linalg.lu(a, pivot=False))


@case
def solve_triangular_complex(T, log):
    a = tc(T, 214, (3, 3)).tril() + 3 * T.eye(3)
    a.requires_grad_()
    b = tc(T, 215, (3, 2), rg=True)
    x = T.linalg.solve_triangular(a, b, upper=False)
    return x, g(T, x, a, b)


@case
def solve_triangular_ignores_other_half(T, log):
    a = t(T, A(216, (3, 3)) + 3 * np.eye(3), "float64", rg=True)
    b = t(T, A(217, (3, 1)), "float64")
    x = T.linalg.solve_triangular(a, b, upper=True)
    return x, g(T, x, a)


@case
def det_batched_broadcast_shapes(T, log):
    return (
        T.linalg.det(t(T, A(218, (2, 3, 2, 2)))),
        T.linalg.det(t(T, [[2.0]])),
        T.linalg.slogdet(t(T, A(219, (1, 2, 2)))).logabsdet,
    )


@case
def matrix_power_big_and_complex(T, log):
    a = tc(T, 220, (2, 2), "complex64")
    return (
        T.linalg.matrix_power(a, 4),
        T.linalg.matrix_power(t(T, A(221, (3, 3))), 7),
        T.linalg.matrix_power(T.ones(0, 0), -1),
    )


@case
def matrix_rank_tol_args(T, log):
    s = t(T, [[1.0, 0.0], [0.0, 1e-3]], "float64")
    return (
        T.linalg.matrix_rank(s, atol=T.tensor(1e-2, dtype=T.float64)),
        T.linalg.matrix_rank(s.expand(3, 2, 2), atol=1e-4, rtol=1e-2),
        T.linalg.matrix_rank(tc(T, 222, (3, 2))),
    )


@case
def pinv_grad_hermitian(T, log):
    a = t(T, spd(223, 3), "float64", rg=True)
    p = T.linalg.pinv(a, hermitian=True, rtol=1e-3)
    return p, g(T, p, a)


@case
def pinv_wide_grad(T, log):
    a = t(T, A(224, (2, 2, 4)), "float64", rg=True)
    p = T.linalg.pinv(a)
    return p, g(T, p, a)


@case
def vector_norm_ords_grad(T, log):
    x = t(T, A(225, (3, 4)), "float64", rg=True)
    LA = T.linalg
    outs = (
        LA.vector_norm(x, 2),
        LA.vector_norm(x, float("inf"), dim=0),
        LA.vector_norm(x, -1, dim=-1),
        LA.vector_norm(x, 3.5, dim=(0, 1), keepdim=True),
        LA.vector_norm(x, -float("inf")),
    )
    return outs, g(T, outs, x)


@case
def matrix_norm_f32_dtype(T, log):
    x = t(T, A(226, (2, 3, 3)))
    return (
        T.linalg.matrix_norm(x),
        T.linalg.matrix_norm(x, dtype=T.float64),
        T.linalg.matrix_norm(x, "nuc", dim=(-1, -3)),
        T.linalg.norm(x, dim=(0, 1)),
        T.linalg.norm(x[0, 0]),
    )


@case
def cond_complex_f32(T, log):
    return (
        T.linalg.cond(tc(T, 227, (3, 3))),
        T.linalg.cond(t(T, A(228, (3, 3)))),
        T.linalg.cond(tc(T, 229, (2, 2)), "fro"),
    )


@case
def cross_broadcast_complex(T, log):
    a = tc(T, 230, (2, 1, 3))
    b = tc(T, 231, (1, 4, 3))
    return T.linalg.cross(a, b), T.linalg.cross(a, b, dim=-1).shape


@case
def vecdot_errors(T, log):
    return (
        E(lambda: T.linalg.vecdot(T.ones(3), T.ones(4))),
        E(lambda: T.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64))),
        T.linalg.vecdot(T.arange(3), T.arange(3)),
    )


@case
def householder_complex_batched(T, log):
    a = tc(T, 232, (2, 3, 2))
    tau = tc(T, 233, (2, 2))
    return T.linalg.householder_product(a, tau)


# ---- more fft ----
@case
def fft_crop_pad_neg_dim(T, log):
    x = t(T, A(234, (3, 5)), "float64", rg=True)
    outs = (
        T.fft.fft(x, n=3, dim=-2),
        T.fft.fft(x, n=2),
        T.fft.ifft(x, n=7, dim=0),
        T.fft.rfft(x, n=3, dim=0),
        T.fft.irfft(x, n=4),
        T.fft.hfft(x, n=3),
    )
    return outs, g(T, outs, x)


@case
def fft_int_input_promotion(T, log):
    x = T.tensor([[1, 2, 3], [4, 5, 6]])
    return T.fft.rfft(x), T.fft.fft2(x), T.fft.irfft(x), T.fft.ihfft(x), T.fft.hfft(x)


@case
def fft_f16_err(T, log):
    return E(lambda: T.fft.fft(T.ones(3, dtype=T.float16))), E(
        lambda: T.fft.rfft(T.ones(4, dtype=T.bfloat16))
    )


@case
def irfftn_default_last_dim(T, log):
    c = tc(T, 235, (4, 3), rg=True)
    outs = (T.fft.irfftn(c), T.fft.irfftn(c, dim=(0,)), T.fft.irfft2(c, s=(4, 5)))
    return outs, g(T, outs, c)


@case
def fft_out_of_range_dims(T, log):
    return (
        E(lambda: T.fft.fft2(T.ones(2, 2), dim=(0, 2))),
        E(lambda: T.fft.fftshift(T.ones(2, 2), dim=3)),
        E(lambda: T.fft.ifftn(T.ones(2, 2), s=(1,), dim=(0, 1))),
    )


@case
def fftfreq_kwargs(T, log):
    return (
        T.fft.fftfreq(4, 0.1, dtype=T.float64),
        T.fft.rfftfreq(5, d=0.25, dtype=T.float64),
        T.fft.fftfreq(6).dtype,
    )


@case
def fftshift_complex_0d(T, log):
    c = tc(T, 236, (2, 3))
    return (
        T.fft.fftshift(c),
        T.fft.ifftshift(c, dim=(0, 1)),
        T.fft.fftshift(T.tensor(3.0)),
        T.fft.fftshift(T.ones(0)),
    )


@case
def fft_of_complex64_grad(T, log):
    x = tc(T, 237, (4,), "complex64", rg=True)
    y = T.fft.fft(x, norm="ortho")
    return y, g(T, y, x)


# ---- more matmul family ----
@case
def matmul_batched_vec(T, log):
    a = t(T, A(238, (2, 3, 4)), "float64", rg=True)
    v = t(T, A(239, (2, 4)), "float64", rg=True)
    out = (T.matmul(a, v[0]), T.matmul(v[:, None, :], a.mT), T.matmul(v[0], a.mT))
    return out, g(T, out, a, v)


@case
def matmul_complex_grad(T, log):
    a = tc(T, 240, (2, 3), rg=True)
    b = tc(T, 241, (3, 2), rg=True)
    y = a @ b
    return y, g(T, y, a, b)


@case
def matmul_dtype_errors(T, log):
    return (
        E(lambda: T.mm(T.ones(2, 2), T.ones(2, 2, dtype=T.complex64))),
        E(lambda: T.bmm(T.ones(1, 2, 2), T.ones(1, 2, 2, dtype=T.float64))),
        E(lambda: T.mv(T.ones(2, 2), T.ones(2, dtype=T.float64))),
        E(lambda: T.ones(2, 2) @ 2),
        T.mm(T.tensor([[True, False]]), T.tensor([[True], [True]])),
    )


@case
def einsum_more(T, log):
    x = t(T, A(242, (2, 3, 4)), "float64", rg=True)
    y = t(T, A(243, (4, 5)), "float64", rg=True)
    outs = (
        T.einsum("bij->jbi", x),
        T.einsum("...ij->...ji", x),
        T.einsum("bjk,kl->bjl", x, y),
        T.einsum("i,j->ij", y[0], y[1]),
        T.einsum("ii->i", x[0, :, :3]),
        T.einsum("bij,bij->b", x, x),
        T.einsum("ij...,jk->ik...", x.permute(1, 2, 0), y),
    )
    return outs, g(T, outs, x, y)


@case
def einsum_broadcast_and_scalar(T, log):
    a = t(T, A(244, (1, 3)))
    b = t(T, A(245, (4, 1)))
    return (
        T.einsum("...i,...i->...", a, b),
        T.einsum(",i->i", T.tensor(2.0), a[0]),
        T.einsum("i,i", a[0], a[0]),
        T.einsum("ij,ij->", T.ones(2, 2, dtype=T.int64), T.ones(2, 2, dtype=T.int64)),
    )


@case
def einsum_errors2(T, log):
    return (
        E(lambda: T.einsum("ij,jk->ik", T.ones(2, 3), T.ones(3, 4, dtype=T.float64))),
        E(lambda: T.einsum("ab", T.ones(2, 3, 4))),
        E(lambda: T.einsum("ij->j->i", T.ones(2, 3))),
    )


@case
def tensordot_more(T, log):
    a = tc(T, 246, (2, 3))
    b = tc(T, 247, (3, 2))
    return (
        T.tensordot(a, b, dims=1),
        T.tensordot(a, b.mT, dims=([0, 1], [0, 1])),
        T.tensordot(a, b, dims=([], [])),
    )


@case
def kron_more(T, log):
    a = t(T, A(248, (2, 1, 2)))
    b = t(T, A(249, (3, 2)))
    return (
        T.kron(a, b),
        T.kron(T.tensor(2.0), b),
        T.kron(tc(T, 250, (2,)), tc(T, 251, (2,))),
        T.kron(T.ones(0, 2), b).shape,
    )


@case
def addmv_addr_grad(T, log):
    v = t(T, A(252, (3,)), "float64", rg=True)
    m = t(T, A(253, (3, 4)), "float64", rg=True)
    w = t(T, A(254, (4,)), "float64", rg=True)
    outs = (
        T.addmv(v, m, w),
        T.addmv(v, m, w, beta=0, alpha=2),
        T.addr(m, v, w, beta=-1.5),
        m.addr(v, w, alpha=0.5),
        v.addmv(m, w, beta=2),
    )
    return outs, g(T, outs, v, m, w)


@case
def addmm_broadcast_scalar_input(T, log):
    a = t(T, A(255, (2, 3)))
    b = t(T, A(256, (3, 4)))
    return (
        T.addmm(T.tensor(1.5), a, b),
        T.addmm(T.ones(1, 4), a, b, alpha=2),
        T.addmm(T.ones(2, 1), a, b, beta=-1),
        T.baddbmm(T.ones(1, 1, 4), a[None], b[None]),
    )


@case
def addmm_inplace(T, log):
    m = t(T, A(257, (2, 4)))
    a = t(T, A(258, (2, 3)))
    b = t(T, A(259, (3, 4)))
    r = m.clone().addmm_(a, b, beta=0.5, alpha=2)
    bm = m[None].clone().baddbmm_(a[None], b[None], alpha=-1)
    return r, bm


@case
def linalg_misc_errors(T, log):
    return (
        E(lambda: T.linalg.cholesky_ex(-T.eye(2), check_errors=True)),
        E(lambda: T.linalg.inv(T.eye(2, dtype=T.float16))),
        E(lambda: T.linalg.det(T.eye(2, dtype=T.bfloat16))),
        E(lambda: T.linalg.solve(T.eye(2), T.ones(3, 2))),
        E(lambda: T.linalg.qr(T.ones(2, 2, dtype=T.int64))),
        E(lambda: T.linalg.pinv(T.ones(3))),
        E(lambda: T.linalg.multi_dot([T.ones(2, 3), T.ones(3, dtype=T.float64)])),
    )


@case
def linalg_misc_values(T, log):
    return (
        T.linalg.solve(T.eye(2).expand(3, 2, 2), T.ones(3, 2)),
        T.linalg.solve(T.eye(2).expand(3, 2, 2), T.ones(2)),
        T.linalg.eigvalsh(T.tensor([[1.0, 2.0], [3.0, 4.0]]), UPLO="U"),
        T.linalg.svd(T.tensor([[1.0, 2.0], [3.0, 4.0]]), driver=None).S,
        tuple(T.linalg.lstsq(T.eye(3), T.ones(3))),
        T.linalg.vander(T.ones(2, 3), N=2).shape,
        T.linalg.diagonal(T.ones(2, 3), offset=5),
        T.linalg.tensorinv(T.eye(4).reshape(4, 2, 2), ind=1),
        T.cholesky_solve(T.ones(2, 1), T.eye(2), upper=True),
    )


@case
def fft_misc(T, log):
    x = T.ones(2, 3)
    return (
        T.fft.fft(T.ones(4), norm="backward", n=None, dim=-1),
        E(lambda: T.fft.fft(T.ones(4), n=-1)),
        T.fft.fftn(x, s=(2, -1)),
        E(lambda: T.fft.irfft(T.ones(1))),
        E(lambda: T.fft.hfft(T.ones(1))),
        E(lambda: T.fft.irfftn(T.ones(2, 1))),
        T.fft.fftn(T.tensor(2.0)),
        T.fft.fftn(x, dim=()),
        E(lambda: T.fft.rfftn(x, dim=())),
        T.fft.fftn(x, s=[3, 3], dim=None),
        E(lambda: T.fft.fft2(x, s=(4,))),
        E(lambda: T.fft.ihfftn(T.ones(2, 3, dtype=T.complex64))),
        T.fft.hfftn(x, s=(2,)),
        T.fft.ifftshift(x, dim=(0, 0)),
    )


@case
def matmul_misc(T, log):
    return (
        E(lambda: T.vdot(T.ones(2, 2), T.ones(2, 2))),
        E(lambda: T.vdot(T.ones(2), T.ones(2, dtype=T.float64))),
        T.bmm(T.ones(0, 2, 3), T.ones(0, 3, 4)),
        T.bmm(T.ones(2, 2, 0), T.ones(2, 0, 4)),
        T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=([-1], [0])),
        T.einsum("ij,ij->i", T.ones(2, 3), T.ones(1, 3)),
        E(lambda: T.einsum("ii->", T.ones(2, 3))),
        E(lambda: T.mm(T.ones(2, 3), T.ones(3, 4, dtype=T.int64))),
        T.matmul(T.ones(2, 3, dtype=T.int32), T.ones(3, dtype=T.int32)),
        T.matmul(T.ones(2, 3), T.ones(1, 3, 4)),
        T.outer(T.arange(3), T.tensor([1.5, 2.0])),
        E(lambda: T.inner(T.arange(3), T.tensor([1.5, 2.0, 1]))),
        E(lambda: T.dot(T.arange(3), T.tensor([1.5, 2.0, 1]))),
        T.kron(T.ones(2, 3), T.ones(2, dtype=T.int64)),
        T.matmul(T.ones(3), T.ones(2, 3, 1)),
        E(lambda: T.addmm(T.ones(2, 2), T.ones(2, 2), T.ones(2, 2, dtype=T.float64))),
        T.baddbmm(T.ones(2, 2, 2), T.ones(2, 2, 2), T.ones(2, 2, 2), beta=0.5, alpha=T.tensor(2.0)),
    )


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_linalg_fft_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
