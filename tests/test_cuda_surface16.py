"""The surface16 view ops on CUDA tensors (numba's simulator, set up by ``test_cuda``):
diagonal, unbind and unfold run as device views, diag_embed, diag and diagonal's backward
through their decompositions; cdist and unfold's backward run on the device (compositions);
an op without a kernel (eigh) raises naming itself."""

from __future__ import annotations

import numpy as np
import pytest

from test_cuda import CUDA, _dev, _host, _rand

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402


def test_views_and_their_gradients_match_the_cpu():
    a = _rand(3, 4)
    results = []
    for device in ("cuda", "cpu"):
        x = jitgrad.tensor(a, device=device, requires_grad=True)
        d = x.diagonal(1)
        parts = x.unbind(1)
        w = x.detach().unfold(1, 2, 2)
        # (parts[1] unused: the engine's zeros for its gradient are made on the device)
        loss = (d * 2).sum() + (parts[0] * parts[3]).sum() - parts[2].sum() + \
            jitgrad.diag_embed(x[:, :2], -1).sum() + jitgrad.diag(x[0]).sum() + \
            x.split(2, 1)[0].sum()
        loss.backward()
        results.append((d, parts[2], w, x.grad))
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(_host(got), want.detach().numpy(), rtol=1e-6)
    assert results[0][0]._base is not None  # (a view of x on the device too)


def test_ops_without_kernels_name_themselves():
    x = _dev(_rand(3, 3))
    with pytest.raises(NotImplementedError, match="'linalg_eigh' has no CUDA kernel"):
        jitgrad.linalg.eigh(x)


def test_cdist_and_unfold_backward_run_on_the_device():
    a = _rand(3, 4).astype(np.float64)
    results = []
    for device in ("cuda", "cpu"):
        y = jitgrad.tensor(a, device=device, requires_grad=True)
        (y.unfold(1, 2, 1) * 3).sum().backward()
        results.append((jitgrad.cdist(y.detach(), y.detach() * 2), y.grad))
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(_host(got), want.detach().numpy(), rtol=1e-12)
