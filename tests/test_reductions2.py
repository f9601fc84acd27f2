"""What the opdb sweep of ``tests/opdb_reductions2.py`` does not reach: the compositions of
``jitgrad/ops/reductions3.py`` (quantile, nanquantile, dist, renorm, cov, corrcoef: values
and gradients against torch, gradcheck), mode's gradient, bincount, the search options, the
in-place variants and torch's errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck

R = np.random.default_rng(180)
X = R.uniform(-2.0, 2.0, (3, 5))
XN = X.copy()
XN[1, 2] = np.nan
XN[0, 4] = np.nan


def _t(lib, a, grad=True):
    if isinstance(a, np.ndarray):
        return lib.tensor(a, requires_grad=grad and a.dtype.kind == "f")
    return a


CASES = {
    "quantile_dim": (lambda L, a: L.quantile(a, 0.3, dim=1), (X,)),
    "quantile_all": (lambda L, a: L.quantile(a, 0.77), (X,)),
    "quantile_keep": (lambda L, a: a.quantile(0.5, keepdim=True), (X,)),
    "quantile_q": (lambda L, a, q: L.quantile(a, q, 0, True), (X, np.array([0.1, 0.5, 0.93]))),
    "quantile_q0d": (lambda L, a, q: L.quantile(a, q, -1), (X, np.array(0.25))),
    "quantile_1d": (lambda L, a: L.quantile(a, 0.6, 0), (X[0],)),
    "quantile_nan_row": (lambda L, a: L.quantile(a, 0.4, dim=1), (XN,)),
    "nanquantile": (lambda L, a: L.nanquantile(a, 0.4, dim=1), (XN,)),
    "nanquantile_q": (lambda L, a, q: a.nanquantile(q, 1), (XN, np.array([0.2, 0.9]))),
    "dist": (lambda L, a, b: L.dist(a, b), (X, X[0] * 0.5)),
    "dist_p3": (lambda L, a, b: a.dist(b, 3), (X, X[1] * 0.3)),
    "dist_p1": (lambda L, a, b: a.dist(b, 1), (X, X[1] * 0.3)),
    "dist_inf": (lambda L, a, b: L.dist(a, b, float("inf")), (X, X[2] * 0.5)),
    "renorm": (lambda L, a: L.renorm(a, 2, 0, 1.5), (X,)),
    "renorm_p1": (lambda L, a: a.renorm(1, 1, 2.0), (X,)),
    "renorm_3d": (lambda L, a: L.renorm(a, 3, -1, 1.0), (R.uniform(-2, 2, (2, 3, 4)),)),
    "cov": (lambda L, a: L.cov(a), (X,)),
    "cov_1d": (lambda L, a: L.cov(a, correction=0), (X[0],)),
    "cov_weights": (lambda L, a, fw, aw: L.cov(a, fweights=fw, aweights=aw),
                    (X, np.array([1, 2, 1, 3, 1]), R.uniform(0.5, 1.0, 5))),
    "cov_method": (lambda L, a: a.cov(correction=2), (X.T,)),
    "corrcoef": (lambda L, a: L.corrcoef(a), (X,)),
    "corrcoef_1d": (lambda L, a: a.corrcoef(), (X[0],)),
}
for _interp in ("linear", "lower", "higher", "midpoint", "nearest"):
    CASES[f"quantile_{_interp}"] = (
        lambda L, a, q, _i=_interp: L.quantile(a, q, 1, interpolation=_i),
        (X, np.array([0.0, 0.35, 0.5, 1.0])))
    CASES[f"nanquantile_{_interp}"] = (
        lambda L, a, _i=_interp: L.nanquantile(a, 0.45, 0, True, interpolation=_i), (XN,))


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_grads_vs_torch(name):
    torch = pytest.importorskip("torch")
    call, args = CASES[name]
    ja, ta = [_t(jitgrad, a) for a in args], [_t(torch, a) for a in args]
    jo, to = call(jitgrad, *ja), call(torch, *ta)
    assert tuple(jo.shape) == tuple(to.shape)
    assert str(jo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-12, atol=1e-12)
    jl = [a for a in ja if getattr(a, "requires_grad", False)]
    tl = [a for a in ta if getattr(a, "requires_grad", False)]
    g = R.standard_normal(tuple(to.shape))
    jg = jitgrad.autograd.grad(jo, jl, jitgrad.tensor(g), allow_unused=True)
    tg = torch.autograd.grad(to, tl, torch.tensor(g), allow_unused=True)
    for a, b in zip(jg, tg):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in CASES if "nan" not in n])
def test_gradcheck(name):
    call, args = CASES[name]
    # (quantile's q only as a constant: its rank jumps where q * (n - 1) is whole; its
    # gradient is checked against torch's above)
    ja = [_t(jitgrad, a, grad=i == 0 or "quantile" not in name) for i, a in enumerate(args)]
    slots = [i for i, a in enumerate(ja) if getattr(a, "requires_grad", False)]

    def f(*ts):
        a = list(ja)
        for i, t in zip(slots, ts):
            a[i] = t
        return call(jitgrad, *a)
    assert gradcheck(f, tuple(ja[i] for i in slots))


def test_mode_gradient_goes_to_the_returned_index_as_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[3.0, 1, 1, 3, 2], [2, 2, 5, 5, 5]])
    j, t = jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    jv, ji = jitgrad.mode(j, 1)
    tv, ti = torch.mode(t, 1)
    np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    jv.sum().backward()
    tv.sum().backward()
    np.testing.assert_array_equal(j.grad.numpy(), t.grad.numpy())


def test_bincount_histc_searchsorted_isin_options():
    torch = pytest.importorskip("torch")
    i = np.array([0, 3, 3, 1, 7])
    w = R.uniform(0, 1, 5)
    for args, kw in (((i,), {}), ((i, w), {}), ((i,), {"minlength": 10}),
                     ((i, w.astype(np.float32)), {"minlength": 9}), ((i, np.arange(5)), {})):
        j = jitgrad.bincount(*[jitgrad.tensor(a) for a in args], **kw)
        t = torch.bincount(*[torch.tensor(a) for a in args], **kw)
        assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-6)
    assert tuple(jitgrad.bincount(jitgrad.zeros(0, dtype=jitgrad.long)).shape) == (0,)
    seq, vals = np.sort(R.uniform(0, 1, (2, 6))), R.uniform(0, 1, (2, 3))
    order = np.argsort(R.uniform(size=6))
    unsorted = np.sort(seq[0])[np.argsort(order)]
    for kw in ({"right": True}, {"side": "left"}, {"out_int32": True}):
        j = jitgrad.searchsorted(jitgrad.tensor(seq), jitgrad.tensor(vals), **kw)
        t = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), **kw)
        assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(j.numpy(), t.numpy())
    srt = jitgrad.tensor(np.argsort(unsorted))
    j = jitgrad.searchsorted(jitgrad.tensor(unsorted), jitgrad.tensor(vals[0]), sorter=srt)
    t = torch.searchsorted(torch.tensor(unsorted), torch.tensor(vals[0]),
                           sorter=torch.tensor(np.argsort(unsorted)))
    np.testing.assert_array_equal(j.numpy(), t.numpy())
    assert jitgrad.searchsorted(jitgrad.tensor(seq[0]), 0.5).item() == \
        torch.searchsorted(torch.tensor(seq[0]), 0.5).item()
    xs = np.array([1.0, np.nan, 3.0, 4.0, -5.0])
    np.testing.assert_array_equal(jitgrad.histc(jitgrad.tensor(xs), 4, 0, 4).numpy(),
                                  torch.histc(torch.tensor(xs), 4, 0, 4).numpy())
    np.testing.assert_array_equal(jitgrad.tensor([2.0, 2.0]).histc(3).numpy(),
                                  torch.tensor([2.0, 2.0]).histc(3).numpy())
    np.testing.assert_array_equal(jitgrad.isin(3, jitgrad.tensor([1, 3])).numpy(),
                                  torch.isin(3, torch.tensor([1, 3])).numpy())


def test_inplace_variants():
    torch = pytest.importorskip("torch")
    idx = np.array([[0, 1, 0, 2, 1]])
    src = R.uniform(0.5, 2, (1, 5))
    for lib in (jitgrad, torch):
        a = lib.tensor(X.copy())
        a.scatter_reduce_(0, lib.tensor(idx), lib.tensor(src), "amax", include_self=False)
        a.index_copy_(1, lib.tensor([4]), lib.tensor(np.ones((3, 1))))
        a.index_fill_(0, lib.tensor([1]), -3.0)
        a.renorm_(2, 0, 1.0)
        if lib is jitgrad:
            got = a.numpy()
        else:
            np.testing.assert_allclose(got, a.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda L: L.quantile(L.ones(3), 1.5), r"q must be in the range \[0, 1\] but got 1.5"),
    (lambda L: L.quantile(L.ones(3), L.tensor([0.5, -1.0])), r"q values must be in the range"),
    (lambda L: L.quantile(L.ones(3, dtype=L.long), 0.5), "must be either float or double"),
    (lambda L: L.quantile(L.ones(3), 0.5, interpolation="cubic"), "interpolation must be one"),
    (lambda L: L.quantile(L.ones(0), 0.5), "input tensor must be non-empty"),
    (lambda L: L.scatter_reduce(L.ones(3), 0, L.tensor([0]), L.ones(1), "median"),
     "reduce argument must be either sum, prod, mean, amax or amin"),
    (lambda L: L.index_fill(L.ones(3), 0, L.tensor([0]), L.ones(2)),
     "only supports a 0-dimensional value tensor"),
    (lambda L: L.renorm(L.ones(3), 2, 0, 1.0), "input needs at least 2 dimensions"),
    (lambda L: L.cov(L.ones(2, 2, 2)), "expected input to have two or fewer dimensions"),
    (lambda L: L.bincount(L.tensor([-1, 2])), "1-d non-negative integral inputs"),
    (lambda L: L.bincount(L.ones(3)), "\"bincount_cpu\" not implemented for 'Float'"),
    (lambda L: L.searchsorted(L.ones(3), L.ones(2), right=True, side="left"),
     "side and right can't be set to opposites"),
    (lambda L: L.searchsorted(L.ones(2, 3), L.ones(3, 2)), "boundaries tensor should be 1"),
    (lambda L: L.histc(L.tensor([1.0, float("nan")])), "is not finite"),
    (lambda L: L.kthvalue(L.ones(3), 4), "selected number k out of range"),
    (lambda L: L.logcumsumexp(L.ones(3, dtype=L.long), 0), "not implemented for 'Long'"),
])
def test_errors_as_torch(call, match):
    torch = pytest.importorskip("torch")
    errors = (RuntimeError, IndexError, NotImplementedError)
    with pytest.raises(errors, match=match):
        call(torch)
    with pytest.raises(errors, match=match):
        call(jitgrad)


def test_reductions_under_jit_match_eager():
    x = jitgrad.tensor(X, requires_grad=True)

    def f(a):
        return (a.cummax(1).values.sum() + a.logcumsumexp(0).sum() + a.median(1).values.sum()
                + a.kthvalue(2, 0).values.sum() + jitgrad.aminmax(a).max
                + a.scatter_reduce(0, jitgrad.tensor([[0, 1, 0, 2, 1]]), a[:1] * 2, "amax")
                .sum() + jitgrad.quantile(a, 0.3, 1).sum() + jitgrad.cov(a).sum())
    eager = f(x)
    (ge,) = jitgrad.autograd.grad(eager, x)
    jf = jitgrad.jit(f)
    got = jf(x)
    (gj,) = jitgrad.autograd.grad(got, x)
    np.testing.assert_allclose(got.item(), eager.item(), rtol=1e-12)
    np.testing.assert_allclose(gj.numpy(), ge.numpy(), rtol=1e-12, atol=1e-14)


def _records():
    import zlib

    from opdb_reductions2 import reductions2_records, reductions3_records

    out = []
    for rec in reductions2_records() + reductions3_records():
        if not rec.differentiable:
            continue
        for s in rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode()))):
            out.append(pytest.param(rec, s, id=f"{rec.name}-{s.name}"))
    return out


@pytest.mark.parametrize("rec,sample", _records())
def test_forward_mode_equals_reverse_mode(rec, sample):
    """Each defop's JVP rule against its VJP rule: u . (J v) == (J^T u) . v."""
    import jitgrad.autograd.forward_ad as fwAD
    from opdb import convert

    args = list(convert(sample.args, jitgrad, jitgrad.float64))
    kwargs = {k: convert(v, jitgrad, jitgrad.float64) for k, v in sample.kwargs.items()}
    slots = [i for i, a in enumerate(sample.args)
             if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    rng = np.random.default_rng(7)
    vs = [jitgrad.tensor(rng.standard_normal(tuple(args[i].shape))) for i in slots]

    def first(out):
        return out[0] if isinstance(out, tuple) else out
    with fwAD.dual_level():
        a = list(args)
        for i, v in zip(slots, vs):
            a[i] = fwAD.make_dual(args[i], v)
        tangent = fwAD.unpack_dual(first(rec.run(jitgrad, tuple(a), kwargs))).tangent
    a = list(args)
    for i in slots:
        a[i] = args[i].detach().requires_grad_()
    out = first(rec.run(jitgrad, tuple(a), kwargs))
    u = jitgrad.tensor(rng.standard_normal(tuple(out.shape)))
    grads = jitgrad.autograd.grad(out, [a[i] for i in slots], u, allow_unused=True)
    back = sum(float((g * v).sum()) for g, v in zip(grads, vs) if g is not None)
    np.testing.assert_allclose(float((u * tangent).sum()), back, rtol=1e-10, atol=1e-12)


_NO_DOF = {
    "std_one": lambda L: L.tensor([1.0]).std(),
    "var_empty": lambda L: L.tensor([]).var(),
    "var_empty_c0": lambda L: L.tensor([]).var(correction=0),
    "var_c3": lambda L: L.tensor([1.0, 2.0]).var(correction=3),
    "std_dim": lambda L: L.ones(1, 3).std(0),
    "std_empty_out": lambda L: L.ones(0, 3).std(1),
    "std_mean": lambda L: L.std_mean(L.ones(1)),
    "var_mean_dim": lambda L: L.var_mean(L.ones(1, 2), 0),
    "var_mean_empty": lambda L: L.var_mean(L.ones(0)),
    "var_ok": lambda L: L.ones(2).var(),
    "var_biased_one": lambda L: L.ones(1).var(unbiased=False),
    "var_float_correction": lambda L: L.ones(3).var(correction=2.5),
    "mean_empty": lambda L: (L.tensor([]).mean(), L.ones(0, 2).mean(0), L.ones(2, 0).mean(1)),
}


@pytest.mark.parametrize("name", sorted(_NO_DOF))
def test_no_degrees_of_freedom_warn_as_torch(name):
    """torch's UserWarning where the correction leaves no degree of freedom (an actor-critic's
    ``returns.std()`` over a one-step episode), never NumPy's RuntimeWarnings; same values."""
    import warnings

    torch = pytest.importorskip("torch")

    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _NO_DOF[name](lib)
        out = out if isinstance(out, tuple) else (out,)
        return [o.tolist() for o in out], [(w.category, str(w.message)) for w in caught]
    (ours, our_warnings), (theirs, their_warnings) = run(jitgrad), run(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float))
    their_warnings = [(c, m.split(" (Triggered internally")[0]) for c, m in their_warnings]
    assert sorted(set(our_warnings)) == sorted(set(their_warnings))


@pytest.mark.parametrize("name", ["float32", "complex64", "float16", "bfloat16"])
def test_cumsum_cumprod_accumulate_as_torch_cpu(name):
    # torch's CPU scans accumulate float32 in double and the 16-bit floats in float32, rounding
    # each partial result once (a float32 accumulator drifts from it: tiny-diffusion's
    # cumprod of 1 - beta differed by an ulp, 5e-5 relative after 1 - alphas_cumprod)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.uniform(0.97, 1.02, (3, 500))
    if name == "complex64":
        x = x + 1j * rng.uniform(-0.01, 0.01, x.shape)
    for op in ("cumsum", "cumprod"):
        for dim in (0, 1):
            mine = getattr(jitgrad.tensor(x).to(getattr(jitgrad, name)), op)(dim)
            theirs = getattr(torch.tensor(x).to(getattr(torch, name)), op)(dim)
            assert mine.dtype.name == str(theirs.dtype).split(".")[1]
            wide_j = jitgrad.complex128 if name == "complex64" else jitgrad.float64
            wide_t = torch.complex128 if name == "complex64" else torch.float64
            np.testing.assert_array_equal(mine.to(wide_j).numpy(), theirs.to(wide_t).numpy())
    # dtype=: the input is converted first, then accumulated as that dtype accumulates
    x32 = rng.uniform(-1, 1, 300).astype(np.float32)
    for dt in ("float16", "float64"):
        mine = jitgrad.tensor(x32).cumsum(0, dtype=getattr(jitgrad, dt))
        theirs = torch.tensor(x32).cumsum(0, dtype=getattr(torch, dt))
        np.testing.assert_array_equal(mine.double().numpy(), theirs.double().numpy())


@pytest.mark.parametrize("interpolation", ["linear", "midpoint", "lower", "higher", "nearest"])
def test_quantile_bit_for_bit_with_torch_and_infinities(interpolation):
    """Linear and midpoint interpolate with lerp, as torch's (its rounding; inf - inf NaN)."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((200, 57)).astype(np.float32)
    q = [0.1, 0.33, 0.5, 0.77, 0.9]
    ours = jitgrad.quantile(jitgrad.tensor(x), jitgrad.tensor(q), dim=1,
                            interpolation=interpolation)
    theirs = torch.quantile(torch.tensor(x), torch.tensor(q), dim=1, interpolation=interpolation)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    inf = float("inf")
    for lib in (jitgrad, torch):
        assert str(lib.quantile(lib.tensor([-inf, 1.0, inf]), lib.tensor([0.25, 0.75]),
                                interpolation="linear").tolist()) == "[-inf, nan]"
        assert np.isnan(lib.quantile(lib.tensor([1.0, inf]), 0.5).item())


def test_quantile_errors_as_torch():
    cases = [(lambda L: L.quantile(L.ones(3), 0.5, interpolation="cubic"),
              "quantile() interpolation must be one of linear, lower, higher, midpoint or "
              "nearest, but got cubic"),
             (lambda L: L.quantile(L.ones(3), -0.1),
              "quantile() q must be in the range [0, 1] but got -0.1"),
             (lambda L: L.nanquantile(L.ones(2 ** 24 + 1), 0.5),
              "nanquantile() input tensor is too large")]
    for call, text in cases:
        with pytest.raises(RuntimeError, match=re.escape(text)):
            call(jitgrad)
    # (the limit is on the reduced dim)
    assert jitgrad.quantile(jitgrad.ones(2 ** 24 + 1, 2), 0.5, dim=1).shape == (2 ** 24 + 1,)


def test_logsumexp_without_dim_says_what_torch_says():
    for call in (lambda: jitgrad.logsumexp(jitgrad.ones(2)), lambda: jitgrad.ones(2).logsumexp()):
        with pytest.raises(TypeError, match=re.escape(
                'logsumexp() missing 1 required positional arguments: "dim"')):
            call()
