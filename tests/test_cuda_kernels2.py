"""More hand-written CUDA kernels, on numba's simulator (``tests/test_cuda_ptx.py`` compiles
them to PTX): complex and bool ``scatter_add`` / ``index_add`` / ``index_put(accumulate=True)``
(two float atomics on the complex result's floats; a logical or for bool), bool ``diag`` /
``diag_embed``, and the further sorts, scans and indexed writes of ``cuda_lines2``.

Each case runs the same call on the CPU and on cuda tensors and compares values, dtypes and
gradients (the CPU ops are tested against torch elsewhere). Sizes are tiny.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import CUDA

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402

RNG = np.random.default_rng(1414)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def both(fn, *arrays, dtype=None, grad=True, rtol=1e-10, atol=1e-12):
    """``fn`` on CPU and on cuda tensors made from ``arrays`` (NumPy arrays in ``dtype``, or
    tensors of another kind passed through): equal values and dtypes, and for float or complex
    inputs equal gradients of a real loss of the outputs. Returns the cuda outputs."""
    results = []
    for device in ("cpu", "cuda"):
        ts = []
        for a in arrays:
            if isinstance(a, np.ndarray):
                t = jitgrad.tensor(a, device=device, dtype=dtype if a.dtype.kind in "fcb" and
                                   dtype is not None else None)
                if grad and (t.dtype.is_floating_point or t.dtype.is_complex):
                    t.requires_grad_()
                ts.append(t)
            else:
                ts.append(a)
        outs = fn(*ts)
        outs = [o for o in (outs if isinstance(outs, (tuple, list)) else (outs,))
                if isinstance(o, jitgrad.Tensor)]
        leaves = [t for t in ts if isinstance(t, jitgrad.Tensor) and t.requires_grad]
        grads = []
        diff = [o for o in outs if o.requires_grad]
        if leaves and diff:
            total = 0
            for k, o in enumerate(diff):
                w = (k + 1.5) * (1 + 0.25j if o.dtype.is_complex else 1.0)
                total = total + ((o * w).real if o.dtype.is_complex else o * w).sum() \
                    + (o.abs().sum() if o.dtype.is_complex else 0)
            grads = jitgrad.autograd.grad(total, leaves, allow_unused=True)
        if device == "cuda":
            assert all(o.is_cuda for o in outs)
            assert all(g is None or g.is_cuda for g in grads)
        results.append(([o.detach().cpu().numpy() for o in outs],
                        [None if g is None else g.cpu().numpy() for g in grads]))
    (cpu, cpu_g), (gpu, gpu_g) = results
    assert len(cpu_g) == len(gpu_g)
    for a, b in zip(cpu + cpu_g, gpu + gpu_g):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype, (a.dtype, b.dtype)
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    return gpu


def _index(a, device):
    return jitgrad.tensor(np.asarray(a), device=device)


# ---------------------------------------------------------------- complex and bool adds
@pytest.mark.parametrize("dtype", [jitgrad.complex64, jitgrad.complex128])
def test_complex_scatter_add_index_add_and_accumulate_with_gradients(dtype):
    idx = np.array([[0, 2, 0, 1], [0, 0, 2, 2]])  # (duplicates: the atomics must add)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is jitgrad.complex64 else {}
    for dim in (0, 1):
        i = idx if dim == 0 else idx[:, :3]
        both(lambda x, s, dim=dim, i=i: x.scatter_add(dim, _index(i, x.device.type), s),
             _complex(3, 4), _complex(*i.shape), dtype=dtype, **tol)
    both(lambda x, s: x.index_add(1, _index([3, 0, 3], x.device.type), s, alpha=2),
         _complex(2, 4), _complex(2, 3), dtype=dtype, **tol)
    both(lambda x, s: x.index_put((_index([1, 0, 1], x.device.type),), s, accumulate=True),
         _complex(3, 2), _complex(3, 2), dtype=dtype, **tol)
    both(lambda x, s: x.index_add(0, _index([1, 1, 1], x.device.type), s)[1],  # 1-d
         _complex(2), _complex(3), dtype=dtype, **tol)


def test_complex_scatter_add_gradients_equal_torch():
    torch = pytest.importorskip("torch")
    x0, s0, i0 = _complex(3, 4), _complex(2, 4), np.array([[0, 2, 0, 1], [0, 0, 2, 2]])
    w = _complex(3, 4)
    x, s = (jitgrad.tensor(a, device="cuda", requires_grad=True) for a in (x0, s0))
    ((x.scatter_add(0, _index(i0, "cuda"), s) * jitgrad.tensor(w, device="cuda")).abs()
     .sum().backward())
    tx, ts = (torch.tensor(a, requires_grad=True) for a in (x0, s0))
    (tx.scatter_add(0, torch.tensor(i0), ts) * torch.tensor(w)).abs().sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(s.grad.cpu().numpy(), ts.grad.numpy(), rtol=1e-10)


def test_bool_adds_are_a_logical_or():
    x = RNG.standard_normal((3, 5)) > 0.8
    s = RNG.standard_normal((4, 5)) > 0
    idx = np.array([[0, 1, 2, 0, 1], [2, 2, 2, 2, 2], [0, 0, 0, 0, 0], [1, 0, 1, 0, 1]])
    out = both(lambda x, s: x.scatter_add(0, _index(idx, x.device.type), s), x, s)[0]
    assert out.dtype == np.bool_ and out.any() and not out.all()
    both(lambda x, s: x.index_add(0, _index([2, 2, 0, 2], x.device.type), s), x, s)
    both(lambda x, s: x.index_put((_index([1, 1, 0, 1], x.device.type),), s, accumulate=True),
         x, s)
    y = jitgrad.zeros(3, dtype=jitgrad.bool, device="cuda")  # (True or False is True)
    y = y.index_put((_index([0, 0, 2], "cuda"),), _index([True, False, False], "cuda"),
                    accumulate=True)
    assert y.cpu().tolist() == [True, False, False]


# ---------------------------------------------------------------- bool diag / diag_embed
def test_bool_diag_and_diag_embed_stay_bool():
    b = np.array([True, False, True])
    m = RNG.standard_normal((3, 4)) > 0
    for r in both(lambda x, m: (x.diag(), x.diag(1), x.diag(-2), x.diag_embed(-1), m.diag(),
                                m.diag(-1), m.diag(2), m.diagonal(1)), b, m):
        assert r.dtype == np.bool_
    both(lambda x: x.diag_embed(1, 0, 2), np.stack([b, ~b]))
    both(lambda x: x.diag_embed(1, 0, 2), RNG.standard_normal((2, 3)))  # (float: gradients)


# ---------------------------------------------------------------- cuda_lines2
_NANS = np.array([[3.0, 1.0, np.nan, 1.0, 5.0, 5.0, 0.5],
                  [2.0, 2.0, 7.0, -1.0, 2.0, np.nan, np.nan],
                  [np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
                  [4.0, -3.0, 4.0, 0.0, 4.0, -3.0, 1.0]])


@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin_ties_take_the_later_index_and_nan_propagates(dim):
    both(lambda x: (x.cummax(dim), x.cummin(dim)), _NANS.copy())
    both(lambda x: (x.cummax(dim), x.cummin(dim)), RNG.standard_normal((3, 5)))  # gradients
    both(lambda x: (x.cummax(dim), x.cummin(dim)), RNG.integers(-2, 3, (4, 3)))
    both(lambda x: (x.cummax(dim), x.cummin(dim)), RNG.standard_normal((4, 3)) > 0)
    both(lambda x: x.cummax(0), np.array(2.5))  # 0-d


def test_cummax_indices_equal_torch():
    torch = pytest.importorskip("torch")
    v, i = jitgrad.tensor(_NANS, device="cuda").cummax(1)
    tv, ti = torch.tensor(_NANS).cummax(1)
    np.testing.assert_array_equal(v.cpu().numpy(), tv.numpy())
    np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())


@pytest.mark.parametrize("dtype", [jitgrad.float32, jitgrad.float64])
def test_logcumsumexp_with_infinities_and_gradients(dtype):
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is jitgrad.float32 else {}
    both(lambda x: x.logcumsumexp(1), RNG.standard_normal((3, 6)) * 30, dtype=dtype, **tol)
    both(lambda x: x.logcumsumexp(0), RNG.standard_normal((5, 2)), dtype=dtype, **tol)
    both(lambda x: x.logcumsumexp(0),
         np.array([-np.inf, -np.inf, 1.0, np.inf, 2.0, np.nan, 0.0]), dtype=dtype, grad=False)


def test_kthvalue_median_nanmedian_mode_pick_as_the_cpu():
    # (kthvalue: values only where rows tie; the CPU names torch's CPU quickselect's index among
    # tied values, the device the first in stable order, as torch's own CUDA kernel differs)
    for x in (_NANS, np.where(np.isnan(_NANS), 1.0, _NANS)):
        for dim in (0, 1):
            both(lambda t, dim=dim: (t.median(dim), t.nanmedian(dim, keepdim=True),
                                     t.mode(dim), t.kthvalue(2, dim)[0]), x.copy(), grad=False)
        both(lambda t: (t.median(), t.nanmedian()), x.copy(), grad=False)
    ints = RNG.integers(-2, 3, (4, 9))
    both(lambda t: (t.median(1), t.mode(1), t.mode(0), t.kthvalue(5, 1)[0], t.median()), ints)
    both(lambda t: (t.mode(1), t.mode(0)), ints > 0)  # (median/kthvalue refuse bool, as torch)
    # gradients through the picked index (no ties: finite values)
    both(lambda t: (t.median(1)[0], t.kthvalue(3, 0, keepdim=True)[0], t.nanmedian(),
                    t.median()), RNG.standard_normal((5, 4)))


def test_mode_ties_and_median_equal_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, 2.0, 2.0, 1.0, 3.0, 1.0, 2.0], [0.0, 5.0, 5.0, 0.0, 7.0, 7.0, 9.0]])
    x, t = jitgrad.tensor(a, device="cuda"), torch.tensor(a)
    b = RNG.permutation(12).reshape(2, 6).astype(np.float64)  # (no ties: one index)
    y, u = jitgrad.tensor(b, device="cuda"), torch.tensor(b)
    for mine, theirs in ((x.mode(1), t.mode(1)), (x.mode(0), t.mode(0)),
                         (y.median(1), u.median(1)), (y.kthvalue(4, 1), u.kthvalue(4, 1))):
        np.testing.assert_array_equal(mine[0].cpu().numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(mine[1].cpu().numpy(), theirs[1].numpy())


def test_aminmax_all_dim_keepdim_with_gradients():
    x = RNG.standard_normal((3, 4))
    both(lambda t: (*t.aminmax(), *t.aminmax(dim=1), *t.aminmax(dim=0, keepdim=True),
                    *t.aminmax(keepdim=True)), x)
    both(lambda t: t.aminmax(dim=1), _NANS.copy(), grad=False)
    both(lambda t: t.aminmax(dim=0), RNG.integers(-5, 5, (3, 2)))


def test_searchsorted_and_bucketize_sides_rows_and_nan():
    seq = np.array([-1.0, 0.0, 0.0, 2.0, 5.0, np.nan])
    vals = np.array([[-2.0, 0.0, 1.0], [5.0, 9.0, np.nan]])
    for right in (False, True):
        both(lambda s, v, right=right: jitgrad.searchsorted(s, v, right=right), seq, vals)
        both(lambda s, v, right=right: jitgrad.searchsorted(s, v, right=right, out_int32=True),
             np.sort(RNG.standard_normal((3, 5)), 1), RNG.standard_normal((3, 4)))
        both(lambda v, b, right=right: jitgrad.bucketize(v, b, right=right),
             RNG.integers(-3, 4, (2, 5)), np.array([-2, 0, 0, 3]))
    both(lambda s, v: jitgrad.searchsorted(s, v, side="right"), np.array([1, 3, 3, 8]),
         np.array(3))


def test_isin_mixed_dtypes_invert_and_nan():
    e = np.array([[1.0, np.nan, 3.0], [4.0, 2.0, -0.0]])
    for invert in (False, True):
        both(lambda a, b, invert=invert: jitgrad.isin(a, b, invert=invert), e,
             np.array([0.0, 2.0, np.nan, 4.0]))
        both(lambda a, b, invert=invert: jitgrad.isin(a, b, invert=invert),
             RNG.integers(0, 6, (3, 4)), np.array([5, 1]))
    both(lambda a, b: jitgrad.isin(a, b), RNG.integers(0, 6, 4), np.zeros(0, np.int64))
    for values in (_complex(2, 3), np.array([True, False])):  # (refused on both devices, as torch)
        for device in ("cpu", "cuda"):
            with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
                jitgrad.isin(jitgrad.tensor(values, device=device),
                             jitgrad.tensor(values[:1].ravel(), device=device))


@pytest.mark.parametrize("dtype", [jitgrad.float32, jitgrad.float64])
def test_histc_default_range_given_range_and_edges(dtype):
    x = np.concatenate([RNG.standard_normal(40), [-1.0, 1.0, 0.0, 1.5, -7.0]])
    both(lambda t: (t.histc(), t.histc(7), t.histc(4, -1.0, 1.0), t.histc(3, 0.5, 0.5)), x,
         dtype=dtype, grad=False)
    x[3] = np.nan  # (NaN is in no bin; the data's range of a NaN is not finite)
    both(lambda t: t.histc(6, -2.0, 2.0), x, dtype=dtype, grad=False)
    with pytest.raises(RuntimeError, match="not finite"):
        jitgrad.tensor(x, device="cuda").histc()
    both(lambda t: t.histc(5, -1.0, 1.0), np.linspace(-1.0, 1.0, 11), dtype=dtype, grad=False)
    both(lambda t: t.histc(3), np.full(4, 2.0), dtype=dtype, grad=False)  # (min == max)


def test_index_copy_and_index_fill_with_duplicates_and_gradients():
    idx = np.array([2, 0, 2])  # (duplicates: the last write wins, as on the CPU)
    both(lambda x, s: x.index_copy(1, _index(idx, x.device.type), s),
         RNG.standard_normal((3, 4)), RNG.standard_normal((3, 3)))
    both(lambda x, s: x.index_copy(0, _index([1], x.device.type), s),
         RNG.standard_normal((2, 3)), RNG.standard_normal((1, 3)))
    both(lambda x: x.index_fill(-1, _index(idx, x.device.type), -1.5),
         RNG.standard_normal((2, 3, 4)))
    both(lambda x, v: x.index_fill(0, _index([1, 1], x.device.type), v),
         RNG.standard_normal((3, 2)), np.array(4.0))
    both(lambda x: x.index_fill(1, _index([0], x.device.type), 2.7), RNG.integers(0, 9, (2, 3)))
    both(lambda x, s: x.index_copy(0, _index([1, 0], x.device.type), s), _complex(2, 2),
         _complex(2, 2))
    with pytest.raises(IndexError):
        jitgrad.zeros(2, 3, device="cuda").index_fill(1, _index([3], "cuda"), 1.0)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", _REDUCES)
def test_scatter_reduce_every_reduction_with_duplicates_and_gradients(reduce, include_self):
    idx = np.array([[0, 2, 0, 1], [2, 2, 2, 0], [1, 0, 1, 1]])
    for dim, x_shape in ((0, (3, 4)), (1, (3, 5))):
        i = idx if dim == 0 else idx[:, :3]  # (src larger than the index: its leading part)
        fn = (lambda x, s, dim=dim, i=i: x.scatter_reduce(dim, _index(i, x.device.type), s,
                                                          reduce, include_self=include_self))
        grad = True  # (prod's and mean's VJP make their ones/zeros on g's device)
        both(fn, RNG.standard_normal(x_shape), RNG.standard_normal(i.shape), grad=grad)
        # (the CPU's gradient of a src larger than the index fails: ops/, values only)
        both(fn, RNG.standard_normal(x_shape), RNG.standard_normal((3, 4)), grad=grad and dim == 0)
        both(fn, RNG.integers(-4, 5, x_shape), RNG.integers(-4, 5, (3, 4)))
        both(fn, RNG.standard_normal(x_shape) > 0, RNG.standard_normal((3, 4)) > 0)
        if reduce not in ("amax", "amin"):
            both(fn, _complex(*x_shape), _complex(*i.shape), grad=grad, rtol=1e-9)


def test_scatter_reduce_amax_propagates_nan_and_rejects_complex_order():
    x = np.array([[1.0, np.nan, 3.0], [0.0, 0.0, 0.0]])
    s = np.array([[np.nan, 5.0, 2.0], [4.0, -1.0, 9.0]])
    i = np.array([[1, 0, 0], [1, 1, 0]])
    for reduce in ("amax", "amin"):
        both(lambda a, b, reduce=reduce: a.scatter_reduce(0, _index(i, a.device.type), b,
                                                          reduce), x, s, grad=False)
    z = jitgrad.tensor(_complex(2, 2), device="cuda")
    with pytest.raises(NotImplementedError, match="no order of complex values"):
        z.scatter_reduce(0, _index([[0, 1]], "cuda"), z, "amax")


# ---------------------------------------------------------------- cuda_special
_SPECIAL_POINTS = np.array([0.0, -0.0, -1.0, -2.5, -3.0, 0.5, 1.0, 2.0, 1e-8, 3.7, 9.5, 25.0,
                            1e6, np.inf, -np.inf, np.nan, -0.3, 4.2e-3])


@pytest.mark.parametrize("dtype", [jitgrad.float32, jitgrad.float64])
def test_gamma_family_at_poles_infinities_and_with_gradients(dtype):
    tol = dict(rtol=1e-6, atol=1e-6) if dtype is jitgrad.float32 else \
        dict(rtol=1e-12, atol=1e-13)
    both(lambda x: (x.lgamma(), x.digamma(), jitgrad.polygamma(1, x), jitgrad.polygamma(2, x),
                    jitgrad.polygamma(3, x), jitgrad.special.entr(x)),
         _SPECIAL_POINTS.copy(), dtype=dtype, grad=False, **tol)
    x = np.abs(RNG.standard_normal(6)) * 3 + 0.1
    both(lambda t: (t.lgamma(), t.digamma(), jitgrad.polygamma(2, t), jitgrad.special.entr(t)),
         x, dtype=dtype, **tol)  # (gradients: digamma, polygamma(n + 1), -(1 + log x))
    both(lambda t: (t.lgamma(), t.digamma(), jitgrad.polygamma(1, t)), -x + 0.05, dtype=dtype,
         **tol)  # (reflection)


@pytest.mark.parametrize("dtype", [jitgrad.float32, jitgrad.float64])
def test_erfinv_centre_tails_ends_and_gradient(dtype):
    tol = dict(rtol=1e-6, atol=1e-7) if dtype is jitgrad.float32 else \
        dict(rtol=1e-12, atol=1e-14)
    y = np.array([0.0, -0.0, 0.3, -0.7, 0.999, -0.999999, 1 - 1e-12, 1.0, -1.0, 1.5, np.nan])
    both(lambda t: t.erfinv(), y, dtype=dtype, grad=False, **tol)
    both(lambda t: t.erfinv(), np.tanh(RNG.standard_normal(8)), dtype=dtype, **tol)


def test_special_functions_take_integers_as_float_and_refuse_complex():
    both(lambda t: (t.lgamma(), t.digamma(), t.erfinv(), jitgrad.special.entr(t)),
         np.array([-1, 0, 1, 3]))
    z = jitgrad.tensor(_complex(2), device="cuda")
    with pytest.raises(NotImplementedError, match="lgamma"):
        z.lgamma()


# ---------------------------------------------------------------- cuda_unique
def _unique_all(t, **kw):
    return (t.unique(return_inverse=True, return_counts=True, **kw),
            t.unique_consecutive(return_inverse=True, return_counts=True, **kw))


def _flat_outs(r):
    return [o for part in r for o in part]


def test_unique_and_unique_consecutive_of_elements():
    x = np.array([[3.0, np.nan, 1.0], [3.0, 3.0, np.nan], [-1.0, 1.0, 1.0]])
    both(lambda t: _flat_outs(_unique_all(t)), x, grad=False)  # (every NaN its own value)
    both(lambda t: _flat_outs(_unique_all(t)), RNG.integers(-2, 3, (4, 5)))
    both(lambda t: _flat_outs(_unique_all(t)), RNG.standard_normal((2, 9)) > 0)
    both(lambda t: _flat_outs(_unique_all(t)), RNG.standard_normal(20), grad=False)
    both(lambda t: _flat_outs(_unique_all(t)), np.zeros((0, 3)), grad=False)
    both(lambda t: (t.unique(), t.unique(sorted=False)), np.array(2.0), grad=False)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_of_slices_sorts_rows_lexicographically(dim):
    x = np.array([[1, 0, 1, 1], [0, 1, 0, 0], [1, 0, 1, 1], [0, 0, 2, 2], [0, 1, 0, 0]])
    both(lambda t: _flat_outs(_unique_all(t, dim=dim)), x)
    both(lambda t: _flat_outs(_unique_all(t, dim=dim)), x.astype(np.float32) / 2, grad=False)
    both(lambda t: _flat_outs(_unique_all(t, dim=dim)), x > 0)


def test_unique_values_equal_torch():
    torch = pytest.importorskip("torch")
    a = RNG.integers(0, 4, (3, 6))
    for kw in ({}, {"dim": 0}, {"dim": 1}):
        mine = jitgrad.tensor(a, device="cuda").unique(return_inverse=True, return_counts=True,
                                                        **kw)
        theirs = torch.tensor(a).unique(return_inverse=True, return_counts=True, **kw)
        for m, t in zip(mine, theirs):
            np.testing.assert_array_equal(m.cpu().numpy(), t.numpy())


# ---------------------------------------------------------------- compositions
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
def test_cdist_and_pairwise_distance_every_order_with_gradients(p):
    grad = p != 0.0
    both(lambda a, b: jitgrad.cdist(a, b, p=p), RNG.standard_normal((2, 3, 4)),
         RNG.standard_normal((1, 5, 4)), grad=grad)
    both(lambda a, b: jitgrad.cdist(a, b, p=p), RNG.standard_normal((3, 2)),
         RNG.standard_normal((4, 2)), dtype=jitgrad.float32, grad=grad, rtol=1e-5, atol=1e-6)
    F = jitgrad.nn.functional
    both(lambda a, b: (F.pairwise_distance(a, b, p=p), F.pairwise_distance(a, b, p=p,
                                                                            keepdim=True)),
         RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), grad=grad)


@pytest.mark.parametrize("size,step", [(2, 1), (3, 2), (2, 3), (1, 1)])
def test_unfold_backward_adds_overlapping_windows(size, step):
    for dim in (0, 1):
        both(lambda t, dim=dim: t.unfold(dim, size, step) * 2.0, RNG.standard_normal((7, 6)))
    both(lambda t: t.unfold(1, size, step) * (1 + 1j), _complex(2, 7))
    both(lambda t: t.unfold(0, 1, 1), np.array(3.0))  # (0-d)


def test_logsumexp_of_bools_is_computed_in_floats():
    b = RNG.standard_normal((3, 4)) > 0
    out = both(lambda t: (t.logsumexp(1), t.logsumexp((0, 1)), t.logsumexp(0, keepdim=True)),
               b, rtol=1e-6, atol=1e-6)
    assert out[0].dtype == np.float32
    both(lambda t: t.logsumexp(1), RNG.standard_normal((3, 4)))  # (floats: gradients)


# ---------------------------------------------------------------- cuda_linalg2
def _well(*shape, complex_=False):
    n = shape[-1]
    a = _complex(*shape) if complex_ else RNG.standard_normal(shape)
    return a + 3 * np.eye(n)


@pytest.mark.parametrize("complex_", [False, True])
def test_inv_det_slogdet_solve_cholesky_batches_and_gradients(complex_):
    a, b = _well(2, 3, 3, complex_=complex_), _well(3, 3, complex_=complex_)[:, :2]
    L = jitgrad.linalg
    both(lambda t: (L.inv(t), L.det(t), *L.slogdet(t)), a)
    both(lambda t, r: L.solve(t, r), a, b)  # (batch broadcast)
    both(lambda t, r: L.solve(t, r), a[0], b[:, 0])  # (a vector right-hand side)
    both(lambda t, r: L.solve(t, r, left=False), a, b.T[:, :3][:2].copy())
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(3)
    both(lambda t: (L.cholesky(t), L.cholesky(t, upper=True)), spd)
    perm = np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 0.5], [3.0, 1.0, 0.0]])  # (pivoting)
    both(lambda t: (L.inv(t), L.det(t), *L.slogdet(t)), perm)
    both(lambda t: L.det(t), np.zeros((0, 2, 2)), grad=False)


def test_singular_and_not_positive_definite_raise_torch_texts():
    L = jitgrad.linalg
    s = jitgrad.tensor([[1.0, 2.0], [2.0, 4.0]], device="cuda")
    assert L.det(s).item() == 0.0
    sign, logabs = L.slogdet(s)
    assert sign.item() == 0.0 and logabs.item() == -np.inf
    with pytest.raises(RuntimeError, match="The diagonal element 2 is zero"):
        L.inv(s)
    with pytest.raises(RuntimeError, match="input matrix is singular"):
        L.solve(s, jitgrad.ones(2, device="cuda"))
    with pytest.raises(RuntimeError, match="leading minor of order 2 is not positive-definite"):
        L.cholesky(jitgrad.tensor([[1.0, 2.0], [2.0, 1.0]], device="cuda"))


def test_float32_linalg_equals_the_cpu_within_float32():
    a = _well(3, 3)
    both(lambda t: (jitgrad.linalg.inv(t), jitgrad.linalg.det(t)), a, dtype=jitgrad.float32,
         rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("complex_", [False, True])
def test_solve_triangular_sides_triangles_unit_diagonal_and_gradients(complex_):
    a = _well(2, 3, 3, complex_=complex_)
    b = _complex(3, 4) if complex_ else RNG.standard_normal((3, 4))
    for upper in (True, False):
        for unit in (False, True):
            both(lambda t, r, upper=upper, unit=unit: jitgrad.linalg.solve_triangular(
                t, r, upper=upper, unitriangular=unit), a, b)
            both(lambda t, r, upper=upper, unit=unit: jitgrad.linalg.solve_triangular(
                t, r, upper=upper, unitriangular=unit, left=False), a, b[:, :3].T.copy())
    zero = np.triu(np.ones((2, 2)))
    zero[1, 1] = 0.0  # (a zero pivot: inf/nan, as LAPACK's trtrs)
    both(lambda t, r: jitgrad.linalg.solve_triangular(t, r, upper=True), zero,
         np.ones((2, 1)), grad=False)


def test_complex_nan_to_num_treats_each_part_and_round_is_refused():
    z = np.array([0.5 + 1.5j, 2.5 - 0.5j, -1.7 + 2.2j, np.nan + 1j, np.inf - np.inf * 1j,
                  1 + np.nan * 1j, -np.inf + 3.5j])
    for dt in (jitgrad.complex64, jitgrad.complex128):
        both(lambda t: (t.nan_to_num(), t.nan_to_num(1.0, 2.0, -3.0)), z, dtype=dt, grad=False)
        with pytest.raises(NotImplementedError, match="round_vml_cpu"):  # (as torch)
            jitgrad.tensor(z, device="cuda").to(dt).round()
    both(lambda t: (t.round(), t.nan_to_num(posinf=7.0)), np.array([0.5, 1.5, np.inf, np.nan]),
         grad=False)  # (real dtypes: their templates)
    both(lambda t: t.nan_to_num() * (2 - 1j), _complex(4))  # (gradient where finite)


@pytest.mark.parametrize("weight", [0.3, 0.8, -2.0])
def test_complex_lerp_with_a_number_weight_and_gradients(weight):
    both(lambda a, b: a.lerp(b, weight), _complex(2, 3), _complex(2, 3))
    both(lambda a, b: a.lerp(b, weight), _complex(3), _complex(3), dtype=jitgrad.complex64,
         rtol=1e-6, atol=1e-6)
    both(lambda a, b: a.lerp(b, weight), RNG.standard_normal(3), RNG.standard_normal(3))


def test_isin_of_a_cuda_tensor_against_a_python_number():
    x = jitgrad.tensor([1.0, 2.0, 3.0], device="cuda")
    got = jitgrad.isin(x, 2.0)
    assert got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), [False, True, False])
    np.testing.assert_array_equal(jitgrad.isin(2.0, x).cpu().numpy(), True)
