"""nn.functional ops of issue 15 against torch: pad (every mode), one_hot, normalize, the
losses' gradgradcheck in float64, and grad_fn._saved_* of the new nodes."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn import functional as F

from test_nn_modules2 import DTYPES, _rng, _run_both, _torch
from torch_compare import same_error


# ---------------------------------------------------------------- pad, one_hot, normalize


PADS = [((3, 4), (1, 2), "constant", 1.5), ((3, 4), (-1, 2, 2, -2), "constant", None),
        ((2, 3, 4), (2, 1), "reflect", None), ((2, 3, 4), (1, 2, 2, 0), "reflect", None),
        ((2, 3, 4), (3, 1), "replicate", None), ((1, 2, 3, 4), (1, 1, 2, 0), "replicate", None),
        ((2, 3, 4), (2, 1), "circular", None), ((2, 2, 3, 4), (1, 1, 2, 3, 0, 1), "circular",
                                                None),
        ((3, 4), (1, 3), "reflect", None),
        # negative pads crop first; circular then wraps within what is left
        ((2, 3, 6), (1, -2), "circular", None), ((2, 5, 6), (-1, 2, 0, -2), "circular", None),
        ((2, 3, 6), (-2, 3), "reflect", None), ((2, 5, 6), (2, -1, -1, 1), "replicate", None)]


@DTYPES
@pytest.mark.parametrize("shape,pad,mode,value", PADS)
def test_pad_matches_torch(shape, pad, mode, value, dtype):
    x = _rng().standard_normal(shape)
    # circular gathers with index_select (IndexSelectBackward0; torch records CopySlices)
    j, t = _run_both(lambda lib: lambda a: lib.nn.functional.pad(a, pad, mode=mode,
                                                                 value=value), [x], dtype,
                     check_name=mode != "circular")
    if mode == "constant":
        assert j.grad_fn.name() == t.grad_fn.name() == "ConstantPadNdBackward0"


@pytest.mark.parametrize("pad,mode", [((1, 1), "reflect"), ((1, 2, 2, 1), "replicate"),
                                      ((1, 2), "circular"), ((2, -1, 1, 0), "constant")])
def test_pad_gradcheck_float64(pad, mode):
    x = jitgrad.randn(2, 3, 4, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(lambda a: F.pad(a, pad, mode=mode), (x,))
    assert gradgradcheck(lambda a: F.pad(a, pad, mode=mode) ** 2, (x,))


@pytest.mark.parametrize("fn", [
    lambda L: L.nn.functional.pad(L.ones(2, 3), (1, 1), mode="reflect", value=1.0),
    lambda L: L.nn.functional.pad(L.ones(2, 3), (3, 3), mode="reflect"),
    lambda L: L.nn.functional.pad(L.ones(3), (1, 1), mode="replicate"),
    lambda L: L.nn.functional.pad(L.ones(3), (1, 1), mode="foo"),
    lambda L: L.nn.functional.pad(L.ones(1, 2, 3), (4, 1), mode="circular"),
    lambda L: L.nn.functional.pad(L.ones(1, 2, 3), (1, 1, 1)),
    lambda L: L.nn.functional.pad(L.ones(1, 2, 3), (1, 1, 1, 1, 1, 1, 1, 1)),
    lambda L: L.nn.functional.one_hot(L.tensor([1.0])),
    lambda L: L.nn.functional.one_hot(L.tensor([-1])),
    lambda L: L.nn.functional.one_hot(L.tensor([3]), 2),
    lambda L: L.nn.functional.one_hot(L.tensor([], dtype=L.int64)),
])
def test_pad_and_one_hot_errors_match_torch(fn):
    _torch()
    same_error(fn)


@pytest.mark.parametrize("args", [((2, 0, 3),), ((2, 0, 3), 5), (((1, 2), (0, 4)),)])
def test_one_hot_matches_torch(args):
    torch = _torch()
    j = F.one_hot(jitgrad.tensor(args[0]), *args[1:])
    t = torch.nn.functional.one_hot(torch.tensor(args[0]), *args[1:])
    assert j.dtype == jitgrad.int64
    np.testing.assert_array_equal(j.numpy(), t.numpy())


@DTYPES
@pytest.mark.parametrize("kw", [{}, {"p": 1.0, "dim": 0}, {"p": 3.0, "dim": -1, "eps": 0.5}])
def test_normalize_matches_torch(kw, dtype):
    x = _rng().standard_normal((3, 4))
    x[1] = 0.0  # the eps clamp
    _run_both(lambda lib: lambda a: lib.nn.functional.normalize(a, **kw), [x], dtype)


def test_functional_gradcheck_float64():
    rng = _rng()

    def t(a):
        return jitgrad.tensor(a, dtype=jitgrad.float64, requires_grad=True)
    x, y = t(rng.standard_normal((3, 4))), t(rng.standard_normal((3, 4)))
    p, q = t(rng.uniform(0.1, 0.9, (3, 4))), t(rng.uniform(0, 1, (3, 4)))
    w = jitgrad.tensor(rng.uniform(0.5, 2, (4,)), dtype=jitgrad.float64)
    assert gradcheck(lambda a, b: F.l1_loss(a, b + 3.0), (x, y))
    assert gradcheck(lambda a: F.normalize(a, dim=1), (x,))
    assert gradgradcheck(lambda a: F.normalize(a, dim=1), (x,))
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, weight=w), (p, q))
    assert gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b, weight=w), (p, q))
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=w), (x, q))
    assert gradgradcheck(lambda a, b: F.binary_cross_entropy_with_logits(
        a, b, weight=w, pos_weight=w), (x, q))
    assert gradgradcheck(lambda a: F.elu(a, 0.5), (x,))
    assert gradgradcheck(lambda a: F.softplus(a, 2.0), (x,))


@pytest.mark.parametrize("name,fn,saved", [
    ("leaky_relu", lambda L, x: L.nn.functional.leaky_relu(x, 0.2), ["self", "negative_slope"]),
    ("elu", lambda L, x: L.nn.functional.elu(x, 0.5), ["self", "alpha", "scale", "input_scale"]),
    ("softplus", lambda L, x: L.nn.functional.softplus(x, 2.0), ["self", "beta", "threshold"]),
    ("smooth_l1", lambda L, x: L.nn.functional.smooth_l1_loss(x, x.detach() * 0.5, beta=0.3),
     ["self", "target", "beta"]),
    ("bce_logits", lambda L, x: L.nn.functional.binary_cross_entropy_with_logits(
        x, x.detach().sigmoid()), ["self", "target", "weight", "pos_weight"]),
    ("pad", lambda L, x: L.nn.functional.pad(x, (1, 2)), ["pad"]),
    ("reflect", lambda L, x: L.nn.functional.pad(x, (1, 2), mode="reflect"),
     ["self", "padding"]),
    ("replicate", lambda L, x: L.nn.functional.pad(x[None], (1, 2, 0, 1), mode="replicate"),
     ["self", "padding"]),
    ("embedding", lambda L, x: L.nn.functional.embedding(L.tensor([0, 2]), x, padding_idx=1),
     ["indices", "padding_idx", "scale_grad_by_freq"]),
])
def test_saved_introspection_matches_torch(name, fn, saved):
    torch = _torch()
    a = _rng().standard_normal((3, 4))
    jn = fn(jitgrad, jitgrad.tensor(a, requires_grad=True)).grad_fn
    tn = fn(torch, torch.tensor(a, requires_grad=True)).grad_fn
    assert jn.name() == tn.name()
    for key in saved:
        got, want = getattr(jn, f"_saved_{key}"), getattr(tn, f"_saved_{key}")
        if isinstance(want, torch.Tensor):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
        else:
            assert got == want, key


# torch's kernel writes the loss into ``1 - target`` (then ``.mul_(input)``, ``.sub_(...)``,
# ``.mul_(weight)``): the result has the target's dtype (a float64 logit with a float32 target,
# as milesial's UNet gives BCEWithLogitsLoss, is a float32 loss), and an integer or bool
# target, or a weight broadcasting beyond the target's shape, fails as those in-place steps do
BCE_LOGITS_MIXES = [
    ("float64", "float32", {}), ("float32", "float64", {}), ("float32", "float16", {}),
    ("float16", "float32", {}), ("float32", "bfloat16", {}), ("float32", "int64", {}),
    ("float32", "bool", {}), ("int64", "float32", {}),
    ("float64", "float32", {"weight": ((3,), "float64")}),
    ("float32", "float32", {"weight": ((4, 2, 3), "float32")}),
    ("float32", "float32", {"pos_weight": ((3,), "float64")}),
    ("float64", "float32", {"pos_weight": ((3,), "float32")}),
    ("float32", "float32", {"pos_weight": ((4, 2, 3), "float32")}),
    ("float32", "float64", {"pos_weight": ((3,), "int64")}),
    ("float32", "float32", {"pos_weight": ((3,), "bool")}),
    ("float32", "float32", {"weight": ((3,), "complex64")}),
]


@pytest.mark.parametrize("x_dtype,t_dtype,extra", BCE_LOGITS_MIXES)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bce_with_logits_dtype_is_the_targets_as_torch(x_dtype, t_dtype, extra, reduction):
    torch = _torch()
    rng = _rng()
    x, t = rng.standard_normal((2, 3)), rng.random((2, 3))
    extra = {k: (rng.random(shape) + 0.5, dt) for k, (shape, dt) in extra.items()}

    def run(lib):
        kw = {k: lib.tensor(v).to(getattr(lib, dt)) for k, (v, dt) in extra.items()}
        xs = lib.tensor(x).to(getattr(lib, x_dtype))
        if xs.dtype.is_floating_point:
            xs.requires_grad_()
        ts = lib.tensor(t).to(getattr(lib, t_dtype))
        try:
            loss = lib.nn.functional.binary_cross_entropy_with_logits(xs, ts, reduction=reduction,
                                                                      **kw)
        except Exception as e:  # noqa: BLE001 - compared below
            return type(e).__name__, str(e)
        loss.sum().backward()
        return (str(loss.dtype).split(".")[1], tuple(loss.shape),
                loss.detach().double().numpy(), str(xs.grad.dtype).split(".")[1],
                xs.grad.double().numpy())

    j, t_ = run(jitgrad), run(torch)
    assert len(j) == len(t_) and j[0] == t_[0] and j[1] == t_[1]
    if len(t_) == 2:  # (the error's class and text)
        return
    rtol = max({"float16": 2e-3, "bfloat16": 1e-2}.get(d, 1e-6) for d in (x_dtype, t_dtype))
    np.testing.assert_allclose(j[2], t_[2], rtol=rtol)
    assert j[3] == t_[3]
    np.testing.assert_allclose(j[4], t_[4], rtol=rtol, atol=1e-7)
