"""``jitgrad.func``: grad, value_and_grad and vjp, eagerly and composed with ``jit``."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.func import grad, value_and_grad, vjp
from jitgrad.jit import jit

F64 = jitgrad.float64


def f(x):
    return (x.sin() * x).sum()


def df(x):
    return x.sin() + x * x.cos()


def d2f(x):
    return 2 * x.cos() - x * x.sin()


def _x(n=4):
    return jitgrad.tensor(np.random.default_rng(0).uniform(-2, 2, n), dtype=F64)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("wrap", [lambda g: g, jit], ids=["eager", "jit"])
def test_grad_and_second_derivative(wrap):
    x = _x()
    g = wrap(grad(f))(x)
    _close(g, df(x))
    assert not g.requires_grad
    _close(wrap(grad(lambda x: grad(f)(x).sum()))(x), d2f(x))


@pytest.mark.parametrize("wrap", [lambda g: g, jit], ids=["eager", "jit"])
def test_value_and_grad_argnums_and_aux(wrap):
    x, y = _x(), _x(4) * 0.5

    def h(x, y, scale):
        loss = (x * y).sum() * scale
        return loss, {"y2": y * 2}

    (value, aux), (gx, gy) = wrap(value_and_grad(h, argnums=(0, 1), has_aux=True))(x, y, 3.0)
    _close(value, (x * y).sum() * 3)
    _close(aux["y2"], y * 2)
    _close(gx, y * 3)
    _close(gy, x * 3)
    gy_only = wrap(grad(lambda x, y: (x * y * y).sum(), argnums=1))(x, y)
    _close(gy_only, 2 * x * y)
    g, aux = wrap(grad(h, has_aux=True))(x, y, 1.0)
    _close(g, y)


@pytest.mark.parametrize("wrap", [lambda g: g, jit], ids=["eager", "jit"])
def test_vjp(wrap):
    x, w = _x(3), _x(3)

    def run(x, w, ct):
        out, fn = vjp(lambda a, b: (a * b, a.exp()), x, w)
        gx, gw = fn((ct, ct))
        return out[0], gx, gw

    ct = _x(3) + 1
    o, gx, gw = wrap(run)(x, w, ct)
    _close(o, x * w)
    _close(gx, ct * w + ct * x.exp())
    _close(gw, ct * x)


def test_unused_primal_gets_zeros():
    x, y = _x(2), _x(2)
    gx, gy = grad(lambda x, y: x.sum() * 2, argnums=(0, 1))(x, y)
    _close(gy, jitgrad.zeros(2, dtype=F64))
    gx, gy = jit(grad(lambda x, y: x.sum() * 2, argnums=(0, 1)))(x, y)
    _close(gy, jitgrad.zeros(2, dtype=F64))


def test_jit_of_value_and_grad_stages_one_program():
    x = _x()
    vg = jit(value_and_grad(f))
    v, g = vg(x)
    _close(v, f(x))
    _close(g, df(x))
    low = vg.lower(x)
    assert low.backward_ir is None  # forward and gradient are one forward program
    ir = low.forward_ir
    assert "sin primals_1" in ir and "cos primals_1" in ir and ir.count("return") == 1
    v2, g2 = vg(_x() * 2)  # new values reuse the program
    assert vg.cache_info().misses == 1
    _close(g2, df(_x() * 2))


def test_grad_of_closure_over_the_same_tensor_treats_it_as_constant():
    # d/da (a * w).sum() at a = w is w, not 2w: the captured w is a constant.
    w = _x(3)

    def outer(w):
        return grad(lambda a: (a * w).sum())(w)

    _close(outer(w), w)
    _close(jit(outer)(w), w)


def test_grad_through_jit_outputs_and_jit_inputs_requiring_grad():
    x = _x().requires_grad_()
    g = jit(grad(f))(x)  # a differentiable function of x: Hessian-vector products work
    g.sum().backward()
    _close(x.grad, d2f(x.detach()))
    x2 = _x()
    _close(grad(jit(f))(x2), df(x2))
    _close(grad(lambda x: grad(jit(f))(x).sum())(x2), d2f(x2))


def test_grad_ignores_outer_no_grad():
    x = _x()
    with jitgrad.no_grad():
        _close(grad(f)(x), df(x))
        _close(jit(grad(f))(x), df(x))


def test_errors():
    x = _x()
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="argnums"):
        grad(f, argnums=3)(x)
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        grad(f, has_aux=True)(x)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got "):
        vjp(f, 1.0)


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    x = _x(5)
    xt = torch.tensor(x.numpy())

    def ft(x):
        return (x.tanh() * x.exp()).sum()

    def fj(x):
        return (x.tanh() * x.exp()).sum()

    np.testing.assert_allclose(jit(grad(fj))(x).numpy(), torch.func.grad(ft)(xt).numpy(),
                               rtol=1e-12)
    h = jit(grad(lambda x: grad(fj)(x).sum()))(x)
    ht = torch.func.grad(lambda x: torch.func.grad(ft)(x).sum())(xt)
    np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-12)
