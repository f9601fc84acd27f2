"""The nodes torch records on random draws from parameters that require grad: ``poisson`` and
``bernoulli`` give a zero gradient (``PoissonBackward0``, ``BernoulliBackward0``), ``binomial``
and ``bernoulli(x, p)`` torch's ``NotImplemented`` node whose backward raises; nothing is
recorded without grad, and the draws are torch's."""

import pytest

import jitgrad


def test_zero_gradient_nodes():
    rates = jitgrad.tensor([2.0, 3.0], requires_grad=True)
    y = jitgrad.poisson(rates)
    assert y.grad_fn.name() == "PoissonBackward0"
    assert jitgrad.autograd.grad((y * 2).sum(), rates)[0].tolist() == [0.0, 0.0]
    probs = jitgrad.tensor([0.3, 0.5], requires_grad=True)
    y = jitgrad.bernoulli(probs)
    assert y.grad_fn.name() == "BernoulliBackward0" and y.dtype == probs.dtype
    assert jitgrad.autograd.grad(y.sum(), probs)[0].tolist() == [0.0, 0.0]
    assert jitgrad.poisson(rates.detach()).grad_fn is None
    with jitgrad.no_grad():
        assert not jitgrad.poisson(rates).requires_grad


@pytest.mark.parametrize("call,aten", [
    (lambda c, p: jitgrad.binomial(c, p), "binomial"),
    (lambda c, p: jitgrad.bernoulli(c / 10, 0.5), "bernoulli")])
def test_no_derivative_nodes(call, aten):
    count = jitgrad.tensor([5.0, 6.0], requires_grad=True)
    y = call(count, jitgrad.tensor([0.3, 0.4]))
    assert y.requires_grad and type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match=f"derivative for aten::{aten} is not implemented"):
        jitgrad.autograd.grad(y.sum(), count)


def test_draws_and_nodes_match_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        r = lib.tensor([2.0, 3.0, 7.5], requires_grad=True)
        p = lib.tensor([0.3, 0.5, 0.9], requires_grad=True)
        out = [lib.poisson(r), lib.bernoulli(p), lib.binomial(r.detach() * 2, p.detach())]
        results.append([(o.tolist(), type(o.grad_fn).__name__ if o.grad_fn else None)
                        for o in out])
    assert results[0] == results[1]
