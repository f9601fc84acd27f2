"""RReLU / F.rrelu(_), Softmax2d, CrossMapLRN2d, the in-place F forms, F.pdist and the
deprecated upsample aliases: values and gradients against torch, gradcheck, reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck

RNG = np.random.default_rng(240)


def _t(a, grad=False):
    return jitgrad.tensor(a, requires_grad=grad)


def test_rrelu_training_draws_slopes_in_range_and_grad_is_the_slope():
    m = nn.RReLU(0.1, 0.3)
    assert repr(m) == "RReLU(lower=0.1, upper=0.3)"
    assert repr(nn.RReLU(inplace=True)) == \
        "RReLU(lower=0.125, upper=0.3333333333333333, inplace=True)"
    x = _t(RNG.standard_normal(2000), grad=True)
    y = m(x)
    y.sum().backward()
    xn, g = x.detach().numpy(), x.grad.numpy()
    assert np.all(g[xn > 0] == 1)
    neg = g[xn < 0]
    assert neg.min() >= 0.1 and neg.max() <= 0.3 and neg.std() > 0.03  # random slopes
    np.testing.assert_allclose(y.detach().numpy(), xn * g, rtol=1e-6)
    m.eval()
    np.testing.assert_allclose(m(x).detach().numpy(), np.where(xn > 0, xn, 0.2 * xn), rtol=1e-6)


def test_rrelu_eval_matches_torch_and_inplace():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4))
    want = torch.nn.functional.rrelu(torch.tensor(x), 0.2, 0.4)
    np.testing.assert_allclose(F.rrelu(_t(x), 0.2, 0.4).numpy(), want.numpy(), rtol=1e-12)
    b = _t(x)
    assert F.rrelu_(b, 0.2, 0.4) is b
    np.testing.assert_allclose(b.numpy(), want.numpy(), rtol=1e-12)
    b = _t(x)
    out = F.rrelu(b, training=True, inplace=True)
    assert out is b and np.all(b.numpy()[x > 0] == x[x > 0])
    assert gradcheck(lambda a: F.rrelu(a, 0.2, 0.4), (_t(x, grad=True),))


@pytest.mark.parametrize("name,args", [("relu_", ()), ("hardtanh_", (-0.5, 0.7)), ("selu_", ()),
                                       ("celu_", (0.8,)), ("threshold_", (0.1, 2.0))])
def test_inplace_forms_match_torch(name, args):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 5))
    xt = torch.tensor(x)
    getattr(torch.nn.functional, name)(xt, *args)
    b = _t(x)
    out = getattr(F, name)(b, *args)
    assert out is b
    np.testing.assert_allclose(b.numpy(), xt.numpy(), rtol=1e-12)
    # on a non-leaf: the gradient flows through the in-place op
    leaf = _t(x, grad=True)
    y = leaf * 1.0
    getattr(F, name)(y, *args)
    y.sum().backward()
    lt = torch.tensor(x, requires_grad=True)
    yt = lt * 1.0
    getattr(torch.nn.functional, name)(yt, *args)
    yt.sum().backward()
    # celu's in-place backward in torch rounds 1 / alpha through float32 (1.5e-8 off)
    np.testing.assert_allclose(leaf.grad.numpy(), lt.grad.numpy(), rtol=1e-7)


def test_softmax2d():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(nn.Softmax2d()(_t(x)).numpy(),
                               torch.nn.Softmax2d()(torch.tensor(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(nn.Softmax2d()(_t(x[0])).numpy(),
                               torch.nn.Softmax2d()(torch.tensor(x[0])).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(_t(x[0, 0]))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8])
def test_cross_map_lrn2d_forward_matches_torch_and_gradcheck(size):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 7, 3, 3))
    want = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2)(torch.tensor(x))
    m = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2)
    np.testing.assert_allclose(m(_t(x)).numpy(), want.numpy(), rtol=1e-12)
    # the exact gradient of that forward (torch's hand-written backward fails its own
    # gradcheck: it assumes a symmetric window)
    assert gradcheck(m, (_t(x[:1, :, :2, :2], grad=True),))
    assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.5, beta=0.75, k=2)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D"):
        m(_t(x[0]))


@pytest.mark.parametrize("p", [0.5, 1, 2, 3, float("inf")])
def test_pdist_matches_torch(p):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 3))
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.pdist(xt, p)
    xj = _t(x, grad=True)
    got = F.pdist(xj, p)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert gradcheck(lambda a: F.pdist(a, p), (_t(x, grad=True),))


def test_pdist_edge_cases():
    assert tuple(F.pdist(_t(np.ones((1, 3)))).shape) == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(_t(np.ones((1, 2, 3))))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(_t(np.ones((2, 3))), -1)


@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_upsample_aliases_warn_and_match_torch(name):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((1, 2, 3, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = getattr(F, name)(_t(x), scale_factor=2)
    assert f"`nn.functional.{name}` is deprecated" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(torch.nn.functional, name)(torch.tensor(x), scale_factor=2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- linear_cross_entropy


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("kind", ["index", "probs", "kdim", "smooth"])
def test_linear_cross_entropy_matches_torch(reduction, kind):
    torch = pytest.importorskip("torch")
    n, d, c = 6, 4, 5
    x = RNG.standard_normal((n, d))
    w = RNG.standard_normal((c, 3, d) if kind == "kdim" else (c, d))
    b = RNG.standard_normal(w.shape[:-1])
    cw = RNG.random(c) + 0.5
    if kind == "probs":
        y = RNG.random((n, c))
        y /= y.sum(1, keepdims=True)
    elif kind == "kdim":
        y = RNG.integers(0, c, (n, 3))
    else:
        y = RNG.integers(0, c, n)
        y[2] = 1 if kind == "smooth" else -100
    kw = {"reduction": reduction, "label_smoothing": 0.1 if kind == "smooth" else 0.0}
    tt = [torch.tensor(v, requires_grad=True) for v in (x, w, b)]
    want = torch.nn.functional.linear_cross_entropy(tt[0], tt[1], torch.tensor(y),
                                                    linear_bias=tt[2],
                                                    weight=torch.tensor(cw), **kw)
    jt = [_t(v, grad=True) for v in (x, w, b)]
    got = F.linear_cross_entropy(jt[0], jt[1], _t(y), linear_bias=jt[2], weight=_t(cw), **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.sum().backward()
    got.sum().backward()
    for a, bb in zip(jt, tt):
        np.testing.assert_allclose(a.grad.numpy(), bb.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_linear_cross_entropy_module_options_and_errors():
    torch = pytest.importorskip("torch")
    tm = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True).double()
    jm = nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True, dtype=jitgrad.float64)
    assert repr(jm) == repr(tm)
    assert list(jm.state_dict()) == list(tm.state_dict()) == ["linear.weight", "linear.bias"]
    jm.load_state_dict({k: _t(v.numpy()) for k, v in tm.state_dict().items()})
    x, y = RNG.standard_normal((3, 4)), RNG.integers(0, 5, (3, 2))
    np.testing.assert_allclose(jm(_t(x), _t(y)).detach().numpy(),
                               tm(torch.tensor(x), torch.tensor(y)).detach().numpy(), rtol=1e-12)
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    assert opts.chunking_method == "auto" and opts.acc_policy == "auto"
    w = _t(RNG.standard_normal((5, 4)))
    with_opts = F.linear_cross_entropy(_t(x), w, _t(y[:, 0]), options=opts)
    np.testing.assert_allclose(with_opts.numpy(),
                               F.linear_cross_entropy(_t(x), w, _t(y[:, 0])).numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="``options`` ignored"):
        F.linear_cross_entropy(_t(x), w, _t(y[:, 0]), options=opts, label_smoothing=0.1)
    with pytest.raises(ValueError, match="invalid acc_policy: 'x'"):
        nn.LinearCrossEntropyOptions(acc_policy="x")
    with pytest.raises(ValueError, match="invalid chunking_method: 'ratio'"):
        nn.LinearCrossEntropyOptions(chunking_method="ratio")
    with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None"):
        nn.LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last"):
        F.linear_cross_entropy(_t(x), _t(np.ones((5, 3))), _t(y[:, 0]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target"):
        F.linear_cross_entropy(_t(x), w, _t(np.ones((3, 5)) / 5), ignore_index=1)
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(5,\), got \(4,\)"):
        nn.LinearCrossEntropyLoss(4, 5, weight=_t(np.ones(4)))
