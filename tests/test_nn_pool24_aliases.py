"""torch's top-level functional aliases (jitgrad.conv2d, jitgrad.batch_norm ...) with torch's
positional signatures, and rrelu / RReLU."""

import subprocess
import sys

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn

rng = np.random.default_rng(7)


def _pair(*shape, positive=False):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return jitgrad.tensor(a), torch.tensor(a)


def _same(a, b):
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.shape == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_pooling_and_conv_aliases_vs_torch():
    torch = pytest.importorskip("torch")
    x1, t1 = _pair(2, 3, 9)
    x2, t2 = _pair(2, 3, 7, 8)
    x3, t3 = _pair(2, 3, 5, 6, 7)
    cases = [("max_pool1d", (x1, 3), (t1, 3), {}), ("max_pool1d", (x1, 3, 2, 1), (t1, 3, 2, 1),
                                                    dict(ceil_mode=True)),
             ("max_pool2d", (x2, 2), (t2, 2), {}), ("max_pool3d", (x3, 2, 1), (t3, 2, 1), {}),
             ("max_pool1d_with_indices", (x1, 2), (t1, 2), {}),
             ("avg_pool1d", (x1, 3, 2, 1), (t1, 3, 2, 1), dict(count_include_pad=False)),
             ("adaptive_avg_pool1d", (x1, 4), (t1, 4), {}),
             ("adaptive_max_pool1d", (x1, 4), (t1, 4), {})]
    w1, u1 = _pair(4, 3, 2)
    w2, u2 = _pair(4, 3, 3, 2)
    w3, u3 = _pair(4, 3, 2, 2, 3)
    b, c = _pair(4)
    cases += [("conv1d", (x1, w1, b, 2), (t1, u1, c, 2), {}),
              ("conv2d", (x2, w2), (t2, u2), dict(padding="same")),
              ("conv3d", (x3, w3, b), (t3, u3, c), dict(dilation=(1, 2, 1))),
              ("convolution", (x2, w2, b, (1, 2), (1, 0), (1, 1), False, (0, 0), 1),
               (t2, u2, c, (1, 2), (1, 0), (1, 1), False, (0, 0), 1), {})]
    tw1, tu1 = _pair(3, 4, 2)
    tw2, tu2 = _pair(3, 2, 3, 2)
    tw3, tu3 = _pair(3, 4, 2, 2, 2)
    cases += [("conv_transpose1d", (x1, tw1, b, 2), (t1, tu1, c, 2), {}),
              ("conv_transpose2d", (x2, tw2), (t2, tu2), dict(stride=2, output_padding=1,
                                                                groups=1)),
              ("conv_transpose3d", (x3, tw3), (t3, tu3), dict(stride=(2, 1, 1))),
              ("convolution", (x2, tw2, None, (2, 2), (1, 1), (1, 1), True, (1, 0), 1),
               (t2, tu2, None, (2, 2), (1, 1), (1, 1), True, (1, 0), 1), {})]
    for name, ja, ta, kw in cases:
        _same(getattr(jitgrad, name)(*ja, **kw), getattr(torch, name)(*ta, **kw))


def test_norm_and_misc_aliases_vs_torch():
    torch = pytest.importorskip("torch")
    x, t = _pair(4, 6, 5)
    w, u = _pair(6)
    b, c = _pair(6)
    rm, trm = _pair(6)
    rv, trv = _pair(6, positive=True)
    _same(jitgrad.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True),
          torch.batch_norm(t, u, c, trm, trv, False, 0.1, 1e-5, True))
    _same(jitgrad.batch_norm(x, w, b, rm, rv, True, 0.3, 1e-5, True),
          torch.batch_norm(t, u, c, trm, trv, True, 0.3, 1e-5, True))
    _same(rm, trm)  # the running statistics updated in place alike
    _same(rv, trv)
    _same(jitgrad.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
          torch.instance_norm(t, u, c, None, None, True, 0.1, 1e-5, True))
    _same(jitgrad.group_norm(x, 3, w, b), torch.group_norm(t, 3, u, c))
    _same(jitgrad.layer_norm(x, (5,)), torch.layer_norm(t, (5,)))
    p, q = _pair(2, 8, 3, 3)
    _same(jitgrad.pixel_shuffle(p, 2), torch.pixel_shuffle(q, 2))
    _same(jitgrad.pixel_unshuffle(p[:, :, :2, :2], 2), torch.pixel_unshuffle(q[:, :, :2, :2], 2))
    _same(jitgrad.channel_shuffle(p, 4), torch.channel_shuffle(q, 4))
    emb, temb = _pair(10, 3)
    idx = [[1, 2, 0], [9, 0, 0]]
    _same(jitgrad.embedding(emb, jitgrad.tensor(idx)), torch.embedding(temb, torch.tensor(idx)))
    a1, t1 = _pair(3, 4)
    a2, t2 = _pair(3, 5)
    bw, tbw = _pair(2, 4, 5)
    _same(jitgrad.bilinear(a1, a2, bw), torch.bilinear(t1, t2, tbw))
    _same(jitgrad.prelu(x, w), torch.prelu(t, u))
    for name, args in [("selu", ()), ("celu", (0.7,)), ("threshold", (0.1, -2.0)),
                       ("hardshrink", (0.4,)), ("rrelu", (0.1, 0.3, False))]:
        _same(getattr(jitgrad, name)(x, *args), getattr(torch, name)(t, *args))
        xi, ti = x.clone(), t.clone()
        out = getattr(jitgrad, name + "_")(xi, *args) if name != "hardshrink" else None
        if out is not None:
            getattr(torch, name + "_")(ti, *args)
            assert out is xi
            _same(xi, ti)


def test_dropout_aliases():
    x = jitgrad.ones(50, 40, 3, dtype=jitgrad.float64)
    for name in ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"]:
        fn = getattr(jitgrad, name)
        np.testing.assert_array_equal(fn(x, 0.5, False).numpy(), x.numpy())
        y = fn(x, 0.3, True).numpy()
        assert y.shape == x.shape and len(np.unique(y)) == 2
        zero = y.min() if "alpha" in name else 0.0
        frac = (y == zero).mean()
        assert 0.2 < frac < 0.4
        if name.startswith("feature"):  # whole channels (dim 1) share their fate
            assert (y == y[:, :, :1]).all()
        xi = x.clone()
        assert getattr(jitgrad, name + "_")(xi, 0.3, True) is xi
        assert len(np.unique(xi.numpy())) == 2
    y = jitgrad.dropout(x, 0.5, True).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}


def test_rrelu_training_and_module():
    torch = pytest.importorskip("torch")
    x = jitgrad.tensor(rng.standard_normal(2000), requires_grad=True)
    y = nn.functional.rrelu(x, 0.1, 0.3, training=True)
    xs, ys = x.detach().numpy(), y.detach().numpy()
    pos = xs >= 0
    np.testing.assert_array_equal(ys[pos], xs[pos])
    slope = ys[~pos] / xs[~pos]
    assert (slope >= 0.1).all() and (slope <= 0.3).all()
    assert abs(slope.mean() - 0.2) < 0.01 and slope.std() > 0.04
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[~pos], slope)
    np.testing.assert_array_equal(x.grad.numpy()[pos], 1.0)
    g = jitgrad.Generator().manual_seed(3)
    a = jitgrad.rrelu(x.detach(), training=True, generator=g)
    b = jitgrad.rrelu(x.detach(), training=True,
                      generator=jitgrad.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    m, tm = nn.RReLU(0.2, 0.4, inplace=True), torch.nn.RReLU(0.2, 0.4, inplace=True)
    assert repr(m) == repr(tm) and repr(nn.RReLU()) == repr(torch.nn.RReLU())
    m.eval(), tm.eval()
    xj, xt = _pair(3, 4)
    _same(m(xj), tm(xt))
    xg = jitgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert jitgrad.autograd.gradcheck(lambda v: nn.functional.rrelu(v, training=False), (xg,))


def test_aliases_keep_import_light():
    code = ("import sys, jitgrad; assert 'jitgrad.nn' not in sys.modules; "
            "assert not hasattr(jitgrad, 'no_such_name'); "
            "assert 'jitgrad.nn' not in sys.modules; f = jitgrad.conv2d; "
            "assert 'jitgrad.nn' not in sys.modules; "
            "print(tuple(f(jitgrad.ones(1, 1, 3, 3), jitgrad.ones(1, 1, 2, 2)).shape))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "(1, 1, 2, 2)"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_embedding_bag_alias_vs_torch(dtype, mode, requires_grad):
    torch = pytest.importorskip("torch")
    wa = rng.standard_normal((10, 3)).astype(dtype)
    idx = [1, 2, 4, 5, 4, 3, 2, 9]
    for offsets, last in (([0, 4, 8], True), ([0, 0, 5], False), ([0, 3, 8], True),
                          ([0, 4], False)):
        for pad in (None, 2):
            wj = jitgrad.tensor(wa, requires_grad=requires_grad)
            wt = torch.tensor(wa, requires_grad=requires_grad)
            args = (False, mode, False, None, last, pad)
            rj = jitgrad.embedding_bag(wj, jitgrad.tensor(idx), jitgrad.tensor(offsets), *args)
            rt = torch.embedding_bag(wt, torch.tensor(idx), torch.tensor(offsets), *args)
            for a, b in zip(rj, rt):
                assert a.shape == tuple(b.shape) and a.dtype.is_floating_point == \
                    b.dtype.is_floating_point
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
            if requires_grad:
                rj[0].sum().backward()
                rt[0].sum().backward()
                np.testing.assert_allclose(wj.grad.numpy(), wt.grad.numpy(), rtol=1e-6)
