"""ctc_loss / CTCLoss, multi_margin_loss, multilabel_margin_loss,
triplet_margin_with_distance_loss, NLLLoss2d and AdaptiveLogSoftmaxWithLoss: values and
gradients against torch, gradcheck in float64, torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck

RNG = np.random.default_rng(24)


def _t(a, grad=False):
    return jitgrad.tensor(a, requires_grad=grad)


# ---------------------------------------------------------------- ctc


T, N, C = 12, 4, 5
X = RNG.standard_normal((T, N, C))
TARGETS = np.array([[1, 2, 2, 3], [1, 1, 0, 0], [4, 3, 2, 1], [2, 0, 0, 0]])
IL, TL = [12, 10, 9, 3], [4, 2, 4, 1]


def test_ctc_alpha_matches_brute_force_sum_over_alignments():
    """A tiny case: the loss is -log of the sum of the probabilities of all alignments that
    collapse to the target (enumerated)."""
    import itertools

    x = RNG.standard_normal((4, 1, 3))
    lp = x - np.log(np.exp(x).sum(2, keepdims=True))
    target = [1, 1]
    total = 0.0
    for path in itertools.product(range(3), repeat=4):
        collapsed = [k for i, k in enumerate(path) if k != 0 and (i == 0 or path[i - 1] != k)]
        if collapsed == target:
            total += np.exp(sum(lp[t, 0, k] for t, k in enumerate(path)))
    got = F.ctc_loss(_t(lp), _t(np.array([target])), [4], [2], reduction="none")
    np.testing.assert_allclose(got.numpy(), [-np.log(total)], rtol=1e-12)


def test_ctc_gradcheck_through_log_softmax():
    x = _t(RNG.standard_normal((6, 2, 4)), grad=True)
    tg = _t(np.array([[1, 2, 2], [3, 0, 0]]))

    def f(x):
        return F.ctc_loss(x.log_softmax(2), tg, [6, 5], [3, 1], reduction="sum")

    assert gradcheck(f, (x,))


def test_ctc_errors():
    lp = _t(np.zeros((6, 2, 4)))
    tg = _t(np.array([[1, 2, 3], [1, 1, 0]]))
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, but "
                                           "got value 7"):
        F.ctc_loss(lp, tg, [6, 7], [3, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension"
                                           " 1, but got size 2 for argument #2 'targets'"):
        F.ctc_loss(lp, _t(np.array([[1, 2], [1, 1]])), [6, 6], [3, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, [6, 6], [3, 2], blank=4)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg, [6, 6, 1], [3, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size 6 at dimension 0"):
        F.ctc_loss(lp, _t(np.array([1, 2, 3, 1, 1])), [6, 6], [3, 3])
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        F.ctc_loss(lp, tg, [6, 6], [3, 2], reduction="x")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_matches_torch(reduction, zero_infinity, concatenated):
    torch = pytest.importorskip("torch")
    tl = [4, 2, 4, 1]
    il = [12, 10, 9, 1]  # the last is too short for its target: inf
    tg = np.concatenate([TARGETS[b, :tl[b]] for b in range(N)]) if concatenated else TARGETS
    xt = torch.tensor(X, requires_grad=True)
    want = torch.nn.functional.ctc_loss(xt.log_softmax(2), torch.tensor(tg), il, tl,
                                        reduction=reduction, zero_infinity=zero_infinity)
    xj = _t(X, grad=True)
    got = F.ctc_loss(xj.log_softmax(2), _t(tg), _t(np.array(il)), _t(np.array(tl)),
                     reduction=reduction, zero_infinity=zero_infinity)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    if reduction != "none" and not zero_infinity:
        return  # the inf loss: nan gradients in both (compared below for 'none')
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12,
                               equal_nan=True)


def test_ctc_gradient_wrt_log_probs_is_torchs_and_module():
    torch = pytest.importorskip("torch")
    lp = torch.tensor(X).log_softmax(2).requires_grad_()
    want = torch.nn.CTCLoss(blank=0, reduction="none")(lp, torch.tensor(TARGETS), IL, TL)
    want.sum().backward()
    lpj = _t(lp.detach().numpy(), grad=True)
    got = nn.CTCLoss(reduction="none")(lpj, _t(TARGETS), IL, TL)
    assert got.grad_fn.name() == "CtcLossBackward0"
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(lpj.grad.numpy(), lp.grad.numpy(), rtol=1e-8, atol=1e-12)
    # another blank, float32, unbatched
    lp32 = lp.detach().float()
    want = torch.nn.functional.ctc_loss(lp32, torch.tensor(TARGETS) + 0, IL, TL, blank=4)
    got = F.ctc_loss(_t(lp32.numpy()), _t(TARGETS), IL, TL, blank=4)
    assert got.dtype == jitgrad.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    want = torch.nn.functional.ctc_loss(lp[:, 0].detach(), torch.tensor(TARGETS[0]), [12], [4],
                                        reduction="none")
    got = F.ctc_loss(_t(lp[:, 0].detach().numpy()), _t(TARGETS[0]), [12], [4], reduction="none")
    assert tuple(got.shape) == tuple(want.shape) == ()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- margin losses


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multi_margin_loss_matches_torch(p, weighted, reduction):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 4))
    y = np.array([0, 3, 1, 1, 2])
    w = RNG.random(4) + 0.5
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.multi_margin_loss(
        xt, torch.tensor(y), p=p, margin=0.7, weight=torch.tensor(w) if weighted else None,
        reduction=reduction)
    xj = _t(x, grad=True)
    got = nn.MultiMarginLoss(p=p, margin=0.7, weight=_t(w) if weighted else None,
                             reduction=reduction)(xj, _t(y))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    assert gradcheck(lambda a: F.multi_margin_loss(a, _t(y), p=p, margin=0.7,
                                                   reduction=reduction), (xj.detach()
                                                                          .requires_grad_(),))


def test_multi_margin_loss_unbatched_and_errors():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(4)
    want = torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(1),
                                                 reduction="none")
    got = F.multi_margin_loss(_t(x), _t(np.array(1)), reduction="none")
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    x2 = _t(RNG.standard_normal((3, 4)))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x2, _t(np.array([0, 4, 1])))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3\], but got \[2\]"):
        F.multi_margin_loss(x2, _t(np.array([0, 1])))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 4 but got \[3\]"):
        F.multi_margin_loss(x2, _t(np.array([0, 1, 2])), weight=_t(np.ones(3)))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5))
    y = np.array([[3, 1, -1, 2, 0], [3, 3, 1, -1, 0], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0]])
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(y), reduction=reduction)
    xj = _t(x, grad=True)
    got = nn.MultiLabelMarginLoss(reduction=reduction)(xj, _t(y))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, _t(y), reduction=reduction),
                     (_t(x, grad=True),))
    one = F.multilabel_margin_loss(_t(x[0]), _t(y[0]), reduction="none")
    assert tuple(one.shape) == ()
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(_t(x), _t(y[:, :2]))
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(_t(x), _t(np.full((4, 5), 5)))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss_matches_torch(swap, custom):
    torch = pytest.importorskip("torch")
    a, p, n = (RNG.standard_normal((6, 3)) for _ in range(3))
    ts = [torch.tensor(v, requires_grad=True) for v in (a, p, n)]
    js = [_t(v, grad=True) for v in (a, p, n)]
    tdist = (lambda u, v: 1 - torch.nn.functional.cosine_similarity(u, v)) if custom else None
    jdist = (lambda u, v: 1 - F.cosine_similarity(u, v)) if custom else None
    want = torch.nn.TripletMarginWithDistanceLoss(distance_function=tdist, margin=1.5,
                                                  swap=swap)(*ts)
    got = nn.TripletMarginWithDistanceLoss(distance_function=jdist, margin=1.5, swap=swap)(*js)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.backward()
    got.backward()
    for tj, tt in zip(js, ts):
        np.testing.assert_allclose(tj.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(*js, margin=0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)


def test_nllloss2d_is_a_deprecated_nllloss():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(ignore_index=1)
    assert isinstance(loss, nn.NLLLoss) and loss.ignore_index == 1
    x = _t(np.log(RNG.random((2, 3, 4, 4)) + 0.1))
    y = _t(RNG.integers(0, 3, (2, 4, 4)))
    np.testing.assert_allclose(loss(x, y).numpy(),
                               F.nll_loss(x, y, ignore_index=1).numpy(), rtol=1e-12)


# ---------------------------------------------------------------- adaptive softmax


def test_adaptive_log_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True)
    tm = tm.double()
    jm = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True,
                                       dtype=jitgrad.float64)
    tsd = tm.state_dict()
    assert list(jm.state_dict()) == list(tsd) == [
        "head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight",
        "tail.1.1.weight"]
    jm.load_state_dict({k: _t(v.numpy()) for k, v in tsd.items()})
    x = RNG.standard_normal((7, 16))
    y = np.array([0, 3, 4, 9, 10, 19, 5])
    xt = torch.tensor(x, requires_grad=True)
    xj = _t(x, grad=True)
    out_t, loss_t = tm(xt, torch.tensor(y))
    out_j, loss_j = jm(xj, _t(y))
    np.testing.assert_allclose(out_j.detach().numpy(), out_t.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(loss_j.detach().numpy(), loss_t.detach().numpy(), rtol=1e-12)
    loss_t.backward()
    loss_j.backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-14)
    for (name, p), (_, q) in zip(jm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-14,
                                   err_msg=name)
    np.testing.assert_allclose(jm.log_prob(xj).detach().numpy(),
                               tm.log_prob(xt).detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(jm.predict(xj).numpy(), tm.predict(xt).numpy())
    one_t = tm(xt[0], torch.tensor(y[0]))
    one_j = jm(xj[0], _t(np.array(y[0])))
    assert tuple(one_j.output.shape) == ()
    np.testing.assert_allclose(one_j.loss.detach().numpy(), one_t.loss.detach().numpy(),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        jm(xj, _t(np.array([0, 1, 2, 3, 4, 5, 20])))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(16, 20, [10, 4])


# ---------------------------------------------------------------- under jit


def test_losses_under_jit_read_targets_on_every_call():
    """Targets and lengths are jit arguments: the traced function is replayed for new values
    (CTC's values are read by its node; the margin losses are composed of traceable ops)."""
    from jitgrad.jit import jit

    rng = np.random.default_rng(5)

    def ctc(x, tg, il, tl):
        return F.ctc_loss(x.log_softmax(2), tg, il, tl)

    def ctc_concat(x, tg):
        return F.ctc_loss(x.log_softmax(2), tg, [12, 12, 12, 12], [2, 1, 3, 1], reduction="sum")

    def mm(x, y):
        return F.multi_margin_loss(x, y, p=2, weight=_t(np.linspace(0.5, 1.5, 5)))

    def mlm(x, y):
        return F.multilabel_margin_loss(x, y)

    cases = [
        (ctc, lambda: (rng.standard_normal((12, 4, 5)), rng.integers(1, 5, (4, 4)),
                       rng.integers(8, 13, 4), rng.integers(1, 5, 4))),
        (ctc_concat, lambda: (rng.standard_normal((12, 4, 5)), rng.integers(1, 5, 7))),
        (mm, lambda: (rng.standard_normal((6, 5)), rng.integers(0, 5, 6))),
        (mlm, lambda: (rng.standard_normal((3, 5)),
                       np.array([[3, 1, -1, 2, 0], rng.permutation(5), [-1, 0, 0, 0, 0]]))),
    ]
    for fn, make in cases:
        jf = jit(fn, backend="interpreter")  # (the backends are tested elsewhere)
        for _ in range(3):
            x, *rest = make()
            xj = _t(x, grad=True)
            args = [_t(r) for r in rest]
            got, want = jf(xj, *args), fn(xj, *args)
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
            g1 = jitgrad.autograd.grad(jf(xj, *args), xj)[0]
            g2 = jitgrad.autograd.grad(fn(xj, *args), xj)[0]
            np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("tg,il,tl", [([[0, 0], [1, 2], [2, 2]], [5, 0, 5], [0, 2, 2]),
                                      ([[1, 1], [1, 2], [2, 2]], [5, 5, 3], [2, 0, 2]),
                                      ([[1, 1], [1, 2], [3, 3]], [1, 2, 4], [1, 1, 2])])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_edge_lengths_match_torch(tg, il, tl, zero_infinity):
    """Empty targets, empty inputs (inf), repeated labels needing a blank between them."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((5, 3, 4))
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.ctc_loss(xt.log_softmax(2), torch.tensor(tg), il, tl,
                                        reduction="none", zero_infinity=zero_infinity)
    xj = _t(x, grad=True)
    got = F.ctc_loss(xj.log_softmax(2), _t(np.array(tg)), il, tl, reduction="none",
                     zero_infinity=zero_infinity)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-14)
