"""Finite-difference gradient checks (float64) of jitgrad.nn.functional, with no torch needed:
an independent central-difference helper, and jitgrad.autograd.gradcheck/gradgradcheck."""

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.nn import functional as F


def arr(t):
    return t.detach().numpy()


def fd_check(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7):
    """Compares backward() of ``sum(fn(*inputs) * v)`` with central differences (float64)."""
    out = fn(*inputs)
    v = jitgrad.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
    diff = [x for x in inputs if isinstance(x, jitgrad.Tensor) and x.requires_grad]
    for x in diff:
        x.grad = None
    (out * v).sum().backward()
    for x in diff:
        data = x.detach().numpy()
        num = np.zeros_like(data)
        for i in np.ndindex(data.shape):
            old = data[i]
            data[i] = old + eps
            hi = (arr(fn(*inputs)) * arr(v)).sum()
            data[i] = old - eps
            lo = (arr(fn(*inputs)) * arr(v)).sum()
            data[i] = old
            num[i] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(arr(x.grad), num, rtol=rtol, atol=atol)


def f64(*shape, requires_grad=True, scale=1.0):
    return (jitgrad.randn(shape, dtype=jitgrad.float64) * scale).requires_grad_(requires_grad)


def _target(*shape):
    return jitgrad.randint(0, 4, shape)


# name -> (function of the differentiable inputs, the inputs' shapes)
CASES = {
    "cross_entropy": (lambda x: F.cross_entropy(x, jitgrad.tensor([0, 3, 1])), [(3, 4)]),
    "cross_entropy_sum_weight_ignore": (lambda x: F.cross_entropy(
        x, jitgrad.tensor([0, 3, 1]), weight=jitgrad.tensor([1.0, 2.0, 0.5, 1.5],
                                                            dtype=jitgrad.float64),
        ignore_index=3, reduction="sum"), [(3, 4)]),
    "cross_entropy_smoothing_none": (lambda x: F.cross_entropy(
        x, jitgrad.tensor([0, 3, 1]), label_smoothing=0.2, reduction="none"), [(3, 4)]),
    "cross_entropy_smoothing_weight_mean": (lambda x: F.cross_entropy(
        x, jitgrad.tensor([0, 3, 1]), label_smoothing=0.2, ignore_index=1,
        weight=jitgrad.tensor([1.0, 2.0, 0.5, 1.5], dtype=jitgrad.float64)), [(3, 4)]),
    "cross_entropy_kdim": (lambda x: F.cross_entropy(
        x, jitgrad.tensor([[0, 3], [2, 1]])), [(2, 4, 2)]),
    "cross_entropy_probs": (lambda x, p: F.cross_entropy(x, p.softmax(1), label_smoothing=0.1),
                            [(3, 4), (3, 4)]),
    "nll_loss": (lambda x: F.nll_loss(x, jitgrad.tensor([0, 3, 1]), reduction="sum"), [(3, 4)]),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [(3, 4), (3, 4)]),
    "mse_loss_none_broadcast": (lambda x, y: F.mse_loss(x, y.expand(3, 4), reduction="none"),
                                [(3, 4), (4,)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
    "gelu": (lambda x: F.gelu(x), [(3, 4)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [(3, 4)]),
    "silu": (lambda x: F.silu(x), [(3, 4)]),
    "log_softmax": (lambda x: F.log_softmax(x, 1), [(3, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(2, 3, 4), (5, 4), (5,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_central_differences(name):
    fn, shapes = CASES[name]
    fd_check(fn, [f64(*s, scale=1.5) for s in shapes])


@pytest.mark.parametrize("name", sorted(CASES))
def test_autograd_gradcheck_and_gradgradcheck(name):
    gradcheck = pytest.importorskip("jitgrad.autograd.gradcheck")
    fn, shapes = CASES[name]
    inputs = tuple(f64(*s, scale=1.5) for s in shapes)
    assert gradcheck.gradcheck(fn, inputs)
    assert gradcheck.gradgradcheck(fn, inputs)


def test_mlp_parameter_gradients_by_central_differences():
    m = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2)).double()
    x = f64(5, 3, requires_grad=False)
    t = jitgrad.tensor([0, 1, 1, 0, 1])
    params = list(m.parameters())
    fd_check(lambda *ps: F.cross_entropy(m(x), t), params)


def test_dropout_gradient_is_the_mask():
    x = f64(4, 5)
    jitgrad.manual_seed(5)
    fd_check(lambda a: (jitgrad.manual_seed(5), F.dropout(a, 0.4))[1], [x])
