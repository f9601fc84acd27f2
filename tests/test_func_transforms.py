"""``jitgrad.func``'s Jacobian transforms (jacrev, jacfwd, hessian, jvp, linearize, vjp,
grad_and_value) and functional_call: our own Jacobian compositions against torch.func, gradcheck
of the results in float64, composition with each other, with vmap and with jit."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.autograd import gradcheck
from jitgrad.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                          linearize, vjp, vmap)
from jitgrad.jit import jit

F64 = jitgrad.float64
rng = np.random.default_rng(0)
D = 4
W_NP, B_NP, X_NP = rng.standard_normal((D, D)), rng.standard_normal(D), rng.standard_normal(D)
XS_NP = rng.standard_normal((3, D))


def predict(weight, bias, x):
    """Our test map R^D -> R^D: a tanh layer with a half-strength skip connection."""
    return F.linear(x, weight, bias).tanh() + 0.5 * x


def _t(a, rg=False):
    return jitgrad.tensor(a, dtype=F64, requires_grad=rg)


def _numeric_jacobian(f, x, eps=1e-6):
    x = x.numpy()
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = eps
        cols.append((f(_t(x + d)).numpy() - f(_t(x - d)).numpy()) / (2 * eps))
    out_shape = np.asarray(f(_t(x)).numpy()).shape
    return np.stack(cols, -1).reshape(out_shape + x.shape)


# ---------------------------------------------------------------------- values


@pytest.mark.parametrize("transform", [jacrev, jacfwd])
def test_jacobian_matches_finite_differences(transform):
    w, b, x = _t(W_NP), _t(B_NP), _t(X_NP)
    jac = transform(predict, argnums=2)(w, b, x)
    want = _numeric_jacobian(lambda x: predict(w, b, x), x)
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-6, atol=1e-8)


def test_jacrev_and_jacfwd_over_several_argnums_and_outputs():
    w, b, x = _t(W_NP), _t(B_NP), _t(X_NP)

    def f(w, b, x):
        y = predict(w, b, x)
        return {"y": y, "s": y.sum()}

    r = jacrev(f, argnums=(0, 1))(w, b, x)
    fw = jacfwd(f, argnums=(0, 1))(w, b, x)
    assert tuple(r["y"][0].shape) == (D, D, D) and tuple(r["y"][1].shape) == (D, D)
    assert tuple(r["s"][0].shape) == (D, D) and tuple(r["s"][1].shape) == (D,)
    for k in ("y", "s"):
        for i in range(2):
            np.testing.assert_allclose(r[k][i].numpy(), fw[k][i].numpy(), rtol=1e-10,
                                       atol=1e-12)


def test_hessian_and_the_jacobian_compositions_agree():
    x = _t(X_NP)

    def f(x):
        return (x.sin() * x.exp()).sum()

    want = np.diag(2 * np.cos(X_NP) * np.exp(X_NP))
    for h in (hessian(f), jacrev(jacrev(f)), jacfwd(jacrev(f)), jacrev(jacfwd(f)),
              jacfwd(jacfwd(f))):
        np.testing.assert_allclose(h(x).numpy(), want, rtol=1e-10, atol=1e-12)


def test_jvp_hvp_and_linearize():
    x, t = _t(X_NP), _t(XS_NP[0])
    out, tan = jvp(lambda x: x.sin() * 2, (x,), (t,))
    np.testing.assert_allclose(out.numpy(), np.sin(X_NP) * 2)
    np.testing.assert_allclose(tan.numpy(), 2 * np.cos(X_NP) * XS_NP[0], rtol=1e-12)
    # hvp = jvp of grad (forward-over-reverse)
    f = lambda x: (x.sin() * x.exp()).sum()  # noqa: E731
    _, hv = jvp(grad(f), (x,), (t,))
    np.testing.assert_allclose(hv.numpy(), 2 * np.cos(X_NP) * np.exp(X_NP) * XS_NP[0],
                               rtol=1e-10)
    out, jvp_fn = linearize(lambda x: x.exp(), x)
    for row in XS_NP:  # callable many times
        np.testing.assert_allclose(jvp_fn(_t(row)).numpy(), np.exp(X_NP) * row, rtol=1e-12)
    out, tan, aux = jvp(lambda x: (x * 3, x.sum()), (x,), (t,), has_aux=True)
    np.testing.assert_allclose(aux.numpy(), X_NP.sum())


def test_vjp_fn_is_callable_many_times_and_grad_and_value():
    x = _t(X_NP)
    out, fn = vjp(lambda x: x.exp(), x)
    for row in XS_NP:
        (g,) = fn(_t(row))
        np.testing.assert_allclose(g.numpy(), np.exp(X_NP) * row, rtol=1e-12)
    g, (value, aux) = grad_and_value(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(x)
    np.testing.assert_allclose(g.numpy(), 2 * X_NP)
    np.testing.assert_allclose(value.numpy(), (X_NP ** 2).sum())
    np.testing.assert_allclose(aux.numpy(), X_NP.mean())


def test_per_sample_jacobians_vmap_of_jacrev():
    w, b, xs = _t(W_NP), _t(B_NP), _t(XS_NP)
    for transform in (jacrev, jacfwd):
        got = vmap(transform(predict, argnums=2), in_dims=(None, None, 0))(w, b, xs)
        want = np.stack([transform(predict, argnums=2)(w, b, xs[i]).numpy() for i in range(3)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_jacobians_under_jit():
    w, b, x = _t(W_NP), _t(B_NP), _t(X_NP)
    for transform in (jacrev, jacfwd):
        f = jit(transform(predict, argnums=2))
        np.testing.assert_allclose(f(w, b, x).numpy(),
                                   transform(predict, argnums=2)(w, b, x).numpy(), rtol=1e-10)
    h = jit(hessian(lambda x: (x.sin() * x.exp()).sum()))
    np.testing.assert_allclose(h(x).numpy(), np.diag(2 * np.cos(X_NP) * np.exp(X_NP)),
                               rtol=1e-10, atol=1e-12)


def test_jacrev_chunk_size_and_has_aux():
    x = _t(X_NP)
    jac, aux = jacrev(lambda x: (x.exp(), x.sum()), has_aux=True, chunk_size=3)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.exp(X_NP)), rtol=1e-12)
    np.testing.assert_allclose(aux.numpy(), X_NP.sum())
    jac, aux = jacfwd(lambda x: (x.exp(), x.sum()), has_aux=True)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.exp(X_NP)), rtol=1e-12)


def test_errors_have_torchs_texts():
    x = _t(X_NP)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(jitgrad.sin, x, (x,))
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        jvp(jitgrad.sin, (x,), (x, x))
    with pytest.raises(RuntimeError, match=r"Got argnum=2, but only 1 positional inputs"):
        jacrev(jitgrad.sin, argnums=2)(x)
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, 0\)"):
        jacrev(jitgrad.sin, argnums=(0, 0))(x)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        jacfwd(jitgrad.sin, argnums=1.5)(x)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        jvp(lambda x: x, (x,), (x,), has_aux=True)


# ---------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("transform", [jacrev, jacfwd])
def test_gradcheck_of_jacobian_results(transform):
    w, b = _t(W_NP), _t(B_NP)
    x = _t(X_NP, rg=True)
    assert gradcheck(lambda x: transform(predict, argnums=2)(w, b, x), (x,))
    wr = _t(W_NP, rg=True)
    assert gradcheck(lambda w: transform(predict, argnums=0)(w, b, _t(X_NP)), (wr,))


# ---------------------------------------------------------------------- functional_call


def test_functional_call_and_per_sample_grads():
    jitgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)).to(F64)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = jitgrad.randn(6, 3, dtype=F64)
    y = jitgrad.tensor([0, 1, 1, 0, 1, 0])
    np.testing.assert_allclose(functional_call(model, params, (x,)).numpy(),
                               model(x).detach().numpy())
    zeroed = {k: jitgrad.zeros_like(v) for k, v in params.items()}
    assert np.all(functional_call(model, zeroed, x).numpy() == 0)
    assert model[0].weight.abs().sum().item() > 0  # the module's own parameters are back

    def loss(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    got = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(6):
        want = grad(loss)(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(got[k][i].numpy(), want[k].numpy(), rtol=1e-10,
                                       atol=1e-12)
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Sequential:\n"
                                           "\tUnexpected key\\(s\\): 'foo'"):
        functional_call(model, {**params, "foo": x}, (x,), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(model, (params, params), (x,))


# ---------------------------------------------------------------------- against torch.func


def _jacobian_table(fn, layer, scalar, w, b, x, xs):
    """Every Jacobian composition we compare, built from the transform namespace ``fn``
    (jitgrad.func or torch.func) so both libraries run the identical recipe."""
    wrt_v = {"jacrev": fn.jacrev(layer, argnums=2), "jacfwd": fn.jacfwd(layer, argnums=2),
             "hessian": fn.hessian(layer, argnums=2)}
    table = {name: t(w, b, x) for name, t in wrt_v.items()}
    for name in ("jacrev", "hessian"):  # one Jacobian per row of xs
        table[f"batched_{name}"] = fn.vmap(wrt_v[name], in_dims=(None, None, 0))(w, b, xs)
    d_w, d_b = fn.jacrev(layer, argnums=(0, 1))(w, b, x)
    table["jacrev_w"], table["jacrev_b"] = d_w, d_b
    # Hessian-vector product, forward-over-reverse
    table["hvp"] = fn.jvp(fn.grad(scalar), (x,), (xs[0],))[1]
    return table


def test_jacobian_compositions_match_torch_func():
    torch = pytest.importorskip("torch")
    import torch.func as tf

    def make_maps(lin):
        def layer(weight, bias, v):
            return lin(v, weight, bias).tanh() + 0.5 * v

        def scalar(v):
            return (v.exp() * v.cos()).sum()

        return layer, scalar

    ours = _jacobian_table(jitgrad.func, *make_maps(F.linear), _t(W_NP), _t(B_NP), _t(X_NP),
                           _t(XS_NP))
    theirs = _jacobian_table(tf, *make_maps(torch.nn.functional.linear),
                             *(torch.tensor(a) for a in (W_NP, B_NP, X_NP, XS_NP)))
    assert list(ours) == list(theirs) and len(ours) == 8
    for name in ours:
        np.testing.assert_allclose(ours[name].numpy(), theirs[name].numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_functional_call_ties_weights_and_replaces_buffers():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight
            self.register_buffer("scale", jitgrad.ones(2))

        def forward(self, x):
            return self.b(self.a(x)) * self.scale

    m = Tied()
    x, eye = jitgrad.ones(2), jitgrad.eye(2)
    w = m.a.weight.detach().numpy()
    np.testing.assert_allclose(functional_call(m, {"a.weight": eye}, (x,)).numpy(), [1, 1])
    untied = functional_call(m, {"a.weight": eye}, (x,), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), w @ np.ones(2), rtol=1e-6)
    out = functional_call(m, {"a.weight": eye, "scale": jitgrad.full((2,), 3.0)}, x)
    np.testing.assert_allclose(out.numpy(), [3, 3])
    assert m.b.weight is m.a.weight and np.all(m.scale.numpy() == 1)
