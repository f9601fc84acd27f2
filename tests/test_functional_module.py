"""``jitgrad.functional`` holds torch.functional's names (as the top-level functions)."""

import pytest

import jitgrad
import jitgrad.functional as F

MISSING = {"pca_lowrank", "svd_lowrank"}  # (not in jitgrad yet)


def test_names_are_the_top_level_functions():
    for name in F.__all__:
        assert getattr(F, name) is getattr(jitgrad, name), name
    assert F.F is jitgrad.nn.functional
    assert jitgrad.functional is F
    x = jitgrad.arange(6.0).view(2, 3)
    assert F.einsum("ij->j", x).tolist() == [3.0, 5.0, 7.0]
    assert [t.shape for t in F.meshgrid(x[0], x[1], indexing="ij")] == [(3, 3), (3, 3)]


def test_torchs_names():
    torch_functional = pytest.importorskip("torch.functional")
    assert set(F.__all__) == set(torch_functional.__all__) - MISSING
