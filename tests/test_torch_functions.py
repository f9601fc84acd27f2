"""The torch functions of ops/torch_extras.py and ops/arranging.py beyond their opdb records:
argument forms, defaults that depend on the dtype, infinities, warnings and errors, as torch."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad


def test_flip_forms_and_errors():
    x = jitgrad.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.flip(0, 1).numpy(), np.arange(6.0).reshape(2, 3)[::-1, ::-1])
    np.testing.assert_array_equal(x.flip([1]).numpy(), x.numpy()[:, ::-1])
    np.testing.assert_array_equal(jitgrad.flipud(x).numpy(), x.numpy()[::-1])
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        jitgrad.flip(x, 1)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        jitgrad.flip(x, (1, -1))
    y = jitgrad.flip(x, (0,))
    y.add_(1)  # a copy: the input is untouched
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_to_num_defaults_are_the_dtypes_extremes(dtype):
    torch = pytest.importorskip("torch")
    values = [1.5, float("nan"), float("inf"), float("-inf")]
    j = jitgrad.nan_to_num(jitgrad.tensor(values, dtype=getattr(jitgrad, dtype)))
    t = torch.nan_to_num(torch.tensor(values, dtype=getattr(torch, dtype)))
    np.testing.assert_array_equal(j.numpy(), t.numpy())
    x = jitgrad.tensor(values, dtype=jitgrad.float64, requires_grad=True)
    jitgrad.nan_to_num(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0, 0.0])


def test_logaddexp_at_infinities_and_scalars():
    a = jitgrad.tensor([1000.0, float("-inf"), 3.0, float("-inf")])
    b = jitgrad.tensor([999.0, 2.0, float("inf"), float("-inf")])
    out = jitgrad.logaddexp(a, b).numpy()
    np.testing.assert_allclose(out[:2], [1000.0 + np.log1p(np.exp(-1.0)), 2.0])
    assert out[2] == np.inf and out[3] == -np.inf
    with pytest.raises(TypeError, match=r"logaddexp\(\): argument 'other' \(position 2\) must be "
                                        "Tensor, not float"):
        jitgrad.logaddexp(a, 1.0)


def test_repeat_interleave_counts_and_errors():
    x = jitgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = jitgrad.repeat_interleave(x, jitgrad.tensor([1, 2]), dim=0)
    np.testing.assert_array_equal(y.detach().numpy(), [[1, 2], [3, 4], [3, 4]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [2, 2]])
    np.testing.assert_array_equal(jitgrad.repeat_interleave(jitgrad.tensor([2, 1])).numpy(),
                                  [0, 0, 1])
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        jitgrad.repeat_interleave(x, jitgrad.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        jitgrad.repeat_interleave(x, -1)


def test_meshgrid_warns_without_indexing_and_cross_without_dim():
    a, b = jitgrad.arange(3.0), jitgrad.arange(2.0)
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ga, gb = jitgrad.meshgrid(a, b)
    assert tuple(ga.shape) == (3, 2)
    gx, gy = jitgrad.meshgrid(a, b, indexing="xy")
    assert tuple(gx.shape) == (2, 3) and gx.numpy()[1, 2] == 2.0 and gy.numpy()[1, 2] == 1.0
    u, v = jitgrad.tensor([[1.0, 0.0, 0.0]]), jitgrad.tensor([[0.0, 1.0, 0.0]])
    with pytest.warns(UserWarning, match="torch.cross without specifying the dim arg"):
        w = jitgrad.cross(u, v)
    np.testing.assert_array_equal(w.numpy(), [[0.0, 0.0, 1.0]])
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3"):
        jitgrad.linalg.cross(jitgrad.ones(2, 2), jitgrad.ones(2, 2))


def test_contiguous_of_an_expanded_fortran_tensor_is_contiguous():
    # regression: contiguous() copied in the input's layout (preserve_format)
    x = jitgrad.tensor(np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    y = x.unsqueeze(2).expand(3, 4, 2).contiguous()
    assert y.is_contiguous() and y._data.flags["C_CONTIGUOUS"]
    assert y.view(3, 8).shape == (3, 8)


def test_repeat_and_tile_gradients_sum_the_copies():
    x = jitgrad.tensor([[1.0, 2.0]], dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.autograd.gradcheck(lambda x: x.repeat(2, 1, 3), (x,))
    assert jitgrad.autograd.gradgradcheck(lambda x: (jitgrad.tile(x, (2,)) ** 2).sum(), (x,))
    assert jitgrad.autograd.gradcheck(lambda x: jitgrad.roll(x, 1, 1), (x,))
    y = x.repeat(3, 2)
    assert y.grad_fn.name() == "RepeatBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[6.0, 6.0]])


def test_mod_and_floordiv_operators_follow_python_and_torch():
    torch = pytest.importorskip("torch")
    for a, b in [([5, -3, 7], 2), ([5.5, -3.25, 7.0], 2.0), ([5.5, -3.25, 7.0], -0.75)]:
        ja, ta = jitgrad.tensor(a), torch.tensor(a)
        for op in (lambda x, b=b: x % b, lambda x, b=b: x // b, lambda x: 7 % x,
                   lambda x: 7 // x,
                   lambda x, b=b: jitgrad.fmod(x, b) if isinstance(x, jitgrad.Tensor)
                   else torch.fmod(x, b)):
            j, t = op(ja), op(ta)
            np.testing.assert_allclose(j.numpy(), t.numpy())
            assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    x = jitgrad.tensor([5.5, -3.25], requires_grad=True)
    y = x // 2
    assert y.requires_grad and y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="the derivative for 'floor_divide' is not implemented"):
        y.sum().backward()
    assert (x % 2).grad_fn.name() == "RemainderBackward0"
