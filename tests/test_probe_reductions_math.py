"""Probes of torch's reductions and math ops (sum/mean/std/var, max/min/median/sort/topk,
unique, searchsorted, norms, pointwise math, special functions, type promotion): each case runs
the same code on torch and on jitgrad and compares values, dtypes, shapes, gradients, warnings
and the error type/text. Only cases where jitgrad agrees with torch are kept."""

import math
import re
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
        a = np.asarray(x.detach().resolve_conj().resolve_neg().numpy())
        return ("T", tuple(x.shape), d, a, x.requires_grad)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, dict):
        return ("dict", [(k, _norm(v)) for k, v in x.items()])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size, jitgrad.Size)):
        return ("Size", tuple(x))
    if isinstance(x, (bool, int, float, complex, str, type(None))):
        return (type(x).__name__, x)
    return ("other", type(x).__name__)


_RTOL = {"float64": (1e-6, 1e-9), "complex128": (1e-6, 1e-9), "float32": (1e-5, 1e-6)}


def _eq(a, b, rtol=(1e-6, 1e-9)):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=rtol[0], atol=rtol[1], equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, tuple) and len(a) == 5 and a[0] == "T":
        r = _RTOL.get(a[2], (1e-5, 1e-6))
        return a[:3] == b[:3] and a[4] == b[4] and _eq(a[3], b[3], r)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y, rtol) for x, y in zip(a, b))
    return a == b


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, str(e).replace("jitgrad", "torch"))


def _wtext(m):
    # torch's C++ warnings end with the path of its own source file
    return re.sub(r" \(Triggered internally at .*\)$", "", str(m)).replace("jitgrad", "torch")


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, _wtext(x.message)) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, str(e).replace("jitgrad", "torch"), _norm(log))


# ---- inputs: the same numbers for both libraries ----
def A(seed, shape, lo=-2.0, hi=2.0):  # noqa: N802
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def t(T, arr, dtype="float32", rg=False):
    return T.tensor(np.asarray(arr).tolist(), dtype=getattr(T, dtype), requires_grad=rg)


# ---- sum / mean / prod / nansum / nanmean ----
@case
def sum_dims(T, log):
    x = t(T, A(0, (2, 3, 4)), rg=True)
    out = (
        x.sum(),
        x.sum((0, 2)),
        x.sum(dim=(-1, 0), keepdim=True),
        T.sum(x, 1, dtype=T.float64),
    )
    return out, T.autograd.grad(out[1].sum() + out[2].sum() + out[3].sum(), x)


@case
def sum_int_bool_dtypes(T, log):
    i8 = T.tensor([100, 100, 100], dtype=T.int8)
    b = T.tensor([[True, False], [True, True]])
    return (
        i8.sum(),
        b.sum(),
        b.sum(0),
        T.tensor([1, 2], dtype=T.uint8).sum(),
        i8.sum(dtype=T.int8),
        T.tensor([1, 2], dtype=T.int32).sum(),
        T.tensor([1.0], dtype=T.float16).sum(),
    )


@case
def sum_empty(T, log):
    z = T.zeros(0, 3)
    return z.sum(), z.sum(0), z.sum(1), z.mean(0), z.prod(0), T.zeros(0, dtype=T.int64).sum()


@case
def mean_dims_dtype(T, log):
    x = t(T, A(1, (3, 4)), "float64", rg=True)
    out = x.mean(), x.mean((0, 1)), x.mean(-1, keepdim=True), x.mean(0, dtype=T.float32)
    return out, T.autograd.grad(out[0] + out[2].sum() + out[3].sum(), x)


@case
def mean_int_errors(T, log):
    i = T.tensor([1, 2, 3])
    return E(lambda: i.mean()), E(lambda: i.mean(dtype=T.float32)), E(lambda: T.mean(i, 0))


@case
def mean_empty(T, log):
    return T.zeros(0).mean(), T.zeros(2, 0).mean(1), T.zeros(2, 0).mean(0)


@case
def prod_basic_grad(T, log):
    x = t(T, [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 2.0]], "float64", rg=True)
    out = x.prod(), x.prod(1), x.prod(0, keepdim=True)
    g = [T.autograd.grad(o.sum(), x)[0] for o in out]
    return out, g


@case
def prod_int_dtypes(T, log):
    i = T.tensor([2, 3, 4], dtype=T.int8)
    b = T.tensor([True, True])
    return i.prod(), b.prod(), i.prod(dtype=T.float32), T.prod(i, 0, dtype=T.int16)


@case
def prod_errors(T, log):
    x = T.ones(2, 3)
    return E(lambda: x.prod(2)), E(lambda: x.sum(3)), E(lambda: x.mean(-3))


@case
def nansum_nanmean(T, log):
    x = t(T, [[1.0, float("nan"), 3.0], [float("nan"), float("nan"), 2.0]], rg=True)
    out = T.nansum(x), x.nansum(1), T.nanmean(x, 0), x.nanmean(), T.nanmean(x, (0, 1), True)
    return out, T.autograd.grad(out[0] + out[1].sum() + out[3], x)


@case
def nanmean_all_nan(T, log):
    x = T.tensor([[float("nan")], [1.0]])
    return x.nanmean(1), T.nansum(T.tensor([1, 2])), E(lambda: T.nanmean(T.tensor([1, 2])))


@case
def sum_noncontiguous_and_0d(T, log):
    x = t(T, A(2, (3, 4))).t()
    s = T.tensor(5.0)
    return x.sum(0), s.sum(), s.sum(0), s.sum(-1, keepdim=True), s.mean(()), E(lambda: s.sum(1))


@case
def sum_dup_dim_error(T, log):
    x = T.ones(2, 3)
    return E(lambda: x.sum((0, 0))), E(lambda: x.sum((0, -2))), E(lambda: x.mean((1, -1)))


# ---- std / var ----
@case
def std_var_correction(T, log):
    x = t(T, A(3, (3, 5)), "float64", rg=True)
    out = (
        x.std(),
        x.var(1),
        x.std(0, unbiased=False),
        T.var(x, dim=1, correction=0),
        T.std(x, (0, 1), correction=2, keepdim=True),
        x.var(dim=-1, unbiased=True, keepdim=True),
        T.var(x, correction=3.5),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def std_mean_var_mean(T, log):
    x = t(T, A(4, (4, 3)), rg=True)
    a = T.std_mean(x, 0)
    b = T.var_mean(x, dim=(0, 1), correction=0, keepdim=True)
    c = T.var_mean(x, unbiased=False)
    return (type(a).__name__, a, b, c), T.autograd.grad(a[0].sum() + a[1].sum() + b[0].sum(), x)


@case
def std_single_element(T, log):
    x = t(T, [3.0], rg=True)
    s = x.std()
    return s, x.var(correction=0), T.autograd.grad(s, x)


@case
def std_var_int_error(T, log):
    i = T.tensor([1, 2, 3])
    return E(lambda: i.std()), E(lambda: T.var(i)), E(lambda: T.var_mean(i))


@case
def std_empty(T, log):
    return T.zeros(0).var(), T.zeros(0, 3).std(0), T.zeros(3, 0).var(1)


@case
def var_complex(T, log):
    z = T.tensor([1 + 2j, 3 - 1j, -2 + 0.5j])
    return z.var(), z.std(correction=0), T.var_mean(z)


# ---- max / min / amax / amin / argmax / argmin ----
@case
def max_min_dim_namedtuple(T, log):
    x = t(T, [[1.0, 5.0, 5.0], [7.0, 2.0, 7.0]], rg=True)
    m = x.max(1)
    n = T.min(x, dim=0, keepdim=True)
    return (
        type(m).__name__,
        m.values,
        m.indices,
        n.values,
        n.indices,
        T.autograd.grad(m.values.sum() + n.values.sum(), x),
    )


@case
def max_full_ties_grad(T, log):
    x = t(T, [[3.0, 1.0, 3.0], [3.0, 0.0, 2.0]], rg=True)
    return x.max(), x.min(), T.autograd.grad(x.max() + 2 * x.min(), x)


@case
def amax_amin_ties_grad(T, log):
    x = t(T, [[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]], "float64", rg=True)
    out = x.amax(1), T.amin(x, dim=(0, 1)), x.amax(), T.amax(x, 0, keepdim=True)
    g = [T.autograd.grad(o.sum(), x)[0] for o in out]
    return out, g


@case
def max_binary_ties_grad(T, log):
    a = t(T, [1.0, 2.0, 3.0], rg=True)
    b = t(T, [1.0, 3.0, 2.0], rg=True)
    out = T.max(a, b), T.minimum(a, b), T.fmax(a, b), T.fmin(a, b)
    return out, T.autograd.grad(sum(o.sum() for o in out), (a, b))


@case
def max_nan_propagation(T, log):
    x = T.tensor([[1.0, float("nan"), 3.0], [0.0, -1.0, 2.0]])
    y = T.tensor([float("nan"), 1.0, float("nan")])
    z = T.tensor([0.0, float("nan"), 5.0])
    return x.max(), x.max(1), x.amin(0), T.maximum(y, z), T.fmax(y, z), T.fmin(y, z), x.argmax(1)


@case
def max_int_bool(T, log):
    i = T.tensor([[3, -1], [7, 7]])
    b = T.tensor([False, True, True])
    return i.max(), i.max(0), b.max(), b.amax(), b.argmax(), i.amin(1), T.max(i, T.tensor(5))


@case
def max_empty_errors(T, log):
    z = T.zeros(0, 3)
    return (
        E(lambda: z.max()),
        E(lambda: z.max(0)),
        z.max(1),
        E(lambda: z.amax()),
        z.amax(1),
        E(lambda: z.argmax()),
        E(lambda: T.zeros(0).min()),
    )


@case
def argmax_argmin(T, log):
    x = t(T, [[1.0, 9.0, 9.0], [4.0, 4.0, -2.0]])
    return (
        x.argmax(),
        x.argmin(),
        x.argmax(1),
        T.argmax(x, dim=0, keepdim=True),
        T.argmin(x, dim=-1, keepdim=True),
        T.tensor(3.0).argmax(),
        T.tensor(3.0).argmax(0),
    )


@case
def max_0d_and_dim_error(T, log):
    s = T.tensor(2.0)
    return s.max(0), s.amax(-1), E(lambda: s.max(1)), E(lambda: T.ones(2, 2).argmax(2))


@case
def max_complex_error(T, log):
    z = T.tensor([1 + 1j, 2 - 1j])
    return E(lambda: z.max()), E(lambda: z.amax()), E(lambda: z.argmax())


# ---- all / any / count_nonzero ----
@case
def all_any(T, log):
    x = T.tensor([[1, 0, 2], [3, 4, 5]])
    f = T.tensor([[0.0, 0.5], [float("nan"), 0.0]])
    return (
        x.all(),
        x.any(),
        x.all(1),
        T.any(x, dim=0, keepdim=True),
        x.all(dim=(0, 1)),
        T.any(f, (0,)),
        f.all(),
        T.tensor([], dtype=T.bool).all(),
        T.zeros(0).any(),
    )


@case
def count_nonzero(T, log):
    x = T.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, float("nan")]])
    return (
        T.count_nonzero(x),
        x.count_nonzero(0),
        T.count_nonzero(x, dim=(0, 1)),
        x.count_nonzero(dim=-1),
        T.count_nonzero(T.tensor([True, False])),
    )


# ---- logsumexp ----
@case
def logsumexp(T, log):
    x = t(T, A(5, (3, 4)) * 30, "float64", rg=True)
    out = T.logsumexp(x, 1), x.logsumexp((0, 1)), x.logsumexp(-1, keepdim=True)
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def logsumexp_inf_int(T, log):
    x = T.tensor([[float("-inf"), float("-inf")], [float("inf"), 1.0]])
    return T.logsumexp(x, 1), T.logsumexp(T.tensor([1, 2, 3]), 0), T.logsumexp(T.zeros(0, 2), 0)


# ---- cumulative ----
@case
def cumsum_cumprod(T, log):
    x = t(T, [[1.0, 2.0, 0.0, 3.0], [2.0, 0.0, 0.0, -1.0]], "float64", rg=True)
    out = x.cumsum(1), T.cumprod(x, dim=1), x.cumsum(0), x.cumprod(-1)
    return out, [T.autograd.grad(o.sum(), x)[0] for o in out]


@case
def cumsum_dtypes(T, log):
    i = T.tensor([100, 100], dtype=T.int8)
    b = T.tensor([True, True, False])
    return (
        i.cumsum(0),
        b.cumsum(0),
        i.cumprod(0),
        T.cumsum(i, 0, dtype=T.float32),
        b.cumprod(0),
        T.cumsum(T.zeros(0), 0),
        E(lambda: T.ones(2).cumsum(1)),
    )


@case
def cummax_cummin(T, log):
    x = t(T, [[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 1.0, 1.0, 0.0, 4.0]], rg=True)
    m = T.cummax(x, 1)
    n = x.cummin(dim=-1)
    return type(m).__name__, m, n, T.autograd.grad(m.values.sum() + n.values.sum(), x)


@case
def cummax_nan_int(T, log):
    x = T.tensor([1.0, float("nan"), 2.0, 0.5])
    return T.cummax(x, 0), T.cummin(x, 0), T.cummax(T.tensor([2, 1, 3]), 0)


@case
def logcumsumexp(T, log):
    x = t(T, A(6, (2, 5)) * 10, "float64", rg=True)
    out = T.logcumsumexp(x, 1)
    return out, T.autograd.grad(out.sum(), x)


# ---- norms ----
@case
def norm_p(T, log):
    x = t(T, A(7, (3, 4)), "float64", rg=True)
    out = (
        x.norm(),
        T.norm(x, p=1),
        x.norm(p=3, dim=1),
        T.norm(x, float("inf"), dim=0, keepdim=True),
        x.norm(p="fro", dim=(0, 1)),
        x.norm(p=0, dim=1),
        T.norm(x, p=-1, dim=1),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def vector_norm(T, log):
    x = t(T, A(8, (2, 3, 4)), rg=True)
    LA = T.linalg
    out = (
        LA.vector_norm(x),
        LA.vector_norm(x, 1, dim=(0, 2)),
        LA.vector_norm(x, ord=float("-inf"), dim=-1, keepdim=True),
        LA.vector_norm(x, ord=0.5, dim=1),
        LA.vector_norm(x, dtype=T.float64),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out[:4]), x)


@case
def vector_norm_zero_grad(T, log):
    x = t(T, [[0.0, 0.0], [3.0, 4.0]], "float64", rg=True)
    out = T.linalg.vector_norm(x, dim=1)
    return out, T.autograd.grad(out.sum(), x)


@case
def matrix_norm(T, log):
    x = t(T, A(9, (2, 3, 3)), "float64", rg=True)
    LA = T.linalg
    out = (
        LA.matrix_norm(x),
        LA.matrix_norm(x, ord=1),
        LA.matrix_norm(x, ord=float("inf")),
        LA.matrix_norm(x, "nuc"),
        LA.matrix_norm(x, ord=2, keepdim=True),
        LA.matrix_norm(x, ord=-1, dim=(0, 2)),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def linalg_norm(T, log):
    x = t(T, A(10, (3, 4)), "float64")
    LA = T.linalg
    return LA.norm(x), LA.norm(x, 2), LA.norm(x[0], 3), LA.norm(x, dim=1), LA.norm(x, "fro")


@case
def norm_errors(T, log):
    x = T.ones(2, 3)
    LA = T.linalg
    return (
        E(lambda: LA.vector_norm(T.tensor([1, 2]))),
        E(lambda: LA.matrix_norm(T.ones(3))),
        E(lambda: LA.matrix_norm(x, ord=3)),
        E(lambda: LA.norm(T.ones(2, 2, 2), 2)),
        E(lambda: LA.vector_norm(x, dtype=T.int64)),
    )


@case
def dist(T, log):
    a = t(T, A(11, (2, 3)), "float64", rg=True)
    b = t(T, A(12, (3,)), "float64", rg=True)
    out = T.dist(a, b), a.dist(b, 1), T.dist(a, b, p=float("inf")), T.dist(a, b, 0)
    return out, T.autograd.grad(out[0] + out[1] + out[2], (a, b))


@case
def cdist(T, log):
    a = t(T, A(13, (2, 4, 3)), "float64", rg=True)
    b = t(T, A(14, (2, 5, 3)), "float64", rg=True)
    out = T.cdist(a, b), T.cdist(a, b, p=1), T.cdist(a[0], b[0], p=float("inf")), T.cdist(a, b, 3)
    return out, T.autograd.grad(sum(o.sum() for o in out), (a, b))


@case
def cdist_errors(T, log):
    return (
        E(lambda: T.cdist(T.ones(2, 3), T.ones(2, 4))),
        E(lambda: T.cdist(T.ones(3), T.ones(3))),
        E(lambda: T.cdist(T.ones(2, 3), T.ones(2, 3), p=-1)),
    )


# ---- median / quantile / mode / kthvalue ----
@case
def median_basic_ties_grad(T, log):
    x = t(T, [[3.0, 1.0, 2.0, 2.0], [5.0, 5.0, 1.0, 0.0]], rg=True)
    m = x.median()
    d = T.median(x, dim=1)
    k = x.median(0, keepdim=True)
    return m, type(d).__name__, d, k, T.autograd.grad(m + d.values.sum() + k.values.sum(), x)


@case
def median_nan(T, log):
    x = T.tensor([[1.0, float("nan"), 3.0], [2.0, 0.0, 1.0]])
    return x.median(), x.median(1), T.nanmedian(x), x.nanmedian(1), T.nanmedian(x, 0)


@case
def nanmedian_grad(T, log):
    x = t(T, [[1.0, float("nan"), 3.0, 0.0], [float("nan"), 2.0, 5.0, 4.0]], "float64", rg=True)
    n = x.nanmedian(1)
    return n, T.autograd.grad(n.values.sum(), x)


@case
def median_int_empty(T, log):
    i = T.tensor([4, 1, 3, 2])
    return (
        i.median(),
        i.median(0),
        E(lambda: T.zeros(0).median()),
        E(lambda: T.zeros(0, 2).median(0)),
    )


@case
def quantile_modes(T, log):
    x = t(T, A(15, (3, 6)), "float64", rg=True)
    q = t(T, [0.0, 0.3, 0.5, 1.0], "float64")
    out = [
        T.quantile(x, q, dim=1, interpolation=m)
        for m in ("linear", "lower", "higher", "midpoint", "nearest")
    ]
    out.append(x.quantile(0.25))
    out.append(T.quantile(x, 0.7, dim=0, keepdim=True))
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def nanquantile(T, log):
    x = t(T, [[1.0, float("nan"), 3.0, 4.0], [float("nan")] * 4], "float64", rg=True)
    out = T.nanquantile(x, 0.5, dim=1), x.nanquantile(T.tensor([0.1, 0.9], dtype=T.float64), 1)
    q = T.quantile(x, 0.5, dim=1)
    return out, q, T.autograd.grad(out[0][0], x)


@case
def quantile_errors(T, log):
    x = T.ones(4)
    return (
        E(lambda: T.quantile(x, 1.5)),
        E(lambda: T.quantile(x, T.tensor([0.5], dtype=T.float64))),
        E(lambda: T.quantile(T.tensor([1, 2]), 0.5)),
        E(lambda: T.quantile(x, 0.5, interpolation="cubic")),
        E(lambda: T.quantile(T.zeros(0), 0.5)),
        E(lambda: T.quantile(x, T.ones(2, 2) / 2)),
    )


@case
def mode(T, log):
    x = T.tensor([[1.0, 2.0, 2.0, 3.0, 3.0], [4.0, 4.0, 0.0, 0.0, 4.0]])
    m = x.mode()
    return type(m).__name__, m, T.mode(x, 0), x.mode(dim=1, keepdim=True).values


@case
def kthvalue(T, log):
    x = t(T, [[3.0, 1.0, 2.0, 5.0], [0.0, 0.0, -1.0, 7.0]], rg=True)
    k = T.kthvalue(x, 2)
    k2 = x.kthvalue(1, dim=0, keepdim=True)
    return (
        type(k).__name__,
        k,
        k2,
        T.autograd.grad(k.values.sum() + k2.values.sum(), x),
        E(lambda: x.kthvalue(5)),
        E(lambda: x.kthvalue(0)),
    )


# ---- topk / sort ----
@case
def topk(T, log):
    x = t(T, A(16, (3, 5)), rg=True)
    a = x.topk(2)
    b = T.topk(x, 3, dim=0, largest=False)
    c = x.topk(k=5, sorted=True)
    return type(a).__name__, a, b, c, T.autograd.grad(a.values.sum() + 2 * b.values.sum(), x)


@case
def topk_errors_edge(T, log):
    x = T.tensor([1.0, 3.0, 2.0])
    return (
        E(lambda: x.topk(4)),
        x.topk(0),
        E(lambda: x.topk(-1)),
        T.tensor(5.0).topk(1),
        T.tensor([1, 5, 3]).topk(2),
    )


@case
def sort(T, log):
    x = t(T, [[3.0, 1.0, 2.0, 1.0], [float("nan"), 0.0, -1.0, float("inf")]], rg=True)
    s = x.sort()
    d = T.sort(x, dim=0, descending=True)
    st = x.sort(stable=True, descending=True)
    return type(s).__name__, s, d, st, T.autograd.grad(s.values[:, 0].sum() + d.values[0].sum(), x)


@case
def sort_stable_int_bool(T, log):
    i = T.tensor([3, 1, 3, 1, 2, 1])
    b = T.tensor([True, False, True, False])
    return (
        T.sort(i, stable=True),
        i.sort(descending=True, stable=True),
        b.sort(stable=True),
        T.argsort(i, stable=True),
        i.argsort(descending=True, stable=True),
    )


@case
def argsort_msort(T, log):
    x = t(T, A(17, (3, 4)), rg=True)
    m = T.msort(x)
    return T.argsort(x), x.argsort(0, True), m, T.autograd.grad(m[0].sum(), x)


@case
def sort_0d_empty(T, log):
    s = T.tensor(3.0)
    return s.sort(), T.zeros(0).sort(), T.argsort(T.zeros(0, 2), 1), E(lambda: s.sort(1))


# ---- unique ----
@case
def unique_flat(T, log):
    x = T.tensor([3, 1, 2, 3, 1, 5])
    return (
        T.unique(x),
        x.unique(return_inverse=True),
        T.unique(x, return_counts=True),
        T.unique(x, sorted=True, return_inverse=True, return_counts=True),
        T.unique(T.tensor([[2.0, 1.0], [1.0, 2.0]]), return_inverse=True),
    )


@case
def unique_dim(T, log):
    x = T.tensor([[1, 2], [3, 4], [1, 2], [0, 9]])
    return (
        T.unique(x, dim=0),
        T.unique(x, dim=0, return_inverse=True, return_counts=True),
        x.unique(dim=1, return_counts=True),
        T.unique(T.tensor([[1, 1], [2, 2]]), dim=1),
    )


@case
def unique_consecutive(T, log):
    x = T.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    m = T.tensor([[1, 2], [1, 2], [3, 4], [1, 2]])
    return (
        T.unique_consecutive(x),
        x.unique_consecutive(return_inverse=True, return_counts=True),
        T.unique_consecutive(m, dim=0, return_counts=True),
        T.unique_consecutive(T.zeros(0)),
    )


@case
def unique_bool_nan_empty(T, log):
    return (
        T.unique(T.tensor([True, False, True])),
        T.unique(T.zeros(0), return_counts=True),
        T.unique(T.tensor([1.0, float("nan"), float("nan"), 0.0])).shape,
        T.unique(T.tensor(3)),
    )


# ---- bincount / histc / histogram ----
@case
def bincount(T, log):
    x = T.tensor([0, 1, 1, 3, 1])
    w = T.tensor([0.5, 1.0, 2.0, 0.25, 1.0])
    return (
        T.bincount(x),
        x.bincount(w),
        T.bincount(x, minlength=7),
        T.bincount(x, weights=w.double(), minlength=2),
        T.bincount(T.tensor([], dtype=T.int64)),
        T.bincount(x, weights=T.tensor([1, 2, 3, 4, 5])),
    )


@case
def bincount_errors(T, log):
    return (
        E(lambda: T.bincount(T.tensor([-1, 2]))),
        E(lambda: T.bincount(T.tensor([1.0, 2.0]))),
        E(lambda: T.bincount(T.tensor([[1, 2]]))),
        E(lambda: T.bincount(T.tensor([1, 2]), T.tensor([1.0]))),
        E(lambda: T.bincount(T.tensor([1, 2]), minlength=-1)),
    )


@case
def histc(T, log):
    x = T.tensor([1.0, 2.0, 1.0, 4.0, 2.5, -1.0, 6.0])
    return (
        T.histc(x, bins=4, min=0, max=4),
        x.histc(5),
        T.histc(x, 3, 1, 1),
        T.histc(x.double(), bins=2, min=-1, max=6),
        T.histc(T.ones(3), 4),
    )


@case
def histc_errors(T, log):
    x = T.tensor([1.0, 2.0])
    return (
        E(lambda: T.histc(T.tensor([1, 2]), 3)),
        E(lambda: T.histc(x.to(T.complex64), 3)),
        T.histc(x, 2, 3, 3),
    )


@case
def histogram(T, log):
    x = T.tensor([1.0, 2.0, 1.0, 4.0, 2.5, 0.0, 3.0])
    h = T.histogram(x, bins=3)
    return (
        type(h).__name__,
        h,
        T.histogram(x, T.tensor([0.0, 1.0, 2.5, 5.0])),
        x.histogram(4, range=(0.0, 2.0), density=True),
        T.histogram(x, bins=2, weight=T.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
    )


# ---- searchsorted / bucketize ----
@case
def searchsorted(T, log):
    s = T.tensor([1.0, 2.0, 2.0, 4.0, 7.0])
    v = T.tensor([[0.0, 2.0, 5.0], [7.0, 8.0, 2.0]])
    return (
        T.searchsorted(s, v),
        T.searchsorted(s, v, right=True),
        T.searchsorted(s, v, side="right"),
        T.searchsorted(s, v, out_int32=True),
        T.searchsorted(s, 2.0),
        T.searchsorted(s, T.tensor(3.0)),
    )


@case
def searchsorted_sorter_batched(T, log):
    s = T.tensor([4.0, 1.0, 7.0, 2.0])
    srt = T.argsort(s)
    b = T.tensor([[1, 3, 5], [2, 4, 6]])
    return (
        T.searchsorted(s, T.tensor([0.0, 3.0, 9.0]), sorter=srt),
        T.searchsorted(b, T.tensor([[3, 6], [1, 5]])),
        T.searchsorted(b, T.tensor([[3, 6], [1, 5]]), side="right"),
    )


@case
def searchsorted_errors(T, log):
    s = T.tensor([1.0, 2.0])
    return (
        E(lambda: T.searchsorted(s, T.tensor([1.0]), side="middle")),
        E(lambda: T.searchsorted(s, T.tensor([1.0]), right=False, side="right")),
        E(lambda: T.searchsorted(T.ones(2, 2), T.ones(3, 1))),
    )


@case
def bucketize(T, log):
    b = T.tensor([1, 3, 5, 7])
    v = T.tensor([[0, 3, 6], [7, 8, 1]])
    return (
        T.bucketize(v, b),
        T.bucketize(v, b, right=True),
        T.bucketize(v, b, out_int32=True),
        T.bucketize(4, b),
        T.bucketize(T.tensor([2.5, 9.0]), b.double()),
        E(lambda: T.bucketize(v, T.ones(2, 2))),
    )


# ---- clamp / lerp / addcmul / addcdiv ----
@case
def clamp_scalars_grad(T, log):
    x = t(T, [-2.0, -1.0, 0.0, 0.5, 1.0, 3.0], rg=True)
    out = x.clamp(-1, 1), T.clamp(x, min=0), x.clip(max=0.5), T.clamp(x, 1, -1)
    return out, [T.autograd.grad(o.sum(), x)[0] for o in out]


@case
def clamp_tensor_bounds(T, log):
    x = t(T, [[-2.0, 0.0, 2.0], [1.0, 5.0, -3.0]], rg=True)
    lo = t(T, [-1.0, 0.0, 1.0], rg=True)
    hi = t(T, [[0.0], [2.0]], rg=True)
    out = T.clamp(x, lo, hi), x.clip(min=lo), T.clamp(x, max=hi)
    return out, T.autograd.grad(sum(o.sum() for o in out), (x, lo, hi))


@case
def clamp_int_dtype(T, log):
    i = T.tensor([-5, 0, 5])
    return (
        i.clamp(-1, 2),
        i.clamp(0.5, 2.5),
        T.clamp(i, min=T.tensor(1.5)),
        T.clamp(T.tensor([1.0, float("nan")]), 0, 0.5),
        E(lambda: T.clamp(i)),
        E(lambda: T.clamp(T.tensor([True]), 0, 1)),
    )


@case
def lerp(T, log):
    a = t(T, A(18, (2, 3)), rg=True)
    b = t(T, A(19, (3,)), rg=True)
    w = t(T, [0.0, 0.3, 1.2], rg=True)
    out = T.lerp(a, b, 0.25), a.lerp(b, w), T.lerp(a, b, weight=T.tensor(0.75))
    return out, T.autograd.grad(sum(o.sum() for o in out), (a, b, w))


@case
def lerp_errors(T, log):
    a = T.ones(2)
    return (
        E(lambda: T.lerp(a, T.ones(2, dtype=T.float64), 0.5)),
        E(lambda: T.lerp(T.tensor([1, 2]), T.tensor([3, 4]), 0.5)),
        E(lambda: T.lerp(a, a, T.ones(2, dtype=T.float64))),
    )


@case
def addcmul_addcdiv(T, log):
    x = t(T, A(20, (2, 3)), rg=True)
    a = t(T, A(21, (2, 1)), rg=True)
    b = t(T, A(22, (3,)), rg=True)
    out = (
        T.addcmul(x, a, b),
        x.addcmul(a, b, value=-0.5),
        T.addcdiv(x, a, b, value=2),
        x.addcdiv(a, b),
    )
    return out, T.autograd.grad(sum(o.sum() for o in out), (x, a, b))


@case
def addcdiv_int_error(T, log):
    i = T.tensor([1, 2])
    return (
        T.addcmul(i, i, i, value=3),
        E(lambda: T.addcmul(i, i, i, value=0.5)),
        T.addcmul(T.ones(2), i, i, value=0.5),
    )


# ---- fmod / remainder / floor_divide / div ----
@case
def fmod_remainder_float(T, log):
    a = t(T, [-7.5, -3.0, 3.0, 7.5, 0.0, 5.0], "float64", rg=True)
    b = t(T, [2.0, -2.0, -2.0, 2.5, 3.0, -0.0], "float64", rg=True)
    out = T.fmod(a, b), T.remainder(a, b), a.fmod(2), a % -2.0, T.remainder(3.5, b)
    return out, T.autograd.grad(out[0].sum() + out[1].sum(), (a, b))


@case
def fmod_remainder_int(T, log):
    a = T.tensor([-7, -3, 3, 7, 0])
    b = T.tensor([2, -2, -2, 3, 5])
    return (
        T.fmod(a, b),
        T.remainder(a, b),
        a % 3,
        a % -3,
        T.fmod(a, 2.5),
        T.remainder(a, 2.5),
        -7 % T.tensor([2, -2]),
        E(lambda: T.remainder(a, 0)),
        E(lambda: T.fmod(a, T.zeros(5, dtype=T.int64))),
    )


@case
def floor_divide(T, log):
    a = T.tensor([-7, -3, 3, 7])
    f = T.tensor([-7.5, -3.0, 3.0, 7.5])
    return (
        T.floor_divide(a, 2),
        a // -2,
        f // 2,
        T.floor_divide(f, T.tensor([2.0, -2.0, 0.0, -0.0])),
        7 // T.tensor([2, -2]),
        E(lambda: a // 0),
    )


@case
def div_rounding_modes(T, log):
    a = t(T, [-7.0, -3.5, 3.5, 7.0], "float64", rg=True)
    i = T.tensor([-7, -3, 3, 7])
    out = (
        T.div(a, 2),
        a.div(2, rounding_mode="trunc"),
        T.div(a, -2, rounding_mode="floor"),
        i / 2,
        T.div(i, 2, rounding_mode="trunc"),
        T.div(i, -2, rounding_mode="floor"),
        T.true_divide(i, 4),
        T.divide(i, T.tensor(2.0), rounding_mode="floor"),
    )
    return out, T.autograd.grad(out[0].sum() + out[1].sum() + out[2].sum(), a)


@case
def div_errors(T, log):
    i = T.tensor([1, 2])
    return (
        E(lambda: T.div(i, 0, rounding_mode="trunc")),
        E(lambda: T.div(i, 2, rounding_mode="round")),
        T.div(i, 0),
        T.div(T.tensor([-1.0, 0.0, 1.0]), 0),
    )


# ---- pow ----
@case
def pow_float_grad(T, log):
    x = t(T, [0.0, 0.5, 2.0, 3.0], "float64", rg=True)
    e = t(T, [2.0, -1.0, 0.5, 0.0], "float64", rg=True)
    out = x**2, x**-1.5, T.pow(x, e), T.pow(2.0, e), x**0, x**0.5
    return out, T.autograd.grad(sum(o.sum() for o in out[:4]) + out[4].sum(), (x, e))


@case
def pow_negative_base(T, log):
    x = T.tensor([-8.0, -1.0, -0.5])
    return x**2, x**3, x ** (1 / 3), x**-2, T.pow(x, T.tensor([0.5, 2.0, -1.0]))


@case
def pow_int(T, log):
    i = T.tensor([-3, -1, 0, 2, 5])
    return (
        i**2,
        i**0,
        T.pow(i, 3),
        i**2.0,
        i**0.5,
        2 ** i.abs(),
        T.pow(2, T.tensor([0, 3, 10])),
        T.pow(T.tensor([2], dtype=T.int8), 7),
        i ** T.tensor(2),
    )


@case
def pow_int_negative_exponent_error(T, log):
    i = T.tensor([1, 2])
    return (
        E(lambda: i**-1),
        E(lambda: T.pow(i, T.tensor([-1, 2]))),
        E(lambda: T.pow(2, T.tensor([-1]))),
        T.tensor([1, 2]) ** -1.0,
        T.tensor([True, False]) ** 2,
    )


@case
def pow_complex(T, log):
    z = T.tensor([1 + 1j, -2 + 0.5j])
    return z**2, z**0.5, T.pow(z, z), 2**z


@case
def integer_overflow_wraps(T, log):
    i8 = T.tensor([120, -120], dtype=T.int8)
    u8 = T.tensor([250, 3], dtype=T.uint8)
    big = T.tensor([2**62])
    return (
        i8 + 10,
        i8 * 2,
        u8 + 10,
        u8 - 5,
        -u8,
        big * 4,
        T.tensor([-128], dtype=T.int8).abs(),
        i8 + T.tensor(10, dtype=T.int8),
    )


# ---- bitwise ops and shifts ----
@case
def bitwise_ops(T, log):
    a = T.tensor([12, -5, 0, 7])
    b = T.tensor([10, 3, -1, 1])
    return (
        a & b,
        a | b,
        a ^ b,
        ~a,
        T.bitwise_and(a, 6),
        T.bitwise_or(a, b),
        T.bitwise_xor(a, 1),
        T.bitwise_not(T.tensor([1, 2], dtype=T.uint8)),
        ~T.tensor([True, False]),
        T.tensor([True, False]) ^ T.tensor([True, True]),
        T.tensor([True]) & T.tensor([3]),
    )


@case
def shifts(T, log):
    a = T.tensor([1, -8, 255, 3])
    u = T.tensor([1, 128, 255], dtype=T.uint8)
    return (
        a << 2,
        a >> 1,
        T.bitwise_left_shift(a, T.tensor([0, 1, 2, 63])),
        T.bitwise_right_shift(a, 3),
        u << 1,
        u >> 7,
        T.tensor([1], dtype=T.int8) << 7,
    )


@case
def bitwise_errors(T, log):
    f = T.tensor([1.0])
    return (
        E(lambda: f & f),
        E(lambda: ~f),
        E(lambda: T.bitwise_xor(f, T.tensor([1]))),
        E(lambda: f << 1),
    )


# ---- comparisons / isclose / equal ----
@case
def isclose_allclose(T, log):
    a = T.tensor([1.0, 1.00001, float("nan"), float("inf"), 0.0, -float("inf")])
    b = T.tensor([1.0, 1.0, float("nan"), float("inf"), 1e-9, float("inf")])
    return (
        T.isclose(a, b),
        a.isclose(b, equal_nan=True),
        T.isclose(a, b, rtol=0, atol=1e-8),
        T.allclose(a[:2], b[:2]),
        T.allclose(a, b, equal_nan=True),
        a[:2].allclose(b[:2], rtol=1e-7, atol=0),
        T.isclose(T.tensor([1, 2]), T.tensor([1, 3])),
    )


@case
def isclose_errors(T, log):
    return (
        E(lambda: T.isclose(T.ones(2), T.ones(2, dtype=T.float64))),
        E(lambda: T.isclose(T.ones(2), T.ones(2), rtol=-1)),
        E(lambda: T.isclose(T.ones(2), T.ones(3))),
    )


@case
def equal(T, log):
    return (
        T.equal(T.tensor([1, 2]), T.tensor([1, 2])),
        T.equal(T.tensor([1, 2]), T.tensor([1, 3])),
        T.equal(T.tensor([1, 2]), T.tensor([[1, 2]])),
        T.equal(T.tensor([float("nan")]), T.tensor([float("nan")])),
        T.tensor([1.0]).equal(T.tensor([1.0])),
        T.equal(T.zeros(0), T.zeros(0)),
    )


# ---- nan_to_num / sign / copysign ----
@case
def nan_to_num(T, log):
    x = t(T, [float("nan"), float("inf"), -float("inf"), 1.5], rg=True)
    out = (
        T.nan_to_num(x),
        x.nan_to_num(nan=2.0, posinf=9.0),
        T.nan_to_num(x, 0.0, 1.0, -1.0),
        T.nan_to_num(x.double(), neginf=-5.0),
        T.nan_to_num(T.tensor([1, 2])),
    )
    return out, T.autograd.grad(out[1].sum(), x)


@case
def sign_sgn_signbit(T, log):
    x = t(T, [-2.0, -0.0, 0.0, 3.0, float("nan"), -float("inf")], rg=True)
    z = T.tensor([3 + 4j, 0j, -1j])
    out = (
        T.sign(x),
        T.signbit(x),
        T.sgn(x),
        z.sgn(),
        T.sign(T.tensor([-3, 0, 5])),
        T.signbit(T.tensor([-3, 0])),
        T.sign(T.tensor([True, False])),
    )
    return out, T.autograd.grad(out[0].sum(), x), E(lambda: z.sign())


@case
def copysign(T, log):
    a = t(T, [1.0, -2.0, 3.0, 0.0], rg=True)
    b = t(T, [-1.0, 2.0, -0.0, -5.0], rg=True)
    out = T.copysign(a, b), a.copysign(-1), T.copysign(T.tensor([1, 2]), -1.0)
    return out, T.autograd.grad(out[0].sum() + out[1].sum(), (a, b))


@case
def hypot_logaddexp(T, log):
    a = t(T, [3.0, -5.0, 0.0, 1e-3], "float64", rg=True)
    b = t(T, [4.0, 12.0, 2.0, -1e-3], "float64", rg=True)
    out = T.hypot(a, b), T.logaddexp(a, b), T.logaddexp2(a, b), a.hypot(b)
    return out, T.autograd.grad(sum(o.sum() for o in out), (a, b))


@case
def logaddexp_inf(T, log):
    x = T.tensor([float("-inf"), float("inf"), 1000.0, -1000.0])
    y = T.tensor([float("-inf"), float("inf"), 1000.0, float("-inf")])
    return (
        T.logaddexp(x, y),
        T.logaddexp2(x, y),
        E(lambda: T.logaddexp(T.tensor([1]), T.tensor([2]))),
    )


@case
def xlogy(T, log):
    x = t(T, [0.0, 1.0, 2.0, 0.0, float("nan")], "float64", rg=True)
    y = t(T, [0.0, 2.0, float("nan"), float("nan"), 1.0], "float64", rg=True)
    out = T.xlogy(x, y), T.special.xlogy(x, 3.0), T.xlogy(2, y), T.special.xlog1py(x, y)
    return out, T.autograd.grad(out[0].sum() + out[3].sum(), (x, y))


@case
def xlogy_int(T, log):
    return T.xlogy(T.tensor([0, 1, 2]), T.tensor([0, 3, 4])), T.special.xlog1py(T.tensor([1]), 1)


# ---- special functions ----
@case
def erf_family_grad(T, log):
    x = t(T, [-2.0, -0.5, 0.0, 0.3, 1.5], "float64", rg=True)
    out = T.erf(x), T.erfc(x), T.special.erfcx(x), x.erf(), T.special.erf(x)
    return out, T.autograd.grad(sum(o.sum() for o in out), x)


@case
def erfinv(T, log):
    x = t(T, [-0.99, -0.5, 0.0, 0.5, 0.9], "float64", rg=True)
    y = T.erfinv(x)
    edge = T.erfinv(T.tensor([-1.0, 1.0, 1.5]))
    return y, edge, T.autograd.grad(y.sum(), x), T.erfinv(T.tensor([0, 1]))


@case
def digamma_polygamma(T, log):
    x = t(T, [0.5, 1.0, 2.5, 7.0], "float64", rg=True)
    out = T.digamma(x), T.polygamma(1, x), T.polygamma(2, x), x.polygamma(3), T.special.psi(x)
    return out, T.autograd.grad(out[0].sum() + out[1].sum() + out[2].sum(), x)


@case
def digamma_poles(T, log):
    x = T.tensor([0.0, -0.0, -1.0, -2.5])
    return T.digamma(x), T.polygamma(1, x[[0, 3]]), T.lgamma(x), E(lambda: T.polygamma(-1, x))


@case
def lgamma_mvlgamma(T, log):
    x = t(T, [0.5, 1.0, 3.5, 10.0], "float64", rg=True)
    out = T.lgamma(x), x.lgamma(), T.special.gammaln(x), T.mvlgamma(x + 1, 2)
    return out, T.autograd.grad(out[0].sum() + out[3].sum(), x)


@case
def i0_family(T, log):
    x = t(T, [-3.0, -0.5, 0.0, 1.0, 4.0], "float64", rg=True)
    S = T.special
    out = T.i0(x), S.i0e(x), S.i1(x), S.i1e(x), x.i0()
    return out, T.autograd.grad(out[0].sum() + out[1].sum() + out[2].sum() + out[3].sum(), x)


@case
def sinc(T, log):
    x = t(T, [0.0, 0.5, 1.0, -2.5, 1e-9], "float64", rg=True)
    y = T.sinc(x)
    return y, T.special.sinc(x), T.autograd.grad(y.sum(), x), T.sinc(T.tensor([0, 1]))


@case
def logit_eps(T, log):
    x = t(T, [0.0, 0.1, 0.5, 0.9, 1.0], "float64", rg=True)
    out = T.logit(x), T.logit(x, eps=0.2), x.logit(1e-6), T.special.logit(x, 0.05)
    g = T.autograd.grad(out[1].sum() + out[3].sum(), x)
    return out, g, T.autograd.grad(T.logit(x[1:4]).sum(), x)


@case
def expit_sigmoid(T, log):
    x = t(T, [-100.0, -1.0, 0.0, 2.0, 50.0], rg=True)
    out = T.special.expit(x), T.sigmoid(x), x.sigmoid()
    return out, T.autograd.grad(out[0].sum(), x), T.special.expit(T.tensor([0, 1]))


@case
def special_misc(T, log):
    x = t(T, [0.2, 0.5, 1.5, 3.0], "float64")
    S = T.special
    return (
        S.ndtr(x),
        S.ndtri(x / 4),
        S.log_ndtr(-x),
        S.entr(x),
        S.entr(T.tensor([0.0, -1.0])),
        S.expm1(x),
        S.exp2(x),
        S.log1p(x),
        S.round(x * 3),
        S.gammainc(x, x + 1),
        S.gammaincc(x, 2.0),
        S.multigammaln(x + 2, 3),
        S.zeta(x + 2, x),
        S.bessel_j0(x),
        S.bessel_j1(x),
    )


@case
def special_log_softmax(T, log):
    x = t(T, A(23, (2, 4)), rg=True)
    out = T.special.log_softmax(x, 1), T.special.softmax(x, 0), T.special.logsumexp(x, 1)
    return out, T.autograd.grad(sum(o.sum() * (i + 1) for i, o in enumerate(out)), x)


@case
def special_int_inputs(T, log):
    i = T.tensor([1, 2, 3])
    return T.digamma(i), T.lgamma(i), T.erf(i), T.i0(i), T.special.entr(i), T.special.ndtr(i)


# ---- type promotion ----
@case
def promote_types(T, log):
    P = T.promote_types
    return [
        P(T.int8, T.uint8),
        P(T.int32, T.float16),
        P(T.bool, T.int8),
        P(T.float16, T.bfloat16),
        P(T.int64, T.complex64),
        P(T.float64, T.complex64),
        P(T.uint8, T.bool),
        P(T.float32, T.float32),
    ]


@case
def result_type(T, log):
    R = T.result_type
    i8 = T.tensor([1], dtype=T.int8)
    f16 = T.tensor([1.0], dtype=T.float16)
    return [
        R(i8, 1),
        R(i8, 1.5),
        R(i8, 1j),
        R(f16, 1.0),
        R(f16, T.tensor(1.0, dtype=T.float64)),
        R(i8, T.tensor(300)),
        R(T.tensor(True), T.tensor(1)),
        R(T.tensor([True]), 2),
        R(T.tensor(1), T.tensor(1.0)),
        R(1, 2.0),
        R(T.tensor([1], dtype=T.uint8), T.tensor(-1, dtype=T.int8)),
    ]


@case
def can_cast(T, log):
    C = T.can_cast
    return [
        C(T.float64, T.float32),
        C(T.float32, T.int32),
        C(T.int64, T.int8),
        C(T.complex64, T.float64),
        C(T.bool, T.uint8),
        C(T.int8, T.bool),
        C(T.float16, T.complex64),
    ]


@case
def promotion_in_ops(T, log):
    i8 = T.tensor([1, 2], dtype=T.int8)
    u8 = T.tensor([1, 2], dtype=T.uint8)
    b = T.tensor([True, False])
    f16 = T.tensor([1.0, 2.0], dtype=T.float16)
    return (
        (i8 + u8).dtype,
        (i8 + 1000).dtype,
        (i8 * 2.5).dtype,
        (b + b).dtype,
        (b * 1.5).dtype,
        (f16 + T.tensor(1.0, dtype=T.float64)).dtype,
        (f16 + T.tensor([1.0], dtype=T.float64)).dtype,
        (u8 + T.tensor(5)).dtype,
        (i8 + 1j).dtype,
        (T.tensor([1.0]) + T.tensor([1j], dtype=T.complex128)).dtype,
        (T.tensor(2) / T.tensor(3)).dtype,
        (b / b).dtype,
        (T.tensor([1.5], dtype=T.float64) + True).dtype,
    )


@case
def promotion_values(T, log):
    i8 = T.tensor([100, -100], dtype=T.int8)
    return i8 + 100, i8 * 1.5, i8 + T.tensor(100), (i8 > 50.5), i8 == T.tensor([100.0, 1.0])


@case
def inplace_cast_errors(T, log):
    def f1():
        x = T.tensor([1, 2])
        x += 1.5

    def f2():
        x = T.tensor([1.0])
        x.add_(T.tensor([1j]))

    def f3():
        x = T.tensor([True])
        x += 1

    def f4():
        x = T.tensor([1], dtype=T.int8)
        x += T.tensor(1000)
        return x

    def f5():
        x = T.tensor([1.0], dtype=T.float16)
        x *= T.tensor([2.0], dtype=T.float64)
        return x

    return E(f1), E(f2), E(f3), E(f4), E(f5)


@case
def bool_arithmetic(T, log):
    b = T.tensor([True, False, True])
    return (
        b + b,
        b * b,
        b.sum(),
        E(lambda: b - b),
        E(lambda: -b),
        b * 2,
        b & True,
    )


# ---- more edge cases: reductions ----
@case
def reduction_kwarg_forms(T, log):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    return (
        T.tensor([1, 2, 3]).mean(dtype=T.float64),
        T.tensor([1.5, 2.5]).sum(dtype=T.int64),
        T.tensor([True, True]).prod(dtype=T.bool),
        T.tensor([[1, 2], [3, 4]]).sum(1, keepdim=True, dtype=T.int8),
        x.std(1, True, True),
        T.var(x, 0, False),
        T.std(x, False),
        T.std_mean(x, [0], correction=0),
        T.var_mean(x, 1, True, True),
        T.max(x, 1, True),
    )


@case
def reduction_dtype_edges(T, log):
    return (
        T.tensor([1.0, 2.0], dtype=T.float16).mean(),
        T.tensor([1.0, 2.0], dtype=T.bfloat16).var(),
        T.tensor([1.0, 2.0], dtype=T.float16).cumsum(0),
        T.tensor([1, 2], dtype=T.int16).prod().dtype,
        T.tensor([1, 2], dtype=T.int16).cumprod(0).dtype,
        T.tensor([True]).cumsum(0, dtype=T.bool),
        T.logsumexp(T.tensor([1, 2], dtype=T.int8), 0),
        T.logsumexp(T.tensor([True, False]), 0),
        T.logsumexp(T.tensor([1.0, 2.0], dtype=T.float16), 0),
        T.logsumexp(T.tensor([1j, 2.0]), 0),
    )


@case
def reduction_keepdim_none_agree(T, log):
    x = T.ones(2, 3)
    return (
        x.std(dim=None, keepdim=True),
        x.nansum(dim=None, keepdim=True),
        x.nanmean(dim=None, keepdim=True),
        x.norm(dim=None, keepdim=True),
        T.linalg.vector_norm(x, dim=None, keepdim=True),
        x.var_mean(None, keepdim=True),
        x.amax(()),
        x.all(()),
        x.any(dim=()),
    )


@case
def reduction_dim_errors(T, log):
    o = T.ones(2)
    return [
        E(f)
        for f in (
            lambda: o.amax(2),
            lambda: o.amax((0, 0)),
            lambda: o.argmin(-2),
            lambda: o.std(2),
            lambda: o.var((0, 0)),
            lambda: o.logsumexp(2),
            lambda: o.logsumexp((0, 0)),
            lambda: o.nansum(2),
            lambda: o.nanmean(2),
            lambda: o.cumprod(-2),
            lambda: o.cummax(2),
            lambda: o.logcumsumexp(2),
            lambda: o.median(2),
            lambda: o.nanmedian(2),
            lambda: o.mode(2),
            lambda: o.kthvalue(1, 2),
            lambda: o.sort(2),
            lambda: o.argsort(2),
            lambda: o.unique(dim=2),
            lambda: o.count_nonzero(2),
            lambda: o.norm(dim=2),
            lambda: T.linalg.vector_norm(o, dim=(0, 0)),
            lambda: T.linalg.matrix_norm(T.ones(2, 2), dim=(0, 0)),
            lambda: T.quantile(o, 0.5, 2),
            lambda: T.std_mean(o, 2),
            lambda: T.var_mean(o, (0, 0)),
            lambda: o.topk(1, 2),
            lambda: o.min(-3),
            lambda: T.ones(2, 3).sum(dim=(0, 1, 2)),
            lambda: T.tensor(1.0).msort(),
        )
    ]


@case
def dim_none_errors_agree(T, log):
    x = T.ones(2, 3)
    return (
        E(lambda: x.amax(dim=None)),
        E(lambda: x.all(dim=None)),
        E(lambda: x.count_nonzero(dim=None)),
        E(lambda: T.max(x, 1.5)),
    )


@case
def clamp_nan_and_mixed(T, log):
    return (
        T.clamp(T.tensor([1, 5]), T.tensor([2, 2]), T.tensor([3.5, 3.5])),
        T.clamp(T.tensor([1.0, 5.0]), max=T.tensor([float("nan"), 3.0])),
        T.clamp(T.tensor([1.0, 5.0]), min=float("nan")),
        T.argmax(T.tensor([[1.0, float("nan")], [float("nan"), 2.0]]), 1),
        T.argmin(T.tensor([1.0, float("nan"), 0.0])),
        T.maximum(T.tensor([1, 2]), T.tensor([1.5, 0.5])),
        T.maximum(T.tensor([True, False]), T.tensor([False, False])),
        E(lambda: T.maximum(T.tensor([1j]), T.tensor([1j]))),
        E(lambda: T.maximum(T.tensor([1.0]), 2.0)),
        E(lambda: T.max(T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.tensor([1, 2]))),
    )


@case
def clamp_inplace_and_dtypes(T, log):
    a = T.tensor([-1.0, 2.0])
    a.clamp_(0, 1)
    b = T.tensor([-1, 2])
    b.clamp_(0, 1)
    c = T.tensor([-1, 2])
    c.clip_(max=T.tensor([0, 0]))
    return (
        a,
        b,
        c,
        E(lambda: T.tensor([-1, 2]).clamp_(max=T.tensor([0.5, 0.5]))),
        T.clamp(T.tensor([-1, 2], dtype=T.int8), T.tensor(-5), T.tensor(300)),
        T.clamp(T.tensor([1, 2], dtype=T.int8), min=T.tensor([1.5, 1.5], dtype=T.float64)),
        T.clamp(T.tensor([1.0, 2.0], dtype=T.float16), min=T.tensor([1.5, 1.5], dtype=T.float64)),
        T.clamp(T.tensor([1.0, 2.0], dtype=T.float16), 1.5),
        T.clamp_min(T.tensor([1.0, 2.0]), 1.5),
        T.clamp_max(T.tensor([1, 2]), T.tensor(1)),
    )


@case
def inplace_pointwise(T, log):
    x = T.tensor([1.0])
    x.addcmul_(T.tensor([2.0]), T.tensor([3.0]), value=0.5)
    y = T.tensor([1.0])
    y.addcdiv_(T.tensor([2.0]), T.tensor([4.0]), value=-1)
    z = T.tensor([1.0])
    z.lerp_(T.tensor([3.0]), 0.5)
    w = T.tensor([float("nan"), 1.0])
    w.nan_to_num_(nan=-1.0)
    c = T.tensor([1, 2, 3])
    c.cumsum_(0)
    d = T.tensor([1.0, 2.0, 3.0])
    d.cumprod_(0)
    return x, y, z, w, c, d, E(lambda: T.tensor([1.0]).lerp_(T.tensor([3.0]), T.tensor([0.5, 0.5])))


@case
def lerp_addcmul_promotion(T, log):
    return (
        T.lerp(T.tensor([1.0]), T.tensor([3.0, 5.0]), T.tensor([[0.0], [1.0]])),
        T.lerp(T.tensor([1.0], dtype=T.float64), T.tensor([3.0], dtype=T.float64), 2),
        T.addcmul(T.tensor([1.0]), T.tensor([2.0]), T.tensor([3.0], dtype=T.float64)),
        T.addcmul(T.tensor([1]), T.tensor([2.0]), T.tensor([3])),
        T.addcdiv(T.tensor([1]), T.tensor([2.0]), T.tensor([3])),
        E(lambda: T.addcmul(T.tensor([1.0]), T.tensor([2.0, 3.0]), T.tensor([3.0, 4.0, 5.0]))),
        T.addcmul(T.tensor([True]), T.tensor([True]), T.tensor([True])),
        T.addcdiv(T.tensor([1.0]), T.tensor([1.0]), T.tensor([0.0])),
    )


@case
def cumulative_more(T, log):
    return (
        T.tensor([1, 2, 3], dtype=T.int8).cumsum(0, dtype=T.int8),
        T.cumsum(T.tensor([[1, 2], [3, 4]]), dim=-2),
        T.cumprod(T.tensor([[1, 2], [3, 4]]), 1, dtype=T.float64),
        T.cumsum(T.tensor([1 + 1j, 2]), 0),
        T.cumprod(T.tensor([1 + 1j, 2]), 0),
        E(lambda: T.logcumsumexp(T.tensor([1, 2]), 0)),
        T.logcumsumexp(T.tensor([1 + 1j, 2]), 0),
        T.tensor(3.0).cumsum(0),
        T.tensor(3.0).cummax(0),
        T.tensor(3.0).logcumsumexp(0),
        T.tensor([]).cummin(0),
        T.tensor([[1, 2], [0, 5]]).cummin(0),
        T.tensor([True, False, True]).cummax(0),
        E(lambda: T.tensor(1.0).cumsum(1)),
    )


# ---- more edge cases: order statistics ----
@case
def median_mode_ties(T, log):
    return (
        T.tensor([1.0, 2, 2, 3]).median(0),
        T.tensor([2.0, 2, 1, 1]).median(0),
        T.tensor([[2.0, 2, 1, 1], [5, 5, 5, 5]]).median(1),
        T.tensor([3.0, 1, 3, 1, 3]).mode(0),
        T.tensor([1, 1, 2, 2]).mode(),
        T.tensor([float("nan"), float("nan"), 1.0]).mode(),
        T.tensor([]).mode(),
        E(lambda: T.tensor([]).mode(0)),
        T.tensor(3.0).mode(),
        T.tensor([1.0, 1, 0, 0]).kthvalue(2),
        T.tensor([1.0, 1, 0, 0]).kthvalue(3),
        T.tensor([1.0, 2]).kthvalue(1, 0, True),
    )


@case
def order_ties_and_nan(T, log):
    return (
        T.tensor([3.0, 1, 3, 1]).topk(2),
        T.tensor([3.0, 1, 3, 1]).topk(2, largest=False),
        T.tensor([3.0, float("nan"), 3, 1]).topk(2),
        T.tensor([3.0, float("nan"), 3, 1]).topk(2, largest=False),
        T.tensor([3.0, 1, 3, 1]).sort(descending=True),
        T.tensor([3.0, 1, 3, 1]).argsort(),
        T.tensor([3.0, 1, 3, 1]).argmax(),
        T.tensor([[3.0, 1], [3, 1]]).max(0),
        T.tensor([[3.0, 1], [3, 1]]).min(0),
        T.tensor([3.0, 3, 1]).cummax(0),
        T.tensor([1.0, -0.0, 0.0]).max(0),
        T.tensor([-0.0, 0.0]).sort(),
        T.sort(T.tensor([float("nan"), 1.0, -float("inf"), float("nan")]), descending=True),
    )


@case
def topk_sort_dtypes(T, log):
    return (
        T.topk(T.tensor([3, 3, 1, 3]), 2),
        T.topk(T.tensor([3, 3, 1, 3]), 2, largest=False),
        T.topk(T.tensor([True, False, True]), 1),
        T.topk(T.zeros(0), 0),
        E(lambda: T.topk(T.zeros(0), 1)),
        T.topk(T.tensor([[1.0, 2.0], [3.0, 0.0]]), 1, 0, False, False),
        T.sort(T.tensor([[2.0, 1.0], [0.0, 3.0]]), -2),
        T.argsort(T.tensor([[2.0, 1.0], [0.0, 3.0]]), dim=-1, descending=True),
        T.sort(T.tensor([1, 2], dtype=T.uint8), descending=True),
        T.tensor([True, False, True]).sort(),
        T.msort(T.tensor([[3, 1], [2, 5]])),
        T.sort(T.tensor([[3, 1], [2, 5]]), -1, True),
    )


@case
def order_complex_errors(T, log):
    z = T.tensor([1j])
    return (
        E(lambda: T.sort(z)),
        E(lambda: T.topk(z, 1)),
        E(lambda: z.median()),
        E(lambda: T.tensor([True]).median()),
        E(lambda: T.tensor([[1.0, 2]]).topk(1, dim=2)),
        E(lambda: T.unique_consecutive(z)),
        E(lambda: T.unique(z)),
        E(lambda: T.argsort(T.tensor([2.0, 1.0]), stable=True, dim=2)),
    )


@case
def unique_more(T, log):
    return (
        T.unique(T.tensor([3, 1, 2]), sorted=False),
        T.unique(T.tensor([3, 1, 2, 1]), sorted=False, return_inverse=True),
        T.unique(T.tensor([[1, 2], [1, 2]]), dim=0, return_inverse=True),
        E(lambda: T.unique(T.tensor([[1, 2], [1, 2]]), dim=2)),
        T.unique(T.zeros(0, 2), dim=0),
        T.unique_consecutive(T.tensor([[1, 1], [2, 2]]), dim=1, return_inverse=True),
        T.unique_consecutive(T.tensor([1.0, float("nan"), float("nan")])),
        T.unique(T.tensor([[1, 2], [2, 1]]), dim=-1, return_counts=True),
        T.unique(T.tensor([[2, 1], [1, 2]]), dim=-2, return_inverse=True),
        T.unique(T.tensor([1, 2, 2]), return_inverse=True, return_counts=True, dim=0),
        T.unique_consecutive(T.tensor([[1, 2], [1, 2]]), dim=-1),
        T.tensor([5, 5, 1]).unique_consecutive(return_inverse=True),
        T.unique(T.tensor([3.0, -0.0, 0.0, 2.0]), return_inverse=True),
    )


@case
def quantile_more(T, log):
    m = T.tensor([[1.0, 2], [3, 4]])
    return (
        T.quantile(T.tensor([1.0, 2, 3, 4]), T.tensor([0.33]), interpolation="nearest"),
        T.quantile(
            T.arange(1.0, 6), T.tensor([0.125, 0.375, 0.625, 0.875]), interpolation="nearest"
        ),
        T.quantile(T.tensor([1.0, 2, 3, 4]), 0.5, interpolation="nearest"),
        T.quantile(m, 0.5),
        T.quantile(m, 0.5, keepdim=True),
        T.quantile(m, T.tensor([0.5, 0.6]), dim=0, keepdim=True),
        T.quantile(T.tensor([1.0, float("nan")]), 0.5),
        T.nanquantile(T.tensor([[float("nan")] * 2, [1.0, 2]]), 0.5, dim=1, interpolation="lower"),
        T.quantile(T.tensor(3.0), 0.2),
        T.quantile(T.tensor([1.0, 2], dtype=T.float64), 0.5),
        E(lambda: T.quantile(T.tensor([1.0, 2]), -0.1)),
        E(lambda: T.quantile(T.tensor([1.0, 2]), 0.5, dim=2)),
    )


# ---- more edge cases: histograms and searches ----
@case
def histogram_more(T, log):
    return (
        T.histc(T.tensor([1.0, float("inf")]), 2, 0, 3),
        T.histc(T.tensor([]), 3),
        T.histc(T.tensor([]), 3, 0, 1),
        T.histc(T.tensor([5.0]), 3),
        T.histc(T.tensor([0.0, 1.0, 2.0, 3.0]), 3, min=0, max=3),
        T.histc(T.tensor([0.0, 1.0, 2.0, 3.0]), 3, min=2, max=2),
        T.histogram(T.tensor([1.0, 2.0, 1.0]), 3, range=(1.0, 1.0)),
        T.histogram(T.tensor([]), 3),
        T.histogram(T.tensor([5.0]), 2),
        E(lambda: T.histogram(T.tensor([1, 2]), 2)),
        T.histogram(
            T.tensor([1.0, 2.0], dtype=T.float64),
            2,
            weight=T.tensor([1.0, 3.0], dtype=T.float64),
            density=True,
        ),
        T.histogramdd(T.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), bins=[2, 2]),
        T.histogramdd(T.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), bins=2, density=True),
    )


@case
def bincount_more(T, log):
    return (
        T.bincount(T.tensor([0, 2]), weights=T.tensor([True, False])),
        T.bincount(T.tensor([0, 2], dtype=T.int8)),
        T.bincount(T.tensor([0, 2], dtype=T.uint8), minlength=1),
        E(lambda: T.bincount(T.tensor(3))),
        T.tensor([1, 3]).bincount(minlength=0),
        E(lambda: T.bincount(T.tensor([1, 2]), T.tensor([[1.0, 2.0]]))),
    )


@case
def searchsorted_more(T, log):
    return (
        T.searchsorted(T.tensor([1, 2, 3]), T.tensor([2.5])),
        T.searchsorted(T.tensor([1.0, 2, 3]), T.tensor([2])),
        T.searchsorted(T.tensor([1.0, 2, 3], dtype=T.float64), T.tensor([2.0])),
        T.searchsorted(T.tensor([]), T.tensor([1.0])),
        T.searchsorted(T.tensor([1.0, 2.0]), T.tensor([])),
        T.searchsorted(T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.tensor([[2.0], [2.0]]), right=True),
        E(lambda: T.searchsorted(T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.tensor([2.0]))),
        E(lambda: T.searchsorted(T.tensor([1j]), T.tensor([1j]))),
        T.searchsorted(T.tensor([True, True]), T.tensor([False])),
        T.searchsorted(T.tensor([1.0, 2.0]), 1, right=True, out_int32=True),
        T.bucketize(T.tensor(2.0), T.tensor([1.0, 3.0])),
        T.bucketize(2.5, T.tensor([1.0, 3.0]), right=True, out_int32=True),
        E(lambda: T.bucketize(T.tensor([2.0]), T.tensor(1.0))),
        T.bucketize(T.tensor([[1, 5]]), T.tensor([2, 4]), right=True),
    )


@case
def count_all_any_more(T, log):
    return (
        T.count_nonzero(T.zeros(0, 2), 0),
        T.count_nonzero(T.tensor(3.0)),
        T.count_nonzero(T.tensor([1j, 0j])),
        E(lambda: T.count_nonzero(T.ones(2), (0, 0))),
        E(lambda: T.count_nonzero(T.ones(2), 3)),
        T.ones(2, 3).count_nonzero(dim=[1, 0]),
        T.tensor([[True, False]]).all(1, keepdim=True),
        T.tensor([[1j, 0j]]).any(1),
        T.tensor([[1j, 0j]]).all(),
        T.tensor([[1, 0]], dtype=T.int8).any(1),
        T.tensor(0.0).any(0),
        T.zeros(0, 3).all(1),
        T.zeros(2, 0).all(1),
        T.logsumexp(T.zeros(2, 0), 1),
        T.logsumexp(T.tensor(3.0), 0),
        E(lambda: T.logsumexp(T.ones(2))),
    )


# ---- more edge cases: pointwise math ----
@case
def fmod_remainder_edges(T, log):
    return (
        T.fmod(T.tensor([5.0, -5.0]), 0.0),
        T.remainder(T.tensor([5.0, -5.0, 0.0]), 0.0),
        T.remainder(T.tensor([5.0, -5.0]), float("inf")),
        T.fmod(T.tensor([5.0, -5.0]), float("inf")),
        T.remainder(T.tensor([-0.0, 0.0]), 2.0),
        T.remainder(T.tensor([-0.0, 0.0]), -2.0),
        T.fmod(T.tensor([-0.0, 0.0]), -2.0),
        T.remainder(T.tensor([5, -5], dtype=T.int8), T.tensor(3, dtype=T.int8)),
        T.remainder(T.tensor([-128], dtype=T.int8), -1),
        T.fmod(T.tensor([-(2**63)]), -1),
        T.floor_divide(T.tensor([-(2**63)]), -1),
        T.remainder(T.tensor([True, False]), T.tensor([True, True])),
        T.remainder(-1.5, T.tensor([2.0, -2.0])),
        T.fmod(T.tensor([7], dtype=T.uint8), T.tensor([3], dtype=T.uint8)),
    )


@case
def div_floor_edges(T, log):
    return (
        T.floor_divide(T.tensor([7], dtype=T.uint8), 2),
        T.floor_divide(T.tensor([True]), T.tensor([True])),
        T.tensor([7]) // T.tensor(2.0),
        T.tensor([7.0, -7.0, 0.0]) // 0.0,
        T.div(T.tensor([7.0, -7.0, 0.0]), 0.0, rounding_mode="floor"),
        T.div(T.tensor([7.0, -7.0, 0.0]), 0.0, rounding_mode="trunc"),
        T.div(T.tensor([7.0, -7.0]), float("inf"), rounding_mode="floor"),
        T.div(T.tensor([7.5]), -2, rounding_mode=None),
        E(lambda: T.fmod(T.tensor([1j]), 1)),
        E(lambda: T.remainder(T.tensor([1j]), 1)),
        E(lambda: T.floor_divide(T.tensor([1j]), 1)),
        E(lambda: T.div(T.tensor([1j]), 1, rounding_mode="floor")),
    )


@case
def pow_edges(T, log):
    return (
        T.tensor([5.0]) ** T.tensor([2], dtype=T.int64),
        T.tensor([2], dtype=T.int32) ** T.tensor([2.0], dtype=T.float64),
        T.tensor([0.0]) ** -1,
        T.tensor([0.0]) ** -2.5,
        T.tensor([0]) ** 0,
        T.tensor([-2.0]) ** float("inf"),
        T.tensor([1.0]) ** float("nan"),
        T.tensor([float("nan")]) ** 0,
        T.tensor([2]) ** 63,
        T.tensor([3]) ** 40,
        T.tensor([2], dtype=T.uint8) ** 9,
        T.tensor([-1]) ** -1,
        E(lambda: T.tensor([2]) ** -2),
        E(lambda: T.tensor([2]) ** T.tensor(-2)),
        T.pow(T.tensor([2.0, 3.0]), T.tensor([[1], [2]])),
        T.pow(3, T.tensor([2.0])),
        T.pow(3.5, T.tensor([2])),
        T.pow(True, T.tensor([2])),
        T.pow(T.tensor([2]), True),
    )


@case
def float_power_square(T, log):
    return (
        T.float_power(T.tensor([2, 3]), 2),
        T.float_power(T.tensor([2.0]), T.tensor([-1])),
        T.float_power(T.tensor([2j]), 2),
        T.tensor([2]).float_power(0.5),
        E(lambda: T.tensor([2.0]).float_power_(2)),
        T.square(T.tensor([-3, 2])),
        T.square(T.tensor([True])),
    )


@case
def shift_edges(T, log):
    return (
        T.tensor([1, 2]) << T.tensor([64, 65]),
        T.tensor([1, 2]) >> T.tensor([64, 70]),
        T.tensor([-1, -8]) >> T.tensor([64, 70]),
        T.tensor([1, 2]) << -1,
        T.tensor([8, 2]) >> -1,
        T.tensor([1], dtype=T.uint8) << 8,
        T.tensor([1], dtype=T.int32) << 31,
        T.tensor([1], dtype=T.int32) << 32,
        T.tensor([True]) << 1,
        T.bitwise_left_shift(3, T.tensor([1, 2])),
        T.tensor([5]) & True,
        T.tensor([5]) | T.tensor([2], dtype=T.int8),
        T.tensor([5], dtype=T.uint8) ^ T.tensor([3], dtype=T.int8),
        T.bitwise_and(T.tensor([5]), T.tensor(3, dtype=T.uint8)),
        E(lambda: T.tensor([1]) & 1.5),
        E(lambda: T.bitwise_left_shift(T.tensor([1.0]), 1)),
        E(lambda: T.tensor([1]) << 1.5),
    )


@case
def nan_to_num_isclose_more(T, log):
    inf = float("inf")
    nan = float("nan")
    return (
        T.nan_to_num(T.tensor([inf, -inf, nan], dtype=T.float16)),
        T.nan_to_num(T.tensor([inf, -inf, nan], dtype=T.bfloat16)),
        T.nan_to_num(T.tensor([inf, -inf, nan], dtype=T.float64)),
        T.nan_to_num(T.tensor([inf, nan]), posinf=1e300),
        T.nan_to_num(T.tensor([complex(inf, nan)])),
        T.nan_to_num(T.tensor([True]), nan=3.0),
        T.nan_to_num(T.tensor([1, 2], dtype=T.int8), nan=300.0),
        T.isclose(T.tensor([1, 2]), T.tensor([1, 3])),
        E(lambda: T.isclose(T.tensor([1, 2]), T.tensor([1.0, 2.0]))),
        T.isclose(T.tensor([1 + 1j, 1j]), T.tensor([1 + 1j, nan * 1j]), equal_nan=True),
        T.isclose(T.tensor([True, False]), T.tensor([True, True])),
        T.isclose(T.tensor([1, 100]), T.tensor([2, 101]), rtol=0.01, atol=0),
        T.isclose(T.tensor([1.0, 2.0]), T.tensor(1.0)),
        T.allclose(T.tensor([1e-10]), T.tensor([0.0])),
        T.allclose(T.tensor([1, 2]), T.tensor([1, 2])),
        T.allclose(T.tensor([inf]), T.tensor([inf])),
        T.allclose(T.tensor([inf]), T.tensor([-inf])),
    )


@case
def equal_more(T, log):
    return (
        T.equal(T.tensor([1, 2]), T.tensor([1.0, 2.0])),
        T.equal(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0], dtype=T.float64)),
        T.equal(T.tensor([True]), T.tensor([1])),
        T.equal(T.tensor(1.0), T.tensor([1.0])),
        T.equal(T.tensor([-0.0]), T.tensor([0.0])),
    )


@case
def special_values_f64(T, log):
    f = T.float64
    S = T.special
    return (
        S.erfcx(T.tensor([-30.0, -1.0, 0.0, 5.0, 1e5], dtype=f)),
        T.erfinv(T.tensor([-1.0, 1.0, 0.999999, -0.9999999, 2.0, float("nan")], dtype=f)),
        T.digamma(T.tensor([-0.5, -1.5, 1e-8, 100.0, 1e6], dtype=f)),
        T.polygamma(4, T.tensor([0.5, 2.0], dtype=f)),
        T.polygamma(2, T.tensor([-0.5, -1.5], dtype=f)),
        T.lgamma(T.tensor([-0.5, -1.5, -2.5, 1e-8, 1e10, float("inf"), -float("inf")], dtype=f)),
        T.i0(T.tensor([0.0, 10.0, 50.0, 700.0], dtype=f)),
        S.i0e(T.tensor([-700.0, 0.5, 1e4], dtype=f)),
        S.i1(T.tensor([-10.0, 0.5, 30.0], dtype=f)),
        S.i1e(T.tensor([-10.0, 0.5, 1e4], dtype=f)),
        S.expit(T.tensor([-800.0, 800.0], dtype=f)),
        S.ndtri(T.tensor([0.0, 1.0, -0.5, 0.5, 1e-300], dtype=f)),
        S.log_ndtr(T.tensor([-40.0, -1e3, 5.0, 40.0], dtype=f)),
        S.entr(T.tensor([float("inf"), float("nan"), 1e-300], dtype=f)),
        S.gammainc(T.tensor([0.0, 1.0, 2.0], dtype=f), T.tensor([0.0, 0.0, 100.0], dtype=f)),
    )


@case
def special_values_f32(T, log):
    S = T.special
    x = T.tensor([0.5, 5.0], dtype=T.float64)
    return (
        T.erfinv(T.tensor([0.999, -0.5, 0.1])),
        T.digamma(T.tensor([-0.5, -1.5, 1e-8, 100.0, 1e6])),
        T.polygamma(0, T.tensor([0.5, 2.0])),
        T.polygamma(1, T.tensor([1, 2])),
        T.lgamma(T.tensor([-0.5, 100.5, 171.5])),
        T.mvlgamma(T.tensor([2.5, 3.0]), 3),
        E(lambda: T.mvlgamma(T.tensor([0.5, 3.0]), 3)),
        T.i0(T.tensor([0.0, 10.0, 50.0, 100.0])),
        T.sinc(T.tensor([1e-20, 3.0, float("inf"), -float("inf"), float("nan")])),
        T.sinc(T.tensor([0.5 + 0.5j, 0j])),
        T.logit(T.tensor([-0.1, 1.1, 0.3]), eps=-1),
        S.ndtr(T.tensor([-40.0, 0.0, 40.0])),
        S.gammainc(T.tensor([-1.0]), T.tensor([1.0])),
        S.zeta(T.tensor([1.0, 0.5, 2.0]), T.tensor([1.0, 1.0, -1.0])),
        S.zeta(2.0, T.tensor([1.0, 2.0])),
        (S.bessel_y0(x), S.bessel_y1(x), S.modified_bessel_i0(x), S.modified_bessel_k0(x)),
        (S.modified_bessel_k1(x), S.scaled_modified_bessel_k0(x), S.spherical_bessel_j0(x)),
        S.airy_ai(T.tensor([-2.0, 0.5, 5.0], dtype=T.float64)),
    )


@case
def special_polynomials_dtypes(T, log):
    S = T.special
    h = T.float16
    return (
        S.chebyshev_polynomial_t(T.tensor([0.3, 0.7]), 3),
        S.hermite_polynomial_h(T.tensor([0.3, 0.7]), T.tensor([2, 4])),
        S.legendre_polynomial_p(T.tensor([0.3, 0.7]), 3),
        S.laguerre_polynomial_l(T.tensor([0.3, 0.7]), 2),
        S.softmax(T.tensor([1, 2, 3]), 0, dtype=T.float64),
        S.log1p(T.tensor([-1.0, -2.0])),
        S.multigammaln(T.tensor([3.0]), 1),
        (S.sinc(T.tensor([True])), T.erf(T.tensor([True, False])), T.erfinv(T.tensor([True]))),
        (T.digamma(T.tensor([0], dtype=T.int8)), T.lgamma(T.tensor([0, -1]))),
        S.i0e(T.tensor([1], dtype=T.uint8)),
        (T.erf(T.tensor([0.5], dtype=h)), T.erfinv(T.tensor([0.5], dtype=T.bfloat16))),
        (T.lgamma(T.tensor([0.5], dtype=h)), T.digamma(T.tensor([0.5], dtype=h))),
        (T.sinc(T.tensor([0.5], dtype=h)), T.i0(T.tensor([0.5], dtype=h))),
    )


@case
def special_complex_errors(T, log):
    z = T.tensor([1j])
    return (
        E(lambda: T.erf(z)),
        E(lambda: T.erfinv(z)),
        E(lambda: T.lgamma(z)),
        E(lambda: T.digamma(z)),
        E(lambda: T.i0(z)),
        E(lambda: T.special.xlogy(z, z)),
        E(lambda: T.special.entr(z)),
        E(lambda: T.logit(z)),
        T.special.expit(z),
        E(lambda: T.special.ndtri(z)),
    )


# ---- gradients at edges (zeros, ties, infinities) ----
def g1(T, f, vals, dtype="float32"):
    x = t(T, vals, dtype, rg=True)
    return T.autograd.grad(f(x).sum(), x)[0]


@case
def grad_norm_edges(T, log):
    LA = T.linalg
    return (
        g1(T, lambda x: LA.vector_norm(x), [0.0, 0.0, 0.0]),
        g1(T, lambda x: x.norm(p=1), [0.0, 1.0, -2.0]),
        g1(T, lambda x: x.norm(p=float("inf")), [2.0, 1.0, -2.0]),
        g1(T, lambda x: x.norm(p=3), [0.0, 0.0, 0.0]),
        g1(T, lambda x: x.norm(p=0.5), [0.0, 1.0]),
        g1(T, lambda x: LA.matrix_norm(x, 2), [[1.0, 0.0], [0.0, 1.0]]),
        g1(T, lambda x: LA.matrix_norm(x, "nuc"), [[1.0, 2.0], [3.0, 4.0]]),
        g1(T, lambda x: T.cdist(x, x), [[0.0, 1.0], [2.0, 3.0]]),
        g1(T, lambda x: T.cdist(x, x, p=1), [[0.0, 1.0], [2.0, 3.0]]),
        g1(T, lambda x: T.dist(x, x), [0.0, 1.0]),
    )


@case
def grad_order_stat_ties(T, log):
    v = [[1.0, 1.0, 1.0], [2.0, 2.0, 3.0]]
    return (
        g1(T, lambda x: x.median(1).values, [[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0]]),
        g1(T, lambda x: x.kthvalue(2, 1).values, v),
        g1(T, lambda x: x.sort(1).values[:, 1], v),
        g1(T, lambda x: x.topk(2, 1).values, v),
        g1(T, lambda x: x.mode(1).values, [[1.0, 2.0, 1.0], [2.0, 2.0, 3.0]]),
        g1(T, lambda x: T.amax(x, 0), [[1.0, float("nan")], [1.0, 2.0]]),
        g1(T, lambda x: T.fmax(x, T.tensor([float("nan"), 1.0])), [float("nan"), 1.0]),
        g1(T, lambda x: T.cummax(x, 0).values, [1.0, float("nan"), 2.0]),
        g1(T, lambda x: T.quantile(x, 0.5), [1.0, 1.0, 1.0, 2.0]),
        g1(T, lambda x: T.quantile(x, 0.5), [1.0, float("nan"), 2.0]),
    )


@case
def grad_reduction_edges(T, log):
    inf = float("inf")
    return (
        g1(T, lambda x: x.logsumexp(0), [-inf, -inf]),
        g1(T, lambda x: x.logsumexp(0), [inf, 1.0]),
        g1(T, lambda x: x.prod(), [0.0, 2.0, 0.0, 3.0]),
        g1(T, lambda x: x.prod(1), [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]),
        g1(T, lambda x: x.cumprod(0), [2.0, 0.0, 3.0, 0.0, 4.0]),
        g1(T, lambda x: x.cumprod(0), [2.0, 0.0, 3.0, 5.0, 4.0]),
        g1(T, lambda x: T.var_mean(x, 0)[0], [[1.0, 2.0]]),
        g1(T, lambda x: x.mean(), []),
        g1(T, lambda x: x.amax(1), np.zeros((0, 3))),
        g1(T, lambda x: T.logcumsumexp(x, 0), [-inf, 1.0, inf]),
        g1(T, lambda x: x.nansum(), [float("nan"), 1.0]),
    )


@case
def grad_pointwise_edges(T, log):
    return (
        g1(T, lambda x: x.clamp(1.0, 2.0), [1.0, 2.0, 1.5]),
        g1(T, lambda x: x.clamp(2.0, 1.0), [0.0, 1.5, 3.0]),
        g1(T, lambda x: T.clamp(x, T.tensor([1.0, 1.0]), T.tensor([1.0, 0.0])), [1.0, 0.5]),
        g1(T, lambda x: x**2.5, [0.0, -1.0]),
        g1(T, lambda x: x**0.0, [0.0, -1.0]),
        g1(T, lambda x: x**-1.0, [0.0, -1.0]),
        g1(T, lambda x: 2.0**x, [0.0, -1.0]),
        g1(T, lambda x: 0.0**x, [0.0, 1.0, 2.0]),
        g1(T, lambda x: T.pow(x, T.tensor([2.0, 0.5])), [-1.0, -1.0]),
        g1(T, lambda x: T.hypot(x, x), [0.0, 1.0]),
        g1(T, lambda x: T.xlogy(x, x), [0.0, 1.0]),
        g1(T, lambda x: T.xlogy(x, T.zeros(2)), [0.0, 1.0]),
        g1(T, lambda y: T.xlogy(T.zeros(2), y), [0.0, 1.0]),
        g1(T, lambda x: T.sinc(x), [0.0, 1.0]),
        g1(T, lambda x: T.sign(x), [0.0, 1.0]),
        g1(T, lambda x: x.abs(), [0.0, -1.0]),
    )


@case
def grad_pointwise_edges2(T, log):
    nan = float("nan")
    return (
        g1(T, lambda x: T.fmod(x, 2.0), [3.0, -1.0]),
        g1(T, lambda x: T.remainder(x, 2.0), [3.0, -1.0]),
        g1(T, lambda x: T.div(x, 2.0, rounding_mode="floor"), [3.0, -1.0]),
        g1(T, lambda x: T.copysign(x, x), [0.0, -1.0]),
        g1(T, lambda x: T.copysign(T.tensor([1.0, 2.0]), x), [0.0, -1.0]),
        g1(T, lambda x: T.nan_to_num(x), [nan, float("inf")]),
        g1(T, lambda x: T.logaddexp(x, x), [-float("inf"), 1.0]),
        g1(T, lambda x: T.erfinv(x), [1.0, -1.0]),
        g1(T, lambda x: T.logit(x), [0.0, 1.0]),
        g1(T, lambda x: T.logit(x, 0.1), [0.1, 0.9, 0.05]),
        g1(T, lambda x: T.lgamma(x), [0.0, -1.0]),
        g1(T, lambda x: T.digamma(x), [0.0, 1.0]),
        g1(T, lambda x: T.special.i1e(x), [0.0, 1.0]),
        g1(T, lambda x: T.special.i1(x), [0.0, 1.0]),
        g1(T, lambda x: T.special.entr(x), [0.0, 1.0, -1.0]),
        g1(T, lambda x: T.special.ndtri(x), [0.3, 0.9]),
        g1(T, lambda x: T.special.log_ndtr(x), [-10.0, 1.0]),
        g1(T, lambda x: T.special.erfcx(x), [-3.0, 10.0]),
        g1(T, lambda x: T.lerp(x, x, 0.5), [1.0, 2.0]),
        g1(T, lambda x: T.addcdiv(x, x, x), [1.0, 2.0]),
    )


@case
def grad_sgn_complex(T, log):
    z = T.tensor([0j, 1j + 1, -2 + 0.5j], requires_grad=True)
    return T.autograd.grad(T.sgn(z).sum().abs(), z), T.autograd.grad((z * z.conj()).real.sum(), z)


@case
def grad_not_implemented(T, log):
    x = t(T, [3.0, -1.0], rg=True)
    i = T.tensor([1, 2])
    return (
        E(lambda: T.autograd.grad(x.argmax().float(), x)),
        E(lambda: T.floor_divide(x, 2.0).requires_grad),
        E(lambda: x.sign().requires_grad),
        E(lambda: T.bucketize(x, T.tensor([0.0])).requires_grad),
        E(lambda: i.float().requires_grad_().sum().backward()),
    )


# ---- more: norms, complex reductions, promotion, overflow ----
@case
def complex_reduction_grads(T, log):
    def gz(f):
        z = T.tensor([1 + 1j, -2j, 3.0], requires_grad=True)
        return T.autograd.grad(f(z), z)[0]

    return (
        gz(lambda z: z.abs().sum()),
        gz(lambda z: T.linalg.vector_norm(z)),
        gz(lambda z: z.var()),
        gz(lambda z: z.std()),
        gz(lambda z: z.sum().abs()),
        gz(lambda z: z.prod().abs()),
        gz(lambda z: z.cumprod(0).abs().sum()),
        gz(lambda z: z.mean().real),
        gz(lambda z: T.logcumsumexp(z, 0).abs().sum()),
    )


@case
def complex_norms(T, log):
    z = T.tensor([3 + 4j, 1j])
    m = T.tensor([[3 + 4j, 1j], [1.0, 0]])
    LA = T.linalg
    return (
        LA.vector_norm(z, ord=1),
        LA.vector_norm(z, ord=float("inf")),
        LA.matrix_norm(m),
        LA.matrix_norm(m, "nuc"),
        T.norm(z),
        T.dist(T.tensor([1 + 1j]), T.tensor([0j])),
        T.var(T.tensor([1 + 1j, 3.0]), correction=0),
    )


@case
def norm_dtypes_empty(T, log):
    LA = T.linalg
    z = T.zeros(0)
    return (
        LA.vector_norm(T.tensor([1.0, 2.0], dtype=T.float16)),
        LA.vector_norm(T.tensor([1.0, 2.0], dtype=T.bfloat16), 3),
        E(lambda: LA.vector_norm(T.tensor([1.0, 2.0]), dtype=T.complex64)),
        E(lambda: LA.vector_norm(T.tensor([1.0, 2.0], dtype=T.float64), dtype=T.float32)),
        LA.vector_norm(z),
        E(lambda: LA.vector_norm(z, float("inf"))),
        LA.vector_norm(T.zeros(0, 2), float("inf"), dim=1),
        E(lambda: LA.vector_norm(z, -1)),
        LA.vector_norm(z, 0),
        E(lambda: LA.matrix_norm(T.zeros(0, 2), 1)),
        LA.matrix_norm(T.zeros(0, 2)),
    )


@case
def norm_forms(T, log):
    LA = T.linalg
    o = T.ones(2, 3)
    return (
        E(lambda: LA.matrix_norm(T.ones(2, 2), "abc")),
        E(lambda: LA.norm(T.ones(2), "fro")),
        E(lambda: T.norm(T.ones(2), p="nuc")),
        E(lambda: T.norm(T.ones(2, 2), p="nuc")),
        T.norm(T.ones(2, 2, 2), p="fro", dim=(1, 2)),
        T.norm(T.ones(2, 2), p=2, dim=(0, 1)),
        T.norm(T.ones(3, 2), p=1, dim=(0, 1)),
        T.norm(T.tensor([1, 2]).float(), dtype=T.float64),
        E(lambda: T.norm(T.tensor([1, 2]))),
        LA.norm(o, ord=2, dim=(0, 1)),
        LA.norm(o, ord=-2),
        LA.norm(T.ones(2, 3, 4), dim=(0, 2)),
        LA.norm(T.ones(2, 3, 4), ord=3, dim=1),
    )


@case
def cdist_dist_more(T, log):
    a = T.ones(2, 3)
    b = T.zeros(4, 3)
    return (
        T.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
        T.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        T.cdist(T.ones(1, 2, 3), T.zeros(3, 4, 3)).shape,
        T.cdist(a, b, p=0),
        T.cdist(T.ones(0, 3), b),
        T.cdist(a.double(), b.double(), 1.5),
        E(lambda: T.cdist(a, b.double())),
        E(lambda: T.cdist(a.long(), b.long())),
        E(lambda: T.cdist(a, b, compute_mode="x")),
        T.dist(T.ones(2), T.zeros(2), 0.5),
        E(lambda: T.dist(T.ones(2), T.zeros(3))),
        T.dist(T.ones(2, dtype=T.float64), T.zeros(2)),
    )


@case
def sum_dtype_args(T, log):
    return (
        T.sum(T.tensor([[1, 2]]), dtype=T.bool),
        T.tensor([True, True]).sum(dtype=T.float16),
        T.tensor([1, 2], dtype=T.uint8).cumsum(0).dtype,
        T.tensor([1 + 1j, 2]).sum(dtype=T.complex128),
        E(lambda: T.tensor([1.0, 2]).sum(dtype=T.complex64)),
        E(lambda: T.tensor([1.0, 2]).mean(dtype=T.complex64)),
        E(lambda: T.tensor([1.0, 2]).cumsum(0, dtype=T.int32)),
        T.tensor([1.0, 2]).prod(dtype=T.int32),
        T.mean(T.tensor([[1.0, 2.0]]), (1,), True, dtype=T.float64),
        T.nansum(T.tensor([1, 2], dtype=T.int8)),
        T.nansum(T.tensor([1.0, float("nan")]), dtype=T.float64),
        E(lambda: T.nanmean(T.tensor([1.0, float("nan")]), dtype=T.int64)),
        T.nansum(T.tensor([True, True])),
        E(lambda: T.nansum(T.tensor([1j]))),
        T.nanmean(T.tensor([float("nan")], dtype=T.float16)),
    )


@case
def max_dtypes_aminmax(T, log):
    x = t(T, [1.0, 5.0, 5.0, 1.0], rg=True)
    mm = T.aminmax(x)
    return (
        T.amax(T.tensor([1.0, 2.0], dtype=T.float16)),
        T.argmax(T.tensor([1.0, 2.0, float("nan")], dtype=T.float16)),
        T.argmax(T.tensor([[1, 5], [5, 1]], dtype=T.uint8), 1),
        T.max(T.tensor([1.0, 2.0], dtype=T.bfloat16), 0),
        T.aminmax(T.tensor([[1.0, 5.0], [3.0, 0.0]])),
        T.aminmax(T.tensor([[1.0, 5.0], [3.0, 0.0]]), dim=1, keepdim=True),
        E(lambda: T.aminmax(T.zeros(0))),
        T.aminmax(T.tensor([1, float("nan")])),
        type(mm).__name__,
        T.autograd.grad(mm.min + mm.max, x),
    )


@case
def pointwise_promotion_more(T, log):
    return (
        E(lambda: T.hypot(T.tensor([1]), T.tensor([2]))),
        T.hypot(T.tensor([1.0], dtype=T.float16), T.tensor([2.0], dtype=T.float64)),
        E(lambda: T.hypot(T.tensor([1.0]), 2.0)),
        T.logaddexp(T.tensor([1.0]), T.tensor([2.0], dtype=T.float64)),
        T.logaddexp(T.tensor([1.0 + 1j]), T.tensor([2.0 + 0j])),
        T.copysign(T.tensor([1, -2]), T.tensor([-1, 1])),
        T.copysign(T.tensor([True]), -1),
        T.copysign(T.tensor([1.0]), T.tensor([-0.0])),
        T.copysign(T.tensor([float("nan")]), -1.0),
        E(lambda: T.copysign(T.tensor([1j]), 1)),
        T.signbit(T.tensor([1, 0], dtype=T.uint8)),
        T.signbit(T.tensor([True])),
        E(lambda: T.signbit(T.tensor([1j]))),
        (T.sgn(T.tensor([-2, 0, 3])), T.sgn(T.tensor([True, False]))),
        (T.sign(T.tensor([-2, 0, 3], dtype=T.int8)), T.sign(T.tensor([1, 0], dtype=T.uint8))),
        (T.xlogy(2.0, T.tensor([1.0, 3.0])), T.xlogy(T.tensor([1.0, 3.0]), 2)),
        T.xlogy(T.tensor([1, 3]), 2),
        T.xlogy(T.tensor([1.0, 3.0], dtype=T.float16), T.tensor([1.0, 3.0], dtype=T.float64)),
        T.special.xlog1py(2, T.tensor([1, 3])),
        T.special.xlogy(T.tensor(0.0), float("nan")),
    )


@case
def result_type_more(T, log):
    R = T.result_type
    i8 = T.int8
    return [
        E(lambda: R(1, 2)),
        R(T.tensor([1]), T.tensor([1.0], dtype=T.float16)),
        R(2.5, T.tensor([1], dtype=i8)),
        R(True, T.tensor([1], dtype=T.uint8)),
        R(T.tensor(1.0), 1),
        R(T.tensor(1, dtype=i8), T.tensor(1.5, dtype=T.float16)),
        R(T.tensor([1, 2], dtype=T.int32), T.tensor(1.5, dtype=T.float64)),
        R(T.tensor([True]), T.tensor(1.5, dtype=T.float64)),
        R(T.tensor([1.0], dtype=T.bfloat16), T.tensor([1.0], dtype=T.float16)),
        R(T.tensor([1j]), 2.0),
        R(T.tensor([1j], dtype=T.complex128), T.tensor([1.0])),
        R(T.tensor([1.0], dtype=T.float64), T.tensor(1j)),
        E(lambda: T.can_cast(T.float32, 1)),
        T.can_cast(T.int32, T.int8),
        T.can_cast(T.uint8, T.int8),
        T.can_cast(T.float32, T.complex128),
        T.can_cast(T.complex128, T.complex64),
        T.can_cast(T.bool, T.float16),
        T.can_cast(T.bfloat16, T.float16),
        T.promote_types(T.uint8, T.int16),
        T.promote_types(T.bfloat16, T.int64),
        T.promote_types(T.bool, T.bool),
        T.promote_types(T.complex64, T.float64),
        T.promote_types(T.complex64, T.bfloat16),
    ]


@case
def integer_overflow_more(T, log):
    i32 = T.int32
    i8 = T.int8
    return (
        T.tensor([1, 2], dtype=i32) + T.tensor(2**40),
        T.tensor([1, 2], dtype=i32) + 2**40,
        E(lambda: T.tensor([1, 2], dtype=i32) + 2**70),
        E(lambda: T.tensor([1.0, 2.0]) + 2**70),
        T.tensor([1, 2], dtype=i8) * T.tensor([2.5], dtype=T.float16),
        T.tensor(5, dtype=i8) + T.tensor(5, dtype=T.int16),
        T.tensor(5, dtype=T.uint8) - 10,
        T.tensor([5], dtype=T.uint8) - T.tensor(10),
        T.tensor([5], dtype=T.uint8) * -1,
        T.tensor([2**31 - 1], dtype=i32) + 1,
        T.tensor([2**63 - 1]) + 1,
        T.tensor([2**62, 2**62]).sum(),
        T.tensor([100, 100], dtype=i8).prod(),
        T.tensor([100, 100], dtype=i8).cumprod(0, dtype=i8),
        T.tensor([2**40, 2**40]).prod(),
        T.tensor([-(2**63)]).abs(),
        -T.tensor([-(2**63)]),
        T.tensor([-128], dtype=i8) // -1,
        T.tensor([7], dtype=T.int16) << 14,
        T.tensor([200], dtype=T.uint8).to(i8),
    )


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_reductions_math_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
