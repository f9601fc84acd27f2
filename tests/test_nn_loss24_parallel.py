"""nn.DataParallel (single process: runs the module, ``module.`` state_dict keys) and
nn.SyncBatchNorm (BatchNorm outside a process group, as torch on CPU; convert_sync_batchnorm)
against torch."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn

RNG = np.random.default_rng(2400)


def _t(a, grad=False):
    return jitgrad.tensor(a, requires_grad=grad)


@pytest.fixture
def no_gpu(monkeypatch):
    """torch's CPU behavior: no GPU, so DataParallel keeps ``device_ids = []``."""
    from jitgrad import cuda

    monkeypatch.setattr(cuda, "is_available", lambda: False)


def test_data_parallel_runs_the_module(no_gpu):
    torch = pytest.importorskip("torch")
    inner = nn.Linear(3, 2, dtype=jitgrad.float64)
    m = nn.DataParallel(inner)
    assert m.module is inner and m.device_ids == []
    assert nn.parallel.DataParallel is nn.DataParallel
    tm = torch.nn.DataParallel(torch.nn.Linear(3, 2).double())
    assert list(m.state_dict()) == list(tm.state_dict()) == ["module.weight", "module.bias"]
    assert repr(m) == repr(tm)
    m.load_state_dict({k: _t(v.numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((4, 3))
    xj = _t(x, grad=True)
    out = m(xj)
    np.testing.assert_allclose(out.detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    out.sum().backward()
    assert inner.weight.grad is not None
    assert [n for n, _ in m.named_parameters()] == ["module.weight", "module.bias"]


@pytest.mark.parametrize("shape", [(6, 3), (6, 3, 4), (4, 3, 2, 5), (2, 3, 2, 2, 2)])
def test_sync_batchnorm_is_batchnorm_in_one_process(shape):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    tm = torch.nn.SyncBatchNorm(3, momentum=0.3).double()
    jm = nn.SyncBatchNorm(3, momentum=0.3, dtype=jitgrad.float64)
    assert repr(jm) == repr(tm)
    assert list(jm.state_dict()) == list(tm.state_dict())
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(RNG.random(3) + 0.5))
    jm.load_state_dict({k: _t(v.numpy()) for k, v in tm.state_dict().items()})
    xt = torch.tensor(x, requires_grad=True)
    xj = _t(x, grad=True)
    yt, yj = tm(xt), jm(xj)
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    (yt * torch.tensor(x)).sum().backward()
    (yj * _t(x)).sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(jm, name).numpy(), getattr(tm, name).numpy(),
                                   rtol=1e-12)
    jm.eval()
    tm.eval()
    np.testing.assert_allclose(jm(xj).detach().numpy(), tm(xt).detach().numpy(), rtol=1e-10)


def test_sync_batchnorm_errors():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(jitgrad.randn(4))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be "
                                         "non-zero"):
        nn.SyncBatchNorm(0)(jitgrad.randn(4, 0))


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3),
                          nn.Sequential(nn.Conv2d(3, 2, 1), nn.BatchNorm2d(2, affine=False)))
    bn = model[1]
    model.eval()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert out is model
    assert isinstance(model[1], nn.SyncBatchNorm) and isinstance(model[2][1], nn.SyncBatchNorm)
    assert model[1].weight is bn.weight and model[1].running_mean is bn.running_mean
    assert model[1].training is False and model[2][1].weight is None
    assert isinstance(model[0], nn.Linear)
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5, eps=1e-3))
    assert isinstance(single, nn.SyncBatchNorm) and single.eps == 1e-3


_SIMULATED = r"""
import sys
sys.path.insert(0, ".")
import numba
numba.config.ENABLE_CUDASIM = True
import numpy as np
import jitgrad, jitgrad.nn as nn, jitgrad.nn.functional as F
if not jitgrad.cuda.is_available():
    print("NO-CUDA")
    raise SystemExit(0)
jitgrad.manual_seed(0)
lin = nn.Linear(3, 2)
w, b = lin.weight.detach().numpy().copy(), lin.bias.detach().numpy().copy()
m = nn.DataParallel(lin)
assert m.device_ids == [0] and str(lin.weight.device) == "cuda:0"
x = jitgrad.tensor(np.ones((4, 3), dtype=np.float32), requires_grad=True)
y = m(x)
assert str(y.device) == "cuda:0"
# float32 sums of terms below 1 in size: an absolute float32 bound, as an output can cancel to ~0
np.testing.assert_allclose(y.detach().cpu().numpy(), np.ones((4, 3)) @ w.T + b, rtol=1e-6,
                           atol=1e-6)
y.sum().backward()
assert str(x.grad.device) == "cpu" and str(lin.weight.grad.device) == "cuda:0"
assert list(m.state_dict()) == ["module.weight", "module.bias"]
xx = np.random.default_rng(0).standard_normal((6, 2, 4)).astype(np.float32)
tg = jitgrad.tensor(np.array([[1, 2], [3, 0]]))
xc = jitgrad.tensor(xx, device="cuda", requires_grad=True)
loss = F.ctc_loss(xc.log_softmax(2), tg, [6, 5], [2, 1])
loss.backward()
xh = jitgrad.tensor(xx, requires_grad=True)
F.ctc_loss(xh.log_softmax(2), tg, [6, 5], [2, 1]).backward()
assert str(loss.device) == "cuda:0" and str(xc.grad.device) == "cuda:0"
np.testing.assert_allclose(xc.grad.cpu().numpy(), xh.grad.numpy(), rtol=1e-5, atol=1e-6)
print("OK")
"""


def test_data_parallel_and_ctc_on_one_simulated_gpu():
    """With a GPU (numba's simulator, in a subprocess so the setting stays there): the module
    moves to cuda:0, CPU inputs follow it; ctc_loss keeps cuda tensors on the device."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SIMULATED], capture_output=True, text=True,
                          timeout=300)
    if "NO-CUDA" in done.stdout:
        pytest.skip("numba.cuda is not usable here")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("OK")
