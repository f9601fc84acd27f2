"""jitgrad.nn.functional against torch (values, gradients, node names, errors) and against
central finite differences in float64."""

import re
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.nn import functional as F
from test_nn_gradcheck import f64, fd_check

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def tt(t, requires_grad=False):
    return torch.tensor(np.array(t.detach().numpy())).requires_grad_(requires_grad)


def arr(t):
    return t.detach().numpy()


def compare(ours, theirs, inputs, rtol=1e-6, atol=1e-7, name=True):
    """Values, node name and input gradients of ``ours(*inputs)`` vs ``theirs`` in torch."""
    tins = [tt(x, x.requires_grad) if isinstance(x, jitgrad.Tensor) else x for x in inputs]
    y, ty = ours(*inputs), theirs(*tins)
    np.testing.assert_allclose(arr(y), ty.detach().numpy(), rtol=rtol, atol=atol)
    if name:
        assert y.grad_fn.name() == ty.grad_fn.name()
    g = jitgrad.randn(tuple(y.shape), dtype=y.dtype)
    y.backward(g)
    ty.backward(tt(g))
    for x, tx in zip(inputs, tins):
        if isinstance(x, jitgrad.Tensor) and x.requires_grad:
            np.testing.assert_allclose(arr(x.grad), tx.grad.numpy(), rtol=rtol, atol=atol)
    return y


# ---------------------------------------------------------------- activations


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_and_fd(approximate):
    x = f64(4, 5, scale=2.0)
    compare(lambda a: F.gelu(a, approximate=approximate),
            lambda a: TF.gelu(a, approximate=approximate), [x], rtol=1e-12, atol=1e-13)
    fd_check(lambda a: F.gelu(a, approximate=approximate), [f64(3, 2, scale=2.0)])
    x32 = jitgrad.randn(6)
    np.testing.assert_allclose(arr(F.gelu(x32, approximate)),
                               TF.gelu(tt(x32), approximate=approximate).numpy(), rtol=1e-6,
                               atol=1e-7)


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError, match="^approximate argument must be either none or tanh.$"):
        F.gelu(jitgrad.ones(2), approximate="foo")


def test_silu_relu_tanh_match_torch():
    compare(F.silu, TF.silu, [f64(3, 4, scale=3.0)], rtol=1e-12, atol=1e-13)
    compare(F.relu, TF.relu, [f64(3, 4)], rtol=0, atol=0)
    fd_check(F.silu, [f64(2, 3, scale=2.0)])
    x = jitgrad.randn(5)
    y = x.clone()
    assert F.relu(y, inplace=True) is y and (arr(y) >= 0).all() and y._version == 1
    z = x.clone()
    assert F.silu(z, inplace=True) is z
    np.testing.assert_allclose(arr(z), TF.silu(tt(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_family_matches_torch(fn):
    ours, theirs = getattr(F, fn), getattr(TF, fn)
    compare(lambda a: ours(a, dim=1), lambda a: theirs(a, dim=1), [f64(3, 4)],
            rtol=1e-12, atol=1e-13)
    x = jitgrad.randn(2, 3)
    with pytest.warns(UserWarning, match=f"^Implicit dimension choice for {fn} has been "
                                         "deprecated"):
        y = ours(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(arr(y), theirs(tt(x)).numpy(), rtol=1e-6)
        x3 = jitgrad.randn(2, 3, 4)
        np.testing.assert_allclose(arr(ours(x3)), theirs(tt(x3)).numpy(), rtol=1e-6, atol=1e-7)
    y64 = ours(x, 1, dtype=jitgrad.float64)
    assert y64.dtype is jitgrad.float64


# ---------------------------------------------------------------- linear and layer_norm


def test_linear_functional():
    x, w, b = f64(4, 3), f64(2, 3), f64(2)
    y = compare(F.linear, TF.linear, [x, w, b], rtol=1e-12, atol=1e-13)
    assert y.grad_fn.name() == "AddmmBackward0"
    fd_check(F.linear, [f64(2, 5, 3), f64(2, 3), f64(2)])
    fd_check(F.linear, [f64(3), f64(2, 3)])


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch_and_fd(affine):
    x = f64(2, 3, 4, scale=3.0)
    w, b = (f64(3, 4), f64(3, 4)) if affine else (None, None)
    y = compare(lambda *a: F.layer_norm(a[0], (3, 4), *a[1:]),
                lambda *a: TF.layer_norm(a[0], (3, 4), *a[1:]),
                [x, w, b] if affine else [x], rtol=1e-10, atol=1e-12)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    fd_check(lambda *a: F.layer_norm(a[0], (4,), *a[1:], eps=1e-3),
             [f64(2, 4), f64(4), f64(4)] if affine else [f64(2, 4)], rtol=1e-5)


def test_layer_norm_bad_shape_matches_torch():
    with pytest.raises(RuntimeError) as ours:
        F.layer_norm(jitgrad.randn(4, 5), (4,))
    with pytest.raises(RuntimeError) as theirs:
        TF.layer_norm(torch.randn(4, 5), (4,))
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------- dropout


def test_dropout_mask_semantics_and_gradient():
    x = jitgrad.randn(200, 50, requires_grad=True)
    y = F.dropout(x, p=0.3)
    assert y.grad_fn.name() == "MulBackward0"
    xv, yv = arr(x), arr(y)
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.7, rtol=1e-6)
    assert abs((~kept).mean() - 0.3) < 0.02  # 10000 Bernoulli draws
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), kept / np.float32(0.7), rtol=1e-6)


def test_dropout_is_seeded_and_eval_is_identity():
    x = jitgrad.ones(100)
    jitgrad.manual_seed(3)
    a = arr(F.dropout(x, 0.5))
    jitgrad.manual_seed(3)
    b = arr(F.dropout(x, 0.5))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, arr(F.dropout(x, 0.5)))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(jitgrad.ones(5, requires_grad=True), 1.0)
    assert arr(z).tolist() == [0.0] * 5 and z.grad_fn.name() == "MulBackward0"


def test_dropout_inplace_and_errors():
    x = jitgrad.ones(1000)
    assert F.dropout(x, 0.5, inplace=True) is x
    assert set(np.unique(arr(x))) == {0.0, 2.0} and x._version == 1
    for p in (1.5, -0.1):
        with pytest.raises(ValueError, match=re.escape(
                f"dropout probability has to be between 0 and 1, but got {p}")):
            F.dropout(x, p)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.dropout(jitgrad.ones(3, requires_grad=True), 0.5, inplace=True)


# ---------------------------------------------------------------- losses: mse


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch_and_fd(reduction):
    x, y = f64(3, 4), f64(3, 4)
    out = compare(lambda a, b: F.mse_loss(a, b, reduction=reduction),
                  lambda a, b: TF.mse_loss(a, b, reduction=reduction), [x, y],
                  rtol=1e-12, atol=1e-13)
    assert out.grad_fn.name() == "MseLossBackward0"
    fd_check(lambda a, b: F.mse_loss(a, b, reduction=reduction), [f64(2, 3), f64(2, 3)])


def test_mse_loss_broadcast_warns_and_divides_by_broadcast_numel():
    x, y = f64(4, 3), f64(3)
    with pytest.warns(UserWarning, match=re.escape(
            "Using a target size (jitgrad.Size([3])) that is different to the input size "
            "(jitgrad.Size([4, 3])). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.")):
        out = F.mse_loss(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx, ty = tt(x, True), tt(y, True)
        tout = TF.mse_loss(tx, ty)
        tout.backward()
        out.backward()
        fd_check(lambda a, b: F.mse_loss(a, b), [f64(1, 3), f64(2, 3)])
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-12)
    np.testing.assert_allclose(arr(x.grad), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(arr(y.grad), ty.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_weight_and_errors(reduction):
    x, y, w = f64(3, 2), f64(3, 2), f64(3, 2, requires_grad=False).abs()
    compare(lambda a, b: F.mse_loss(a, b, reduction=reduction, weight=w),
            lambda a, b: TF.mse_loss(a, b, reduction=reduction, weight=tt(w)), [x, y],
            rtol=1e-12, atol=1e-13, name=False)
    with pytest.raises(ValueError, match="^foo is not a valid value for reduction$"):
        F.mse_loss(x, y, reduction="foo")
    with pytest.raises(ValueError, match="^Weights and input must have the same size.$"):
        F.mse_loss(x, y, weight=jitgrad.ones(2))


def test_legacy_size_average_reduce():
    x, y = jitgrad.randn(3, 2), jitgrad.randn(3, 2)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                                         "please use reduction='sum' instead."):
        out = F.mse_loss(x, y, size_average=False)
    np.testing.assert_allclose(out.item(), F.mse_loss(x, y, reduction="sum").item())


# ---------------------------------------------------------------- losses: nll and cross entropy

CE_OPTIONS = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"weight": "w"},
    {"weight": "w", "reduction": "none"},
    {"ignore_index": 1},
    {"ignore_index": 1, "weight": "w"},
    {"label_smoothing": 0.2},
    {"label_smoothing": 0.2, "reduction": "sum"},
    {"label_smoothing": 0.2, "reduction": "none", "ignore_index": 2},
    {"label_smoothing": 0.2, "weight": "w", "ignore_index": 2},
    {"label_smoothing": 0.3, "weight": "w", "reduction": "none"},
]


def _kw(opts, w):
    return {k: (w if v == "w" else v) for k, v in opts.items()}


@pytest.mark.parametrize("shape", [(6, 5), (5,), (3, 5, 2, 2)], ids=["NC", "C", "NCdd"])
@pytest.mark.parametrize("opts", CE_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                    o.items()) or "default")
def test_cross_entropy_class_indices_match_torch(shape, opts):
    x = f64(*shape, scale=2.0)
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = jitgrad.randint(0, 5, tshape)
    if "ignore_index" in opts and len(shape) > 1:
        target[0] = opts["ignore_index"]  # at least one ignored entry
    elif "ignore_index" in opts and int(target) == opts["ignore_index"]:
        target = (target + 1) % 5  # (the one target not ignored: all ignored is tested below)
    w = jitgrad.rand(5, dtype=jitgrad.float64) + 0.5
    kw = _kw(opts, w)
    tkw = _kw(opts, tt(w))
    y = compare(lambda a: F.cross_entropy(a, target, **kw),
                lambda a: TF.cross_entropy(a, tt(target), **tkw), [x], rtol=1e-10, atol=1e-12,
                name=len(shape) <= 2)  # (N, C, d...) goes through NllLoss2d in torch
    if len(shape) <= 2:
        expected = "AddBackward0" if "label_smoothing" in opts else "NllLossBackward0"
        assert y.grad_fn.name() == expected
    fd_check(lambda a: F.cross_entropy(a, target, **kw), [x], rtol=1e-5)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 5, 2)], ids=["C", "NC", "NCd"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_every_target_ignored_has_torchs_zero_gradient(shape, weighted):
    # the mean is 0 / 0 (nan, as torch's); the gradient of an ignored entry is 0, also when
    # ignore_index is a class number (it was 0 * (1 / 0): nan)
    x = f64(*shape)
    target = jitgrad.full(shape[:1] + shape[2:] if len(shape) > 1 else (), 1)
    kw = {"ignore_index": 1}
    w = jitgrad.rand(5, dtype=jitgrad.float64) + 0.5
    y = compare(lambda a: F.cross_entropy(a, target, weight=w if weighted else None, **kw),
                lambda a: TF.cross_entropy(a, tt(target), weight=tt(w) if weighted else None,
                                           **kw), [x], name=len(shape) <= 2)
    assert np.isnan(arr(y)) and (arr(x.grad) == 0).all()


@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 3, 2)], ids=["NC", "C", "NCd"])
@pytest.mark.parametrize("opts", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                  {"weight": "w"}, {"label_smoothing": 0.25},
                                  {"label_smoothing": 0.25, "weight": "w", "reduction": "none"}],
                         ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_cross_entropy_class_probabilities_match_torch(shape, opts):
    x = f64(*shape, scale=2.0)
    cls = 0 if len(shape) == 1 else 1
    probs = F.softmax(jitgrad.randn(tuple(shape), dtype=jitgrad.float64), cls)
    w = jitgrad.rand(3, dtype=jitgrad.float64) + 0.5
    kw, tkw = _kw(opts, w), _kw(opts, tt(w))
    compare(lambda a, p: F.cross_entropy(a, p, **kw),
            lambda a, p: TF.cross_entropy(a, p, **tkw), [x, probs.requires_grad_()],
            rtol=1e-10, atol=1e-12, name=False)
    fd_check(lambda a, p: F.cross_entropy(a, p, **kw), [f64(*shape), probs.detach()
                                                        .requires_grad_()], rtol=1e-5)


def test_cross_entropy_float32_and_uint8_target():
    x = jitgrad.randn(8, 10)
    t = jitgrad.randint(0, 10, (8,))
    np.testing.assert_allclose(F.cross_entropy(x, t).item(),
                               TF.cross_entropy(tt(x), tt(t)).item(), rtol=1e-6)
    np.testing.assert_allclose(F.cross_entropy(x, t.to(jitgrad.uint8)).item(),
                               F.cross_entropy(x, t).item(), rtol=1e-7)


def test_cross_entropy_errors_match_torch():
    x, tx = jitgrad.randn(4, 5), torch.randn(4, 5)
    t, ttg = jitgrad.tensor([0, 1, 2, 3]), torch.tensor([0, 1, 2, 3])
    p, tp = F.softmax(x, 1), TF.softmax(tx, 1)
    cases = [
        (lambda: F.cross_entropy(x, p, ignore_index=1),
         lambda: TF.cross_entropy(tx, tp, ignore_index=1)),
        (lambda: F.cross_entropy(x, t, label_smoothing=1.5),
         lambda: TF.cross_entropy(tx, ttg, label_smoothing=1.5)),
        (lambda: F.cross_entropy(x, p[:, :3]), lambda: TF.cross_entropy(tx, tp[:, :3])),
        (lambda: F.cross_entropy(x, t[:3]), lambda: TF.cross_entropy(tx, ttg[:3])),
        (lambda: F.cross_entropy(x, t.float()), lambda: TF.cross_entropy(tx, ttg.float())),
        (lambda: F.cross_entropy(x, t.to(jitgrad.int32)),
         lambda: TF.cross_entropy(tx, ttg.to(torch.int32))),
        (lambda: F.cross_entropy(x, t, reduction="foo"),
         lambda: TF.cross_entropy(tx, ttg, reduction="foo")),
        (lambda: F.cross_entropy(x, t, weight=jitgrad.rand(3)),
         lambda: TF.cross_entropy(tx, ttg, weight=torch.rand(3))),
        (lambda: F.cross_entropy(x, t + 10), lambda: TF.cross_entropy(tx, ttg + 10)),
        (lambda: F.cross_entropy(x, jitgrad.zeros(4, 5, dtype=jitgrad.int64)),
         lambda: TF.cross_entropy(tx, torch.zeros(4, 5, dtype=torch.long))),
        (lambda: F.nll_loss(x, t, reduction="foo"),
         lambda: TF.nll_loss(tx, ttg, reduction="foo")),
    ]
    for ours, theirs in cases:
        with pytest.raises(Exception) as e_theirs:
            theirs()
        with pytest.raises(type(e_theirs.value)) as e_ours:
            ours()
        assert str(e_ours.value) == str(e_theirs.value)


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x = jitgrad.randn(3, 5)
    t = jitgrad.tensor([-100, -100, -100])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(F.cross_entropy(x, t).item())
        assert np.isnan(F.cross_entropy(x, t, label_smoothing=0.2).item())
    assert np.isnan(TF.cross_entropy(tt(x), tt(t)).item())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_matches_torch(reduction):
    logp = F.log_softmax(f64(5, 4), 1).detach().requires_grad_()
    t = jitgrad.tensor([0, 3, 1, 1, 2])
    w = jitgrad.rand(4, dtype=jitgrad.float64)
    y = compare(lambda a: F.nll_loss(a, t, weight=w, reduction=reduction, ignore_index=3),
                lambda a: TF.nll_loss(a, tt(t), weight=tt(w), reduction=reduction,
                                      ignore_index=3), [logp], rtol=1e-12, atol=1e-13)
    assert y.grad_fn.name() == "NllLossBackward0"
    fd_check(lambda a: F.nll_loss(a, t, weight=w, reduction=reduction), [f64(5, 4)])
    x3 = f64(2, 4, 3)
    t3 = jitgrad.randint(0, 4, (2, 3))
    compare(lambda a: F.nll_loss(a, t3, reduction=reduction),
            lambda a: TF.nll_loss(a, tt(t3), reduction=reduction), [x3], rtol=1e-12,
            atol=1e-13, name=False)


SECOND_ORDER = {
    "cross_entropy": lambda F_, a, t, w: F_.cross_entropy(a, t, weight=w[:4],
                                                          label_smoothing=0.1),
    "cross_entropy_probs": lambda F_, a, t, w: F_.cross_entropy(
        a, F_.softmax(a.detach() * 0.5, 1)),
    "nll_loss": lambda F_, a, t, w: F_.nll_loss(F_.log_softmax(a, 1), t, weight=w[:4]),
    "mse_loss": lambda F_, a, t, w: F_.mse_loss(a.tanh(), a.detach() * 0.3),
    "layer_norm": lambda F_, a, t, w: F_.layer_norm(a, (4,), w[:4], w[1:]).pow(3).sum(),
    "gelu": lambda F_, a, t, w: F_.gelu(a).pow(2).sum(),
    "gelu_tanh": lambda F_, a, t, w: F_.gelu(a, approximate="tanh").pow(2).sum(),
    "silu": lambda F_, a, t, w: F_.silu(a).pow(2).sum(),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_derivatives_match_torch(name):
    """grad(create_graph=True) then a second backward: Hessian-vector products vs torch."""
    fn = SECOND_ORDER[name]
    x = f64(3, 4)
    t = jitgrad.tensor([0, 3, 1])
    w = jitgrad.rand(5, dtype=jitgrad.float64) + 0.5
    v = jitgrad.randn(3, 4, dtype=jitgrad.float64)
    (g,) = jitgrad.autograd.grad(fn(F, x, t, w), x, create_graph=True)
    (g * v).sum().backward()
    tx = tt(x, True)
    (tg,) = torch.autograd.grad(fn(TF, tx, tt(t), tt(w)), tx, create_graph=True)
    (tg * tt(v)).sum().backward()
    np.testing.assert_allclose(arr(g), tg.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(arr(x.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
