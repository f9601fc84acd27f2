"""What the user-script sets D36-G36 (ranking and survival, HMMs and soft sorting, video,
multi-task and continual learning, knowledge-graph embeddings) found, and the complex views
found on the way: each case as torch behaves."""

import warnings

import numpy as np
import pytest

import jitgrad as jg
from torch_compare import same_error


def _torch():
    return pytest.importorskip("torch")


# ------------------------------------------------------------------ complex views


def _real_imag_inplace(lib):
    x = lib.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    y = x * 1
    y.real.mul_(3)  # (through a view of y: y's history goes through CopySlices)
    y.imag.add_(1)
    (y * y.conj()).real.sum().backward()
    return y.detach(), x.grad


def test_real_and_imag_are_views_with_their_history():
    # (x.real was a copy whose in-place change reached y's memory but not its graph: the
    # gradient missed the factor 3)
    y, grad = _real_imag_inplace(jg)
    assert y.tolist() == [3 + 3j, 9 + 5j]
    assert grad.tolist() == [18 + 6j, 54 + 10j]
    x = jg.tensor([1 + 2j, 3 + 4j])
    r = x.imag
    assert r._base is x and r.grad_fn is None
    r.add_(1)
    assert x._version == 1 and x.tolist() == [1 + 3j, 3 + 5j]
    z = jg.randn(3, dtype=jg.complex64, requires_grad=True)
    assert z.real.grad_fn.name() == "SelectBackward0"
    assert z.real.grad_fn.next_functions[0][0].name() == "ViewAsRealBackward0"
    torch = _torch()
    ty, tgrad = _real_imag_inplace(torch)
    assert y.tolist() == ty.tolist() and grad.tolist() == tgrad.tolist()


def _view_writes(lib):
    x = lib.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    y = x * 1
    r = lib.view_as_real(y)
    r[:, 1] *= 5
    (y * y.conj()).real.sum().backward()
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = lib.view_as_complex(a)
    c.mul_(1j)
    return y.detach().tolist(), x.grad.tolist(), a.tolist(), c._version


def test_view_as_real_and_view_as_complex_are_views():
    ours = _view_writes(jg)
    assert ours == ([1 + 10j, 3 + 20j], [2 + 100j, 6 + 200j], [[-2.0, 1.0], [-4.0, 3.0]], 1)
    assert jg.view_as_real(jg.zeros(2, 3, dtype=jg.complex128)).stride() == (6, 2, 1)
    assert _view_writes(_torch()) == ours


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(2, 4)[:, ::2],  # last dim stride 2
    lambda lib: lib.zeros(3, 2).t().contiguous().t(),
    lambda lib: lib.zeros(7)[1:].view(3, 2),  # odd storage offset
    lambda lib: lib.zeros(2, 3)[:, :2],  # odd stride of dim 0
    lambda lib: lib.zeros(3, 3),
    lambda lib: lib.tensor(1.0),
])
def test_view_as_complex_refuses_what_torch_refuses(make):
    _torch()
    same_error(lambda lib: lib.view_as_complex(make(lib)))


def test_view_as_complex_under_jit_and_vmap():
    x = jg.randn(3, 2, requires_grad=True)
    f = jg.jit(lambda a: (jg.view_as_complex(a) * (1 + 2j)).abs().sum())
    eager = (jg.view_as_complex(x) * (1 + 2j)).abs().sum()
    assert f(x).item() == pytest.approx(eager.item(), rel=1e-6)
    np.testing.assert_allclose(jg.autograd.grad(f(x), x)[0].numpy(),
                               jg.autograd.grad(eager, x)[0].numpy(), rtol=1e-6)
    got = jg.vmap(lambda a: jg.view_as_real(jg.view_as_complex(a) * 1j))(x.detach()[None])
    np.testing.assert_allclose(got[0].numpy(), np.stack([-x[:, 1].detach().numpy(),
                                                         x[:, 0].detach().numpy()], -1))


# ------------------------------------------------------------------ logcumsumexp's derivatives


CASES = [([100.0, 101.0, 99.0], "float32"), ([-100.0, -101.0, -99.0], "float32"),
         ([800.0, 801.0], "float64"), ([2.0], "float32"), ([-200.0, 0.0, 3.0], "float32")]


def _exact_gradient(x, weights):
    from math import exp, fsum, log

    out = [log(fsum(exp(v - max(x[: j + 1])) for v in x[: j + 1])) + max(x[: j + 1])
           for j in range(len(x))]
    return [fsum(weights[j] * exp(x[i] - out[j]) for j in range(i, len(x)))
            for i in range(len(x))]


@pytest.mark.parametrize("values,dtype", CASES)
def test_logcumsumexp_gradient_does_not_overflow(values, dtype):
    # (exp(x) * revcumsum(g * exp(-out)): inf or NaN once |x| > 88 in float32, 709 in float64)
    weights = [1.0, -2.0, 3.0][: len(values)]
    x = jg.tensor(values, dtype=getattr(jg, dtype), requires_grad=True)
    g, = jg.autograd.grad((jg.logcumsumexp(x, 0) * jg.tensor(weights, dtype=x.dtype)).sum(), x)
    exact = _exact_gradient(values, weights)
    # float32: float64 inside, one rounding, within an ulp of the exact derivative; float64:
    # exp(x_i - out_j) carries the rounding of the forward's out_j, ~|x| ulp
    eps = np.finfo(getattr(np, dtype)).eps
    rtol = 2 * eps if dtype == "float32" else 4 * eps * max(abs(v) for v in values)
    np.testing.assert_allclose(g.numpy(), exact, rtol=rtol)
    torch = _torch()
    tx = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    tg, = torch.autograd.grad((torch.logcumsumexp(tx, 0)
                               * torch.tensor(weights, dtype=tx.dtype)).sum(), tx)
    # (torch's float32 rule uses the rounded float32 out_j: ~1e-5 from the exact derivative)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=5e-5)


def test_logcumsumexp_tangents_second_derivatives_and_vmap():
    x = jg.tensor([100.0, 101.0, 99.0])
    _, t = jg.func.jvp(lambda a: jg.logcumsumexp(a, 0), (x,), (jg.tensor([1.0, -1.0, 0.0]),))
    out = np.logaddexp.accumulate(np.array([100.0, 101.0, 99.0]))
    want = [np.exp(100 - out[0]), np.exp(100 - out[1]) - np.exp(101 - out[1]),
            np.exp(100 - out[2]) - np.exp(101 - out[2])]
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    from jitgrad.autograd import forward_ad as fwad

    with fwad.dual_level():
        d = fwad.make_dual(x, jg.ones(3))
        np.testing.assert_allclose(fwad.unpack_dual(jg.logcumsumexp(d, 0)).tangent.numpy(),
                                   [1.0, 1.0, 1.0], rtol=1e-6)
    a = jg.randn(4, 3, dtype=jg.float64, requires_grad=True)
    for dim in (0, 1):
        assert jg.autograd.gradcheck(lambda v, d=dim: jg.logcumsumexp(v, d), (a,))
        # (torch's double backward takes log|g| and is NaN here)
        assert jg.autograd.gradgradcheck(lambda v, d=dim: jg.logcumsumexp(v, d), (a,))
    z = jg.randn(4, 3, dtype=jg.complex128, requires_grad=True)
    assert jg.autograd.gradcheck(lambda v: jg.logcumsumexp(v, 1), (z,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no batching-rule performance warning)
        got = jg.vmap(lambda b: jg.logcumsumexp(b, 0).sum())(a.detach())
        hess = jg.func.hessian(lambda v: jg.logcumsumexp(v, 0).sum())(a.detach()[0])
    np.testing.assert_allclose(got.numpy(), jg.logcumsumexp(a.detach(), 1).sum(1).numpy())
    assert tuple(hess.shape) == (3, 3) and np.isfinite(hess.numpy()).all()


def test_logcumsumexp_gradient_under_jit():
    x = jg.tensor([[-100.0, -101.0, -99.0, 50.0]], requires_grad=True)
    f = jg.jit(lambda v: (jg.logcumsumexp(v, 1) * jg.tensor([1.0, -2.0, 3.0, 0.5])).sum())
    g, = jg.autograd.grad(f(x), x)
    e, = jg.autograd.grad((jg.logcumsumexp(x, 1) * jg.tensor([1.0, -2.0, 3.0, 0.5])).sum(), x)
    assert np.isfinite(g.numpy()).all()
    np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ sort's order of ties


def test_unstable_sort_orders_ties_as_torch():
    # (jitgrad sorted stably: pycox's Cox loss on tied durations gave 2.9342, torch 2.9678)
    torch = _torch()
    rng = np.random.default_rng(0)
    for n, dtype in [(17, np.float32), (40, np.int64), (100, np.float64), (33, np.bool_),
                     (3000, np.int64)]:
        a = rng.integers(0, 3, (2, n)).astype(dtype)
        if dtype == np.float64:
            a[a == 2] = np.nan
        for desc in (False, True):
            for dim in (0, 1):
                want = torch.sort(torch.from_numpy(a), dim=dim, descending=desc)
                got = jg.sort(jg.tensor(a), dim=dim, descending=desc)
                np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
                np.testing.assert_array_equal(
                    jg.argsort(jg.tensor(a), dim=dim, descending=desc).numpy(),
                    want.indices.numpy())
    x = [float(i % 2) for i in range(17)]
    assert jg.argsort(jg.tensor(x)).tolist() == [8, 16, 14, 12, 10, 0, 6, 4, 2, 7, 5, 9, 11, 3,
                                                 13, 15, 1]
    assert jg.argsort(jg.tensor(x), stable=True).tolist() == list(range(0, 17, 2)) + list(
        range(1, 17, 2))


def test_unstable_sort_gradient_goes_where_the_values_went():
    x = jg.tensor([float(i % 3) for i in range(20)], requires_grad=True)
    values, indices = jg.sort(x)
    (values * jg.arange(20.0)).sum().backward()
    want = np.zeros(20)
    want[indices.numpy()] = np.arange(20.0)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_logcumsumexp_float32_accumulates_in_double():
    # (float32 steps drifted to 11.613340 over 1e5 terms; torch's CPU scan adds in double)
    out = jg.logcumsumexp(jg.full((100000,), 0.1), 0)[-1]
    assert float(out) == pytest.approx(0.1 + np.log(1e5), rel=1e-7)


# ------------------------------------------------------------------ conv3d, Size, losses, angle


def _conv3d_layouts(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 3, 4, 6, 6)).astype(np.float32))
    w = lib.tensor(rng.standard_normal((4, 3, 3, 3, 3)).astype(np.float32))
    wt = lib.tensor(rng.standard_normal((3, 4, 2, 2, 2)).astype(np.float32))
    f = lib.nn.functional
    last = x.to(memory_format=lib.channels_last_3d)
    out = [f.conv3d(x, w, padding=1).stride(), f.conv_transpose3d(x, wt, stride=2).stride(),
           f.conv3d(last, w).stride(), f.conv_transpose3d(last, wt, stride=2).stride()]
    for half in (lib.float16, lib.bfloat16):  # (rounded once, as a float32 result rounded)
        got = f.conv3d(x.to(half), w.to(half)).float()
        want = f.conv3d(x.to(half).float(), w.to(half).float()).to(half).float()
        out.append(bool((got == want).all()))
        got = f.conv_transpose3d(x.to(half), wt.to(half), stride=2).float()
        want = f.conv_transpose3d(x.to(half).float(), wt.to(half).float(), stride=2)
        out.append(bool((got == want.to(half).float()).all()))
    return out


def test_conv3d_results_are_laid_out_and_rounded_as_torch():
    # (conv3d's depth taps came back as a permuted (N, D, C, H, W) layout: .view refused it;
    # half taps were rounded one by one)
    ours = _conv3d_layouts(jg)
    assert ours[:2] == [(576, 144, 36, 6, 1), (4608, 1152, 144, 12, 1)]
    assert all(ours[4:])
    o = jg.nn.Conv3d(3, 4, 3, padding=1)(jg.randn(2, 3, 4, 6, 6))
    assert o.is_contiguous() and tuple(o.view(2, -1).shape) == (2, 576)
    assert ours == _conv3d_layouts(_torch())


def test_slices_of_a_size_are_sizes():
    s = jg.randn(2, 3, 4, 5).shape
    assert type(s[2:]) is jg.Size and s[2:].numel() == 20 and s[::2] == (2, 4)
    assert type(s[::2]) is jg.Size and type(s[1]) is int and repr(s[1:3]) == "jitgrad.Size([3, 4])"


def test_soft_margin_loss_refuses_a_target_requiring_grad():
    same_error(lambda lib: lib.nn.functional.soft_margin_loss(
        lib.ones(3), lib.ones(3, requires_grad=True)))
    with jg.no_grad():
        jg.nn.functional.soft_margin_loss(jg.ones(3), jg.ones(3, requires_grad=True))


def test_complex_angle_gradient_is_zero_at_zero():
    # (atan2(imag, real) gave NaN at 0; torch's angle_backward gives 0)
    z = jg.tensor([0j, 1 + 1j, -0.0 + 0j, -1 - 0j], requires_grad=True)
    a = z.angle()
    assert a.grad_fn.name() == "AngleBackward0"
    a.sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), [0, np.pi / 4, 0, np.pi])  # (-0.0+0j is 0j)
    np.testing.assert_allclose(z.grad.numpy(), [0, -0.5 + 0.5j, 0, -1j], rtol=1e-6)  # (float32)
    zz = jg.tensor([1 + 1j, 2 - 1j, -3 + 0.5j], dtype=jg.complex128, requires_grad=True)
    assert jg.autograd.gradcheck(jg.angle, (zz,))
    assert jg.autograd.gradgradcheck(jg.angle, (zz,))
    f = jg.jit(lambda v: v.angle().sum())
    g, = jg.autograd.grad(f(z), z)
    np.testing.assert_allclose(g.numpy(), z.grad.numpy(), rtol=1e-6)  # (float32, atan2 form)


def test_importing_a_torch_tensor_once_the_protocol_is_live():
    # (after the first __torch_function__ subclass, from_dlpack(torch tensor) met the check
    # that refuses PyTorch objects in jitgrad calls)
    torch = _torch()

    class Logged(jg.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    assert type(jg.ones(2).as_subclass(Logged) + 1) is Logged  # (the protocol is installed)
    t = torch.arange(4.0)
    assert jg.from_dlpack(t).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert jg.tensor(t.numpy()).tolist() == jg.as_tensor(t.numpy()).tolist()
    with pytest.raises(TypeError, match="does not mix with PyTorch objects"):
        jg.add(jg.ones(4), t)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window"])
def test_windows_follow_torchs_recipe_in_their_dtype(name):
    # (windows were float64 values cast: 60-75% of float32 entries an ulp off torch's, and a
    # periodic float32 hann window symmetric where torch's is not)
    torch = _torch()
    total = off = 0
    for n in list(range(0, 24)) + [64, 400, 512, 2048]:
        for periodic in (True, False):
            for dt in ("float64", "float16", "float32"):
                ours = getattr(jg, name)(n, periodic, dtype=getattr(jg, dt)).numpy()
                theirs = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt)).numpy()
                if dt == "float16":
                    np.testing.assert_array_equal(ours, theirs)
                    continue
                # torch's cos (SLEEF) is within an ulp of the correctly rounded one
                np.testing.assert_allclose(ours, theirs, rtol=0, atol=np.finfo(dt).eps)
                total, off = total + ours.size, off + int((ours != theirs).sum())
    assert off <= 0.05 * total


def _complex_steps(lib):
    out = []
    for name, kw in [("Adam", {}), ("AdamW", {"weight_decay": 0.1}),
                     ("Adam", {"amsgrad": True, "maximize": True}),
                     ("RMSprop", {"momentum": 0.9, "centered": True}),
                     ("Adagrad", {"lr_decay": 0.01})]:
        p = lib.nn.Parameter(lib.tensor([0.5 + 1j, -1 + 0.25j, 2 - 2j], dtype=lib.complex128))
        c = lib.tensor([1 + 1j, 0j, -1 + 0.5j], dtype=lib.complex128)
        opt = getattr(lib.optim, name)([p], lr=0.1, **kw)
        for _ in range(4):
            opt.zero_grad()
            (p - c).abs().sum().backward()
            opt.step()
        out.append(p.detach().numpy())
    return out


def test_adaptive_optimizers_step_complex_parameters_as_real_pairs():
    # (they refused complex parameters; torch steps view_as_real of the parameter and state)
    ours = _complex_steps(jg)
    assert all(np.isfinite(p).all() for p in ours)
    for a, b in zip(ours, _complex_steps(_torch())):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(NotImplementedError, match="Adadelta"):
        p = jg.nn.Parameter(jg.ones(2, dtype=jg.complex64))
        p.grad = jg.ones(2, dtype=jg.complex64)
        jg.optim.Adadelta([p]).step()


def _pool_curvature(lib):
    f = lib.nn.functional
    x = lib.arange(64.0, dtype=lib.float64).reshape(1, 1, 4, 4, 4).sin().requires_grad_()
    out = []
    for pool in (lambda a: f.max_pool3d(a, 2), lambda a: f.max_pool2d(a[:, :, 0], 2)):
        g, = lib.autograd.grad(pool(x).sum(), x, create_graph=True)
        out.append(lib.autograd.grad(g.pow(2).sum(), x)[0].abs().sum().item())
    y = f.max_pool2d(x[:, :, 0] * 2, 2)
    out.append(tuple(y.grad_fn._saved_self.shape))
    return out


def test_max_pool_second_derivative_by_the_input_is_zero():
    # (the pool's backward did not take the input: "appears to not have been used in the graph")
    assert _pool_curvature(jg) == [0.0, 0.0, (1, 1, 4, 4)] == _pool_curvature(_torch())


# ------------------------------------------------------------------ probes: indexing, creation


def _int_and_advanced_keys(lib):
    x = lib.arange(24.0).reshape(2, 3, 4)
    keys = [(0, slice(None), [1, 3]), (slice(None), [1, 2], 3), (1, Ellipsis, [1, 3]),
            (0, None, [1, 2]), (lib.tensor(0), slice(None), [1, 3]), (0, [1, 2], [0, 3]),
            ([0, 1], 1, [2, 3]), (1, slice(None), lib.tensor([True, False, True, False]))]
    out = [x[k].tolist() for k in keys]
    y = lib.zeros(2, 3, 4, requires_grad=True)
    z = y * 1
    z[0, :, lib.tensor([1, 3])] = lib.arange(6.0).reshape(3, 2)
    z.pow(2).sum().backward()
    return out + [z.tolist(), y.grad.tolist()]


def test_integer_entries_select_before_the_advanced_indices():
    # (x[0, :, [1, 3]] had shape (2, 3): NumPy's rule joined the 0 to the advanced indices)
    ours = _int_and_advanced_keys(jg)
    assert np.asarray(ours[0]).shape == (3, 2)
    assert ours == _int_and_advanced_keys(_torch())


@pytest.mark.parametrize("call", [
    lambda lib: lib.arange(0.5, 3.7, dtype=lib.int64),
    lambda lib: lib.arange(-0.5, 2, dtype=lib.int64),
    lambda lib: lib.arange(0.5, 3.7, dtype=lib.int32),
    lambda lib: lib.arange(lib.tensor(2.5)),
    lambda lib: lib.arange(lib.tensor(0), lib.tensor(2.0)),
    lambda lib: lib.arange(0, 2.5, 0.5, dtype=lib.int64),
    lambda lib: lib.where(lib.tensor([1, 0]), 1.0, 0.0),
    lambda lib: lib.where(lib.tensor([True, False]), lib.zeros(2, dtype=lib.int8), 1000),
    lambda lib: lib.where(lib.tensor([True, False]), 2.5, lib.zeros(2, dtype=lib.int64)),
    lambda lib: lib.zeros(2, dtype=lib.int8).masked_fill(lib.tensor([True, False]), 1000),
    lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), 3),
])
def test_arange_where_and_masked_fill_numbers_as_torch(call):
    # (integer arange of float bounds counted from the floats; a float 0-d tensor bound made an
    # int64 range; a number that overflows the dtype wrapped; a Long condition was taken)
    torch = _torch()
    results = []
    for lib in (torch, jg):
        try:
            r = call(lib)
            results.append((r.tolist(), str(r.dtype).split(".")[-1]))
        except (RuntimeError, ValueError) as e:
            results.append((type(e).__name__, str(e)))
    assert results[0] == results[1]


def test_functional_call_through_a_parametrization_and_a_submodule_name():
    # (a parametrized name was skipped without a word: the module's own weight was used)
    torch = _torch()
    outs = []
    for lib in (torch, jg):
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 1))
        with lib.no_grad():
            m.bias.fill_(0.5)
        before = m.weight.detach().clone()
        y = lib.func.functional_call(m, {"weight": lib.tensor([[3.0, 3.0]])}, lib.ones(1, 2))
        outs.append((y.item(), bool((m.weight == before).all())))
        with pytest.raises(TypeError, match="is not an instance of"):
            lib.func.functional_call(lib.nn.Sequential(lib.nn.Linear(2, 1)),
                                     {"0": lib.ones(1, 2)}, lib.ones(1, 2))
    assert outs[0] == outs[1] == (6.5, True)


def _module_state_cases(lib):
    import copy
    import warnings

    out = []
    m = lib.nn.BatchNorm1d(1).type(lib.DoubleTensor)
    out.append(str(m.running_mean.dtype).split(".")[-1])
    out.append(str(lib.nn.Linear(2, 1).type("torch.DoubleTensor").weight.dtype).split(".")[-1])

    class Scalar(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.s = lib.nn.Parameter(lib.tensor(1.0))

    s = Scalar()
    s.load_state_dict({"s": lib.tensor([5.0])})  # (an old checkpoint's 1-element value)
    out.append(s.s.item())
    lin = lib.nn.Linear(2, 1)
    w = lib.nn.Parameter(lib.ones(1, 2), requires_grad=False)
    lin.load_state_dict({"weight": w, "bias": lib.zeros(1)}, assign=True)
    out.append((lin.weight is w, w.requires_grad))
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        out.append(list(lin.state_dict(None, "x.")))
    out.append([w.category.__name__ for w in ws])

    class Sub(lib.nn.Linear):
        def __setstate__(self, state):
            super().__setstate__(state)

    out.append(tuple(copy.deepcopy(Sub(2, 1)).weight.shape))  # (deepcopy calls __setstate__)
    return out


def test_module_type_load_state_dict_and_setstate_as_torch():
    # (Module.type refused tensor types, a 0-d parameter refused a 1-element value, assign
    # wrapped a Parameter again, positional state_dict arguments and Module.__setstate__ were
    # missing)
    assert _module_state_cases(jg) == _module_state_cases(_torch())


def test_full_of_a_0d_tensor_and_weight_norm_old_checkpoints():
    # (full refused a 0-d tensor fill value; the parametrized weight_norm refused an
    # nn.utils.weight_norm checkpoint's weight_g/weight_v)
    torch = _torch()
    out = []
    for lib in (torch, jg):
        values = [lib.full((2,), lib.tensor(v)) for v in (3.5, 3, True, 1 + 2j)]
        out.append([(v.tolist(), str(v.dtype).split(".")[-1]) for v in values])
    assert out[0] == out[1]
    jg.manual_seed(0)
    with pytest.warns(FutureWarning):
        old = jg.nn.utils.weight_norm(jg.nn.Linear(3, 2))
    new = jg.nn.utils.parametrizations.weight_norm(jg.nn.Linear(3, 2))
    result = new.load_state_dict(old.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_allclose(new.weight.detach().numpy(), old.weight.detach().numpy(),
                               rtol=1e-6)
