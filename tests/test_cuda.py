"""CUDA tensors, eager kernels and fused jit kernels, on numba's CUDA simulator.

The module turns the simulator on (``numba.config.ENABLE_CUDASIM``, not the environment, which
other tests' subprocesses would inherit) before ``numba.cuda`` is first imported (where another
module imported it first, it runs on whatever that import chose: a GPU or the simulator) and
skips when ``numba.cuda`` is unusable. The simulator runs kernels as Python threads, so sizes
are tiny. Tests marked ``gpu`` need a real GPU and skip without one.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest


def _simulator_cuda():
    if "numba.cuda" not in sys.modules:  # (not os.environ: other tests' subprocesses inherit it)
        import numba

        numba.config.ENABLE_CUDASIM = True
    try:
        import numba
        from numba import cuda

        if cuda.is_available() and numba.config.ENABLE_CUDASIM:
            import cudasim_polite

            cudasim_polite.install(cudasim_polite.KNOWN_RUN_SHA256)
        return cuda if cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no numba-cuda, a broken toolkit
        return None


CUDA = _simulator_cuda()
pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402
from jitgrad.backends import numba_cuda  # noqa: E402

F32, F64 = jitgrad.float32, jitgrad.float64
RNG = np.random.default_rng(0)


def _real_gpu() -> bool:
    import numba

    return CUDA is not None and not numba.config.ENABLE_CUDASIM


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _dev(a, requires_grad=False):
    return jitgrad.tensor(a, device="cuda", requires_grad=requires_grad)


def _host(t) -> np.ndarray:
    assert t.is_cuda, "the result should stay on the device"
    return t.detach().cpu().numpy()


# ---------------------------------------------------------------- device tensors
def test_device_tensors_and_copies():
    assert jitgrad.cuda.is_available() and jitgrad.cuda.device_count() >= 1
    a = _rand(2, 3)
    x = _dev(a)
    assert x.is_cuda and x.device == jitgrad.device("cuda", 0) and str(x.device) == "cuda:0"
    assert x.shape == (2, 3) and x.dtype is F32 and x.is_contiguous()
    back = x.cpu()
    assert not back.is_cuda and back.device == jitgrad.device("cpu")
    np.testing.assert_array_equal(back.numpy(), a)
    for y in (jitgrad.tensor(a).cuda(), jitgrad.tensor(a).to("cuda:0"),
              jitgrad.tensor(a).to(jitgrad.device("cuda")), jitgrad.ones(2, 3, device="cuda")):
        assert y.is_cuda
    assert x.cuda() is x and back.cpu() is back and x.to("cuda") is x
    z = jitgrad.tensor(a).to("cuda", F64)
    assert z.is_cuda and z.dtype is F64
    np.testing.assert_array_equal(_host(z), a.astype(np.float64))
    assert jitgrad.zeros_like(x).is_cuda and jitgrad.full_like(x, 2.0).is_cuda
    assert x.new_zeros(2).is_cuda and x.new_full((2,), 1.0).is_cuda and x.new_tensor([1]).is_cuda
    assert not x.new_ones(2, device="cpu").is_cuda
    assert jitgrad.randn(3, device="cuda").is_cuda
    assert jitgrad.arange(4, device="cuda").cpu().tolist() == [0, 1, 2, 3]
    assert _dev(np.float32(2.5)).item() == 2.5 and x.tolist() == a.tolist()
    assert repr(_dev(np.array([1.0, 2.0], np.float32))) == \
        "tensor([1., 2.], device='cuda:0')"
    jitgrad.cuda.synchronize()


def test_save_and_pickle_copy_cuda_tensors_to_the_host(tmp_path):
    import pickle

    a = _rand(2, 2)
    x = _dev(a)
    jitgrad.save({"x": x}, tmp_path / "x.pt")
    loaded = jitgrad.load(tmp_path / "x.pt")["x"]
    assert not loaded.is_cuda and loaded.tolist() == a.tolist()
    assert pickle.loads(pickle.dumps(x)).tolist() == a.tolist()
    import copy

    deep = copy.deepcopy(x)
    assert deep.is_cuda and deep._data.root is not x._data.root and deep.tolist() == a.tolist()


def test_device_errors():
    x = _dev(_rand(3))
    c = jitgrad.ones(3)
    text = "Expected all tensors to be on the same device, but found at least two devices, " \
        "cuda:0 and cpu!"
    for f in (lambda: x + c, lambda: c * x, lambda: jitgrad.mm(x.reshape(3, 1),
                                                                   c.reshape(1, 3))):
        with pytest.raises(RuntimeError) as err:
            f()
        assert str(err.value) == text
    numpy_text = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
                  "the tensor to host memory first.")
    with pytest.raises(TypeError) as err:
        x.numpy()
    assert str(err.value) == numpy_text
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        np.asarray(x)
    with pytest.raises(NotImplementedError, match=r"'sinc' has no CUDA kernel yet \(sinc: no "
                       r"kernel for complex values on the device\).*\.cpu\(\)"):
        x.to(jitgrad.complex64).sinc()  # (no complex template)
    with pytest.raises(RuntimeError, match="only cuda:0"):
        jitgrad.ones(2, device="cuda:1")


def test_bf16_support_is_reported_as_absent():
    # (cuda tensors have no bfloat16: nanoGPT's "bfloat16 if torch.cuda.is_bf16_supported()
    # else float16" then picks float16, which works)
    assert jitgrad.cuda.is_bf16_supported() is False
    assert jitgrad.cuda.is_bf16_supported(including_emulation=False) is False
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        jitgrad.ones(2, device="cuda", dtype=jitgrad.bfloat16)
    assert _dev(_rand(2)).half().dtype == jitgrad.float16


def test_without_a_driver_device_cuda_names_the_extra():
    # a fresh interpreter with neither a GPU nor the simulator (skipped where a GPU is usable)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = ("import sys, jitgrad\n"
            "f = jitgrad.jit(lambda x: (x.exp() * 2).sum())\n"
            "f(jitgrad.ones(3, requires_grad=True)).backward()\n"
            "print('cpu work imported numba.cuda:', 'numba.cuda' in sys.modules)\n"
            "if jitgrad.cuda.is_available():\n    print('GPU')\nelse:\n"
            "    try:\n        jitgrad.ones(2, device='cuda')\n"
            "    except RuntimeError as e:\n        print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         timeout=120)
    assert "cpu work imported numba.cuda: False" in out.stdout, out  # a CPU run never does
    if out.stdout.strip().endswith("GPU"):
        pytest.skip("a GPU is usable here")
    assert "needs a usable CUDA GPU" in out.stdout and "jitgrad[cuda]" in out.stdout, out


# ---------------------------------------------------------------- eager kernels
def test_pointwise_and_broadcasting_match_numpy():
    a, b = _rand(3, 1), _rand(4)
    x, y = _dev(a), _dev(b)
    cases = [
        (x + y, a + b), (x * y - 2.0, a * b - 2.0), (x / (y * y + 1), a / (b * b + 1)),
        (jitgrad.exp(x) + y.tanh(), np.exp(a) + np.tanh(b)),
        (jitgrad.sigmoid(y), 1 / (1 + np.exp(-b))), (jitgrad.maximum(x, y), np.maximum(a, b)),
        (jitgrad.where(x > y, x, y * 3), np.where(a > b, a, b * 3)),
        ((x > 0), a > 0), (abs(x).sqrt(), np.sqrt(np.abs(a))), (-x, -a),
    ]
    for got, want in cases:
        assert got.is_cuda and got.shape == want.shape
        np.testing.assert_allclose(_host(got), want, rtol=1e-5, atol=1e-6)
    i = _dev(np.arange(6, dtype=np.int64).reshape(2, 3))
    np.testing.assert_array_equal(_host(i * 2 + 1), np.arange(6).reshape(2, 3) * 2 + 1)
    assert (i * 2).dtype is jitgrad.int64 and (i / 2).dtype is F32  # torch's promotion
    d = _dev(_rand(2, 2, dtype=np.float64))
    assert (d + 1).dtype is F64


def test_eager_kernels_are_cached_per_op_dtypes_and_ranks():
    from jitgrad.backends import cuda_eager

    _dev(_rand(5)).exp()
    n = len(cuda_eager._EAGER)
    for size in (7, 33, 2):  # new sizes reuse the kernel
        x = _rand(size)
        np.testing.assert_allclose(_host(_dev(x).exp()), np.exp(x), rtol=1e-6)
    assert len(cuda_eager._EAGER) == n
    _dev(_rand(2, 3, 2, 2)).exp()  # another rank: another kernel
    assert len(cuda_eager._EAGER) == n + 1
    x = _rand(4)
    _dev(x) * 2.0
    n = len(cuda_eager._EAGER)
    for c in (3.5, -0.1, 1e30):  # Python numbers are kernel arguments, not constants
        np.testing.assert_array_equal(_host(_dev(x) * c), x * np.float32(c))
    assert len(cuda_eager._EAGER) == n
    d = _rand(3, dtype=np.float64)  # a float64 operand: the number stays float64
    np.testing.assert_array_equal(_host(_dev(d) * 0.1), d * 0.1)
    i = _dev(np.arange(3))
    assert (i * 2.5).dtype is F32 and (i + True).dtype is jitgrad.int64
    np.testing.assert_array_equal(_host(i * 2.5), np.arange(3) * np.float32(2.5))


def test_reductions_match_numpy():
    a = _rand(4, 5, 3)
    x = _dev(a)
    cases = [(x.sum(), a.sum()), (x.sum(1), a.sum(1)), (x.sum((0, 2), keepdim=True),
                                                         a.sum((0, 2), keepdims=True)),
             (x.mean(), a.mean()), (x.mean(-1), a.mean(-1)), (x.amax(), a.max()),
             (x.amax(0), a.max(0)), (x.amin(2), a.min(2)), (x.max(), a.max())]
    for got, want in cases:
        assert got.is_cuda and got.dtype is F32 and got.shape == np.shape(want)
        np.testing.assert_allclose(_host(got), want, rtol=1e-5, atol=1e-6)
    big = _rand(300)  # more elements than one block's threads: several blocks' atomics
    np.testing.assert_allclose(_dev(big).sum().item(), big.astype(np.float64).sum(),
                               rtol=1e-5)
    i = _dev(np.arange(12, dtype=np.int64).reshape(3, 4))
    assert i.sum().item() == 66 and i.sum(0).cpu().tolist() == [12, 15, 18, 21]
    # prod has no atomic to merge partial products: one thread per output (cuda_lines)
    np.testing.assert_allclose(_host(x.prod(1)), a.prod(1), rtol=1e-5)


def test_views_stay_on_the_device():
    a = _rand(3, 4)
    x = _dev(a)
    t = x.t()
    assert t.is_cuda and not t.is_contiguous() and t._data.root is x._data.root  # a view
    np.testing.assert_array_equal(_host(t), a.T)
    np.testing.assert_array_equal(_host(x[1:, ::2]), a[1:, ::2])
    np.testing.assert_array_equal(_host(x[2]), a[2])
    np.testing.assert_array_equal(_host(t.reshape(12)), a.T.reshape(12))  # copies on device
    np.testing.assert_array_equal(_host(x.unsqueeze(0).expand(2, 3, 4)),
                                  np.broadcast_to(a, (2, 3, 4)))
    np.testing.assert_allclose(_host(t * 2 + x.permute(1, 0)), a.T * 3, rtol=1e-6)
    np.testing.assert_array_equal(_host(t.contiguous()), a.T)
    np.testing.assert_array_equal(_host(jitgrad.cat([x, t.t() * 2], 1)),
                                  np.concatenate([a, a * 2], 1))
    np.testing.assert_array_equal(_host(jitgrad.stack([x[0], x[1]])), a[:2])


def test_gradients_of_views_slices_and_composites():
    torch = pytest.importorskip("torch")
    a = _rand(3, 4, dtype=np.float64)
    x = _dev(a, requires_grad=True)
    out = (x[1:, ::2] * 3).sum() + x[0].exp().sum() + jitgrad.softmax(x, 1)[:, 0].sum() \
        + jitgrad.cat([x, x.t().t()], 0).pow(2).mean()
    out.backward()
    tx = torch.tensor(a, requires_grad=True)
    tout = (tx[1:, ::2] * 3).sum() + tx[0].exp().sum() + torch.softmax(tx, 1)[:, 0].sum() \
        + torch.cat([tx, tx.t().t()], 0).pow(2).mean()
    tout.backward()
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-12)
    np.testing.assert_allclose(_host(x.grad), tx.grad.numpy(), rtol=1e-12)


def test_matmul_tiled_kernel():
    a, b = _rand(5, 7), _rand(7, 3)
    x, y = _dev(a), _dev(b)
    np.testing.assert_allclose(_host(x @ y), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_host(y.t() @ x.t()), (a @ b).T, rtol=1e-5, atol=1e-5)
    c, d = _rand(2, 3, 6), _rand(2, 6, 5)
    np.testing.assert_allclose(_host(jitgrad.bmm(_dev(c), _dev(d))), c @ d, rtol=1e-5,
                               atol=1e-5)
    v = _rand(7)
    np.testing.assert_allclose(_host(x @ _dev(v)), a @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_dev(v).dot(_dev(v)).item(), v @ v, rtol=1e-5)
    bias = _rand(3)
    np.testing.assert_allclose(_host(jitgrad.addmm(_dev(bias), x, y)), bias + a @ b,
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- autograd
def test_autograd_on_cuda_matches_torch():
    torch = pytest.importorskip("torch")
    a, w, b = _rand(4, 3, dtype=np.float64), _rand(3, 2, dtype=np.float64), _rand(2,
                                                                                   dtype=np.float64)
    x, W, B = (_dev(v, requires_grad=True) for v in (a, w, b))
    loss = (jitgrad.tanh(x @ W + B) * 2).mean() + (x * x).sum()
    loss.backward()
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (a, w, b))
    tloss = (torch.tanh(tx @ tw + tb) * 2).mean() + (tx * tx).sum()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10)
    for got, want in ((x, tx), (W, tw), (B, tb)):
        assert got.grad.is_cuda  # gradients stay on the device
        np.testing.assert_allclose(_host(got.grad), want.grad.numpy(), rtol=1e-10)


def test_cross_entropy_and_embedding_on_cuda_match_torch():
    torch = pytest.importorskip("torch")
    emb, logits_w = _rand(5, 3, dtype=np.float64), _rand(3, 4, dtype=np.float64)
    tokens, labels = np.array([[0, 4], [2, 2]]), np.array([1, 3, 0, 1])
    E, W = _dev(emb, requires_grad=True), _dev(logits_w, requires_grad=True)
    h = jitgrad.nn.functional.embedding(_dev(tokens), E).reshape(4, 3)
    loss = jitgrad.nn.functional.cross_entropy(h @ W, _dev(labels))
    loss.backward()
    tE, tW = torch.tensor(emb, requires_grad=True), torch.tensor(logits_w, requires_grad=True)
    th = torch.nn.functional.embedding(torch.tensor(tokens), tE).reshape(4, 3)
    tloss = torch.nn.functional.cross_entropy(th @ tW, torch.tensor(labels))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(_host(E.grad), tE.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_host(W.grad), tW.grad.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(IndexError, match="index out of range"):
        jitgrad.nn.functional.embedding(_dev(np.array([5])), E)


def test_gradcheck_through_the_device():
    x = jitgrad.tensor(_rand(2, 2, dtype=np.float64), requires_grad=True)
    w = jitgrad.tensor(_rand(2, 2, dtype=np.float64), requires_grad=True)

    def f(x, w):  # cpu -> cuda -> cpu: ToCopyBackward0 carries gradients across
        h = x.cuda() @ w.cuda()
        return (jitgrad.sigmoid(h) * h.t()).sum(0).cpu()

    assert f(x, w).grad_fn.name() == "ToCopyBackward0"
    assert jitgrad.autograd.gradcheck(f, (x, w))


def test_modules_optimizers_and_inplace_ops_on_cuda():
    torch = pytest.importorskip("torch")
    jitgrad.manual_seed(0)
    m = jitgrad.nn.Sequential(jitgrad.nn.Linear(3, 4), jitgrad.nn.Tanh(), jitgrad.nn.Linear(4, 2))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p, tp in zip(m.parameters(), tm.parameters()):
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    assert m.cuda() is m and all(p.is_cuda for p in m.parameters())
    opt = jitgrad.optim.Adam(m.parameters(), lr=0.1)
    topt = torch.optim.Adam(tm.parameters(), lr=0.1)
    xs = _rand(5, 3)
    for _ in range(2):
        opt.zero_grad()
        m(_dev(xs)).pow(2).mean().backward()
        opt.step()
        topt.zero_grad()
        tm(torch.from_numpy(xs)).pow(2).mean().backward()
        topt.step()
    for p, tp in zip(m.parameters(), tm.parameters()):
        assert p.is_cuda
        np.testing.assert_allclose(_host(p), tp.detach().numpy(), rtol=1e-4, atol=1e-5)
    m.cpu()
    assert not any(p.is_cuda for p in m.parameters())
    x = jitgrad.ones(2, 3, device="cuda")
    x.fill_(2.0)
    x[0].mul_(3)  # through a view: written into x's memory on the device
    assert x.cpu().tolist() == [[6.0] * 3, [2.0] * 3] and x._version == 2
    x.zero_()
    assert x.cpu().tolist() == [[0.0] * 3] * 2


# ---------------------------------------------------------------- interop
def test_dlpack_and_cuda_array_interface():
    a = np.arange(6.0).reshape(2, 3)
    t = jitgrad.from_dlpack(a)  # a host array: zero-copy through NumPy's DLPack
    a[0, 0] = 7.0
    assert t[0, 0].item() == 7.0 and t.__dlpack_device__() == (1, 0)
    assert np.from_dlpack(t) is not None and np.shares_memory(np.from_dlpack(t), a)
    assert not hasattr(t, "__cuda_array_interface__")  # as torch: only device tensors
    d = CUDA.to_device(np.arange(5, dtype=np.float32))  # a numba-cuda device array
    x = jitgrad.from_dlpack(d)
    assert x.is_cuda and x.__dlpack_device__() == (2, 0)
    assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match="require gradient"):
        jitgrad.ones(2, requires_grad=True).__dlpack__()
    if not _real_gpu():
        with pytest.raises(BufferError, match="simulator has no device pointers"):
            x.__dlpack__()
        assert not hasattr(x, "__cuda_array_interface__")
    torch = pytest.importorskip("torch")
    tt = torch.arange(4.0)
    j = jitgrad.from_dlpack(tt)
    tt[1] = 9.0
    assert j.tolist() == [0.0, 9.0, 2.0, 3.0]
    assert torch.from_dlpack(j).tolist() == [0.0, 9.0, 2.0, 3.0]


def test_dlpack_capsules_built_with_ctypes():
    from jitgrad import _dlpack

    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # strided host memory

    class Producer:  # the capsule cuda tensors export, here over host memory (kDLCPU)
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kwargs):
            arr = self.arr
            return _dlpack.capsule(arr.ctypes.data, arr.shape,
                                   tuple(s // arr.itemsize for s in arr.strides), arr.dtype,
                                   _dlpack.CPU, arr)

        def __dlpack_device__(self):
            return (_dlpack.CPU, 0)

    live = len(_dlpack._LIVE)
    b = np.from_dlpack(Producer(a))
    a[0, 0] = 99.0
    assert b.tolist() == [[99.0, 2.0], [4.0, 6.0], [8.0, 10.0]] and len(_dlpack._LIVE) == live + 1
    del b
    import gc

    gc.collect()
    assert len(_dlpack._LIVE) == live  # the consumer called the deleter
    Producer(a).__dlpack__()  # never consumed: freed with the capsule
    gc.collect()
    assert len(_dlpack._LIVE) == live
    mask = np.array([True, False])
    assert np.from_dlpack(Producer(mask)).tolist() == [True, False]
    torch = pytest.importorskip("torch")
    assert torch.from_dlpack(Producer(a)).tolist() == [[99.0, 2.0], [4.0, 6.0], [8.0, 10.0]]


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real CUDA GPU")
def test_cuda_array_interface_on_a_real_gpu():
    x = _dev(np.arange(4, dtype=np.float32))
    view = CUDA.as_cuda_array(x)  # numba reads __cuda_array_interface__: no copy
    assert view.__cuda_array_interface__["data"][0] == x.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(view.copy_to_host(), [0, 1, 2, 3])
    assert jitgrad.from_dlpack(view).cpu().tolist() == [0, 1, 2, 3]
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():  # out through DLPack, back through the interface
        t = torch.from_dlpack(x)
        assert t.is_cuda and t.data_ptr() == x.__cuda_array_interface__["data"][0]
        assert jitgrad.from_dlpack(t).cpu().tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------- fused jit kernels
def test_jit_w1_fused_forward_backward_equals_cpu():
    from benchmarks.workloads import w1_case, w1_loss

    xs, ys = w1_case(300).build()

    def loss(a, b):
        return w1_loss(jitgrad, a, b)

    f = jitgrad.jit(loss)  # backend="auto"
    results = []
    for device in ("cpu", "cuda"):
        x = jitgrad.tensor(xs, device=device, requires_grad=True)
        y = jitgrad.tensor(ys, device=device, requires_grad=True)
        value = f(x, y)
        value.backward()
        assert value.is_cuda == (device == "cuda") and x.grad.is_cuda == (device == "cuda")
        results.append((value.item(), x.grad.cpu().numpy(), y.grad.cpu().numpy()))
    assert f.cache_info().misses == 2  # the device is part of the cache key
    (v0, gx0, gy0), (v1, gx1, gy1) = results
    np.testing.assert_allclose(v1, v0, rtol=1e-5)
    np.testing.assert_allclose(gx1, gx0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gy1, gy0, rtol=1e-5, atol=1e-6)
    x = jitgrad.tensor(xs, device="cuda", requires_grad=True)
    y = jitgrad.tensor(ys, device="cuda", requires_grad=True)
    kernels = f.lower(x, y).kernels
    assert "cuda.grid(1)" in kernels["forward"] and "cuda.atomic.add" in kernels["forward"]
    assert "cuda.shared.array" in kernels["forward"]  # the block reduction
    assert kernels["forward"].count("def kernel") == 1  # the whole forward is one kernel


def test_jit_partial_reductions_matmul_views_and_backward():
    a, w = _rand(4, 6, dtype=np.float64), _rand(6, 3, dtype=np.float64)

    def g(x, w):
        h = jitgrad.relu(x @ w)
        y = (h - h.mean(1, keepdim=True)) / (h.amax(0) + 1)
        return jitgrad.softmax(y, 1)[:, 1:].sum() + x.t().sum(0).pow(2).mean()

    results = []
    for device in ("cpu", "cuda"):
        f = jitgrad.jit(g, backend="cuda" if device == "cuda" else "auto")
        x = jitgrad.tensor(a, device=device, requires_grad=True)
        W = jitgrad.tensor(w, device=device, requires_grad=True)
        out = f(x, W)
        out.backward()
        results.append((out.item(), x.grad.cpu().numpy(), W.grad.cpu().numpy()))
    assert x.grad.is_cuda and "cuda.atomic" in f.lower(x, W).kernels["forward"]
    (v0, gx0, gw0), (v1, gx1, gw1) = results
    np.testing.assert_allclose(v1, v0, rtol=1e-12)
    np.testing.assert_allclose(gx1, gx0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw1, gw0, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="backend 'cuda' is not available for cpu tensors"):
        f(jitgrad.tensor(a), jitgrad.tensor(w))
    with pytest.raises(RuntimeError, match="backend 'numba' runs on the CPU"):
        jitgrad.jit(g, backend="numba")(_dev(a), _dev(w))


def test_launch_config_follows_the_size():
    b = numba_cuda.block_size()
    blocks, threads = numba_cuda.launch_config(b - 1)
    assert blocks == 1 and threads == b
    assert numba_cuda.launch_config(b + 1) == (2, b)
    many, _ = numba_cuda.launch_config(10**9)
    assert 1 < many <= max(numba_cuda.MAX_BLOCKS, numba_cuda.SIM_MAX_BLOCKS)


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real CUDA GPU")
def test_w1_on_a_real_gpu_at_1e6():
    from benchmarks.workloads import w1_case, w1_loss

    case = w1_case(10**6)
    xs, ys = case.build()
    x, y = _dev(xs, True), _dev(ys, True)
    value = jitgrad.jit(lambda a, b: w1_loss(jitgrad, a, b))(x, y)
    value.backward()
    want, (gx, gy) = case.numpy_grad(xs.astype(np.float64), ys.astype(np.float64))
    np.testing.assert_allclose(value.item(), want, rtol=1e-4)
    np.testing.assert_allclose(_host(x.grad), gx, rtol=1e-3, atol=1e-4)


def test_cuda_w1_benchmark_runs():
    import io

    from benchmarks import cuda_w1

    row = cuda_w1.run(n=64, repeat=1, out=io.StringIO())
    assert row["seconds"] > 0 and row["bytes"] == 16 * 64 and row["copy_Bps"] > 0


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_dim_gradient_stays_on_the_device(keepdim):
    # (its VJP built the zeros it scatters into on the host: a mixed-device error)
    a = _rand(3, 4).astype(np.float64)
    dev = _dev(a, requires_grad=True)
    values, _ = dev.max(1, keepdim=keepdim)
    (values * values).sum().backward()
    host = jitgrad.tensor(a, requires_grad=True)
    hv, _ = host.max(1, keepdim=keepdim)
    (hv * hv).sum().backward()
    assert dev.grad.is_cuda
    np.testing.assert_array_equal(_host(dev.grad), host.grad.numpy())
