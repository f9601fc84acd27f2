"""optim.swa_utils, nn.utils.fusion, Tensor.apply_/map_ and Module.half/type/to(tensor),
against torch (names the tutorials use that jitgrad lacked)."""

import numpy as np
import pytest

import jitgrad

FUSE = '''
import jitgrad as torch
import jitgrad.nn as nn
from jitgrad.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
result = []
for transpose in (False, True):
    conv = (nn.ConvTranspose2d if transpose else nn.Conv2d)(3, 4, 3, bias=not transpose)
    bn = nn.BatchNorm2d(4)
    with torch.no_grad():
        for k, t in enumerate(list(conv.parameters()) + list(bn.parameters())
                              + [bn.running_mean, bn.running_var]):
            t.copy_(torch.sin(torch.arange(t.numel(), dtype=torch.float32) + k).view_as(t).abs()
                    + 0.1)
    conv.eval()
    bn.eval()
    x = torch.cos(torch.arange(2 * 3 * 5 * 5, dtype=torch.float32)).view(2, 3, 5, 5)
    fused = fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert (fused(x) - bn(conv(x))).abs().max().item() < 1e-5
    result.append(fused(x).tolist())
lin, bn1 = nn.Linear(3, 4), nn.BatchNorm1d(4)
with torch.no_grad():
    bn1.running_mean.fill_(0.5)
    bn1.running_var.fill_(2.0)
    lin.weight.fill_(0.3)
    lin.bias.fill_(-0.2)
lin.eval()
bn1.eval()
result.append(fuse_linear_bn_eval(lin, bn1)(torch.ones(2, 3)).tolist())
result.append(bn1(lin(torch.ones(2, 3))).tolist())
'''


def _both(src, **consts):
    torch = pytest.importorskip("torch")
    out = []
    for lib, text in ((jitgrad, src), (torch, src.replace("jitgrad", "torch"))):
        lib.manual_seed(0)
        g = dict(consts)
        exec(text, g)  # noqa: S102
        out.append(g["result"])
    return out


def _close(a, b):
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], (list, tuple)):
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   rtol=1e-5, atol=1e-6)


def _averaging_run(lib, strategy):
    """Our own averaging scenario: SGD on a small BN regressor, two EMA copies updated every
    step, an equal-weight average from epoch 3 on under SWALR (cosine annealing before), then
    update_bn. Written in the way torch.optim's SWA/EMA docs use the API, not a copy of them."""
    su = lib.optim.swa_utils
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(),
                            lib.nn.Linear(6, 2))
    with lib.no_grad():
        for j, w in enumerate(net.parameters()):
            w.copy_((lib.cos(lib.arange(w.numel(), dtype=lib.float32) * 0.7 - j) * 0.6)
                    .view_as(w))
    feats = lib.sin(lib.arange(80, dtype=lib.float32) * 0.45).view(20, 4)
    goal = lib.stack([feats[:, 0] - feats[:, 3], feats.mean(1)], dim=1)
    batches = [(feats[s:s + 5], goal[s:s + 5]) for s in range(0, 20, 5)]

    sgd = lib.optim.SGD(net.parameters(), lr=0.04)
    uniform_avg = su.AveragedModel(net)
    ema_params = su.AveragedModel(net, multi_avg_fn=su.get_ema_multi_avg_fn(0.85))
    ema_all = su.AveragedModel(net, avg_fn=su.get_ema_avg_fn(0.7), use_buffers=True)
    warm = lib.optim.lr_scheduler.CosineAnnealingLR(sgd, T_max=50)
    averaging = su.SWALR(sgd, swa_lr=0.02, anneal_epochs=3, anneal_strategy=strategy)
    lr_trace = []
    for epoch in range(7):
        for inp, want in batches:
            sgd.zero_grad()
            lib.nn.functional.mse_loss(net(inp), want).backward()
            sgd.step()
            for ema in (ema_params, ema_all):
                ema.update_parameters(net)
        averaging_phase = epoch >= 3
        if averaging_phase:
            uniform_avg.update_parameters(net)
        (averaging if averaging_phase else warm).step()
        lr_trace.append(sgd.param_groups[0]["lr"])
    su.update_bn(batches, uniform_avg)
    for avg in (uniform_avg, ema_params, ema_all):
        avg.eval()
    return (uniform_avg(feats).tolist(), ema_params(feats).tolist(), ema_all(feats).tolist(),
            uniform_avg.module[1].running_mean.tolist(), int(uniform_avg.n_averaged), lr_trace)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swa_ema_swalr_update_bn_match_torch(strategy):
    torch = pytest.importorskip("torch")
    ours, theirs = _averaging_run(jitgrad, strategy), _averaging_run(torch, strategy)
    for a, b in zip(ours, theirs):
        _close(a, b) if isinstance(a, list) else None
    assert ours[4] == theirs[4] == 4


def test_swalr_errors_match_torch():
    torch = pytest.importorskip("torch")
    for call in (lambda L, o: L.optim.swa_utils.SWALR(o, 0.1, anneal_strategy="exp"),
                 lambda L, o: L.optim.swa_utils.SWALR(o, 0.1, anneal_epochs=-1),
                 lambda L, o: L.optim.swa_utils.SWALR(o, [0.1, 0.2])):
        msgs = []
        for lib in (torch, jitgrad):
            opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
            with pytest.raises(ValueError) as e:
                call(lib, opt)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_fuse_conv_and_linear_with_batchnorm_match_torch():
    ours, theirs = _both(FUSE)
    _close(ours, theirs)
    _close(ours[2], ours[3])  # the fused linear layer is linear + bn


def test_apply_and_map_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        assert lib.arange(3).apply_(lambda v: v * 1.7).tolist() == [0, 1, 3]
        assert lib.tensor([True, False]).apply_(lambda v: not v).tolist() == [False, True]
        a = lib.arange(3.0).reshape(3, 1).expand(3, 2).contiguous()
        assert a.map_(lib.tensor([10.0, 20.0]), lambda x, y: x + y).tolist() == \
            [[10.0, 20.0], [11.0, 21.0], [12.0, 22.0]]
    for call, exc in ((lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v), RuntimeError),
                      (lambda L: L.ones(2).apply_(lambda v: "x"), TypeError),
                      (lambda L: L.ones(2).map_(L.ones(2, requires_grad=True), max),
                       RuntimeError)):
        msgs = []
        for lib in (torch, jitgrad):
            with pytest.raises(exc) as e:
                call(lib)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_apply_is_in_place_and_bumps_the_version():
    t = jitgrad.ones(3)
    view = t[1:]
    v = t._version
    assert t.apply_(lambda x: x + 1) is t
    assert view.tolist() == [2.0, 2.0] and t._version > v


def test_module_half_type_and_to_tensor():
    lin = jitgrad.nn.Linear(2, 2)
    assert lin.half().weight.dtype is jitgrad.float16
    assert lin.type(jitgrad.float64).bias.dtype is jitgrad.float64
    assert lin.to(jitgrad.ones(1, dtype=jitgrad.float32)).weight.dtype is jitgrad.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                                        "dtypes, but got desired dtype=jitgrad.int64"):
        lin.to(jitgrad.int64)
