"""nn.init.trunc_normal_/orthogonal_/eye_/dirac_ and utils.data.WeightedRandomSampler:
distributions (seeded), exact values against torch where they are deterministic, errors."""

import numpy as np
import pytest

import jitgrad
from jitgrad.nn import init
from jitgrad.utils.data import DataLoader, TensorDataset, WeightedRandomSampler


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    jitgrad.manual_seed(0)
    w = jitgrad.nn.Parameter(jitgrad.empty(300, 400))
    assert init.trunc_normal_(w, std=0.5, a=-0.6, b=0.9) is w
    v = w.detach().numpy()
    assert v.min() >= -0.6 and v.max() <= 0.9 and w.requires_grad and w.is_leaf
    # the moments of N(0, 0.25) truncated to [-0.6, 0.9] (computed by torch's own draw too)
    np.testing.assert_allclose([v.mean(), v.std()], [0.0676, 0.3670], atol=0.003)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_gain(shape):
    w = init.orthogonal_(jitgrad.empty(*shape), gain=2.0)
    m = w.numpy().reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4 * np.eye(min(m.shape)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(jitgrad.empty(3))


def test_eye_and_dirac_equal_torchs():
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(init.eye_(jitgrad.empty(2, 3)).numpy(),
                                  torch.nn.init.eye_(torch.empty(2, 3)).numpy())
    for shape, groups in [((4, 2, 3, 3), 2), ((3, 5, 3), 1), ((2, 2, 3, 3, 3), 1)]:
        ours = init.dirac_(jitgrad.empty(*shape), groups)
        theirs = torch.nn.init.dirac_(torch.empty(*shape), groups)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(jitgrad.empty(2, 3, 4))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(jitgrad.empty(2, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(jitgrad.empty(4, 2, 3, 3), groups=3)


def test_weighted_random_sampler():
    jitgrad.manual_seed(1)
    sampler = WeightedRandomSampler([0.1, 0.9, 0.0, 1.0], 20000)
    counts = np.bincount(list(sampler), minlength=4) / 20000
    np.testing.assert_allclose(counts, [0.05, 0.45, 0.0, 0.5], atol=0.015)
    assert len(sampler) == 20000
    assert sorted(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False)) == [0, 1, 2, 3]
    loader = DataLoader(TensorDataset(jitgrad.arange(4.0)), batch_size=2,
                        sampler=WeightedRandomSampler([0, 0, 1, 1], 6))
    assert {v for batch in loader for v in batch[0].tolist()} <= {2.0, 3.0}
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        WeightedRandomSampler([1.0, 2.0], 0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0, 2.0], 2, replacement=1)
