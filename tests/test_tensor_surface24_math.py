"""torch's math functions of ``jitgrad/ops/surface24_math.py`` and ``surface24_more.py``:
values, dtypes, gradients (torch and gradcheck in float64) and error texts; the in-place
samplers and ``poisson``/``binomial`` statistically (seeded; mean and variance within a few
standard errors)."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck
from torch_compare import arr, same_error

RNG = np.random.default_rng(240)


def _data(*shape):
    return RNG.standard_normal(shape)


def _run(fn, *arrays, grad=True):
    """``fn(lib, *tensors)`` under torch and jitgrad: values, dtypes and (float64 inputs)
    the gradients of a weighted sum compared."""
    torch = pytest.importorskip("torch")
    res = {}
    for lib in (torch, jitgrad):
        xs = [lib.tensor(a, requires_grad=grad and a.dtype.kind in "fc") for a in arrays]
        out = fn(lib, *xs)
        outs = out if isinstance(out, tuple) else (out,)
        if grad and outs[0].requires_grad:
            w = lib.tensor(np.cos(np.arange(outs[0].numel())).reshape(tuple(outs[0].shape)))
            (outs[0] * w).sum().abs().backward() if outs[0].is_complex() else \
                (outs[0] * w).sum().backward()
        res[lib] = ([arr(o) for o in outs], [str(o.dtype).split(".")[1] for o in outs],
                    [arr(x.grad) if x.requires_grad else None for x in xs])
    for a, b in zip(res[jitgrad][0], res[torch][0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert res[jitgrad][1] == res[torch][1]
    for a, b in zip(res[jitgrad][2], res[torch][2]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    return res[jitgrad]


def test_addmm_addmv_addr_addbmm_match_torch():
    _run(lambda lib, i, a, b: i.addmm(a, b, beta=0.5, alpha=2.0), _data(2, 4), _data(2, 3),
         _data(3, 4))
    _run(lambda lib, i, m, v: lib.addmv(i, m, v, beta=2, alpha=3), _data(2), _data(2, 3),
         _data(3))
    _run(lambda lib, i, m, v: i.addmv(m, v, beta=0), _data(1), _data(2, 3), _data(3))
    _run(lambda lib, i, a, b: lib.addr(i, a, b, alpha=0.5), _data(2, 3), _data(2), _data(3))
    _run(lambda lib, i, a, b: i.addbmm(a, b), _data(2, 3), _data(4, 2, 5), _data(4, 5, 3))
    _run(lambda lib, i, a, b: i.clone().addmv_(a, b), _data(2), _data(2, 3), _data(3))
    _run(lambda lib, i, a, b: i.clone().addr_(a, b), _data(2, 3), _data(2), _data(3))
    _run(lambda lib, i, a, b: i.clone().addbmm_(a, b), _data(2, 3), _data(4, 2, 5),
         _data(4, 5, 3))
    _run(lambda lib, i, a, b: i.clone().addmm_(a, b), _data(2, 4), _data(2, 3), _data(3, 4))


def test_addmv_gradcheck():
    args = [jitgrad.tensor(a, requires_grad=True) for a in (_data(2), _data(2, 3), _data(3))]
    assert gradcheck(lambda i, m, v: jitgrad.addmv(i, m, v, beta=0.5, alpha=2.0), args)


def test_angle_take_put():
    _run(lambda lib, x: lib.angle(x), np.array([-1.5, 0.0, 2.0, -0.1]))
    _run(lambda lib, x: lib.angle(x), np.array([-1, 0, 2]), grad=False)
    _run(lambda lib, x: x.angle(), np.array([1 + 1j, 2 - 0.5j, -1 + 2j]))
    _run(lambda lib, x: lib.take(x, lib.tensor([[0, 5], [3, 3]])), _data(2, 3))
    _run(lambda lib, x, s: x.put(lib.tensor([0, 5, 0]), s, accumulate=True), _data(2, 3),
         _data(3))
    _run(lambda lib, x, s: x.clone().put_(lib.tensor([1, 4]), s), _data(2, 3), _data(2))
    same_error(lambda lib: lib.ones(2).put_(lib.tensor([0]), lib.ones(2)))
    z = jitgrad.tensor([1 + 1j, 2 - 0.5j, -1 + 2j], dtype=jitgrad.complex128,
                       requires_grad=True)
    assert gradcheck(jitgrad.angle, (z,))


@pytest.mark.parametrize("shape,wrap", [((5, 3), False), ((5, 3), True), ((3, 5), False),
                                        ((7, 2), True), ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap):
    _run(lambda lib, x: (x * 1).fill_diagonal_(2.5, wrap=wrap), _data(*shape))


def test_fill_diagonal_errors():
    same_error(lambda lib: lib.ones(5).fill_diagonal_(1))
    same_error(lambda lib: lib.ones(2, 3, 2).fill_diagonal_(1))


def test_float_power_ldexp_frexp():
    _run(lambda lib, x: lib.float_power(x.abs(), 2.5), _data(4).astype(np.float32))
    _run(lambda lib, x, y: lib.float_power(x.abs(), y), _data(4), _data(4))
    _run(lambda lib, x: x.abs().float_power_(0.5), _data(4))
    same_error(lambda lib: lib.ones(3).float_power_(2))
    _run(lambda lib, x: lib.ldexp(x, lib.tensor([1, 2, 3, -1])), _data(4), grad=False)
    _run(lambda lib, x: lib.ldexp(x, lib.tensor([1, 2, 3, 0])), _data(4))
    _run(lambda lib, x: x.clone().ldexp_(lib.tensor([1, 2, 3, 4])), _data(4))
    # (torch's ldexp gradient computes 2 ** other in integers: 0 for a negative exponent)
    x = jitgrad.tensor(_data(4), requires_grad=True)
    assert gradcheck(lambda t: jitgrad.ldexp(t, jitgrad.tensor([1, 2, 3, -1])), (x,))
    _run(lambda lib, x: lib.frexp(x), np.array([3.0, 0.5, -10.0, 0.0], np.float32), grad=False)
    same_error(lambda lib: lib.frexp(lib.tensor([1, 2])))


def test_gcd_lcm():
    a, b = np.array([12, 18, -4, 0]), np.array([8, 27, 6, 5])
    _run(lambda lib, x, y: lib.gcd(x, y), a, b)
    _run(lambda lib, x, y: lib.lcm(x, y), a, b)
    _run(lambda lib, x, y: x.clone().gcd_(y), a, b)
    _run(lambda lib, x, y: x.lcm(y), a.astype(np.int32), b.astype(np.int32))


def test_isreal_diagflat_vdot_ger():
    _run(lambda lib, x: lib.isreal(x), np.array([1 + 1j, 2, 3 + 0j]), grad=False)
    _run(lambda lib, x: lib.isreal(x), _data(3), grad=False)
    _run(lambda lib, x: lib.diagflat(x, 1), _data(2, 2))
    _run(lambda lib, x: x.diagflat(-1), _data(3))
    _run(lambda lib, x, y: lib.vdot(x, y), _data(3), _data(3))
    _run(lambda lib, x, y: x.vdot(y), np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j]))
    same_error(lambda lib: lib.vdot(lib.ones(2, 2), lib.ones(2)))
    _run(lambda lib, x, y: lib.ger(x, y), _data(2), _data(3))


def test_sum_to_size_and_splits():
    _run(lambda lib, x: x.sum_to_size(1, 3), _data(2, 3))
    _run(lambda lib, x: x.sum_to_size((3, 1)), _data(2, 3, 4))
    _run(lambda lib, x: x.sum_to_size(4), _data(2, 3, 4))
    _run(lambda lib, x: lib.split_with_sizes(x, [2, 3], 1)[1], _data(2, 5))
    _run(lambda lib, x: x.split_with_sizes([1, 1])[0], _data(2, 5))
    same_error(lambda lib: lib.ones(5).split_with_sizes([2, 2]))
    _run(lambda lib, x: lib.unsafe_split(x, 2, 1)[2], _data(2, 5))
    _run(lambda lib, x: x.unsafe_chunk(2)[1], _data(4, 2))
    _run(lambda lib, x: lib.unsafe_split_with_sizes(x, [3, 1])[0], _data(4, 2))


def test_scatter_functions():
    _run(lambda lib, x, s: lib.select_scatter(x, s, 0, 1), _data(2, 3), _data(3))
    _run(lambda lib, x, s: x.select_scatter(s, 1, -1), _data(2, 3), _data(2))
    _run(lambda lib, x, s: lib.slice_scatter(x, s, 1, 0, 3, 2), _data(2, 3), _data(2, 2))
    _run(lambda lib, x, s: lib.slice_scatter(x, s), _data(2, 3), _data(2, 3))
    _run(lambda lib, x, s: lib.diagonal_scatter(x, s, 1), _data(3, 3), _data(2))
    _run(lambda lib, x, s: x.diagonal_scatter(s, 0, 1, 2), _data(2, 3, 3), _data(2, 3))
    args = (jitgrad.tensor(_data(2, 3), requires_grad=True),
            jitgrad.tensor(_data(2, 2), requires_grad=True))
    assert gradcheck(lambda x, s: jitgrad.slice_scatter(x, s, 1, 0, 3, 2), args)


def test_as_strided_and_as_strided_scatter():
    _run(lambda lib, x: lib.as_strided(x, (2, 2), (1, 2), 1), _data(2, 3))
    _run(lambda lib, x: x.as_strided((3, 3), (1, 1)), _data(6))
    _run(lambda lib, x: (x * 1)[1:].as_strided((2,), (2,)), _data(6))
    # (values only: torch's own as_strided_scatter gradient fails torch's gradcheck)
    _run(lambda lib, x, s: lib.as_strided_scatter(x, s, (2, 2), (1, 2), 1), _data(2, 3),
         _data(2, 2), grad=False)
    args = (jitgrad.tensor(_data(2, 3), requires_grad=True),
            jitgrad.tensor(_data(2, 2), requires_grad=True))
    assert gradcheck(lambda x, s: jitgrad.as_strided_scatter(x, s, (2, 2), (1, 2), 1), args)
    same_error(lambda lib: lib.ones(5).as_strided((3, 3), (1, 1), 4))
    x = jitgrad.tensor(_data(6), requires_grad=True)
    assert gradcheck(lambda t: jitgrad.as_strided(t, (3, 2), (1, 2)), (x,))


def test_as_strided_of_a_detached_view_reads_its_parents_storage():
    """``.detach()`` / ``.data`` of a view keep the parent's storage and offset (torchdiffeq's
    adjoint calls ``torch.as_strided(t.detach(), (), ())`` on an element of its time grid)."""
    for make in (lambda lib: lib.arange(6.0)[1:5].detach(), lambda lib: lib.arange(6.0)[1:5].data,
                 lambda lib: lib.arange(12.0).reshape(3, 4).t().detach()):
        _run(lambda lib, _, make=make: make(lib).as_strided((2,), (2,), 1), _data(1), grad=False)
        _run(lambda lib, _, make=make: make(lib).as_strided((2,), (1,)), _data(1), grad=False)
        _run(lambda lib, _, make=make: lib.as_strided(make(lib), (), ()), _data(1), grad=False)
    # a gradient reaches the detached view's own elements only
    _run(lambda lib, _: lib.arange(6.0, dtype=lib.float64)[1:5].detach().requires_grad_()
         .as_strided((3,), (2,), 0), _data(1), grad=False)
    for lib in (jitgrad, pytest.importorskip("torch")):
        w = lib.arange(6.0, dtype=lib.float64)[1:5].detach().requires_grad_()
        w.as_strided((3,), (2,), 0).sum().backward()
        assert w.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("r,rep", [(2, False), (2, True), (3, False), (1, False), (0, False),
                                   (4, False)])
def test_combinations(r, rep):
    _run(lambda lib, x: lib.combinations(x, r, rep), _data(3))


def test_unravel_index():
    torch = pytest.importorskip("torch")
    for idx, shape in (([7, -1, 4, 13], (2, 3)), (5, (2, 3)), ([[0, 23]], (2, 3, 4))):
        a = jitgrad.unravel_index(jitgrad.tensor(idx), shape)
        b = torch.unravel_index(torch.tensor(idx), shape)
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(arr(x), arr(y))
    same_error(lambda lib: lib.unravel_index(lib.tensor([1.0]), (2, 2)))


def test_histogram():
    torch = pytest.importorskip("torch")
    x = _data(50)
    for args, kw in (((5,), {}), ((4,), {"range": (-1.0, 1.0), "density": True}),
                     ((np.array([-2.0, 0.0, 0.5, 3.0]),), {}), ((3,), {"weight": _data(50)})):
        res = []
        for lib in (torch, jitgrad):
            a = tuple(lib.tensor(v) if isinstance(v, np.ndarray) else v for v in args)
            k = {n: lib.tensor(v) if isinstance(v, np.ndarray) else v for n, v in kw.items()}
            res.append(lib.histogram(lib.tensor(x), *a, **k))
        for u, v in zip(res[1], res[0]):
            np.testing.assert_allclose(arr(u), arr(v), rtol=1e-12)


def test_histogramdd():
    torch = pytest.importorskip("torch")
    same_error(lambda lib: lib.histogram(lib.tensor([1, 2]), 2))
    same_error(lambda lib: lib.histogramdd(lib.tensor([[1, 2]]), 2))
    x = _data(60, 2)
    w = np.abs(_data(60))
    for bins, kw in ((3, {}), ([2, 4], {"weight": w}), (2, {"range": [0.0, 1.0, -1.0, 1.0],
                                                             "density": True}),
                     ([np.array([-3.0, 0.0, 3.0]), np.array([-1.0, 0.5, 2.0])], {})):
        res = []
        for lib in (torch, jitgrad):
            b = [lib.tensor(v) for v in bins] if isinstance(bins, list) and \
                isinstance(bins[0], np.ndarray) else bins
            k = {n: lib.tensor(v) if isinstance(v, np.ndarray) else v for n, v in kw.items()}
            res.append(lib.histogramdd(lib.tensor(x), b, **k))
        np.testing.assert_allclose(arr(res[1].hist), arr(res[0].hist), rtol=1e-12)
        assert len(res[1].bin_edges) == len(res[0].bin_edges) == 2
        for u, v in zip(res[1].bin_edges, res[0].bin_edges):
            np.testing.assert_allclose(arr(u), arr(v), rtol=1e-12)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    _run(lambda lib, x, s: lib.index_reduce(x, 0, lib.tensor([0, 2, 0, 1]), s, reduce,
                                            include_self=include_self), _data(3, 2), _data(4, 2))
    _run(lambda lib, x, s: x.clone().index_reduce_(1, lib.tensor([1, 1]), s, reduce,
                                                   include_self=include_self),
         _data(2, 3), _data(2, 2))


def test_conj_physical_polar_complex_rsub():
    _run(lambda lib, x: lib.conj_physical(x), np.array([1 + 2j, -1j]))
    _run(lambda lib, x: x.conj_physical(), _data(3))
    _run(lambda lib, x: x.clone().conj_physical_(), np.array([1 + 2j, -1j]))
    _run(lambda lib, r, t: lib.polar(r.abs(), t), _data(3), _data(3))
    _run(lambda lib, r, i: lib.complex(r, i), _data(3), _data(3))
    same_error(lambda lib: lib.complex(lib.ones(2), lib.ones(2, dtype=lib.float64)))
    _run(lambda lib, x, y: lib.rsub(x, y, alpha=2), _data(3), _data(3))
    _run(lambda lib, x: lib.rsub(x, 2.0), _data(3))
    args = (jitgrad.tensor(np.abs(_data(3)) + 0.1, requires_grad=True),
            jitgrad.tensor(_data(3), requires_grad=True))
    assert gradcheck(jitgrad.polar, args)


@pytest.mark.parametrize("name,args", [
    ("view_copy", ((3, 2),)), ("permute_copy", ((1, 0),)), ("t_copy", ()),
    ("transpose_copy", (0, 1)), ("diagonal_copy", ()), ("expand_copy", ((2, 2, 3),)),
    ("select_copy", (1, 0)), ("slice_copy", (1, 1, 3)), ("squeeze_copy", ()),
    ("unsqueeze_copy", (0,)), ("narrow_copy", (1, 0, 2)), ("detach_copy", ()),
    ("alias_copy", ()), ("as_strided_copy", ((2, 2), (1, 2))), ("unfold_copy", (1, 2, 1)),
    ("split_copy", (1, 1)), ("unbind_copy", (0,)), ("split_with_sizes_copy", ([1, 2], 1))])
def test_copy_functions(name, args):
    res = _run(lambda lib, x: (lambda o: o if not isinstance(o, (tuple, list)) else o[0])(
        getattr(lib, name)(x, *args)), _data(2, 3), grad=name != "detach_copy")
    assert res


def test_copy_function_returns_new_memory():
    x = jitgrad.ones(2, 3)
    y = jitgrad.view_copy(x, (3, 2))
    y.add_(1)
    assert float(x.sum()) == 6.0 and y._base is None and y.is_contiguous()
    assert jitgrad.narrow_copy(x, 0, 0, 1).shape == (1, 3)


def test_resize_and_nonzero_static():
    torch = pytest.importorskip("torch")
    for lib in (torch, jitgrad):
        x = lib.arange(6.0)
        assert x.resize_(2, 2) is x and tuple(x.shape) == (2, 2) and x._version == 1
        assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        y = lib.arange(3.0)
        y.resize_(5)
        assert tuple(y.shape) == (5,) and y[:3].tolist() == [0.0, 1.0, 2.0]
        z = lib.ones(3)
        z.resize_as_(lib.ones(2, 2))
        assert tuple(z.shape) == (2, 2)
        assert lib.resize_as_(lib.ones(1), lib.ones(3)).shape == (3,)
        t = lib.tensor([0, 1, 1, 0, 1])
        assert lib.nonzero_static(t, size=2).tolist() == [[1], [2]]
        assert t.nonzero_static(size=5, fill_value=-7).tolist() == [[1], [2], [4], [-7], [-7]]
    same_error(lambda lib: lib.ones(5, requires_grad=True).resize_(3))


def _moments(samples, mean, var, sigmas=5):
    s = arr(samples).astype(np.float64).ravel()
    n = s.size
    assert abs(s.mean() - mean) < sigmas * np.sqrt(var / n)
    assert abs(s.var() - var) < sigmas * np.sqrt(2 * var ** 2 / n) * 3


def test_inplace_samplers_statistics():
    g = jitgrad.Generator().manual_seed(5)
    n = 40000
    x = jitgrad.empty(n, dtype=jitgrad.float64)
    assert x.exponential_(2.0, generator=g) is x and x._version == 1
    _moments(x, 0.5, 0.25)
    p = 0.3
    _moments(jitgrad.empty(n).geometric_(p, generator=g), 1 / p, (1 - p) / p ** 2)
    ln = jitgrad.empty(n, dtype=jitgrad.float64).log_normal_(0.2, 0.4, generator=g)
    _moments(ln, np.exp(0.2 + 0.08), (np.exp(0.16) - 1) * np.exp(0.4 + 0.16))
    c = arr(jitgrad.empty(n).cauchy_(1.0, 2.0, generator=g))
    assert abs(np.median(c) - 1.0) < 0.1  # (a Cauchy law has no mean: its median and quartiles)
    q1, q3 = np.percentile(c, [25, 75])
    assert abs(q1 - -1.0) < 0.15 and abs(q3 - 3.0) < 0.15
    draws = [arr(jitgrad.empty(5).exponential_(generator=jitgrad.Generator().manual_seed(5)))
             for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])


def test_sampler_errors_match_torch():
    same_error(lambda lib: lib.empty(3).exponential_(-1.0))
    same_error(lambda lib: lib.empty(3).geometric_(1.5))
    same_error(lambda lib: lib.empty(3).log_normal_(0.0, -1.0))
    same_error(lambda lib: lib.poisson(lib.tensor([-1.0])))


def test_poisson_and_binomial_statistics():
    jitgrad.manual_seed(3)
    rates = jitgrad.full((40000,), 3.5)
    s = jitgrad.poisson(rates)
    assert s.dtype is jitgrad.float32 and tuple(s.shape) == (40000,)
    _moments(s, 3.5, 3.5)
    b = jitgrad.binomial(jitgrad.full((40000,), 10.0), jitgrad.full((40000,), 0.3))
    _moments(b, 3.0, 2.1)
    assert float(jitgrad.binomial(jitgrad.tensor([5.0]), jitgrad.tensor([1.0]))) == 5.0
    g = jitgrad.Generator().manual_seed(1)
    a = jitgrad.poisson(rates[:5], generator=g)
    np.testing.assert_array_equal(arr(a), arr(jitgrad.poisson(
        rates[:5], generator=jitgrad.Generator().manual_seed(1))))


def test_composites_under_jit_match_eager():
    x = jitgrad.tensor(_data(3, 4))

    def f(a):
        return (jitgrad.addmv(a[:, 0], a, a[0], beta=0.5).sum() + a.addr(a[:, 0], a[0]).sum()
                + jitgrad.take(a, jitgrad.tensor([0, 5, 7])).sum()
                + jitgrad.select_scatter(a, a[0] * 2, 0, 1).sum()
                + (jitgrad.slice_scatter(a, a[:, :2] * 2, 1, 0, 4, 2) ** 2).sum()
                + (jitgrad.diagonal_scatter(a, a[0, :3] * 3, 0) ** 2).sum()
                + (jitgrad.as_strided(a, (2, 2), (1, 3), 1) ** 2).sum()
                + jitgrad.index_reduce(a, 0, jitgrad.tensor([0, 0, 2]), a * 2, "amax").sum()
                + ((a * 1).gt_(0.0) * a).sum() + (a * 1).fill_diagonal_(3.0).sum()
                + jitgrad.vdot(a[0], a[1]) + jitgrad.ldexp(a, jitgrad.tensor([1, 2, 3, 0])).sum())

    np.testing.assert_allclose(jitgrad.jit(f)(x).item(), f(x).item(), rtol=1e-12)
    xr = x.detach().requires_grad_()
    g_jit = jitgrad.autograd.grad(jitgrad.jit(f)(xr), xr)[0]
    g_eager = jitgrad.autograd.grad(f(xr), xr)[0]
    np.testing.assert_allclose(arr(g_jit), arr(g_eager), rtol=1e-10, atol=1e-12)


def test_diagonal_scatter_offsets_and_dims_gradcheck():
    for shape, offset, d1, d2 in (((3, 4), -1, 0, 1), ((2, 3, 3), 1, 2, 1), ((4, 3), 2, 1, 0)):
        _run(lambda lib, x, s, o=offset, a=d1, b=d2: lib.diagonal_scatter(x, s, o, a, b),
             _data(*shape), arr(jitgrad.tensor(_data(*shape)).diagonal(offset, d1, d2)))
    args = (jitgrad.tensor(_data(3, 4), requires_grad=True),
            jitgrad.tensor(_data(2), requires_grad=True))
    assert gradcheck(lambda x, s: jitgrad.diagonal_scatter(x, s, -1), args)


_ERRORS = {
    "take_int": lambda lib: lib.take(lib.ones(3), lib.tensor([0], dtype=lib.int32)),
    "addmv": lambda lib: lib.addmv(lib.ones(2), lib.ones(2, 3), lib.ones(3, 1)),
    "addr": lambda lib: lib.addr(lib.ones(2, 3), lib.ones(2, 1), lib.ones(3)),
    "vdot_dtype": lambda lib: lib.vdot(lib.ones(2), lib.ones(2, dtype=lib.float64)),
    "vdot_size": lambda lib: lib.vdot(lib.ones(2), lib.ones(3)),
    "gcd_float": lambda lib: lib.gcd(lib.ones(2), lib.ones(2)),
    "combinations_2d": lambda lib: lib.combinations(lib.ones(2, 2)),
    "select_scatter": lambda lib: lib.select_scatter(lib.ones(2, 3), lib.ones(2), 0, 0),
    "nonzero_static": lambda lib: lib.nonzero_static(lib.ones(2), size=-1),
    "index_reduce": lambda lib: lib.index_reduce(lib.ones(2), 0, lib.tensor([0]), lib.ones(1),
                                                 "sum"),
    "complex_int": lambda lib: lib.complex(lib.ones(2, dtype=lib.int64),
                                           lib.ones(2, dtype=lib.int64)),
    "sum_to_size": lambda lib: lib.ones(2, 3).sum_to_size(3, 3),
    "empty_strided": lambda lib: lib.empty_strided((2, 3), (1,)),
    "binomial_int": lambda lib: lib.binomial(lib.ones(2, dtype=lib.int64), lib.ones(2)),
    "float_power_": lambda lib: lib.ones(2, dtype=lib.float64).float_power_(1j),
    "cauchy_int": lambda lib: lib.ones(2, dtype=lib.int64).cauchy_(),
    "cauchy_uint8": lambda lib: lib.ones(2, dtype=lib.uint8).cauchy_(),
    "exponential_int": lambda lib: lib.ones(2, dtype=lib.int32).exponential_(),
    "log_normal_int": lambda lib: lib.ones(2, dtype=lib.int64).log_normal_(),
    "eq_shape": lambda lib: lib.ones(2).eq_(lib.ones(3, 2)),
    "as_strided_len": lambda lib: lib.as_strided(lib.ones(4), (2, 2), (1,)),
}


@pytest.mark.parametrize("name", sorted(_ERRORS))
def test_error_texts_match_torch(name):
    same_error(_ERRORS[name])
