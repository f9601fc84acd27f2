"""``jitgrad.autograd.functional``: values, return structures and errors, vs torch and by hand."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import functional as F

rng = np.random.default_rng(0)
X = rng.standard_normal(3)
Y = rng.standard_normal((2, 3))
V3 = rng.standard_normal(3)


def _t(a, requires_grad=False):
    return jitgrad.tensor(np.array(a), requires_grad=requires_grad)


def _np(r):
    if isinstance(r, (tuple, list)):
        return tuple(_np(e) for e in r)
    return np.asarray(r.detach())


def _same(a, b):
    """Same nesting of tuples (tuples vs single tensors exactly), shapes and values."""
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b), (type(a), type(b))
        for u, v in zip(a, b):
            _same(u, v)
    else:
        assert not isinstance(a, tuple)
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _args(lib, args):
    out = []
    for a in args:
        if isinstance(a, tuple):
            out.append(tuple(lib.tensor(e) for e in a))
        else:
            out.append(lib.tensor(a))
    return out


def _vs_torch(call, *args):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    ours = call(F, *_args(jitgrad, args))
    theirs = call(TF, *_args(torch, args))
    _same(_np(ours), _np(theirs))
    return ours


def f_scalar(a):
    return (a.exp() * a).sum()


def f_vec(a):
    return a.exp() * a.sin()


def f_two_in(a, b):
    return (a * b).sin()


def f_two_out(a, b):
    return (a * b).sin(), (a + b).sum()


def f_two_in_scalar(a, b):
    return (a * b).sum() ** 2


# ---------------------------------------------------------------- values and structures vs torch

CALLS = [
    ("vjp_scalar", lambda M, a: M.vjp(f_scalar, a), (X,)),
    ("vjp_v", lambda M, a, v: M.vjp(f_vec, a, v), (X, V3)),
    ("vjp_tuple", lambda M, a, b, v: M.vjp(f_two_out, (a, b), v), (X, Y, (Y, np.array(1.5)))),
    ("jvp", lambda M, a, v: M.jvp(f_vec, a, v), (X, V3)),
    ("jvp_tuple", lambda M, a, b, v: M.jvp(f_two_out, (a, b), v), (X, Y, (V3, Y))),
    ("jvp_single_in_tuple", lambda M, a, v: M.jvp(f_vec, (a,), (v,)), (X, V3)),
    ("jacobian", lambda M, a: M.jacobian(f_vec, a), (X,)),
    ("jacobian_tuple_in", lambda M, a, b: M.jacobian(f_two_in, (a, b)), (X, Y)),
    ("jacobian_tuple_out", lambda M, a, b: M.jacobian(f_two_out, (a, b)), (X, Y)),
    ("jacobian_single_in_tuple", lambda M, a: M.jacobian(f_vec, (a,)), (X,)),
    ("jacobian_vectorize", lambda M, a, b: M.jacobian(f_two_out, (a, b), vectorize=True), (X, Y)),
    ("jacobian_fwd", lambda M, a, b: M.jacobian(f_two_out, (a, b), vectorize=True,
                                                strategy="forward-mode"), (X, Y)),
    ("jacobian_fwd_single", lambda M, a: M.jacobian(f_vec, a, vectorize=True,
                                                    strategy="forward-mode"), (X,)),
    ("jacobian_unused", lambda M, a, b: M.jacobian(lambda u, w: u * 2, (a, b)), (X, Y)),
    ("hessian", lambda M, a: M.hessian(f_scalar, a), (X,)),
    ("hessian_tuple", lambda M, a, b: M.hessian(f_two_in_scalar, (a, b)), (X, Y)),
    ("hessian_vectorize", lambda M, a, b: M.hessian(f_two_in_scalar, (a, b), vectorize=True),
     (X, Y)),
    ("hessian_fwd", lambda M, a: M.hessian(f_scalar, a, vectorize=True,
                                           outer_jacobian_strategy="forward-mode"), (X,)),
    ("hessian_fwd_tuple", lambda M, a, b: M.hessian(
        lambda u, w: (u.softmax(0) * w).sum() + (u * u).logsumexp(0), (a, b), vectorize=True,
        outer_jacobian_strategy="forward-mode"), (X, Y)),
    ("hessian_keepdim_scalar", lambda M, a: M.hessian(lambda u: (u ** 3).sum(0, keepdim=True),
                                                      a), (X,)),
    ("hvp", lambda M, a, v: M.hvp(f_scalar, a, v), (X, V3)),
    ("hvp_tuple", lambda M, a, b, v: M.hvp(f_two_in_scalar, (a, b), v), (X, Y, (V3, Y))),
    ("vhp", lambda M, a, v: M.vhp(f_scalar, a, v), (X, V3)),
    ("vhp_tuple", lambda M, a, b, v: M.vhp(f_two_in_scalar, (a, b), v), (X, Y, (V3, Y))),
    ("hvp_scalar_input", lambda M, a: M.hvp(lambda u: u.exp().sum(), a), (np.array(0.3),)),
]


@pytest.mark.parametrize("call,args", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_vs_torch(call, args):
    _vs_torch(call, *args)


# ---------------------------------------------------------------- values by hand (no torch)


def test_values_by_hand():
    x, v = _t(X), _t(V3)
    e, s, c = np.exp(X), np.sin(X), np.cos(X)
    d_vec = e * s + e * c  # derivative of f_vec (diagonal Jacobian)
    out, g = F.vjp(f_vec, x, v)
    np.testing.assert_allclose(out.numpy(), e * s)
    np.testing.assert_allclose(g.numpy(), V3 * d_vec)
    _, jv = F.jvp(f_vec, x, v)
    np.testing.assert_allclose(jv.numpy(), V3 * d_vec)
    for kw in ({}, {"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        np.testing.assert_allclose(F.jacobian(f_vec, x, **kw).numpy(), np.diag(d_vec))
    h_diag = e * X + 2 * e  # d2/dx2 of x e^x
    for kw in ({}, {"vectorize": True},
               {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}):
        h = F.hessian(f_scalar, x, **kw)
        # (torch's forward-over-reverse Hessian keeps a graph; so does ours)
        assert h.requires_grad == ("outer_jacobian_strategy" in kw)
        np.testing.assert_allclose(h.detach().numpy(), np.diag(h_diag))
    np.testing.assert_allclose(F.hvp(f_scalar, x, v)[1].numpy(), h_diag * V3)
    np.testing.assert_allclose(F.vhp(f_scalar, x, v)[1].numpy(), h_diag * V3)
    out, g = F.vjp(f_scalar, x)
    assert out.shape == () and g.shape == (3,)


def test_jacobian_vs_finite_differences():
    x, y = _t(X), _t(Y)
    jac = F.jacobian(f_two_in, (x, y))
    eps = 1e-6
    for k, base in enumerate((X, Y)):
        fd = np.zeros(Y.shape + base.shape)
        for idx in np.ndindex(base.shape):
            d = np.zeros(base.shape)
            d[idx] = eps
            args_p = [X + d, Y] if k == 0 else [X, Y + d]
            args_m = [X - d, Y] if k == 0 else [X, Y - d]
            diff = f_two_in(*map(_t, args_p)).numpy() - f_two_in(*map(_t, args_m)).numpy()
            fd[(...,) + idx] = diff / (2 * eps)
        np.testing.assert_allclose(jac[k].numpy(), fd, rtol=1e-6, atol=1e-8)


def test_inputs_not_modified_and_results_detached():
    x = _t(X, requires_grad=True)
    out, g = F.vjp(f_scalar, x)
    assert not out.requires_grad and not g.requires_grad
    assert x.grad is None
    jac = F.jacobian(f_vec, x)
    assert not jac.requires_grad and jac.grad_fn is None


# ---------------------------------------------------------------- create_graph


def test_create_graph_results_are_differentiable():
    x = _t(X, requires_grad=True)
    _, g = F.vjp(f_scalar, x, create_graph=True)
    assert g.requires_grad
    (gg,) = jitgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp(X) * X + 2 * np.exp(X))
    h = F.hessian(lambda u: (u ** 3).sum(), x, create_graph=True)
    assert h.requires_grad
    (d3,) = jitgrad.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(d3.numpy(), np.full(3, 6.0))
    _, hv = F.hvp(lambda u: (u ** 3).sum(), x, _t(V3), create_graph=True)
    (d,) = jitgrad.autograd.grad(hv.sum(), x)
    np.testing.assert_allclose(d.numpy(), 6 * V3)
    jac = F.jacobian(f_vec, x, create_graph=True, vectorize=True)
    assert jac.requires_grad


def test_create_graph_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    def run(M, lib):
        x = lib.tensor(X, requires_grad=True)
        _, jv = M.jvp(f_vec, x, lib.tensor(V3), create_graph=True)
        _, vh = M.vhp(f_scalar, x, lib.tensor(V3), create_graph=True)
        return lib.autograd.grad((jv * vh).sum(), x)[0]

    np.testing.assert_allclose(run(F, jitgrad).numpy(), run(TF, torch).numpy(), rtol=1e-10)


# ---------------------------------------------------------------- strict mode and errors


def test_strict_errors():
    x, y = _t(X), _t(Y)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function does not "
                                           "require gradients. The outputs must be computed in a "
                                           "differentiable manner from the input when running "
                                           "in strict mode.$"):
        F.vjp(lambda u: u.detach(), x, _t(V3), strict=True)
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        F.vjp(lambda u, w: u * 2, (x, y), _t(V3), strict=True)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        F.jacobian(lambda u, w: u * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian "
                                           "of the user-provided function with respect to input "
                                           "0 is independent of the input"):
        F.hessian(lambda u: u.sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True."):
        F.jacobian(lambda u: u * 2, x, strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        F.jvp(lambda u, w: u * 2, (x, y), (_t(V3), _t(Y)), strict=True)
    # without strict, independent inputs get zeros
    _, g = F.vjp(lambda u, w: u * 2, (x, y), _t(V3))
    np.testing.assert_array_equal(g[1].numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(F.hessian(lambda u: u.sum(), x).numpy(), np.zeros((3, 3)))


def test_strict_errors_vs_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    cases = [
        lambda M, L: M.vjp(lambda u: u.detach(), L.tensor(X), L.tensor(V3), strict=True),
        lambda M, L: M.jacobian(lambda u, w: u * 2, (L.tensor(X), L.tensor(Y)), strict=True),
        lambda M, L: M.hessian(lambda u: u.sum(), L.tensor(X), strict=True),
        lambda M, L: M.hvp(lambda u: u.sum(), L.tensor(X), L.tensor(V3), strict=True),
        lambda M, L: M.vhp(lambda u: (u * u).sum(), L.tensor(X), L.tensor(V3), strict=True,
                           create_graph=True),
        lambda M, L: M.jvp(lambda u, w: u * 2, (L.tensor(X), L.tensor(Y)),
                           (L.tensor(V3), L.tensor(Y)), strict=True),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as ours:
            case(F, jitgrad)
        with pytest.raises(RuntimeError) as theirs:
            case(TF, torch)
        assert str(ours.value) == str(theirs.value)


def _messages(call):
    """The (type, message) our call raises and torch's, for the same call."""
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    out = []
    for M, L in ((F, jitgrad), (TF, torch)):
        try:
            call(M, L)
        except Exception as e:  # noqa: BLE001 - compared below
            out.append((type(e).__name__, str(e).replace("torch.", "").replace("jitgrad.", "")))
        else:
            out.append(None)
    return out


ERRORS = [
    lambda M, L: M.hessian(lambda u: u * 2, L.tensor(X)),
    lambda M, L: M.hessian(lambda u: (u.sum(), u.sum()), L.tensor(X)),
    lambda M, L: M.hvp(lambda u: u * 2, L.tensor(X), L.tensor(V3)),
    lambda M, L: M.vhp(lambda u: (u.sum(),), L.tensor(X), L.tensor(V3)),
    lambda M, L: M.vjp(f_vec, L.tensor(X)),
    lambda M, L: M.jvp(f_vec, L.tensor(X)),
    lambda M, L: M.hvp(f_scalar, L.tensor(X)),
    lambda M, L: M.vjp(f_vec, L.tensor(X), L.tensor(Y)),
    lambda M, L: M.jvp(f_two_in, (L.tensor(X), L.tensor(Y)), (L.tensor(X),)),
    lambda M, L: M.jvp(f_two_in, (L.tensor(X), L.tensor(Y)), (L.tensor(X), L.tensor(X))),
    lambda M, L: M.jacobian(f_vec, [L.tensor(X)]),
    lambda M, L: M.jacobian(f_vec, (L.tensor(X), 3.0)),
    lambda M, L: M.jacobian(f_vec, L.tensor(X), strategy="sideways"),
    lambda M, L: M.jacobian(f_vec, L.tensor(X), strategy="forward-mode"),
    lambda M, L: M.jacobian(f_vec, L.tensor(X), strategy="forward-mode", create_graph=True),
    lambda M, L: M.jacobian(f_vec, L.tensor(X), strategy="forward-mode", vectorize=True,
                            strict=True),
    lambda M, L: M.jacobian(f_vec, L.tensor(X), vectorize=True, strict=True),
    lambda M, L: M.hessian(f_scalar, L.tensor(X), outer_jacobian_strategy="sideways"),
    lambda M, L: M.vjp(lambda u: 3.0, L.tensor(X)),
]


@pytest.mark.parametrize("call", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_vs_torch(call):
    ours, theirs = _messages(call)
    assert theirs is not None
    if theirs[1].startswith("The outputs of the user-provided function given to vjp must be"):
        pass  # a torch.Tensor in torch's text
    assert ours == theirs


def test_hessian_non_scalar_message():
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to "
                                           "hessian should contain a single element$"):
        F.hessian(lambda u: u * 2, _t(X))
    with pytest.raises(RuntimeError, match="^The function given to hessian should return a "
                                           "single Tensor$"):
        F.hessian(lambda u: (u.sum(),), _t(X))
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or "
                                        "a tuple of Tensors but the value at index 1 has type "
                                        "<class 'float'>."):
        F.jacobian(f_vec, (_t(X), 3.0))
