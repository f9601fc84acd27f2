"""Among tied values, topk and mode name the indices torch's CPU kernels do (libstdc++'s
unstable partial sort, nth_element and sort, emulated in ``jitgrad/ops/stl_order.py``), and an
unsorted topk comes in nth_element's order: checked on the expected indices (torch 2.x's, which
follow from the algorithms by hand for the short rows) and, where torch is installed, against
torch on many tie-heavy rows."""

import numpy as np
import pytest

import jitgrad

RNG = np.random.default_rng(0)


def test_topk_ties_name_torchs_indices():
    x = jitgrad.tensor([1.0, 3, 3, 2, 3, 1, 1])
    assert x.topk(2).indices.tolist() == [2, 4]  # (nth_element over 7: insertion sort)
    assert x.topk(3, largest=False).indices.tolist() == [5, 0, 6]
    assert x.topk(4, sorted=False).indices.tolist() == [2, 4, 1, 3]
    assert x.topk(4).values.tolist() == [3, 3, 3, 2]
    z = jitgrad.zeros(40)
    z[::3] = 1
    assert z.topk(5).indices.tolist() == [30, 18, 15, 27, 33]  # (introselect's partitions)
    rows = jitgrad.tensor([[0.0, 0, 0, 0], [5, 5, 1, 5]])
    assert rows.topk(2, dim=1).indices.tolist() == [[2, 3], [1, 3]]


def test_topk_of_distinct_values_is_the_sorted_prefix():
    data = RNG.permutation(500).astype(np.float32).reshape(5, 100)
    for k in (1, 2, 30, 100):
        for largest in (True, False):
            got = jitgrad.tensor(data).topk(k, largest=largest).indices.numpy()
            order = np.argsort(-data if largest else data, axis=1)[:, :k]
            np.testing.assert_array_equal(got, order)


def test_topk_gradient_goes_to_the_chosen_ties():
    x = jitgrad.tensor([[1.0, 3, 3, 2, 3, 1, 1]], requires_grad=True)
    out = x.topk(2)
    out.values.sum().backward()
    assert x.grad.tolist() == [[0, 0, 1, 0, 1, 0, 0]]
    x.grad = None
    x.topk(4, sorted=False).values.backward(jitgrad.tensor([[1.0, 2, 3, 4]]))
    assert x.grad.tolist() == [[0, 3, 1, 4, 2, 0, 0]]


def test_mode_names_torchs_index_of_the_most_frequent_value():
    short = jitgrad.tensor([3.0, 1, 3, 3])
    assert short.mode().values.item() == 3 and short.mode().indices.item() == 3
    long_row = jitgrad.tensor([float(v % 3 == 0) for v in range(40)])  # (past insertion sort)
    got = long_row.mode()
    assert got.values.item() == 0.0 and long_row[got.indices].item() == 0.0
    nan = jitgrad.tensor([float("nan"), 2.0, float("nan"), 1.0])
    got = nan.mode()  # (each NaN is a run of its own: all counts 1, the first run wins)
    assert np.isnan(got.values.item()) and got.indices.item() == 0
    flags = jitgrad.tensor([True, False, True])
    assert flags.mode().values.item() is True and flags.mode().values.dtype is jitgrad.bool


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "float16", "uint8"])
def test_topk_and_mode_match_torch_on_tie_heavy_rows(dtype):
    torch = pytest.importorskip("torch")
    for trial in range(60):
        shape = [int(RNG.integers(1, 4)), int(RNG.integers(1, 300))]
        if trial % 3 == 0:
            shape.append(2)
        dim = int(RNG.integers(0, len(shape)))
        n = shape[dim]
        data = RNG.integers(0, int(RNG.integers(1, 5)), shape).astype(dtype)
        if trial % 4 == 0 and data.dtype.kind == "f":
            data[RNG.random(shape) < 0.2] = np.nan
        k = int(RNG.integers(0, n + 1)) if trial % 2 else int(RNG.integers(0, min(n, 5) + 1))
        largest, ordered = bool(trial % 2), bool(trial % 5)
        ours = jitgrad.from_numpy(data).topk(k, dim, largest, ordered)
        theirs = torch.from_numpy(data).topk(k, dim, largest, ordered)
        assert ours.indices.tolist() == theirs.indices.tolist(), (shape, dim, k, largest)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        ours, theirs = jitgrad.from_numpy(data).mode(dim), torch.from_numpy(data).mode(dim)
        assert ours.indices.tolist() == theirs.indices.tolist(), (shape, dim)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
