"""Basic indexing and ``cat`` record the graph torch records, with torch's values and errors.

torch skips a slice that takes a whole dimension inside a tuple key (``x[:, 1]`` is one
SelectBackward0), returns an alias for a key that changes nothing (``x[:, :]``), records a lone
slice (``x[:]`` is a SliceBackward0), and leaves 1-D empty tensors out of ``cat``.
"""

import numpy as np
import pytest

import jitgrad

KEYS = [
    (slice(None), 1), (slice(0, 4), 1), (slice(0, 100), 1), (slice(0, None), 1),
    (slice(None, None, 1), 1), (slice(-4, None), 1), (slice(1, None), 1),
    (Ellipsis, slice(None)), (slice(None), slice(None), None), (None, slice(None)),
    (slice(None), [0, 1]), (slice(None), slice(None)), (slice(None),), (slice(0, 5),),
    slice(None), slice(1, 3), slice(0, 4, 2), Ellipsis, (Ellipsis,), (slice(None), Ellipsis),
    (slice(None, None, 2), 1), (1,), 1, (), (None,), (slice(None), -1, None), (-1, slice(2)),
]


def _chain(y) -> list[str]:
    """The names of the nodes from ``y`` back to (not including) the ``x * 1`` node."""
    names, node = [], y.grad_fn
    while not node.name().startswith("MulBackward"):
        names.append(node.name())
        node = node.next_functions[0][0]
    return names


def _graphs(lib) -> list[tuple]:
    x = lib.arange(16.0).reshape(4, 4).requires_grad_() * 1
    out = []
    for key in KEYS:
        y = x[key]
        out.append((repr(key), _chain(y), tuple(y.shape), y.detach().numpy().tolist()))
    return out


def test_basic_indexing_records_the_nodes_torch_records():
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(_graphs(jitgrad), _graphs(torch)):
        assert ours == theirs


def test_full_slices_in_a_tuple_record_one_select_and_its_gradient_is_right():
    x = jitgrad.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4), requires_grad=True)
    y = x[:, 1]
    assert y.grad_fn.name() == "SelectBackward0"
    assert y.grad_fn.next_functions[0][0] is not None
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    (y * jitgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    want = np.zeros((3, 4), np.float32)
    want[:, 1] = [1, 2, 3]
    np.testing.assert_array_equal(x.grad.numpy(), want)
    z = x[:, :]
    assert z.grad_fn.name() == "AliasBackward0" and z._base is x


@pytest.mark.parametrize("key, error, text", [
    (slice(None), IndexError, "slice() cannot be applied to a 0-dim tensor."),
    ((slice(None),), IndexError, "too many indices for tensor of dimension 0"),
])
def test_slicing_a_0_dim_tensor_raises_torchs_error(key, error, text):
    with pytest.raises(error) as info:
        jitgrad.tensor(1.0)[key]
    assert str(info.value) == text


@pytest.mark.parametrize("key, text", [
    (slice(0, 1, 0), "slice step cannot be zero"),
    ((slice(0, 1, 0),), "slice step cannot be zero"),
    ((0, slice(None, None, 0)), "slice step cannot be zero"),
    (slice(None, None, -1), "step must be greater than zero"),
    ((slice(0, 1, -1),), "step must be greater than zero"),
])
def test_a_zero_or_negative_step_raises_torchs_value_error(key, text):
    with pytest.raises(ValueError) as info:
        jitgrad.ones(3, 3)[key]
    assert str(info.value) == text


def test_cat_leaves_1d_empty_tensors_out_as_torch_does():
    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        assert lib.cat([lib.ones(0, dtype=lib.float64), lib.ones(2, 3)]).dtype == lib.float64
        assert tuple(lib.cat([lib.ones(2, 3), lib.ones(0)], dim=1).shape) == (2, 3)
        assert tuple(lib.cat([lib.ones(0), lib.ones(0)]).shape) == (0,)
        assert tuple(lib.cat([lib.ones(0), lib.ones(2)]).shape) == (2,)
    grads = []
    for lib in (jitgrad, torch):
        x = lib.ones(0, requires_grad=True)
        y = lib.arange(6.0).reshape(2, 3).requires_grad_()
        z = lib.cat([x, y, x], 1)
        (z * z).sum().backward()
        assert z.grad_fn.name() == "CatBackward0"
        grads.append((tuple(x.grad.shape), y.grad.numpy().tolist()))
    assert grads[0] == grads[1]


@pytest.mark.parametrize("tensors, dim", [
    ([(2, 3), (3, 4)], 1), ([(2, 3), (2,)], 0), ([(2, 3), ()], 0), ([()], 0),
    ([(0,), ()], 0), ([(0,), (2, 3), (3, 3)], 1), ([(2, 3), (0,)], 2),
])
def test_cat_raises_torchs_error_for_the_first_tensor_it_refuses(tensors, dim):
    torch = pytest.importorskip("torch")
    texts = []
    for lib in (jitgrad, torch):
        with pytest.raises((RuntimeError, IndexError)) as info:
            lib.cat([lib.ones(s) for s in tensors], dim)
        texts.append((type(info.value).__name__, str(info.value)))
    assert texts[0] == texts[1]


def test_cat_gradient_through_gradcheck():
    x = jitgrad.randn(2, 3, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(2, 1, dtype=jitgrad.float64, requires_grad=True)
    e = jitgrad.zeros(0, dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.autograd.gradcheck(lambda a, b, c: jitgrad.cat([a, c, b], -1), (x, y, e))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64"])
def test_mean_equals_numpys_mean_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((5, 7, 3)) * 100).astype(dtype)
    x = jitgrad.tensor(a)
    for dim in (None, 1, (0, 2), -1):
        for keepdim in (False, True):
            got = (x.mean() if dim is None else x.mean(dim, keepdim=keepdim)).numpy()
            axis = None if dim is None else dim
            # (float16 accumulates in float32, as torch's kernels do, and rounds once)
            wide = np.float32 if dtype == "float16" else a.dtype
            want = np.mean(a, axis=axis, keepdims=keepdim and dim is not None,
                           dtype=wide).astype(a.dtype)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
