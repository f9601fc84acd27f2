"""What the opdb sweep of ``tests/opdb_surface16.py`` does not reach: views (in-place writes
through ``diagonal`` and ``unfold``), ``index_put_``, cdist's matrix-product path and
``compute_mode``, error texts, and the ops under ``jit``."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck
from torch_compare import arr, same_error

RNG = np.random.default_rng(3)


def _pair(*shape):
    import torch

    x = RNG.standard_normal(shape)
    return jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _run(fn, *pairs):
    """fn(lib, *inputs) under both libraries: outputs and input gradients compared."""
    import torch

    outs = {}
    for lib, k in ((jitgrad, 0), (torch, 1)):
        xs = [p[k] for p in pairs]
        out = fn(lib, *xs)
        w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        outs[lib] = out
    np.testing.assert_allclose(arr(outs[jitgrad]), arr(outs[torch]), rtol=1e-10, atol=1e-12)
    for p in pairs:
        np.testing.assert_allclose(arr(p[0].grad), arr(p[1].grad), rtol=1e-10, atol=1e-12)
    return outs[jitgrad], outs[torch]


def test_writes_through_diagonal_view_match_torch():
    pytest.importorskip("torch")

    def fn(lib, a):
        b = a * 2
        b.diagonal(1).mul_(3)
        b.diagonal().zero_()
        return b
    ours, theirs = _run(fn, _pair(3, 4))
    assert theirs.grad_fn.name() == "torch::autograd::" + ours.grad_fn.name() == \
        "torch::autograd::CopySlices"  # (the documented missing prefix)
    x = jitgrad.zeros(3, 3)
    d = x.diagonal()
    d.fill_(1.0)
    assert d._base is x and x._version == d._version == 1
    np.testing.assert_array_equal(arr(x), np.eye(3))


def test_unfold_view_and_backward_of_overlapping_windows():
    pytest.importorskip("torch")
    ours, theirs = _run(lambda lib, a: a.unfold(1, 3, 1) * a.unfold(1, 3, 1), _pair(2, 6))
    x = jitgrad.arange(6.0)
    w = x.unfold(0, 2, 2)
    assert w._base is x
    w.mul_(10)
    np.testing.assert_array_equal(arr(x), [0, 10, 20, 30, 40, 50])
    t = jitgrad.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    assert gradcheck(lambda a: a.unfold(-1, 2, 1).prod(-1), (t,))
    assert jitgrad.tensor(2.0).unfold(0, 1, 1).shape == (1,)


def test_index_put_inplace_matches_torch():
    pytest.importorskip("torch")

    def fn(lib, a, v):
        b = a.clone()
        idx = (lib.tensor([0, 2, 0]), lib.tensor([1, 1, 1]))
        b.index_put_(idx, v, accumulate=True)
        return lib.index_put(b, (lib.tensor([True, False, True]),), v[:1] * 3)
    ours, theirs = _run(fn, _pair(3, 4), _pair(3))
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "IndexPutBackward0"
    same_error(lambda lib: lib.zeros(3).index_put_((lib.tensor([0]),),
                                                    lib.tensor(1.0, dtype=lib.float64)))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        jitgrad.zeros(3, requires_grad=True).index_put_((jitgrad.tensor([0]),),
                                                        jitgrad.tensor(1.0))


@pytest.mark.parametrize("rows,mode,p", [(30, "use_mm_for_euclid_dist_if_necessary", 2.0),
                                         (4, "use_mm_for_euclid_dist", 2.0),
                                         (30, "donot_use_mm_for_euclid_dist", 2.0),
                                         (30, "use_mm_for_euclid_dist_if_necessary", 1.5),
                                         (6, "use_mm_for_euclid_dist_if_necessary", 0.5)])
def test_cdist_paths_match_torch(rows, mode, p):
    pytest.importorskip("torch")
    ours, theirs = _run(lambda lib, a, b: lib.cdist(a, b, p=p, compute_mode=mode),
                        _pair(2, rows, 3), _pair(1, 7, 3))
    assert ours.grad_fn.name() == theirs.grad_fn.name() or ours.grad_fn.name() == "SqrtBackward0"


def test_errors_match_torch():
    pytest.importorskip("torch")
    same_error(lambda lib: lib.diag(lib.zeros(2, 2, 2)))
    same_error(lambda lib: lib.zeros(3, 4).diagonal(0, 1, 1))
    same_error(lambda lib: lib.zeros(3, 4).diagonal(0, 1, 2))
    same_error(lambda lib: lib.zeros(3, 4).unfold(1, 5, 1))
    same_error(lambda lib: lib.zeros(3, 4).unfold(1, 2, 0))
    same_error(lambda lib: lib.zeros(3, 4).unbind(2))
    same_error(lambda lib: lib.cdist(lib.zeros(3, 4), lib.zeros(3, 5)))
    same_error(lambda lib: lib.cdist(lib.zeros(3, 4), lib.zeros(3, 4), p=-1))
    same_error(lambda lib: lib.cdist(lib.zeros(3), lib.zeros(3, 4)))
    same_error(lambda lib: lib.nanmean(lib.tensor([1, 2])))
    same_error(lambda lib: lib.var_mean(lib.tensor([1, 2])))
    same_error(lambda lib: lib.std_mean(lib.tensor([1, 2]), 0))


def test_integer_and_dtype_results_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (jitgrad, torch):
        assert str(lib.nansum(lib.tensor([1, 2])).dtype).endswith("int64")
        assert str(lib.nansum(lib.tensor([1.0, float("nan")]), dtype=lib.float64).dtype) \
            .endswith("float64")
    v, m = jitgrad.var_mean(jitgrad.ones(2, 3), 1, True)  # (unbiased given positionally)
    assert v.shape == m.shape == (2,)
    assert type(jitgrad.std_mean(jitgrad.ones(3))) is tuple


def test_ops_under_jit_match_eager():
    x = jitgrad.tensor(RNG.standard_normal((4, 5)))
    y = jitgrad.tensor(RNG.standard_normal((3, 5)))

    def f(a, b):
        parts = a.unbind(0)
        d = jitgrad.diag_embed(a.diagonal()) + jitgrad.diag(a[:, :4].diagonal(1), 1)
        v, m = jitgrad.var_mean(a, 1)
        return (parts[0] * parts[3]).sum() + d.sum() + jitgrad.cdist(a, b).sum() + \
            (v * m).sum() + a.unfold(1, 2, 1).sum(-1).sum() + jitgrad.nansum(a)

    want = f(x, y)
    got = jitgrad.jit(f)(x, y)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    xr = x.detach().requires_grad_()
    g_jit = jitgrad.autograd.grad(jitgrad.jit(f)(xr, y), xr)[0]
    g_eager = jitgrad.autograd.grad(f(xr, y), xr)[0]
    np.testing.assert_allclose(arr(g_jit), arr(g_eager), rtol=1e-10, atol=1e-12)


def test_distance_and_norm_modules_match_torch():
    torch = pytest.importorskip("torch")
    for kw in ({"normalized_shape": 4}, {"normalized_shape": [3, 4], "eps": 1e-5,
                                         "elementwise_affine": False}):
        jm, tm = jitgrad.nn.RMSNorm(dtype=jitgrad.float64, **kw), \
            torch.nn.RMSNorm(dtype=torch.float64, **kw)
        assert repr(jm) == repr(tm)
        assert list(jm.state_dict()) == list(tm.state_dict())
        if jm.weight is not None:
            w = RNG.uniform(0.5, 1.5, (4,))
            jm.weight.data = jitgrad.tensor(w)
            tm.weight.data = torch.tensor(w)
        _run(lambda lib, a, jm=jm, tm=tm: (jm if lib is jitgrad else tm)(a), _pair(2, 3, 4))
    for name, kw in (("CosineSimilarity", {"dim": 0, "eps": 1e-6}),
                     ("PairwiseDistance", {"p": 1.0, "keepdim": True})):
        jm, tm = getattr(jitgrad.nn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(jm) == repr(tm)
        _run(lambda lib, a, b, jm=jm, tm=tm: (jm if lib is jitgrad else tm)(a, b), _pair(3, 4),
             _pair(3, 4))


def test_clamp_min_max_inplace_and_errors_match_torch():
    pytest.importorskip("torch")

    def fn(lib, a, b):
        c = a * 1
        c.clamp_min_(-0.5)
        return c.clamp_max(b)
    ours, theirs = _run(fn, _pair(3, 4), _pair(4))
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "ClampMaxBackward1"
    same_error(lambda lib: lib.nn.functional.rms_norm(lib.zeros(2, 3), (4,)))
    same_error(lambda lib: lib.nn.functional.cosine_similarity(lib.zeros(2, 3), lib.zeros(2, 4)))
    assert jitgrad.clamp_min(jitgrad.tensor([1, 2]), 0.5).dtype is jitgrad.float32


def _forward_cases():
    import zlib

    from opdb_surface16 import surface16_records

    out = []
    for rec in surface16_records():
        for i, s in enumerate(rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))):
            out.append(pytest.param(rec, s, id=f"{rec.name}-{s.name or i}"))
    return out


@pytest.mark.parametrize("rec,sample", _forward_cases())
def test_forward_ad_jacobians(rec, sample):
    """Each op's JVP rule (forward mode) against numerical Jacobians, in float64."""
    from opdb import convert

    f64 = jitgrad.float64
    args = list(convert(sample.args, jitgrad, f64))
    kwargs = {k: convert(v, jitgrad, f64) for k, v in sample.kwargs.items()}
    slots = [i for i, a in enumerate(sample.args)
             if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    inputs = tuple(args[i].requires_grad_() for i in slots)

    def fn(*ts):
        a = list(args)
        for i, t in zip(slots, ts):
            a[i] = t
        out = rec.run(jitgrad, tuple(a), kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(o for o in outs if o.dtype.is_floating_point)
    assert gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=False)
