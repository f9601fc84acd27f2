"""The surface24 compositions on CUDA tensors (numba's simulator, set up by ``test_cuda``):
in-place comparisons and view ops, addmv, fill_diagonal_, take, the scatter functions and
shifts run on the device and equal the CPU (values and gradients); the samplers draw on the
host and write into the device tensor."""

from __future__ import annotations

import numpy as np
import pytest

from test_cuda import CUDA, _host, _rand

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402


def test_compositions_match_the_cpu_with_gradients():
    a = _rand(3, 4)
    results = []
    for device in ("cuda", "cpu"):
        x = jitgrad.tensor(a, device=device, requires_grad=True)
        y = x * 1
        y.gt_(0.0)
        z = x * 2
        z.t_()
        loss = (y * x).sum() + (z ** 2).sum() + \
            jitgrad.addmv(x[:, 0], x, x[0], beta=0.5).sum() + \
            (x * 1).fill_diagonal_(3.0).sum() + \
            jitgrad.take(x, jitgrad.tensor([0, 5], device=device)).sum() + \
            (jitgrad.slice_scatter(x, x[:, :2] * 3, 1, 0, 4, 2) ** 2).sum() + \
            (jitgrad.select_scatter(x, x[0] * 2, 0, 1) ** 2).sum()
        loss.backward()
        assert x.grad.device.type == device
        results.append((loss.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_shifts_logical_and_samplers_on_the_device():
    t = jitgrad.tensor([1, 2, -7], device="cuda")
    assert (t << 1).device.type == "cuda" and _host(t << 1).tolist() == [2, 4, -14]
    assert _host(t >> jitgrad.tensor([1, 0, 1], device="cuda")).tolist() == [0, 2, -4]
    assert _host(jitgrad.logical_and(t, 1)).tolist() == [True, True, True]
    x = jitgrad.empty(2000, device="cuda")
    assert x.exponential_(2.0, generator=jitgrad.Generator().manual_seed(0)) is x
    assert x.device.type == "cuda" and abs(float(_host(x).mean()) - 0.5) < 0.1
