"""A Python number operand of a differentiable op, as torch treats it: saved as a wrapped
0-dim tensor where the backward needs it (``(x * 2).grad_fn._saved_other`` is ``tensor(2)``),
and so freed by a backward like any saved tensor; add/sub's ``alpha`` stays a number."""

import numpy as np
import pytest

import jitgrad as jg

CASES = {
    "mul": lambda m, x: x * 2, "rmul": lambda m, x: 2 * x, "div": lambda m, x: x / 2,
    "rdiv": lambda m, x: 2 / x, "true_divide": lambda m, x: m.true_divide(x, 3),
    "mul_method": lambda m, x: x.mul(3), "mul_true": lambda m, x: x * True,
    "add": lambda m, x: x + 2, "rsub": lambda m, x: 2 - x, "sub_alpha": lambda m, x: m.sub(
        x, 2, alpha=3),
    "add_alpha": lambda m, x: m.add(x, x, alpha=3), "sub_tensor_alpha": lambda m, x: m.sub(
        x, x * x.detach(), alpha=-2.5),
    "pow": lambda m, x: x ** 2.5, "rpow": lambda m, x: 2 ** x, "copysign": lambda m, x:
        m.copysign(x, -1.0),
    "xlogy": lambda m, x: m.xlogy(x, 2.0), "where": lambda m, x: m.where(x > 0.5, x, 0.0),
    "clamp": lambda m, x: m.clamp(x, 0.2, 0.8), "lerp": lambda m, x: m.lerp(x, x.detach() * 2,
                                                                             0.3),
}


def _second_backward(m, name):
    x = m.linspace(0.1, 0.9, 3, dtype=m.float64).requires_grad_()
    y = CASES[name](m, x).sum()
    y.backward()
    first = x.grad.clone()
    try:
        y.backward()
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
        return first.tolist(), "raised"
    return first.tolist(), x.grad.tolist()


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_twice_as_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = _second_backward(jg, name), _second_backward(torch, name)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    assert (ours[1] == "raised") == (theirs[1] == "raised"), (ours, theirs)
    if theirs[1] != "raised":
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


def test_backward_twice_through_a_number_product_raises():
    x = jg.ones(3, requires_grad=True)
    y = (x * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x / 4).sum()  # with retain_graph the number stays
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.5, 2.5, 2.5])


@pytest.mark.parametrize("other,dtype", [(2, "int64"), (2.5, "float64"), (True, "bool"),
                                         (1j, "complex128")])
def test_saved_number_is_a_wrapped_tensor_and_is_freed(other, dtype):
    x = jg.ones(3, requires_grad=True)
    y = x * other
    saved = y.grad_fn._saved_other
    assert isinstance(saved, jg.Tensor) and saved.dim() == 0
    assert saved.dtype == getattr(jg, dtype) and saved.item() == other
    y.real.sum().backward() if y.is_complex() else y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn._saved_other


def test_add_alpha_gradient_and_a_second_backward():
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    y = jg.add(x, x, alpha=3).sum()
    y.backward()
    y.backward()  # torch's AddBackward0 keeps alpha as a number: nothing was freed
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0])


def test_jitted_add_alpha_and_bool_subtraction():
    f = jg.jit(lambda a, b: jg.add(a, b, alpha=2.5) - jg.sub(a, b, alpha=-3))
    a, b = jg.tensor([1.0, 2.0]), jg.tensor([3, 4])
    np.testing.assert_allclose(f(a, b).numpy(), (a + 2.5 * b - (a + 3 * b)).numpy())
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        jg.jit(lambda p, q: p - q)(jg.tensor([True]), jg.tensor([False]))
