"""Probes of torch.nn's layer modules and their functional forms (convolutions, pooling,
normalization, embeddings, linear layers, resampling, padding, recurrent layers, attention and
transformer layers): each case runs the same code on torch and on jitgrad, with the weights of
the jitgrad module copied from a seeded torch module, and compares values, dtypes, shapes,
gradients, warnings, reprs and the error type/text. Only cases where jitgrad agrees with torch
are kept."""

import math
import re
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

_CASES = []


@pytest.fixture(scope="module", autouse=True)
def _torch_one_thread():
    # torch (the oracle) on one thread: its thread pool's wake-ups cost more than these small
    # tensors' work; restored afterwards
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def case(fn):
    _CASES.append(fn)
    return fn


def _is_t(x):
    return isinstance(x, (torch.Tensor, jitgrad.Tensor))


def _norm(x):
    if _is_t(x):
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


def _msg(s):
    s = str(s).replace("jitgrad", "torch")
    return re.sub(r" \(Triggered internally at [^)]*\)", "", s)


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, _msg(e))


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, _msg(x.message)) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, _msg(e), _norm(log))


# ---- inputs and weights: the same numbers for both libraries ----
def A(seed, shape, lo=-2.0, hi=2.0):  # noqa: N802
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def t(T, arr, dtype="float64", rg=False):
    arr = np.asarray(arr)
    return T.tensor(arr.tolist(), dtype=getattr(T, dtype)).reshape(arr.shape).requires_grad_(rg)


def X(T, seed, shape, dtype="float64", rg=True):  # noqa: N802
    return t(T, A(seed, shape), dtype, rg)


def mk(T, name, *a, dt="float64", seed=0, **kw):
    """nn.<name>(*a, **kw) built in torch under a fixed seed; for jitgrad the torch module's
    state_dict is copied in through numpy."""
    if dt is not None:
        kw["dtype"] = getattr(torch, dt)
    torch.manual_seed(seed)
    if T is torch:
        return getattr(torch.nn, name)(*a, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(torch.nn, name)(*a, **kw)
    if dt is not None:
        kw["dtype"] = getattr(jitgrad, dt)
    m = getattr(jitgrad.nn, name)(*a, **kw)
    m.load_state_dict({k: jitgrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return m


def _flat(out):
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from _flat(o)
    elif _is_t(out):
        yield out


def lossof(T, out):
    tot = 0
    for i, o in enumerate(_flat(out)):
        if o.requires_grad and o.is_floating_point():
            d = str(o.dtype).split(".")[-1]
            tot = tot + (o * t(T, A(100 + i, tuple(o.shape)), d)).sum()
    return tot


def fb(T, m, *xs, **kw):
    """forward, then the gradients of a weighted sum of the outputs w.r.t. the inputs that
    require grad and the module's parameters"""
    out = m(*xs, **kw)
    ins = [x for x in _flat(list(xs) + list(kw.values())) if x.requires_grad]
    ps = [p for p in m.parameters() if p.requires_grad] if hasattr(m, "parameters") else []
    gs = T.autograd.grad(lossof(T, out), ins + ps, allow_unused=True)
    return out, list(gs)


# =================================== convolutions ===================================
def _conv1d_basic(T, log):
    return fb(T, mk(T, "Conv1d", 2, 4, 3), X(T, 0, (2, 2, 7)))


def _conv1d_unbatched(T, log):
    return fb(T, mk(T, "Conv1d", 2, 3, 2, stride=2), X(T, 1, (2, 6)))


@case
def conv1d(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_conv1d_basic, _conv1d_unbatched)]


@case
def conv2d_stride_pad_dil(T, log):
    m = mk(T, "Conv2d", 3, 4, 3, stride=2, padding=1, dilation=2)
    return fb(T, m, X(T, 2, (2, 3, 9, 8)))


@case
def conv2d_tuple_args(T, log):
    m = mk(T, "Conv2d", 2, 3, (2, 3), stride=(1, 2), padding=(2, 0), dilation=(1, 2))
    return fb(T, m, X(T, 3, (1, 2, 6, 9)))


def _conv2d_same_even_kernel(T, log):
    # (torch warns about the zero-padded copy once per process: not compared)
    with warnings.catch_warnings(record=True):
        m = mk(T, "Conv2d", 2, 2, 4, padding="same", dilation=2)
        return fb(T, m, X(T, 4, (1, 2, 7, 6)))


def _conv2d_same_asym_kernel(T, log):
    with warnings.catch_warnings(record=True):
        m = mk(T, "Conv2d", 2, 2, (2, 3), padding="same")
        return fb(T, m, X(T, 5, (1, 2, 5, 5)))


def _conv2d_valid(T, log):
    m = mk(T, "Conv2d", 2, 2, 3, padding="valid", bias=False)
    return fb(T, m, X(T, 6, (1, 2, 5, 4)))


@case
def conv2d_same_valid(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (_conv2d_same_even_kernel, _conv2d_same_asym_kernel, _conv2d_valid)
    ]


@case
def conv2d_groups_nobias(T, log):
    m = mk(T, "Conv2d", 4, 6, 3, groups=2, bias=False)
    return fb(T, m, X(T, 7, (2, 4, 5, 5)))


@case
def conv2d_depthwise(T, log):
    m = mk(T, "Conv2d", 3, 6, 3, groups=3, padding=1)
    return fb(T, m, X(T, 8, (1, 3, 4, 4)))


def _conv2d_reflect(T, log):
    m = mk(T, "Conv2d", 2, 2, 3, padding=2, padding_mode="reflect")
    return fb(T, m, X(T, 9, (1, 2, 5, 6)))


def _conv2d_replicate(T, log):
    m = mk(T, "Conv2d", 2, 2, 3, padding=(1, 2), padding_mode="replicate", stride=2)
    return fb(T, m, X(T, 10, (1, 2, 5, 6)))


def _conv2d_circular(T, log):
    m = mk(T, "Conv2d", 2, 2, 3, padding=1, padding_mode="circular")
    return fb(T, m, X(T, 11, (2, 2, 4, 5)))


def _conv1d_circular_same(T, log):
    m = mk(T, "Conv1d", 1, 2, 4, padding="same", padding_mode="circular")
    return fb(T, m, X(T, 12, (1, 1, 7)))


@case
def conv_padding_modes(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (_conv2d_reflect, _conv2d_replicate, _conv2d_circular, _conv1d_circular_same)
    ]


def _conv3d_basic(T, log):
    m = mk(T, "Conv3d", 2, 2, (2, 3, 2), stride=(1, 2, 1), padding=(0, 1, 1))
    return fb(T, m, X(T, 13, (1, 2, 3, 5, 4)))


def _conv3d_groups_dil(T, log):
    m = mk(T, "Conv3d", 2, 4, 2, groups=2, dilation=2, bias=False)
    return fb(T, m, X(T, 14, (1, 2, 4, 4, 5)))


@case
def conv3d(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_conv3d_basic, _conv3d_groups_dil)]


@case
def convT1d_stride_outpad(T, log):
    m = mk(T, "ConvTranspose1d", 2, 3, 3, stride=2, output_padding=1, padding=1)
    return fb(T, m, X(T, 16, (2, 2, 5)))


@case
def convT2d_groups_dil(T, log):
    m = mk(T, "ConvTranspose2d", 4, 2, 3, stride=2, groups=2, dilation=2, output_padding=1)
    return fb(T, m, X(T, 17, (1, 4, 3, 4)))


@case
def convT2d_nobias_tuple(T, log):
    m = mk(T, "ConvTranspose2d", 2, 2, (2, 3), stride=(2, 1), padding=(1, 0), bias=False)
    return fb(T, m, X(T, 18, (1, 2, 3, 3)))


def _convT2d_output_size(T, log):
    m = mk(T, "ConvTranspose2d", 1, 1, 3, stride=2)
    x = X(T, 19, (1, 1, 3, 3))
    return m(x, output_size=[8, 8]).shape, m(x, output_size=(1, 1, 7, 7)).shape


def _convT2d_output_size_bad(T, log):
    m = mk(T, "ConvTranspose2d", 1, 1, 3, stride=2)
    return m(X(T, 19, (1, 1, 3, 3)), output_size=[10, 10])


@case
def convT2d_output_size_arg(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_convT2d_output_size, _convT2d_output_size_bad)]


def _convT3d_basic(T, log):
    m = mk(T, "ConvTranspose3d", 2, 1, 2, stride=(1, 2, 2), padding=(0, 1, 0))
    return fb(T, m, X(T, 20, (1, 2, 2, 3, 3)))


@case
def convT_1d_3d(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_convT1d_unbatched, _convT3d_basic)]


def _convT1d_unbatched(T, log):
    return fb(T, mk(T, "ConvTranspose1d", 2, 1, 2), X(T, 21, (2, 3)))


@case
def f_conv2d_functional(T, log):
    F = T.nn.functional
    x, w = X(T, 22, (1, 2, 5, 5)), X(T, 23, (4, 1, 3, 3))
    b = X(T, 24, (4,))
    out = F.conv2d(x, w, b, stride=2, padding=1, groups=2)
    return out, T.autograd.grad(lossof(T, out), (x, w, b))


@case
def f_conv1d_same_string(T, log):
    F = T.nn.functional
    x, w = X(T, 25, (1, 1, 6)), X(T, 26, (1, 1, 3))
    return F.conv1d(x, w, padding="same", dilation=2), F.conv1d(x, w, padding="valid")


@case
def f_conv_transpose2d(T, log):
    F = T.nn.functional
    x, w = X(T, 27, (1, 2, 3, 3)), X(T, 28, (2, 3, 2, 2))
    out = F.conv_transpose2d(x, w, stride=2, output_padding=1)
    return out, T.autograd.grad(lossof(T, out), (x, w))


def _conv_err_channels(T, log):
    return mk(T, "Conv2d", 3, 2, 3)(X(T, 0, (1, 2, 5, 5)))


def _conv_err_inputs(T, log):
    F = T.nn.functional
    x, w = X(T, 0, (1, 1, 3, 3)), X(T, 1, (1, 1, 2, 2))
    return [
        E(lambda: mk(T, "Conv2d", 3, 2, 3)(X(T, 0, (5, 5)))),
        E(lambda: mk(T, "Conv2d", 1, 1, 3)(X(T, 0, (1, 1, 2, 2)))),
        E(lambda: mk(T, "Conv1d", 1, 1, 2, dt="float32")(X(T, 0, (1, 1, 4)))),
        E(lambda: mk(T, "Conv2d", 2, 3, 2)(T.ones(1, 2, 3, 3, dtype=T.int64))),
        E(lambda: mk(T, "Conv2d", 1, 1, 3, padding=3, padding_mode="reflect")(x)),
        E(lambda: F.conv2d(x, w, padding="full")),
        E(lambda: F.conv2d(x, w, padding="same", stride=2)),
    ]


@case
def conv_errs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_conv_err_channels, _conv_err_inputs)]


@case
def conv_empty_batch(T, log):
    return fb(T, mk(T, "Conv2d", 2, 3, 2), X(T, 1, (0, 2, 3, 3)))


@case
def conv_weight_grad_only(T, log):
    return fb(T, mk(T, "Conv1d", 2, 2, 2), X(T, 1, (1, 2, 3), rg=False))


@case
def conv_err_same_stride(T, log):
    return mk(T, "Conv2d", 1, 1, 3, stride=2, padding="same")


@case
def conv_err_groups(T, log):
    return [
        E(lambda: mk(T, "Conv2d", 3, 2, 3, groups=2)),
        E(lambda: mk(T, "Conv2d", 4, 3, 3, groups=2)),
        E(lambda: mk(T, "Conv2d", 4, 4, 3, groups=0)),
    ]


@case
def conv_err_padding_mode(T, log):
    return E(lambda: mk(T, "Conv2d", 1, 1, 3, padding_mode="foo")), E(
        lambda: mk(T, "Conv2d", 1, 1, 3, padding="full")
    )


@case
def convT_errs(T, log):
    return (
        E(
            lambda: mk(T, "ConvTranspose2d", 1, 1, 3, stride=2, output_padding=2)(
                X(T, 0, (1, 1, 3, 3))
            )
        ),
        E(lambda: mk(T, "ConvTranspose2d", 1, 1, 3, padding_mode="reflect")),
    )


@case
def conv_reprs(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.Conv1d(2, 3, 3),
            nn.Conv2d(2, 4, (2, 3), stride=2, padding="same" if False else 1, bias=False),
            nn.Conv2d(2, 4, 3, padding="same", dilation=2, groups=2),
            nn.Conv3d(1, 1, 2, padding_mode="circular", padding=1),
            nn.Conv2d(1, 1, 3, padding="valid"),
            nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=1, groups=2, dilation=2),
            nn.ConvTranspose1d(1, 1, 2),
        )
    ]


@case
def conv_attrs(T, log):
    m = T.nn.Conv2d(2, 4, 3, padding="same")
    mt = T.nn.ConvTranspose2d(2, 4, 3, output_padding=0)
    return (
        m.kernel_size,
        m.stride,
        m.padding,
        m.dilation,
        m.groups,
        m.padding_mode,
        m.transposed,
        m.output_padding,
        tuple(m.weight.shape),
        tuple(mt.weight.shape),
        mt.transposed,
        m._reversed_padding_repeated_twice,
    )


# ===================================== pooling =====================================
@case
def maxpool2d_ceil(T, log):
    m = T.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
    return fb(T, m, X(T, 30, (1, 2, 6, 7)))


@case
def maxpool2d_dilation_indices(T, log):
    m = T.nn.MaxPool2d(2, stride=1, dilation=2, return_indices=True)
    return fb(T, m, X(T, 31, (2, 1, 5, 5)))


def _maxpool1d_indices(T, log):
    m = T.nn.MaxPool1d(3, stride=2, return_indices=True, ceil_mode=True)
    return fb(T, m, X(T, 32, (1, 2, 8)))


def _maxpool1d_unbatched(T, log):
    return fb(T, T.nn.MaxPool1d(2), X(T, 33, (3, 6)))


@case
def maxpool1d(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_maxpool1d_indices, _maxpool1d_unbatched)]


@case
def maxpool3d(T, log):
    return fb(T, T.nn.MaxPool3d((1, 2, 2), stride=(1, 2, 1)), X(T, 34, (1, 1, 2, 4, 4)))


@case
def maxpool_ties_grad(T, log):
    x = t(T, [[[[1.0, 1.0, 2.0], [1.0, 1.0, 2.0], [0.0, 0.0, 0.0]]]], rg=True)
    return fb(T, T.nn.MaxPool2d(2, stride=1, return_indices=True), x)


@case
def avgpool2d_count_include_pad(T, log):
    x = X(T, 35, (1, 1, 5, 5))
    return [
        fb(T, T.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=c, ceil_mode=cm), x)
        for c in (True, False)
        for cm in (True, False)
    ]


@case
def avgpool2d_divisor_override(T, log):
    return fb(T, T.nn.AvgPool2d(2, divisor_override=3), X(T, 36, (1, 2, 4, 4)))


def _avgpool1d(T, log):
    m = T.nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
    return fb(T, m, X(T, 37, (2, 1, 6)))


def _avgpool3d(T, log):
    m = T.nn.AvgPool3d(2, stride=1, padding=1, divisor_override=5)
    return fb(T, m, X(T, 38, (1, 1, 2, 3, 3)))


@case
def avgpool1d_3d(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_avgpool1d, _avgpool3d)]


def _adaptive_avg_nondiv(T, log):
    return (
        fb(T, T.nn.AdaptiveAvgPool2d((3, 2)), X(T, 39, (1, 2, 5, 7))),
        fb(T, T.nn.AdaptiveAvgPool1d(4), X(T, 40, (1, 7))),
    )


def _adaptive_avg_none(T, log):
    return T.nn.AdaptiveAvgPool2d((None, 2))(X(T, 41, (1, 1, 3, 5))), T.nn.AdaptiveAvgPool3d(
        (1, None, 2)
    )(X(T, 42, (1, 1, 2, 3, 4)))


@case
def adaptive_max_indices(T, log):
    return (
        fb(T, T.nn.AdaptiveMaxPool2d(3, return_indices=True), X(T, 43, (1, 2, 5, 4))),
        fb(T, T.nn.AdaptiveMaxPool1d(2, return_indices=True), X(T, 44, (1, 1, 5))),
    )


def _adaptive_larger_output(T, log):
    return T.nn.functional.adaptive_avg_pool1d(X(T, 45, (1, 1, 3)), 5)


@case
def adaptive_avg(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (_adaptive_avg_nondiv, _adaptive_avg_none, _adaptive_larger_output)
    ]


@case
def lppool(T, log):
    x = t(T, A(46, (1, 2, 6, 5), 0.1, 2.0), rg=True)
    return (
        fb(T, T.nn.LPPool2d(2, 2), x),
        fb(T, T.nn.LPPool2d(3, (2, 3), stride=1, ceil_mode=True), x),
        fb(T, T.nn.LPPool1d(1.5, 3, stride=2), x[0]),
    )


@case
def fractional_maxpool_shape(T, log):
    T.manual_seed(0)
    x = X(T, 47, (2, 3, 9, 9))
    a = T.nn.FractionalMaxPool2d(2, output_size=(4, 5))(x)
    b, i = T.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)(x)
    c = T.nn.FractionalMaxPool3d(2, output_size=3)(X(T, 48, (1, 1, 6, 6, 6)))
    return a.shape, b.shape, i.shape, i.dtype, c.shape


@case
def max_unpool(T, log):
    x = X(T, 49, (1, 1, 4, 4))
    out, idx = T.nn.MaxPool2d(2, return_indices=True)(x)
    return T.nn.MaxUnpool2d(2)(out, idx), T.nn.functional.max_unpool2d(
        out, idx, 2, output_size=(5, 5)
    )


def _pool_err_pad_too_big(T, log):
    return T.nn.MaxPool2d(2, padding=2)(X(T, 0, (1, 1, 4, 4)))


def _pool_errs(T, log):
    nn = T.nn
    return [
        E(lambda: nn.MaxPool2d(3)(X(T, 0, (1, 1, 2, 2)))),
        E(lambda: nn.AvgPool2d(2, padding=3)(X(T, 0, (1, 1, 4, 4)))),
        E(lambda: nn.MaxPool2d(2)(X(T, 0, (4,)))),
        E(lambda: nn.AdaptiveAvgPool2d(2)(X(T, 0, (4,)))),
        E(lambda: nn.MaxPool2d(0)(X(T, 0, (1, 1, 2, 2)))),
        E(lambda: nn.FractionalMaxPool2d(2)),
        E(lambda: nn.FractionalMaxPool2d(2, output_ratio=1.5)),
        E(lambda: nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)),
    ]


@case
def pool_errs_all(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_pool_err_pad_too_big, _pool_errs)]


@case
def pool_misc(T, log):
    F = T.nn.functional
    x = X(T, 3, (1, 1, 5, 7))
    nan = t(T, [[[1.0, float("nan"), 3.0, 2.0, -1.0, 0.5]]], rg=True)
    return (
        F.max_pool2d(x, (2, 3)),
        F.max_pool2d(x, 2, 1, 1),
        F.avg_pool2d(x, (3, 2), stride=(2, 1)),
        F.max_pool2d_with_indices(x, 2),
        F.adaptive_max_pool2d(x, 2, return_indices=True),
        F.avg_pool2d(T.ones(1, 1, 2, 2, dtype=T.int64), 2),
        F.max_pool2d(T.arange(16).reshape(1, 1, 4, 4), 2),
        fb(T, T.nn.MaxPool1d(2, return_indices=True), nan),
        fb(T, T.nn.AdaptiveMaxPool2d((3, 4)), X(T, 5, (1, 1, 2, 3))),
    )


@case
def pool_ceil_edge(T, log):
    x = X(T, 3, (1, 1, 5))
    return (
        fb(T, T.nn.AvgPool1d(2, stride=2, padding=1, ceil_mode=True), x),
        fb(T, T.nn.MaxPool1d(2, stride=2, padding=1, ceil_mode=True), x),
        fb(
            T,
            T.nn.AvgPool2d(
                3, stride=2, padding=1, ceil_mode=True, count_include_pad=False, divisor_override=2
            ),
            X(T, 1, (2, 5, 6)),
        ),
    )


@case
def fractional_samples(T, log):
    F = T.nn.functional
    s2, s3 = t(T, A(5, (1, 2, 2), 0, 1)), t(T, A(6, (1, 1, 3), 0, 1))
    return (
        fb(
            T,
            lambda v: F.fractional_max_pool2d(
                v, 2, output_size=(3, 4), _random_samples=s2, return_indices=True
            ),
            X(T, 1, (1, 2, 7, 7)),
        ),
        fb(
            T,
            lambda v: F.fractional_max_pool3d(v, 2, output_ratio=0.5, _random_samples=s3),
            X(T, 2, (1, 1, 5, 5, 5)),
        ),
    )


@case
def pool_reprs(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
            nn.MaxPool1d(2, return_indices=True),
            nn.AvgPool2d(2, count_include_pad=False, divisor_override=2),
            nn.AvgPool1d(3),
            nn.AdaptiveAvgPool2d((None, 3)),
            nn.AdaptiveMaxPool1d(2),
            nn.LPPool2d(2, 3),
            nn.FractionalMaxPool2d(2, output_ratio=0.5),
            nn.MaxUnpool2d(2),
        )
    ]


# ================================== normalization ==================================
def _bn_state(m):
    return [m.running_mean, m.running_var, m.num_batches_tracked]


@case
def batchnorm1d_train(T, log):
    m = mk(T, "BatchNorm1d", 3)
    r = fb(T, m, X(T, 50, (4, 3)))
    return r, _bn_state(m)


@case
def batchnorm1d_3d_input(T, log):
    m = mk(T, "BatchNorm1d", 2, momentum=0.3, eps=1e-3)
    r = fb(T, m, X(T, 51, (3, 2, 4)))
    return r, _bn_state(m)


@case
def batchnorm_eval(T, log):
    m = mk(T, "BatchNorm2d", 2)
    m(X(T, 52, (3, 2, 2, 2), rg=False))
    m.eval()
    return fb(T, m, X(T, 53, (2, 2, 3, 3))), _bn_state(m), m.training


@case
def batchnorm_momentum_none(T, log):
    m = mk(T, "BatchNorm1d", 2, momentum=None)
    for s in range(3):
        m(X(T, 54 + s, (4, 2), rg=False))
    return _bn_state(m)


@case
def batchnorm_no_track(T, log):
    m = mk(T, "BatchNorm2d", 2, track_running_stats=False)
    m.eval()
    return fb(T, m, X(T, 57, (2, 2, 2, 3))), m.running_mean, m.num_batches_tracked


@case
def batchnorm_no_affine(T, log):
    m = mk(T, "BatchNorm2d", 2, affine=False)
    return fb(T, m, X(T, 58, (3, 2, 2, 2))), m.weight, list(m.state_dict())


@case
def batchnorm_float32(T, log):
    m = mk(T, "BatchNorm2d", 3, dt="float32")
    return fb(T, m, X(T, 59, (2, 3, 2, 2), "float32")), _bn_state(m)


def _batchnorm_err_one_value(T, log):
    return mk(T, "BatchNorm1d", 3)(X(T, 0, (1, 3)))


def _batchnorm_errs(T, log):
    return (
        E(lambda: mk(T, "BatchNorm1d", 3)(X(T, 0, (2, 3, 2, 2)))),
        E(lambda: mk(T, "BatchNorm2d", 3)(X(T, 0, (2, 3)))),
        E(lambda: mk(T, "BatchNorm1d", 3)(X(T, 0, (2, 4)))),
        E(lambda: mk(T, "BatchNorm1d", 2)(X(T, 1, (1, 2, 1)))),
    )


@case
def batchnorm_errs_all(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_batchnorm_err_one_value, _batchnorm_errs)]


@case
def batchnorm_state_misc(T, log):
    m0 = mk(T, "BatchNorm1d", 2, momentum=0.0)
    m0(X(T, 1, (3, 2)))
    m = mk(T, "BatchNorm1d", 2)
    m(X(T, 1, (3, 2)))
    m(X(T, 2, (3, 2)))
    m.eval()
    m(X(T, 3, (3, 2)))
    st = [x.clone() for x in _bn_state(m)]
    m.reset_running_stats()
    mw = mk(T, "BatchNorm1d", 2)
    mw.weight.requires_grad_(False)
    return _bn_state(m0), st, _bn_state(m), fb(T, mw, X(T, 4, (3, 2)))


@case
def batchnorm_eval_no_track(T, log):
    return fb(T, mk(T, "BatchNorm1d", 2, track_running_stats=False).eval(), X(T, 1, (3, 2)))


@case
def f_batch_norm(T, log):
    F = T.nn.functional
    x = X(T, 60, (3, 2, 2))
    rm, rv = t(T, [0.5, -0.5]), t(T, [1.5, 0.5])
    w, b = X(T, 61, (2,)), X(T, 62, (2,))
    out = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-4)
    out2 = F.batch_norm(x, rm, rv)
    return out, out2, rm, rv, T.autograd.grad(lossof(T, out), (x, w, b))


@case
def layernorm_basic(T, log):
    m = mk(T, "LayerNorm", (2, 3), eps=1e-3)
    with T.no_grad():
        m.weight.copy_(t(T, A(63, (2, 3))))
        m.bias.copy_(t(T, A(64, (2, 3))))
    return fb(T, m, X(T, 65, (4, 2, 3)))


def _layernorm_no_affine(T, log):
    m = mk(T, "LayerNorm", 4, elementwise_affine=False)
    return fb(T, m, X(T, 66, (2, 4))), m.weight, m.bias


def _layernorm_no_bias(T, log):
    m = mk(T, "LayerNorm", 4, bias=False)
    return fb(T, m, X(T, 67, (3, 4))), m.bias, list(m.state_dict())


@case
def layernorm_variants(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_layernorm_no_affine, _layernorm_no_bias)]


def _layernorm_err_shape(T, log):
    return mk(T, "LayerNorm", 4)(X(T, 0, (2, 3)))


@case
def f_layer_norm(T, log):
    F = T.nn.functional
    x, w = X(T, 68, (2, 3, 4)), X(T, 69, (3, 4))
    out = F.layer_norm(x, [3, 4], w, None, 1e-5)
    return out, T.autograd.grad(lossof(T, out), (x, w))


@case
def groupnorm_basic(T, log):
    m = mk(T, "GroupNorm", 2, 4)
    with T.no_grad():
        m.weight.copy_(t(T, A(70, (4,))))
    return fb(T, m, X(T, 71, (2, 4, 3)))


@case
def groupnorm_no_affine_4d(T, log):
    return fb(T, mk(T, "GroupNorm", 3, 6, affine=False, eps=0.1), X(T, 72, (1, 6, 2, 2)))


def _groupnorm_err(T, log):
    return mk(T, "GroupNorm", 3, 4)


@case
def layer_group_norm_errs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_layernorm_err_shape, _groupnorm_err)]


@case
def f_group_norm(T, log):
    F = T.nn.functional
    x, w, b = X(T, 73, (2, 4, 2)), X(T, 74, (4,)), X(T, 75, (4,))
    out = F.group_norm(x, 4, w, b)
    return out, T.autograd.grad(lossof(T, out), (x, w, b))


def _instancenorm1d(T, log):
    return fb(T, mk(T, "InstanceNorm1d", 3), X(T, 76, (2, 3, 5)))


@case
def instancenorm2d_track(T, log):
    m = mk(T, "InstanceNorm2d", 2, affine=True, track_running_stats=True)
    r1 = fb(T, m, X(T, 77, (2, 2, 3, 3)))
    st = [m.running_mean.clone(), m.running_var.clone(), m.num_batches_tracked.clone()]
    m.eval()
    return r1, st, fb(T, m, X(T, 78, (1, 2, 3, 3)))


def _instancenorm_unbatched(T, log):
    return fb(T, mk(T, "InstanceNorm1d", 2, affine=True), X(T, 79, (2, 4)))


@case
def instancenorm1d_variants(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_instancenorm1d, _instancenorm_unbatched)]


@case
def instancenorm_err(T, log):
    return mk(T, "InstanceNorm2d", 2)(X(T, 0, (2, 2)))


@case
def f_instance_norm(T, log):
    F = T.nn.functional
    x = X(T, 80, (2, 3, 4))
    rm, rv = t(T, [0.0, 1.0, 2.0]), t(T, [1.0, 2.0, 3.0])
    out = F.instance_norm(x, rm, rv, use_input_stats=True, momentum=0.5)
    return out, rm, rv, T.autograd.grad(lossof(T, out), x)


@case
def local_response_norm(T, log):
    return (
        fb(T, T.nn.LocalResponseNorm(3), X(T, 81, (2, 5, 3, 3))),
        fb(T, T.nn.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0), X(T, 82, (1, 4, 6))),
    )


@case
def rmsnorm(T, log):
    m = mk(T, "RMSNorm", [2, 3])
    with T.no_grad():
        m.weight.copy_(t(T, A(83, (2, 3))))
    return (
        fb(T, m, X(T, 84, (4, 2, 3))),
        fb(T, mk(T, "RMSNorm", 3, eps=1e-2, elementwise_affine=False), X(T, 85, (2, 3))),
    )


@case
def f_rms_norm(T, log):
    F = T.nn.functional
    x, w = X(T, 86, (2, 5)), X(T, 87, (5,))
    out = F.rms_norm(x, [5], w), F.rms_norm(x, (5,), eps=0.5)
    return out, T.autograd.grad(lossof(T, out), (x, w))


@case
def norm_reprs(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.BatchNorm1d(3),
            nn.BatchNorm2d(2, momentum=None, affine=False, track_running_stats=False),
            nn.LayerNorm((2, 3), elementwise_affine=False),
            nn.LayerNorm(4, bias=False, eps=1e-3),
            nn.GroupNorm(2, 4, affine=False),
            nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
            nn.LocalResponseNorm(2),
            nn.RMSNorm(3),
            nn.RMSNorm([2, 3], eps=1e-4, elementwise_affine=False),
        )
    ]


# ==================================== embeddings ====================================
@case
def embedding_basic(T, log):
    m = mk(T, "Embedding", 5, 3)
    return fb(T, m, T.tensor([[0, 4, 2], [2, 2, 1]]))


def _embedding_padding_idx(T, log):
    m = mk(T, "Embedding", 5, 2, padding_idx=-2)
    return fb(T, m, T.tensor([3, 1, 3, 0])), m.padding_idx


def _embedding_padding_idx_init(T, log):
    T.manual_seed(0)
    m = T.nn.Embedding(4, 2, padding_idx=1)
    return m.weight[1]


@case
def embedding_padding(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_embedding_padding_idx, _embedding_padding_idx_init)]


def _embedding_max_norm(T, log):
    m = mk(T, "Embedding", 4, 3, max_norm=1.0)
    out = m(T.tensor([0, 2, 2]))
    return out, m.weight


def _embedding_max_norm_type(T, log):
    m = mk(T, "Embedding", 4, 3, max_norm=0.5, norm_type=1.0)
    return fb(T, m, T.tensor([1, 3])), m.weight


@case
def embedding_max_norms(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_embedding_max_norm, _embedding_max_norm_type)]


@case
def embedding_scale_grad(T, log):
    m = mk(T, "Embedding", 4, 2, scale_grad_by_freq=True)
    return fb(T, m, T.tensor([[1, 1, 2], [1, 0, 0]]))


@case
def embedding_from_pretrained(T, log):
    w = t(T, A(88, (3, 2)))
    a = T.nn.Embedding.from_pretrained(w)
    b = T.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    return (
        a.weight.requires_grad,
        b.weight.requires_grad,
        fb(T, b, T.tensor([0, 2])),
        a(T.tensor([1])),
        repr(a),
        repr(b),
    )


def _embedding_err_index(T, log):
    return mk(T, "Embedding", 3, 2)(T.tensor([3]))


def _embedding_errs(T, log):
    return (
        E(lambda: mk(T, "Embedding", 3, 2)(t(T, [1.0]))),
        E(lambda: mk(T, "Embedding", 3, 2, padding_idx=3)),
        E(lambda: mk(T, "Embedding", 3, 2)(T.tensor([-1]))),
    )


@case
def embedding_errs_all(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_embedding_err_index, _embedding_errs)]


@case
def embedding_0d_int32(T, log):
    m = mk(T, "Embedding", 3, 2)
    return fb(T, m, T.tensor(2)), fb(T, m, T.tensor([1, 2], dtype=T.int32))


@case
def embedding_max_norm_dup(T, log):
    m = mk(T, "Embedding", 3, 4, max_norm=0.3)
    return fb(T, m, T.tensor([[1, 1], [2, 1]])), m.weight


@case
def embedding_sparse(T, log):
    m = mk(T, "Embedding", 4, 2, sparse=True)
    m(T.tensor([1, 1, 3])).sum().backward()
    return m.weight.grad.is_sparse, m.weight.grad.to_dense(), repr(m)


@case
def f_embedding(T, log):
    F = T.nn.functional
    w = X(T, 89, (5, 2))
    out = F.embedding(T.tensor([[4, 0], [0, 1]]), w, padding_idx=0)
    return out, T.autograd.grad(lossof(T, out), w)


@case
def embedding_reprs(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.Embedding(5, 3),
            nn.Embedding(5, 3, padding_idx=1, max_norm=2.0, scale_grad_by_freq=True),
            nn.EmbeddingBag(4, 2),
            nn.EmbeddingBag(4, 2, mode="max", padding_idx=0),
        )
    ]


@case
def embeddingbag_modes(T, log):
    idx = T.tensor([0, 2, 1, 3, 3, 0])
    off = T.tensor([0, 2, 2, 5])
    return [fb(T, mk(T, "EmbeddingBag", 4, 3, mode=md), idx, off) for md in ("sum", "mean", "max")]


@case
def embeddingbag_2d(T, log):
    return fb(T, mk(T, "EmbeddingBag", 5, 2), T.tensor([[0, 1], [4, 4], [2, 3]]))


def _embeddingbag_psw(T, log):
    m = mk(T, "EmbeddingBag", 4, 2, mode="sum")
    psw = t(T, [0.5, 2.0, -1.0], rg=True)
    return fb(T, m, T.tensor([1, 2, 3]), T.tensor([0, 1]), per_sample_weights=psw)


def _embeddingbag_last_offset(T, log):
    m = mk(T, "EmbeddingBag", 4, 2, mode="mean", include_last_offset=True)
    return fb(T, m, T.tensor([1, 2, 3, 0]), T.tensor([0, 1, 4]))


def _embeddingbag_padding_idx(T, log):
    m = mk(T, "EmbeddingBag", 4, 2, mode="mean", padding_idx=2)
    return fb(T, m, T.tensor([2, 1, 2, 2, 3]), T.tensor([0, 3]))


@case
def embeddingbag_options(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (_embeddingbag_psw, _embeddingbag_last_offset, _embeddingbag_padding_idx)
    ]


@case
def embeddingbag_from_pretrained(T, log):
    m = T.nn.EmbeddingBag.from_pretrained(t(T, A(90, (3, 2))), mode="max")
    return m(T.tensor([[0, 1], [2, 2]])), m.weight.requires_grad


@case
def embeddingbag_errs(T, log):
    m = mk(T, "EmbeddingBag", 4, 2, mode="mean")
    return (
        E(lambda: m(T.tensor([1, 2]), T.tensor([0]), per_sample_weights=t(T, [1.0, 2.0]))),
        E(lambda: m(T.tensor([[1, 2]]), T.tensor([0]))),
        E(lambda: m(T.tensor([1, 2]), T.tensor([1]))),
    )


@case
def embeddingbag_empty_bags(T, log):
    return [
        fb(T, mk(T, "EmbeddingBag", 3, 2, mode=md), T.tensor([1, 2]), T.tensor([0, 0, 2]))
        for md in ("sum", "mean", "max")
    ]


@case
def f_embedding_bag(T, log):
    F = T.nn.functional
    w = X(T, 91, (4, 3))
    out = F.embedding_bag(T.tensor([0, 3, 3, 1]), w, T.tensor([0, 1]), mode="sum")
    return out, T.autograd.grad(lossof(T, out), w)


# ===================================== linear =====================================
@case
def linear_basic(T, log):
    return fb(T, mk(T, "Linear", 3, 2), X(T, 92, (4, 3)))


def _linear_nobias_1d_3d(T, log):
    m = mk(T, "Linear", 3, 2, bias=False)
    return fb(T, m, X(T, 93, (3,))), fb(T, m, X(T, 94, (2, 2, 3))), m.bias


def _linear_empty_batch(T, log):
    return fb(T, mk(T, "Linear", 3, 2), X(T, 95, (0, 3)))


def _linear_zero_features(T, log):
    m = mk(T, "Linear", 0, 2)
    return m(X(T, 96, (2, 0), rg=False)), m.weight.shape


@case
def linear_shapes(T, log):
    return [
        E(lambda f=f: f(T, log))
        for f in (_linear_nobias_1d_3d, _linear_empty_batch, _linear_zero_features)
    ]


@case
def linear_float32(T, log):
    return fb(T, mk(T, "Linear", 4, 3, dt="float32"), X(T, 97, (2, 4), "float32"))


def _linear_err_shape(T, log):
    return mk(T, "Linear", 3, 2)(X(T, 0, (4, 5)))


def _linear_err_dtype(T, log):
    return (
        E(lambda: mk(T, "Linear", 3, 2, dt="float32")(X(T, 0, (4, 3)))),
        E(lambda: mk(T, "Linear", 2, 2)(T.ones(1, 2, dtype=T.int64))),
    )


@case
def linear_errs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_linear_err_shape, _linear_err_dtype)]


@case
def f_linear(T, log):
    F = T.nn.functional
    x, w, b = X(T, 98, (2, 3)), X(T, 99, (4, 3)), X(T, 100, (4,))
    out = F.linear(x, w, b), F.linear(x, w)
    return out, T.autograd.grad(lossof(T, out), (x, w, b))


@case
def bilinear(T, log):
    m = mk(T, "Bilinear", 2, 3, 4)
    return fb(T, m, X(T, 101, (5, 2)), X(T, 102, (5, 3))), repr(m)


@case
def bilinear_nobias_err(T, log):
    m = mk(T, "Bilinear", 2, 3, 4, bias=False)
    return fb(T, m, X(T, 103, (2, 2)), X(T, 104, (2, 3))), E(
        lambda: m(X(T, 0, (2, 3)), X(T, 0, (2, 3)))
    )


@case
def lazy_linear(T, log):
    T.manual_seed(0)
    m = T.nn.LazyLinear(2, dtype=T.float64)
    r0 = repr(m), m.in_features, type(m).__name__
    m(X(T, 105, (1, 3), rg=False))
    m.load_state_dict({"weight": t(T, A(106, (2, 3))), "bias": t(T, A(107, (2,)))})
    return r0, type(m).__name__, m.in_features, repr(m), fb(T, m, X(T, 108, (2, 3)))


def _identity(T, log):
    m = T.nn.Identity(3, foo=1)
    x = X(T, 109, (2,))
    return m(x) is x, repr(m)


def _linear_reprs(T, log):
    nn = T.nn
    return [repr(nn.Linear(3, 2)), repr(nn.Linear(3, 2, bias=False)), repr(nn.Bilinear(1, 2, 3))]


@case
def identity_linear_reprs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_identity, _linear_reprs)]


# ===================================== dropout =====================================
def _dropout_eval(T, log):
    x = X(T, 110, (2, 3, 4, 4))
    out = []
    for cls in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
        m = getattr(T.nn, cls)(0.5).eval()
        out.append(m(x[0] if cls == "Dropout1d" else x))
    return out, T.nn.functional.dropout(x, 0.9, training=False)


def _dropout_p0_p1_train(T, log):
    x = X(T, 111, (3, 4))
    a = T.nn.Dropout(0.0)(x)
    b = T.nn.Dropout(1.0)(x)
    return a, b, T.autograd.grad(lossof(T, (a, b)), x)


@case
def dropout_eval_p0_p1(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_dropout_eval, _dropout_p0_p1_train)]


@case
def dropout_inplace_errs(T, log):
    x = X(T, 112, (3,), rg=False)
    m = T.nn.Dropout(0.3, inplace=True).eval()
    return (
        m(x) is x,
        repr(m),
        repr(T.nn.Dropout2d()),
        repr(T.nn.AlphaDropout(0.2)),
        E(lambda: T.nn.Dropout(1.5)),
        E(lambda: T.nn.functional.dropout(X(T, 0, (2,)), -0.1)),
    )


# ================================ flatten / unflatten ================================
@case
def flatten_unflatten(T, log):
    x = X(T, 113, (2, 3, 4, 5))
    return (
        T.nn.Flatten()(x).shape,
        T.nn.Flatten(0, 2)(x).shape,
        T.nn.Flatten(-2)(x).shape,
        T.nn.Unflatten(1, (3, 1))(x).shape,
        T.nn.Unflatten(-1, [1, -1])(x).shape,
        repr(T.nn.Flatten()),
        repr(T.nn.Unflatten(1, (2, 2))),
        fb(T, T.nn.Flatten(), x[0]),
        E(lambda: T.nn.Unflatten(1, (2, 2))(X(T, 0, (2, 3)))),
        E(lambda: T.nn.Flatten(0)(t(T, 3.0)).shape),
        T.nn.Flatten()(X(T, 0, (2,))).shape,
    )


# ============================== upsample / interpolate ==============================
def _interp_nearest(T, log):
    F = T.nn.functional
    x = X(T, 114, (1, 2, 3, 4))
    return (
        fb(T, lambda v: F.interpolate(v, size=(5, 7)), x),
        fb(T, lambda v: F.interpolate(v, scale_factor=1.7, mode="nearest"), x),
    )


def _interp_nearest_exact(T, log):
    F = T.nn.functional
    x = X(T, 115, (1, 1, 5))
    return (
        fb(T, lambda v: F.interpolate(v, size=3, mode="nearest-exact"), x),
        fb(T, lambda v: F.interpolate(v, scale_factor=2.5, mode="nearest-exact"), x),
    )


@case
def interp_nearest_modes(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_interp_nearest, _interp_nearest_exact)]


def _interp_linear_1d(T, log):
    F = T.nn.functional
    x = X(T, 116, (2, 1, 4))
    return [
        fb(T, lambda v, ac=ac: F.interpolate(v, size=7, mode="linear", align_corners=ac), x)
        for ac in (False, True)
    ]


@case
def interp_bilinear(T, log):
    F = T.nn.functional
    x = X(T, 117, (1, 2, 3, 4))
    return [
        fb(T, lambda v, ac=ac: F.interpolate(v, size=(5, 3), mode="bilinear", align_corners=ac), x)
        for ac in (False, True)
    ]


@case
def interp_bicubic(T, log):
    F = T.nn.functional
    x = X(T, 118, (1, 1, 4, 4))
    return [
        fb(
            T,
            lambda v, ac=ac: F.interpolate(v, scale_factor=1.5, mode="bicubic", align_corners=ac),
            x,
        )
        for ac in (False, True)
    ]


def _interp_area(T, log):
    F = T.nn.functional
    x = X(T, 119, (1, 2, 6, 5))
    return fb(T, lambda v: F.interpolate(v, size=(4, 3), mode="area"), x)


def _interp_trilinear(T, log):
    F = T.nn.functional
    x = X(T, 120, (1, 1, 2, 3, 3))
    return fb(T, lambda v: F.interpolate(v, scale_factor=(2, 1.5, 1), mode="trilinear"), x)


@case
def interp_linear_trilinear(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_interp_linear_1d, _interp_trilinear)]


@case
def interp_recompute_scale(T, log):
    F = T.nn.functional
    x = X(T, 121, (1, 1, 4, 5))
    return [
        fb(
            T,
            lambda v, rc=rc, m=m, sf=sf: F.interpolate(
                v, scale_factor=sf, mode=m, recompute_scale_factor=rc
            ),
            x,
        )
        for rc, sf in ((False, 1.7), (True, 1.3), (True, 0.6))
        for m in ("nearest", "bilinear", "bicubic")
    ]


@case
def interp_downsample(T, log):
    F = T.nn.functional
    x = X(T, 122, (1, 1, 7, 7))
    return [
        F.interpolate(x, scale_factor=0.4, mode=m)
        for m in ("nearest", "nearest-exact", "bilinear", "bicubic", "area")
    ]


def _interp_float32(T, log):
    F = T.nn.functional
    x = X(T, 123, (1, 2, 3, 3), "float32")
    return fb(T, lambda v: F.interpolate(v, size=5, mode="bilinear"), x)


@case
def interp_area_float32(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_interp_area, _interp_float32)]


@case
def upsample_modules(T, log):
    nn = T.nn
    x = X(T, 124, (1, 1, 2, 3))
    ms = [
        nn.Upsample(scale_factor=2),
        nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True),
        nn.UpsamplingNearest2d(scale_factor=2),
        nn.UpsamplingBilinear2d(size=(4, 5)),
    ]
    return [fb(T, m, x) for m in ms], [repr(m) for m in ms]


@case
def interp_err_both(T, log):
    F = T.nn.functional
    x = X(T, 0, (1, 1, 3, 3))
    return [
        E(lambda: F.interpolate(x, size=4, scale_factor=2)),
        E(lambda: F.interpolate(x)),
        E(lambda: F.interpolate(x, size=4, mode="nearest", align_corners=True)),
        E(lambda: F.interpolate(x, size=4, mode="linear")),
        E(lambda: F.interpolate(x, size=4, mode="foo")),
        E(lambda: F.interpolate(x, size=(4, 4, 4))),
        E(lambda: T.nn.Upsample(scale_factor=2, align_corners=False)(x)),
    ]


# ================================ shuffles / fold =================================
def _pixel_shuffle(T, log):
    x = X(T, 125, (2, 8, 2, 3))
    ps = T.nn.PixelShuffle(2)
    pu = T.nn.PixelUnshuffle(2)
    y = ps(x)
    return fb(T, ps, x), pu(y), repr(ps), repr(pu), ps(x[0]).shape


def _pixel_shuffle_err(T, log):
    return (
        E(lambda: T.nn.PixelShuffle(2)(X(T, 0, (1, 3, 2, 2)))),
        E(lambda: T.nn.PixelUnshuffle(2)(X(T, 0, (1, 1, 3, 2)))),
        E(lambda: T.nn.PixelShuffle(2)(X(T, 0, (4, 2)))),
    )


@case
def pixel_shuffles(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_pixel_shuffle, _pixel_shuffle_err)]


@case
def channel_shuffle(T, log):
    x = X(T, 126, (1, 6, 2))
    m = T.nn.ChannelShuffle(3)
    return (
        m(x),
        T.nn.functional.channel_shuffle(x, 2),
        repr(m),
        E(lambda: T.nn.ChannelShuffle(4)(X(T, 0, (1, 6, 2)))),
    )


def _unfold_fold(T, log):
    x = X(T, 127, (2, 2, 5, 6))
    u = T.nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    cols = u(x)
    f = T.nn.Fold((5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    return fb(T, u, x), fb(T, f, cols.detach().requires_grad_()), repr(u), repr(f)


def _unfold_unbatched(T, log):
    return fb(T, T.nn.Unfold(2), X(T, 128, (1, 3, 3)))


@case
def unfold_variants(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_unfold_fold, _unfold_unbatched)]


@case
def fold_err(T, log):
    return (
        E(lambda: T.nn.Fold((4, 4), 2)(X(T, 0, (1, 3, 9)))),
        E(lambda: T.nn.Fold((4, 4), 2)(X(T, 0, (1, 4, 8)))),
        E(lambda: T.nn.Unfold(4)(X(T, 0, (1, 1, 3, 3)))),
    )


# ===================================== padding =====================================
@case
def pad_constant(T, log):
    F = T.nn.functional
    x = X(T, 129, (2, 3, 4))
    return (
        fb(T, lambda v: F.pad(v, (1, 2), value=3.5), x),
        fb(T, lambda v: F.pad(v, (0, 1, 2, 0, 1, 1)), x),
        fb(T, lambda v: F.pad(v, (-1, 1, 0, -2)), x),
    )


@case
def pad_modes(T, log):
    F = T.nn.functional
    x = X(T, 130, (1, 2, 4, 5))
    return [
        fb(T, lambda v, m=m: F.pad(v, (2, 1, 1, 3), mode=m), x)
        for m in ("reflect", "replicate", "circular")
    ]


@case
def pad_modes_1d_3d(T, log):
    F = T.nn.functional
    x1, x3 = X(T, 131, (1, 2, 4)), X(T, 132, (1, 1, 2, 3, 3))
    return [fb(T, lambda v, m=m: F.pad(v, (3, 1), mode=m), x1) for m in ("reflect", "circular")], [
        fb(T, lambda v, m=m: F.pad(v, (1, 1, 2, 0, 1, 0), mode=m), x3)
        for m in ("replicate", "circular")
    ]


@case
def pad_modules(T, log):
    nn = T.nn
    x = X(T, 133, (1, 1, 3, 3))
    ms = [
        nn.ZeroPad2d((1, 0, 2, 1)),
        nn.ConstantPad2d(1, -1.0),
        nn.ReflectionPad2d(2),
        nn.ReplicationPad2d((0, 2, 1, 0)),
        nn.CircularPad2d(1),
    ]
    m1 = [nn.ConstantPad1d((2, 1), 0.5), nn.ReflectionPad1d(1), nn.ZeroPad1d(2)]
    return [fb(T, m, x) for m in ms] + [m(x[0]) for m in m1], [repr(m) for m in ms + m1]


@case
def pad_err(T, log):
    F = T.nn.functional
    x = X(T, 0, (1, 1, 3))
    return [
        E(lambda: F.pad(x, (3, 0), mode="reflect")),
        E(lambda: F.pad(x, (1,))),
        E(lambda: F.pad(x, (1, 1), mode="foo")),
        E(lambda: F.pad(x, (4, 0), mode="circular")),
        E(lambda: F.pad(x, (1, 1, 1, 1, 1, 1, 1, 1))),
    ]


# ================================ recurrent layers =================================
@case
def rnn_tanh_2layer(T, log):
    m = mk(T, "RNN", 3, 4, num_layers=2)
    return fb(T, m, X(T, 140, (5, 2, 3)))


@case
def rnn_relu_bidir_bf_h0(T, log):
    m = mk(T, "RNN", 2, 3, nonlinearity="relu", bidirectional=True, batch_first=True)
    return fb(T, m, X(T, 141, (2, 4, 2)), X(T, 142, (2, 2, 3)))


def _rnn_unbatched(T, log):
    return fb(T, mk(T, "RNN", 2, 3, bias=False), X(T, 143, (4, 2)))


@case
def lstm_basic(T, log):
    m = mk(T, "LSTM", 3, 4, num_layers=2, bidirectional=True)
    return fb(T, m, X(T, 144, (3, 2, 3)))


@case
def lstm_h0c0_batch_first(T, log):
    m = mk(T, "LSTM", 2, 3, batch_first=True)
    h = (X(T, 145, (1, 2, 3)), X(T, 146, (1, 2, 3)))
    return fb(T, m, X(T, 147, (2, 5, 2)), h)


def _lstm_proj(T, log):
    m = mk(T, "LSTM", 3, 5, num_layers=2, proj_size=2, bidirectional=True)
    return fb(T, m, X(T, 148, (4, 2, 3))), [n for n, _ in m.named_parameters()]


def _lstm_proj_h0(T, log):
    m = mk(T, "LSTM", 3, 4, proj_size=2)
    return fb(T, m, X(T, 149, (2, 1, 3)), (X(T, 150, (1, 1, 2)), X(T, 151, (1, 1, 4))))


@case
def lstm_projection(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_lstm_proj, _lstm_proj_h0)]


@case
def gru_basic(T, log):
    m = mk(T, "GRU", 3, 2, num_layers=2, batch_first=True)
    return fb(T, m, X(T, 152, (2, 3, 3)), X(T, 153, (2, 2, 2)))


def _gru_bidir_unbatched(T, log):
    return fb(T, mk(T, "GRU", 2, 3, bidirectional=True), X(T, 154, (3, 2)))


@case
def rnn_gru_unbatched(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_rnn_unbatched, _gru_bidir_unbatched)]


@case
def rnn_float32(T, log):
    return fb(T, mk(T, "LSTM", 2, 3, dt="float32"), X(T, 155, (3, 1, 2), "float32"))


def _packed(T, enforce_sorted=True, batch_first=False):
    lens = [4, 2, 1] if enforce_sorted else [2, 4, 1]
    x = X(T, 156, (3, 4, 2) if batch_first else (4, 3, 2))
    U = T.nn.utils.rnn
    return x, U.pack_padded_sequence(
        x, T.tensor(lens), batch_first=batch_first, enforce_sorted=enforce_sorted
    )


@case
def pack_padded_roundtrip(T, log):
    U = T.nn.utils.rnn
    x, p = _packed(T, enforce_sorted=False, batch_first=True)
    out, lens = U.pad_packed_sequence(p, batch_first=True, total_length=5, padding_value=-1.0)
    return p, out, lens, T.autograd.grad(lossof(T, out), x)


@case
def packed_gru_sorted(T, log):
    U = T.nn.utils.rnn
    x, p = _packed(T)
    m = mk(T, "GRU", 2, 3)
    out, h = m(p)
    pad, lens = U.pad_packed_sequence(out)
    return type(out).__name__, pad, lens, h, T.autograd.grad(lossof(T, (pad, h)), x)


@case
def packed_lstm_unsorted(T, log):
    U = T.nn.utils.rnn
    x, p = _packed(T, enforce_sorted=False, batch_first=True)
    m = mk(T, "LSTM", 2, 3, num_layers=2, bidirectional=True, batch_first=True)
    out, (h, c) = m(p)
    pad, lens = U.pad_packed_sequence(out, batch_first=True)
    params = list(m.parameters())
    return pad, lens, h, c, T.autograd.grad(lossof(T, (pad, h, c)), [x] + params)


@case
def packed_rnn_h0(T, log):
    U = T.nn.utils.rnn
    x, p = _packed(T, enforce_sorted=False)
    m = mk(T, "RNN", 2, 3)
    h0 = X(T, 157, (1, 3, 3))
    out, h = m(p, h0)
    return U.pad_packed_sequence(out), h, T.autograd.grad(lossof(T, h), (x, h0))


@case
def pack_sequence_utils(T, log):
    U = T.nn.utils.rnn
    seqs = [X(T, 158, (3, 2)), X(T, 159, (1, 2)), X(T, 160, (2, 2))]
    p = U.pack_sequence(seqs, enforce_sorted=False)
    return (
        p,
        U.pad_sequence(seqs),
        U.pad_sequence(seqs, batch_first=True, padding_value=9.0),
        (U.unpack_sequence(p)),
    )


@case
def pack_errs(T, log):
    U = T.nn.utils.rnn
    return (
        E(lambda: U.pack_padded_sequence(X(T, 0, (3, 2, 1)), [1, 3])),
        E(lambda: U.pack_padded_sequence(X(T, 0, (3, 2, 1)), [3, 0])),
        E(lambda: U.pad_packed_sequence(_packed(T)[1], total_length=2)),
    )


@case
def packed_attrs(T, log):
    p = _packed(T, enforce_sorted=False)[1]
    p2 = _packed(T)[1]
    return p.sorted_indices, p.unsorted_indices, p.batch_sizes, p2.sorted_indices, p.is_cuda


@case
def rnn_cells(T, log):
    x = X(T, 161, (2, 3))
    return (
        fb(T, mk(T, "RNNCell", 3, 2, nonlinearity="relu"), x, X(T, 162, (2, 2))),
        fb(T, mk(T, "LSTMCell", 3, 2), x, (X(T, 163, (2, 2)), X(T, 164, (2, 2)))),
        fb(T, mk(T, "GRUCell", 3, 2, bias=False), x),
        fb(T, mk(T, "GRUCell", 3, 2), X(T, 165, (3,))),
    )


def _rnn_err_input_size(T, log):
    return mk(T, "LSTM", 3, 4)(X(T, 0, (2, 1, 2)))


def _rnn_errs(T, log):
    lp = mk(T, "LSTM", 3, 4, proj_size=2)
    return (
        E(lambda: mk(T, "GRU", 3, 4)(X(T, 0, (2, 1, 3)), X(T, 0, (2, 1, 4)))),
        E(lambda: lp(X(T, 0, (2, 1, 3)), (X(T, 0, (1, 1, 4)), X(T, 0, (1, 1, 4))))),
        E(lambda: mk(T, "RNN", 3, 4)(X(T, 0, (2, 1, 1, 3)))),
        E(lambda: mk(T, "GRU", 2, 3)(X(T, 0, (3, 2)), X(T, 1, (1, 1, 3)))),
        E(lambda: mk(T, "LSTM", 2, 2)(X(T, 0, (3, 1, 2)), X(T, 0, (1, 1, 2)))),
        E(lambda: mk(T, "LSTMCell", 3, 2)(X(T, 1, (2, 4)))),
        E(lambda: mk(T, "GRUCell", 3, 2)(X(T, 1, (2, 3)), X(T, 1, (3, 2)))),
        E(lambda: mk(T, "RNNCell", 3, 2)(X(T, 1, (1, 2, 3)))),
    )


@case
def rnn_errs_all(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_rnn_err_input_size, _rnn_errs)]


@case
def gru_unbatched_h0(T, log):
    return fb(T, mk(T, "GRU", 2, 3), X(T, 0, (3, 2)), X(T, 1, (1, 3)))


@case
def rnn_eval_dropout(T, log):
    m = mk(T, "LSTM", 2, 3, num_layers=2, dropout=0.5).eval()
    return fb(T, m, X(T, 1, (3, 1, 2)))


@case
def gru_float32_bigger(T, log):
    return fb(T, mk(T, "GRU", 8, 16, num_layers=2, dt="float32"), X(T, 1, (6, 3, 8), "float32"))


def _rnn_dropout_warning(T, log):
    return repr(mk(T, "GRU", 2, 2, dropout=0.5))


def _rnn_ctor_errs(T, log):
    return [
        E(lambda: mk(T, "LSTM", 2, 2, proj_size=2)),
        E(lambda: mk(T, "RNN", 2, 2, nonlinearity="gelu")),
        E(lambda: mk(T, "GRU", 2, 2, proj_size=1)),
        E(lambda: mk(T, "RNN", 2, 2, dropout=2.0)),
    ]


@case
def rnn_ctor_checks(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_rnn_dropout_warning, _rnn_ctor_errs)]


@case
def rnn_reprs(T, log):
    nn = T.nn
    return [
        repr(m)
        for m in (
            nn.RNN(2, 3),
            nn.RNN(2, 3, 2, nonlinearity="relu", batch_first=True, bidirectional=True),
            nn.LSTM(2, 3, proj_size=1, bias=False),
            nn.GRU(2, 3, num_layers=2, dropout=0.1),
            nn.LSTMCell(2, 3),
            nn.GRUCell(2, 3, bias=False),
        )
    ]


@case
def rnn_param_names(T, log):
    m = T.nn.GRU(2, 3, num_layers=2, bidirectional=True)
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()], [
        [tuple(p.shape) for p in ps] for ps in m.all_weights
    ]


# ================================ multihead attention ================================
@case
def mha_basic(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    q, k, v = X(T, 170, (3, 2, 4)), X(T, 171, (5, 2, 4)), X(T, 172, (5, 2, 4))
    return fb(T, m, q, k, v)


@case
def mha_batch_first_self(T, log):
    m = mk(T, "MultiheadAttention", 6, 3, batch_first=True)
    x = X(T, 173, (2, 4, 6))
    return fb(T, m, x, x, x)


@case
def mha_key_padding_mask(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, batch_first=True)
    q, kv = X(T, 174, (2, 3, 4)), X(T, 175, (2, 4, 4))
    kpm = T.tensor([[False, False, True, True], [False, True, False, False]])
    return fb(T, m, q, kv, kv, key_padding_mask=kpm)


@case
def mha_attn_mask_bool_float(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 176, (3, 2, 4))
    bm = T.tensor([[False, True, True], [False, False, True], [False, False, False]])
    fm = t(T, A(177, (3, 3)))
    return fb(T, m, x, x, x, attn_mask=bm), fb(T, m, x, x, x, attn_mask=fm)


@case
def mha_attn_mask_3d(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, batch_first=True)
    x = X(T, 178, (2, 3, 4))
    am = t(T, A(179, (4, 3, 3)))
    return fb(T, m, x, x, x, attn_mask=am, average_attn_weights=False)


def _mha_need_weights_false(T, log):
    m = mk(T, "MultiheadAttention", 4, 1)
    x = X(T, 180, (2, 3, 4))
    return fb(T, m, x, x, x, need_weights=False)


@case
def mha_kdim_vdim(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, kdim=3, vdim=5)
    q, k, v = X(T, 181, (2, 1, 4)), X(T, 182, (3, 1, 3)), X(T, 183, (3, 1, 5))
    return fb(T, m, q, k, v), [n for n, _ in m.named_parameters()]


@case
def mha_bias_kv_zero_attn(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, add_bias_kv=True, add_zero_attn=True, bias=False)
    x = X(T, 184, (3, 2, 4))
    return fb(T, m, x, x, x), [n for n, _ in m.named_parameters()]


def _mha_unbatched(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 185, (3, 4))
    return fb(T, m, x, x, x, key_padding_mask=T.tensor([False, False, True]))


@case
def mha_no_weights_unbatched(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_mha_need_weights_false, _mha_unbatched)]


@case
def mha_is_causal(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 186, (3, 1, 4))
    cm = T.nn.Transformer.generate_square_subsequent_mask(3, dtype=T.float64)
    return cm, fb(T, m, x, x, x, attn_mask=cm, is_causal=True)


@case
def mha_eval_nograd(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, batch_first=True).eval()
    x = X(T, 187, (2, 3, 4), rg=False)
    with T.no_grad():
        return m(x, x, x), m(x, x, x, need_weights=False)


def _mha_err_divisible(T, log):
    return mk(T, "MultiheadAttention", 5, 2)


@case
def mha_errs(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 0, (3, 2, 4))
    return (
        E(lambda: m(X(T, 0, (3, 2, 5)), x, x)),
        E(lambda: m(x, x, x, attn_mask=T.zeros(2, 2, dtype=T.bool))),
        E(lambda: m(x, x, x, attn_mask=T.zeros(3, 3, dtype=T.uint8))),
        E(lambda: m(x, x, x, attn_mask=T.zeros(3, 3, 3))),
    )


@case
def mha_mismatched_masks(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 1, (3, 2, 4))
    kpm = t(T, np.zeros((2, 3)))
    return fb(T, m, x, x, x, attn_mask=T.zeros(3, 3, dtype=T.bool), key_padding_mask=kpm)


@case
def mha_all_masked_row(T, log):
    m = mk(T, "MultiheadAttention", 4, 2)
    x = X(T, 1, (3, 2, 4), rg=False)
    return m(x, x, x, key_padding_mask=T.tensor([[True, True, True], [False, False, True]]))


@case
def mha_float32_eval_dropout(T, log):
    m = mk(T, "MultiheadAttention", 16, 4, dropout=0.5, dt="float32").eval()
    x = X(T, 1, (5, 2, 16), "float32")
    return fb(T, m, x, x, x)


def _mha_repr(T, log):
    return repr(T.nn.MultiheadAttention(4, 2)), repr(T.nn.MultiheadAttention(4, 2, kdim=3, vdim=2))


@case
def f_mha_forward(T, log):
    F = T.nn.functional
    x = X(T, 188, (3, 1, 4))
    w, b = X(T, 189, (12, 4)), X(T, 190, (12,))
    ow, ob = X(T, 191, (4, 4)), X(T, 192, (4,))
    out = F.multi_head_attention_forward(
        x, x, x, 4, 2, w, b, None, None, False, 0.0, ow, ob, training=False
    )
    return out, T.autograd.grad(lossof(T, out), (x, w, b, ow))


# ===================================== transformer =====================================
@case
def encoder_layer_basic(T, log):
    m = mk(T, "TransformerEncoderLayer", 4, 2, dim_feedforward=8, dropout=0.0)
    return fb(T, m, X(T, 200, (3, 2, 4)))


@case
def encoder_layer_norm_first_gelu(T, log):
    m = mk(
        T,
        "TransformerEncoderLayer",
        4,
        2,
        dim_feedforward=6,
        dropout=0.0,
        activation="gelu",
        norm_first=True,
        batch_first=True,
    )
    x = X(T, 201, (2, 3, 4))
    kpm = T.tensor([[False, False, True], [False, False, False]])
    return fb(T, m, x, src_key_padding_mask=kpm)


@case
def encoder_layer_mask_causal(T, log):
    m = mk(T, "TransformerEncoderLayer", 4, 1, dim_feedforward=4, dropout=0.0, bias=False)
    x = X(T, 202, (3, 1, 4))
    mask = T.nn.Transformer.generate_square_subsequent_mask(3, dtype=T.float64)
    return fb(T, m, x, src_mask=mask, is_causal=True)


@case
def encoder_layer_eval_fastpath(T, log):
    m = mk(T, "TransformerEncoderLayer", 4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)
    m.eval()
    x = X(T, 203, (2, 3, 4), rg=False)
    with T.no_grad():
        return m(x)


@case
def decoder_layer(T, log):
    m = mk(T, "TransformerDecoderLayer", 4, 2, dim_feedforward=8, dropout=0.0)
    tgt, mem = X(T, 204, (3, 2, 4)), X(T, 205, (5, 2, 4))
    mask = T.nn.Transformer.generate_square_subsequent_mask(3, dtype=T.float64)
    return fb(T, m, tgt, mem, tgt_mask=mask)


@case
def decoder_layer_norm_first_gelu(T, log):
    m = mk(
        T,
        "TransformerDecoderLayer",
        4,
        2,
        dim_feedforward=8,
        dropout=0.0,
        norm_first=True,
        activation="gelu",
        batch_first=True,
    )
    tgt, mem = X(T, 206, (2, 3, 4)), X(T, 207, (2, 2, 4))
    mkpm = T.tensor([[False, True], [False, False]])
    return fb(T, m, tgt, mem, memory_key_padding_mask=mkpm)


@case
def encoder_stack(T, log):
    torch.manual_seed(0)
    nn = T.nn
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=T.float64)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4, dtype=T.float64))
    return [n for n, _ in enc.named_parameters()][:3], len(enc.layers)


@case
def encoder_layer_activation_callable(T, log):
    m = mk(T, "TransformerEncoderLayer", 4, 2, 4, 0.0, T.nn.functional.silu)
    return fb(T, m, X(T, 208, (2, 1, 4)))


def _encoder_layer_err(T, log):
    return (
        E(lambda: mk(T, "TransformerEncoderLayer", 4, 2, activation="tanh")),
        E(lambda: mk(T, "TransformerEncoderLayer", 4, 3)),
    )


@case
def attention_ctor_errs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_mha_err_divisible, _encoder_layer_err)]


def _transformer_reprs(T, log):
    nn = T.nn
    return repr(nn.TransformerEncoderLayer(4, 2, 8)), repr(nn.TransformerDecoderLayer(4, 1, 4))


@case
def attention_reprs(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_mha_repr, _transformer_reprs)]


# =============================== scaled_dot_product_attention ===============================
@case
def sdpa_basic(T, log):
    F = T.nn.functional
    q, k, v = X(T, 210, (2, 3, 4)), X(T, 211, (2, 5, 4)), X(T, 212, (2, 5, 6))
    return fb(T, F.scaled_dot_product_attention, q, k, v)


@case
def sdpa_causal_scale(T, log):
    F = T.nn.functional
    q, k, v = X(T, 213, (1, 2, 4, 3)), X(T, 214, (1, 2, 3, 3)), X(T, 215, (1, 2, 3, 3))
    return fb(
        T,
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True, scale=0.3),
        q,
        k,
        v,
    )


@case
def sdpa_masks(T, log):
    F = T.nn.functional
    q, k, v = X(T, 216, (2, 3, 4)), X(T, 217, (2, 3, 4)), X(T, 218, (2, 3, 4))
    bm = T.tensor([[True, False, True], [True, True, False], [False, True, True]])
    fm = t(T, A(219, (2, 1, 3)))
    return (
        fb(T, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=bm), q, k, v),
        fb(T, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=fm), q, k, v),
    )


def _sdpa_gqa(T, log):
    F = T.nn.functional
    q, k, v = X(T, 220, (1, 4, 2, 3)), X(T, 221, (1, 2, 3, 3)), X(T, 222, (1, 2, 3, 3))
    return fb(T, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=True), q, k, v)


def _sdpa_float32(T, log):
    F = T.nn.functional
    q, k, v = (X(T, 223 + i, (2, 2, 3, 4), "float32") for i in range(3))
    return fb(T, F.scaled_dot_product_attention, q, k, v)


@case
def sdpa_gqa_float32(T, log):
    return [E(lambda f=f: f(T, log)) for f in (_sdpa_gqa, _sdpa_float32)]


@case
def sdpa_err(T, log):
    F = T.nn.functional
    q, k = X(T, 0, (2, 3, 4)), X(T, 0, (2, 3, 5))
    return (
        E(lambda: F.scaled_dot_product_attention(q, k, k)),
        E(lambda: F.scaled_dot_product_attention(q, q, q, attn_mask=T.ones(3, 3), is_causal=True)),
    )


@case
def sdpa_more(T, log):
    F = T.nn.functional
    q5 = X(T, 230, (2, 1, 2, 3, 4))
    q = X(T, 231, (1, 2, 3))
    m = T.tensor([[False, False], [True, False]])
    return (
        fb(T, F.scaled_dot_product_attention, q5, q5, q5),
        F.scaled_dot_product_attention(q, q, q, attn_mask=m),
        fb(
            T,
            lambda a, b: F.scaled_dot_product_attention(a, b, b, is_causal=True),
            X(T, 232, (1, 2, 4)),
            X(T, 233, (1, 5, 4)),
        ),
    )


# ================================= more layers and options =================================
@case
def transformer_full(T, log):
    m = mk(T, "Transformer", 4, 2, 1, 1, 8, dropout=0.0)
    return fb(T, m, X(T, 240, (3, 2, 4)), X(T, 241, (2, 2, 4)))


@case
def encoder_stack_forward(T, log):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=torch.float64)
    tm = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    if T is torch:
        m = tm
    else:
        layer = T.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=T.float64)
        m = T.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        m.load_state_dict({k: T.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    mask = T.nn.Transformer.generate_square_subsequent_mask(3, dtype=T.float64)
    return fb(T, m, X(T, 242, (3, 2, 4)), mask=mask, is_causal=True)


@case
def square_subsequent_mask(T, log):
    G = T.nn.Transformer.generate_square_subsequent_mask
    return G(3), G(0), G(2, dtype=T.float64)


@case
def instancenorm_checks(T, log):
    return (
        mk(T, "InstanceNorm1d", 3)(X(T, 250, (2, 4, 5))),
        E(lambda: mk(T, "InstanceNorm1d", 3, affine=True)(X(T, 250, (2, 4, 5)))),
        E(lambda: mk(T, "InstanceNorm1d", 3)(X(T, 250, (2, 3, 1)))),
    )


@case
def norms_small_inputs(T, log):
    return (
        fb(T, mk(T, "LayerNorm", 3), X(T, 0, (0, 3))),
        fb(T, mk(T, "GroupNorm", 2, 4), X(T, 251, (3, 4))),
        fb(T, T.nn.LocalResponseNorm(3, k=1.5), X(T, 252, (1, 4, 2, 2, 3))),
        E(lambda: T.nn.LocalResponseNorm(3)(X(T, 1, (4,)))),
    )


@case
def lppool_negative_inf(T, log):
    x = X(T, 253, (1, 1, 6))
    return (
        fb(T, T.nn.LPPool1d(3, 2), x),
        fb(T, T.nn.LPPool1d(2, 2), x),
        T.nn.functional.lp_pool1d(x, float("inf"), 2),
    )


@case
def bilinear_unbatched(T, log):
    return fb(T, mk(T, "Bilinear", 2, 3, 2), X(T, 254, (2,)), X(T, 255, (3,)))


@case
def module_float_conversion(T, log):
    m = mk(T, "Conv1d", 1, 2, 2).float()
    return m.weight.dtype, m(X(T, 256, (1, 1, 4), "float32")).dtype


@case
def interp_antialias(T, log):
    F = T.nn.functional
    x = X(T, 257, (1, 1, 8, 8))
    return [
        fb(T, lambda v, m=m: F.interpolate(v, size=(3, 5), mode=m, antialias=True), x)
        for m in ("bilinear", "bicubic")
    ]


@case
def interp_misc(T, log):
    F = T.nn.functional
    x = X(T, 258, (1, 2, 4, 4))
    u = T.arange(12, dtype=T.uint8).reshape(1, 1, 3, 4)
    return (
        F.interpolate(x, size=[3, 5]),
        E(lambda: F.interpolate(x, scale_factor=[2.0])),
        F.interpolate(x, scale_factor=0.5, mode="nearest-exact"),
        F.interpolate(X(T, 259, (1, 1, 2, 3, 3)), scale_factor=(1.5, 2, 0.7)),
        F.interpolate(x, size=1, mode="bicubic", align_corners=True),
        F.interpolate(u, scale_factor=2),
        F.interpolate(u, size=(4, 5), mode="bilinear"),
        repr(T.nn.Upsample(scale_factor=(2, 1.5), mode="bicubic")),
        repr(T.nn.Upsample(size=3)),
    )


@case
def shuffle_fold_batch_dims(T, log):
    return (
        T.nn.PixelShuffle(2)(X(T, 260, (2, 2, 4, 1, 2))).shape,
        T.nn.PixelUnshuffle(2)(X(T, 261, (2, 1, 1, 2, 4))).shape,
        fb(T, T.nn.Fold((3, 3), 2), X(T, 262, (4, 4))),
    )


@case
def pad_int_and_unbatched(T, log):
    F = T.nn.functional
    return (
        F.pad(T.arange(3), (1, 1), value=2.7),
        F.pad(T.arange(3.0).reshape(1, 3), (1, 2), mode="replicate"),
        F.pad(X(T, 263, (2, 3, 3)), (1, 1, 2, 0), mode="reflect"),
        E(lambda: F.pad(X(T, 264, (3,)), (1, 1), mode="reflect")),
    )


@case
def convT_output_size_torch_size(T, log):
    m = mk(T, "ConvTranspose2d", 1, 1, 3, stride=2)
    g = mk(T, "ConvTranspose2d", 4, 2, 3, stride=3, groups=2)
    return (
        m(X(T, 265, (1, 1, 3, 3)), output_size=T.Size([1, 1, 8, 8])).shape,
        fb(T, lambda x: g(x, output_size=[8, 7]), X(T, 266, (1, 4, 2, 2))),
        E(lambda: g(X(T, 266, (1, 4, 2, 2)), output_size=[8, 9])),
    )


@case
def rnn_flat_weights(T, log):
    m = mk(T, "LSTM", 2, 3, bidirectional=True)
    m.flatten_parameters()
    return m.weight_ih_l0_reverse.shape, m._flat_weights_names, m.hidden_size, m.mode


@case
def ctor_size_errs(T, log):
    return [
        E(lambda: T.nn.Conv2d(0, 1, 1)),
        E(lambda: T.nn.Conv2d(1, 1, 0)),
        E(lambda: T.nn.Linear(-1, 2)),
        E(lambda: T.nn.Embedding(-1, 2)),
    ]


@case
def decoder_stack(T, log):
    def build(L):
        layer = L.nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, dtype=L.float64)
        return L.nn.TransformerDecoder(layer, 2, norm=L.nn.LayerNorm(4, dtype=L.float64))

    torch.manual_seed(0)
    tm = build(torch)
    if T is torch:
        m = tm
    else:
        m = build(T)
        m.load_state_dict({k: T.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return fb(T, m, X(T, 300, (3, 2, 4)), X(T, 301, (2, 2, 4)), tgt_is_causal=False)


@case
def packed_lstm_proj(T, log):
    U = T.nn.utils.rnn
    x, p = _packed(T, enforce_sorted=False)
    m = mk(T, "LSTM", 2, 4, proj_size=2, bidirectional=True)
    out, (h, c) = m(p)
    pad, _ = U.pad_packed_sequence(out)
    return pad, h, c, T.autograd.grad(lossof(T, (pad, h, c)), [x] + list(m.parameters()))


@case
def norms_more(T, log):
    rms = mk(T, "RMSNorm", 3, dt="float32")
    tiny = t(T, [[1e-4, 2e-4, -1e-4]], "float32", rg=True)
    return (
        fb(T, mk(T, "BatchNorm3d", 2), X(T, 302, (2, 2, 2, 2, 2))),
        fb(T, mk(T, "InstanceNorm3d", 2, affine=True), X(T, 303, (1, 2, 2, 2, 3))),
        fb(T, rms, tiny),
        rms.eps,
        fb(T, mk(T, "GroupNorm", 2, 4, dt="float32"), X(T, 304, (2, 4, 5), "float32")),
        fb(T, T.nn.LocalResponseNorm(4), X(T, 305, (1, 6, 3))),
        E(lambda: mk(T, "LayerNorm", 3)(X(T, 1, (2, 3), "float32"))),
    )


@case
def lazy_modules(T, log):
    m = T.nn.LazyConv2d(3, 2, dtype=T.float64)
    b = T.nn.LazyBatchNorm1d(dtype=T.float64)
    r0 = repr(m), repr(b)
    m(X(T, 306, (1, 2, 3, 3)))
    b(X(T, 307, (3, 4)))
    return r0, repr(m), repr(b), type(m).__name__, type(b).__name__, m.weight.shape, b.running_var


@case
def unpool_adaptive_3d(T, log):
    o, i = T.nn.MaxPool3d(2, return_indices=True)(X(T, 308, (1, 1, 2, 4, 4)))
    o1, i1 = T.nn.MaxPool1d(2, return_indices=True)(X(T, 309, (1, 2, 6)))
    return (
        fb(T, lambda a: T.nn.MaxUnpool3d(2)(a, i), o),
        fb(T, lambda a: T.nn.MaxUnpool1d(2)(a, i1, output_size=[7]), o1),
        repr(T.nn.MaxUnpool3d(2)),
        fb(T, T.nn.AdaptiveAvgPool3d((2, 1, 3)), X(T, 310, (1, 1, 3, 3, 5))),
        fb(T, T.nn.AdaptiveMaxPool3d(2, return_indices=True), X(T, 311, (1, 1, 3, 3, 5))),
    )


@case
def pads_3d_1d(T, log):
    nn = T.nn
    x = X(T, 312, (1, 1, 2, 3, 3))
    ms = (
        nn.CircularPad3d(1),
        nn.ReflectionPad3d((1, 0, 1, 0, 1, 0)),
        nn.ReplicationPad3d(1),
        nn.ZeroPad3d(1),
        nn.ConstantPad3d(1, 2.0),
    )
    x1 = X(T, 313, (1, 2, 3))
    return (
        [fb(T, m, x) for m in ms],
        fb(T, nn.ReplicationPad1d((2, 3)), x1),
        fb(T, nn.CircularPad1d(2), x1),
    )


@case
def embedding_more(T, log):
    F = T.nn.functional
    e = T.nn.Embedding.from_pretrained(t(T, A(314, (3, 2)) * 3), max_norm=1.0, freeze=False)
    w = t(T, [[1.0, 2.0], [1.0, 0.0], [0.5, 2.0]], rg=True)
    ties = F.embedding_bag(T.tensor([0, 1, 2]), w, T.tensor([0]), mode="max")
    bag = mk(T, "EmbeddingBag", 4, 2, mode="sum", padding_idx=0)
    mx = mk(T, "EmbeddingBag", 3, 2, mode="max")
    return (
        fb(T, e, T.tensor([0, 2])),
        e.weight,
        repr(e),
        ties,
        T.autograd.grad(ties.sum(), w),
        fb(T, bag, T.tensor([[0, 1, 0], [2, 0, 3]])),
        E(lambda: mx(T.tensor([1, 2]), T.tensor([0]), per_sample_weights=t(T, [1.0, 2.0]))),
        repr(T.nn.EmbeddingBag(4, 2, max_norm=1.0, mode="sum", include_last_offset=True)),
        repr(T.nn.Embedding(4, 2, sparse=True, norm_type=1.0, max_norm=1.0)),
    )


@case
def mha_float_kpm_kdim_eval(T, log):
    m = mk(T, "MultiheadAttention", 4, 2, batch_first=True)
    x = X(T, 315, (2, 3, 4))
    kpm = t(T, [[0.0, -1.0, float("-inf")], [0.0, 0.0, 0.0]])
    mk_ = mk(T, "MultiheadAttention", 4, 2, kdim=3, vdim=3, batch_first=True).eval()
    q, k = X(T, 316, (2, 2, 4), rg=False), X(T, 317, (2, 3, 3), rg=False)
    with T.no_grad():
        ev = mk_(q, k, k)
    return fb(T, m, x, x, x, key_padding_mask=kpm), ev


# ================================= gradients of gradients =================================
def gg(T, f, *xs):
    out = f(*xs)
    g = T.autograd.grad(lossof(T, out), xs, create_graph=True)
    g2 = T.autograd.grad(sum((gi * gi).sum() for gi in g), xs, allow_unused=True)
    return out, g, g2


@case
def double_backward_conv(T, log):
    F = T.nn.functional
    return (
        gg(
            T,
            lambda x, w: F.conv2d(x, w, padding=1, stride=2),
            X(T, 270, (1, 2, 4, 4)),
            X(T, 271, (3, 2, 3, 3)),
        ),
        gg(
            T,
            lambda x, w: F.conv_transpose1d(x, w, stride=2),
            X(T, 272, (1, 2, 4)),
            X(T, 273, (2, 3, 3)),
        ),
    )


@case
def double_backward_norms(T, log):
    F = T.nn.functional
    return (
        gg(
            T,
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            X(T, 274, (4, 3)),
            X(T, 275, (3,)),
            X(T, 276, (3,)),
        ),
        gg(
            T,
            lambda x, w, b: F.group_norm(x, 2, w, b),
            X(T, 277, (2, 4, 3)),
            X(T, 278, (4,)),
            X(T, 279, (4,)),
        ),
        gg(T, lambda x, w: F.rms_norm(x, (3,), w), X(T, 280, (4, 3)), X(T, 281, (3,))),
        gg(T, lambda x: F.instance_norm(x), X(T, 282, (2, 2, 4))),
        gg(T, lambda x: F.local_response_norm(x, 2), X(T, 283, (1, 3, 4))),
    )


@case
def double_backward_spatial(T, log):
    F = T.nn.functional
    return (
        gg(
            T,
            lambda x: F.interpolate(x, size=(5, 3), mode="bilinear") ** 2,
            X(T, 284, (1, 1, 3, 4)),
        ),
        gg(T, lambda x: F.max_pool2d(x, 2) ** 2, X(T, 285, (1, 1, 4, 4))),
        gg(T, lambda x: F.avg_pool2d(x, 2, padding=1) ** 2, X(T, 286, (1, 1, 4, 4))),
        gg(T, lambda x: F.pad(x, (2, 1), mode="reflect") ** 2, X(T, 287, (1, 1, 4))),
        gg(T, lambda x: F.unfold(x, 2) ** 2, X(T, 288, (1, 1, 3, 3))),
    )


@case
def double_backward_attention_rnn(T, log):
    F = T.nn.functional
    lstm, gru = mk(T, "LSTM", 2, 2), mk(T, "GRU", 2, 2)
    return (
        gg(
            T,
            F.scaled_dot_product_attention,
            X(T, 289, (1, 2, 3)),
            X(T, 290, (1, 3, 3)),
            X(T, 291, (1, 3, 3)),
        ),
        gg(T, lambda x: lstm(x)[0], X(T, 292, (3, 1, 2))),
        gg(T, lambda x: gru(x)[0], X(T, 293, (3, 1, 2))),
    )


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_nn_layers_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
