"""``out=`` on ``jitgrad.*`` functions, as torch's: values, dtype casts, resizing with torch's
warning, tuples, views, and torch's errors (autograd, casts, devices)."""

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.ops.out_arg import NO_OUT
from jitgrad.ops.surface import functions

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
B = np.array([[2.0, 1.0, -0.5], [3.0, -2.0, 1.0]])

# name -> (args built from a library module ``m``), out's shape and dtype name
CASES = {
    "add": lambda m: (m.tensor(A), m.tensor(B)),
    "mul": lambda m: (m.tensor(A), m.tensor(B)),
    "exp": lambda m: (m.tensor(A),),
    "tanh": lambda m: (m.tensor(A),),
    "clamp": lambda m: (m.tensor(A), -1.0, 2.0),
    "matmul": lambda m: (m.tensor(A), m.tensor(B).T),
    "cat": lambda m: ([m.tensor(A), m.tensor(B)],),
    "sum": lambda m: (m.tensor(A), 1),
    "cumsum": lambda m: (m.tensor(A), 0),
    "where": lambda m: (m.tensor(A) > 0, m.tensor(A), m.tensor(B)),
}


# torch requires out's dtype to be the result's for these (jitgrad casts, as for the rest)
SAME_DTYPE_IN_TORCH = {"clamp", "matmul", "where"}


@pytest.mark.parametrize("name,out_dtype", [
    (name, dt) for name in sorted(CASES) for dt in ("float32", "float64")
    if dt == "float64" or name not in SAME_DTYPE_IN_TORCH])
def test_out_gets_the_result_and_is_returned(name, out_dtype):
    torch = pytest.importorskip("torch")
    ours_out = jitgrad.empty(0, dtype=getattr(jitgrad, out_dtype))
    theirs_out = torch.empty(0, dtype=getattr(torch, out_dtype))
    ours = getattr(jitgrad, name)(*CASES[name](jitgrad), out=ours_out)
    theirs = getattr(torch, name)(*CASES[name](torch), out=theirs_out)
    assert ours is ours_out and theirs is theirs_out
    assert ours.dtype == getattr(jitgrad, out_dtype) and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_out_of_the_right_shape_keeps_its_memory_and_a_view_writes_through():
    base = jitgrad.zeros(6)
    view = base[::2]
    x = jitgrad.tensor([1.0, 2.0, 3.0])
    data = base._data
    jitgrad.mul(x, 2, out=view)
    assert base._data is data
    np.testing.assert_array_equal(base.numpy(), [2, 0, 4, 0, 6, 0])


def test_an_integer_result_casts_into_a_float_out_and_a_float_result_into_int_raises():
    ints = jitgrad.tensor([1, 2, 3])
    out = jitgrad.empty(3)
    jitgrad.add(ints, ints, out=out)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        jitgrad.add(out, out, out=jitgrad.empty(3, dtype=jitgrad.int64))
    with pytest.raises(RuntimeError, match="output type Bool"):
        jitgrad.exp(out, out=jitgrad.empty(3, dtype=jitgrad.bool))


def test_a_non_empty_out_of_another_shape_is_resized_with_torchs_warning():
    out = jitgrad.empty(2, 2)
    with pytest.warns(UserWarning, match=r"had shape \[2, 2\], which does not match the required "
                                         r"output shape \[6\]"):
        jitgrad.cat([jitgrad.ones(3), jitgrad.zeros(3)], out=out)
    np.testing.assert_array_equal(out.numpy(), [1, 1, 1, 0, 0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        jitgrad.exp(jitgrad.zeros(2), out=jitgrad.empty(0))
    with pytest.raises(RuntimeError, match="view"):
        jitgrad.exp(jitgrad.zeros(4), out=jitgrad.zeros(6)[::2])


def test_autograd_does_not_run_through_out():
    x = jitgrad.ones(3, requires_grad=True)
    msg = ("add\\(\\): functions with out=... arguments don't support automatic "
           "differentiation, but one of the arguments requires grad.")
    with pytest.raises(RuntimeError, match=msg):
        jitgrad.add(x, 1, out=jitgrad.empty(3))
    with pytest.raises(RuntimeError, match=msg):
        jitgrad.add(jitgrad.ones(3), 1, out=jitgrad.empty(3, requires_grad=True))
    with jitgrad.no_grad():
        out = jitgrad.add(x, 1, out=jitgrad.empty(3))
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])


def test_writing_into_a_saved_tensor_is_caught_at_backward():
    x = jitgrad.tensor([0.5, 1.0], requires_grad=True)
    saved = jitgrad.tensor([1.0, 2.0])
    y = (x * saved).sum()
    jitgrad.exp(jitgrad.zeros(2), out=saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_tuple_results_take_a_tuple_of_outs():
    values, indices = jitgrad.empty(0), jitgrad.empty(0, dtype=jitgrad.int64)
    got = jitgrad.max(jitgrad.tensor([[1.0, 3.0], [2.0, 0.0]]), 1, out=(values, indices))
    assert got.values is values and got.indices is indices
    np.testing.assert_array_equal(values.numpy(), [3, 2])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    with pytest.raises(TypeError, match="argument 'out' must be tuple of 2 Tensors"):
        jitgrad.sort(jitgrad.ones(3), out=jitgrad.empty(3))


def test_factories_fill_out_in_its_dtype():
    out = jitgrad.empty(2, dtype=jitgrad.int64)
    with pytest.warns(UserWarning, match="resized"):
        jitgrad.zeros(3, out=out)
    assert out.dtype == jitgrad.int64
    np.testing.assert_array_equal(out.numpy(), [0, 0, 0])
    out = jitgrad.empty(0, dtype=jitgrad.float64)
    jitgrad.arange(4, out=out)
    assert out.dtype == jitgrad.float64
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3])
    out = jitgrad.empty(0, dtype=jitgrad.float64)
    jitgrad.randn(5, out=out)
    assert out.shape == (5,) and out.dtype == jitgrad.float64


def test_linalg_norms_take_out():
    out = jitgrad.empty(())
    got = jitgrad.linalg.vector_norm(jitgrad.tensor([3.0, 4.0]), out=out)
    assert got is out and out.item() == 5.0


def test_methods_and_functional_take_no_out_and_the_rest_of_the_surface_does():
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        jitgrad.ones(2).exp(out=jitgrad.empty(2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        jitgrad.nn.functional.relu(jitgrad.ones(2), out=jitgrad.empty(2))
    assert NO_OUT <= set(functions()) | {"expand", "view"}
    for name in set(functions()) - NO_OUT:
        import inspect

        assert "out" in inspect.signature(getattr(jitgrad, name)).parameters or \
            getattr(jitgrad, name).__wrapped__, name
