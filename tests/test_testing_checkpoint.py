"""jitgrad.testing.assert_close / make_tensor and jitgrad.utils.checkpoint, against torch."""

import contextlib

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
from jitgrad.testing import assert_close, make_tensor
from jitgrad.utils.checkpoint import checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")


def _pairs(m):
    t = m.tensor
    nan, inf = float("nan"), float("inf")
    return [
        (t([1., 2., 3.]), t([1., 2.1, 3.]), {}),
        (t([1., 2.]), t([1., 2., 3.]), {}),
        (t([1., 2.]), t([1., 2.], dtype=m.float64), {}),
        (1.0, 1.1, {}),
        ([m.ones(2), m.zeros(2)], [m.ones(2), m.ones(2)], {}),
        ({"a": m.ones(2)}, {"a": m.zeros(2)}, {}),
        (t([1, 2]), t([1, 3]), {}),
        (t([nan]), t([nan]), {}),
        (t([nan]), t([nan]), {"equal_nan": True}),
        (m.ones(2), m.ones(2) + 1e-3, {"msg": "custom"}),
        (m.ones(2, 2), m.ones(2, 2).t(), {}),
        (np.ones(2), np.ones(2) * 2, {}),
        (t([1.0, inf]), t([1.0, inf]), {}),
        (t([[1., 2.], [3., 4.]]), t([[1., 2.], [3., 5.]]), {}),
        (t([True]), t([False]), {}),
        (t([1., 2.]), t([1., 2.], dtype=m.float64), {"check_dtype": False}),
        (1, 2, {}),
        (m.ones(2, requires_grad=True), m.ones(2), {}),
        (t(1.0), t(2.0), {}),
        ((1, 2), (1, 2, 3), {}),
        (m.ones(3), m.ones(3) * 1.00001, {"atol": 0, "rtol": 0}),
        (m.ones(3), m.ones(3) * 1.001, {"atol": 1e-2, "rtol": 0}),
        (t([1., 2.]), t([1., 2.5]), {"msg": lambda text: "wrapped: " + text.splitlines()[0]}),
        ([[m.ones(1)], [m.ones(1), m.zeros(1)]], [[m.ones(1)], [m.ones(1), m.ones(1)]], {}),
    ]


@pytest.mark.parametrize("k", range(len(_pairs(torch))))
def test_assert_close_matches_torch(k):
    mine, theirs = _pairs(jg)[k], _pairs(torch)[k]

    def outcome(fn, pair):
        try:
            fn(pair[0], pair[1], **pair[2])
        except (AssertionError, ValueError, TypeError) as e:
            return type(e).__name__, str(e).replace("torch.", "jitgrad.")
        return "ok", ""
    assert outcome(assert_close, mine) == outcome(torch.testing.assert_close, theirs)


def test_assert_close_argument_errors():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        assert_close(jg.ones(2), jg.ones(2), rtol=1e-3)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        assert_close(jg.ones(2), [1.0, 1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "complex64"])
def test_make_tensor(dtype):
    dt = getattr(jg, dtype)
    t = make_tensor(40, 30, dtype=dt)
    assert t.shape == (40, 30) and t.dtype is dt
    values = t.numpy()
    if dtype == "bool":
        assert values.any() and not values.all()
    elif dtype == "complex64":
        assert np.abs(values.real).max() <= 9 and np.abs(values.imag).max() <= 9
    else:
        lo, hi = (0, 10) if dtype == "uint8" else (-9, 9)
        assert values.min() >= lo and values.max() < hi and len(np.unique(values)) > 5
    u = make_tensor((5, 6), dtype=jg.float64, low=2, high=3, noncontiguous=True,
                    requires_grad=True)
    assert not u.is_contiguous() and u.requires_grad and (u.detach().numpy() >= 2).all()
    assert (make_tensor(1000, dtype=jg.int64, low=-1, high=2, exclude_zero=True) != 0).all()


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)

    def forward(self, x, scale=1.0):
        return self.b(nn.functional.dropout(self.a(x).tanh(), 0.3, self.training)) * scale


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gives_the_gradients_of_the_plain_run(use_reentrant):
    jg.manual_seed(0)
    block = _Block()
    x = jg.randn(4, 6, requires_grad=True)

    def grads(run):
        block.zero_grad()
        x.grad = None
        jg.manual_seed(7)  # the same dropout mask in both runs
        run().pow(2).sum().backward()
        return [x.grad.clone()] + [p.grad.clone() for p in block.parameters()]

    plain = grads(lambda: block(x))
    checked = grads(lambda: checkpoint(block, x, use_reentrant=use_reentrant))
    for a, b in zip(plain, checked):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    name = checkpoint(block, x, use_reentrant=use_reentrant).grad_fn.name()
    assert name == ("CheckpointFunctionBackward" if use_reentrant else "MulBackward0")


def test_checkpoint_keeps_nothing_of_the_segment_and_recomputes_it_once():
    calls = []

    def segment(t):
        calls.append(1)
        return (t.sin() * t).exp()

    x = jg.randn(5, dtype=jg.float64, requires_grad=True)
    y = checkpoint(segment, x, use_reentrant=False)
    assert len(calls) == 1
    (g,) = jg.autograd.grad(y.sum(), [x])
    assert len(calls) == 2
    want = (x.sin() * x).exp() * (x.cos() * x + x.sin())
    np.testing.assert_allclose(g.numpy(), want.detach().numpy(), rtol=1e-12)
    # keyword arguments reach the function (non-reentrant only)
    z = checkpoint(lambda t, s: t * s, x, use_reentrant=False, s=3.0)
    np.testing.assert_allclose(jg.autograd.grad(z.sum(), [x])[0].numpy(), 3.0)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: s"):
        checkpoint(lambda t, s: t * s, x, use_reentrant=True, s=3.0)


def test_checkpoint_gradcheck():
    x = jg.randn(3, 4, dtype=jg.float64, requires_grad=True)
    w = jg.randn(4, 2, dtype=jg.float64, requires_grad=True)
    assert jg.autograd.gradcheck(
        lambda x, w: checkpoint(lambda a, b: (a @ b).tanh(), x, w, use_reentrant=False), (x, w))
    # the reentrant form's inner backward cannot honour autograd.grad's inputs: torch's error
    # (gradcheck calls autograd.grad); a plain backward() gets the eager gradients
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is "
                                           "incompatible with .grad"):
        jg.autograd.gradcheck(
            lambda x, w: checkpoint(lambda a, b: (a @ b).tanh(), x, w, use_reentrant=True),
            (x, w))
    assert jg.autograd._is_checkpoint_valid()
    checkpoint(lambda a, b: (a @ b).tanh(), x, w, use_reentrant=True).sum().backward()
    gx, gw = jg.autograd.grad((x @ w).tanh().sum(), (x, w))
    assert jg.equal(x.grad, gx) and jg.equal(w.grad, gw)


def test_checkpoint_warnings_match_torch():
    x = jg.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                         "explicitly"):
        checkpoint(lambda t: t * 2, x)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. "
                                         "Gradients will be None"):
        checkpoint(lambda t: t * 2, jg.ones(2), use_reentrant=True)


def test_checkpoint_sequential_matches_the_plain_model():
    jg.manual_seed(1)
    model = nn.Sequential(*[nn.Linear(5, 5) for _ in range(6)])
    x = jg.randn(3, 5, requires_grad=True)
    model(x).sum().backward()
    want = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    checkpoint_sequential(model, 3, x, use_reentrant=False).sum().backward()
    got = [p.grad for p in model.parameters()] + [x.grad]
    for a, b in zip(want, got):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def _run_changing_segment(lib, kind, early_stop):
    """A segment whose recomputation saves more or fewer tensors than its forward did."""
    from importlib import import_module

    ckpt = import_module(f"{lib.__name__}.utils.checkpoint")
    x = lib.ones(2, requires_grad=True)
    calls, log = [0], []

    def segment(t):
        calls[0] += 1
        first = calls[0] == 1
        a = t.sin()
        log.append("sin")
        if kind == "more":
            b = a * 2 if first else a.cos()  # (the rerun saves one tensor more)
        else:
            b = a.cos() if first else a * 2  # (the rerun saves one tensor fewer)
        log.append("second")
        return b

    with ckpt.set_checkpoint_early_stop(early_stop):
        y = ckpt.checkpoint(segment, x, use_reentrant=False)
    try:
        y.sum().backward()
    except ckpt.CheckpointError as e:
        return "CheckpointError", str(e).split("\n\n")[0], log
    return x.grad.tolist(), None, log


@pytest.mark.parametrize("kind", ["more", "fewer"])
@pytest.mark.parametrize("early_stop", [True, False])
def test_recomputation_stops_early_or_raises_checkpoint_error_as_torch(kind, early_stop):
    ours = _run_changing_segment(jg, kind, early_stop)
    theirs = _run_changing_segment(torch, kind, early_stop)
    assert ours[1:] == theirs[1:]
    if ours[0] == "CheckpointError":
        assert theirs[0] == "CheckpointError"
    else:
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)


def test_checkpoint_context_fn_and_helpers():
    from jitgrad.utils import checkpoint as ckpt

    entered = []

    @contextlib.contextmanager
    def mark(name):
        entered.append(name)
        yield

    x = jg.ones(3, requires_grad=True)
    y = ckpt.checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False,
                        context_fn=lambda: (mark("forward"), mark("recompute")))
    assert entered == ["forward"]
    y.sum().backward()
    assert entered == ["forward", "recompute"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.e) * np.e, rtol=1e-6)
    with pytest.raises(ValueError, match=r"Passing `context_fn` or `debug` is only supported "
                                         "when use_reentrant=False."):
        ckpt.checkpoint(lambda t: t, x, use_reentrant=True, context_fn=lambda: None)
    assert all(isinstance(c, contextlib.nullcontext) for c in ckpt.noop_context_fn())
    detached = ckpt.detach_variable((x, 3))
    assert detached[1] == 3 and detached[0].requires_grad and detached[0].grad_fn is None
    assert detached[0] is not x
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got "
                                           "Unsupported input type: Tensor"):
        ckpt.detach_variable(x)
    assert issubclass(ckpt.CheckpointError, RuntimeError)


def test_deprecated_assert_allclose_as_torch():
    for a, b in ((jg.ones(2), [1.0, 1.0 + 5e-5]), (jg.ones(2, dtype=jg.float64), [1.0, 1.0]),
                 (1.0, 1.0 + 1e-9)):
        with pytest.warns(FutureWarning, match=r"`torch.testing.assert_allclose\(\)` is "
                                               "deprecated since 1.12"):
            jg.testing.assert_allclose(a, b)
    for a, b, allowed in ((jg.ones(2), jg.zeros(2), "up to 1e-05 allowed"),
                          (jg.ones(2, dtype=jg.float64), [1.0, 1.00002], "up to 1e-08 allowed")):
        with pytest.warns(FutureWarning), pytest.raises(AssertionError, match=allowed):
            jg.testing.assert_allclose(a, b)


def test_increment_version_and_invert_permutation():
    from jitgrad.autograd.graph import increment_version
    from jitgrad.nn.utils.rnn import invert_permutation

    x = jg.ones(2, requires_grad=True)
    y = x.exp()
    before = y._version
    increment_version([y, y])
    assert y._version == before + 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()  # (exp saved y: the bump fails its version check, as torch's)
    p = jg.tensor([2, 0, 3, 1])
    inverse = invert_permutation(p)
    assert inverse.tolist() == [1, 3, 0, 2] and inverse.dtype == jg.int64
    assert p[inverse].tolist() == [0, 1, 2, 3] and invert_permutation(None) is None
