"""jitgrad.fft against torch.fft: values and dtypes, gradients of real losses of complex
outputs, gradcheck/gradgradcheck in float64 and complex128, forward mode, node names, torch's
error texts, the frequency helpers and shifts. (The opdb records in ``opdb_fft.py`` add the
generic sweeps: NumPy references, gradcheck, torch gradients, jit.)"""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import forward_ad as fwad
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfftn",
       "ihfftn", "hfft2", "ihfft2"]
REAL_ONLY = {"rfft", "ihfft", "rfftn", "rfft2", "ihfftn", "ihfft2"}
KW_1D = [{}, {"norm": "ortho"}, {"norm": "forward"}, {"norm": "backward", "n": 5},
         {"n": 13, "norm": "ortho"}, {"dim": 0, "n": 4}, {"n": 1}, {"dim": -2}]
KW_ND = [{}, {"norm": "ortho"}, {"norm": "forward"}, {"s": (5, 7)},
         {"s": (2, 3), "dim": (0, 1), "norm": "ortho"}, {"s": (-1, 9)}, {"dim": (1, 0)},
         {"dim": (0,)}]


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.detach().numpy()


def _cases():
    out = []
    for name in ONE_D + N_D:
        for kw in (KW_1D if name in ONE_D else KW_ND):
            for cplx in (False, True):
                if cplx and name in REAL_ONLY:
                    continue
                out.append(pytest.param(name, kw, cplx, id=f"{name}-{kw}-{'c' if cplx else 'r'}"))
    return out


def _input(rng, cplx, shape=(4, 6)):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if cplx else x


def _loss(lib, out, w):
    """A real loss of the output: |z|^2 + w * Re z + 2 Im z (complex), w * y + y^2 (real)."""
    if out.dtype.is_complex:
        return (out.abs() ** 2).sum() + (out.real * lib.tensor(w)).sum() + 2 * out.imag.sum()
    return (out * lib.tensor(w)).sum() + (out ** 2).sum()


@pytest.mark.parametrize("name,kw,cplx", _cases())
@pytest.mark.parametrize("single", [False, True], ids=["f64", "f32"])
def test_values_and_gradients_match_torch(name, kw, cplx, single):
    rng = np.random.default_rng(0)
    x = _input(rng, cplx)
    if single:
        x = x.astype(np.complex64 if cplx else np.float32)
    jx = jitgrad.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    jo = getattr(jitgrad.fft, name)(jx, **kw)
    to = getattr(torch.fft, name)(tx, **kw)
    assert tuple(jo.shape) == tuple(to.shape)
    assert str(jo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    tol = {"rtol": 1e-4, "atol": 1e-4} if single else {"rtol": 1e-10, "atol": 1e-10}
    np.testing.assert_allclose(_np(jo), _np(to), **tol)
    w = rng.standard_normal(tuple(to.shape))
    _loss(jitgrad, jo, w).backward()
    _loss(torch, to, w).backward()
    np.testing.assert_allclose(_np(jx.grad), _np(tx.grad), **tol)


@pytest.mark.parametrize("name,kw,cplx", [
    ("fft", {}, False), ("fft", {"n": 5}, True), ("ifft", {"norm": "ortho", "n": 3}, True),
    ("ifft", {}, False), ("rfft", {"n": 7}, False), ("irfft", {"n": 7}, True),
    ("irfft", {}, True), ("hfft", {"n": 6}, True), ("hfft", {"norm": "forward"}, True),
    ("ihfft", {"n": 5}, False), ("rfftn", {"s": (3, 5)}, False),
    ("irfftn", {"s": (3, 5)}, True), ("fft2", {"norm": "forward"}, True),
    ("ifftn", {"s": (2, 6), "dim": (1, 0)}, True), ("fftn", {}, False),
    ("hfftn", {"s": (2, 5)}, True), ("ihfftn", {"norm": "ortho"}, False),
    ("hfft2", {}, True), ("ihfft2", {"s": (2, 3)}, False)])
def test_gradcheck_and_gradgradcheck(name, kw, cplx):
    x = jitgrad.tensor(_input(np.random.default_rng(1), cplx, (3, 4)), requires_grad=True)
    f = lambda a: getattr(jitgrad.fft, name)(a, **kw)  # noqa: E731
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.parametrize("name,kw,cplx", [
    ("fft", {"n": 6}, False), ("ifft", {"n": 3}, True), ("rfft", {"n": 5}, False),
    ("irfft", {"n": 5}, True), ("hfft", {}, True), ("ihfft", {}, False),
    ("rfftn", {"s": (4, 5)}, False), ("irfftn", {}, True), ("fft2", {"norm": "ortho"}, True)])
def test_forward_mode_matches_torch(name, kw, cplx):
    rng = np.random.default_rng(2)
    x, v = _input(rng, cplx), _input(rng, cplx)
    with fwad.dual_level():
        out = getattr(jitgrad.fft, name)(fwad.make_dual(jitgrad.tensor(x), jitgrad.tensor(v)),
                                         **kw)
        jt = fwad.unpack_dual(out).tangent
    with torch.autograd.forward_ad.dual_level():
        dual = torch.autograd.forward_ad.make_dual(torch.tensor(x), torch.tensor(v))
        tt = torch.autograd.forward_ad.unpack_dual(getattr(torch.fft, name)(dual, **kw)).tangent
    np.testing.assert_allclose(_np(jt), _np(tt), rtol=1e-10, atol=1e-10)


def test_node_names_match_torch():
    def graph(lib):
        x = lib.randn(4, requires_grad=True)
        z = lib.randn(4, dtype=lib.complex128, requires_grad=True)
        outs = [lib.fft.fft(x, n=3), lib.fft.fft(x, n=6), lib.fft.ifft(x), lib.fft.fft(z),
                lib.fft.hfft(z), lib.fft.ihfft(x), lib.fft.fftn(x), lib.fft.rfft(x),
                lib.fft.irfft(z, n=3), lib.fft.fftshift(x), lib.fft.hfftn(z),
                lib.fft.ihfftn(x)]
        return [(o.grad_fn.name(), [n[0].name().replace("torch::autograd::", "")
                                    for n in o.grad_fn.next_functions if n[0]])
                for o in outs]
    assert graph(jitgrad) == graph(torch)


def test_dtypes_follow_torch():
    for lib in (jitgrad, torch):
        assert str(lib.fft.fft(lib.arange(4)).dtype).endswith("complex64")
        assert str(lib.fft.irfft(lib.arange(4)).dtype).endswith("float32")
        assert str(lib.fft.fft(lib.ones(4, dtype=lib.float64)).dtype).endswith("complex128")
        assert str(lib.fft.hfft(lib.ones(3, dtype=lib.complex64)).dtype).endswith("float32")
    x = np.arange(6)
    np.testing.assert_allclose(jitgrad.fft.rfft(jitgrad.tensor(x)).numpy(),
                               torch.fft.rfft(torch.tensor(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib, x, z: lib.fft.fft(x, norm="bad"),
    lambda lib, x, z: lib.fft.fft(x, n=0),
    lambda lib, x, z: lib.fft.ifft(z, n=-2),
    lambda lib, x, z: lib.fft.rfft(z),
    lambda lib, x, z: lib.fft.ihfft(z),
    lambda lib, x, z: lib.fft.rfftn(z),
    lambda lib, x, z: lib.fft.irfft(z, n=0),
    lambda lib, x, z: lib.fft.irfft(z[..., :1]),
    lambda lib, x, z: lib.fft.fftn(x, dim=(0, 0)),
    lambda lib, x, z: lib.fft.fftn(x, dim=(1, -1)),
    lambda lib, x, z: lib.fft.fftn(x, s=(2, 3, 4)),
    lambda lib, x, z: lib.fft.fftn(x, s=(2,), dim=(0, 1)),
    lambda lib, x, z: lib.fft.rfftn(x, dim=()),
    lambda lib, x, z: lib.fft.irfftn(z, dim=()),
    lambda lib, x, z: lib.fft.fft(x, dim=3),
    lambda lib, x, z: lib.fft.fft(x.half()),
    lambda lib, x, z: lib.fft.fft(x[0, 0]),
    lambda lib, x, z: lib.fft.fftn(x, s=(0, 2)),
    lambda lib, x, z: lib.fft.irfftn(z, s=(2, 0)),
    lambda lib, x, z: lib.fft.hfftn(z, dim=()),
    lambda lib, x, z: lib.fft.ihfftn(x, dim=()),
    lambda lib, x, z: lib.fft.ihfft2(z),
], ids=lambda f: "")
def test_errors_match_torch(call):
    rng = np.random.default_rng(3)
    x, z = rng.standard_normal((2, 4)), _input(rng, True, (2, 4))
    with pytest.raises(Exception) as t_err:
        call(torch, torch.tensor(x), torch.tensor(z))
    with pytest.raises(type(t_err.value)) as j_err:
        call(jitgrad, jitgrad.tensor(x), jitgrad.tensor(z))
    assert str(j_err.value) == str(t_err.value)


@pytest.mark.parametrize("n,d", [(1, 1.0), (4, 1.0), (5, 0.5), (8, 0.1)])
def test_fftfreq_and_rfftfreq(n, d):
    for name in ("fftfreq", "rfftfreq"):
        j = getattr(jitgrad.fft, name)(n, d)
        t = getattr(torch.fft, name)(n, d)
        assert j.dtype == jitgrad.float32
        np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-6)
        j64 = getattr(jitgrad.fft, name)(n, d, dtype=jitgrad.float64)
        np.testing.assert_allclose(j64.numpy(), getattr(np.fft, name)(n, d), rtol=1e-12)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1, (), (1, 0)])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_match_torch(name, dim):
    x = np.arange(15.0).reshape(3, 5)
    try:
        t = getattr(torch.fft, name)(torch.tensor(x), dim=dim)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e)):
            getattr(jitgrad.fft, name)(jitgrad.tensor(x), dim=dim)
        return
    j = getattr(jitgrad.fft, name)(jitgrad.tensor(x), dim=dim)
    np.testing.assert_array_equal(j.numpy(), t.numpy())


def test_round_trips_and_out():
    x = jitgrad.randn(3, 10, dtype=jitgrad.float64)
    np.testing.assert_allclose(jitgrad.fft.irfft(jitgrad.fft.rfft(x), n=10).numpy(), x.numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(jitgrad.fft.ifftn(jitgrad.fft.fftn(x)).real.numpy(), x.numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(jitgrad.fft.hfft(jitgrad.fft.ihfft(x), n=10).numpy(), x.numpy(),
                               atol=1e-12)
    out = jitgrad.empty(3, 6, dtype=jitgrad.complex128)
    res = jitgrad.fft.rfft(x, out=out)
    assert res is out
    np.testing.assert_allclose(out.numpy(), np.fft.rfft(x.numpy()), atol=1e-12)


def test_jit_fft_loss_and_gradient():
    def f(x):
        return (jitgrad.fft.rfft(x, n=12, norm="ortho").abs() ** 2).sum()

    x = jitgrad.randn(2, 9, dtype=jitgrad.float64, requires_grad=True)
    g_eager = jitgrad.autograd.grad(f(x), x)[0]
    compiled = jitgrad.jit(f)
    loss = compiled(x)
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(loss.item(), f(x).item(), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), g_eager.numpy(), atol=1e-12)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (torch.fft.rfft(tx, n=12, norm="ortho").abs() ** 2).sum().backward()
    np.testing.assert_allclose(g_eager.numpy(), tx.grad.numpy(), atol=1e-12)


def test_vmap_and_grad_match_torch():
    import warnings

    x = np.random.default_rng(4).standard_normal((5, 3, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a batching rule each (no per-sample loop)
        j = jitgrad.func.vmap(lambda t: jitgrad.fft.rfft(t, n=10))(jitgrad.tensor(x))
        jz = jitgrad.func.vmap(lambda t: jitgrad.fft.irfftn(jitgrad.fft.fft(t), dim=(0, 1)))(
            jitgrad.tensor(x))
        jg = jitgrad.func.vmap(jitgrad.func.grad(
            lambda t: (jitgrad.fft.rfft(t, n=12).abs() ** 2).sum()))(jitgrad.tensor(x[:, 0]))
    np.testing.assert_allclose(j.numpy(), np.fft.rfft(x, n=10), atol=1e-12)
    tz = torch.func.vmap(lambda t: torch.fft.irfftn(torch.fft.fft(t), dim=(0, 1)))(
        torch.tensor(x))
    np.testing.assert_allclose(jz.numpy(), tz.numpy(), atol=1e-12)
    tg = torch.func.vmap(torch.func.grad(
        lambda t: (torch.fft.rfft(t, n=12).abs() ** 2).sum()))(torch.tensor(x[:, 0]))
    np.testing.assert_allclose(jg.numpy(), tg.numpy(), atol=1e-12)


@pytest.mark.parametrize("dim", [(3,), (2,), (1, 3), (0, 1, 2), (3, 1), (0, 2, 3)])
def test_two_sided_r2c_from_hermitian_symmetry(dim):
    """The non-onesided r2c fills the second half from the onesided one: NumPy's full
    transform of the same real signal, odd and even sizes, over several dims."""
    from jitgrad.ops.fft_ops import FFT_R2C
    from jitgrad.ops.registry import apply

    x = np.random.default_rng(5).standard_normal((3, 5, 6, 7))
    for norm in (0, 1, 2):
        out = apply(FFT_R2C, jitgrad.tensor(x), dim=dim, norm=norm, onesided=False)
        n = np.prod([x.shape[d] for d in dim])
        scale = (1.0, 1 / np.sqrt(n), 1 / n)[norm]
        np.testing.assert_allclose(out.numpy(), np.fft.fftn(x, axes=dim) * scale, atol=1e-12)
