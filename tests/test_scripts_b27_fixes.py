"""Regression tests for what the set-B tutorial scripts (tests/scripts/, run by
tests/test_user_scripts_b27.py) found missing or broken, one focused test per fix."""

import numpy as np
import pytest

import jitgrad
from jitgrad.func import functional_call, jacfwd, jacrev, jvp, vjp, vmap


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ------------------------------------------------------------------ torch.func pytrees


def _net():
    jitgrad.manual_seed(0)
    return jitgrad.nn.Linear(3, 2).double()


def test_jacrev_and_jacfwd_of_a_dict_of_parameters():
    net = _net()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = jitgrad.randn(3, dtype=jitgrad.float64)

    def f(p, x):
        return functional_call(net, p, (x,)).tanh()

    for jac in (jacrev, jacfwd):
        j = jac(f)(params, x)
        assert set(j) == {"weight", "bias"}
        assert tuple(j["weight"].shape) == (2, 2, 3) and tuple(j["bias"].shape) == (2, 2)
        # d tanh(Wx+b)_i / dW_jk = (1 - y_i^2) [i == j] x_k
        y = f(params, x)
        expect_w = jitgrad.einsum("i,ij,k->ijk", 1 - y ** 2, jitgrad.eye(2, dtype=y.dtype), x)
        _close(j["weight"], expect_w)
        _close(j["bias"], jitgrad.diag(1 - y ** 2))
        jw, jx = jac(f, argnums=(0, 1))(params, x)
        _close(jw["bias"], j["bias"])
        _close(jx, (1 - y ** 2)[:, None] * params["weight"])


def test_jvp_of_a_dict_of_parameters_equals_the_jacobian_product():
    net = _net()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = jitgrad.randn(3, dtype=jitgrad.float64)
    tangents = {k: jitgrad.randn_like(v) for k, v in params.items()}

    def f(p):
        return functional_call(net, p, (x,)).sin()

    out, tout = jvp(f, (params,), (tangents,))
    j = jacrev(f)(params)
    expect = sum((j[k].flatten(1) @ tangents[k].flatten()) for k in params)
    _close(out, f(params))
    _close(tout, expect)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(f, (params,), (tangents["weight"],))


def test_vmap_over_the_vjp_fn_of_a_vjp_taken_inside_vmap():
    # the Neural Tangent Kernel tutorial: vmap(vmap(get_ntk)) where get_ntk vmaps its vjp_fn
    w = jitgrad.randn(4, 3, dtype=jitgrad.float64)

    def f(w, x):
        return (w @ x).tanh()

    def rows(x):
        _, vjp_fn = vjp(lambda w: f(w, x), w)
        return vmap(vjp_fn)(jitgrad.eye(4, dtype=w.dtype))[0]

    xs = jitgrad.randn(5, 3, dtype=jitgrad.float64)
    got = vmap(rows)(xs)
    expect = jitgrad.stack([jacrev(f)(w, x) for x in xs])
    assert tuple(got.shape) == (5, 4, 4, 3)
    _close(got, expect)
