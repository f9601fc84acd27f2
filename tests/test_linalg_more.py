"""linalg.lu_factor(_ex)/lu/lu_solve, lu_unpack, matrix_exp and eig/eigvals against torch:
values, pivots and info, gradients (random cotangents; phase-invariant losses for eig),
forward-mode tangents, gradcheck/gradgradcheck in float64, and torch's error texts."""

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.autograd.forward_ad as fwAD
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
L, TL = jg.linalg, torch.linalg


def _arr(shape, seed=0, complex_=False):
    r = np.random.default_rng(seed)
    a = r.standard_normal(shape)
    return a + 1j * r.standard_normal(shape) if complex_ else a


def _pair(a, dtype=None):
    jd = getattr(jg, dtype) if dtype else None
    td = getattr(torch, dtype) if dtype else None
    return (jg.tensor(a, dtype=jd, requires_grad=True),
            torch.tensor(a, dtype=td, requires_grad=True))


def _np(t):
    t = t.detach()
    return t.resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def _same_grads(fn, tfn, arrays, seed=3, rtol=1e-9, atol=1e-11):
    """Values and gradients (random cotangents) of fn (jitgrad) and tfn (torch) agree."""
    pairs = [_pair(a) for a in arrays]
    mine, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    outs, touts = fn(*mine), tfn(*theirs)
    r = np.random.default_rng(seed)
    keep = [(o, t) for o, t in zip(outs, touts) if t.requires_grad]
    for o, t in zip(outs, touts):
        _close(o, t, rtol, atol)
        assert o.requires_grad == t.requires_grad
    cots = [r.standard_normal(tuple(t.shape)) + (1j * r.standard_normal(tuple(t.shape))
                                                 if t.is_complex() else 0) for _, t in keep]
    g1 = jg.autograd.grad([o for o, _ in keep], mine, [jg.tensor(c) for c in cots])
    g2 = torch.autograd.grad([t for _, t in keep], theirs, [torch.tensor(c) for c in cots])
    for a, b in zip(g1, g2):
        _close(a, b, rtol, atol)
    return outs, touts


# ---------------------------------------------------------------- LU


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_factor_and_lu_match_torch(shape, complex_):
    a = _arr(shape, 1, complex_)
    lu, piv, info = L.lu_factor_ex(jg.tensor(a))
    tlu, tpiv, tinfo = TL.lu_factor_ex(torch.tensor(a))
    _close(lu, tlu)
    assert piv.dtype is jg.int32 and info.dtype is jg.int32
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
    outs, _ = _same_grads(lambda x: [L.lu_factor(x).LU], lambda x: [TL.lu_factor(x).LU], [a])
    assert outs[0].grad_fn.name() == "LinalgLuFactorExBackward0"
    outs, _ = _same_grads(lambda x: list(L.lu(x)), lambda x: list(TL.lu(x)), [a])
    assert not outs[0].requires_grad and outs[1].grad_fn.name() == "LinalgLuBackward0"
    if not complex_:
        x = jg.tensor(a, requires_grad=True)
        assert gradcheck(lambda t: tuple(L.lu(t))[1:], (x,))
        assert gradgradcheck(lambda t: L.lu_factor(t).LU, (x,))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (3, 5)])
def test_lu_unpack_matches_torch(shape):
    a = _arr(shape, 2)

    def unpack(lib, top):
        def f(x):
            lu, piv = lib.lu_factor(x)
            return list(top.lu_unpack(lu, piv))
        return f

    outs, _ = _same_grads(unpack(L, jg), unpack(TL, torch), [a])
    assert outs[1].grad_fn.name() == "LuUnpackBackward0"
    p, low, up = outs
    np.testing.assert_allclose((p @ low @ up).detach().numpy(), a, atol=1e-12)
    lu, piv = L.lu_factor(jg.tensor(a))
    tlu, tpiv = TL.lu_factor(torch.tensor(a))
    for flags in ({"unpack_data": False}, {"unpack_pivots": False}):
        for o, t in zip(jg.lu_unpack(lu, piv, **flags), torch.lu_unpack(tlu, tpiv, **flags)):
            assert tuple(o.shape) == tuple(t.shape)
            _close(o, t)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_solve_matches_torch(left, adjoint, complex_):
    a = _arr((2, 4, 4), 3, complex_)
    b = _arr((4, 3) if left else (3, 4), 4, complex_)  # broadcast over A's batch

    def solve(lib):
        def f(x, y):
            lu, piv = lib.lu_factor(x)
            return [lib.lu_solve(lu, piv, y, left=left, adjoint=adjoint)]
        return f

    outs, _ = _same_grads(solve(L), solve(TL), [a, b])
    assert outs[0].grad_fn.name() == "LinalgLuSolveBackward0"
    if not complex_:
        x, y = jg.tensor(a, requires_grad=True), jg.tensor(b, requires_grad=True)
        assert gradcheck(lambda s, t: solve(L)(s, t)[0], (x, y))
        assert gradgradcheck(lambda s, t: solve(L)(s, t)[0], (x, y))


def test_lu_forward_mode_matches_torch():
    import torch.autograd.forward_ad as tfw

    r = np.random.default_rng(5)
    for shape in [(3, 3), (3, 5), (5, 3)]:
        a, t = r.standard_normal(shape), r.standard_normal(shape)
        b, tb = r.standard_normal((3, 2)), r.standard_normal((3, 2))
        with fwAD.dual_level():
            lu, piv = L.lu_factor(fwAD.make_dual(jg.tensor(a), jg.tensor(t)))
            mine = [fwAD.unpack_dual(lu).tangent]
            _, low, up = L.lu(fwAD.make_dual(jg.tensor(a), jg.tensor(t)))
            mine += [fwAD.unpack_dual(low).tangent, fwAD.unpack_dual(up).tangent]
            _, low, up = jg.lu_unpack(lu, piv)
            mine += [fwAD.unpack_dual(low).tangent, fwAD.unpack_dual(up).tangent]
            if shape[0] == shape[1]:
                x = L.lu_solve(lu, piv, fwAD.make_dual(jg.tensor(b), jg.tensor(tb)))
                mine.append(fwAD.unpack_dual(x).tangent)
        with tfw.dual_level():
            tlu, tpiv = TL.lu_factor(tfw.make_dual(torch.tensor(a), torch.tensor(t)))
            theirs = [tfw.unpack_dual(tlu).tangent]
            _, tlow, tup = TL.lu(tfw.make_dual(torch.tensor(a), torch.tensor(t)))
            theirs += [tfw.unpack_dual(tlow).tangent, tfw.unpack_dual(tup).tangent]
            _, tlow, tup = torch.lu_unpack(tlu, tpiv)
            theirs += [tfw.unpack_dual(tlow).tangent, tfw.unpack_dual(tup).tangent]
            if shape[0] == shape[1]:
                tx = TL.lu_solve(tlu, tpiv, tfw.make_dual(torch.tensor(b), torch.tensor(tb)))
                theirs.append(tfw.unpack_dual(tx).tangent)
        for m, th in zip(mine, theirs):
            _close(m, th, 1e-9, 1e-11)


def test_lu_singular_and_errors():
    z = np.zeros((2, 2, 2))
    z[1] = np.eye(2)
    lu, piv, info = L.lu_factor_ex(jg.tensor(z))
    tlu, tpiv, tinfo = TL.lu_factor_ex(torch.tensor(z))
    np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    for call in (lambda lib: lib.lu_factor(z_of(lib, z)),
                 lambda lib: lib.lu_factor_ex(z_of(lib, z), check_errors=True)):
        with pytest.raises(RuntimeError) as theirs:
            call(TL)
        with pytest.raises(L.LinAlgError) as mine:
            call(L)
        assert str(mine.value) == str(theirs.value)
    a = torch.randn(3, 3)
    lu, piv = TL.lu_factor(a)
    for call in (lambda lib, top: lib.lu_factor(top.ones(2, 2, dtype=top.int64)),
                 lambda lib, top: lib.lu(top.ones(2, 2, dtype=top.bool)),
                 lambda lib, top: lib.lu(top.ones(3)),
                 lambda lib, top: lib.lu_factor_ex(top.ones(3)),
                 lambda lib, top: top.lu_unpack(top.ones(3), top.ones(3, dtype=top.int32)),
                 lambda lib, top: lib.lu_factor(top.ones(3, 3), pivot=False),
                 lambda lib, top: lib.lu_solve(top.tensor(lu.numpy()), top.tensor(piv.numpy()),
                                               top.ones(4, 2)),
                 lambda lib, top: lib.lu_solve(top.tensor(lu.numpy()), top.tensor(piv.numpy()),
                                               top.ones(2, 4), left=False),
                 lambda lib, top: lib.lu_solve(top.tensor(lu.numpy()), top.tensor(piv.numpy()),
                                               top.ones(3, 2, dtype=top.float64)),
                 lambda lib, top: lib.matrix_exp(top.ones(3, 3, dtype=top.int64)),
                 lambda lib, top: lib.eigvals(top.ones(3, 3, dtype=top.int64)),
                 lambda lib, top: lib.eig(top.ones(3))):
        with pytest.raises(Exception) as theirs:
            call(TL, torch)
        with pytest.raises(type(theirs.value)) as mine:
            call(L, jg)
        assert str(mine.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        L.lu_solve(jg.ones(2, 3), jg.ones(2, dtype=jg.int32), jg.ones(2, 1))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of "
                                           "torch.int32 dtype"):
        jg.lu_unpack(jg.ones(2, 2), jg.ones(2, dtype=jg.int64))


def z_of(lib, a):
    return (jg if lib is L else torch).tensor(a)


# ---------------------------------------------------------------- matrix_exp


@pytest.mark.parametrize("shape,scale", [((3, 3), 0.5), ((2, 4, 4), 3.0), ((5, 5), 40.0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_matrix_exp_matches_torch(shape, scale, dtype):
    a = _arr(shape, 6, dtype == "complex128") * scale / np.sqrt(shape[-1])
    mine = jg.tensor(a, dtype=getattr(jg, dtype))
    theirs = torch.tensor(a, dtype=getattr(torch, dtype))
    tol = 2e-5 if dtype == "float32" else 1e-11
    expected = torch.linalg.matrix_exp(theirs)
    for got in (L.matrix_exp(mine), jg.matrix_exp(mine), mine.matrix_exp()):
        assert got.dtype is mine.dtype
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=tol,
                                   atol=tol * float(expected.abs().max()))
    if dtype != "float32" and scale < 10:
        outs, _ = _same_grads(lambda x: [L.matrix_exp(x)], lambda x: [TL.matrix_exp(x)], [a])
        assert outs[0].grad_fn.name() == "LinalgMatrixExpBackward0"


def test_matrix_exp_gradcheck_and_forward_mode():
    import torch.autograd.forward_ad as tfw

    a, t = _arr((2, 3, 3), 7), _arr((2, 3, 3), 8)
    x = jg.tensor(a, requires_grad=True)
    assert gradcheck(jg.matrix_exp, (x,))
    assert gradgradcheck(jg.matrix_exp, (x,))
    with fwAD.dual_level():
        mine = fwAD.unpack_dual(jg.matrix_exp(fwAD.make_dual(jg.tensor(a), jg.tensor(t))))
    with tfw.dual_level():
        theirs = tfw.unpack_dual(torch.matrix_exp(tfw.make_dual(torch.tensor(a),
                                                                torch.tensor(t))))
    _close(mine.tangent, theirs.tangent, 1e-10, 1e-12)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are "
                                           "2 by 3 matrices"):
        jg.matrix_exp(jg.ones(2, 3))


# ---------------------------------------------------------------- eig


def _eig_loss(lib):
    def f(x):  # invariant to each eigenvector's phase
        w, v = lib.eig(x)
        return [w, v * v.conj(), v.abs()]
    return f


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("complex_", [False, True])
def test_eig_matches_torch(shape, complex_):
    a = _arr(shape, 9, complex_)
    outs, _ = _same_grads(_eig_loss(L), _eig_loss(TL), [a], rtol=1e-8, atol=1e-10)
    w, v = L.eig(jg.tensor(a))
    assert w.dtype is jg.complex128 and v.dtype is jg.complex128
    np.testing.assert_allclose((jg.tensor(a).to(jg.complex128) @ v).numpy(),
                               (v * w.unsqueeze(-2)).numpy(), atol=1e-12)
    _close(L.eigvals(jg.tensor(a)), TL.eigvals(torch.tensor(a)), 1e-10, 1e-12)
    assert L.eigvals(jg.tensor(a, requires_grad=True)).grad_fn.name() == "LinalgEigBackward0"
    if not complex_:
        x = jg.tensor(a, requires_grad=True)
        assert gradcheck(lambda t: tuple(o.abs() for o in _eig_loss(L)(t)), (x,))
    assert L.eig(jg.tensor(a, dtype=jg.float32 if not complex_ else jg.complex64)) \
        .eigenvalues.dtype is jg.complex64


def test_eig_forward_mode_matches_finite_differences():
    a, t = _arr((3, 3), 10), _arr((3, 3), 11)
    with fwAD.dual_level():
        w, v = L.eig(fwAD.make_dual(jg.tensor(a), jg.tensor(t)))
        dw = fwAD.unpack_dual(w).tangent.numpy()
        dp = fwAD.unpack_dual(v * v.conj()).tangent.numpy()
    eps = 1e-6
    wp, vp = np.linalg.eig(a + eps * t)
    wm, vm = np.linalg.eig(a - eps * t)
    order = np.argsort(np.linalg.eig(a)[0].real)
    assert np.all(np.argsort(wp.real) == order) and np.all(np.argsort(wm.real) == order)
    np.testing.assert_allclose(dw, (wp - wm) / (2 * eps), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dp, (np.abs(vp) ** 2 - np.abs(vm) ** 2) / (2 * eps), rtol=1e-5,
                               atol=1e-6)


def test_eig_errors():
    with pytest.raises(RuntimeError, match="linalg.eig: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        L.eig(jg.ones(2, 3))


def test_complex_pivoting_is_lapacks():
    # |0.8+0.8i| < 1.2 but |re| + |im| = 1.6 > 1.2: LAPACK's izamax keeps the first row
    a = np.array([[0.8 + 0.8j, 1.0], [1.2 + 0j, 2.0]])
    mine, theirs = L.lu_factor(jg.tensor(a)), TL.lu_factor(torch.tensor(a))
    np.testing.assert_array_equal(mine.pivots.numpy(), theirs.pivots.numpy())
    _close(mine.LU, theirs.LU)
