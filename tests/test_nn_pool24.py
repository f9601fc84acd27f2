"""1-d/3-d pooling, adaptive 3-d pooling, max-unpooling, power-average pooling,
conv_transpose3d, BatchNorm3d and Conv padding modes: against torch and by gradcheck."""

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F

rng = np.random.default_rng(24)


def _vs_torch(name: str, shape: tuple, fn=None, tfn=None, **kw) -> None:
    torch = pytest.importorskip("torch")
    jf = fn or getattr(F, name)
    tf = tfn or getattr(torch.nn.functional, name)
    a = rng.standard_normal(shape)
    xj = jitgrad.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    oj, ot = jf(xj, **kw), tf(xt, **kw)
    if isinstance(ot, tuple):
        np.testing.assert_array_equal(oj[1].numpy(), ot[1].numpy())
        assert oj[1].dtype == jitgrad.int64
        oj, ot = oj[0], ot[0]
    assert oj.shape == tuple(ot.shape)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    g = rng.standard_normal(tuple(ot.shape))
    oj.backward(jitgrad.tensor(g))
    ot.backward(torch.tensor(g))
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


MAX3 = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 1),
             ceil_mode=True),
        dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True),
        dict(kernel_size=2, dilation=2, padding=1, return_indices=True)]


@pytest.mark.parametrize("kw", MAX3)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6, 8), (3, 5, 6, 7)])
def test_max_pool3d_vs_torch(kw, shape):
    _vs_torch("max_pool3d", shape, **kw)


AVG3 = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True),
        dict(kernel_size=3, stride=2, padding=1, divisor_override=5, ceil_mode=True)]


@pytest.mark.parametrize("kw", AVG3)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6, 8), (3, 5, 6, 7)])
def test_avg_pool3d_vs_torch(kw, shape):
    _vs_torch("avg_pool3d", shape, **kw)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False)])
@pytest.mark.parametrize("shape", [(2, 3, 9), (3, 10)])
def test_avg_pool1d_vs_torch(kw, shape):
    _vs_torch("avg_pool1d", shape, **kw)


@pytest.mark.parametrize("name", ["max_pool1d_with_indices", "max_pool2d_with_indices"])
def test_with_indices_forms(name):
    shape = (2, 3, 9) if "1d" in name else (2, 3, 9, 7)
    _vs_torch(name, shape, kernel_size=3, stride=2, padding=1, ceil_mode=True)


@pytest.mark.parametrize("size", [(3, 2, 5), 1, (None, 3, 4), 4])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6, 8), (3, 7, 6, 8)])
def test_adaptive_pool3d_vs_torch(size, shape):
    _vs_torch("adaptive_avg_pool3d", shape, output_size=size)
    _vs_torch("adaptive_max_pool3d", shape, output_size=size, return_indices=True)
    _vs_torch("adaptive_max_pool3d_with_indices", shape, output_size=size)


@pytest.mark.parametrize("p", [2, 1.5, 3])
def test_lp_pool_vs_torch(p):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    for nd, shape, kw in [(1, (2, 3, 9), dict(kernel_size=3, stride=2)),
                          (2, (2, 3, 9, 8), dict(kernel_size=(3, 2), ceil_mode=True)),
                          (3, (2, 3, 5, 9, 8), dict(kernel_size=2))]:
        name = f"lp_pool{nd}d"
        _vs_torch(name, shape, lambda x, _n=name, **k: getattr(F, _n)(x.abs() + 0.1, **k),
                  lambda x, _n=name, **k: getattr(tf, _n)(x.abs() + 0.1, **k), norm_type=p,
                  **kw)
    _vs_torch("lp_pool3d", (2, 3, 5, 9, 8), norm_type=float("inf"), kernel_size=2)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("output_size", [None, "full"])
def test_max_unpool_vs_torch(nd, output_size):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    a = rng.standard_normal((2, 3) + (7,) * nd)
    vj, ij = getattr(F, f"max_pool{nd}d")(jitgrad.tensor(a), 3, 2, 1, return_indices=True)
    vt, it = getattr(tf, f"max_pool{nd}d")(torch.tensor(a), 3, 2, 1, return_indices=True)
    size = (2, 3) + (7,) * nd if output_size else None
    name = f"max_unpool{nd}d"
    _vs_torch(name, tuple(vt.shape), lambda x, **k: getattr(F, name)(x, ij, **k),
              lambda x, **k: getattr(tf, name)(x, it, **k), kernel_size=3, stride=2, padding=1,
              output_size=size)


def test_max_pool_unpool_roundtrip_modules():
    pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)
    x = jitgrad.randn(1, 2, 4, 4, 6)
    v, i = pool(x)
    y = unpool(v, i, output_size=x.shape)
    assert y.shape == x.shape
    # every kept value sits where it came from; the rest are zeros
    kept = y.numpy() != 0
    np.testing.assert_array_equal(y.numpy()[kept], x.numpy()[kept])
    assert kept.sum() == v.numel()


@pytest.mark.parametrize("kw", [{}, dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(2, 1, 3), padding=(0, 1, 1), dilation=(2, 1, 1),
                                     groups=2, output_padding=(1, 0, 2)),
                                dict(stride=3, padding=2, dilation=2)])
def test_conv_transpose3d_vs_torch(kw):
    torch = pytest.importorskip("torch")
    g = kw.get("groups", 1)
    a, w = rng.standard_normal((2, 4, 3, 4, 5)), rng.standard_normal((4, 3, 2, 3, 2))
    b = rng.standard_normal(3 * g)
    xs = [jitgrad.tensor(v, requires_grad=True) for v in (a, w, b)]
    ts = [torch.tensor(v, requires_grad=True) for v in (a, w, b)]
    oj = F.conv_transpose3d(*xs, **kw)
    ot = torch.nn.functional.conv_transpose3d(*ts, **kw)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), atol=1e-10)
    gr = rng.standard_normal(tuple(ot.shape))
    oj.backward(jitgrad.tensor(gr))
    ot.backward(torch.tensor(gr))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-10)
    assert F.conv_transpose3d(xs[0][0], xs[1], None, **kw).shape == tuple(ot.shape[1:])


def test_gradcheck_composed_poolings():
    def dbl(*shape):
        return jitgrad.tensor(rng.standard_normal(shape), requires_grad=True)

    x5 = dbl(1, 2, 4, 5, 4)
    assert jitgrad.autograd.gradcheck(
        lambda x: F.max_pool3d(x, 2, 1, 1, ceil_mode=True), (x5,))
    assert jitgrad.autograd.gradgradcheck(lambda x: F.max_pool3d(x, 2, 2), (x5,))
    assert jitgrad.autograd.gradcheck(
        lambda x: F.avg_pool3d(x, 3, 2, 1, True, False), (x5,))
    assert jitgrad.autograd.gradgradcheck(lambda x: F.avg_pool3d(x, 2, 1, 1), (x5,))
    assert jitgrad.autograd.gradcheck(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 3)), (x5,))
    assert jitgrad.autograd.gradcheck(lambda x: F.adaptive_max_pool3d(x, (3, 2, 3)), (x5,))
    assert jitgrad.autograd.gradcheck(lambda x: F.avg_pool1d(x, 3, 2, 1), (dbl(2, 3, 7),))
    assert jitgrad.autograd.gradcheck(
        lambda x: F.lp_pool2d(x.abs() + 0.5, 3, 2), (dbl(1, 2, 4, 4),))
    v, i = F.max_pool2d(jitgrad.randn(1, 2, 4, 4, dtype=jitgrad.float64), 2,
                        return_indices=True)
    assert jitgrad.autograd.gradcheck(lambda x: F.max_unpool2d(x, i, 2), (dbl(1, 2, 2, 2),))
    x, w, b = dbl(1, 2, 3, 2, 3), dbl(2, 2, 2, 2, 2), dbl(2)
    assert jitgrad.autograd.gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, 1, 1), (x, w, b))
    assert jitgrad.autograd.gradgradcheck(lambda x, w: F.conv_transpose3d(x, w, None, 2), (x, w))


def test_errors_match_torch():
    cases = [
        (lambda: F.max_pool3d(jitgrad.randn(2, 3, 4), 2),
         "non-empty 4D or 5D (batch mode) tensor expected for input"),
        (lambda: F.max_pool3d(jitgrad.randn(1, 2, 3, 4, 4), 2, padding=2),
         "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 "
         "and dilation=1"),
        (lambda: F.max_pool3d(jitgrad.randn(1, 2, 1, 4, 4), 2),
         "Given input size: (2x1x4x4). Calculated output size: (2x0x2x2). Output size is too "
         "small"),
        (lambda: F.max_pool3d(jitgrad.randn(1, 2, 4, 4, 4), 2, stride=0),
         "stride should not be zero"),
        (lambda: F.avg_pool3d(jitgrad.randn(1, 2, 1, 4, 4), 2),
         "input image (T: 1 H: 4 W: 4) smaller than kernel size (kT: 2 kH: 2 kW: 2)"),
        (lambda: F.avg_pool3d(jitgrad.randn(1, 2, 4, 4, 4), 2, divisor_override=0),
         "divisor must be not zero"),
        (lambda: F.avg_pool1d(jitgrad.randn(3), 2),
         "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' "
         "(while checking arguments for avg_pool1d)"),
        (lambda: F.adaptive_avg_pool3d(jitgrad.randn(2, 3), 2),
         "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [2, 3]"),
        (lambda: F.adaptive_max_pool3d(jitgrad.randn(2, 3), 2),
         "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [2, 3]"),
        (lambda: F.max_unpool2d(jitgrad.randn(1, 1, 2, 2), jitgrad.full((1, 1, 2, 2), 100), 2),
         "Found an invalid max index: 100 (output volumes are of size 4x4)"),
        (lambda: F.max_unpool2d(jitgrad.randn(1, 1, 2, 2), jitgrad.zeros(1, 1, 2, 2), 2),
         "elements in indices should be type int64 but got: Float"),
    ]
    for fn, text in cases:
        with pytest.raises(RuntimeError) as err:
            fn()
        assert str(err.value) == text
    with pytest.raises(ValueError, match=r'invalid output_size "\(7, 7\)" \(dim 0 must be '
                                         r"between 2 and 6\)"):
        F.max_unpool2d(jitgrad.randn(1, 1, 2, 2), jitgrad.zeros(1, 1, 2, 2, dtype=jitgrad.int64),
                       2, output_size=(7, 7))


MODULES = [("MaxPool3d", (2,), {}), ("MaxPool1d", (3, 2, 1), dict(return_indices=True)),
           ("AvgPool1d", (3,), dict(ceil_mode=True)), ("AvgPool3d", (3, 2, 1), {}),
           ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
           ("AdaptiveMaxPool3d", (2,), dict(return_indices=True)),
           ("LPPool1d", (2, 3), {}), ("LPPool2d", (2, 3), {}), ("LPPool3d", (1.5, 2), {}),
           ("MaxUnpool2d", (2,), {}), ("MaxUnpool3d", (2, 1), {}), ("MaxUnpool1d", ((2,),), {}),
           ("BatchNorm3d", (3,), {}), ("BatchNorm3d", (3,), dict(affine=False, momentum=None)),
           ("ConvTranspose3d", (2, 3, 2), dict(stride=2, output_padding=1)),
           ("Conv2d", (2, 3, 3), dict(padding_mode="reflect", padding=1)),
           ("Conv1d", (2, 3, 3), dict(padding_mode="circular", padding="same", dilation=2)),
           ("Conv3d", (2, 3, 3), dict(padding_mode="replicate", padding=(1, 2, 0)))]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_module_surface_vs_torch(name, args, kw):
    torch = pytest.importorskip("torch")
    mj, mt = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(mj) == repr(mt)
    assert list(mj.state_dict()) == list(mt.state_dict())

    def public(m):
        return {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"}

    assert public(mj) == public(mt)
    for k, v in mt.state_dict().items():
        assert tuple(mj.state_dict()[k].shape) == tuple(v.shape)


@pytest.mark.parametrize("name,args,kw,shape", [
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, output_padding=1), (2, 2, 3, 4, 3)),
    ("BatchNorm3d", (3,), {}, (2, 3, 2, 3, 4)),
    ("Conv1d", (2, 3, 3), dict(padding_mode="circular", padding="same", dilation=2), (2, 2, 9)),
    ("Conv1d", (2, 3, 4), dict(padding_mode="reflect", padding="same"), (2, 2, 9)),
    ("Conv2d", (2, 3, 3), dict(padding_mode="reflect", padding=(1, 2)), (2, 2, 6, 7)),
    ("Conv2d", (2, 3, 3), dict(padding_mode="circular", padding=1, stride=2), (2, 6, 7)),
    ("Conv3d", (2, 3, 3), dict(padding_mode="replicate", padding=(1, 2, 0)), (1, 2, 4, 5, 4)),
    ("Conv2d", (2, 3, 3), dict(padding="same", dilation=(2, 3)), (2, 2, 9, 9)),
    ("Conv3d", (2, 3, (2, 3, 2)), dict(padding="same", dilation=2), (1, 2, 5, 6, 5)),
])
def test_module_outputs_vs_torch(name, args, kw, shape):
    torch = pytest.importorskip("torch")
    mt = getattr(torch.nn, name)(*args, **kw).double()
    mj = getattr(nn, name)(*args, **kw, dtype=jitgrad.float64)
    mj.load_state_dict({k: jitgrad.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    a = rng.standard_normal(shape)
    xj, xt = jitgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for _ in range(2):
        oj, ot = mj(xj), mt(xt)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), atol=1e-10)
    oj.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    for (k, p), (_, q) in zip(mj.named_parameters(), mt.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-10, err_msg=k)
    for k, v in mt.state_dict().items():
        np.testing.assert_allclose(mj.state_dict()[k].numpy(), v.numpy(), atol=1e-12)


def test_batchnorm3d_input_check_and_convtranspose3d_output_size():
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3)(jitgrad.randn(2, 3, 4, 4))
    m = nn.ConvTranspose3d(2, 3, 3, stride=2)
    x = jitgrad.randn(1, 2, 3, 3, 3)
    assert m(x).shape == (1, 3, 7, 7, 7)
    assert m(x, output_size=(8, 7, 8)).shape == (1, 3, 8, 7, 8)


_ADAPTIVE_EDGES = [  # (function, input shape, output_size)
    (fn, shape, size)
    for fn in ("adaptive_max_pool1d", "adaptive_avg_pool1d")
    for shape, size in [((2, 3, 4), -1), ((2, 3, 4), 0), ((3, 4), 0), ((2, 3, 0), 2),
                        ((0, 3, 4), 2), ((2, 0, 4), 2), ((3, 0), 2), ((4,), 2),
                        ((1, 2, 3, 4), 2), ((2, 3, 4), (2, 3)), ((2, 3, 4), [3]),
                        ((2, 3, 4), 7), ((2, 3, 4), 1)]
] + [
    (fn, shape, size)
    for fn in ("adaptive_max_pool2d", "adaptive_avg_pool2d")
    for shape, size in [((1, 2, 3, 4), (-1, 2)), ((1, 2, 3, 4), (0, 2)), ((1, 2, 0, 4), 2),
                        ((1, 0, 3, 4), 2), ((0, 2, 3, 4), 2), ((1, 2, 0, 4), 1),
                        ((1, 1, 2, 3, 4), 1), ((1, 2, 3, 4), (None, 2))]
]


@pytest.mark.parametrize("fn,shape,size", _ADAPTIVE_EDGES)
def test_adaptive_pool_edges_match_torch(fn, shape, size):
    """Empty outputs, empty inputs, negative sizes, wrong dims: torch's results and texts (the
    1-d poolings are its 2-d ones on a unit height; an average to (1, 1) is a mean)."""
    torch = pytest.importorskip("torch")
    a = (np.arange(int(np.prod(shape))) % 5).reshape(shape)

    def outcome(lib):
        x = lib.tensor(a, dtype=lib.float32, requires_grad=True)
        try:
            out = getattr(lib.nn.functional, fn)(x, size)
        except RuntimeError as e:
            return str(e)
        if out.numel() == 0:  # (torch's backward refuses an empty gradient: not compared)
            return tuple(out.shape), str(out.dtype)[-7:], out.requires_grad
        out.sum().backward()
        return tuple(out.shape), out.detach().numpy().tolist(), x.grad.numpy().tolist()
    ours, theirs = outcome(jitgrad), outcome(torch)
    if isinstance(theirs, tuple) and 0 not in theirs[0] and np.isnan(theirs[1]).any():
        np.testing.assert_array_equal(ours[1], theirs[1])  # (a mean of nothing)
    else:
        assert ours == theirs


def test_adaptive_max_pool1d_empty_output_has_indices():
    torch = pytest.importorskip("torch")
    outs = [lib.nn.functional.adaptive_max_pool1d(lib.ones(2, 3, 4), 0, return_indices=True)
            for lib in (torch, jitgrad)]
    assert [tuple(o.shape) for o in outs[1]] == [tuple(o.shape) for o in outs[0]]
    assert [str(o.dtype)[-5:] for o in outs[1]] == [str(o.dtype)[-5:] for o in outs[0]]
