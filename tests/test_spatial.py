"""F.group_norm / nn.GroupNorm and F.interpolate / nn.Upsample against torch (values and
gradients, reprs, torch's index rounding in float32), finite differences, jit and errors."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F

INTERPOLATE = [
    ((1, 2, 3, 4), dict(scale_factor=2)), ((1, 2, 3, 4), dict(size=(5, 7))),
    ((1, 2, 5, 4), dict(size=(3, 2))), ((1, 2, 3, 4), dict(scale_factor=1.5, mode="bilinear")),
    ((1, 2, 3, 4), dict(scale_factor=2, mode="bilinear", align_corners=True)),
    ((1, 2, 6, 5), dict(size=(4, 3), mode="bilinear")), ((2, 3, 5), dict(size=9, mode="linear")),
    ((1, 2, 3, 4), dict(scale_factor=1.7, mode="nearest-exact")),
    ((1, 2, 3, 4), dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
    ((1, 1, 2, 3, 4), dict(scale_factor=2, mode="trilinear")),
    ((1, 2, 4, 4), dict(size=(1, 1), mode="bilinear", align_corners=True)),
    ((1, 1, 3), dict(scale_factor=1.3, mode="linear")),  # same size: torch copies
]


@pytest.mark.parametrize("shape,kw", INTERPOLATE, ids=lambda v: str(v))
def test_interpolate_matches_torch(shape, kw):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    tx, jx = torch.tensor(x, requires_grad=True), jitgrad.tensor(x, requires_grad=True)
    ty, jy = torch.nn.functional.interpolate(tx, **kw), F.interpolate(jx, **kw)
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    w = np.random.default_rng(0).standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (jy * jitgrad.tensor(w)).sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), atol=1e-12)


def test_float32_source_indices_round_as_torchs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for n_in in range(1, 10):
        x = rng.standard_normal((1, 1, n_in)).astype(np.float32)
        for n_out in range(1, 20):
            for mode, kw in [("nearest", {}), ("nearest-exact", {}), ("linear", {}),
                             ("linear", {"align_corners": True})]:
                ours = F.interpolate(jitgrad.tensor(x), size=n_out, mode=mode, **kw)
                theirs = torch.nn.functional.interpolate(torch.tensor(x), size=n_out, mode=mode,
                                                         **kw)
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6,
                                           err_msg=f"{n_in}->{n_out} {mode} {kw}")


def test_group_norm_matches_torch_and_finite_differences():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal(4), rng.standard_normal(4)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ours = [jitgrad.tensor(a, requires_grad=True) for a in (x, w, b)]
    ty = torch.nn.functional.group_norm(theirs[0], 2, theirs[1], theirs[2])
    jy = F.group_norm(ours[0], 2, ours[1], ours[2])
    np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    (ty ** 2).sum().backward()
    (jy ** 2).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=1e-10)
    small = [jitgrad.randn(*s, dtype=jitgrad.float64, requires_grad=True)
             for s in ((2, 4, 3), (4,), (4,))]
    assert jitgrad.autograd.gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), tuple(small))


def test_modules_reprs_and_state_dicts_match_torch():
    torch = pytest.importorskip("torch")
    pairs = [("GroupNorm", (2, 4), {}), ("GroupNorm", (2, 4), {"affine": False}),
             ("GroupNorm", (2, 4), {"bias": False}),
             ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}),
             ("Upsample", (), {"size": (3, 4)}), ("UpsamplingBilinear2d", (), {"scale_factor": 2}),
             ("UpsamplingNearest2d", (), {"size": 5})]
    x = np.random.default_rng(3).standard_normal((1, 4, 3, 3)).astype(np.float32)
    for name, args, kw in pairs:
        theirs, ours = getattr(torch.nn, name)(*args, **kw), getattr(jitgrad.nn, name)(*args, **kw)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        np.testing.assert_allclose(ours(jitgrad.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), atol=1e-5)


def test_jit_and_errors():
    up = jitgrad.nn.Sequential(jitgrad.nn.Upsample(scale_factor=2, mode="bilinear"),
                               jitgrad.nn.GroupNorm(1, 2))
    x = jitgrad.randn(1, 2, 3, 3, requires_grad=True)
    eager = up(x).pow(2).sum()
    jitted = jitgrad.jit(lambda x: up(x).pow(2).sum())(x)
    np.testing.assert_allclose(jitted.item(), eager.item(), rtol=1e-5)
    np.testing.assert_allclose(jitgrad.autograd.grad(jitted, x)[0].numpy(),
                               jitgrad.autograd.grad(eager, x)[0].numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D"):
        F.interpolate(jitgrad.ones(1, 2, 3), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set with the "
                                         "interpolating modes"):
        F.interpolate(jitgrad.ones(1, 2, 3), scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(jitgrad.ones(1, 2, 3))
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be "
                                           "divisible by num_groups"):
        F.group_norm(jitgrad.ones(2, 5, 3), 2)
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by num_groups"):
        jitgrad.nn.GroupNorm(2, 5)
