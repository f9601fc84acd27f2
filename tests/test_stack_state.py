"""utils.data.StackDataset and func.stack_module_state against torch's behaviour: items,
batched reads through DataLoader, errors, and a vmap-ed functional_call ensemble."""

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.func import functional_call, stack_module_state, vmap
from jitgrad.utils.data import DataLoader, StackDataset, TensorDataset

from torch_compare import same_error


class _Batched:
    """A data set with ``__getitems__`` that records its batched reads."""

    def __init__(self, n):
        self.n, self.calls = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * 10

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [i * 10 for i in indices]


def test_stack_dataset_tuple_and_dict_items():
    a = TensorDataset(jitgrad.arange(5.0))
    b = [f"s{i}" for i in range(5)]
    ds = StackDataset(a, b)
    assert len(ds) == 5
    x, s = ds[3]
    assert float(x[0]) == 3.0 and s == "s3"
    d = StackDataset(num=a, text=b)
    assert set(d[1]) == {"num", "text"} and d[1]["text"] == "s1"


def test_stack_dataset_reads_batches_through_getitems():
    nested = _Batched(6)
    ds = StackDataset(nested, list(range(6)))
    assert ds.__getitems__([4, 1]) == [(40, 4), (10, 1)]
    assert nested.calls == [[4, 1]]
    dd = StackDataset(x=nested, y=list(range(6)))
    assert dd.__getitems__([2]) == [{"x": 20, "y": 2}]
    batches = list(DataLoader(StackDataset(TensorDataset(jitgrad.arange(6.0)),
                                           TensorDataset(jitgrad.arange(6) * 2)),
                              batch_size=4))
    assert len(batches) == 2
    (xs,), (ys,) = batches[0]
    np.testing.assert_array_equal(xs.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(ys.numpy(), [0, 2, 4, 6])


@pytest.mark.parametrize("make", [
    lambda data: data.StackDataset(),
    lambda data: data.StackDataset([1, 2], [1]),
    lambda data: data.StackDataset([1], b=[2]),
    lambda data: data.StackDataset(a=[1, 2], b=[1]),
])
def test_stack_dataset_errors_match_torch(make):
    pytest.importorskip("torch")
    same_error(lambda lib: make(lib.utils.data))


@pytest.mark.filterwarnings("ignore:There is a performance drop")
def test_stack_module_state_vmaps_an_ensemble():
    jitgrad.manual_seed(0)
    models = [nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh()) for _ in range(3)]
    for m in models:
        m.eval()
    params, buffers = stack_module_state(models)
    assert list(params) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert list(buffers) == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    assert tuple(params["0.weight"].shape) == (3, 4, 3)
    assert params["0.weight"].is_leaf and params["0.weight"].requires_grad
    assert not buffers["1.running_mean"].requires_grad
    x = jitgrad.randn(5, 3)
    out = vmap(lambda p, b, data: functional_call(models[0], (p, b), (data,)),
               (0, 0, None))(params, buffers, x)
    assert tuple(out.shape) == (3, 5, 4)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    out.sum().backward()
    assert tuple(params["0.weight"].grad.shape) == (3, 4, 3)
    assert models[0][0].weight.grad is None  # new leaves, unrelated to the originals


def test_stack_module_state_errors_match_torch():
    pytest.importorskip("torch")
    same_error(lambda lib: lib.func.stack_module_state([]))
    same_error(lambda lib: lib.func.stack_module_state([lib.nn.Linear(2, 2),
                                                        lib.nn.Linear(2, 2).eval()]))
    same_error(lambda lib: lib.func.stack_module_state([lib.nn.Linear(2, 2), lib.nn.Tanh()]))

    def mixed(lib):
        a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
        b.bias.requires_grad_(False)
        return lib.func.stack_module_state([a, b])

    same_error(mixed)
