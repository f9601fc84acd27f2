"""Probes of torch.distributions (jitgrad.distributions): constructors (probs/logits,
scale_tril/covariance/precision), batch/event shapes, expand, log_prob/cdf/icdf/entropy and the
moments, gradients through them, sample/rsample shapes and dtypes, enumerate_support,
transforms, kl_divergence, constraints and the validation errors: each case runs the same code
on torch and on jitgrad and compares values, dtypes, shapes, gradients, warnings and the error
type/text. Only cases where jitgrad agrees with torch are kept."""

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
        a = np.asarray(x.detach().numpy())
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


_RTOL = {"float64": (1e-6, 1e-9), "float32": (1e-5, 1e-6)}


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


def _txt(s):
    return str(s).replace("jitgrad", "torch")


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, _txt(e))


def _wtext(m):
    # torch's C++ warnings end with the path of its own source file
    return re.sub(r" \(Triggered internally at .*\)$", "", str(m)).replace("jitgrad", "torch")


def _run(fn, T):
    log = []
    T.manual_seed(0)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, _wtext(x.message)) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, _txt(e), _norm(log))


# ---- inputs: the same numbers for both libraries ----
def A(seed, shape, lo=-2.0, hi=2.0):  # noqa: N802
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def t(T, arr, dtype="float32", rg=False):
    return T.tensor(np.asarray(arr).tolist(), dtype=getattr(T, dtype), requires_grad=rg)


_PROPS = ("mean", "mode", "variance", "stddev")


def summ(d, *vals, props=_PROPS, ent=True):
    """Shapes, moments, entropy and log_prob/cdf/icdf at the given values (each guarded)."""
    out = [d.batch_shape, d.event_shape, type(d).__name__]
    for p in props:
        out.append(E(lambda p=p: getattr(d, p)))
    if ent:
        out.append(E(d.entropy))
    for v in vals:
        out.append(E(lambda v=v: d.log_prob(v)))
    return out


def cdfs(d, x, q):
    return E(lambda: d.cdf(x)), E(lambda: d.icdf(q))


def smp(d, shape=()):
    """Shape, dtype and requires_grad of sample and (when supported) rsample."""
    s = d.sample(shape)
    out = [d.has_rsample, tuple(s.shape), str(s.dtype).split(".")[-1], s.requires_grad]
    if d.has_rsample:
        r = d.rsample(shape)
        out += [tuple(r.shape), str(r.dtype).split(".")[-1], r.requires_grad]
    return out


def D(T):  # noqa: N802
    return T.distributions


# ---- Normal ----
@case
def normal_basic(T, log):
    d = D(T).Normal(t(T, A(0, 3)), t(T, A(1, 3, 0.5, 2)))
    x = t(T, A(2, 3))
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.5, 0.9]))


@case
def normal_float_args(T, log):
    d = D(T).Normal(0.0, 1.0)
    return summ(d, T.tensor(0.5), T.tensor([0.0, 1.0])), d.loc, d.scale


@case
def normal_int_python_args(T, log):
    d = D(T).Normal(1, 2)
    return d.loc, d.scale, d.batch_shape, d.log_prob(T.tensor(1.0))


@case
def normal_broadcast(T, log):
    d = D(T).Normal(t(T, A(0, (3, 1))), t(T, A(1, 2, 0.5, 2)))
    return summ(d, t(T, A(3, (4, 3, 2))), t(T, [0.5]))


@case
def normal_float64(T, log):
    d = D(T).Normal(t(T, A(0, 4), "float64"), t(T, A(1, 4, 0.5, 2), "float64"))
    x = t(T, A(2, 4), "float64")
    return summ(d, x), cdfs(d, x, t(T, [0.01, 0.3, 0.7, 0.99], "float64"))


@case
def normal_mixed_dtype(T, log):
    d = D(T).Normal(t(T, [0.0, 1.0], "float64"), 1.0)
    return d.loc, d.scale, d.log_prob(t(T, [0.5, 0.5]))


@case
def normal_grads(T, log):
    loc = t(T, A(0, 3), "float64", rg=True)
    sc = t(T, A(1, 3, 0.5, 2), "float64", rg=True)
    d = D(T).Normal(loc, sc)
    x = t(T, A(2, 3), "float64", rg=True)
    y = (d.log_prob(x) * t(T, [1.0, 2.0, 3.0], "float64")).sum() + d.entropy().sum()
    y = y + d.cdf(x).sum() + d.icdf(t(T, [0.2, 0.4, 0.9], "float64")).sum()
    return T.autograd.grad(y, (loc, sc, x))


@case
def normal_samples(T, log):
    d = D(T).Normal(t(T, A(0, (2, 3)), rg=True), 1.0)
    return smp(d), smp(d, (4,)), smp(d, T.Size([2, 1]))


@case
def normal_rsample_grad_shape(T, log):
    loc = t(T, A(0, 3), rg=True)
    sc = t(T, A(1, 3, 0.5, 2), rg=True)
    r = D(T).Normal(loc, sc).rsample((5,))
    g = T.autograd.grad(r.sum(), (loc, sc))
    return g[0], g[1].shape, r.grad_fn is not None


@case
def normal_sample_no_grad(T, log):
    loc = t(T, A(0, 3), rg=True)
    s = D(T).Normal(loc, 1.0).sample()
    return s.requires_grad, s.grad_fn is None


@case
def normal_bad_scale(T, log):
    return E(lambda: D(T).Normal(0.0, -1.0)), E(lambda: D(T).Normal(t(T, [0.0]), t(T, [0.0])))


@case
def normal_bad_loc_nan(T, log):
    return E(lambda: D(T).Normal(t(T, [float("nan")]), t(T, [1.0])))


@case
def normal_validate_false(T, log):
    d = D(T).Normal(0.0, -1.0, validate_args=False)
    return d.scale, d.log_prob(T.tensor(0.0)), d._validate_args


@case
def normal_log_prob_not_tensor(T, log):
    return E(lambda: D(T).Normal(0.0, 1.0).log_prob(0.5))


@case
def normal_log_prob_bad_shape(T, log):
    d = D(T).Normal(t(T, A(0, 3)), 1.0)
    return E(lambda: d.log_prob(t(T, A(1, 2))))


@case
def normal_log_prob_broadcast_sample(T, log):
    d = D(T).Normal(t(T, A(0, 3)), 1.0)
    return d.log_prob(t(T, A(1, (2, 1)))), d.log_prob(t(T, A(1, (5, 2, 3))))


@case
def normal_icdf_bounds(T, log):
    d = D(T).Normal(0.0, 1.0)
    return d.icdf(t(T, [0.0, 1.0, 0.5])), d.cdf(t(T, [-float("inf"), float("inf")]))


@case
def normal_expand(T, log):
    d = D(T).Normal(t(T, A(0, 3)), t(T, A(1, 3, 0.5, 2)))
    e = d.expand([2, 3])
    e2 = d.expand(T.Size([4, 1, 3]))
    return summ(e, t(T, A(2, 3))), e2.batch_shape, e2.mean.shape, e._validate_args


@case
def normal_expand_bad(T, log):
    d = D(T).Normal(t(T, A(0, 3)), 1.0)
    return E(lambda: d.expand([2]).mean)


@case
def normal_repr(T, log):
    return (
        _txt(D(T).Normal(0.0, 1.0)),
        _txt(D(T).Normal(t(T, [0.0, 1.0]), 1.0)),
        _txt(D(T).Bernoulli(probs=t(T, [0.5]))),
    )


@case
def normal_constraints(T, log):
    N = D(T).Normal
    return (
        sorted(N.arg_constraints),
        repr(N.arg_constraints["scale"]),
        repr(N.support),
        N.has_rsample,
        N.has_enumerate_support,
    )


@case
def normal_support_error(T, log):
    d = D(T).Normal(0.0, 1.0)
    return E(lambda: d.log_prob(t(T, [float("nan")])))


@case
def normal_zero_d_and_empty(T, log):
    d = D(T).Normal(T.tensor(0.5), T.tensor(2.0))
    e = D(T).Normal(T.zeros(0), T.ones(0))
    return summ(d, T.tensor(1.0)), summ(e, T.zeros(0)), e.sample((2,)).shape


@case
def normal_perplexity(T, log):
    d = D(T).Normal(t(T, A(0, 3)), t(T, A(1, 3, 0.5, 2)))
    return d.perplexity()


# ---- Bernoulli ----
@case
def bernoulli_probs(T, log):
    d = D(T).Bernoulli(probs=t(T, [0.1, 0.5, 0.9]))
    return summ(d, t(T, [0.0, 1.0, 1.0]), t(T, [1.0])), d.logits, d.param_shape


@case
def bernoulli_logits(T, log):
    d = D(T).Bernoulli(logits=t(T, A(0, (2, 3)), "float64"))
    return summ(d, t(T, [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], "float64")), d.probs


@case
def bernoulli_positional(T, log):
    d = D(T).Bernoulli(t(T, [0.3]))
    return d.probs, d.logits, d.batch_shape


@case
def bernoulli_float_prob(T, log):
    d = D(T).Bernoulli(0.3)
    return d.probs, d.batch_shape, d.sample((2,)).shape, d.sample((2,)).dtype


@case
def bernoulli_both_none(T, log):
    B = D(T).Bernoulli
    return E(lambda: B()), E(lambda: B(probs=t(T, [0.5]), logits=t(T, [0.0])))


@case
def bernoulli_bad_probs(T, log):
    B = D(T).Bernoulli
    return E(lambda: B(probs=t(T, [1.5]))), E(lambda: B(probs=t(T, [-0.1, 0.5])))


@case
def bernoulli_bad_value(T, log):
    d = D(T).Bernoulli(probs=t(T, [0.5]))
    return E(lambda: d.log_prob(t(T, [0.5])))


@case
def bernoulli_enumerate(T, log):
    d = D(T).Bernoulli(probs=t(T, [[0.1, 0.5, 0.9]]))
    return d.enumerate_support(), d.enumerate_support(expand=False), d.support.event_dim


@case
def bernoulli_grads(T, log):
    p = t(T, [0.2, 0.7], "float64", rg=True)
    lg = t(T, [-1.0, 2.0], "float64", rg=True)
    v = t(T, [1.0, 0.0], "float64")
    y = D(T).Bernoulli(probs=p).log_prob(v).sum() + D(T).Bernoulli(probs=p).entropy().sum()
    z = D(T).Bernoulli(logits=lg).log_prob(v).sum() + D(T).Bernoulli(logits=lg).entropy().sum()
    return T.autograd.grad(y, p), T.autograd.grad(z, lg)


@case
def bernoulli_samples(T, log):
    d = D(T).Bernoulli(logits=t(T, A(0, 3), rg=True))
    s = d.sample((2,))
    return smp(d, (2,)), bool(((s == 0) | (s == 1)).all())


@case
def bernoulli_probs_01(T, log):
    d = D(T).Bernoulli(probs=t(T, [0.0, 1.0]))
    return d.logits, d.log_prob(t(T, [0.0, 1.0])), d.entropy()


@case
def bernoulli_expand(T, log):
    d = D(T).Bernoulli(logits=t(T, [0.5])).expand([3])
    return d.batch_shape, d.logits, d.enumerate_support().shape


# ---- Categorical ----
@case
def categorical_probs(T, log):
    d = D(T).Categorical(probs=t(T, [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]]))
    out = summ(d, t(T, [0, 3], "int64"), t(T, [[1], [2]], "int64"))
    return out, d.probs, d.logits, d.param_shape, d._num_events


@case
def categorical_logits(T, log):
    d = D(T).Categorical(logits=t(T, A(0, (3, 5)), "float64"))
    return summ(d, t(T, [0, 1, 4], "int64")), d.probs, d.logits


@case
def categorical_1d(T, log):
    d = D(T).Categorical(t(T, [0.2, 0.3, 0.5]))
    return summ(d, t(T, 2, "int64"), t(T, [0, 1, 2, 2], "int64")), smp(d, (3,))


@case
def categorical_float_value(T, log):
    d = D(T).Categorical(t(T, [0.2, 0.3, 0.5]))
    return E(lambda: d.log_prob(t(T, [1.0, 2.0])))


@case
def categorical_bad_value(T, log):
    d = D(T).Categorical(t(T, [0.2, 0.3, 0.5]))
    return E(lambda: d.log_prob(t(T, [3], "int64"))), E(lambda: d.log_prob(t(T, [-1], "int64")))


@case
def categorical_0d(T, log):
    C = D(T).Categorical
    return E(lambda: C(probs=T.tensor(0.5))), E(lambda: C(logits=T.tensor(0.5)))


@case
def categorical_neg_probs(T, log):
    return E(lambda: D(T).Categorical(probs=t(T, [0.5, -0.1])))


@case
def categorical_enumerate(T, log):
    d = D(T).Categorical(logits=t(T, A(0, (2, 3))))
    return d.enumerate_support(), d.enumerate_support(False), d.support.upper_bound


@case
def categorical_grads(T, log):
    lg = t(T, A(0, (2, 4)), "float64", rg=True)
    p = t(T, A(1, (2, 4), 0.1, 1.0), "float64", rg=True)
    v = t(T, [1, 3], "int64")
    a = D(T).Categorical(logits=lg)
    b = D(T).Categorical(probs=p)
    y = (a.log_prob(v) * 2).sum() + a.entropy().sum()
    z = b.log_prob(v).sum() + b.entropy().sum() + b.probs[0, 0]
    return T.autograd.grad(y, lg), T.autograd.grad(z, p)


@case
def categorical_samples(T, log):
    d = D(T).Categorical(logits=t(T, A(0, (2, 3))))
    s = d.sample((4,))
    return smp(d, (4,)), bool(((s >= 0) & (s < 3)).all())


@case
def categorical_expand(T, log):
    d = D(T).Categorical(logits=t(T, A(0, 3))).expand([2, 2])
    return d.batch_shape, d.logits.shape, d.probs.shape, d.log_prob(t(T, [0, 2], "int64"))


@case
def categorical_logits_inf(T, log):
    d = D(T).Categorical(logits=t(T, [0.0, float("-inf"), 1.0]))
    return d.probs, d.entropy(), d.log_prob(t(T, [1], "int64"))


# ---- OneHotCategorical ----
@case
def onehot_basic(T, log):
    d = D(T).OneHotCategorical(probs=t(T, [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]))
    v = t(T, [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    return summ(d, v), d.probs, d.logits, smp(d, (2,))


@case
def onehot_logits_enumerate(T, log):
    d = D(T).OneHotCategorical(logits=t(T, A(0, (2, 3))))
    return d.enumerate_support(), d.enumerate_support(expand=False), d.param_shape


@case
def onehot_bad_value(T, log):
    d = D(T).OneHotCategorical(probs=t(T, [0.1, 0.2, 0.7]))
    return E(lambda: d.log_prob(t(T, [1.0, 1.0, 0.0]))), E(lambda: d.log_prob(t(T, [0.0, 2.0])))


@case
def onehot_grad(T, log):
    lg = t(T, A(0, (2, 3)), "float64", rg=True)
    d = D(T).OneHotCategorical(logits=lg)
    v = t(T, [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], "float64")
    return T.autograd.grad(d.log_prob(v).sum() + d.entropy().sum(), lg)


@case
def onehot_straight_through(T, log):
    p = t(T, [0.2, 0.3, 0.5], rg=True)
    d = D(T).OneHotCategoricalStraightThrough(probs=p)
    r = d.rsample((2,))
    g = T.autograd.grad((r * t(T, [1.0, 2.0, 3.0])).sum(), p)
    return d.has_rsample, r.shape, r.dtype, r.requires_grad, g[0].shape


# ---- Beta / Gamma / Dirichlet ----
@case
def beta_basic(T, log):
    d = D(T).Beta(t(T, [0.5, 2.0, 3.0]), t(T, [0.5, 1.5, 4.0]))
    return summ(d, t(T, [0.1, 0.5, 0.9])), smp(d, (2,)), d.concentration1, d.concentration0


@case
def beta_float64_grad(T, log):
    a = t(T, [0.7, 2.0, 3.0], "float64", rg=True)
    b = t(T, [1.5, 1.5, 4.0], "float64", rg=True)
    d = D(T).Beta(a, b)
    y = d.log_prob(t(T, [0.2, 0.5, 0.7], "float64")).sum() + d.entropy().sum() + d.mean.sum()
    return T.autograd.grad(y + d.variance.sum(), (a, b))


@case
def beta_float_args(T, log):
    d = D(T).Beta(2.0, 3.0)
    return summ(d, T.tensor(0.25)), d.batch_shape


@case
def beta_bad(T, log):
    B = D(T).Beta
    return (
        E(lambda: B(t(T, [0.0]), t(T, [1.0]))),
        E(lambda: B(t(T, [2.0]), t(T, [1.0])).log_prob(t(T, [1.5]))),
    )


@case
def beta_rsample_grad(T, log):
    a = t(T, [2.0, 3.0], rg=True)
    r = D(T).Beta(a, t(T, [1.0, 2.0])).rsample((3,))
    g = T.autograd.grad(r.sum(), a)[0]
    return r.shape, r.dtype, r.requires_grad, g.shape, g.dtype


@case
def gamma_basic(T, log):
    d = D(T).Gamma(t(T, [0.5, 1.0, 3.0]), t(T, [2.0, 1.0, 0.5]))
    x = t(T, [0.3, 1.0, 4.0])
    return summ(d, x), E(lambda: d.cdf(x)), smp(d, (2,))


@case
def gamma_grad(T, log):
    c = t(T, [0.5, 1.0, 3.0], "float64", rg=True)
    r = t(T, [2.0, 1.0, 0.5], "float64", rg=True)
    d = D(T).Gamma(c, r)
    x = t(T, [0.3, 1.0, 4.0], "float64", rg=True)
    y = d.log_prob(x).sum() + d.entropy().sum() + d.mean.sum() + d.variance.sum()
    return T.autograd.grad(y, (c, r, x))


@case
def gamma_cdf_grad(T, log):
    r = t(T, [2.0, 1.0], "float64", rg=True)
    x = t(T, [0.3, 1.0], "float64", rg=True)
    y = D(T).Gamma(t(T, [1.5, 2.5], "float64"), r).cdf(x).sum()
    return T.autograd.grad(y, (r, x))


@case
def gamma_bad(T, log):
    G = D(T).Gamma
    return (
        E(lambda: G(t(T, [-1.0]), t(T, [1.0]))),
        E(lambda: G(t(T, [1.0]), t(T, [0.0]))),
        E(lambda: G(t(T, [1.0]), t(T, [1.0])).log_prob(t(T, [-1.0]))),
    )


@case
def gamma_zero_value(T, log):
    d = D(T).Gamma(t(T, [1.0, 2.0, 0.5]), t(T, [1.0, 1.0, 1.0]))
    return d.log_prob(t(T, [0.0, 0.0, 0.0]))


@case
def dirichlet_basic(T, log):
    d = D(T).Dirichlet(t(T, [[0.5, 1.0, 2.0], [3.0, 3.0, 3.0]]))
    v = t(T, [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    return summ(d, v), smp(d, (4,))


@case
def dirichlet_grad(T, log):
    c = t(T, [1.5, 2.0, 2.5, 0.8], "float64", rg=True)
    d = D(T).Dirichlet(c)
    v = t(T, [0.1, 0.2, 0.3, 0.4], "float64")
    y = d.log_prob(v) + d.entropy() + d.variance.sum() + (d.mean * d.mean).sum()
    return T.autograd.grad(y, c)


@case
def dirichlet_bad(T, log):
    Di = D(T).Dirichlet
    return (
        E(lambda: Di(T.tensor(1.0))),
        E(lambda: Di(t(T, [1.0, -1.0]))),
        E(lambda: Di(t(T, [1.0, 1.0])).log_prob(t(T, [0.3, 0.3]))),
    )


@case
def dirichlet_rsample_grad(T, log):
    c = t(T, [1.5, 2.0, 2.5], rg=True)
    r = D(T).Dirichlet(c).rsample((2,))
    g = T.autograd.grad((r * t(T, [1.0, 2.0, 3.0])).sum(), c)[0]
    return r.shape, r.requires_grad, g.shape, bool(T.allclose(r.sum(-1), T.ones(2)))


# ---- Exponential / Laplace / Uniform ----
@case
def exponential_basic(T, log):
    d = D(T).Exponential(t(T, [0.5, 1.0, 2.0]))
    x = t(T, [0.1, 1.0, 3.0])
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.5, 0.9])), smp(d, (2,))


@case
def exponential_grad(T, log):
    r = t(T, [0.5, 1.0, 2.0], "float64", rg=True)
    d = D(T).Exponential(r)
    x = t(T, [0.1, 1.0, 3.0], "float64", rg=True)
    y = d.log_prob(x).sum() + d.entropy().sum() + d.cdf(x).sum()
    y = y + d.icdf(t(T, [0.3, 0.6, 0.9], "float64")).sum()
    return T.autograd.grad(y, (r, x))


@case
def exponential_bad(T, log):
    Ex = D(T).Exponential
    return E(lambda: Ex(t(T, [0.0]))), E(lambda: Ex(t(T, [1.0])).log_prob(t(T, [-0.5])))


@case
def laplace_basic(T, log):
    d = D(T).Laplace(t(T, A(0, 3)), t(T, A(1, 3, 0.5, 2)))
    x = t(T, A(2, 3))
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.5, 0.9])), smp(d, (2,))


@case
def laplace_grad(T, log):
    loc = t(T, A(0, 3), "float64", rg=True)
    sc = t(T, A(1, 3, 0.5, 2), "float64", rg=True)
    d = D(T).Laplace(loc, sc)
    x = t(T, A(2, 3), "float64")
    y = d.log_prob(x).sum() + d.entropy().sum() + d.cdf(x).sum()
    y = y + d.icdf(t(T, [0.3, 0.6, 0.9], "float64")).sum()
    return T.autograd.grad(y, (loc, sc))


@case
def uniform_basic(T, log):
    d = D(T).Uniform(t(T, [0.0, -1.0]), t(T, [1.0, 3.0]))
    x = t(T, [0.5, 2.0])
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.5])), smp(d, (3,)), d.low, d.high


@case
def uniform_grad(T, log):
    lo = t(T, [0.0, -1.0], "float64", rg=True)
    hi = t(T, [1.0, 3.0], "float64", rg=True)
    d = D(T).Uniform(lo, hi)
    x = t(T, [0.5, 2.0], "float64")
    y = d.log_prob(x).sum() + d.entropy().sum() + d.cdf(x).sum()
    y = y + d.icdf(t(T, [0.3, 0.6], "float64")).sum() + d.variance.sum()
    return T.autograd.grad(y, (lo, hi))


@case
def uniform_bad(T, log):
    U = D(T).Uniform
    return (
        E(lambda: U(t(T, [1.0]), t(T, [1.0]))),
        E(lambda: U(t(T, [2.0]), t(T, [1.0]))),
        E(lambda: U(0.0, 1.0).log_prob(T.tensor(1.5))),
        E(lambda: U(0.0, 1.0).log_prob(T.tensor(1.0))),
    )


@case
def uniform_no_validate(T, log):
    d = D(T).Uniform(0.0, 1.0, validate_args=False)
    x = t(T, [-0.5, 0.0, 0.5, 1.0, 1.5])
    return d.log_prob(x), d.cdf(x)


@case
def uniform_support(T, log):
    d = D(T).Uniform(t(T, [0.0, 1.0]), t(T, [1.0, 2.0]))
    s = d.support
    return repr(type(s).__name__), s.check(t(T, [0.5, 0.5])), s.lower_bound, s.upper_bound


# ---- Poisson / Binomial / Multinomial ----
@case
def poisson_basic(T, log):
    d = D(T).Poisson(t(T, [0.5, 1.0, 4.0]))
    return summ(d, t(T, [0.0, 1.0, 5.0]), ent=False), smp(d, (2,)), E(d.entropy)


@case
def poisson_grad(T, log):
    r = t(T, [0.5, 1.0, 4.0], "float64", rg=True)
    y = D(T).Poisson(r).log_prob(t(T, [0.0, 1.0, 5.0], "float64")).sum()
    return T.autograd.grad(y, r)


@case
def poisson_bad(T, log):
    P = D(T).Poisson
    return (
        E(lambda: P(t(T, [-1.0]))),
        E(lambda: P(t(T, [1.0])).log_prob(t(T, [0.5]))),
        E(lambda: P(t(T, [1.0])).log_prob(t(T, [-1.0]))),
    )


@case
def poisson_zero_rate(T, log):
    d = D(T).Poisson(t(T, [0.0, 0.0]))
    return d.log_prob(t(T, [0.0, 2.0])), d.mean, d.mode


@case
def binomial_probs(T, log):
    d = D(T).Binomial(5, probs=t(T, [0.1, 0.5, 0.9]))
    out = summ(d, t(T, [0.0, 2.0, 5.0]))
    return out, d.logits, d.total_count, smp(d, (2,)), d.support.upper_bound


@case
def binomial_logits_tensor_count(T, log):
    d = D(T).Binomial(t(T, [3.0, 10.0]), logits=t(T, [0.3, -1.2], "float64"))
    return summ(d, t(T, [1.0, 7.0], "float64")), d.probs, d.total_count


@case
def binomial_enumerate(T, log):
    d = D(T).Binomial(3, probs=t(T, [0.2, 0.8]))
    return d.enumerate_support(), d.enumerate_support(expand=False)


@case
def binomial_enumerate_nonhomog(T, log):
    d = D(T).Binomial(t(T, [2.0, 3.0]), probs=t(T, [0.2, 0.8]))
    return E(d.enumerate_support)


@case
def binomial_grad(T, log):
    p = t(T, [0.2, 0.6], "float64", rg=True)
    lg = t(T, [0.2, -0.6], "float64", rg=True)
    v = t(T, [1.0, 3.0], "float64")
    a = D(T).Binomial(4, probs=p)
    b = D(T).Binomial(4, logits=lg)
    y = a.log_prob(v).sum() + a.entropy().sum() + a.variance.sum()
    z = b.log_prob(v).sum() + b.entropy().sum()
    return T.autograd.grad(y, p), T.autograd.grad(z, lg)


@case
def binomial_bad(T, log):
    B = D(T).Binomial
    return (
        E(lambda: B(-1, probs=t(T, [0.5]))),
        E(lambda: B(3, probs=t(T, [0.5])).log_prob(t(T, [4.0]))),
        E(lambda: B(3, probs=t(T, [0.5])).log_prob(t(T, [1.5]))),
        E(lambda: B(3)),
    )


@case
def binomial_extreme_probs(T, log):
    d = D(T).Binomial(3, probs=t(T, [0.0, 1.0]))
    return d.log_prob(t(T, [0.0, 3.0])), d.log_prob(t(T, [1.0, 2.0])), d.mode


@case
def multinomial_basic(T, log):
    d = D(T).Multinomial(4, probs=t(T, [[0.2, 0.3, 0.5], [1.0, 1.0, 2.0]]))
    v = t(T, [[1.0, 1.0, 2.0], [0.0, 4.0, 0.0]])
    out = summ(d, v, props=("mean", "variance"), ent=False)
    s = d.sample((3,))
    return out, d.probs, s.shape, s.dtype, s.sum(-1), d.param_shape, d.total_count


@case
def multinomial_logits_grad(T, log):
    lg = t(T, A(0, 4), "float64", rg=True)
    d = D(T).Multinomial(3, logits=lg)
    y = d.log_prob(t(T, [1.0, 0.0, 2.0, 0.0], "float64")) + d.variance.sum()
    return T.autograd.grad(y, lg)


@case
def multinomial_bad(T, log):
    M = D(T).Multinomial
    d = M(3, probs=t(T, [0.2, 0.8]))
    return (
        E(lambda: d.log_prob(t(T, [1.0, 1.0]))),
        E(lambda: d.log_prob(t(T, [1.0, 1.0, 1.0]))),
        E(lambda: M(3.5, probs=t(T, [0.5, 0.5]))),
        E(lambda: M(3, probs=t(T, [0.5, 0.5])).entropy()),
    )


@case
def multinomial_expand(T, log):
    d = D(T).Multinomial(2, probs=t(T, [0.2, 0.8])).expand([3])
    return d.batch_shape, d.event_shape, d.log_prob(t(T, [1.0, 1.0])), d.mean


# ---- MultivariateNormal / LowRankMultivariateNormal ----
_COV = [[2.0, 0.5, 0.1], [0.5, 1.5, -0.3], [0.1, -0.3, 1.0]]
_TRIL = np.linalg.cholesky(np.array(_COV)).tolist()
_PREC = np.linalg.inv(np.array(_COV)).tolist()


def _mvn_all(d):
    return (
        summ(d, d.loc + 0.25),
        d.scale_tril,
        d.covariance_matrix,
        d.precision_matrix,
        smp(d, (2,)),
    )


@case
def mvn_scale_tril(T, log):
    return _mvn_all(D(T).MultivariateNormal(t(T, [0.5, -1.0, 2.0]), scale_tril=t(T, _TRIL)))


@case
def mvn_covariance(T, log):
    d = D(T).MultivariateNormal(t(T, [0.5, -1.0, 2.0], "float64"), t(T, _COV, "float64"))
    return _mvn_all(d)


@case
def mvn_precision(T, log):
    d = D(T).MultivariateNormal(
        t(T, [0.5, -1.0, 2.0], "float64"), precision_matrix=t(T, _PREC, "float64")
    )
    return _mvn_all(d)


@case
def mvn_batch_broadcast(T, log):
    loc = t(T, A(0, (4, 1, 3)), "float64")
    cov = t(T, np.stack([_COV, np.eye(3).tolist()]), "float64")
    d = D(T).MultivariateNormal(loc, cov)
    return summ(d, t(T, A(1, (2, 3)), "float64")), d.batch_shape, d.scale_tril.shape


@case
def mvn_grads(T, log):
    loc = t(T, [0.5, -1.0, 2.0], "float64", rg=True)
    tril = t(T, _TRIL, "float64", rg=True)
    cov = t(T, _COV, "float64", rg=True)
    x = t(T, A(2, (2, 3)), "float64")
    a = D(T).MultivariateNormal(loc, scale_tril=tril)
    b = D(T).MultivariateNormal(loc, covariance_matrix=cov)
    y = a.log_prob(x).sum() + a.entropy() + a.variance.sum()
    z = b.log_prob(x).sum() + b.entropy()
    return T.autograd.grad(y, (loc, tril)), T.autograd.grad(z, (loc, cov))


@case
def mvn_precision_grad(T, log):
    prec = t(T, _PREC, "float64", rg=True)
    d = D(T).MultivariateNormal(t(T, [0.0, 0.0, 0.0], "float64"), precision_matrix=prec)
    return T.autograd.grad(d.log_prob(t(T, [0.3, 0.1, -0.2], "float64")) + d.entropy(), prec)


@case
def mvn_rsample_grad(T, log):
    loc = t(T, [0.5, -1.0, 2.0], rg=True)
    tril = t(T, _TRIL, rg=True)
    r = D(T).MultivariateNormal(loc, scale_tril=tril).rsample((4,))
    g = T.autograd.grad(r.sum(), (loc, tril))
    return r.shape, r.requires_grad, g[0], g[1].shape


@case
def mvn_errors(T, log):
    M = D(T).MultivariateNormal
    loc = t(T, [0.0, 0.0])
    eye = T.eye(2)
    return (
        E(lambda: M(loc)),
        E(lambda: M(loc, eye, scale_tril=eye)),
        E(lambda: M(loc, t(T, [[1.0, 2.0], [2.0, 1.0]]))),
        E(lambda: M(loc, t(T, [1.0, 1.0]))),
        E(lambda: M(T.tensor(0.0), eye)),
        E(lambda: M(loc, scale_tril=t(T, [[1.0, 1.0], [0.0, 1.0]]))),
        E(lambda: M(loc, scale_tril=t(T, [[-1.0, 0.0], [0.0, 1.0]]))),
    )


@case
def mvn_log_prob_shape_err(T, log):
    d = D(T).MultivariateNormal(t(T, [0.0, 0.0]), T.eye(2))
    return E(lambda: d.log_prob(t(T, [0.0, 0.0, 0.0]))), d.log_prob(t(T, A(0, (3, 1, 2))))


@case
def mvn_expand(T, log):
    d = D(T).MultivariateNormal(t(T, [0.5, -1.0, 2.0]), scale_tril=t(T, _TRIL)).expand([2])
    return d.batch_shape, d.event_shape, d.loc.shape, d.scale_tril.shape, d.entropy()


@case
def lowrank_basic(T, log):
    loc = t(T, A(0, (2, 3)), "float64")
    cf = t(T, A(1, (3, 2)), "float64")
    cd = t(T, A(2, 3, 0.5, 1.5), "float64")
    d = D(T).LowRankMultivariateNormal(loc, cf, cd)
    x = t(T, A(3, 3), "float64")
    out = summ(d, x)
    return out, d.covariance_matrix, d.precision_matrix, d.scale_tril, smp(d, (2,))


@case
def lowrank_grads(T, log):
    loc = t(T, A(0, 3), "float64", rg=True)
    cf = t(T, A(1, (3, 2)), "float64", rg=True)
    cd = t(T, A(2, 3, 0.5, 1.5), "float64", rg=True)
    d = D(T).LowRankMultivariateNormal(loc, cf, cd)
    y = d.log_prob(t(T, A(3, (2, 3)), "float64")).sum() + d.entropy() + d.variance.sum()
    return T.autograd.grad(y, (loc, cf, cd))


@case
def lowrank_errors(T, log):
    L = D(T).LowRankMultivariateNormal
    return (
        E(lambda: L(T.tensor(0.0), t(T, [[1.0]]), t(T, [1.0]))),
        E(lambda: L(t(T, [0.0, 0.0]), t(T, [1.0, 1.0]), t(T, [1.0, 1.0]))),
        E(lambda: L(t(T, [0.0, 0.0]), t(T, [[1.0], [1.0]]), t(T, [1.0, -1.0]))),
        E(lambda: L(t(T, [0.0, 0.0]), t(T, [[1.0], [1.0], [1.0]]), t(T, [1.0, 1.0]))),
    )


# ---- Independent ----
@case
def independent_basic(T, log):
    base = D(T).Normal(t(T, A(0, (2, 3))), t(T, A(1, (2, 3), 0.5, 2)))
    d = D(T).Independent(base, 1)
    d2 = D(T).Independent(base, 2)
    x = t(T, A(2, (2, 3)))
    return summ(d, x), summ(d2, x), smp(d, (2,)), d.reinterpreted_batch_ndims, d.has_rsample


@case
def independent_grad(T, log):
    loc = t(T, A(0, (2, 3)), "float64", rg=True)
    d = D(T).Independent(D(T).Normal(loc, 1.0), 1)
    return T.autograd.grad(d.log_prob(t(T, A(2, (2, 3)), "float64")).sum() + d.entropy().sum(), loc)


@case
def independent_errors(T, log):
    base = D(T).Normal(t(T, A(0, (2, 3))), 1.0)
    Ind = D(T).Independent
    return E(lambda: Ind(base, 3)), E(lambda: Ind(base, 1).log_prob(t(T, A(1, 2))))


@case
def independent_discrete(T, log):
    d = D(T).Independent(D(T).Bernoulli(probs=t(T, [[0.2, 0.8], [0.5, 0.5]])), 1)
    return (
        d.has_enumerate_support,
        d.log_prob(t(T, [[1.0, 0.0], [0.0, 1.0]])),
        d.entropy(),
        repr(d.support),
        d.support.event_dim,
        E(d.enumerate_support),
    )


@case
def independent_expand(T, log):
    d = D(T).Independent(D(T).Normal(t(T, A(0, 3)), 1.0), 1).expand([2])
    return d.batch_shape, d.event_shape, d.mean.shape, d.log_prob(t(T, A(1, 3)))


# ---- TransformedDistribution and transforms ----
@case
def transformed_exp(T, log):
    TD = D(T)
    base = TD.Normal(t(T, A(0, 3)), t(T, A(1, 3, 0.5, 1.5)))
    d = TD.TransformedDistribution(base, TD.ExpTransform())
    x = t(T, [0.5, 1.0, 2.0])
    return summ(d, x, props=(), ent=False), cdfs(d, x, t(T, [0.1, 0.5, 0.9])), smp(d, (2,))


@case
def transformed_affine_list(T, log):
    TD = D(T)
    base = TD.Normal(t(T, [0.0, 0.5]), 1.0)
    tr = [TD.AffineTransform(1.0, 2.0), TD.ExpTransform()]
    d = TD.TransformedDistribution(base, tr)
    x = t(T, [1.5, 3.0])
    return summ(d, x, props=(), ent=False), cdfs(d, x, t(T, [0.2, 0.7])), len(d.transforms)


@case
def transformed_sigmoid_tanh(T, log):
    TD = D(T)
    base = TD.Normal(t(T, [0.0, 0.5]), t(T, [1.0, 2.0]))
    a = TD.TransformedDistribution(base, TD.SigmoidTransform())
    b = TD.TransformedDistribution(base, TD.TanhTransform())
    return a.log_prob(t(T, [0.3, 0.8])), b.log_prob(t(T, [-0.3, 0.8])), repr(b.support)


@case
def transformed_grads(T, log):
    TD = D(T)
    loc = t(T, [0.0, 0.5], "float64", rg=True)
    sc = t(T, [1.0, 2.0], "float64", rg=True)
    base = TD.Normal(loc, sc)
    d = TD.TransformedDistribution(base, [TD.AffineTransform(0.5, 3.0), TD.SigmoidTransform()])
    y = d.log_prob(t(T, [0.3, 0.8], "float64")).sum()
    return T.autograd.grad(y, (loc, sc))


@case
def transformed_rsample_grad(T, log):
    TD = D(T)
    loc = t(T, [0.0, 0.5], rg=True)
    d = TD.TransformedDistribution(TD.Normal(loc, 1.0), TD.TanhTransform())
    r = d.rsample((3,))
    g = T.autograd.grad(r.sum(), loc)[0]
    return d.has_rsample, r.shape, r.requires_grad, g.shape, bool((r.abs() <= 1).all())


@case
def transformed_event_dim(T, log):
    TD = D(T)
    base = TD.Normal(t(T, A(0, (2, 3))), 1.0)
    d = TD.TransformedDistribution(base, TD.StickBreakingTransform())
    v = TD.StickBreakingTransform()(t(T, A(1, (2, 3))))
    return d.batch_shape, d.event_shape, d.log_prob(v), repr(d.support), smp(d)


@case
def transformed_errors(T, log):
    TD = D(T)
    base = TD.Normal(0.0, 1.0)
    return (
        E(lambda: TD.TransformedDistribution(base, "exp")),
        E(lambda: TD.TransformedDistribution(base, [TD.ExpTransform(), 3])),
        E(lambda: TD.TransformedDistribution(base, TD.ExpTransform()).log_prob(T.tensor(-1.0))),
    )


@case
def lognormal_vs_transformed(T, log):
    TD = D(T)
    d = TD.LogNormal(t(T, [0.0, 1.0]), t(T, [0.5, 1.5]))
    x = t(T, [0.5, 3.0])
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.8])), d.loc, d.scale, smp(d, (2,))


@case
def lognormal_grad(T, log):
    loc = t(T, [0.0, 1.0], "float64", rg=True)
    sc = t(T, [0.5, 1.5], "float64", rg=True)
    d = D(T).LogNormal(loc, sc)
    y = d.log_prob(t(T, [0.5, 3.0], "float64")).sum() + d.entropy().sum() + d.mean.sum()
    return T.autograd.grad(y + d.variance.sum(), (loc, sc))


def _tr(tf, x, y):
    return (
        tf(x),
        tf.inv(y),
        tf.log_abs_det_jacobian(x, tf(x)),
        E(lambda: tf.sign),
        tf.bijective,
        repr(tf.domain),
        repr(tf.codomain),
        tf.domain.event_dim,
        tf.codomain.event_dim,
    )


@case
def transform_exp(T, log):
    return _tr(D(T).ExpTransform(), t(T, A(0, 3)), t(T, [0.5, 1.0, 2.0]))


@case
def transform_affine(T, log):
    TD = D(T)
    a = TD.AffineTransform(t(T, [1.0, 2.0]), t(T, [-2.0, 0.5]))
    b = TD.AffineTransform(0.5, 3.0, event_dim=1)
    x = t(T, A(0, (3, 2)))
    return _tr(a, x, x), _tr(b, x, x), E(lambda: a.sign), b.event_dim


@case
def transform_sigmoid(T, log):
    return _tr(D(T).SigmoidTransform(), t(T, A(0, 3, -5, 5), "float64"), t(T, [0.1, 0.5, 0.99]))


@case
def transform_tanh(T, log):
    return _tr(D(T).TanhTransform(), t(T, A(0, 3), "float64"), t(T, [-0.9, 0.0, 0.5], "float64"))


@case
def transform_stick_breaking(T, log):
    tf = D(T).StickBreakingTransform()
    x = t(T, A(0, (2, 3)), "float64")
    y = tf(x)
    return (
        y,
        tf.inv(y),
        tf.log_abs_det_jacobian(x, y),
        tf.forward_shape((2, 3)),
        tf.inverse_shape((4,)),
    )


@case
def transform_compose(T, log):
    TD = D(T)
    c = TD.ComposeTransform([TD.AffineTransform(1.0, 2.0), TD.ExpTransform()])
    x = t(T, A(0, 3), "float64")
    return _tr(c, x, c(x)), len(c.parts), c.event_dim, c.inv.inv is c


@case
def transform_compose_empty(T, log):
    TD = D(T)
    c = TD.ComposeTransform([])
    x = t(T, A(0, 2))
    return c(x), c.inv(x), c.log_abs_det_jacobian(x, x), c == TD.identity_transform


@case
def transform_grads(T, log):
    TD = D(T)
    x = t(T, A(0, 3), "float64", rg=True)
    out = []
    for tf in [
        TD.ExpTransform(),
        TD.SigmoidTransform(),
        TD.TanhTransform(),
        TD.SoftplusTransform(),
    ]:
        y = tf(x)
        out.append(T.autograd.grad((y * y).sum() + tf.log_abs_det_jacobian(x, y).sum(), x))
    sb = TD.StickBreakingTransform()
    out.append(T.autograd.grad((sb(x) ** 2).sum() + sb.log_abs_det_jacobian(x, sb(x)), x))
    return out


@case
def transform_inv_cache(T, log):
    TD = D(T)
    tf = TD.ExpTransform(cache_size=1)
    x = t(T, [0.5, 1.0])
    y = tf(x)
    e = TD.ExpTransform()
    return tf.inv(y) is x, tf._cache_size, e.inv.inv is e, e == TD.ExpTransform(), e != tf


@case
def transform_cache_bad(T, log):
    return E(lambda: D(T).ExpTransform(cache_size=2))


@case
def transform_reprs(T, log):
    TD = D(T)
    return [
        repr(x)
        for x in (
            TD.ExpTransform(),
            TD.ExpTransform().inv,
            TD.SigmoidTransform(),
            TD.TanhTransform(),
            TD.StickBreakingTransform(),
            TD.ComposeTransform([TD.ExpTransform(), TD.SigmoidTransform()]),
        )
    ]


@case
def transform_power_softmax(T, log):
    TD = D(T)
    x = t(T, [0.5, 1.0, 2.0])
    p = TD.PowerTransform(t(T, 2.0))
    s = TD.SoftmaxTransform()
    return p(x), p.inv(x), p.log_abs_det_jacobian(x, p(x)), s(x), s.inv(s(x)), s.bijective


# ---- Relaxed ----
@case
def relaxed_bernoulli(T, log):
    d = D(T).RelaxedBernoulli(t(T, 0.5), probs=t(T, [0.2, 0.7]))
    x = t(T, [0.3, 0.9])
    return (
        summ(d, x, props=(), ent=False),
        d.temperature,
        d.probs,
        d.logits,
        smp(d, (3,)),
        repr(d.support),
    )


@case
def relaxed_bernoulli_grad(T, log):
    lg = t(T, [0.2, -0.7], "float64", rg=True)
    tmp = t(T, 0.7, "float64", rg=True)
    d = D(T).RelaxedBernoulli(tmp, logits=lg)
    return T.autograd.grad(d.log_prob(t(T, [0.3, 0.9], "float64")).sum(), (lg, tmp))


@case
def relaxed_onehot(T, log):
    d = D(T).RelaxedOneHotCategorical(t(T, 0.5), probs=t(T, [[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]))
    x = t(T, [[0.1, 0.1, 0.8], [0.5, 0.25, 0.25]])
    s = d.rsample((2,))
    return summ(d, x, props=(), ent=False), smp(d, (2,)), s.sum(-1), repr(d.support)


@case
def relaxed_onehot_grad(T, log):
    lg = t(T, A(0, 3), "float64", rg=True)
    d = D(T).RelaxedOneHotCategorical(t(T, 2.0, "float64"), logits=lg)
    return T.autograd.grad(d.log_prob(t(T, [0.2, 0.3, 0.5], "float64")), lg)


@case
def relaxed_bad(T, log):
    RB = D(T).RelaxedBernoulli
    return E(lambda: RB(t(T, 0.5))), E(lambda: RB(t(T, -0.5), probs=t(T, [0.5])))


# ---- StudentT / Cauchy / HalfNormal / Gumbel / VonMises ----
@case
def studentt_basic(T, log):
    d = D(T).StudentT(
        t(T, [0.5, 1.5, 3.0, 10.0]), t(T, [0.0, 1.0, -1.0, 2.0]), t(T, [1.0, 2.0, 0.5, 1.0])
    )
    return summ(d, t(T, A(0, 4))), smp(d, (2,)), d.df


@case
def studentt_default(T, log):
    d = D(T).StudentT(t(T, 3.0))
    return summ(d, T.tensor(0.5)), d.loc, d.scale


@case
def studentt_grad(T, log):
    df = t(T, [2.5, 4.0], "float64", rg=True)
    loc = t(T, [0.0, 1.0], "float64", rg=True)
    sc = t(T, [1.0, 2.0], "float64", rg=True)
    d = D(T).StudentT(df, loc, sc)
    y = d.log_prob(t(T, [0.3, -1.0], "float64")).sum() + d.entropy().sum() + d.variance.sum()
    return T.autograd.grad(y, (df, loc, sc))


@case
def cauchy_basic(T, log):
    d = D(T).Cauchy(t(T, [0.0, 1.0]), t(T, [1.0, 0.5]))
    x = t(T, [0.5, -1.0])
    return summ(d, x), cdfs(d, x, t(T, [0.25, 0.9])), smp(d, (2,))


@case
def cauchy_grad(T, log):
    loc = t(T, [0.0, 1.0], "float64", rg=True)
    sc = t(T, [1.0, 0.5], "float64", rg=True)
    d = D(T).Cauchy(loc, sc)
    x = t(T, [0.5, -1.0], "float64")
    y = d.log_prob(x).sum() + d.entropy().sum() + d.cdf(x).sum()
    return T.autograd.grad(y + d.icdf(t(T, [0.3, 0.8], "float64")).sum(), (loc, sc))


@case
def halfnormal_basic(T, log):
    d = D(T).HalfNormal(t(T, [0.5, 1.0, 2.0]))
    x = t(T, [0.0, 1.0, 3.0])
    return summ(d, x), cdfs(d, x, t(T, [0.1, 0.5, 0.9])), smp(d, (2,)), d.scale


@case
def halfnormal_grad_and_bad(T, log):
    sc = t(T, [0.5, 2.0], "float64", rg=True)
    d = D(T).HalfNormal(sc)
    x = t(T, [0.3, 1.0], "float64")
    g = T.autograd.grad(d.log_prob(x).sum() + d.entropy().sum() + d.cdf(x).sum(), sc)
    return g, E(lambda: d.log_prob(t(T, [-1.0, 1.0], "float64"))), E(lambda: D(T).HalfNormal(-1.0))


@case
def gumbel_basic(T, log):
    d = D(T).Gumbel(t(T, [0.0, 1.0]), t(T, [1.0, 2.0]))
    x = t(T, [0.5, -1.0])
    return summ(d, x), cdfs(d, x, t(T, [0.25, 0.9])), smp(d, (2,))


@case
def gumbel_grad(T, log):
    loc = t(T, [0.0, 1.0], "float64", rg=True)
    sc = t(T, [1.0, 2.0], "float64", rg=True)
    d = D(T).Gumbel(loc, sc)
    y = d.log_prob(t(T, [0.5, -1.0], "float64")).sum() + d.entropy().sum() + d.variance.sum()
    return T.autograd.grad(y, (loc, sc))


@case
def vonmises_basic(T, log):
    d = D(T).VonMises(t(T, [0.0, 1.0, -2.0]), t(T, [0.5, 2.0, 10.0]))
    return summ(d, t(T, [0.5, -1.0, 3.0]), ent=False), smp(d, (2,)), E(d.entropy)


@case
def vonmises_grad(T, log):
    loc = t(T, [0.0, 1.0], "float64", rg=True)
    c = t(T, [0.5, 2.0], "float64", rg=True)
    d = D(T).VonMises(loc, c)
    y = d.log_prob(t(T, [0.5, -1.0], "float64")).sum() + d.variance.sum()
    return T.autograd.grad(y, (loc, c))


@case
def vonmises_bad(T, log):
    d = D(T).VonMises(0.0, 1.0)
    return E(lambda: D(T).VonMises(0.0, -1.0)), E(lambda: d.log_prob(T.tensor(4.0)))


# ---- Geometric / NegativeBinomial ----
@case
def geometric_probs(T, log):
    d = D(T).Geometric(t(T, [0.2, 0.5, 1.0]))
    return summ(d, t(T, [0.0, 3.0, 0.0])), d.logits, smp(d, (2,))


@case
def geometric_logits_grad(T, log):
    lg = t(T, [0.2, -1.0], "float64", rg=True)
    p = t(T, [0.3, 0.6], "float64", rg=True)
    a = D(T).Geometric(logits=lg)
    b = D(T).Geometric(probs=p)
    v = t(T, [2.0, 0.0], "float64")
    y = a.log_prob(v).sum() + a.entropy().sum() + a.mean.sum()
    z = b.log_prob(v).sum() + b.entropy().sum() + b.variance.sum()
    return a.probs, T.autograd.grad(y, lg), T.autograd.grad(z, p)


@case
def geometric_bad(T, log):
    G = D(T).Geometric
    return (
        E(lambda: G(t(T, [0.0]))),
        E(lambda: G(t(T, [0.5])).log_prob(t(T, [-1.0]))),
        E(lambda: G(t(T, [0.5])).log_prob(t(T, [1.5]))),
    )


@case
def negbin_basic(T, log):
    d = D(T).NegativeBinomial(t(T, [2.0, 5.0]), probs=t(T, [0.3, 0.7]))
    return summ(d, t(T, [0.0, 4.0]), ent=False), d.logits, smp(d, (2,)), E(d.entropy)


@case
def negbin_logits_grad(T, log):
    lg = t(T, [0.2, -1.0], "float64", rg=True)
    tc = t(T, [2.0, 3.5], "float64", rg=True)
    d = D(T).NegativeBinomial(tc, logits=lg)
    y = d.log_prob(t(T, [1.0, 6.0], "float64")).sum() + d.mean.sum() + d.variance.sum()
    return d.probs, d.mode, T.autograd.grad(y, (lg, tc))


@case
def negbin_bad(T, log):
    NB = D(T).NegativeBinomial
    return (
        E(lambda: NB(t(T, [2.0]), probs=t(T, [1.0]))),
        E(lambda: NB(t(T, [-1.0]), probs=t(T, [0.5]))),
        E(lambda: NB(t(T, [2.0]), probs=t(T, [0.5])).log_prob(t(T, [0.5]))),
    )


# ---- kl_divergence ----
def _kl_pairs(T, dt):
    TD = D(T)

    def v(seed, shape, lo=-2.0, hi=2.0):
        return t(T, A(seed, shape, lo, hi), dt)

    return [
        (TD.Normal(v(0, 3), v(1, 3, 0.5, 2)), TD.Normal(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Bernoulli(v(0, 3, 0.1, 0.9)), TD.Bernoulli(v(1, 3, 0.1, 0.9))),
        (TD.Categorical(v(0, (2, 4), 0.1, 1)), TD.Categorical(v(1, (2, 4), 0.1, 1))),
        (TD.OneHotCategorical(v(0, 4, 0.1, 1)), TD.OneHotCategorical(v(1, 4, 0.1, 1))),
        (TD.Beta(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Beta(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3))),
        (TD.Gamma(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Gamma(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3))),
        (TD.Dirichlet(v(0, (2, 3), 0.5, 3)), TD.Dirichlet(v(1, (2, 3), 0.5, 3))),
        (TD.Exponential(v(0, 3, 0.5, 3)), TD.Exponential(v(1, 3, 0.5, 3))),
        (TD.Laplace(v(0, 3), v(1, 3, 0.5, 2)), TD.Laplace(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Poisson(v(0, 3, 0.5, 3)), TD.Poisson(v(1, 3, 0.5, 3))),
        (TD.Geometric(v(0, 3, 0.1, 0.9)), TD.Geometric(v(1, 3, 0.1, 0.9))),
        (TD.Gumbel(v(0, 3), v(1, 3, 0.5, 2)), TD.Gumbel(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.HalfNormal(v(0, 3, 0.5, 2)), TD.HalfNormal(v(1, 3, 0.5, 2))),
        (TD.Binomial(5, v(0, 3, 0.1, 0.9)), TD.Binomial(5, v(1, 3, 0.1, 0.9))),
        (TD.Cauchy(v(0, 3), v(1, 3, 0.5, 2)), TD.Cauchy(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Exponential(v(0, 3, 0.5, 3)), TD.Gamma(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3))),
        (TD.Normal(v(0, 3), v(1, 3, 0.5, 2)), TD.Gumbel(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Gamma(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Exponential(v(2, 3, 0.5, 3))),
        (TD.Beta(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Uniform(v(2, 3, -1, 0), v(3, 3, 1, 2))),
        (TD.Uniform(v(0, 3, -1, 0), v(1, 3, 0, 1)), TD.Normal(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Uniform(v(0, 3, -1, 0), v(1, 3, 0, 1)), TD.Gumbel(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Laplace(v(0, 3), v(1, 3, 0.5, 2)), TD.Normal(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Exponential(v(0, 3, 0.5, 3)), TD.Normal(v(2, 3), v(3, 3, 0.5, 2))),
        (TD.Bernoulli(v(0, 3, 0.1, 0.9)), TD.Poisson(v(1, 3, 0.5, 3))),
        (TD.LogNormal(v(0, 3), v(1, 3, 0.5, 2)), TD.LogNormal(v(2, 3), v(3, 3, 0.5, 2))),
    ]


@case
def kl_pairs_float32(T, log):
    return [E(lambda p=p, q=q: D(T).kl_divergence(p, q)) for p, q in _kl_pairs(T, "float32")]


@case
def kl_pairs_float64(T, log):
    return [E(lambda p=p, q=q: D(T).kl_divergence(p, q)) for p, q in _kl_pairs(T, "float64")]


@case
def kl_uniform(T, log):
    U = D(T).Uniform
    p = U(t(T, [0.0, 0.0, -1.0]), t(T, [1.0, 2.0, 1.0]))
    q = U(t(T, [0.0, 0.5, -2.0]), t(T, [2.0, 3.0, 2.0]))
    return D(T).kl_divergence(p, q), D(T).kl_divergence(q, p)


@case
def kl_mvn(T, log):
    TD = D(T)
    p = TD.MultivariateNormal(t(T, [0.5, -1.0, 2.0], "float64"), t(T, _COV, "float64"))
    q = TD.MultivariateNormal(t(T, A(0, (2, 3)), "float64"), T.eye(3, dtype=T.float64) * 2)
    lr = TD.LowRankMultivariateNormal(
        t(T, A(1, 3), "float64"), t(T, A(2, (3, 2)), "float64"), t(T, [1.0, 2.0, 0.5], "float64")
    )
    kl = TD.kl_divergence
    return kl(p, q), kl(q, p), kl(lr, p), kl(p, lr), kl(lr, lr)


@case
def kl_independent(T, log):
    TD = D(T)
    p = TD.Independent(TD.Normal(t(T, A(0, (2, 3))), 1.0), 1)
    q = TD.Independent(TD.Normal(t(T, A(1, (2, 3))), 2.0), 1)
    q2 = TD.Independent(TD.Normal(t(T, A(1, (2, 3))), 2.0), 2)
    return TD.kl_divergence(p, q), E(lambda: TD.kl_divergence(p, q2))


@case
def kl_transformed(T, log):
    TD = D(T)
    p = TD.TransformedDistribution(TD.Normal(t(T, [0.0, 1.0]), 1.0), TD.ExpTransform())
    q = TD.TransformedDistribution(TD.Normal(t(T, [0.5, 1.0]), 2.0), TD.ExpTransform())
    return TD.kl_divergence(p, q)


@case
def kl_grads(T, log):
    TD = D(T)
    a = t(T, A(0, 3), "float64", rg=True)
    b = t(T, A(1, 3, 0.5, 2), "float64", rg=True)
    c = t(T, A(2, 3, 0.5, 3), "float64", rg=True)
    y = TD.kl_divergence(TD.Normal(a, b), TD.Normal(b, c)).sum()
    y = y + TD.kl_divergence(TD.Gamma(b, c), TD.Gamma(c, b)).sum()
    y = y + TD.kl_divergence(TD.Beta(b, c), TD.Beta(c, b)).sum()
    y = y + TD.kl_divergence(TD.Categorical(logits=a), TD.Categorical(logits=c))
    y = y + TD.kl_divergence(TD.Dirichlet(c), TD.Dirichlet(b))
    return T.autograd.grad(y, (a, b, c))


@case
def kl_not_implemented(T, log):
    TD = D(T)
    return (
        E(lambda: TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Cauchy(0.0, 1.0))),
        E(lambda: TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Uniform(0.0, 1.0))),
        E(lambda: TD.kl_divergence(TD.VonMises(0.0, 1.0), TD.VonMises(0.0, 1.0))),
    )


@case
def kl_infinite(T, log):
    TD = D(T)
    return (
        TD.kl_divergence(TD.Bernoulli(t(T, [0.5, 0.0])), TD.Bernoulli(t(T, [1.0, 0.5]))),
        TD.kl_divergence(TD.Categorical(t(T, [0.5, 0.5])), TD.Categorical(t(T, [1.0, 0.0]))),
        TD.kl_divergence(TD.Gamma(1.0, 1.0), TD.Uniform(0.0, 1.0).expand([1])),
    )


@case
def kl_broadcast_batch(T, log):
    TD = D(T)
    p = TD.Normal(t(T, A(0, (2, 1))), 1.0)
    q = TD.Normal(t(T, A(1, 3)), t(T, A(2, 3, 0.5, 2)))
    return TD.kl_divergence(p, q)


@case
def register_kl_custom(T, log):
    TD = D(T)

    class MyN(TD.Normal):
        pass

    @TD.register_kl(MyN, MyN)
    def _kl(p, q):
        return T.zeros(p.batch_shape) + 7.0

    r = TD.kl_divergence(MyN(0.0, 1.0), MyN(1.0, 2.0))
    r2 = TD.kl_divergence(MyN(0.0, 1.0), TD.Normal(1.0, 2.0))
    return r, r2


# ---- constraints ----
@case
def constraints_check(T, log):
    C = D(T).constraints
    x = t(T, [-1.0, 0.0, 0.5, 1.0, 2.0, float("inf"), float("nan")])
    out = [
        C.real.check(x),
        C.positive.check(x),
        C.nonnegative.check(x),
        C.unit_interval.check(x),
        C.interval(0.0, 1.0).check(x),
        C.half_open_interval(0.0, 1.0).check(x),
        C.greater_than(0.5).check(x),
        C.greater_than_eq(0.5).check(x),
        C.less_than(0.5).check(x),
        C.boolean.check(x),
        C.nonnegative_integer.check(x),
        C.positive_integer.check(x),
        C.integer_interval(0, 1).check(x),
    ]
    return out


@case
def constraints_matrix(T, log):
    C = D(T).constraints
    m = t(T, [[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [3.0, 1.0]]])
    return [
        C.positive_definite.check(m),
        C.positive_semidefinite.check(m),
        C.lower_cholesky.check(m),
        C.lower_triangular.check(m),
        C.symmetric.check(m),
        C.square.check(m),
        C.corr_cholesky.check(m),
    ]


@case
def constraints_vector(T, log):
    C = D(T).constraints
    v = t(T, [[0.2, 0.8], [0.5, 0.6], [1.0, 0.0], [-0.5, 1.5]])
    return [
        C.simplex.check(v),
        C.one_hot.check(v),
        C.real_vector.check(v),
        C.independent(C.positive, 1).check(v),
        C.multinomial(1).check(v),
    ]


@case
def constraints_reprs(T, log):
    C = D(T).constraints
    return [
        repr(c)
        for c in (
            C.real,
            C.positive,
            C.unit_interval,
            C.interval(0.0, 2.0),
            C.greater_than(1),
            C.simplex,
            C.independent(C.real, 2),
            C.integer_interval(0, 5),
            C.dependent,
            C.lower_cholesky,
            C.boolean,
        )
    ]


@case
def constraints_props(T, log):
    C = D(T).constraints
    return [
        (c.is_discrete, c.event_dim)
        for c in (C.real, C.boolean, C.simplex, C.positive_definite, C.independent(C.real, 2))
    ] + [C.is_dependent(C.dependent), C.is_dependent(C.real), C.interval(0, 2).lower_bound]


@case
def constraints_dependent(T, log):
    C = D(T).constraints
    return E(lambda: C.dependent.check(T.tensor(1.0))), E(lambda: C.dependent.is_discrete)


@case
def biject_transform_to(T, log):
    TD = D(T)
    C = TD.constraints
    x = t(T, A(0, 3), "float64")
    out = []
    for c in (
        C.real,
        C.positive,
        C.unit_interval,
        C.interval(-1.0, 3.0),
        C.greater_than(2.0),
        C.simplex,
        C.less_than(1.0),
    ):
        f, g = TD.biject_to(c), TD.transform_to(c)
        out.append((type(f).__name__, f(x), g(x), f.inv(f(x))))
    return out


@case
def biject_not_registered(T, log):
    C = D(T).constraints
    return E(lambda: D(T).biject_to(C.boolean)), E(lambda: D(T).transform_to(C.dependent))


# ---- validate_args defaults ----
@case
def set_default_validate_false(T, log):
    Dist = D(T).Distribution
    old = Dist._validate_args
    try:
        Dist.set_default_validate_args(False)
        d = D(T).Normal(0.0, -1.0)
        u = D(T).Uniform(0.0, 1.0).log_prob(T.tensor(2.0))
        c = D(T).Categorical(probs=t(T, [0.5, 0.5])).log_prob(t(T, [5], "int64"))
        v = D(T).Normal(0.0, 1.0, validate_args=True)
        return d._validate_args, d.scale, u, E(lambda: c), v._validate_args
    finally:
        Dist.set_default_validate_args(old)


@case
def set_default_validate_bad(T, log):
    Dist = D(T).Distribution
    old = Dist._validate_args
    try:
        return E(lambda: Dist.set_default_validate_args("yes")), E(lambda: Dist._validate_args)
    finally:
        Dist.set_default_validate_args(old)


@case
def default_validate_on(T, log):
    return D(T).Normal(0.0, 1.0)._validate_args, D(T).Distribution._validate_args


@case
def validate_args_explicit_value(T, log):
    d = D(T).Normal(0.0, 1.0, validate_args=False)
    return d._validate_args, d.log_prob(T.tensor(float("nan")))


# ---- Distribution base / misc ----
@case
def base_not_implemented(T, log):
    d = D(T).Bernoulli(probs=t(T, [0.5]))
    n = D(T).Normal(0.0, 1.0)
    return (
        E(lambda: d.cdf(t(T, [1.0]))),
        E(lambda: d.icdf(t(T, [0.5]))),
        E(lambda: d.rsample()),
        E(lambda: n.enumerate_support()),
    )


@case
def base_distribution_shapes(T, log):
    Dist = D(T).Distribution
    d = Dist(T.Size([2]), T.Size([3]), validate_args=False)
    return (
        d.batch_shape,
        d.event_shape,
        d._extended_shape((4,)),
        E(lambda: d.mean),
        E(lambda: d.entropy()),
        E(lambda: d.sample()),
    )


@case
def sample_shape_forms(T, log):
    d = D(T).Normal(t(T, A(0, 2)), 1.0)
    return (
        d.sample(T.Size()).shape,
        d.sample([3]).shape,
        d.sample((2, 3)).shape,
        E(lambda: d.sample(3).shape),
        d.rsample(sample_shape=(1,)).shape,
    )


@case
def param_dtypes_promotion(T, log):
    d = D(T).Normal(t(T, [0.0], "float64"), t(T, [1.0]))
    g = D(T).Gamma(t(T, [2.0], "float64"), 1.0)
    return d.loc.dtype, d.scale.dtype, g.rate.dtype, d.sample().dtype, g.sample().dtype


@case
def support_attrs(T, log):
    TD = D(T)
    return [
        repr(x.support)
        for x in (
            TD.Bernoulli(0.5),
            TD.Beta(1.0, 1.0),
            TD.Gamma(1.0, 1.0),
            TD.Dirichlet(t(T, [1.0, 1.0])),
            TD.Poisson(1.0),
            TD.Geometric(0.5),
            TD.Multinomial(3, t(T, [0.5, 0.5])),
            TD.MultivariateNormal(t(T, [0.0]), T.eye(1)),
            TD.VonMises(0.0, 1.0),
            TD.StudentT(2.0),
            TD.Cauchy(0.0, 1.0),
            TD.HalfNormal(1.0),
            TD.LogNormal(0.0, 1.0),
        )
    ]


@case
def has_rsample_flags(T, log):
    TD = D(T)
    names = [
        "Normal",
        "Bernoulli",
        "Categorical",
        "OneHotCategorical",
        "Beta",
        "Gamma",
        "Dirichlet",
        "Exponential",
        "Laplace",
        "Uniform",
        "Poisson",
        "Binomial",
        "Multinomial",
        "MultivariateNormal",
        "LowRankMultivariateNormal",
        "RelaxedBernoulli",
        "RelaxedOneHotCategorical",
        "StudentT",
        "Cauchy",
        "HalfNormal",
        "LogNormal",
        "Geometric",
        "NegativeBinomial",
        "VonMises",
        "Gumbel",
    ]
    return [(n, getattr(TD, n).has_rsample, getattr(TD, n).has_enumerate_support) for n in names]


@case
def arg_constraints_keys(T, log):
    TD = D(T)
    names = [
        "Normal",
        "Bernoulli",
        "Categorical",
        "Beta",
        "Gamma",
        "Dirichlet",
        "Exponential",
        "Laplace",
        "Uniform",
        "Poisson",
        "Binomial",
        "Multinomial",
        "MultivariateNormal",
        "LowRankMultivariateNormal",
        "StudentT",
        "Cauchy",
        "HalfNormal",
        "LogNormal",
        "Geometric",
        "NegativeBinomial",
        "VonMises",
        "Gumbel",
    ]
    return [(n, sorted(getattr(TD, n).arg_constraints)) for n in names]


# ---- more: 0-d samples, modes, validation of cdf/icdf, more transforms and kl pairs ----
@case
def zero_d_samples(T, log):
    TD = D(T)
    ds = [
        TD.Poisson(1.0),
        TD.Beta(2.0, 3.0),
        TD.Gamma(2.0, 1.0),
        TD.Geometric(0.5),
        TD.Binomial(3, T.tensor(0.5)),
        TD.Exponential(1.0),
        TD.VonMises(0.0, 1.0),
        TD.NegativeBinomial(2.0, T.tensor(0.5)),
        TD.Categorical(T.tensor([0.5, 0.5])),
        TD.Laplace(0.0, 1.0),
        TD.Uniform(0.0, 1.0),
        TD.Cauchy(0.0, 1.0),
        TD.Gumbel(0.0, 1.0),
        TD.StudentT(3.0),
        TD.HalfNormal(1.0),
        TD.LogNormal(0.0, 1.0),
        TD.Geometric(logits=T.tensor(0.3)),
        TD.RelaxedBernoulli(T.tensor(0.5), probs=T.tensor(0.3)),
    ]
    return [E(lambda d=d: (type(d).__name__, smp(d))) for d in ds]


@case
def cdf_validation(T, log):
    TD = D(T)
    return (
        E(lambda: TD.Exponential(1.0).cdf(T.tensor(-1.0))),
        E(lambda: TD.Uniform(0.0, 1.0).icdf(T.tensor(2.0))),
        E(lambda: TD.Normal(0.0, 1.0).icdf(T.tensor(2.0))),
        E(lambda: TD.Uniform(0.0, 1.0).cdf(T.tensor(2.0))),
        E(lambda: TD.Gamma(1.0, 1.0).cdf(T.tensor(-2.0))),
        E(lambda: TD.Laplace(0.0, 1.0).icdf(T.tensor(1.5))),
    )


@case
def modes(T, log):
    TD = D(T)
    return (
        TD.Beta(t(T, [0.5, 2.0, 1.0, 0.5]), t(T, [0.5, 0.5, 1.0, 3.0])).mode,
        TD.Dirichlet(t(T, [[0.5, 2.0, 3.0], [2.0, 2.0, 2.0]])).mode,
        TD.Gamma(t(T, [0.5, 2.0]), t(T, [1.0, 2.0])).mode,
        TD.Binomial(t(T, [5.0, 4.0]), t(T, [0.5, 0.3])).mode,
        TD.Poisson(t(T, [0.5, 3.0])).mode,
        TD.Geometric(t(T, [0.5])).mode,
        TD.NegativeBinomial(t(T, [0.5, 4.0]), t(T, [0.5, 0.3])).mode,
        TD.StudentT(t(T, [2.0])).mode,
        TD.LogNormal(t(T, [0.0]), t(T, [1.0])).mode,
        TD.HalfNormal(t(T, [1.0])).mode,
        E(lambda: TD.Uniform(0.0, 1.0).mode),
        TD.Laplace(0.0, 1.0).mode,
        TD.Cauchy(0.0, 1.0).mode,
        TD.Gumbel(1.0, 2.0).mode,
        TD.Exponential(2.0).mode,
        TD.VonMises(1.0, 1.0).mode,
        TD.MultivariateNormal(t(T, [1.0, 2.0]), T.eye(2)).mode,
        TD.LowRankMultivariateNormal(t(T, [1.0, 2.0]), T.ones(2, 1), T.ones(2)).mode,
        TD.Independent(TD.Normal(t(T, [1.0]), 1.0), 1).mode,
        E(lambda: TD.TransformedDistribution(TD.Normal(0.0, 1.0), TD.ExpTransform()).mode),
        TD.Multinomial(4, t(T, [0.2, 0.3, 0.5])).mode,
        TD.Categorical(t(T, [[0.2, 0.5, 0.3]])).mode,
    )


@case
def transformed_reinterpret(T, log):
    TD = D(T)
    base = TD.Normal(t(T, A(0, (2, 3))), 1.0)
    d = TD.TransformedDistribution(
        base, TD.AffineTransform(1.0, t(T, [1.0, 2.0, 3.0]), event_dim=1)
    )
    x = t(T, A(1, (2, 3)))
    return (
        d.batch_shape,
        d.event_shape,
        d.log_prob(x),
        repr(d.support),
        d.expand([4, 2]).batch_shape,
        smp(d),
    )


@case
def more_transforms(T, log):
    TD = D(T)
    x = t(T, A(0, (2, 3)), "float64")
    out = []
    cat = TD.CatTransform([TD.ExpTransform(), TD.AffineTransform(0.0, 2.0)], dim=1, lengths=[1, 2])
    out.append((cat(x), cat.inv(cat(x)), cat.log_abs_det_jacobian(x, cat(x)), cat.event_dim))
    st = TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform()], dim=0)
    out.append((st(x), st.inv(st(x)), st.log_abs_det_jacobian(x, st(x))))
    r = TD.ReshapeTransform((2, 3), (3, 2))
    out.append(
        (
            r(x),
            r.inv(r(x)).shape,
            r.log_abs_det_jacobian(x, r(x)),
            r.forward_shape((5, 2, 3)),
            r.inverse_shape((3, 2)),
        )
    )
    it = TD.IndependentTransform(TD.ExpTransform(), 1)
    out.append((it(x), it.log_abs_det_jacobian(x, it(x)), it.event_dim, repr(it.domain)))
    lc = TD.LowerCholeskyTransform()
    mm = t(T, A(1, (3, 3)), "float64")
    out.append((lc(mm), lc.inv(lc(mm))))
    cc = TD.CorrCholeskyTransform()
    v = t(T, A(2, 3), "float64")
    out.append((cc(v), cc.inv(cc(v)), cc.log_abs_det_jacobian(v, cc(v))))
    ab = TD.AbsTransform()
    out.append((ab(x), ab.inv(ab(x)), E(lambda: ab.log_abs_det_jacobian(x, ab(x)))))
    sp = TD.SoftplusTransform()
    out.append((sp(x), sp.inv(sp(x)), sp.log_abs_det_jacobian(x, sp(x))))
    cdt = TD.CumulativeDistributionTransform(TD.Normal(0.0, 1.0))
    out.append(
        (
            cdt(x.float()),
            cdt.inv(cdt(x.float())),
            cdt.log_abs_det_jacobian(x.float(), cdt(x.float())),
        )
    )
    pd = TD.PositiveDefiniteTransform()
    out.append((pd(mm), pd.inv(pd(mm))))
    return out


@case
def expand_instance(T, log):
    TD = D(T)
    ds = [
        TD.Bernoulli(t(T, [0.3])),
        TD.Beta(t(T, [1.0]), t(T, [2.0])),
        TD.Gamma(t(T, [1.0]), 1.0),
        TD.Dirichlet(t(T, [1.0, 2.0])),
        TD.Poisson(t(T, [1.0])),
        TD.Binomial(3, t(T, [0.3])),
        TD.MultivariateNormal(t(T, [0.0, 1.0]), T.eye(2)),
        TD.LowRankMultivariateNormal(t(T, [0.0, 1.0]), T.ones(2, 1), T.ones(2)),
        TD.StudentT(t(T, [3.0])),
        TD.VonMises(t(T, [0.0]), 1.0),
        TD.Geometric(t(T, [0.3])),
        TD.NegativeBinomial(2.0, t(T, [0.3])),
        TD.RelaxedBernoulli(T.tensor(0.5), t(T, [0.3])),
        TD.OneHotCategorical(t(T, [0.5, 0.5])),
        TD.Gumbel(t(T, [0.0]), 1.0),
        TD.LogNormal(t(T, [0.0]), 1.0),
        TD.HalfNormal(t(T, [1.0])),
        TD.Cauchy(t(T, [0.0]), 1.0),
        TD.Laplace(t(T, [0.0]), 1.0),
        TD.Uniform(t(T, [0.0]), 1.0),
        TD.Exponential(t(T, [1.0])),
    ]
    out = []
    for d in ds:
        e = d.expand([2, 1])
        out.append(
            (
                type(e).__name__,
                e.batch_shape,
                e.event_shape,
                E(lambda e=e: e.mean),
                E(lambda e=e: e.sample().shape),
                E(lambda e=e: e.entropy()),
            )
        )
    return out


@case
def mixture(T, log):
    TD = D(T)
    mix = TD.Categorical(t(T, [0.3, 0.7]))
    comp = TD.Normal(t(T, [0.0, 1.0]), t(T, [1.0, 2.0]))
    d = TD.MixtureSameFamily(mix, comp)
    x = t(T, [0.5, -1.0])
    return summ(d, x, ent=False, props=("mean", "variance")), d.cdf(x), smp(d, (3,))


@case
def boundary_probs(T, log):
    TD = D(T)
    g = TD.Geometric(t(T, [1.0, 1.0, 0.5]))
    return (
        g.log_prob(t(T, [0.0, 1.0, 0.0])),
        g.entropy(),
        g.mean,
        g.variance,
        TD.Beta(t(T, [2.0, 0.5, 1.0]), t(T, [2.0, 0.5, 1.0])).log_prob(t(T, [0.0, 0.0, 1.0])),
        TD.Dirichlet(t(T, [2.0, 0.5, 1.0])).log_prob(t(T, [0.0, 0.0, 1.0])),
        TD.Dirichlet(t(T, [1.0, 0.5, 2.0])).log_prob(t(T, [0.0, 0.5, 0.5])),
        TD.Gumbel(0.0, 1.0).icdf(t(T, [0.0, 1.0])),
        TD.Cauchy(0.0, 1.0).icdf(t(T, [0.5, 0.0, 1.0])),
        TD.Exponential(2.0).cdf(t(T, [0.0])),
        TD.Laplace(0.0, 1.0).icdf(t(T, [0.0, 1.0, 0.5])),
    )


@case
def transformed_decreasing_cdf(T, log):
    TD = D(T)
    base = TD.Normal(t(T, [0.0, 1.0]), 1.0)
    d = TD.TransformedDistribution(base, [TD.AffineTransform(0.0, -2.0)])
    d2 = TD.TransformedDistribution(base, [TD.AffineTransform(0.0, -2.0), TD.ExpTransform()])
    d3 = TD.TransformedDistribution(base, [TD.AffineTransform(0.0, t(T, [-2.0, 1.0]))])
    x = t(T, [0.5, -0.5])
    return (
        d.cdf(x),
        d.icdf(t(T, [0.3, 0.9])),
        d2.cdf(t(T, [0.5, 2.0])),
        d2.icdf(t(T, [0.3, 0.9])),
        E(lambda: d3.cdf(x)),
        E(lambda: d3.icdf(t(T, [0.3, 0.9]))),
    )


@case
def kl_exp_grad(T, log):
    TD = D(T)
    a = t(T, [0.5, 2.0], "float64", rg=True)
    b = t(T, [1.5, 1.0], "float64", rg=True)
    y = TD.kl_divergence(TD.Exponential(a), TD.Exponential(b)).sum()
    y = y + TD.kl_divergence(TD.Laplace(a, b), TD.Laplace(b, a)).sum()
    y = y + TD.kl_divergence(TD.Poisson(a), TD.Poisson(b)).sum()
    y = y + TD.kl_divergence(TD.Bernoulli(a / 3), TD.Bernoulli(b / 3)).sum()
    y = y + TD.kl_divergence(TD.Gumbel(a, b), TD.Gumbel(b, a)).sum()
    y = y + TD.kl_divergence(TD.HalfNormal(a), TD.HalfNormal(b)).sum()
    y = y + TD.kl_divergence(TD.Uniform(a - 3, a), TD.Uniform(a - 4, b + 2)).sum()
    y = y + TD.kl_divergence(TD.Geometric(a / 3), TD.Geometric(b / 3)).sum()
    y = y + TD.kl_divergence(TD.Binomial(4, a / 3), TD.Binomial(4, b / 3)).sum()
    return T.autograd.grad(y, (a, b))


@case
def kl_mvn_grad(T, log):
    TD = D(T)
    tr = t(T, _TRIL, "float64", rg=True)
    cf = t(T, A(2, (3, 2)), "float64", rg=True)
    p = TD.MultivariateNormal(t(T, [0.5, -1.0, 2.0], "float64"), scale_tril=tr)
    q = TD.MultivariateNormal(t(T, A(0, 3), "float64"), T.eye(3, dtype=T.float64) * 2)
    lr = TD.LowRankMultivariateNormal(
        t(T, A(1, 3), "float64"), cf, t(T, [1.0, 2.0, 0.5], "float64")
    )
    y = TD.kl_divergence(p, q) + TD.kl_divergence(lr, p) + TD.kl_divergence(p, lr)
    return T.autograd.grad(y, (tr, cf))


@case
def kl_misc_pairs(T, log):
    TD = D(T)
    kl = TD.kl_divergence
    v = lambda s, sh, lo=-2.0, hi=2.0: t(T, A(s, sh, lo, hi))
    return [
        E(lambda f=f: f())
        for f in (
            lambda: kl(TD.Beta(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Exponential(v(2, 3, 0.5, 3))),
            lambda: kl(
                TD.Beta(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)),
                TD.Gamma(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3)),
            ),
            lambda: kl(
                TD.Beta(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Normal(v(2, 3), v(3, 3, 0.5, 3))
            ),
            lambda: kl(TD.Exponential(v(0, 3, 0.5, 3)), TD.Gumbel(v(2, 3), v(3, 3, 0.5, 3))),
            lambda: kl(
                TD.Gamma(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Normal(v(2, 3), v(3, 3, 0.5, 3))
            ),
            lambda: kl(
                TD.Gamma(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)), TD.Gumbel(v(2, 3), v(3, 3, 0.5, 3))
            ),
            lambda: kl(TD.Gumbel(v(0, 3), v(1, 3, 0.5, 3)), TD.Normal(v(2, 3), v(3, 3, 0.5, 3))),
            lambda: kl(
                TD.Uniform(v(0, 3, -1, 0), v(1, 3, 0, 1)), TD.Beta(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3))
            ),
            lambda: kl(TD.Uniform(v(0, 3, 0, 1), v(1, 3, 1, 2)), TD.Exponential(v(2, 3, 0.5, 3))),
            lambda: kl(
                TD.Uniform(v(0, 3, 0, 1), v(1, 3, 1, 2)), TD.Gamma(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3))
            ),
            lambda: kl(TD.Bernoulli(v(0, 3, 0.1, 0.9)), TD.Poisson(v(1, 3, 0.5, 3))),
            lambda: kl(TD.Poisson(v(1, 3, 0.5, 3)), TD.Bernoulli(v(0, 3, 0.1, 0.9))),
            lambda: kl(TD.Laplace(v(0, 3), v(1, 3, 0.5, 3)), TD.Normal(v(2, 3), v(3, 3, 0.5, 3))),
            lambda: kl(TD.Normal(v(0, 3), v(1, 3, 0.5, 3)), TD.Laplace(v(2, 3), v(3, 3, 0.5, 3))),
            lambda: kl(TD.Binomial(5, v(0, 3, 0.1, 0.9)), TD.Binomial(6, v(1, 3, 0.1, 0.9))),
            lambda: kl(TD.Binomial(6, v(0, 3, 0.1, 0.9)), TD.Binomial(5, v(1, 3, 0.1, 0.9))),
            lambda: kl(TD.StudentT(3.0), TD.StudentT(3.0)),
            lambda: kl(
                TD.ContinuousBernoulli(v(0, 3, 0.1, 0.9)), TD.ContinuousBernoulli(v(1, 3, 0.1, 0.9))
            ),
            lambda: kl(
                TD.Pareto(v(0, 3, 0.5, 3), v(1, 3, 0.5, 3)),
                TD.Pareto(v(2, 3, 0.5, 3), v(3, 3, 0.5, 3)),
            ),
            lambda: kl(
                TD.Normal(v(0, 3), v(1, 3, 0.5, 3)).expand([2, 3]),
                TD.Normal(v(2, 3), v(3, 3, 0.5, 3)),
            ),
            lambda: kl(
                TD.OneHotCategorical(v(0, 3, 0.1, 1)), TD.OneHotCategorical(v(1, 4, 0.1, 1))
            ),
            lambda: kl(TD.Categorical(v(0, 3, 0.1, 1)), TD.Categorical(v(1, 4, 0.1, 1))),
        )
    ]


@case
def icdf_cdf_grad_values(T, log):
    TD = D(T)
    x = t(T, [0.5, 1.5], "float64", rg=True)
    q = t(T, [0.2, 0.7], "float64", rg=True)
    ds = [
        TD.Normal(0.0, 2.0),
        TD.Exponential(1.5),
        TD.Laplace(0.5, 1.0),
        TD.Cauchy(0.0, 1.0),
        TD.Gumbel(0.0, 1.0),
        TD.HalfNormal(1.0),
        TD.LogNormal(0.0, 1.0),
        TD.Uniform(0.0, 2.0),
    ]
    out = []
    for d in ds:
        d = d.expand([2])
        out.append(T.autograd.grad(d.cdf(x).sum() + d.icdf(q).sum(), (x, q)))
    return out


@case
def entropy_f64_all(T, log):
    TD = D(T)
    p = t(T, [0.3, 0.6], "float64")
    ds = [
        TD.Bernoulli(p),
        TD.Geometric(p),
        TD.Binomial(5, p),
        TD.Gamma(p * 3, p),
        TD.Beta(p * 3, p),
        TD.Exponential(p),
        TD.Laplace(p, p),
        TD.Uniform(p, p + 1),
        TD.Cauchy(p, p),
        TD.Gumbel(p, p),
        TD.HalfNormal(p),
        TD.LogNormal(p, p),
        TD.StudentT(p * 5, p, p),
        TD.Dirichlet(t(T, [[0.3, 0.6], [1.5, 2.5]], "float64")),
        TD.Categorical(p),
        TD.OneHotCategorical(p),
    ]
    return [E(d.entropy) for d in ds]


@case
def logprob_dtype_promo(T, log):
    TD = D(T)
    x64 = t(T, [0.5, 0.2], "float64")
    x16 = t(T, [0.5, 0.2], "float16")
    return (
        TD.Normal(0.0, 1.0).log_prob(x64),
        TD.Normal(t(T, [0.0, 0.0]), 1.0).log_prob(x64),
        E(lambda: TD.Exponential(t(T, [1.0, 1.0])).log_prob(x64)),
        E(lambda: TD.Normal(0.0, 1.0).log_prob(x16)),
        TD.Bernoulli(t(T, [0.5, 0.2], "float64")).log_prob(t(T, [1.0, 0.0])),
        TD.Categorical(t(T, [0.5, 0.5], "float64")).log_prob(t(T, [1, 0], "int32")),
        TD.Gamma(t(T, [1.0, 2.0]), 1.0).log_prob(x64),
        TD.Beta(t(T, [1.0, 2.0]), 1.0).log_prob(x64),
    )


@case
def kwargs_ctor(T, log):
    TD = D(T)
    return (
        TD.Normal(loc=t(T, [1.0]), scale=2.0).scale,
        TD.Binomial(total_count=3, probs=t(T, [0.5])).total_count,
        TD.Multinomial(probs=t(T, [0.5, 0.5])).total_count,
        TD.Uniform(low=0, high=1).low,
        TD.Gamma(concentration=2, rate=3).rate,
        TD.Beta(concentration1=2.0, concentration0=1.0).mean,
        TD.StudentT(df=3.0, loc=1.0).scale,
        TD.Dirichlet(concentration=t(T, [1.0, 2.0])).mean,
        TD.MultivariateNormal(loc=t(T, [0.0]), covariance_matrix=T.eye(1)).loc,
        TD.Independent(
            base_distribution=TD.Normal(t(T, [0.0]), 1.0), reinterpreted_batch_ndims=1
        ).event_shape,
        TD.Exponential(rate=2).rate,
        TD.Laplace(loc=0, scale=1).scale,
        TD.Poisson(rate=2).rate,
    )


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_distributions_match_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected), (got, expected)
