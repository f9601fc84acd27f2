"""torch.func transforms over functions that close over tensors requiring grad (a module's
parameters, an enclosing transform's primal): the results keep their graph to those tensors,
as torch.func's levels keep it, so ``.backward()`` and enclosing transforms differentiate
through ``grad``/``jacrev``/``jacfwd``/``hessian``/``jvp``/``vjp``; a transform's own fresh
primals stay private (nothing outside sees their graph)."""

import numpy as np
import pytest

import jitgrad
from jitgrad.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
from test_user_scripts_b27 import _run_torch
from test_user_scripts_c27 import _run


def test_nested_grad_through_a_closed_over_primal():
    x = jitgrad.tensor(3.0)
    # d/dw of d/dx (w x^2) = d/dw (2 w x) = 2 x
    assert float(grad(lambda w: grad(lambda x_: w * x_ ** 2)(x))(jitgrad.tensor(2.0))) == 6.0
    # the inner gradient's own fresh primal is private: the result needs no grad
    out = grad(lambda w: grad(lambda x_: w * x_ ** 2)(x))(jitgrad.tensor(2.0))
    assert not out.requires_grad
    # third order, alternating closures
    f = lambda a: grad(lambda b: grad(lambda c: a * b * c ** 3)(jitgrad.tensor(2.0)))(a)  # noqa: E731
    assert float(grad(f)(jitgrad.tensor(1.5))) == pytest.approx(2 * 3 * 4.0)


@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd", "hessian", "vmap_grad"])
def test_gradients_reach_a_closed_over_leaf(transform):
    w = jitgrad.tensor([1.0, 2.0], dtype=jitgrad.float64, requires_grad=True)
    x = jitgrad.tensor([0.3, 0.4], dtype=jitgrad.float64)

    def f(v):
        return (w * v.sin()).sum()

    make = {"grad": lambda: grad(f)(x), "jacrev": lambda: jacrev(f)(x),
            "jacfwd": lambda: jacfwd(f)(x), "hessian": lambda: hessian(f)(x),
            "vmap_grad": lambda: vmap(grad(f))(x.expand(3, 2))}[transform]
    out = make()
    assert out.requires_grad
    out.sum().backward()
    # d/dw of sum(d f / dx) = cos(x) for grad/jacrev/jacfwd, -sin(x) for the Hessian's diagonal
    expected = {"hessian": -np.sin(x.numpy()), "vmap_grad": 3 * np.cos(x.numpy())}.get(
        transform, np.cos(x.numpy()))
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)


def test_pure_functions_stay_detached():
    x = jitgrad.tensor([0.3, 0.4])
    assert not grad(lambda v: v.sin().sum())(x).requires_grad
    assert not jacrev(lambda v: v.sin())(x).requires_grad
    out, fn = vjp(lambda v: v.exp(), x)
    assert not out.requires_grad and not fn(jitgrad.ones(2))[0].requires_grad
    _, t = jvp(lambda v: v.exp(), (x,), (jitgrad.ones(2),))
    assert not t.requires_grad


def test_module_parameters_get_gradients_through_a_transform():
    jitgrad.manual_seed(0)
    lin = jitgrad.nn.Linear(3, 2, dtype=jitgrad.float64)
    v = jitgrad.ones(3, dtype=jitgrad.float64)
    gx = grad(lambda u: lin(u).pow(2).sum())(v)  # 2 W^T (W v + b)
    gx.sum().backward()
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    # d/dW sum_j 2 (W^T (W v + b))_j = 2 [(W v + b) 1^T + (W 1) v^T]
    expected = 2 * (np.outer(w @ np.ones(3) + b, np.ones(3)) + np.outer(w @ np.ones(3),
                                                                        np.ones(3)))
    np.testing.assert_allclose(lin.weight.grad.numpy(), expected, rtol=1e-12)


def test_matches_torch_func():
    ours = _run("func_closures_probe")["results"]
    assert len(ours) == 15 and ours[1] == "tensor(6.)" and ours[-1] == "tensor(6.)"
    assert ours == _run_torch("func_closures_probe")["results"]
