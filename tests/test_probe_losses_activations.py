"""Probes of torch.nn.functional's losses and activations (and their nn.Module classes): each
case runs the same code on torch and on jitgrad and compares values, dtypes, shapes, gradients,
warnings and the error type/text. Only cases where jitgrad agrees with torch are kept."""

import math
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

_CASES = []


def case(fn):
    _CASES.append(fn)
    return fn


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        return ("T", tuple(x.shape), d, np.asarray(x.detach().numpy()), x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, dict):
        return ("dict", [(k, _norm(v)) for k, v in x.items()])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size, jitgrad.Size)):
        return ("Size", tuple(x))
    if isinstance(x, (bool, int, float, str, type(None))):
        return (type(x).__name__, x)
    return ("other", type(x).__name__)


_RTOL = {"float64": (1e-6, 1e-9), "float32": (1e-5, 1e-6)}


def _eq(a, b, rtol=(1e-6, 1e-9)):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind == "f":
            return bool(np.allclose(a, b, rtol=rtol[0], atol=rtol[1], equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, tuple) and len(a) == 5 and a[0] == "T":
        r = _RTOL.get(a[2], (1e-6, 1e-9))
        return a[:3] == b[:3] and a[4] == b[4] and _eq(a[3], b[3], r)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y, rtol) for x, y in zip(a, b))
    return a == b


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, str(e).replace("jitgrad", "torch"))


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, str(x.message).replace("jitgrad", "torch")) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, str(e).replace("jitgrad", "torch"), _norm(log))


# ---- inputs: the same numbers for both libraries ----
def A(seed, shape, lo=-2.0, hi=2.0):  # noqa: N802
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def t(T, arr, dtype="float32", rg=False):
    return T.tensor(np.asarray(arr).tolist(), dtype=getattr(T, dtype), requires_grad=rg)


def grads(T, out, *xs):
    return out, T.autograd.grad(out.sum(), xs)


# ---- cross_entropy ----
@case
def ce_basic(T, log):
    x = t(T, A(0, (4, 5)), rg=True)
    y = T.tensor([0, 2, 4, 1])
    return grads(T, T.nn.functional.cross_entropy(x, y), x)


@case
def ce_f64_reductions(T, log):
    F = T.nn.functional
    x = t(T, A(1, (3, 4)), "float64", rg=True)
    y = T.tensor([3, 0, 1])
    r = [F.cross_entropy(x, y, reduction=red) for red in ("none", "sum", "mean")]
    return r, T.autograd.grad(r[0].sum() + r[2], x)


@case
def ce_weight(T, log):
    x = t(T, A(2, (5, 3)), rg=True)
    y = T.tensor([0, 1, 2, 2, 1])
    w = T.tensor([0.2, 1.0, 3.0])
    F = T.nn.functional
    out = F.cross_entropy(x, y, weight=w), F.cross_entropy(x, y, weight=w, reduction="none")
    return out, T.autograd.grad(out[0], x)


@case
def ce_ignore_index(T, log):
    F = T.nn.functional
    x = t(T, A(3, (5, 3)), "float64", rg=True)
    y = T.tensor([0, -100, 2, 1, -100])
    w = t(T, [1.0, 2.0, 0.5], "float64")
    out = (
        F.cross_entropy(x, y),
        F.cross_entropy(x, y, weight=w),
        F.cross_entropy(x, y, reduction="none"),
        F.cross_entropy(x, T.tensor([0, 1, 2, 1, 1]), ignore_index=1),
    )
    return out, T.autograd.grad(out[1], x)


@case
def ce_all_ignored(T, log):
    F = T.nn.functional
    x = t(T, A(4, (2, 3)), rg=True)
    y = T.tensor([-100, -100])
    r = F.cross_entropy(x, y)
    return r, F.cross_entropy(x, y, reduction="sum"), T.autograd.grad(r, x)


@case
def ce_label_smoothing(T, log):
    F = T.nn.functional
    x = t(T, A(5, (4, 3)), "float64", rg=True)
    y = T.tensor([0, 2, 1, 2])
    out = (
        F.cross_entropy(x, y, label_smoothing=0.1),
        F.cross_entropy(x, y, label_smoothing=0.2, reduction="none"),
        F.cross_entropy(x, y, label_smoothing=0.2, reduction="sum"),
    )
    return out, T.autograd.grad(out[0], x)


@case
def ce_label_smoothing_weight_ignore(T, log):
    F = T.nn.functional
    x = t(T, A(6, (5, 4)), "float64", rg=True)
    y = T.tensor([0, 3, -1, 1, 2])
    w = t(T, [1.0, 0.5, 2.0, 1.5], "float64")
    out = (
        F.cross_entropy(x, y, weight=w, label_smoothing=0.3, ignore_index=-1),
        F.cross_entropy(x, y, weight=w, label_smoothing=0.3, ignore_index=-1, reduction="none"),
    )
    return out, T.autograd.grad(out[0], x)


@case
def ce_prob_targets(T, log):
    F = T.nn.functional
    x = t(T, A(7, (3, 4)), rg=True)
    p = t(T, A(8, (3, 4), 0, 1), rg=True)
    p2 = p / p.sum(1, keepdim=True)
    out = (
        F.cross_entropy(x, p2),
        F.cross_entropy(x, p2, reduction="none"),
        F.cross_entropy(x, p2, reduction="sum"),
    )
    return out, T.autograd.grad(out[0], (x, p))


@case
def ce_prob_targets_weight_smoothing(T, log):
    F = T.nn.functional
    x = t(T, A(9, (3, 4)), "float64", rg=True)
    p = t(T, A(10, (3, 4), 0, 1), "float64")
    w = t(T, [1.0, 2.0, 0.5, 1.0], "float64")
    out = (
        F.cross_entropy(x, p, weight=w),
        F.cross_entropy(x, p, label_smoothing=0.25),
        F.cross_entropy(x, p, weight=w, label_smoothing=0.25, reduction="none"),
    )
    return out, T.autograd.grad(out[0] + out[1] + out[2].sum(), x)


@case
def ce_kdim(T, log):
    F = T.nn.functional
    x = t(T, A(11, (2, 3, 4, 2)), rg=True)
    y = T.tensor(np.random.RandomState(12).randint(0, 3, size=(2, 4, 2)).tolist())
    w = T.tensor([1.0, 0.3, 2.0])
    out = (
        F.cross_entropy(x, y),
        F.cross_entropy(x, y, weight=w, reduction="none"),
        F.cross_entropy(x, y, ignore_index=2, label_smoothing=0.1),
    )
    return out, T.autograd.grad(out[0] + out[2], x)


@case
def ce_kdim_prob(T, log):
    F = T.nn.functional
    x = t(T, A(13, (2, 3, 4)), "float64", rg=True)
    p = F.softmax(t(T, A(14, (2, 3, 4)), "float64"), 1)
    out = F.cross_entropy(x, p), F.cross_entropy(x, p, reduction="none")
    return out, T.autograd.grad(out[0], x)


@case
def ce_unbatched(T, log):
    F = T.nn.functional
    x = t(T, A(15, (5,)), rg=True)
    out = (
        F.cross_entropy(x, T.tensor(3)),
        F.cross_entropy(x, T.tensor(3), reduction="none"),
        F.cross_entropy(x, F.softmax(t(T, A(16, (5,))), 0)),
    )
    return out, T.autograd.grad(out[0] + out[2], x)


@case
def ce_empty(T, log):
    F = T.nn.functional
    x = T.zeros(0, 3)
    y = T.zeros(0, dtype=T.int64)
    return (
        F.cross_entropy(x, y),
        F.cross_entropy(x, y, reduction="sum"),
        F.cross_entropy(x, y, reduction="none"),
    )


def ce_target_oob(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 3]))


def ce_target_negative_oob(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, -2]))


def ce_batch_mismatch(T, log):
    T.nn.functional.cross_entropy(T.zeros(3, 3), T.tensor([0, 1]))


def ce_prob_shape_mismatch(T, log):
    T.nn.functional.cross_entropy(T.zeros(3, 3), T.zeros(3, 4))


def ce_weight_wrong_size(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), weight=T.ones(4))


def ce_float_target_class(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0.0, 1.0]))


def ce_smoothing_range(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), label_smoothing=1.5)


def ce_bad_reduction(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), reduction="avg")


@case
def ce_module(T, log):
    nn = T.nn
    m = nn.CrossEntropyLoss(weight=T.tensor([1.0, 2.0]), ignore_index=3, label_smoothing=0.1)
    x = t(T, A(17, (3, 2)))
    return (
        repr(m),
        repr(nn.CrossEntropyLoss()),
        m.reduction,
        m.ignore_index,
        m.label_smoothing,
        m(x, T.tensor([0, 1, 3])),
        [n for n, _ in m.named_buffers()],
    )


# ---- nll_loss ----
@case
def nll_basic(T, log):
    F = T.nn.functional
    x = F.log_softmax(t(T, A(20, (4, 3)), rg=True), 1)
    y = T.tensor([2, 0, 1, 1])
    out = F.nll_loss(x, y), F.nll_loss(x, y, reduction="sum"), F.nll_loss(x, y, reduction="none")
    return out, T.autograd.grad(out[0], x)


@case
def nll_weight_ignore_f64(T, log):
    F = T.nn.functional
    x = t(T, A(21, (5, 3)), "float64", rg=True)
    y = T.tensor([2, 0, 1, 1, 0])
    w = t(T, [0.5, 2.0, 1.0], "float64")
    out = (
        F.nll_loss(x, y, weight=w),
        F.nll_loss(x, y, weight=w, ignore_index=1),
        F.nll_loss(x, y, weight=w, ignore_index=0, reduction="none"),
    )
    return out, T.autograd.grad(out[1], x)


@case
def nll_kdim(T, log):
    F = T.nn.functional
    x = t(T, A(22, (2, 3, 2, 2)), rg=True)
    y = T.tensor([[[0, 1], [2, 0]], [[1, 1], [2, 2]]])
    out = F.nll_loss(x, y, weight=T.tensor([1.0, 2.0, 3.0])), F.nll_loss(x, y, reduction="none")
    return out, T.autograd.grad(out[0], x)


@case
def nll_3d(T, log):
    F = T.nn.functional
    x = t(T, A(23, (2, 3, 4)), rg=True)
    y = T.tensor([[0, 1, 2, -100], [2, 2, 1, 0]])
    out = F.nll_loss(x, y)
    return out, T.autograd.grad(out, x)


@case
def nll_unbatched(T, log):
    F = T.nn.functional
    x = t(T, A(24, (4,)), rg=True)
    out = F.nll_loss(x, T.tensor(2)), F.nll_loss(x, T.tensor(1), reduction="none")
    return out, T.autograd.grad(out[0], x)


def nll_batch_mismatch(T, log):
    T.nn.functional.nll_loss(T.zeros(3, 3), T.tensor([0, 1]))


def nll_oob(T, log):
    T.nn.functional.nll_loss(T.zeros(2, 3), T.tensor([0, 5]))


def nll_kdim_shape_mismatch(T, log):
    T.nn.functional.nll_loss(T.zeros(2, 3, 4), T.zeros(2, 5, dtype=T.int64))


@case
def nll_module(T, log):
    m = T.nn.NLLLoss(reduction="sum", ignore_index=0)
    return repr(m), m(t(T, A(25, (3, 2))), T.tensor([0, 1, 1]))


# ---- binary cross entropy ----
@case
def bce_basic(T, log):
    F = T.nn.functional
    x = t(T, A(30, (3, 4), 0.05, 0.95), rg=True)
    y = t(T, A(31, (3, 4), 0, 1))
    out = (
        F.binary_cross_entropy(x, y),
        F.binary_cross_entropy(x, y, reduction="sum"),
        F.binary_cross_entropy(x, y, reduction="none"),
    )
    return out, T.autograd.grad(out[0], x)


@case
def bce_weight_f64(T, log):
    F = T.nn.functional
    x = t(T, A(32, (3, 4), 0.05, 0.95), "float64", rg=True)
    y = t(T, A(33, (3, 4), 0, 1), "float64", rg=True)
    w = t(T, [1.0, 2.0, 0.5, 0.0], "float64")
    out = F.binary_cross_entropy(x, y, weight=w)
    out2 = F.binary_cross_entropy(x, y, weight=w[:, None][:3], reduction="none")
    return out, out2, T.autograd.grad(out + out2.sum(), (x, y))


@case
def bce_extremes(T, log):
    F = T.nn.functional
    x = T.tensor([0.0, 1.0, 0.0, 1.0, 0.5], requires_grad=True)
    y = T.tensor([0.0, 1.0, 1.0, 0.0, 0.5])
    out = F.binary_cross_entropy(x, y, reduction="none")
    return out, T.autograd.grad(out.sum(), x)


def bce_out_of_range(T, log):
    T.nn.functional.binary_cross_entropy(T.tensor([1.5]), T.tensor([1.0]))


def bce_size_mismatch(T, log):
    T.nn.functional.binary_cross_entropy(T.tensor([0.5, 0.5, 0.5]), T.tensor([1.0, 0.0]))


@case
def bce_logits(T, log):
    F = T.nn.functional
    x = t(T, A(34, (3, 4), -5, 5), rg=True)
    y = t(T, A(35, (3, 4), 0, 1), rg=True)
    out = (
        F.binary_cross_entropy_with_logits(x, y),
        F.binary_cross_entropy_with_logits(x, y, reduction="none"),
        F.binary_cross_entropy_with_logits(x, y, reduction="sum"),
    )
    return out, T.autograd.grad(out[0], (x, y))


@case
def bce_logits_weight_pos_weight(T, log):
    F = T.nn.functional
    x = t(T, A(36, (3, 4), -5, 5), "float64", rg=True)
    y = t(T, A(37, (3, 4), 0, 1), "float64")
    w = t(T, A(38, (3, 1), 0, 2), "float64")
    pw = t(T, [1.0, 2.0, 0.5, 3.0], "float64")
    out = F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, reduction="none")
    return out, T.autograd.grad(out.sum(), x)


@case
def bce_logits_large(T, log):
    F = T.nn.functional
    x = T.tensor([100.0, -100.0, 30.0, -30.0, 0.0], requires_grad=True)
    y = T.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    out = F.binary_cross_entropy_with_logits(x, y, reduction="none", pos_weight=T.tensor(2.0))
    return out, T.autograd.grad(out.sum(), x)


def bce_logits_size_mismatch(T, log):
    T.nn.functional.binary_cross_entropy_with_logits(T.zeros(3), T.zeros(2))


@case
def bce_modules(T, log):
    nn = T.nn
    return (
        repr(nn.BCELoss()),
        repr(nn.BCELoss(weight=T.ones(2), reduction="sum")),
        repr(nn.BCEWithLogitsLoss(pos_weight=T.ones(2))),
        nn.BCEWithLogitsLoss(pos_weight=T.tensor([2.0]))(T.tensor([0.5]), T.tensor([1.0])),
        [n for n, _ in nn.BCEWithLogitsLoss(pos_weight=T.ones(2)).named_buffers()],
    )


# ---- kl_div ----
@case
def kl_div_reductions(T, log):
    F = T.nn.functional
    x = F.log_softmax(t(T, A(40, (3, 4)), rg=True), 1)
    y = F.softmax(t(T, A(41, (3, 4))), 1)
    out = (
        F.kl_div(x, y, reduction="batchmean"),
        F.kl_div(x, y, reduction="sum"),
        F.kl_div(x, y, reduction="none"),
    )
    return out, T.autograd.grad(out[0], x)


@case
def kl_div_mean_warns(T, log):
    F = T.nn.functional
    return F.kl_div(t(T, A(42, (2, 3))), t(T, A(43, (2, 3), 0, 1)))


@case
def kl_div_log_target(T, log):
    F = T.nn.functional
    x = t(T, A(44, (2, 5)), "float64", rg=True)
    y = t(T, A(45, (2, 5)), "float64", rg=True)
    out = F.kl_div(x, y, reduction="none", log_target=True)
    out2 = F.kl_div(x, y, reduction="batchmean", log_target=True)
    return out, out2, T.autograd.grad(out.sum() + out2, (x, y))


@case
def kl_div_zero_target(T, log):
    F = T.nn.functional
    x = T.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    y = T.tensor([0.0, 0.5, 0.5])
    out = F.kl_div(x, y, reduction="sum")
    return out, T.autograd.grad(out, x)


@case
def kl_div_module(T, log):
    m = T.nn.KLDivLoss(reduction="batchmean", log_target=True)
    return repr(m), m.log_target, m(t(T, A(46, (2, 2))), t(T, A(47, (2, 2))))


# ---- regression losses ----
@case
def mse_l1(T, log):
    F = T.nn.functional
    x = t(T, A(50, (3, 4)), rg=True)
    y = t(T, A(51, (3, 4)), rg=True)
    out = []
    for f in (F.mse_loss, F.l1_loss):
        for red in ("mean", "sum", "none"):
            out.append(f(x, y, reduction=red))
    return out, T.autograd.grad(out[0] + out[3], (x, y))


@case
def mse_l1_f64(T, log):
    F = T.nn.functional
    x = t(T, A(52, (5,)), "float64", rg=True)
    y = t(T, A(53, (5,)), "float64")
    out = F.mse_loss(x, y), F.l1_loss(x, y)
    return out, T.autograd.grad(out[0] * out[1], x)


@case
def l1_grad_at_zero(T, log):
    F = T.nn.functional
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = F.l1_loss(x, T.tensor([1.0, 0.0, 4.0]))
    return out, T.autograd.grad(out, x)


@case
def mse_broadcast_warning(T, log):
    F = T.nn.functional
    x = t(T, A(54, (3,)), rg=True)
    out = F.mse_loss(x, T.tensor([0.5]))
    return out, T.autograd.grad(out, x)


@case
def l1_broadcast_warning(T, log):
    return T.nn.functional.l1_loss(T.ones(2, 1), T.zeros(2))


def mse_shape_error(T, log):
    T.nn.functional.mse_loss(T.ones(3), T.zeros(2))


@case
def smooth_l1(T, log):
    F = T.nn.functional
    x = t(T, A(55, (4, 3)), rg=True)
    y = t(T, A(56, (4, 3)))
    out = (
        F.smooth_l1_loss(x, y),
        F.smooth_l1_loss(x, y, beta=0.5, reduction="none"),
        F.smooth_l1_loss(x, y, beta=2.0, reduction="sum"),
        F.smooth_l1_loss(x, y, beta=0.0),
    )
    return out, T.autograd.grad(out[0] + out[1].sum() + out[3], x)


@case
def smooth_l1_boundary(T, log):
    F = T.nn.functional
    x = T.tensor([0.0, 1.0, -1.0, 0.5, 2.0], dtype=T.float64, requires_grad=True)
    out = F.smooth_l1_loss(x, T.zeros(5, dtype=T.float64), reduction="none", beta=1.0)
    return out, T.autograd.grad(out.sum(), x)


def smooth_l1_negative_beta(T, log):
    T.nn.functional.smooth_l1_loss(T.ones(2), T.zeros(2), beta=-1.0)


@case
def huber(T, log):
    F = T.nn.functional
    x = t(T, A(57, (4, 3), -3, 3), "float64", rg=True)
    y = t(T, A(58, (4, 3)), "float64")
    out = (
        F.huber_loss(x, y),
        F.huber_loss(x, y, delta=0.5, reduction="none"),
        F.huber_loss(x, y, delta=2.0, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum() + out[2], x)


@case
def huber_boundary_f32(T, log):
    F = T.nn.functional
    x = T.tensor([0.0, 2.0, -2.0, 1.0, 3.0], requires_grad=True)
    out = F.huber_loss(x, T.zeros(5), delta=2.0, reduction="none")
    return out, T.autograd.grad(out.sum(), x)


@case
def regression_modules(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.MSELoss(),
            nn.L1Loss(reduction="sum"),
            nn.SmoothL1Loss(beta=0.5),
            nn.HuberLoss(delta=2.0, reduction="none"),
            nn.PoissonNLLLoss(log_input=False, full=True),
            nn.GaussianNLLLoss(full=True, eps=1e-3),
        )
    ], (nn.SmoothL1Loss(beta=0.5).beta, nn.HuberLoss(delta=2.0).delta)


@case
def loss_size_average_legacy(T, log):
    m = T.nn.MSELoss(size_average=False)
    return m.reduction, m(T.ones(2), T.zeros(2))


@case
def loss_reduce_false_legacy(T, log):
    F = T.nn.functional
    return F.l1_loss(T.ones(2), T.zeros(2), reduce=False), T.nn.L1Loss(reduce=False).reduction


# ---- poisson_nll / gaussian_nll ----
@case
def poisson_nll(T, log):
    F = T.nn.functional
    x = t(T, A(60, (3, 4)), rg=True)
    y = t(T, A(61, (3, 4), 0, 5))
    out = (
        F.poisson_nll_loss(x, y),
        F.poisson_nll_loss(x, y, full=True, reduction="none"),
        F.poisson_nll_loss(x, y, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum(), x)


@case
def poisson_nll_no_log(T, log):
    F = T.nn.functional
    x = t(T, A(62, (3, 4), 0, 3), "float64", rg=True)
    y = t(T, A(63, (3, 4), 0, 5), "float64")
    out = (
        F.poisson_nll_loss(x, y, log_input=False),
        F.poisson_nll_loss(x, y, log_input=False, full=True, eps=0.1, reduction="none"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum(), x)


@case
def poisson_nll_full_small_target(T, log):
    F = T.nn.functional
    x = T.tensor([0.5, 0.1, 2.0, 1.0], requires_grad=True)
    y = T.tensor([0.0, 1.0, 1.5, 3.0])
    out = F.poisson_nll_loss(x, y, full=True, reduction="none")
    return out, T.autograd.grad(out.sum(), x)


@case
def gaussian_nll(T, log):
    F = T.nn.functional
    x = t(T, A(64, (4, 3)), rg=True)
    y = t(T, A(65, (4, 3)), rg=True)
    v = t(T, A(66, (4, 3), 0.1, 2), rg=True)
    out = (
        F.gaussian_nll_loss(x, y, v),
        F.gaussian_nll_loss(x, y, v, full=True, reduction="none"),
        F.gaussian_nll_loss(x, y, v, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum(), (x, y, v))


@case
def gaussian_nll_var_shapes(T, log):
    F = T.nn.functional
    x = t(T, A(67, (4, 3)), "float64", rg=True)
    y = t(T, A(68, (4, 3)), "float64")
    v1 = t(T, A(69, (4,), 0.1, 2), "float64", rg=True)
    v2 = t(T, A(70, (4, 1), 0.1, 2), "float64", rg=True)
    out = F.gaussian_nll_loss(x, y, v1), F.gaussian_nll_loss(x, y, v2)
    return out, T.autograd.grad(out[0] + out[1], (x, v1, v2))


@case
def gaussian_nll_eps_clamp(T, log):
    F = T.nn.functional
    v = T.tensor([0.0, 1e-8, 0.5], requires_grad=True)
    out = F.gaussian_nll_loss(T.zeros(3), T.ones(3), v, eps=1e-2, reduction="none")
    return out, T.autograd.grad(out.sum(), v)


@case
def gaussian_nll_scalar_var(T, log):
    F = T.nn.functional
    x = t(T, A(71, (3,)), rg=True)
    return F.gaussian_nll_loss(x, T.zeros(3), 0.5)


def gaussian_nll_negative_var(T, log):
    T.nn.functional.gaussian_nll_loss(T.zeros(2), T.zeros(2), T.tensor([1.0, -1.0]))


def gaussian_nll_bad_var_size(T, log):
    T.nn.functional.gaussian_nll_loss(T.zeros(2, 3), T.zeros(2, 3), T.ones(3, 2))


# ---- ctc_loss ----
def _ctc_inputs(T, dtype="float32", seed=80, shape=(6, 2, 4)):
    lp = T.nn.functional.log_softmax(t(T, A(seed, shape), dtype), 2).detach()
    return lp.requires_grad_()


@case
def ctc_padded(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T)
    tg = T.tensor([[1, 2, 2], [3, 1, 0]])
    il = T.tensor([6, 5])
    tl = T.tensor([3, 2])
    out = (
        F.ctc_loss(lp, tg, il, tl),
        F.ctc_loss(lp, tg, il, tl, reduction="sum"),
        F.ctc_loss(lp, tg, il, tl, reduction="none"),
    )
    return out, T.autograd.grad(out[0], lp)


@case
def ctc_concat_f64(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float64", 81)
    tg = T.tensor([1, 2, 3, 1])
    out = F.ctc_loss(lp, tg, T.tensor([6, 6]), T.tensor([3, 1]), reduction="none")
    return out, T.autograd.grad(out.sum(), lp)


@case
def ctc_blank_and_tuple_lengths(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float64", 82)
    tg = T.tensor([[0, 1], [2, 2]])
    out = F.ctc_loss(lp, tg, (6, 4), (2, 2), blank=3)
    return out, T.autograd.grad(out, lp)


@case
def ctc_infeasible(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float64", 83, (3, 2, 3))
    tg = T.tensor([[1, 1, 1], [1, 2, 0]])
    il = T.tensor([3, 3])
    tl = T.tensor([3, 2])
    out = F.ctc_loss(lp, tg, il, tl, reduction="none")
    out2 = F.ctc_loss(lp, tg, il, tl, reduction="none", zero_infinity=True)
    return out, out2, T.autograd.grad(out2.sum(), lp)


@case
def ctc_unbatched(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float32", 84, (5, 4))
    out = F.ctc_loss(lp, T.tensor([1, 2]), T.tensor(5), T.tensor(2))
    return out, T.autograd.grad(out, lp)


@case
def ctc_empty_target(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float64", 85, (4, 2, 3))
    out = F.ctc_loss(lp, T.tensor([[1, 2], [0, 0]]), T.tensor([4, 3]), T.tensor([2, 0]), 0, "none")
    return out, T.autograd.grad(out.sum(), lp)


@case
def ctc_module(T, log):
    m = T.nn.CTCLoss(blank=1, zero_infinity=True)
    return repr(m), m.blank, m.zero_infinity


# ---- margin / ranking / embedding losses ----
@case
def multi_margin(T, log):
    F = T.nn.functional
    x = t(T, A(90, (4, 5)), rg=True)
    y = T.tensor([0, 4, 2, 1])
    w = T.tensor([1.0, 2.0, 0.5, 1.0, 3.0])
    out = (
        F.multi_margin_loss(x, y),
        F.multi_margin_loss(x, y, p=2, margin=0.5, reduction="none"),
        F.multi_margin_loss(x, y, weight=w, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum() + out[2], x)


@case
def multi_margin_f64_1d(T, log):
    F = T.nn.functional
    x = t(T, A(91, (4,)), "float64", rg=True)
    out = F.multi_margin_loss(x, T.tensor(2), margin=2.0)
    return out, T.autograd.grad(out, x)


def multi_margin_bad_p(T, log):
    T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 1]), p=3)


@case
def multilabel_margin(T, log):
    F = T.nn.functional
    x = t(T, A(92, (3, 4)), rg=True)
    y = T.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]])
    out = (
        F.multilabel_margin_loss(x, y),
        F.multilabel_margin_loss(x, y, reduction="none"),
        F.multilabel_margin_loss(x, y, reduction="sum"),
    )
    return out, T.autograd.grad(out[0], x)


@case
def multilabel_margin_1d(T, log):
    F = T.nn.functional
    x = t(T, A(93, (4,)), "float64", rg=True)
    out = F.multilabel_margin_loss(x, T.tensor([2, 1, -1, 0]))
    return out, T.autograd.grad(out, x)


@case
def hinge_embedding(T, log):
    F = T.nn.functional
    x = t(T, A(94, (3, 4)), rg=True)
    y = t(T, np.where(A(95, (3, 4)) > 0, 1.0, -1.0))
    out = (
        F.hinge_embedding_loss(x, y),
        F.hinge_embedding_loss(x, y, margin=0.5, reduction="none"),
        F.hinge_embedding_loss(x, y, margin=2.0, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum(), x)


@case
def cosine_embedding(T, log):
    F = T.nn.functional
    a = t(T, A(96, (4, 3)), rg=True)
    b = t(T, A(97, (4, 3)), rg=True)
    y = T.tensor([1, -1, 1, -1])
    out = (
        F.cosine_embedding_loss(a, b, y),
        F.cosine_embedding_loss(a, b, y, margin=0.2, reduction="none"),
        F.cosine_embedding_loss(a, b, y, margin=-0.5, reduction="sum"),
    )
    return out, T.autograd.grad(out[0] + out[1].sum() + out[2], (a, b))


@case
def cosine_embedding_1d_f64(T, log):
    F = T.nn.functional
    a = t(T, A(98, (3,)), "float64", rg=True)
    b = t(T, A(99, (3,)), "float64", rg=True)
    out = F.cosine_embedding_loss(a, b, T.tensor(-1), margin=-1.0)
    return out, T.autograd.grad(out, (a, b))


@case
def margin_ranking(T, log):
    F = T.nn.functional
    a = t(T, A(100, (5,)), rg=True)
    b = t(T, A(101, (5,)), rg=True)
    y = T.tensor([1.0, -1.0, 1.0, 1.0, -1.0])
    out = F.margin_ranking_loss(a, b, y), F.margin_ranking_loss(a, b, y, 0.5, reduction="none")
    return out, T.autograd.grad(out[0] + out[1].sum(), (a, b))


@case
def soft_margin_and_multilabel_soft(T, log):
    F = T.nn.functional
    x = t(T, A(102, (3, 4)), "float64", rg=True)
    y = t(T, np.where(A(103, (3, 4)) > 0, 1.0, -1.0), "float64")
    y01 = (y > 0).double()
    w = t(T, [1.0, 2.0, 0.5, 1.0], "float64")
    out = (
        F.soft_margin_loss(x, y),
        F.soft_margin_loss(x, y, reduction="none"),
        F.multilabel_soft_margin_loss(x, y01),
        F.multilabel_soft_margin_loss(x, y01, weight=w, reduction="none"),
    )
    return out, T.autograd.grad(out[0] + out[2] + out[3].sum(), x)


@case
def triplet_margin(T, log):
    F = T.nn.functional
    a = t(T, A(104, (4, 3)), rg=True)
    p = t(T, A(105, (4, 3)), rg=True)
    n = t(T, A(106, (4, 3)), rg=True)
    out = (
        F.triplet_margin_loss(a, p, n),
        F.triplet_margin_loss(a, p, n, margin=2.0, p=1, reduction="none"),
        F.triplet_margin_loss(a, p, n, swap=True, eps=1e-3, reduction="sum"),
        F.triplet_margin_loss(a, p, n, p=3.0),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out), (a, p, n))


@case
def triplet_margin_1d_f64(T, log):
    F = T.nn.functional
    a = t(T, A(107, (3,)), "float64", rg=True)
    p = t(T, A(108, (3,)), "float64")
    n = t(T, A(109, (3,)), "float64")
    out = F.triplet_margin_loss(a, p, n, margin=5.0)
    return out, T.autograd.grad(out, a)


def triplet_margin_dim_mismatch(T, log):
    T.nn.functional.triplet_margin_loss(T.ones(2, 3), T.ones(3), T.ones(2, 3))


@case
def triplet_with_distance(T, log):
    F = T.nn.functional
    a = t(T, A(110, (4, 3)), rg=True)
    p = t(T, A(111, (4, 3)), rg=True)
    n = t(T, A(112, (4, 3)), rg=True)
    out = (
        F.triplet_margin_with_distance_loss(a, p, n),
        F.triplet_margin_with_distance_loss(a, p, n, margin=0.1, swap=True, reduction="none"),
        F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5
        ),
    )
    return out, T.autograd.grad(out[0] + out[1].sum() + out[2], (a, p, n))


def triplet_with_distance_bad_margin(T, log):
    T.nn.functional.triplet_margin_with_distance_loss(
        T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), margin=-1.0
    )


@case
def margin_modules(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.MultiMarginLoss(p=2, margin=0.5),
            nn.MultiLabelMarginLoss(),
            nn.HingeEmbeddingLoss(margin=2.0),
            nn.CosineEmbeddingLoss(margin=0.1),
            nn.MarginRankingLoss(margin=0.3),
            nn.SoftMarginLoss(),
            nn.MultiLabelSoftMarginLoss(),
            nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True),
        )
    ]


@case
def margin_modules_attrs(T, log):
    nn = T.nn
    m = nn.TripletMarginLoss(margin=2.0, p=1.0, eps=1e-3, swap=True)
    mm = nn.MultiMarginLoss(p=2, margin=0.5, weight=T.ones(3))
    tm = nn.TripletMarginWithDistanceLoss(margin=0.5, swap=True)
    return (m.margin, m.p, m.eps, m.swap, mm.p, mm.margin, tm.margin, tm.swap)


# ---- activations: forward and gradient, float32 and float64 ----
def _act_case(name, fn, lo=-3.0, hi=3.0, shape=(2, 5), extra=()):
    def c(T, log):
        res = []
        for dt in ("float32", "float64"):
            x = t(
                T, np.concatenate([A(sum(map(ord, name)), shape, lo, hi).ravel(), extra]), dt, True
            )
            y = fn(T, x)
            res.append((y, T.autograd.grad(y.sum(), x)))
        return res

    c.__name__ = "act_" + name
    _CASES.append(c)


def _F(T):  # noqa: N802
    return T.nn.functional


_act_case("gelu", lambda T, x: _F(T).gelu(x), extra=(0.0,))
_act_case("gelu_tanh", lambda T, x: _F(T).gelu(x, approximate="tanh"), extra=(0.0,))
_act_case("elu", lambda T, x: _F(T).elu(x), extra=(0.0,))
_act_case("elu_alpha", lambda T, x: _F(T).elu(x, alpha=0.3), extra=(0.0,))
_act_case("selu", lambda T, x: _F(T).selu(x), extra=(0.0,))
_act_case("celu", lambda T, x: _F(T).celu(x, alpha=2.0), extra=(0.0,))
_act_case("softplus", lambda T, x: _F(T).softplus(x), -30, 30, extra=(0.0, 20.0, 21.0))
_act_case(
    "softplus_beta_threshold",
    lambda T, x: _F(T).softplus(x, beta=2.0, threshold=5.0),
    -8,
    8,
    extra=(2.5, 2.6),
)
_act_case("softplus_beta_neg", lambda T, x: _F(T).softplus(x, beta=-1.0), extra=(0.0,))
_act_case("hardtanh", lambda T, x: _F(T).hardtanh(x), extra=(-1.0, 1.0, 0.0))
_act_case(
    "hardtanh_minmax", lambda T, x: _F(T).hardtanh(x, min_val=-0.5, max_val=2.0), extra=(-0.5, 2.0)
)
_act_case("relu6", lambda T, x: _F(T).relu6(x * 3), extra=(0.0, 2.0))
_act_case("leaky_relu", lambda T, x: _F(T).leaky_relu(x), extra=(0.0,))
_act_case("leaky_relu_neg_slope", lambda T, x: _F(T).leaky_relu(x, -0.5), extra=(0.0,))
_act_case("rrelu_eval", lambda T, x: _F(T).rrelu(x), extra=(0.0,))
_act_case("rrelu_eval_bounds", lambda T, x: _F(T).rrelu(x, 0.1, 0.5, training=False))
_act_case("glu", lambda T, x: _F(T).glu(x.reshape(2, 6)), shape=(12,))
_act_case("glu_dim0", lambda T, x: _F(T).glu(x.reshape(4, 3), dim=0), shape=(12,))
_act_case("logsigmoid", lambda T, x: _F(T).logsigmoid(x), -40, 40, extra=(0.0,))
_act_case("softmin", lambda T, x: _F(T).softmin(x, dim=1))
_act_case("softmax", lambda T, x: _F(T).softmax(x, dim=-1))
_act_case("softmax_dim0", lambda T, x: _F(T).softmax(x, 0) * x)
_act_case("log_softmax", lambda T, x: _F(T).log_softmax(x, dim=1) * x)
_act_case("log_softmax_large", lambda T, x: _F(T).log_softmax(x, dim=0), -500, 500)
_act_case("mish", lambda T, x: _F(T).mish(x), -25, 25, extra=(0.0,))
_act_case("silu", lambda T, x: _F(T).silu(x), -10, 10, extra=(0.0,))
_act_case("hardswish", lambda T, x: _F(T).hardswish(x), -4, 4, extra=(-3.0, 3.0, 0.0))
_act_case("hardsigmoid", lambda T, x: _F(T).hardsigmoid(x), -4, 4, extra=(-3.0, 3.0, 0.0))
_act_case("threshold", lambda T, x: _F(T).threshold(x, 0.5, -2.0), extra=(0.5,))
_act_case("softsign", lambda T, x: _F(T).softsign(x), extra=(0.0,))
_act_case("tanhshrink", lambda T, x: _F(T).tanhshrink(x), extra=(0.0,))
_act_case("softshrink", lambda T, x: _F(T).softshrink(x), extra=(0.5, -0.5, 0.0))
_act_case("softshrink_lambd", lambda T, x: _F(T).softshrink(x, lambd=1.5), extra=(1.5,))
_act_case("hardshrink", lambda T, x: _F(T).hardshrink(x), extra=(0.5, -0.5, 0.0))
_act_case("hardshrink_lambd", lambda T, x: _F(T).hardshrink(x, 1.0), extra=(1.0, -1.0))
_act_case("prelu_single", lambda T, x: _F(T).prelu(x, T.tensor([0.25], dtype=x.dtype)))


@case
def prelu_channels_grad(T, log):
    F = T.nn.functional
    x = t(T, A(120, (2, 3, 4)), rg=True)
    w = T.tensor([0.1, -0.2, 0.5], requires_grad=True)
    y = F.prelu(x, w)
    return y, T.autograd.grad((y * y).sum(), (x, w))


@case
def prelu_module(T, log):
    m = T.nn.PReLU(num_parameters=3, init=0.1)
    x = t(T, A(121, (2, 3)), rg=True)
    y = m(x)
    y.sum().backward()
    return repr(m), y, m.weight, m.weight.grad, x.grad, repr(T.nn.PReLU())


def prelu_bad_weight(T, log):
    T.nn.functional.prelu(T.ones(2, 3), T.ones(2))


@case
def activation_dtype_softmax(T, log):
    F = T.nn.functional
    x = t(T, A(122, (2, 3)), rg=True)
    a = F.softmax(x, dim=1, dtype=T.float64)
    b = F.log_softmax(x, dim=0, dtype=T.float64)
    c = F.softmin(x, dim=1, dtype=T.float64)
    return (a, b, c), T.autograd.grad((a * b).sum() + c[0, 0], x)


@case
def softmax_int_dtype(T, log):
    F = T.nn.functional
    x = T.tensor([[1, 2, 3]])
    return F.softmax(x, dim=1, dtype=T.float32), F.log_softmax(x, 1, dtype=T.float64)


@case
def softmax_implicit_dim(T, log):
    F = T.nn.functional
    return F.softmax(T.tensor([[1.0, 2.0], [3.0, 5.0]])), F.log_softmax(T.tensor([1.0, 2.0]))


@case
def softmax_implicit_dim_3d(T, log):
    return T.nn.functional.softmax(t(T, A(123, (2, 2, 2))))


@case
def softmax_0d_and_empty(T, log):
    F = T.nn.functional
    return (
        F.softmax(T.tensor(3.0), 0),
        F.log_softmax(T.tensor(3.0), -1),
        F.softmax(T.zeros(0, 3), 1),
        F.log_softmax(T.zeros(2, 0), 1),
    )


@case
def softmax_neg_inf(T, log):
    F = T.nn.functional
    x = T.tensor([[0.0, -math.inf, 1.0], [-math.inf, -math.inf, -math.inf]], requires_grad=True)
    y = F.softmax(x, 1)
    ls = F.log_softmax(x[:1], 1)
    return y, ls


def softmax_bad_dim(T, log):
    T.nn.functional.softmax(T.ones(2, 3), dim=2)


def glu_odd(T, log):
    T.nn.functional.glu(T.ones(2, 3))


def glu_0d(T, log):
    T.nn.functional.glu(T.tensor(1.0))


def gelu_bad_approx(T, log):
    T.nn.functional.gelu(T.ones(2), approximate="fast")


def hardtanh_bad_bounds(T, log):
    T.nn.functional.hardtanh(T.ones(2), min_val=1.0, max_val=-1.0)


@case
def gumbel_softmax_shapes(T, log):
    F = T.nn.functional
    x = t(T, A(124, (3, 4)), rg=True)
    s = F.gumbel_softmax(x, tau=0.5)
    h = F.gumbel_softmax(x, hard=True, dim=0)
    return (
        s.shape,
        s.dtype,
        s.requires_grad,
        bool(T.allclose(s.sum(1), T.ones(3))),
        h.shape,
        h.sum(0).tolist(),
        sorted(set(h.flatten().tolist())),
        T.autograd.grad(h.sum(), x)[0].shape,
    )


@case
def activations_inplace(T, log):
    F = T.nn.functional
    out = []
    for f, kw in (
        (F.relu, {}),
        (F.elu, {"alpha": 0.5}),
        (F.selu, {}),
        (F.celu, {}),
        (F.leaky_relu, {"negative_slope": 0.3}),
        (F.hardtanh, {"min_val": -0.5}),
        (F.relu6, {}),
        (F.rrelu, {}),
        (F.silu, {}),
        (F.mish, {}),
        (F.hardswish, {}),
        (F.hardsigmoid, {}),
    ):
        x = t(T, A(125, (5,), -8, 8))
        y = f(x, inplace=True, **kw)
        out.append((y is x, x))
    x = t(T, A(126, (5,)))
    out.append((F.threshold(x, 0.1, 20.0, inplace=True) is x, x))
    out.append(F.threshold_(t(T, A(127, (3,))), 0.0, 5.0))
    return out


@case
def inplace_leaf_error(T, log):
    T.nn.functional.relu(T.ones(2, requires_grad=True), inplace=True)


@case
def inplace_nonleaf_grad(T, log):
    F = T.nn.functional
    x = t(T, A(128, (6,)), rg=True)
    y = x * 2
    F.elu_(y, alpha=0.5)
    z = x * 1
    F.leaky_relu_(z, 0.1)
    w = x * 1
    F.hardtanh_(w, -0.5, 0.5)
    return y, z, w, T.autograd.grad((y + z * z + w).sum(), x), y.grad_fn.name()


@case
def activation_grad_fn_names(T, log):
    F = T.nn.functional
    x = T.ones(2, requires_grad=True)
    fs = (
        F.gelu,
        F.elu,
        F.selu,
        F.softplus,
        F.hardtanh,
        F.relu6,
        F.leaky_relu,
        F.silu,
        F.hardswish,
        F.hardsigmoid,
        F.softshrink,
        F.hardshrink,
        F.relu,
        F.tanhshrink,
        F.softsign,
    )
    return [f(x).grad_fn.name() for f in fs]


@case
def loss_grad_fn_names(T, log):
    F = T.nn.functional
    x = T.ones(2, 3, requires_grad=True)
    y = T.tensor([0, 1])
    p = T.full((2, 3), 0.5)
    return [
        F.cross_entropy(x, y).grad_fn.name(),
        F.nll_loss(x, y).grad_fn.name(),
        F.mse_loss(x, p).grad_fn.name(),
        F.l1_loss(x, p).grad_fn.name(),
        F.smooth_l1_loss(x, p).grad_fn.name(),
        F.huber_loss(x, p).grad_fn.name(),
        F.binary_cross_entropy(p.requires_grad_(), p.detach()).grad_fn.name(),
        F.binary_cross_entropy_with_logits(x, p.detach()).grad_fn.name(),
        F.kl_div(x, p.detach(), reduction="sum").grad_fn.name(),
        F.mse_loss(x, p.detach(), reduction="none").grad_fn.name(),
    ]


@case
def activation_int_input(T, log):
    F = T.nn.functional
    x = T.tensor([-2, -1, 0, 3])
    return F.relu(x), F.relu6(x), F.hardtanh(x), F.threshold(x, 1, 9)


def activation_int_gelu_error(T, log):
    T.nn.functional.gelu(T.tensor([1, 2]))


def activation_int_elu_error(T, log):
    T.nn.functional.elu(T.tensor([1, 2]))


@case
def activation_empty_and_0d(T, log):
    F = T.nn.functional
    e = T.zeros(0, 2)
    s = T.tensor(-0.7, requires_grad=True)
    out = [f(e) for f in (F.gelu, F.elu, F.softplus, F.mish, F.silu, F.hardswish)]
    out += [f(s) for f in (F.gelu, F.elu, F.selu, F.softplus, F.mish, F.logsigmoid)]
    return out, T.autograd.grad(sum(out[6:]), s)


@case
def activation_modules_repr(T, log):
    nn = T.nn
    ms = (
        nn.GELU(),
        nn.GELU(approximate="tanh"),
        nn.ELU(alpha=0.5, inplace=True),
        nn.SELU(),
        nn.SELU(inplace=True),
        nn.CELU(alpha=2.0),
        nn.Softplus(beta=2.0, threshold=10.0),
        nn.Hardtanh(-2.0, 2.0),
        nn.ReLU6(inplace=True),
        nn.ReLU(),
        nn.LeakyReLU(0.2),
        nn.RReLU(0.1, 0.3),
        nn.GLU(dim=0),
        nn.LogSigmoid(),
        nn.Softmin(dim=1),
        nn.Softmax(dim=-1),
        nn.Softmax(),
        nn.LogSoftmax(dim=1),
        nn.Softmax2d(),
        nn.Mish(),
        nn.SiLU(inplace=True),
        nn.Hardswish(),
        nn.Hardsigmoid(),
        nn.Threshold(0.1, 20.0),
        nn.Softsign(),
        nn.Tanhshrink(),
        nn.Softshrink(0.3),
        nn.Hardshrink(),
        nn.Sigmoid(),
        nn.Tanh(),
    )
    return [repr(m) for m in ms]


@case
def activation_modules_forward(T, log):
    nn = T.nn
    x = t(T, A(130, (2, 3, 2, 2)), "float64", rg=True)
    ms = (
        nn.GELU("tanh"),
        nn.ELU(0.5),
        nn.CELU(2.0),
        nn.Softplus(2.0, 3.0),
        nn.Hardtanh(-0.5, 0.5),
        nn.LeakyReLU(0.1),
        nn.RReLU().eval(),
        nn.GLU(1),
        nn.Softmin(1),
        nn.Softmax2d(),
        nn.LogSoftmax(-1),
        nn.Threshold(0.2, -1.0),
        nn.Softshrink(0.4),
        nn.Hardshrink(0.4),
    )
    ys = [m(x) for m in ms]
    return ys, T.autograd.grad(sum((y * y).sum() for y in ys), x)


@case
def activation_module_attrs(T, log):
    nn = T.nn
    return (
        nn.GELU("tanh").approximate,
        nn.ELU(0.5).alpha,
        nn.Softplus(2.0, 3.0).beta,
        nn.Softplus(2.0, 3.0).threshold,
        nn.Hardtanh(-0.5, 0.5).min_val,
        nn.ReLU6().max_val,
        nn.LeakyReLU(0.1).negative_slope,
        nn.RReLU().lower,
        nn.RReLU().upper,
        nn.GLU().dim,
        nn.Softmax().dim,
        nn.Threshold(0.2, -1.0).value,
        nn.Softshrink().lambd,
        nn.ReLU(True).inplace,
    )


def softmax2d_bad_dim(T, log):
    T.nn.Softmax2d()(T.ones(2, 3))


@case
def rrelu_training_bounds(T, log):
    F = T.nn.functional
    x = T.tensor([-1.0, -2.0, 3.0, -4.0] * 10)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    r = (y / x)[x < 0]
    return bool((r >= 0.1).all()), bool((r <= 0.3).all()), y[x > 0]


# ---- more edge cases ----
@case
def double_backward(T, log):
    F = T.nn.functional
    x = t(T, A(140, (2, 4)), "float64", rg=True)
    out = []
    for f in (
        F.softplus,
        F.elu,
        F.gelu,
        F.silu,
        F.logsigmoid,
        F.mish,
        F.selu,
        lambda v: F.gelu(v, approximate="tanh"),
        lambda v: F.log_softmax(v, 1),
        lambda v: F.softmax(v, 0),
        F.tanhshrink,
    ):
        (g,) = T.autograd.grad(f(x).sum(), x, create_graph=True)
        out.append(T.autograd.grad((g * g).sum(), x))
    return out


@case
def double_backward_losses(T, log):
    F = T.nn.functional
    x = t(T, A(141, (3, 4)), "float64", rg=True)
    y = T.tensor([0, 3, 1])
    p = t(T, A(142, (3, 4), 0.1, 0.9), "float64")
    out = []
    for f in (
        lambda v: F.cross_entropy(v, y),
        lambda v: F.cross_entropy(v, y, label_smoothing=0.2),
        lambda v: F.binary_cross_entropy_with_logits(v, p),
        lambda v: F.binary_cross_entropy(v.sigmoid(), p),
        lambda v: F.mse_loss(v, p),
        lambda v: F.huber_loss(v, p, delta=0.3),
        lambda v: F.kl_div(F.log_softmax(v, 1), p, reduction="batchmean"),
        lambda v: F.poisson_nll_loss(v, p),
    ):
        (g,) = T.autograd.grad(f(x), x, create_graph=True)
        out.append(T.autograd.grad((g * g).sum(), x))
    return out


@case
def ce_int32_target(T, log):
    F = T.nn.functional
    return F.cross_entropy(t(T, A(143, (2, 3))), T.tensor([0, 2], dtype=T.int32))


@case
def ce_uint8_target(T, log):
    F = T.nn.functional
    return F.cross_entropy(t(T, A(143, (2, 3))), T.tensor([0, 2], dtype=T.uint8))


def ce_prob_target_int_input(T, log):
    T.nn.functional.cross_entropy(T.zeros(2, 3, dtype=T.int64), T.tensor([0, 1]))


@case
def ce_prob_target_ignore_index_irrelevant(T, log):
    F = T.nn.functional
    x = t(T, A(144, (2, 3)))
    p = F.softmax(t(T, A(145, (2, 3))), 1)
    return F.cross_entropy(x, p, ignore_index=1)


def ce_kdim_target_oob(T, log):
    T.nn.functional.cross_entropy(T.zeros(1, 3, 2), T.tensor([[0, 3]]))


def nll_1d_target_for_3d(T, log):
    T.nn.functional.nll_loss(T.zeros(2, 3, 4), T.tensor([0, 1]))


@case
def nll_5d(T, log):
    F = T.nn.functional
    x = t(T, A(146, (1, 2, 2, 1, 2)), rg=True)
    y = T.tensor([[[[0, 1]], [[1, 1]]]])
    out = F.nll_loss(x, y, reduction="none"), F.nll_loss(x, y, ignore_index=1)
    return out, T.autograd.grad(out[0].sum() + out[1], x)


@case
def nll_weight_zero_sum(T, log):
    F = T.nn.functional
    x = t(T, A(147, (2, 3)), rg=True)
    out = F.nll_loss(x, T.tensor([0, 0]), weight=T.tensor([0.0, 1.0, 1.0]))
    return out, T.autograd.grad(out, x)


def reduction_invalid_l1(T, log):
    T.nn.functional.l1_loss(T.ones(2), T.zeros(2), reduction="bad")


def reduction_invalid_nll(T, log):
    T.nn.functional.nll_loss(T.zeros(2, 3), T.tensor([0, 1]), reduction="bad")


def mse_int_inputs(T, log):
    T.nn.functional.mse_loss(T.tensor([1, 2]), T.tensor([0, 0]))


@case
def mse_mixed_dtype(T, log):
    F = T.nn.functional
    return F.mse_loss(T.ones(2), T.zeros(2, dtype=T.float64)), F.l1_loss(
        T.ones(2, dtype=T.float64), T.zeros(2)
    )


@case
def mse_0d_and_empty(T, log):
    F = T.nn.functional
    return (
        F.mse_loss(T.tensor(2.0), T.tensor(0.5)),
        F.l1_loss(T.zeros(0, 2), T.zeros(0, 2), reduction="sum"),
        F.smooth_l1_loss(T.zeros(0), T.zeros(0), reduction="none"),
        F.huber_loss(T.zeros(0), T.zeros(0), reduction="sum"),
    )


def huber_delta_zero(T, log):
    T.nn.functional.huber_loss(T.ones(2), T.zeros(2), delta=0.0)


@case
def mse_target_requires_grad_f64(T, log):
    F = T.nn.functional
    x = t(T, A(148, (2, 3)), "float64", rg=True)
    y = t(T, A(149, (3,)), "float64", rg=True)
    out = F.smooth_l1_loss(x, y.expand(2, 3), beta=0.7) + F.huber_loss(x, y.expand(2, 3))
    return out, T.autograd.grad(out, (x, y))


@case
def bce_0d(T, log):
    F = T.nn.functional
    x = T.tensor(0.3, requires_grad=True)
    out = (
        F.binary_cross_entropy(x, T.tensor(1.0)),
        F.binary_cross_entropy_with_logits(x, T.tensor(0.0)),
    )
    return out, T.autograd.grad(out[0] + out[1], x)


def bce_logits_pos_weight_bad(T, log):
    T.nn.functional.binary_cross_entropy_with_logits(
        T.zeros(2, 3), T.zeros(2, 3), pos_weight=T.ones(2)
    )


@case
def kl_div_broadcast_and_f64(T, log):
    F = T.nn.functional
    x = t(T, A(152, (3, 4)), "float64", rg=True)
    y = t(T, A(153, (4,), 0, 1), "float64")
    out = F.kl_div(x, y, reduction="batchmean")
    return out, T.autograd.grad(out, x)


def kl_div_bad_reduction(T, log):
    T.nn.functional.kl_div(T.zeros(2), T.zeros(2), reduction="batchsum")


@case
def kl_div_0d_batchmean(T, log):
    return T.nn.functional.kl_div(T.tensor(-1.0), T.tensor(0.5), reduction="batchmean")


def poisson_nll_bad_reduction(T, log):
    T.nn.functional.poisson_nll_loss(T.zeros(2), T.zeros(2), reduction="avg")


@case
def gaussian_nll_int_var_and_batchless(T, log):
    F = T.nn.functional
    x = t(T, A(154, (3,)), "float64", rg=True)
    out = F.gaussian_nll_loss(x, T.zeros(3, dtype=T.float64), T.ones(1, dtype=T.float64))
    return out, T.autograd.grad(out, x)


def gaussian_nll_bad_reduction(T, log):
    T.nn.functional.gaussian_nll_loss(T.zeros(2), T.zeros(2), T.ones(2), reduction="x")


@case
def gaussian_nll_module_call(T, log):
    m = T.nn.GaussianNLLLoss(full=True)
    return m(t(T, A(155, (2, 2))), t(T, A(156, (2, 2))), t(T, A(157, (2, 2)), lo=0.5, hi=1.0))


def ctc_targets_too_long(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float32", 86, (3, 1, 3))
    return F.ctc_loss(lp, T.tensor([[1, 2, 1, 2]]), T.tensor([3]), T.tensor([4]), reduction="none")


def ctc_input_length_too_long(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float32", 87, (3, 1, 3))
    F.ctc_loss(lp, T.tensor([[1]]), T.tensor([5]), T.tensor([1]))


def ctc_lengths_wrong_size(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float32", 88, (3, 2, 3))
    F.ctc_loss(lp, T.tensor([[1], [1]]), T.tensor([3]), T.tensor([1, 1]))


@case
def ctc_repeated_labels_f32(T, log):
    F = T.nn.functional
    lp = _ctc_inputs(T, "float32", 89, (7, 1, 3))
    out = F.ctc_loss(lp, T.tensor([[1, 1, 2, 2]]), T.tensor([7]), T.tensor([4]), reduction="sum")
    return out, T.autograd.grad(out, lp)


@case
def ctc_module_call(T, log):
    m = T.nn.CTCLoss(reduction="sum")
    lp = _ctc_inputs(T, "float64", 90, (4, 2, 3))
    out = m(lp, T.tensor([[1, 2], [2, 0]]), T.tensor([4, 4]), T.tensor([2, 1]))
    out.backward()
    return out, lp.grad


def multilabel_margin_shape_err(T, log):
    T.nn.functional.multilabel_margin_loss(T.zeros(2, 3), T.zeros(2, 4, dtype=T.int64))


def multi_margin_target_oob(T, log):
    T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 3]))


def multi_margin_weight_bad(T, log):
    T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 1]), weight=T.ones(2))


def margin_ranking_size_mismatch(T, log):
    T.nn.functional.margin_ranking_loss(T.ones(3), T.ones(2), T.ones(3))


@case
def hinge_embedding_0d_and_f64(T, log):
    F = T.nn.functional
    x = t(T, A(158, (4,)), "float64", rg=True)
    y = T.tensor([1.0, -1.0, -1.0, 1.0], dtype=T.float64)
    out = (
        F.hinge_embedding_loss(x, y, margin=0.7),
        F.hinge_embedding_loss(T.tensor(0.3), T.tensor(-1.0)),
    )
    return out, T.autograd.grad(out[0], x)


@case
def soft_margin_module(T, log):
    m = T.nn.MultiLabelSoftMarginLoss(weight=T.tensor([1.0, 2.0]))
    return repr(m), m(t(T, A(159, (2, 2))), T.tensor([[1.0, 0.0], [0.0, 1.0]]))


@case
def triplet_with_distance_module(T, log):
    F = T.nn.functional
    m = T.nn.TripletMarginWithDistanceLoss(
        distance_function=F.pairwise_distance, margin=0.3, swap=True, reduction="sum"
    )
    a, p, n = (t(T, A(160 + i, (3, 2)), rg=True) for i in range(3))
    out = m(a, p, n)
    return out, T.autograd.grad(out, (a, p, n))


def triplet_margin_bad_shapes_batch(T, log):
    T.nn.functional.triplet_margin_loss(T.ones(2, 3), T.ones(3, 3), T.ones(2, 3))


@case
def loss_module_misc(T, log):
    nn = T.nn
    m = nn.NLLLoss(weight=T.ones(3))
    m2 = nn.CrossEntropyLoss(reduction="none")
    return (
        type(m).__mro__[1].__name__,
        type(nn.MSELoss()).__mro__[1].__name__,
        m.weight,
        list(m.state_dict()),
        m2.reduction,
        nn.NLLLoss().weight,
        nn.HuberLoss().delta,
        nn.PoissonNLLLoss().log_input,
        nn.PoissonNLLLoss().eps,
        nn.GaussianNLLLoss().eps,
    )


@case
def activation_f64_softplus_extremes(T, log):
    F = T.nn.functional
    x = T.tensor([-1000.0, -50.0, 0.0, 19.99, 20.0, 20.01, 800.0], dtype=T.float64)
    x.requires_grad_()
    y = F.softplus(x)
    y2 = F.logsigmoid(x)
    y3 = F.mish(x)
    return (y, y2, y3), T.autograd.grad(y.sum() + y2.sum() + y3.sum(), x)


@case
def activation_inf_nan(T, log):
    F = T.nn.functional
    x = T.tensor([-math.inf, math.inf, math.nan, 0.0])
    fs = (F.relu, F.elu, F.selu, F.silu, F.softplus, F.hardtanh, F.relu6, F.leaky_relu)
    fs2 = (F.logsigmoid, F.hardswish, F.hardsigmoid, F.softsign, F.softshrink, F.hardshrink)
    return [f(x) for f in fs + fs2]


@case
def hardtanh_int_bounds_f64(T, log):
    F = T.nn.functional
    x = t(T, A(165, (6,)), "float64", rg=True)
    y = F.hardtanh(x, -1, 1) + F.threshold(x, 0, 0) + F.relu6(x)
    return y, T.autograd.grad(y.sum(), x)


@case
def glu_neg_dim_grad(T, log):
    F = T.nn.functional
    x = t(T, A(166, (2, 3, 4)), "float64", rg=True)
    y = F.glu(x, -1)
    y2 = F.glu(x, -3)
    return (y, y2), T.autograd.grad((y * y).sum() + y2.sum(), x)


def softmax_dtype_int_error(T, log):
    T.nn.functional.softmax(T.tensor([1, 2]), 0)


@case
def log_softmax_half_dtype_arg(T, log):
    F = T.nn.functional
    x = t(T, A(167, (2, 3)), "float64")
    return F.log_softmax(x, 1, dtype=T.float32), F.softmax(x, 0, dtype=T.float32)


@case
def softmin_neg_dim_f64(T, log):
    F = T.nn.functional
    x = t(T, A(168, (2, 3, 2)), "float64", rg=True)
    y = F.softmin(x, -2)
    return y, T.autograd.grad((y * x).sum(), x)


@case
def elu_negative_alpha(T, log):
    F = T.nn.functional
    x = t(T, A(169, (5,)), rg=True)
    y = F.elu(x, alpha=-0.5)
    return y, T.autograd.grad(y.sum(), x)


@case
def leaky_relu_inplace_neg_slope_grad(T, log):
    F = T.nn.functional
    x = T.tensor([-1.0, 2.0], requires_grad=True)
    y = x * 1
    F.leaky_relu(y, -0.1, inplace=True)
    y.sum().backward()


@case
def threshold_module_inplace(T, log):
    m = T.nn.Threshold(0.5, -1.0, inplace=True)
    x = t(T, A(170, (4,)))
    y = m(x)
    return repr(m), y is x, x


def softplus_int_error(T, log):
    T.nn.functional.softplus(T.tensor([1, 2]))


@case
def hardswish_f64_grad_points(T, log):
    F = T.nn.functional
    x = T.tensor([-3.0, -2.9, 3.0, 2.9, -3.1, 3.1], dtype=T.float64, requires_grad=True)
    y = F.hardswish(x) + F.hardsigmoid(x) + F.relu6(x + 3)
    return y, T.autograd.grad(y.sum(), x)


@case
def ce_errors(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            ce_target_oob,
            ce_target_negative_oob,
            ce_batch_mismatch,
            ce_prob_shape_mismatch,
            ce_weight_wrong_size,
            ce_float_target_class,
            ce_smoothing_range,
            ce_bad_reduction,
            ce_kdim_target_oob,
            ce_prob_target_int_input,
        )
    ]


@case
def nll_errors(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            nll_batch_mismatch,
            nll_oob,
            nll_kdim_shape_mismatch,
            nll_1d_target_for_3d,
        )
    ]


@case
def reduction_errors(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            reduction_invalid_l1,
            reduction_invalid_nll,
            kl_div_bad_reduction,
            poisson_nll_bad_reduction,
            gaussian_nll_bad_reduction,
        )
    ]


@case
def activation_errors(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            glu_odd,
            glu_0d,
            gelu_bad_approx,
            hardtanh_bad_bounds,
            softmax_bad_dim,
            softmax2d_bad_dim,
            activation_int_gelu_error,
            activation_int_elu_error,
            softplus_int_error,
            softmax_dtype_int_error,
            prelu_bad_weight,
        )
    ]


@case
def loss_errors_bce_regression(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            bce_out_of_range,
            bce_size_mismatch,
            bce_logits_size_mismatch,
            bce_logits_pos_weight_bad,
            smooth_l1_negative_beta,
            huber_delta_zero,
            mse_shape_error,
            mse_int_inputs,
            gaussian_nll_negative_var,
            gaussian_nll_bad_var_size,
        )
    ]


@case
def loss_errors_margin(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            multi_margin_bad_p,
            multilabel_margin_shape_err,
            multi_margin_target_oob,
            multi_margin_weight_bad,
            margin_ranking_size_mismatch,
            triplet_margin_dim_mismatch,
            triplet_margin_bad_shapes_batch,
            triplet_with_distance_bad_margin,
        )
    ]


@case
def ctc_errors(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (
            ctc_targets_too_long,
            ctc_input_length_too_long,
            ctc_lengths_wrong_size,
        )
    ]


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_losses_activations_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
