"""torch's top-level forms of nn.functional functions (``jitgrad/_nn_aliases.py``), with
torch's top-level argument orders: values and gradients against torch."""

import numpy as np
import pytest

import jitgrad
from torch_compare import arr

RNG = np.random.default_rng(2424)


def _run(fn, *arrays):
    torch = pytest.importorskip("torch")
    res = {}
    for lib in (torch, jitgrad):
        xs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *xs)
        w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        res[lib] = [arr(out)] + [arr(x.grad) for x in xs if x.requires_grad]
    for a, b in zip(res[jitgrad], res[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def _d(*shape):
    return RNG.standard_normal(shape)


def test_convolutions_and_shuffles():
    _run(lambda lib, x, w, b: lib.conv2d(x, w, b, 1, 1), _d(1, 2, 5, 5), _d(3, 2, 3, 3), _d(3))
    _run(lambda lib, x, w: lib.conv1d(x, w, stride=2), _d(2, 2, 7), _d(3, 2, 3))
    _run(lambda lib, x, w: lib.conv_transpose2d(x, w, None, 2), _d(1, 2, 3, 3), _d(2, 3, 2, 2))
    _run(lambda lib, x: lib.pixel_shuffle(x, 2), _d(1, 8, 2, 2))
    _run(lambda lib, x: lib.pixel_unshuffle(x, 2), _d(1, 2, 4, 4))
    _run(lambda lib, x: lib.channel_shuffle(x, 2) * 1, _d(1, 4, 2, 2))
    _run(lambda lib, a, b, w, c: lib.bilinear(a, b, w, c), _d(3, 2), _d(3, 4), _d(5, 2, 4),
         _d(5))


def test_activations_and_their_inplace_forms():
    _run(lambda lib, x: lib.celu(x, 0.5), _d(3, 4))
    _run(lambda lib, x: lib.selu(x), _d(3, 4))
    torch = pytest.importorskip("torch")
    x = _d(3, 4)
    for name, args in (("celu_", (0.5,)), ("selu_", ())):  # (values: F.celu/selu(inplace=True)
        outs = []                                          # own their gradients, nn's tests)
        for lib in (torch, jitgrad):
            t = lib.tensor(x)
            assert getattr(lib, name)(t, *args) is t
            outs.append(arr(t))
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12)
    _run(lambda lib, x: lib.threshold(x, 0.1, -2.0), _d(3, 4))
    _run(lambda lib, x: lib.threshold_(x * 1, 0.1, -2.0), _d(3, 4))
    _run(lambda lib, x: lib.hardshrink(x, 0.3), _d(3, 4))
    _run(lambda lib, x: x.hardshrink(), _d(3, 4))
    _run(lambda lib, x, w: lib.prelu(x, w), _d(2, 3, 4), np.abs(_d(3)))
    _run(lambda lib, x, w: x.prelu(w), _d(2, 3), np.abs(_d(1)))


def test_norms_embedding_pad_in_torch_argument_order():
    _run(lambda lib, x, w, b: lib.layer_norm(x, (4,), w, b, 1e-5, False), _d(3, 4), _d(4), _d(4))
    _run(lambda lib, x, w, b: lib.group_norm(x, 2, w, b), _d(2, 4, 3), _d(4), _d(4))
    _run(lambda lib, x, w, b: lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
         _d(5, 3), _d(3), _d(3))
    _run(lambda lib, x: lib.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False),
         _d(2, 3, 5))
    _run(lambda lib, w: lib.embedding(w, lib.tensor([[0, 2], [3, 2]])), _d(4, 3))
    _run(lambda lib, w: lib.embedding(w, lib.tensor([0, 2, 2]), 2), _d(4, 3))
    _run(lambda lib, x: lib.constant_pad_nd(x, (1, 2), 0.5), _d(2, 3))


def test_dropouts():
    torch = pytest.importorskip("torch")
    x = _d(200, 50)
    for lib in (torch, jitgrad):
        t = lib.tensor(x)
        assert lib.dropout(t, 0.3, False) is t or np.array_equal(arr(lib.dropout(t, 0.3, False)),
                                                                 x)
        y = arr(lib.dropout(t, 0.3, True))
        kept = y != 0
        assert abs(kept.mean() - 0.7) < 0.02
        np.testing.assert_allclose(y[kept], x[kept] / 0.7)
        u = t.clone()
        assert lib.dropout_(u, 0.5, True) is u
        assert abs((arr(u) != 0).mean() - 0.5) < 0.02
        a = arr(lib.alpha_dropout(t, 0.2, True))
        assert abs(a.mean() - x.mean()) < 0.1 and abs(a.std() - x.std()) < 0.1
        f = arr(lib.feature_alpha_dropout(lib.tensor(_d(100, 40, 3)), 0.5, True))
        assert f.shape == (100, 40, 3)
        assert np.array_equal(arr(lib.alpha_dropout(t, 0.2, False)), x)
