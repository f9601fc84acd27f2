"""BatchNorm1d/BatchNorm2d and F.batch_norm against torch: outputs and gradients, the running
statistics over several training steps (momentum, cumulative average), eval mode, the flags,
repr, state_dict, errors, double backward, and the running statistics under jit."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import arr, same_error

import jitgrad
from jitgrad import nn
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn import functional as F

CONFIGS = [dict(), dict(momentum=None), dict(momentum=0.3, eps=1e-3), dict(affine=False),
           dict(track_running_stats=False), dict(bias=False)]


def _pair(torch, cls, num_features, cfg):
    t = getattr(torch.nn, cls)(num_features, **cfg).double()
    j = getattr(nn, cls)(num_features, dtype=jitgrad.float64, **cfg)
    if t.weight is not None:  # non-trivial affine parameters, the same in both
        rng = np.random.default_rng(0)
        for name in ("weight", "bias"):
            if getattr(t, name) is not None:
                v = rng.uniform(0.5, 1.5, num_features)
                with torch.no_grad():
                    getattr(t, name).copy_(torch.tensor(v))
                with jitgrad.no_grad():
                    getattr(j, name).copy_(jitgrad.tensor(v))
    return t, j


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("cls,shape", [("BatchNorm2d", (4, 3, 5, 5)), ("BatchNorm1d", (6, 3)),
                                       ("BatchNorm1d", (4, 3, 7))])
def test_training_steps_then_eval_match_torch(cls, shape, cfg):
    torch = pytest.importorskip("torch")
    t, j = _pair(torch, cls, 3, cfg)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.standard_normal(shape) * 2 + 0.5
        tx = torch.tensor(x, requires_grad=True)
        jx = jitgrad.tensor(x, requires_grad=True)
        ty, jy = t(tx), j(jx)
        assert jy.grad_fn.name() == ty.grad_fn.name() == "NativeBatchNormBackward0"
        np.testing.assert_allclose(arr(jy), arr(ty), rtol=1e-10, atol=1e-12)
        go = rng.standard_normal(shape)
        ty.backward(torch.tensor(go))
        jy.backward(jitgrad.tensor(go))
        np.testing.assert_allclose(arr(jx.grad), arr(tx.grad), rtol=1e-9, atol=1e-11)
        for name, p in t.named_parameters():
            np.testing.assert_allclose(arr(dict(j.named_parameters())[name].grad), arr(p.grad),
                                       rtol=1e-9, atol=1e-11)
        for name, b in t.named_buffers():
            np.testing.assert_allclose(arr(dict(j.named_buffers())[name]), arr(b), rtol=1e-12)
    t.eval()
    j.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(arr(j(jitgrad.tensor(x))), arr(t(torch.tensor(x))), rtol=1e-10,
                               atol=1e-12)
    assert list(j.state_dict()) == list(t.state_dict())
    assert repr(j) == repr(t)


def test_buffers_and_num_batches_tracked():
    m = nn.BatchNorm2d(2)
    assert m.num_batches_tracked.dtype is jitgrad.int64 and int(m.num_batches_tracked) == 0
    np.testing.assert_array_equal(m.running_var.numpy(), [1.0, 1.0])
    m(jitgrad.randn(3, 2, 2, 2))
    m(jitgrad.randn(3, 2, 2, 2))
    assert int(m.num_batches_tracked) == 2
    m.eval()
    before = m.running_mean.numpy().copy()
    m(jitgrad.randn(3, 2, 2, 2))
    np.testing.assert_array_equal(m.running_mean.numpy(), before)  # eval: no update
    assert int(m.num_batches_tracked) == 2
    m.reset_running_stats()
    np.testing.assert_array_equal(m.running_mean.numpy(), [0.0, 0.0])
    assert int(m.num_batches_tracked) == 0


def test_load_state_dict_from_torch_then_eval_matches():
    torch = pytest.importorskip("torch")
    t = torch.nn.BatchNorm2d(3)
    for _ in range(3):
        t(torch.randn(4, 3, 2, 2) * 3 + 1)
    t.eval()
    j = nn.BatchNorm2d(3)
    j.load_state_dict({k: jitgrad.tensor(v.numpy()) for k, v in t.state_dict().items()})
    j.eval()
    x = np.random.default_rng(2).standard_normal((2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(arr(j(jitgrad.tensor(x))), arr(t(torch.tensor(x))), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck_and_gradgradcheck(training):
    rng = np.random.default_rng(3)
    x = jitgrad.tensor(rng.standard_normal((3, 2, 2, 2)), requires_grad=True)
    w = jitgrad.tensor(rng.uniform(0.5, 1.5, 2), requires_grad=True)
    b = jitgrad.tensor(rng.standard_normal(2), requires_grad=True)
    rm, rv = jitgrad.tensor([0.1, -0.3]), jitgrad.tensor([0.7, 1.6])

    def fn(x, w, b):
        return F.batch_norm(x, None if training else rm, None if training else rv, w, b,
                            training=training)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


BAD_CALLS = [
    lambda lib: lib.nn.functional.batch_norm(lib.ones(2, 3, 4), lib.zeros(2), lib.ones(2)),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(1, 3), None, None, training=True),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(2, 3, 4), None, None, training=False),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(2, 3, 4), lib.zeros(3), lib.ones(3),
                                             weight=lib.ones(2)),
    lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 3)),
    lambda lib: lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5)),
]


@pytest.mark.parametrize("call", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_errors_match_torch(call):
    pytest.importorskip("torch")
    same_error(call)


def test_running_stats_under_jit_equal_eager():
    jitgrad.manual_seed(0)
    eager, jitted = nn.BatchNorm2d(3, momentum=None), nn.BatchNorm2d(3, momentum=None)
    fn = jitgrad.jit(lambda x: (jitted(x) ** 2).sum())
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = jitgrad.tensor(rng.standard_normal((4, 3, 2, 2)) + 1.0, dtype=jitgrad.float32)
        le, lj = (eager(x) ** 2).sum(), fn(x)
        np.testing.assert_allclose(lj.item(), le.item(), rtol=1e-5)
        le.backward()
        lj.backward()
        np.testing.assert_allclose(arr(jitted.weight.grad), arr(eager.weight.grad), rtol=1e-4,
                                   atol=1e-5)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(arr(getattr(jitted, name)), arr(getattr(eager, name)),
                                   rtol=1e-5, err_msg=name)
    assert int(jitted.num_batches_tracked) == int(eager.num_batches_tracked) == 3


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("shape", [(64, 8, 8, 8), (16, 5), (6, 4, 9)], ids=str)
def test_float32_kernels_match_torch(shape, affine, training):
    """float32 runs the Numba kernels (forward, and the one-op first-order backward): values,
    batch statistics and gradients against torch, with a mean far from zero (cancellation)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 20).astype(np.float32)
    params = [rng.uniform(0.5, 1.5, c).astype(np.float32), rng.standard_normal(c)
              .astype(np.float32)] if affine else [None, None]
    stats = [rng.standard_normal(c).astype(np.float32) + 20,
             rng.uniform(5, 15, c).astype(np.float32)]
    go = rng.standard_normal(shape).astype(np.float32)
    got = []
    for lib in (jitgrad, torch):
        xt = lib.tensor(x, requires_grad=True)
        wb = [None if p is None else lib.tensor(p, requires_grad=True) for p in params]
        rm, rv = (lib.tensor(s) for s in stats)
        y = lib.nn.functional.batch_norm(xt, rm, rv, *wb, training=training, momentum=0.2)
        leaves = [xt] + [t for t in wb if t is not None]
        grads = lib.autograd.grad(y, leaves, lib.tensor(go))
        got.append([arr(y), arr(rm), arr(rv)] + [arr(g) for g in grads])
    for j, t in zip(*got):
        assert j.dtype == np.float32
        np.testing.assert_allclose(j, t, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_backward_op_gradcheck_forward_ad_and_gradgradcheck(affine, training):
    """The backward is one op (eager and jitted): its own VJP and JVP, checked on the op."""
    from jitgrad.ops import batch_norm as bn_ops
    from jitgrad.ops.registry import apply

    rng = np.random.default_rng(6)
    g = jitgrad.tensor(rng.standard_normal((3, 2, 2, 3)), requires_grad=True)
    x = jitgrad.tensor(rng.standard_normal((3, 2, 2, 3)) + 1, requires_grad=True)
    w = jitgrad.tensor(rng.uniform(0.5, 1.5, 2), requires_grad=True)
    rm, rv = jitgrad.tensor([0.1, -0.3]), jitgrad.tensor([0.7, 1.6])

    def fn(g, x, *w):
        return apply(bn_ops.NATIVE_BATCH_NORM_BACKWARD, g, x, w[0] if w else None,
                     None if training else rm, None if training else rv, training=training,
                     eps=1e-5)
    inputs = (g, x, w) if affine else (g, x)
    assert gradcheck(fn, inputs, check_forward_ad=True)
    assert gradgradcheck(fn, inputs)


def test_double_backward_node_and_values_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, go = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal((4, 3, 2, 2))
    got = []
    for lib in (jitgrad, torch):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
        y = lib.nn.functional.batch_norm(xt, None, None, w, None, training=True)
        gx, gw = lib.autograd.grad(y, (xt, w), lib.tensor(go), create_graph=True)
        assert gx.grad_fn.name() == "NativeBatchNormBackwardBackward0"
        got.append([arr(t) for t in lib.autograd.grad((gx ** 2).sum() + gw.sum(), (xt, w))])
    for j, t in zip(*got):
        np.testing.assert_allclose(j, t, rtol=1e-9, atol=1e-11)


def test_loading_a_checkpoint_without_num_batches_tracked_as_torch():
    """torch's BatchNorm is version 2 (num_batches_tracked came then); a state dict from before
    (or a plain dict of weights and running statistics) loads strictly, keeping the count."""
    torch = pytest.importorskip("torch")

    def run(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        m(lib.ones(4, 2))
        sd = m.state_dict()
        versions = {k: v["version"] for k, v in sd._metadata.items()}
        old = {k: v.clone() for k, v in sd.items() if not k.endswith("num_batches_tracked")}
        result = m.load_state_dict(old)  # (a plain dict: no version, strict)
        partial = m.load_state_dict({"1.running_mean": lib.zeros(3)}, strict=False)
        return versions, (list(result.missing_keys), list(result.unexpected_keys)), \
            list(partial.missing_keys), m[1].num_batches_tracked.item()
    ours, theirs = run(jitgrad), run(torch)
    assert ours == theirs
    assert ours[0]["1"] == 2 and ours[1] == ([], []) and ours[3] == 1
