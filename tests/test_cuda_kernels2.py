"""More hand-written CUDA kernels, on numba's simulator (``tests/test_cuda_ptx.py`` compiles
them to PTX): complex and bool ``scatter_add`` / ``index_add`` / ``index_put(accumulate=True)``
(two float atomics on the complex result's floats; a logical or for bool), bool ``diag`` /
``diag_embed``, and the further sorts, scans and indexed writes of ``cuda_lines2``.

Each case runs the same call on the CPU and on cuda tensors and compares values, dtypes and
gradients (the CPU ops are tested against torch elsewhere). Sizes are tiny.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import CUDA

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402

RNG = np.random.default_rng(1414)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def both(fn, *arrays, dtype=None, grad=True, rtol=1e-10, atol=1e-12):
    """``fn`` on CPU and on cuda tensors made from ``arrays`` (NumPy arrays in ``dtype``, or
    tensors of another kind passed through): equal values and dtypes, and for float or complex
    inputs equal gradients of a real loss of the outputs. Returns the cuda outputs."""
    results = []
    for device in ("cpu", "cuda"):
        ts = []
        for a in arrays:
            if isinstance(a, np.ndarray):
                t = jitgrad.tensor(a, device=device, dtype=dtype if a.dtype.kind in "fcb" and
                                   dtype is not None else None)
                if grad and (t.dtype.is_floating_point or t.dtype.is_complex):
                    t.requires_grad_()
                ts.append(t)
            else:
                ts.append(a)
        outs = fn(*ts)
        outs = [o for o in (outs if isinstance(outs, (tuple, list)) else (outs,))
                if isinstance(o, jitgrad.Tensor)]
        leaves = [t for t in ts if isinstance(t, jitgrad.Tensor) and t.requires_grad]
        grads = []
        diff = [o for o in outs if o.requires_grad]
        if leaves and diff:
            total = 0
            for k, o in enumerate(diff):
                w = (k + 1.5) * (1 + 0.25j if o.dtype.is_complex else 1.0)
                total = total + ((o * w).real if o.dtype.is_complex else o * w).sum() \
                    + (o.abs().sum() if o.dtype.is_complex else 0)
            grads = jitgrad.autograd.grad(total, leaves, allow_unused=True)
        if device == "cuda":
            assert all(o.is_cuda for o in outs)
            assert all(g is None or g.is_cuda for g in grads)
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (cpu, cpu_g), (gpu, gpu_g) = results
    assert len(cpu_g) == len(gpu_g)
    for a, b in zip(cpu + cpu_g, gpu + gpu_g):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype, (a.dtype, b.dtype)
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    return gpu


def _index(a, device):
    return jitgrad.tensor(np.asarray(a), device=device)


# ---------------------------------------------------------------- complex and bool adds
@pytest.mark.parametrize("dtype", [jitgrad.complex64, jitgrad.complex128])
def test_complex_scatter_add_index_add_and_accumulate_with_gradients(dtype):
    idx = np.array([[0, 2, 0, 1], [0, 0, 2, 2]])  # (duplicates: the atomics must add)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is jitgrad.complex64 else {}
    for dim in (0, 1):
        i = idx if dim == 0 else idx[:, :3]
        both(lambda x, s, dim=dim, i=i: x.scatter_add(dim, _index(i, x.device.type), s),
             _complex(3, 4), _complex(*i.shape), dtype=dtype, **tol)
    both(lambda x, s: x.index_add(1, _index([3, 0, 3], x.device.type), s, alpha=2),
         _complex(2, 4), _complex(2, 3), dtype=dtype, **tol)
    both(lambda x, s: x.index_put((_index([1, 0, 1], x.device.type),), s, accumulate=True),
         _complex(3, 2), _complex(3, 2), dtype=dtype, **tol)
    both(lambda x, s: x.index_add(0, _index([1, 1, 1], x.device.type), s)[1],  # 1-d
         _complex(2), _complex(3), dtype=dtype, **tol)


def test_complex_scatter_add_gradients_equal_torch():
    torch = pytest.importorskip("torch")
    x0, s0, i0 = _complex(3, 4), _complex(2, 4), np.array([[0, 2, 0, 1], [0, 0, 2, 2]])
    w = _complex(3, 4)
    x, s = (jitgrad.tensor(a, device="cuda", requires_grad=True) for a in (x0, s0))
    ((x.scatter_add(0, _index(i0, "cuda"), s) * jitgrad.tensor(w, device="cuda")).abs()
     .sum().backward())
    tx, ts = (torch.tensor(a, requires_grad=True) for a in (x0, s0))
    (tx.scatter_add(0, torch.tensor(i0), ts) * torch.tensor(w)).abs().sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(s.grad.cpu().numpy(), ts.grad.numpy(), rtol=1e-10)


def test_bool_adds_are_a_logical_or():
    x = RNG.standard_normal((3, 5)) > 0.8
    s = RNG.standard_normal((4, 5)) > 0
    idx = np.array([[0, 1, 2, 0, 1], [2, 2, 2, 2, 2], [0, 0, 0, 0, 0], [1, 0, 1, 0, 1]])
    out = both(lambda x, s: x.scatter_add(0, _index(idx, x.device.type), s), x, s)[0]
    assert out.dtype == np.bool_ and out.any() and not out.all()
    both(lambda x, s: x.index_add(0, _index([2, 2, 0, 2], x.device.type), s), x, s)
    both(lambda x, s: x.index_put((_index([1, 1, 0, 1], x.device.type),), s, accumulate=True),
         x, s)
    y = jitgrad.zeros(3, dtype=jitgrad.bool, device="cuda")  # (True or False is True)
    y = y.index_put((_index([0, 0, 2], "cuda"),), _index([True, False, False], "cuda"),
                    accumulate=True)
    assert y.cpu().tolist() == [True, False, False]


# ---------------------------------------------------------------- bool diag / diag_embed
def test_bool_diag_and_diag_embed_stay_bool():
    b = np.array([True, False, True])
    m = RNG.standard_normal((3, 4)) > 0
    for r in both(lambda x, m: (x.diag(), x.diag(1), x.diag(-2), x.diag_embed(-1), m.diag(),
                                m.diag(-1), m.diag(2), m.diagonal(1)), b, m):
        assert r.dtype == np.bool_
    both(lambda x: x.diag_embed(1, 0, 2), np.stack([b, ~b]))
    both(lambda x: x.diag_embed(1, 0, 2), RNG.standard_normal((2, 3)))  # (float: gradients)
