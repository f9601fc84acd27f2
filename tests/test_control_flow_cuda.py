"""``jitgrad.cond`` / ``jitgrad.while_loop`` under the cuda jit backend, on numba's CUDA
simulator (turned on as ``test_cuda.py`` does, before ``numba.cuda`` is first imported)."""

from __future__ import annotations


import numpy as np
import pytest
from test_cuda import CUDA  # (the simulator, turned on there before numba.cuda loads)

import jitgrad

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")


def test_cuda_cond_and_while_loop_run_the_selected_subgraph_on_the_device():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    x = jitgrad.tensor(a, device="cuda", requires_grad=True)
    f = jitgrad.jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x.exp() * 2,
                                           lambda x: x.sin() + 1, (x,)))
    y = f(x)
    assert y.is_cuda
    np.testing.assert_allclose(y.detach().cpu().numpy(), np.exp(a) * 2, rtol=1e-5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(a) * 2, rtol=1e-5)
    np.testing.assert_allclose(f(-x.detach()).cpu().numpy(), np.sin(-a) + 1, rtol=1e-5)
    g = jitgrad.jit(lambda x: jitgrad.while_loop(
        lambda i, y: i < 3, lambda i, y: (i + 1, y * 2), (jitgrad.tensor(0, device="cuda"), x)))
    i, z = g(x.detach())
    assert i.cpu().item() == 3
    np.testing.assert_allclose(z.cpu().numpy(), a * 8)


def test_cuda_cond_double_backward_through_the_eager_dispatcher():
    a = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = jitgrad.tensor(a, device="cuda", requires_grad=True)
    f = jitgrad.jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x.exp() * 2,
                                           lambda x: x.sin() + 1, (x,)))
    (g,) = jitgrad.autograd.grad(f(x).sum(), x, create_graph=True)
    (gg,) = jitgrad.autograd.grad((g * g).sum(), x)
    np.testing.assert_allclose(gg.cpu().numpy(), 8 * np.exp(2 * a), rtol=1e-4)
