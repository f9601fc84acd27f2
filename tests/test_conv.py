"""Convolution and pooling: values and gradients against torch (float32 and float64) across
stride, padding, dilation, groups and bias; gradcheck and gradgradcheck in float64; torch's
errors; the modules' repr, state_dict keys and initialization; a jitted CNN equal to eager."""

from __future__ import annotations

import itertools
import math
import os
import pathlib
import subprocess
import sys
import warnings

import re

import numpy as np
import pytest
from torch_compare import arr, same_error

import jitgrad
from jitgrad import nn
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn import functional as F

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def _run_both(torch, fn_name, arrays, kwargs, dtype):
    """(jitgrad outputs and input grads, torch outputs and input grads) for one call."""
    out = []
    rng = np.random.default_rng(7)
    go = None
    for lib in (jitgrad, torch):
        ts = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # padding='same' with an even kernel
            y = getattr(lib.nn.functional, fn_name)(*ts, **kwargs)
        y = y[0] if isinstance(y, tuple) else y
        if go is None:
            go = rng.standard_normal(tuple(y.shape))
        grads = lib.autograd.grad(y, ts, lib.tensor(go, dtype=getattr(lib, dtype)))
        out.append((y, grads))
    return out


CONV2D_GRID = [
    dict(stride=s, padding=p, dilation=d, groups=g, bias=b)
    for s, p, d, g, b in itertools.product([1, 2, (2, 1)], [0, 1, (1, 2), "same", "valid"],
                                           [1, 2], [1, 2], [True, False])
    if not (p == "same" and s != 1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", CONV2D_GRID, ids=str)
def test_conv2d_matches_torch(cfg, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    g = cfg["groups"]
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 4 // g, 3, 2))
    arrays = [x, w] + ([rng.standard_normal(6)] if cfg["bias"] else [])
    kwargs = {k: v for k, v in cfg.items() if k != "bias"}
    (jy, jg), (ty, tg) = _run_both(torch, "conv2d", arrays, kwargs, dtype)
    assert jy.grad_fn.name() == ty.grad_fn.name() == "ConvolutionBackward0" or \
        cfg["padding"] == "same"
    np.testing.assert_allclose(arr(jy), arr(ty), **TOL[dtype])
    assert str(jy.dtype).split(".")[-1] == dtype
    for a, b in zip(jg, tg):
        np.testing.assert_allclose(arr(a), arr(b), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cfg", [dict(), dict(stride=2, padding=1), dict(dilation=3, padding=2),
                                 dict(groups=3), dict(padding="same", dilation=2),
                                 dict(stride=3, groups=3, padding="valid")], ids=str)
def test_conv1d_matches_torch(cfg, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    g = cfg.get("groups", 1)
    arrays = [rng.standard_normal((3, 6, 11)), rng.standard_normal((9, 6 // g, 3)),
              rng.standard_normal(9)]
    (jy, jg), (ty, tg) = _run_both(torch, "conv1d", arrays, cfg, dtype)
    assert jy.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(arr(jy), arr(ty), **TOL[dtype])
    for a, b in zip(jg, tg):
        np.testing.assert_allclose(arr(a), arr(b), **TOL[dtype])


@pytest.mark.parametrize("cfg", [dict(stride=2, padding=1, groups=2),
                                 dict(dilation=2, padding="same"),
                                 dict(stride=(1, 2), padding=(0, 1))], ids=str)
def test_conv2d_gradcheck_and_gradgradcheck(cfg):
    rng = np.random.default_rng(2)
    g = cfg.get("groups", 1)
    x = jitgrad.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    w = jitgrad.tensor(rng.standard_normal((2, 2 // g, 2, 3)), requires_grad=True)
    b = jitgrad.tensor(rng.standard_normal(2), requires_grad=True)

    def fn(x, w, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return F.conv2d(x, w, b, **cfg)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv1d_gradgradcheck():
    rng = np.random.default_rng(3)
    x = jitgrad.tensor(rng.standard_normal((2, 2, 6)), requires_grad=True)
    w = jitgrad.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
    assert gradgradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=1), (x, w))


POOL_GRID = {
    "max_pool2d": [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
                   dict(kernel_size=3, stride=2, ceil_mode=True),
                   dict(kernel_size=2, stride=1, padding=1, return_indices=True)],
    "avg_pool2d": [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                   dict(kernel_size=3, stride=2, ceil_mode=True, padding=1),
                   dict(kernel_size=(2, 3), divisor_override=5)],
    "adaptive_avg_pool2d": [dict(output_size=3), dict(output_size=(2, 5)),
                            dict(output_size=(None, 4)), dict(output_size=1),
                            dict(output_size=9)],
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,cfg", [(n, c) for n, cs in POOL_GRID.items() for c in cs], ids=str)
def test_pooling_matches_torch(name, cfg, dtype):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 8))
    (jy, jg), (ty, tg) = _run_both(torch, name, [x], cfg, dtype)
    assert jy.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(arr(jy), arr(ty), **TOL[dtype])
    np.testing.assert_allclose(arr(jg[0]), arr(tg[0]), **TOL[dtype])
    if cfg.get("return_indices"):
        xs = [lib.tensor(x) for lib in (jitgrad, torch)]
        ji, ti = F.max_pool2d(xs[0], **cfg)[1], torch.nn.functional.max_pool2d(xs[1], **cfg)[1]
        assert ji.dtype is jitgrad.int64
        np.testing.assert_array_equal(ji.numpy(), ti.numpy())


def test_max_pool1d_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).standard_normal((2, 3, 9))
    (jy, jg), (ty, tg) = _run_both(torch, "max_pool1d", [x], dict(kernel_size=3, stride=2,
                                                                  padding=1), "float64")
    assert jy.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(arr(jy), arr(ty))
    np.testing.assert_allclose(arr(jg[0]), arr(tg[0]))


@pytest.mark.parametrize("fn,cfg", [(F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1,
                                                         ceil_mode=True)),
                                    (F.adaptive_avg_pool2d, dict(output_size=(3, 2)))],
                         ids=["avg_pool2d", "adaptive_avg_pool2d"])
def test_linear_pooling_gradgradcheck(fn, cfg):
    x = jitgrad.tensor(np.random.default_rng(6).standard_normal((1, 2, 5, 5)),
                       requires_grad=True)
    assert gradcheck(lambda x: fn(x, **cfg), (x,))
    assert gradgradcheck(lambda x: fn(x, **cfg), (x,))


BAD_CALLS = [
    lambda lib: lib.nn.functional.conv2d(lib.ones(3, 4), lib.ones(2, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 4, 6, 6), lib.ones(2, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3), groups=2),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 2, 2), lib.ones(2, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3), stride=0),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3), padding=-1),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3), stride=2,
                                         padding="same"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3),
                                         padding="foo"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3, 3),
                                         lib.ones(3)),
    lambda lib: lib.nn.functional.conv2d(lib.ones(2, 3, 6, 6, dtype=lib.float64),
                                         lib.ones(2, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv1d(lib.ones(2, 3, 6, 6), lib.ones(2, 3, 3)),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(3, 4), 2),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4, 5), 2),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 4, 4), 2, divisor_override=0),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 6, 6), 2, padding=2),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 6, 6), 7),
    lambda lib: lib.nn.functional.max_pool2d(lib.ones(2, 3, 6, 6), 2, stride=0),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 6, 6), 2, padding=2),
    lambda lib: lib.nn.functional.avg_pool2d(lib.ones(2, 3, 6, 6), 7),
    lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(3, 4), 2),
    lambda lib: lib.nn.Conv2d(3, 2, 3, groups=2),
    lambda lib: lib.nn.Conv2d(4, 2, 3, groups=4),
    lambda lib: lib.nn.Conv2d(4, 4, 3, padding="same", stride=2),
    lambda lib: lib.nn.Conv2d(4, 4, 3, padding="fo"),
]


@pytest.mark.parametrize("call", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_errors_match_torch(call):
    pytest.importorskip("torch")
    same_error(call)


def test_bad_padding_mode_error_matches_torch():
    # torch prints a set, whose order depends on the process's string hash seed: compare the
    # text around it and the set's members
    torch = pytest.importorskip("torch")
    texts = []
    for lib in (torch, jitgrad):
        with pytest.raises(ValueError) as info:
            lib.nn.Conv2d(4, 4, 3, padding_mode="zero")
        texts.append(str(info.value))
    pattern = re.compile(r"^(.*)\{(.*)\}(.*)$")
    (t_head, t_set, t_tail), (j_head, j_set, j_tail) = (pattern.match(t).groups() for t in texts)
    assert (j_head, j_tail) == (t_head, t_tail)
    assert set(j_set.split(", ")) == set(t_set.split(", "))


MODULES = ["Conv2d(3, 4, 3)",
           "Conv2d(4, 4, (3, 2), stride=2, padding=1, dilation=2, groups=2, bias=False)",
           "Conv2d(4, 4, 3, padding='same')", "Conv1d(3, 4, 5, padding='valid')",
           "Conv1d(3, 4, 5, stride=2, padding=1)", "MaxPool2d(2)",
           "MaxPool2d(3, 2, 1, 2, True, True)",
           "AvgPool2d(2)", "AvgPool2d((2, 3), 1, 1, True, False, 2)",
           "AdaptiveAvgPool2d((3, None))", "AdaptiveAvgPool2d(1)"]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_and_state_dict_keys_match_torch(spec):
    torch = pytest.importorskip("torch")
    t, j = eval("torch.nn." + spec, {"torch": torch}), eval("jitgrad.nn." + spec)
    assert repr(j) == repr(t)
    assert list(j.state_dict()) == list(t.state_dict())
    for name, p in t.named_parameters():
        assert tuple(dict(j.named_parameters())[name].shape) == tuple(p.shape)


def test_conv_init_is_torchs_kaiming_uniform():
    jitgrad.manual_seed(0)
    m = nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)  # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), ...)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound  # uniform's std
    assert m.weight.requires_grad and m.bias.requires_grad


def test_conv_module_forward_matches_torch_with_same_weights():
    torch = pytest.importorskip("torch")
    t = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1)
    j = nn.Conv2d(3, 4, 3, stride=2, padding=1)
    j.load_state_dict({k: jitgrad.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(8).standard_normal((2, 3, 7, 7)).astype(np.float32)
    np.testing.assert_allclose(arr(j(jitgrad.tensor(x))), arr(t(torch.tensor(x))), rtol=1e-5,
                               atol=1e-6)


class _SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1, groups=2),
                                  nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((1, 2)))
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        h = self.body(x)
        return self.head(h.reshape(h.shape[0], -1))


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_jit_of_a_cnn_forward_and_backward_equals_eager(backend):
    jitgrad.manual_seed(0)
    eager, jitted = _SmallCNN(), _SmallCNN()
    jitted.load_state_dict(eager.state_dict())
    rng = np.random.default_rng(9)
    fn = jitgrad.jit(lambda x, y: F.cross_entropy(jitted(x), y), backend=backend)
    for _ in range(3):  # the same trace reused; BatchNorm's running stats written back
        x = jitgrad.tensor(rng.standard_normal((4, 1, 8, 8)), dtype=jitgrad.float32)
        y = jitgrad.tensor(rng.integers(0, 3, 4))
        le, lj = F.cross_entropy(eager(x), y), fn(x, y)
        np.testing.assert_allclose(lj.item(), le.item(), rtol=1e-6)
        le.backward()
        lj.backward()
        for (name, a), b in zip(eager.named_parameters(), jitted.parameters()):
            np.testing.assert_allclose(arr(b.grad), arr(a.grad), rtol=1e-4, atol=1e-6,
                                       err_msg=name)
    for (name, a), b in zip(eager.named_buffers(), jitted.buffers()):
        np.testing.assert_allclose(arr(b), arr(a), rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(jitted.body[1].num_batches_tracked) == 3


def test_train_cnn_example_runs_and_learns():
    pytest.importorskip("sklearn")
    script = pathlib.Path(__file__).parent.parent / "examples" / "train_cnn.py"
    root = str(script.parent.parent)  # this checkout's jitgrad, not an installed one
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script), "--epochs", "2"], capture_output=True,
                          text=True, timeout=600, check=True, env=env)
    accs = {line.split()[0]: float(line.split()[3]) for line in proc.stdout.splitlines()
            if "test accuracy" in line}
    assert set(accs) == {"eager", "jit"}
    assert accs["eager"] == accs["jit"] and accs["eager"] > 0.8  # chance: 0.1


def test_max_pool_nan_ties_and_double_backward():
    torch = pytest.importorskip("torch")
    x = np.array([[[[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 3.0, 3.0], [5.0, 5.0, -1.0, -2.0],
                    [5.0, 4.0, -3.0, -2.0]]]])
    jv, ji = F.max_pool2d(jitgrad.tensor(x), 2, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(jv.numpy(), tv.numpy())  # (NaN == NaN here)
    np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    xg = jitgrad.tensor(np.random.default_rng(10).standard_normal((1, 2, 5, 5)),
                        requires_grad=True)
    assert gradgradcheck(lambda t: F.max_pool2d(t, 3, 2, 1) ** 2, (xg,))
    y = F.max_pool2d(jitgrad.tensor(x[:, :, :2, :2].copy()) * 1, 1)
    assert not np.may_share_memory(y.numpy(), x)


@pytest.mark.parametrize("name", ["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                                  "batch_norm"])
def test_forward_mode_matches_torch(name):
    torch = pytest.importorskip("torch")
    fw = jitgrad.autograd.forward_ad
    rng = np.random.default_rng(11)
    calls = {"conv2d": (lambda F_, a, w, b: F_.conv2d(a, w, b, padding=1, groups=2, stride=2),
                        [(2, 4, 6, 6), (4, 2, 3, 3), (4,)]),
             "max_pool2d": (lambda F_, a: F_.max_pool2d(a, 2), [(2, 4, 6, 6)]),
             "avg_pool2d": (lambda F_, a: F_.avg_pool2d(a, 3, 2, 1), [(2, 4, 6, 6)]),
             "adaptive_avg_pool2d": (lambda F_, a: F_.adaptive_avg_pool2d(a, (4, 3)),
                                     [(2, 4, 6, 6)]),
             "batch_norm": (lambda F_, a, w, b: F_.batch_norm(a, None, None, w, b, True),
                            [(2, 4, 6, 6), (4,), (4,)])}
    fn, shapes = calls[name]
    primals = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    with fw.dual_level():
        out = fn(F, *[fw.make_dual(jitgrad.tensor(p), jitgrad.tensor(t))
                      for p, t in zip(primals, tangents)])
        got = fw.unpack_dual(out).tangent.numpy()
    tfw = torch.autograd.forward_ad
    with tfw.dual_level():
        out = fn(torch.nn.functional, *[tfw.make_dual(torch.tensor(p), torch.tensor(t))
                                        for p, t in zip(primals, tangents)])
        want = tfw.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("cfg", [dict(kernel_size=2), dict(kernel_size=2, ceil_mode=True),
                                 dict(kernel_size=3, stride=2, padding=1),
                                 dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1),
                                      padding=(1, 0), ceil_mode=True)], ids=str)
def test_max_pool_indices_match_torch_with_ties_and_several_nans(cfg, dtype):
    """Small integers make ties, and windows with several NaNs: torch takes the first largest
    value but the last NaN (float32/float64 run the Numba kernels, float16 the NumPy code; the
    2x2 window has its own kernel, which ceil_mode on an odd size must not reach)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    x = rng.integers(-2, 3, (2, 3, 7, 9)).astype(np.float64)
    x[rng.random(x.shape) < 0.2] = np.nan
    jv, ji = F.max_pool2d(jitgrad.tensor(x, dtype=getattr(jitgrad, dtype)), **cfg,
                          return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x, dtype=getattr(torch, dtype)), **cfg,
                                            return_indices=True)
    assert tuple(jv.shape) == tuple(tv.shape)
    np.testing.assert_array_equal(jv.numpy(), tv.numpy())
    np.testing.assert_array_equal(ji.numpy(), ti.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["empty_batch", "strided_input"])
def test_conv_empty_batch_and_strided_input_match_torch(case, dtype):
    """An empty batch (every reshape of the kernels' buffers is explicit) and a non-contiguous
    input view, forward and both gradients."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    if case == "empty_batch":
        x, w = rng.standard_normal((0, 4, 5, 5)), rng.standard_normal((6, 2, 3, 3))
    else:
        x, w = rng.standard_normal((3, 8, 11, 13))[:, ::2, ::2, 1::2], \
            rng.standard_normal((6, 2, 3, 2))
    (jy, jg), (ty, tg) = _run_both(torch, "conv2d", [x, w],
                                   dict(stride=(2, 1), padding=(1, 2), groups=2), dtype)
    assert tuple(jy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(arr(jy), arr(ty), **TOL[dtype])
    for a, b in zip(jg, tg):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(arr(a), arr(b), **TOL[dtype])


@pytest.mark.parametrize("n,c,hw", [(1, 3, 5), (8, 2, 4), (13, 8, 3), (64, 1, 8)], ids=str)
def test_conv_batch_sizes_around_the_transpose_tiles_match_torch(n, c, hw):
    """The batch-last layout is made by an 8x8-tiled transpose: batches and C*H*W that are and
    are not multiples of 8, forward and both gradients, float32."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x, w, b = rng.standard_normal((n, c, hw, hw)), rng.standard_normal((5, c, 3, 3)), \
        rng.standard_normal(5)
    (jy, jg), (ty, tg) = _run_both(torch, "conv2d", [x, w, b], dict(padding=1), "float32")
    np.testing.assert_allclose(arr(jy), arr(ty), **TOL["float32"])
    for a, t in zip(jg, tg):
        np.testing.assert_allclose(arr(a), arr(t), **TOL["float32"])
