# ruff: noqa: E501 (the cases are a script, run as is on both libraries)
"""F.affine_grid and F.grid_sample against torch: values and gradients (input, theta)."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F

CASES = """
import numpy as np
import jitgrad as torch
import jitgrad.nn.functional as F
res = []
theta = (torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.2, 0.4, 0.3], [-0.5, 0.8, 0.0]]], dtype=torch.float64))
x = torch.sin(torch.arange(2 * 3 * 5 * 6, dtype=torch.float64)).reshape(2, 3, 5, 6)
for ac in (False, True):
    g = F.affine_grid(theta, [2, 3, 4, 7], align_corners=ac)
    res.append(g.tolist())
    for mode in ("bilinear", "nearest"):
        for pm in ("zeros", "border", "reflection"):
            th = theta.clone().requires_grad_()
            xx = x.clone().requires_grad_()
            out = F.grid_sample(xx, F.affine_grid(th * 1.7, [2, 3, 4, 7], align_corners=ac), mode=mode, padding_mode=pm, align_corners=ac)
            res.append(out.tolist())
            (out * torch.cos(torch.arange(out.numel(), dtype=torch.float64)).reshape(out.shape)).sum().backward()
            res.append(xx.grad.tolist())
            if mode == "bilinear":
                res.append(th.grad.tolist())
"""


def test_affine_grid_and_grid_sample_match_torch():
    pytest.importorskip("torch")
    ours, theirs = {}, {}
    exec(CASES, ours)  # noqa: S102
    exec(CASES.replace("jitgrad", "torch"), theirs)  # noqa: S102
    assert len(ours["res"]) == len(theirs["res"]) == 32
    for i, (a, b) in enumerate(zip(ours["res"], theirs["res"])):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-9, atol=1e-9, err_msg=str(i))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_gradcheck(padding_mode):
    jitgrad.manual_seed(0)
    x = jitgrad.randn(1, 2, 4, 5, dtype=jitgrad.float64, requires_grad=True)
    grid = (jitgrad.rand(1, 3, 3, 2, dtype=jitgrad.float64) * 2.4 - 1.2).requires_grad_()
    assert jitgrad.autograd.gradcheck(
        lambda x, g: F.grid_sample(x, g, padding_mode=padding_mode, align_corners=False),
        (x, grid))


def test_affine_grid_gradcheck_and_identity():
    theta = jitgrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=jitgrad.float64,
                           requires_grad=True)
    x = jitgrad.arange(12, dtype=jitgrad.float64).reshape(1, 1, 3, 4)
    for ac in (False, True):  # the identity map samples the input back
        out = F.grid_sample(x, F.affine_grid(theta, [1, 1, 3, 4], align_corners=ac),
                            align_corners=ac)
        assert jitgrad.allclose(out, x)
    assert jitgrad.autograd.gradcheck(
        lambda t: F.affine_grid(t, [1, 1, 3, 4], align_corners=False), (theta,))


def test_errors_and_warning_match_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (torch, jitgrad):
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            lib.nn.functional.affine_grid(lib.zeros(1, 2, 3), [1, 1, 2, 2])
        for call in (lambda lib=lib: lib.nn.functional.affine_grid(lib.zeros(1, 3, 3), [1, 1, 2, 2],
                                                           align_corners=False),
                     lambda lib=lib: lib.nn.functional.grid_sample(lib.zeros(1, 1, 2, 2),
                                                           lib.zeros(1, 2, 2, 2), mode="x",
                                                           align_corners=False)):
            with pytest.raises(ValueError) as e:
                call()
            msgs.append(str(e.value).replace("torch.Size", "jitgrad.Size"))
    assert msgs[:2] == msgs[2:]
