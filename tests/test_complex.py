"""Complex autograd with torch's conjugate Wirtinger convention.

For a real loss L of a complex z, the gradient is dL/dRe(z) + i dL/dIm(z) (torch's
convention: the conjugate Wirtinger derivative times 2). Checked against finite differences
always, against torch when installed, and with gradcheck on complex inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import Function, gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _c(r, *shape):
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


CASES = [
    ("add_sub_neg", lambda L, a, b: -(a + b) - a * 2 + (3 - b), [(3,), (3,)]),
    ("mul", lambda L, a, b: a * b * (1 - 2j), [(3,), (3,)]),
    ("div", lambda L, a, b: a / b + 2 / a, [(3,), (3,)]),
    ("exp_log", lambda L, a: a.exp() + a.log(), [(3,)]),
    ("sqrt_rsqrt", lambda L, a: a.sqrt() + a.rsqrt(), [(3,)]),
    ("trig", lambda L, a: a.sin() + a.cos() + a.tan() + a.tanh(), [(3,)]),
    ("sigmoid", lambda L, a: a.sigmoid(), [(3,)]),
    ("reciprocal", lambda L, a: a.reciprocal(), [(3,)]),
    ("expm1_log1p", lambda L, a: a.expm1() + a.log1p(), [(3,)]),
    ("pow_scalar", lambda L, a: a ** 2 + a ** 3.5, [(3,)]),
    ("pow_tensor", lambda L, a, b: a ** b, [(3,), (3,)]),
    ("rpow", lambda L, a: 2 ** a, [(3,)]),
    ("conj", lambda L, a: a.conj() * a.exp(), [(3,)]),
    ("abs", lambda L, a: a.abs(), [(3,)]),
    ("real_imag", lambda L, a: a.real * 2 + a.imag * 3 * a.real, [(3,)]),
    ("sgn", lambda L, a: a.sgn() * 2, [(3,)]),
    ("sum_mean", lambda L, a: a.sum(0) + a.mean(0) * 2 + a.mean(), [(3, 4)]),
    ("prod", lambda L, a: a.prod(1) + a.prod(), [(3, 4)]),
    ("mm", lambda L, a, b: a.mm(b), [(3, 4), (4, 2)]),
    ("bmm", lambda L, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 2)]),
    ("mv", lambda L, a, b: a.mv(b), [(3, 4), (4,)]),
    ("dot", lambda L, a, b: a.dot(b), [(4,), (4,)]),
    ("matmul", lambda L, a, b: a @ b, [(2, 3, 4), (4, 2)]),
    ("outer", lambda L, a, b: L.outer(a, b), [(3,), (4,)]),
    ("addmm", lambda L, a, b, c: L.addmm(a, b, c), [(3, 2), (3, 4), (4, 2)]),
    ("movement", lambda L, a: a.t().reshape(2, 6)[:, 1:].unsqueeze(0).expand(2, 2, 5),
     [(3, 4)]),
    ("cat_stack_index", lambda L, a, b: L.cat([a, b]).sum(0) + L.stack([a[0], b[1]]).sum(0)
     + a[L.tensor([0, 2, 2])].sum(0), [(3, 4), (2, 4)]),
    ("var_std", lambda L, a: a.var(1) + a.std(0).sum(), [(3, 4)]),
    ("where", lambda L, a, b: L.where(a.real > 0, a, b), [(3,), (3,)]),
    ("real_to_complex", lambda L, a: a.real.to(L.complex128) * a, [(3,)]),
    ("mixed_real", lambda L, a, b: a * b.abs(), [(3,), (3,)]),
]
IDS = [c[0] for c in CASES]


def _grads(lib, f, xs, grad_out_seed=None):
    """Gradients of f at xs: w.r.t. a real loss |f|^2 summed, or for the given random
    cotangent (complex for a complex output)."""
    ts = [lib.tensor(x, requires_grad=True) for x in xs]
    out = f(lib, *ts)
    if grad_out_seed is None:
        loss = (out * out.conj()).real.sum() if out.is_complex() else (out * out).sum()
        return [np.asarray(g.detach()) for g in lib.autograd.grad(loss, ts)], out.dtype
    r = np.random.default_rng(grad_out_seed)
    g = _c(r, *out.shape) if out.is_complex() else r.standard_normal(tuple(out.shape))
    return [np.asarray(g.detach()) for g in lib.autograd.grad(out, ts, lib.tensor(g))], \
        out.dtype


def _loss_np(f, xs):
    out = f(jitgrad, *[jitgrad.tensor(x) for x in xs]).numpy()
    return float(np.sum(np.abs(out) ** 2))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_real_loss_gradient_vs_finite_differences(name, f, shapes):
    r = np.random.default_rng(3)
    xs = [_c(r, *s) for s in shapes]
    grads, _ = _grads(jitgrad, f, xs)
    eps = 1e-6
    for k, x in enumerate(xs):
        fd = np.zeros(x.shape, dtype=complex)
        for idx in np.ndindex(x.shape):
            for unit in (1, 1j):
                d = np.zeros(x.shape, dtype=complex)
                d[idx] = eps * unit
                plus = _loss_np(f, xs[:k] + [x + d] + xs[k + 1:])
                minus = _loss_np(f, xs[:k] + [x - d] + xs[k + 1:])
                fd[idx] += unit * (plus - minus) / (2 * eps)  # dL/dRe + i dL/dIm
        assert grads[k].dtype == np.complex128
        np.testing.assert_allclose(grads[k], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
@pytest.mark.parametrize("seed", [None, 5], ids=["real_loss", "grad_output"])
def test_gradients_vs_torch(name, f, shapes, seed):
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(4)
    xs = [_c(r, *s) for s in shapes]
    ours, our_dtype = _grads(jitgrad, f, xs, seed)
    theirs, their_dtype = _grads(torch, f, xs, seed)
    assert str(our_dtype).split(".")[-1] == str(their_dtype).split(".")[-1]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_node_names_vs_torch():
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(6)
    for name, f, shapes in CASES:
        xs = [_c(r, *s) for s in shapes]
        ours = f(jitgrad, *[jitgrad.tensor(x, requires_grad=True) for x in xs]).grad_fn.name()
        theirs = f(torch, *[torch.tensor(x, requires_grad=True) for x in xs]).grad_fn.name()
        assert ours == theirs, name


def test_complex64_and_real_inputs():
    x = jitgrad.tensor(np.array([1 + 2j, -0.5 + 1j], dtype=np.complex64), requires_grad=True)
    y = (x * x.conj()).real.sum()
    y.backward()
    assert x.grad.dtype is jitgrad.complex64
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    # a real leaf feeding a complex computation gets a real gradient (the real part)
    w = jitgrad.tensor([0.5, -2.0], dtype=jitgrad.float64, requires_grad=True)
    z = (w * jitgrad.tensor([1 + 1j, 2 - 1j])).abs().sum()
    z.backward()
    assert w.grad.dtype is jitgrad.float64
    np.testing.assert_allclose(w.grad.numpy(), np.sign([0.5, -2.0]) * np.abs([1 + 1j, 2 - 1j]))


def test_abs_and_sgn_at_zero():
    x = jitgrad.tensor([0j, 3 + 4j], dtype=jitgrad.complex128, requires_grad=True)
    (g_abs,) = jitgrad.autograd.grad(x.abs().sum(), x)
    np.testing.assert_allclose(g_abs.numpy(), [0, 0.6 + 0.8j])
    (g_sgn,) = jitgrad.autograd.grad(x.sgn(), x, jitgrad.tensor([1 + 1j, 1j],
                                                                 dtype=jitgrad.complex128))
    # at z = 3+4i: (g - sgn^2 conj(g)) / (2|z|) with g = i, sgn = (3+4i)/5
    s = (3 + 4j) / 5
    np.testing.assert_allclose(g_sgn.numpy(), [0, (1j - s * s * -1j) / 10])
    assert x.abs().dtype is jitgrad.float64
    assert jitgrad.tensor([-1.5, 2.0]).abs().dtype is jitgrad.float32


def test_implicit_grad_of_complex_scalar_raises():
    x = jitgrad.tensor([1 + 1j], requires_grad=True)
    assert x.dtype is jitgrad.complex64  # Python complex numbers make the default complex dtype
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar "
                                           "outputs but got jitgrad.complex64"):
        x.sum().backward()


# ---------------------------------------------------------------- gradcheck with complex inputs


@pytest.mark.parametrize("name,f,shapes", [c for c in CASES if c[0] not in ("where",)],
                         ids=[i for i in IDS if i != "where"])
@pytest.mark.parametrize("fast_mode", [False, True], ids=["slow", "fast"])
def test_gradcheck_complex(name, f, shapes, fast_mode):
    r = np.random.default_rng(8)
    xs = tuple(jitgrad.tensor(_c(r, *s), requires_grad=True) for s in shapes)
    assert gradcheck(lambda *a: f(jitgrad, *a), xs, fast_mode=fast_mode, check_forward_ad=True)


def test_gradgradcheck_complex():
    r = np.random.default_rng(9)
    a = jitgrad.tensor(_c(r, 3, 2), requires_grad=True)
    b = jitgrad.tensor(_c(r, 2, 2), requires_grad=True)
    assert gradgradcheck(lambda u, v: u.mm(v).exp() * u.sum(1, keepdim=True), (a, b))
    assert gradgradcheck(lambda u, v: (u.mm(v) * 0.3).sin() / (v[0] + 3), (a, b))
    assert gradgradcheck(lambda u, v: u.abs() * u.real + u.sgn() * v[1], (a, b))


class WrongConj(Function):
    """z * w with the backward missing the conjugates that torch's convention needs."""

    @staticmethod
    def forward(ctx, z, w):
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g * w, g * z


class RightConj(WrongConj):
    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g * w.conj(), g * z.conj()


def test_gradcheck_catches_a_missing_conj():
    r = np.random.default_rng(10)
    z = jitgrad.tensor(_c(r, 3), requires_grad=True)
    w = jitgrad.tensor(_c(r, 3), requires_grad=True)
    assert gradcheck(RightConj.apply, (z, w))
    assert not gradcheck(WrongConj.apply, (z, w), raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradcheck(WrongConj.apply, (z, w))
