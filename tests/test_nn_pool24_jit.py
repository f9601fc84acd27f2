"""The composed 3-d poolings, unpooling, fractional pooling and conv_transpose3d under ``jit``
(interpreter and numba backends, ``check=True`` compares with eager) and on CUDA tensors
(numba's simulator, set up by ``test_cuda``)."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F

rng = np.random.default_rng(11)


def _model_fn(x, w, u):
    y = F.conv_transpose3d(x, w, None, 2, 1, 1)
    a = F.max_pool3d(y, 2, 1, 1, ceil_mode=True)
    b = F.avg_pool3d(y, 3, 2, 1, True, False)
    c = F.adaptive_max_pool3d(y, (2, 3, 2)) + F.adaptive_avg_pool3d(y, (2, 3, 2))
    v, i = F.max_pool3d(y, 2, return_indices=True)
    d = F.max_unpool3d(v, i, 2, output_size=y.shape)
    e = F.fractional_max_pool3d(y, 2, (3, 3, 3), _random_samples=u)
    f = F.lp_pool3d(y.abs() + 0.5, 2.0, 2)
    return (a.sum() + (b * b).sum() + c.sum() + (d * y).sum() + e.sum() + f.sum() +
            F.avg_pool1d(y.flatten(2), 3).sum())


@pytest.mark.parametrize("backend", ["interpreter",
                                     pytest.param("numba", marks=pytest.mark.slow)])
def test_jit_check_matches_eager(backend):
    x = jitgrad.tensor(rng.standard_normal((2, 2, 3, 3, 3)), requires_grad=True)
    w = jitgrad.tensor(rng.standard_normal((2, 3, 2, 2, 2)), requires_grad=True)
    u = jitgrad.tensor(rng.random((2, 3, 3)))
    fn = jitgrad.jit(_model_fn, backend=backend, check=True)
    for _ in range(2):
        out = fn(x, w, u)
        out.backward()
    want = _model_fn(x.detach(), w.detach(), u)
    np.testing.assert_allclose(out.item(), want.item(), rtol=1e-10)


def test_lazy_module_then_jit():
    model = nn.Sequential(nn.LazyConv3d(3, 2), nn.MaxPool3d(2, ceil_mode=True),
                          nn.LazyBatchNorm3d(), nn.Flatten(), nn.LazyLinear(2))
    x = jitgrad.randn(2, 1, 5, 5, 5)
    model(x)  # the dry run materializes
    assert [type(m).__name__ for m in model] == ["Conv3d", "MaxPool3d", "BatchNorm3d",
                                                 "Flatten", "Linear"]
    model.eval()
    fn = jitgrad.jit(lambda t: model(t), check=True)
    np.testing.assert_allclose(fn(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5)


@pytest.mark.slow
def test_on_cuda_simulator():
    from test_cuda import CUDA

    if CUDA is None:
        pytest.skip("numba.cuda is not usable here")
    a = rng.standard_normal((1, 2, 4, 5, 4)).astype(np.float32)
    wa = rng.standard_normal((2, 2, 2, 2, 2)).astype(np.float32)
    results = []
    for device in ("cuda", "cpu"):
        x = jitgrad.tensor(a, device=device, requires_grad=True)
        w = jitgrad.tensor(wa, device=device, requires_grad=True)
        y = F.conv_transpose3d(x, w, None, 2)
        v, i = F.max_pool3d(y, 2, return_indices=True)
        loss = v.sum() + F.avg_pool3d(y, 3, 2, 1).sum() + F.adaptive_max_pool3d(y, 3).sum()
        loss.backward()
        results.append([v, i, x.grad, w.grad])
    for got, want in zip(*results):
        assert got.is_cuda
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(),
                                   rtol=1e-4, atol=1e-4)
