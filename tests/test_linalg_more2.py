"""linalg's inv_ex/solve_ex/cholesky_ex, vecdot, cond, vander, tensorinv, tensorsolve,
householder_product, diagonal, matmul; the top-level svd, pinverse, cholesky_solve,
cholesky_inverse, triangular_solve, ormqr, chain_matmul, trapezoid/trapz, cumulative_trapezoid
and gradient: values and gradients against torch, gradcheck in float64, torch's error texts."""

import math
import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
L, TL = jg.linalg, torch.linalg
rng = np.random.default_rng(0)


def _np(t):
    t = t.detach()
    return t.resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _same(fn, tfn, *arrays, grad=True, rtol=1e-9, atol=1e-11, check_gradcheck=True):
    """fn(jitgrad tensors) and tfn(torch tensors): same values, dtypes, requires_grad and
    gradients for random cotangents; gradcheck of fn for real inputs."""
    rg = [grad and np.asarray(a).dtype.kind in "fc" for a in arrays]
    mine = [jg.tensor(a, requires_grad=g) for a, g in zip(arrays, rg)]
    theirs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, rg)]
    outs, touts = _as_list(fn(*mine)), _as_list(tfn(*theirs))
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert tuple(o.shape) == tuple(t.shape)
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(o), _np(t), rtol=rtol, atol=atol)
    if not grad:
        return outs
    keep = [(o, t) for o, t in zip(outs, touts) if t.requires_grad]
    r = np.random.default_rng(1)
    cots = [r.standard_normal(tuple(t.shape)) for _, t in keep]
    g1 = jg.autograd.grad([o for o, _ in keep], mine, [jg.tensor(c) for c in cots],
                          allow_unused=True)
    g2 = torch.autograd.grad([t for _, t in keep], theirs, [torch.tensor(c) for c in cots],
                             allow_unused=True)
    for a, b in zip(g1, g2):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)
    if check_gradcheck and all(np.asarray(a).dtype.kind == "f" for a in arrays):
        leaves = [jg.tensor(a, requires_grad=True) for a in arrays]
        assert gradcheck(lambda *xs: tuple(o for o in _as_list(fn(*xs))
                                           if o.dtype.is_floating_point), tuple(leaves))
    return outs


def _well(*shape):
    return rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def _raises_like(call):
    """``call(lib)`` raises the same type of error with the same text for jitgrad and torch."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as mine:
        call(jg)
    assert str(mine.value) == str(theirs.value)


# ---------------------------------------------------------------- *_ex


def test_ex_variants_match_torch():
    a = _well(2, 4, 4)
    outs = _same(L.inv_ex, TL.inv_ex, a)
    assert outs[0].grad_fn.name() == "LinalgInvExBackward0" and outs[1].dtype is jg.int32
    _same(L.solve_ex, TL.solve_ex, a, rng.standard_normal((4, 2)))
    _same(lambda x, y: L.solve_ex(x, y, left=False), lambda x, y: TL.solve_ex(x, y, left=False),
          a, rng.standard_normal((3, 4)))
    spd = a @ np.swapaxes(a, -1, -2)
    for upper in (False, True):
        _same(lambda x, u=upper: L.cholesky_ex(x, upper=u),
              lambda x, u=upper: TL.cholesky_ex(x, upper=u),
              spd, check_gradcheck=False)


def test_ex_variants_on_singular_and_indefinite_matrices():
    for m in (np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.stack([np.eye(3),
                                                                               np.ones((3, 3))])):
        _same(L.inv_ex, TL.inv_ex, m, grad=False)
        _same(L.solve_ex, TL.solve_ex, m, np.ones(m.shape), grad=False)
        _raises_like(lambda lib, m=m: lib.linalg.inv_ex(lib.tensor(m), check_errors=True))
    for m in (-np.eye(3), np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])):
        _same(L.cholesky_ex, TL.cholesky_ex, m, grad=False)
        _raises_like(lambda lib, m=m: lib.linalg.cholesky_ex(lib.tensor(m), check_errors=True))


# ---------------------------------------------------------------- compositions


def test_vecdot_diagonal_matmul():
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4))
    _same(L.vecdot, TL.vecdot, x, y)
    _same(lambda a, b: L.vecdot(a, b, dim=-2), lambda a, b: TL.vecdot(a, b, dim=-2), x, y)
    c = x + 1j * rng.standard_normal(x.shape)
    _same(L.vecdot, TL.vecdot, c, c, grad=False)
    _same(lambda a: L.diagonal(a, offset=1), lambda a: TL.diagonal(a, offset=1), x)
    _same(L.matmul, TL.matmul, x, y.T.copy())
    _raises_like(lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)))


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond_matches_torch(p):
    a = _well(2, 3, 3)
    if p in (None, 2, -2):
        _same(lambda x: L.cond(x, p), lambda x: TL.cond(x, p), a)
        _same(lambda x: L.cond(x, p), lambda x: TL.cond(x, p), rng.standard_normal((3, 5)))
    else:  # (torch's backward for these fails: an in-place masked_fill_ on its inverse)
        _same(lambda x: L.cond(x, p), lambda x: TL.cond(x, p), a, grad=False)
        assert gradcheck(lambda x: L.cond(x, p), (jg.tensor(a, requires_grad=True),))
        singular = np.stack([np.ones((3, 3)), np.eye(3)])
        ours, theirs = L.cond(jg.tensor(singular), p), TL.cond(torch.tensor(singular), p)
        # the identity's exactly; the singular matrix's is inf or the norm of an inverse made
        # of rounding (1e48 with one LAPACK, inf with another): huge in both
        assert ours[1].item() == pytest.approx(theirs[1].item(), rel=1e-12)
        assert ours[0].item() > 1e15 and theirs[0].item() > 1e15
        _raises_like(lambda lib: lib.linalg.cond(lib.ones(2, 3), p))
    _raises_like(lambda lib: lib.linalg.cond(lib.ones(3, 3), 3))


def test_vander_tensorinv_tensorsolve_householder():
    x = rng.standard_normal((2, 4))
    _same(L.vander, TL.vander, x)
    _same(lambda t: L.vander(t, N=6), lambda t: TL.vander(t, N=6), x[0])
    _raises_like(lambda lib: lib.linalg.vander(lib.ones(3), N=1))
    _same(lambda t: L.tensorinv(t, ind=1), lambda t: TL.tensorinv(t, ind=1), _well(4, 4)
          .reshape(4, 2, 2))
    _same(L.tensorinv, TL.tensorinv, _well(6, 6).reshape(2, 3, 6).reshape(2, 3, 3, 2))
    _raises_like(lambda lib: lib.linalg.tensorinv(lib.ones(4, 2, 3), ind=1))
    _same(L.tensorsolve, TL.tensorsolve, _well(6, 6).reshape(2, 3, 6),
          rng.standard_normal((2, 3)))
    _same(lambda a, b: L.tensorsolve(a, b, dims=(0,)),
          lambda a, b: TL.tensorsolve(a, b, dims=(0,)), _well(6, 6).reshape(6, 2, 3),
          rng.standard_normal((2, 3)))
    _same(L.householder_product, TL.householder_product, rng.standard_normal((2, 5, 3)),
          rng.standard_normal((2, 3)))
    _same(L.householder_product, TL.householder_product, rng.standard_normal((4, 3)),
          rng.standard_normal(2))


# ---------------------------------------------------------------- top-level legacy names


def test_svd_and_pinverse():
    a = rng.standard_normal((4, 3))
    for some in (True, False):
        def gauge_free(lib, x, some=some):
            u, s, v = lib.svd(x, some=some)
            k = s.shape[-1]
            return [s, u[..., :k] @ v[..., :k].mT, u.abs().sum(-1)]
        _same(lambda x: gauge_free(jg, x), lambda x: gauge_free(torch, x), a,
              check_gradcheck=False)
    _same(lambda x: jg.svd(x, compute_uv=False), lambda x: torch.svd(x, compute_uv=False), a)
    _same(lambda x: x.svd()[1], lambda x: x.svd()[1], a)
    _same(jg.pinverse, torch.pinverse, a)
    _same(lambda x: x.pinverse(rcond=1e-3), lambda x: x.pinverse(rcond=1e-3), a)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    low = np.tril(rng.standard_normal((2, 3, 3))) + 3 * np.eye(3)
    factor = np.swapaxes(low, -1, -2).copy() if upper else low
    b = rng.standard_normal((3, 2))
    outs = _same(lambda x, f: jg.cholesky_solve(x, f, upper=upper),
                 lambda x, f: torch.cholesky_solve(x, f, upper=upper), b, factor,
                 check_gradcheck=False)
    assert outs[0].grad_fn.name() == "CholeskySolveBackward0"
    tri = (lambda f: f.triu()) if upper else (lambda f: f.tril())
    assert gradcheck(lambda x, f: jg.cholesky_solve(x, tri(f), upper=upper),
                     (jg.tensor(b, requires_grad=True), jg.tensor(factor, requires_grad=True)))
    _same(lambda f: jg.cholesky_inverse(f, upper=upper),
          lambda f: torch.cholesky_inverse(f, upper=upper), factor, check_gradcheck=False)
    _same(lambda x, f: x.cholesky_solve(f, upper), lambda x, f: x.cholesky_solve(f, upper),
          b, factor, grad=False)
    _raises_like(lambda lib: lib.cholesky_solve(lib.ones(3, 2), lib.ones(4, 4)))
    _raises_like(lambda lib: lib.cholesky_solve(lib.ones(3, 2),
                                                lib.ones(3, 3, dtype=lib.float64)))
    with pytest.raises(NotImplementedError, match="\"cholesky_solve_cpu\" not implemented for "
                                                  "'Long'"):
        jg.cholesky_solve(jg.ones(3, 2, dtype=jg.int64), jg.ones(3, 3, dtype=jg.int64))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_forward_mode(upper):
    import torch.autograd.forward_ad as tfw

    import jitgrad.autograd.forward_ad as fwAD

    low = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    factor = low.T.copy() if upper else low
    tri = np.triu if upper else np.tril
    b, tb, tf = (rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
                 tri(rng.standard_normal((3, 3))))
    with fwAD.dual_level():
        x = jg.cholesky_solve(fwAD.make_dual(jg.tensor(b), jg.tensor(tb)),
                              fwAD.make_dual(jg.tensor(factor), jg.tensor(tf)), upper=upper)
        mine = fwAD.unpack_dual(x).tangent
    with tfw.dual_level():
        x = torch.cholesky_solve(tfw.make_dual(torch.tensor(b), torch.tensor(tb)),
                                 tfw.make_dual(torch.tensor(factor), torch.tensor(tf)),
                                 upper=upper)
        theirs = tfw.unpack_dual(x).tangent
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_triangular_solve(upper, transpose, unitriangular):
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = _same(lambda x, m: jg.triangular_solve(x, m, upper, transpose, unitriangular),
                     lambda x, m: torch.triangular_solve(x, m, upper, transpose, unitriangular),
                     b, a)
    assert outs[1].shape == (2, 3, 3)


def test_triangular_solve_refuses_mixed_dtypes_and_warns_once():
    from jitgrad.ops import linalg_more2

    with pytest.raises(RuntimeError, match=r"^Expected b and A to have the same dtype, but found b "
                       r"of type Double and A of type ComplexDouble instead\.$"):
        jg.triangular_solve(jg.ones(2, 1, dtype=jg.float64), jg.eye(2, dtype=jg.complex128))
    linalg_more2._WARNED_TRIANGULAR_SOLVE.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jg.triangular_solve(jg.ones(2, 1), jg.eye(2))
        jg.triangular_solve(jg.ones(2, 1), jg.eye(2))
    assert len(caught) == 1 and caught[0].filename == __file__
    assert str(caught[0].message).startswith(
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will "
        "be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its")


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (4, 5), (2, 4, 3)])
def test_ormqr_values_and_gradients_match_torch(left, transpose, shape):
    h, tau = (x.numpy() for x in torch.geqrf(torch.tensor(rng.standard_normal(shape))))
    mn = shape[-2]
    c = rng.standard_normal(shape[:-2] + ((mn, 2) if left else (3, mn)))
    _same(lambda a, t, o: jg.ormqr(a, t, o, left, transpose),
          lambda a, t, o: torch.ormqr(a, t, o, left, transpose), h, tau, c)


def test_ormqr_complex_and_method():
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    h, tau = (x.numpy() for x in torch.geqrf(torch.tensor(a)))
    c = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    ours = jg.tensor(h).ormqr(jg.tensor(tau), jg.tensor(c), transpose=True)
    np.testing.assert_allclose(ours.numpy(), torch.ormqr(torch.tensor(h), torch.tensor(tau),
                                                         torch.tensor(c), transpose=True).numpy(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shapes,kw", [
    (((4,), (3,), (4, 2)), {}), (((4, 3), (3,), (4,)), {}), (((4, 3), (3,), (2, 4)), {}),
    (((4, 3), (5,), (4, 2)), {}), (((4, 3), (2,), (4, 2)), {}),
    (((2, 4, 3), (3, 3), (2, 4, 2)), {}), (((2, 4, 3), (2, 3), (3, 4, 2)), {}),
    (((2, 4, 3), (2, 3), (4, 2)), {}),
    (((1, 4, 3), (3,), (1, 4, 2)), {}), (((2, 3), (3,), (5, 2)), {"left": False}),
    (((4, 3), (3,), (2, 3)), {"left": False})])
def test_ormqr_errors_match_torch(shapes, kw):
    texts = []
    for lib in (jg, torch):
        args = [lib.ones(s, dtype=lib.float64) for s in shapes]
        with pytest.raises(RuntimeError) as info:
            lib.ormqr(*args, **kw)
        texts.append(str(info.value))
    assert texts[0] == texts[1]
    for lib in (jg, torch):
        with pytest.raises(RuntimeError, match="Expected input and tau to have the same dtype"):
            lib.ormqr(lib.ones(4, 3, dtype=lib.float64), lib.ones(3), lib.ones(4, 2,
                                                                               dtype=lib.float64))


def test_chain_matmul():
    ms = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 2))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(jg.chain_matmul, torch.chain_matmul, *ms)
        _same(jg.chain_matmul, torch.chain_matmul, ms[0])
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        jg.chain_matmul(jg.ones(2, 2), jg.ones(2, 2))


# ---------------------------------------------------------------- trapezoid, gradient


def test_trapezoid_and_cumulative_trapezoid():
    y = rng.standard_normal((3, 5))
    x1 = np.sort(rng.standard_normal(5))
    x2 = np.sort(rng.standard_normal((3, 5)), -1)
    for name in ("trapezoid", "trapz", "cumulative_trapezoid"):
        f, tf = getattr(jg, name), getattr(torch, name)
        _same(f, tf, y)
        _same(f, tf, y, x1)
        _same(f, tf, y, x2)
        _same(lambda t, f=f: f(t, dx=0.5, dim=0), lambda t, tf=tf: tf(t, dx=0.5, dim=0), y)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    y = rng.standard_normal((4, 5))
    coords = np.cumsum(rng.uniform(0.5, 1.5, 5))
    _same(lambda t: jg.gradient(t, edge_order=edge_order),
          lambda t: torch.gradient(t, edge_order=edge_order), y)
    _same(lambda t: jg.gradient(t, spacing=[2.0, 0.5], edge_order=edge_order),
          lambda t: torch.gradient(t, spacing=[2.0, 0.5], edge_order=edge_order), y)
    _same(lambda t: jg.gradient(t, spacing=3.0, dim=0, edge_order=edge_order),
          lambda t: torch.gradient(t, spacing=3.0, dim=0, edge_order=edge_order), y)
    _same(lambda t, c: jg.gradient(t, spacing=(c,), dim=1, edge_order=edge_order),
          lambda t, c: torch.gradient(t, spacing=(c,), dim=1, edge_order=edge_order), y, coords,
          rtol=1e-8, atol=1e-10)
    _raises_like(lambda lib: lib.gradient(lib.ones(2), edge_order=2))


def test_ex_variants_and_cond_under_jit():
    # traced values have no info to look at: the non-singular path, as eager takes here
    from jitgrad.jit import jit

    a = jg.tensor(_well(2, 3, 3))
    calls = (lambda x: tuple(L.inv_ex(x)), lambda x: tuple(L.solve_ex(x, x)),
             lambda x: tuple(L.cholesky_ex(x @ x.mT)), lambda x: L.cond(x, "nuc"),
             lambda x: tuple(L.lu_factor(x)))
    for f in calls:
        eager, traced = f(a), jit(f)(a)
        eager = eager if isinstance(eager, tuple) else (eager,)
        traced = traced if isinstance(traced, tuple) else (traced,)
        for e, t in zip(eager, traced):
            assert e.dtype is t.dtype
            np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
