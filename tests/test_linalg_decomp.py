"""linalg.eigh/eigvalsh/qr/svd/pinv/lstsq/matrix_rank/solve_triangular: values and gradients
against torch, and gradcheck in float64 (losses that do not depend on the vectors' signs)."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")
L, TL = jg.linalg, torch.linalg


def _pair(shape, seed=0, dtype="float64"):
    a = np.random.default_rng(seed).standard_normal(shape)
    return (jg.tensor(a, dtype=getattr(jg, dtype), requires_grad=True),
            torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True))


def _same_grad(loss, mine, theirs, rtol=1e-8):
    loss(L, mine).backward()
    loss(TL, theirs).backward()
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=rtol, atol=1e-10)


def _eigh_loss(lib, a):
    sym = a + a.mT
    values, vectors = lib.eigh(sym)
    c = lib_arange(lib, values.shape[-1], a)
    projector = (vectors * c) @ vectors.mT  # sign-invariant
    return (values * c).sum() + (projector * sym).sum()


def lib_arange(lib, n, like):
    top = jg if lib is L else torch
    return top.arange(1, n + 1, dtype=like.dtype)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh(shape):
    mine, theirs = _pair(shape)
    sym_m, sym_t = mine + mine.mT, theirs + theirs.mT
    np.testing.assert_allclose(L.eigh(sym_m).eigenvalues.detach().numpy(),
                               TL.eigh(sym_t).eigenvalues.detach().numpy(), rtol=1e-12)
    for uplo in ("L", "U"):
        np.testing.assert_allclose(L.eigvalsh(mine, UPLO=uplo).detach().numpy(),
                                   TL.eigvalsh(theirs, UPLO=uplo).detach().numpy(), rtol=1e-12)
    _same_grad(_eigh_loss, mine, theirs)
    assert gradcheck(lambda a: _eigh_loss(L, a), (mine.detach().requires_grad_(),))
    assert L.eigh(sym_m).eigenvalues.grad_fn.name() == "LinalgEighBackward0"


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(shape, mode):
    mine, theirs = _pair(shape, 1)
    q, r = L.qr(mine, mode=mode)
    tq, tr = TL.qr(theirs, mode=mode)
    np.testing.assert_allclose(q.detach().numpy(), tq.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(r.detach().numpy(), tr.detach().numpy(), atol=1e-12)
    if mode == "complete" and shape[-2] > shape[-1]:
        with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
            (q.sum() + r.sum()).backward()
        return

    def loss(lib, a):
        q, r = lib.qr(a, mode=mode)
        return (q * q.detach().sin()).sum() + (r * r.detach().cos()).sum()

    _same_grad(loss, mine, theirs)
    assert gradcheck(lambda a: sum(t.sin().sum() for t in L.qr(a, mode=mode)),
                     (mine.detach().requires_grad_(),))


def test_qr_mode_r_and_errors():
    a = jg.randn(4, 3, dtype=jg.float64, requires_grad=True)
    q, r = L.qr(a, mode="r")
    assert q.numel() == 0 and r.shape == (3, 3)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        r.sum().backward()
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        L.qr(a, mode="x")


def _svd_loss(full):
    def loss(lib, a):
        u, s, vh = lib.svd(a, full_matrices=full)
        k = s.shape[-1]
        u, vh = u[..., :k], vh[..., :k, :]
        c = lib_arange(lib, k, a)
        return (s * c).sum() + ((u * c) @ u.mT).sin().sum() + ((vh.mT * c) @ vh).cos().sum()
    return loss


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    mine, theirs = _pair(shape, 2)
    for x, y in zip(L.svd(mine, full_matrices=full), TL.svd(theirs, full_matrices=full)):
        assert tuple(x.shape) == tuple(y.shape)
    np.testing.assert_allclose(L.svd(mine).S.detach().numpy(),
                               TL.svd(theirs).S.detach().numpy(), rtol=1e-12)
    _same_grad(_svd_loss(full), mine, theirs, rtol=1e-7)
    assert gradcheck(lambda a: _svd_loss(full)(L, a), (mine.detach().requires_grad_(),))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_complex_svd_gradient_matches_torch(shape):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    mine, theirs = jg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)

    def loss(lib, x):
        u, s, vh = lib.svd(x, full_matrices=False)
        c = lib_arange(lib, s.shape[-1], s)
        return ((s * c).sum() + ((u * c) @ u.mH).abs().sum() + ((vh.mH * c) @ vh).real.sum()
                + (u @ vh).real.sum())  # (u @ vh: the phases cancel)

    _same_grad(loss, mine, theirs)


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 3, 4)])
def test_pinv(shape):
    mine, theirs = _pair(shape, 3)
    np.testing.assert_allclose(L.pinv(mine).detach().numpy(), TL.pinv(theirs).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    _same_grad(lambda lib, a: (lib.pinv(a).sin()).sum(), mine, theirs)
    assert gradcheck(lambda a: L.pinv(a), (mine.detach().requires_grad_(),))
    low = jg.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=jg.float64)  # rank 1
    np.testing.assert_allclose(L.pinv(low).numpy(), TL.pinv(torch.tensor(low.numpy())).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(L.pinv(low, hermitian=True).numpy(),
                               TL.pinv(torch.tensor(low.numpy()), hermitian=True).numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("shape,rhs", [((6, 3), (6, 2)), ((3, 3), (3,)), ((3, 5), (3, 2))])
@pytest.mark.parametrize("driver", [None, "gelsd", "gelss", "gels"])
def test_lstsq(shape, rhs, driver):
    (a, ta), (b, tb) = _pair(shape, 4), _pair(rhs, 5)
    if driver == "gels" and shape[0] < shape[1]:
        driver = "gelsd"  # (torch's gels needs full column rank and m >= n)
    mine, theirs = L.lstsq(a, b, driver=driver), TL.lstsq(ta, tb, driver=driver)
    for field in ("solution", "residuals", "rank", "singular_values"):
        x, y = getattr(mine, field), getattr(theirs, field)
        assert tuple(x.shape) == tuple(y.shape), field
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-9,
                                   atol=1e-10, err_msg=field)
    mine.solution.sin().sum().backward()
    theirs.solution.sin().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_lstsq_and_pinv_in_float32():
    # (float32's eps is a NumPy float32, no Python float: it was refused as a "tensor" tolerance)
    a = np.random.default_rng(7).standard_normal((6, 3)).astype(np.float32)
    b = np.random.default_rng(8).standard_normal((6, 2)).astype(np.float32)
    mine = L.lstsq(jg.tensor(a), jg.tensor(b)).solution
    theirs = TL.lstsq(torch.tensor(a), torch.tensor(b)).solution
    assert mine.dtype is jg.float32
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(L.pinv(jg.tensor(a), rtol=np.float32(1e-3)).numpy(),
                               TL.pinv(torch.tensor(a), rtol=1e-3).numpy(), rtol=1e-4, atol=1e-5)


def test_matrix_rank():
    a = np.random.default_rng(6).standard_normal((3, 5, 4))
    a[1, :, 3] = a[1, :, 0] + a[1, :, 1]
    np.testing.assert_array_equal(L.matrix_rank(jg.tensor(a)).numpy(),
                                  TL.matrix_rank(torch.tensor(a)).numpy())
    np.testing.assert_array_equal(L.matrix_rank(jg.tensor(a), rtol=0.5).numpy(),
                                  TL.matrix_rank(torch.tensor(a), rtol=0.5).numpy())


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    ma, mb = (jg.tensor(x, requires_grad=True) for x in (a, b))
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
    kw = dict(upper=upper, left=left, unitriangular=unit)
    got, want = L.solve_triangular(ma, mb, **kw), TL.solve_triangular(ta, tb, **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    got.sin().sum().backward()
    want.sin().sum().backward()
    np.testing.assert_allclose(ma.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda x, y: L.solve_triangular(x, y, **kw),
                     (ma.detach().requires_grad_(), mb.detach().requires_grad_()))


def test_errors_match_torch():
    for call in (lambda lib, top: lib.eigh(top.ones(2, 3)),
                 lambda lib, top: lib.qr(top.ones(3)),
                 lambda lib, top: lib.svd(top.ones(3, dtype=top.float64)),
                 lambda lib, top: lib.eigh(top.ones(2, 2), UPLO="X")):
        with pytest.raises(RuntimeError) as theirs:
            call(TL, torch)
        with pytest.raises(RuntimeError) as mine:
            call(L, jg)
        assert str(mine.value) == str(theirs.value)


def _fns(lib):
    top = jg if lib is L else torch

    def eigh(a):
        values, vectors = lib.eigh(a + a.mT)
        c = top.arange(1, a.shape[-1] + 1, dtype=a.dtype)
        return values, (vectors * c) @ vectors.mT

    def qr(a):
        return lib.qr(a)

    def qr_wide(a):
        return lib.qr(a[..., :3, :])

    def svd(a):
        u, s, vh = lib.svd(a, full_matrices=False)
        c = top.arange(1, s.shape[-1] + 1, dtype=a.dtype)
        return s, (u * c) @ u.mT, (vh.mT * c) @ vh

    def pinv(a):
        return lib.pinv(a)

    def triangular(a):
        return (lib.solve_triangular(a[..., :3, :3] + 3 * top.eye(3, dtype=a.dtype), a,
                                     upper=True),
                lib.solve_triangular(a[..., :3, :3] + 3 * top.eye(3, dtype=a.dtype),
                                     a.mT, upper=False, left=False, unitriangular=True))
    return {"eigh": eigh, "qr": qr, "qr_wide": qr_wide, "svd": svd, "pinv": pinv,
            "triangular": triangular}


@pytest.mark.parametrize("name", ["eigh", "qr", "qr_wide", "svd", "pinv", "triangular"])
def test_forward_mode_matches_torch(name):
    rng = np.random.default_rng(11)
    shape = {"eigh": (3, 3), "qr_wide": (5, 5), "triangular": (3, 4)}.get(name, (5, 3))
    a, t = rng.standard_normal(shape), rng.standard_normal(shape)
    _, mine = jg.func.jvp(_fns(L)[name], (jg.tensor(a),), (jg.tensor(t),))
    _, theirs = torch.func.jvp(_fns(TL)[name], (torch.tensor(a),), (torch.tensor(t),))
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for x, y in zip(mine, theirs):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-8, atol=1e-10)


_DTYPES = ["float32", "float64", "complex64", "complex128", "int64", "float16"]


@pytest.mark.parametrize("a_dtype", _DTYPES)
@pytest.mark.parametrize("b_dtype", _DTYPES)
def test_solve_triangular_result_has_as_dtype(a_dtype, b_dtype):
    """torch copies B into a result of A's dtype (B of any dtype; complex into real with
    torch's warning); only A's dtype needs a kernel. Before, jitgrad promoted the two."""
    def run(lib):
        a = (lib.eye(3) * 2 + lib.ones(3, 3).tril(-1)).to(getattr(lib, a_dtype))
        b = lib.arange(6.0).reshape(3, 2).to(getattr(lib, b_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                x = lib.linalg.solve_triangular(a, b, upper=False)
            except Exception as e:  # noqa: BLE001 - compared with torch's below
                return type(e).__name__, str(e).replace("jitgrad", "torch")
        return str(x.dtype).split(".")[1], np.asarray(x.numpy()).tolist()

    ours, theirs = run(jg), run(torch)
    assert ours[0] == theirs[0]
    if isinstance(ours[1], str):
        assert ours == theirs
    else:
        np.testing.assert_allclose(np.array(ours[1]), np.array(theirs[1]), rtol=1e-6)


def test_solve_triangular_mixed_dtype_gradients_and_argument_errors():
    """B's gradient comes back in B's dtype; a 1-D B and a missing ``upper`` are torch's
    errors (an IndexError and Python's own text before)."""
    rng = np.random.default_rng(0)
    a_np = np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3)
    b_np = rng.normal(size=(3, 2))
    grads = []
    for lib in (jg, torch):
        a = lib.tensor(a_np, dtype=lib.float32, requires_grad=True)
        b = lib.tensor(b_np, dtype=lib.float64, requires_grad=True)
        x = lib.linalg.solve_triangular(a, b, upper=False, left=True)
        (x ** 2).sum().backward()
        assert x.dtype == lib.float32 and b.grad.dtype == lib.float64
        grads.append((a.grad.numpy(), b.grad.numpy()))
        with pytest.raises(RuntimeError, match=r"^linalg.solve_triangular: The input tensor B "
                           r"must have at least 2 dimensions.$"):
            lib.linalg.solve_triangular(a, b[:, 0], upper=False)
        with pytest.raises(TypeError, match=r'missing 1 required positional arguments: '
                           r'"upper"'):
            lib.linalg.solve_triangular(a, b)
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_batched_cholesky_error_names_the_batch_element():
    """torch's LinAlgError names the first failing matrix of a batch and its first leading
    minor that is not positive-definite (jitgrad gave no batch element, and the smallest
    order over all matrices)."""
    spd = 2 * np.eye(3)
    cases = [np.stack([spd, np.diag([1.0, 1.0, -1.0])]),
             np.stack([[spd, spd], [spd, -np.eye(3)]]),
             np.stack([np.diag([1.0, 1.0, -1.0]), -np.eye(3)]),
             np.diag([1.0, -1.0, 1.0])]
    for arr in cases:
        texts = []
        for lib in (jg, torch):
            with pytest.raises(RuntimeError) as err:
                lib.linalg.cholesky(lib.tensor(arr))
            texts.append(str(err.value))
        assert texts[0] == texts[1]
