"""torch's NumPy-style keyword aliases (``axis=`` for ``dim=``, ``keepdims=`` for
``keepdim=``, ``x=``/``a=`` for ``input=``), as d2l.ai's code uses them:
``d2l.reduce_sum(X, 0, keepdims=True)`` is ``X.sum(0, keepdims=True)``."""

import numpy as np
import pytest

import jitgrad

CALLS = {
    "sum_keepdims": lambda t, x: x.sum(0, keepdims=True),
    "sum_axis": lambda t, x: x.sum(axis=1),
    "fn_sum_axis_keepdims": lambda t, x: t.sum(x, axis=1, keepdims=True),
    "mean_axis_keepdims": lambda t, x: x.mean(axis=0, keepdims=True),
    "argmax_axis": lambda t, x: x.argmax(axis=1),
    "argmax_axis_keepdims": lambda t, x: x.argmax(axis=1, keepdims=True),
    "max_axis": lambda t, x: x.max(axis=1)[0],
    "min_fn_axis": lambda t, x: t.min(x, axis=0).values,
    "amax_keepdims": lambda t, x: x.amax(1, keepdims=True),
    "prod_keepdims": lambda t, x: x.prod(1, keepdims=True),
    "std_axis": lambda t, x: x.std(axis=1),
    "var_keepdims": lambda t, x: x.var(1, keepdims=True),
    "logsumexp_axis": lambda t, x: t.logsumexp(x, axis=1),
    "softmax_axis": lambda t, x: t.softmax(x, axis=1),
    "all_keepdims": lambda t, x: (x > 2).all(1, keepdims=True),
    "any_axis": lambda t, x: (x > 2).any(axis=1),
    "median_axis": lambda t, x: x.median(axis=1).values,
    "squeeze_axis": lambda t, x: x[None].squeeze(axis=0),
    "unsqueeze_axis": lambda t, x: x.unsqueeze(axis=0),
    "cat_axis": lambda t, x: t.cat([x, x], axis=1),
    "stack_axis": lambda t, x: t.stack([x, x], axis=1),
    "count_nonzero_axis": lambda t, x: t.count_nonzero(x, axis=1),
    "index_select_axis": lambda t, x: x.index_select(axis=1, index=t.tensor([0])),
    "unbind_axis": lambda t, x: x.unbind(axis=0)[0],
    "sum_a": lambda t, x: t.sum(a=x),
    "mean_x_axis": lambda t, x: t.mean(x=x, axis=0),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_style_keywords(name):
    x = jitgrad.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    got = CALLS[name](jitgrad, x)
    torch = pytest.importorskip("torch")
    want = CALLS[name](torch, torch.tensor(x.tolist()))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got.tolist(), dtype=float),
                               np.asarray(want.tolist(), dtype=float), rtol=1e-6)


def test_aliases_keep_autograd():
    x = jitgrad.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], requires_grad=True)
    (x.sum(axis=1, keepdims=True) * jitgrad.tensor([[1.0], [2.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0] * 3, [2.0] * 3]


ERRORS = {
    "dim_and_axis": lambda t, x: x.sum(dim=0, axis=0),
    "positional_and_axis": lambda t, x: t.sum(x, 0, axis=0),
    "keepdim_and_keepdims": lambda t, x: x.sum(0, keepdim=True, keepdims=True),
    "cat_dim_and_axis": lambda t, x: t.cat([x], axis=0, dim=0),
    # torch's Python-level functions take no aliases, nor does nn.functional
    "split_axis": lambda t, x: x.split(1, axis=0),
    "unflatten_axis": lambda t, x: x.unflatten(axis=1, sizes=(3, 1)),
    "F_softmax_axis": lambda t, x: t.nn.functional.softmax(x, axis=0),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_alias_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as want:
        ERRORS[name](torch, torch.ones(2, 3))
    with pytest.raises(TypeError) as got:
        ERRORS[name](jitgrad, jitgrad.ones(2, 3))
    if name in ("dim_and_axis", "positional_and_axis", "keepdim_and_keepdims",
                "cat_dim_and_axis", "F_softmax_axis"):
        assert str(got.value) == str(want.value)


def test_methods_keep_their_names_and_signatures():
    import inspect

    assert jitgrad.Tensor.sum.__name__ == "sum"
    assert "keepdim" in inspect.signature(jitgrad.sum).parameters
