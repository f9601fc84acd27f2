"""unique / unique_consecutive beyond the opdb sweep: torch's nodes and their raising backward,
NaNs, 0-d and empty inputs, and the data-dependent-shape error under jit."""

import numpy as np
import pytest

import jitgrad
from jitgrad.errors import ConcretizationError


@pytest.mark.parametrize("call,node,name", [
    (lambda x: jitgrad.unique(x), "Unique2Backward0", "_unique2"),
    (lambda x: x.unique(dim=0), "UniqueDimBackward0", "unique_dim"),
    (lambda x: jitgrad.unique_consecutive(x), "UniqueConsecutiveBackward0",
     "unique_consecutive")])
def test_the_values_get_torchs_node_whose_backward_raises(call, node, name):
    x = jitgrad.tensor([3.0, 1.0, 3.0], requires_grad=True)
    values = call(x)
    assert values.grad_fn.name() == node
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  "implemented."):
        values.sum().backward()
    import jitgrad.autograd.forward_ad as fwAD

    with fwAD.dual_level(), pytest.raises(NotImplementedError, match=f"'{name}'"):
        call(fwAD.make_dual(x.detach(), jitgrad.ones(3)))


def test_nans_are_distinct_and_edge_shapes_match_torch():
    got = jitgrad.unique(jitgrad.tensor([float("nan"), 1.0, float("nan")]))
    np.testing.assert_array_equal(got.numpy(), [1.0, np.nan, np.nan])
    values, inverse = jitgrad.unique(jitgrad.tensor(3.0), return_inverse=True)
    assert values.shape == (1,) and inverse.shape == () and inverse.dtype == jitgrad.int64
    assert jitgrad.unique(jitgrad.empty(0)).shape == (0,)
    with pytest.raises(NotImplementedError, match="\"unique\" not implemented for "
                                                  "'ComplexFloat'"):
        jitgrad.unique(jitgrad.tensor([1j, 1j]))


def test_matches_torch_on_a_random_integer_tensor():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).integers(0, 5, size=(6, 3))
    for kw in ({}, {"dim": 0}, {"dim": 1}):
        ours = jitgrad.unique(jitgrad.tensor(a), return_inverse=True, return_counts=True, **kw)
        theirs = torch.unique(torch.tensor(a), return_inverse=True, return_counts=True, **kw)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
        ours = jitgrad.unique_consecutive(jitgrad.tensor(a), return_inverse=True,
                                          return_counts=True, **kw)
        theirs = torch.unique_consecutive(torch.tensor(a), return_inverse=True,
                                          return_counts=True, **kw)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_under_jit_the_data_dependent_shape_is_an_error():
    f = jitgrad.jit(lambda x: jitgrad.unique(x))
    with pytest.raises(ConcretizationError, match="unique gives a result whose shape depends"):
        f(jitgrad.ones(3))
