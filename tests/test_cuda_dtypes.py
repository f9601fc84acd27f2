"""float16, complex64/128 and random draws on cuda tensors (numba's simulator).

float16 kernels compute in half precision, each operation rounded to float16 as NumPy's are, so
they equal the CPU's values; complex kernels do complex arithmetic (``cuda_render``'s
``COMPLEX_TEMPLATES``), and every other complex op says it has no kernel; random draws come from
numba-cuda's xoroshiro128+ generators on the device, seeded by ``jitgrad.manual_seed`` (another
stream than the CPU's). Sizes are tiny: the simulator runs each GPU thread as a Python thread.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_cuda import CUDA

pytestmark = pytest.mark.skipif(CUDA is None, reason="numba.cuda is not usable here")

import jitgrad  # noqa: E402

F16 = jitgrad.float16
RNG = np.random.default_rng(16)


def _both(a: np.ndarray, requires_grad=False):
    return (jitgrad.tensor(a, requires_grad=requires_grad),
            jitgrad.tensor(a, device="cuda", requires_grad=requires_grad))


# ---------------------------------------------------------------- float16
F16_CALLS = {
    "add": lambda x, y: x + y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
    "exp": lambda x, y: x.exp(), "tanh": lambda x, y: x.tanh(),
    "sigmoid": lambda x, y: x.sigmoid(), "relu": lambda x, y: x.relu(),
    "where": lambda x, y: jitgrad.where(x > y, x, y), "scalar": lambda x, y: x * 2.5 - 1,
    "sum": lambda x, y: x.sum(), "sum_dim": lambda x, y: x.sum(1), "amax": lambda x, y: x.amax(0),
    "amin": lambda x, y: x.amin(1), "softmax": lambda x, y: x.softmax(1),
    "to_float32": lambda x, y: x.float() + y.float(), "from_float32": lambda x, y: x.float().half(),
}

_MATH = {"exp", "tanh", "sigmoid", "softmax"}


@pytest.mark.parametrize("name", sorted(F16_CALLS))
def test_float16_ops_equal_the_cpu(name):
    a = RNG.standard_normal((3, 5)).astype(np.float16)
    b = RNG.standard_normal((3, 5)).astype(np.float16)
    (ca, ga), (cb, gb) = _both(a), _both(b)
    fn = F16_CALLS[name]
    want, got = fn(ca, cb), fn(ga, gb)
    assert got.is_cuda and got.dtype is want.dtype
    if name in _MATH:  # (NumPy rounds each step of its float16 formulas; the device need not)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2e-3, atol=1e-4)
    else:  # arithmetic: each operation rounded to float16, as NumPy does
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_float16_mean_matmul_gradients_and_jit():
    a = RNG.standard_normal((4, 3)).astype(np.float16)
    b = RNG.standard_normal((3, 2)).astype(np.float16)
    (ca, ga), (cb, gb) = _both(a, True), _both(b, True)
    for x, y in ((ca, cb), (ga, gb)):
        ((x @ y).tanh().sum() + (x.exp() * 0.5).mean()).backward()
    for c, g in ((ca, ga), (cb, gb)):
        assert g.grad.is_cuda and g.grad.dtype is F16
        np.testing.assert_allclose(g.grad.cpu().numpy().astype(np.float32),
                                   c.grad.numpy().astype(np.float32), rtol=4e-3, atol=4e-3)
    f = jitgrad.jit(lambda x, y: (x * y).exp().sum(1))
    got = f(ga.detach(), ga.detach())
    assert "float16" in f.lower(ga.detach(), ga.detach()).kernels["forward"]
    np.testing.assert_array_equal(got.cpu().numpy(), (ca * ca).exp().sum(1).detach().numpy())


# ---------------------------------------------------------------- complex
def _complex(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _complex_cases():
    from jitgrad.backends.cuda_render import COMPLEX_TEMPLATES
    from jitgrad.backends.render import template_of
    from jitgrad.ops.registry import OPS, POINTWISE, _refused

    out = []
    for name, op in sorted(OPS.items()):
        if op.kind != POINTWISE or op.template is None or _refused(op, jitgrad.complex128):
            continue  # (no template, or complex refused on every device, as torch)
        try:
            text = template_of(op, {}, np.dtype(np.complex128))
        except (KeyError, TypeError):  # a template of params: not one of COMPLEX_TEMPLATES
            continue
        if text in COMPLEX_TEMPLATES:
            out.append(pytest.param(op, text, id=name))
    return out


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op,text", _complex_cases())
def test_every_complex_template_equals_the_cpu(op, text, dtype):
    """Every op whose template is one of ``COMPLEX_TEMPLATES`` computes on the device what the
    CPU computes on complex values (a new op with such a template is swept here too)."""
    from jitgrad.backends.cuda_lib import COMPLEX_NAMES
    from jitgrad.ops.registry import apply

    arity = 1 + max(int(k) for k in re.findall(r"\{(\d+)\}", text))
    arrays = [_complex((2, 3), dtype) for _ in range(arity)]
    arrays[-1][0, 0] = arrays[0][0, 0]  # (an equal pair for eq/ne)
    params = {"dtype": jitgrad.complex128} if "dtype" in (op.meta.__code__.co_varnames
                                                          if op.meta else ()) else {}
    if "{p[value]}" in text:  # addcmul, addcdiv
        params["value"] = 0.5
    if "{p[base]}" in text:  # rpow
        params["base"] = 2.0
    results = []
    for device in ("cpu", "cuda"):
        args = [jitgrad.tensor(a, device=device) for a in arrays]
        if op.nonpromoted:  # where's condition
            args[0] = jitgrad.tensor(arrays[0].real > 0, device=device)
        results.append(apply(op, *args, **params))
    want, got = results
    assert got.is_cuda and got.dtype is want.dtype
    math = any(f"{name}(" in text for name in COMPLEX_NAMES) or "**" in text
    # (a math function: cmath on the device, NumPy's own complex functions on the CPU)
    rtol = (2e-6 if math else 1e-6) if dtype == np.complex64 else (1e-12 if math else 1e-14)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=rtol, atol=rtol)


def test_complex_arithmetic_gradients_on_the_device():
    (cx, gx), (cy, gy) = _both(_complex((3,)), True), _both(_complex((3,)), True)
    for x, y in ((cx, cy), (gx, gy)):
        out = (x * y.conj() - x / y + 2j * x).real + (x - y).imag
        jitgrad.autograd.backward(out, jitgrad.ones(3, dtype=jitgrad.float64, device=x.device))
    for c, g in ((cx, gx), (cy, gy)):
        assert g.grad.is_cuda and g.grad.dtype is jitgrad.complex128
        np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(gx.detach().abs().cpu().numpy(), np.abs(gx.detach().cpu().numpy()))


def test_complex_sums_and_means_eager_and_fused():
    for dt in (np.complex64, np.complex128):
        (ca, ga), (cb, gb) = _both(_complex((3, 4), dt)), _both(_complex((3, 4), dt))
        calls = [lambda z, w: z.sum(), lambda z, w: z.sum(1), lambda z, w: z.mean(0),
                 lambda z, w: z.sum((0, 1), keepdim=True),
                 jitgrad.jit(lambda z, w: (z * w).sum(1) + z.conj().mean())]
        for fn in calls:
            want, got = fn(ca, cb), fn(ga, gb)
            assert got.is_cuda and got.dtype is want.dtype
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(),
                                       rtol=2e-6 if dt == np.complex64 else 1e-14)
    x = jitgrad.tensor(_complex((2, 3)), device="cuda", requires_grad=True)
    (x * x.conj()).real.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * x.detach().cpu().numpy())


@pytest.mark.parametrize("call,what", [
    (lambda z: z.to(jitgrad.float64), "a cast from complex to jitgrad.float64"),
])
def test_complex_ops_without_a_kernel_say_so(call, what):
    z = jitgrad.tensor(_complex((4,)), device="cuda")
    with pytest.raises(NotImplementedError, match=re.escape(what) + ".*move its inputs to the "
                       r"host with \.cpu\(\)"):
        call(z)


def test_orderings_of_complex_values_are_refused_on_every_device():
    z = jitgrad.tensor(_complex((4,)), device="cuda")
    with pytest.raises(NotImplementedError, match="\"max_values_cpu\" not implemented for "
                                                  "'Complex"):
        z.amax()
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for 'Complex"):
        assert z < z
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors."):
        jitgrad.maximum(z, z)


# ---------------------------------------------------------------- random draws
def test_draws_are_made_on_the_device_with_the_right_law():
    jitgrad.manual_seed(3)
    u = jitgrad.rand(4000, device="cuda")
    n = jitgrad.randn(40, 100, device="cuda", dtype=jitgrad.float64)
    k = jitgrad.randint(-3, 4, (4000,), device="cuda")
    for t, dt in ((u, jitgrad.float32), (n, jitgrad.float64), (k, jitgrad.int64)):
        assert t.is_cuda and t.dtype is dt
    u, n, k = u.cpu().numpy(), n.cpu().numpy(), k.cpu().numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.03
    assert abs(n.mean()) < 0.08 and abs(n.std() - 1) < 0.06
    assert set(np.unique(k)) == set(range(-3, 4))
    assert len(np.unique(u)) > 3900  # (every generator draws its own numbers)
    h = jitgrad.rand(3000, dtype=F16, device="cuda").cpu().numpy()
    assert h.dtype == np.float16 and 0 <= h.min() and h.max() < 1  # (never rounded up to 1)
    for dt in (jitgrad.int32, jitgrad.float32, jitgrad.bool):
        r = jitgrad.randint(0, 2, (50,), dtype=dt, device="cuda")
        assert r.is_cuda and r.dtype is dt and set(np.unique(r.cpu().numpy())) == {0, 1}
    z = jitgrad.randn(5, dtype=jitgrad.complex64, device="cuda").cpu().numpy()
    assert z.dtype == np.complex64 and not z.imag.any()  # (as the CPU's draws)


def test_manual_seed_reproduces_the_device_stream_which_differs_from_the_cpus():
    jitgrad.manual_seed(7)
    a = jitgrad.randn(300, device="cuda").cpu().numpy()
    b = jitgrad.randn(300, device="cuda").cpu().numpy()
    jitgrad.manual_seed(7)
    np.testing.assert_array_equal(jitgrad.randn(300, device="cuda").cpu().numpy(), a)
    np.testing.assert_array_equal(jitgrad.randn(300, device="cuda").cpu().numpy(), b)
    assert not np.array_equal(a, b)
    jitgrad.manual_seed(7)
    assert not np.allclose(jitgrad.randn(300).numpy(), a)
    jitgrad.manual_seed(8)
    assert not np.array_equal(jitgrad.randn(300, device="cuda").cpu().numpy(), a)
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but "
                       "found 'cpu'"):
        jitgrad.rand(3, device="cuda", generator=jitgrad.Generator())


def test_cuda_manual_seed_seeds_the_device_alone_until_manual_seed_reseeds_both():
    def device_draw():
        return jitgrad.randn(200, device="cuda").cpu().numpy()

    jitgrad.manual_seed(1)
    cpu = jitgrad.randn(5).numpy()
    jitgrad.cuda.manual_seed(11)
    a = device_draw()
    jitgrad.manual_seed(1)
    jitgrad.cuda.manual_seed_all(11)
    np.testing.assert_array_equal(jitgrad.randn(5).numpy(), cpu)  # the CPU stream as before
    np.testing.assert_array_equal(device_draw(), a)
    jitgrad.cuda.manual_seed(12)
    assert not np.array_equal(device_draw(), a)
    jitgrad.manual_seed(11)  # torch.manual_seed seeds every device: 11 again on the device
    np.testing.assert_array_equal(device_draw(), a)
    jitgrad.cuda.manual_seed(12)
    jitgrad.manual_seed(11)  # (after cuda.manual_seed: it wins)
    np.testing.assert_array_equal(device_draw(), a)


def test_in_place_samplers_like_functions_dropout_and_randperm_stay_on_the_device():
    x = jitgrad.zeros(2000, device="cuda")
    u = x.uniform_(-2, 3).cpu().numpy()
    assert -2 <= u.min() and u.max() < 3 and abs(u.mean() - 0.5) < 0.1
    n = jitgrad.zeros(2000, dtype=jitgrad.float64, device="cuda").normal_(5, 2).cpu().numpy()
    assert abs(n.mean() - 5) < 0.2 and abs(n.std() - 2) < 0.15
    for t in (jitgrad.rand_like(x), jitgrad.randn_like(x), jitgrad.randperm(6, device="cuda"),
              jitgrad.normal(x, 1.0), jitgrad.normal(0.0, 1.0, (3,), device="cuda")):
        assert t.is_cuda
    assert sorted(jitgrad.randperm(6, device="cuda").cpu().numpy()) == list(range(6))
    ones = jitgrad.ones(1000, device="cuda", requires_grad=True)
    F = jitgrad.nn.functional
    y = F.dropout(ones, 0.25)
    y.sum().backward()
    v = y.detach().cpu().numpy()
    assert set(np.unique(v)) <= {0.0, np.float32(1 / 0.75)} and 0.18 < (v == 0).mean() < 0.32
    np.testing.assert_array_equal(ones.grad.cpu().numpy(), v)
    assert not F.dropout(ones, 1.0).detach().cpu().numpy().any()
    f = jitgrad.jit(lambda x: F.dropout(x, 0.5) * 1)
    m1, m2 = f(ones.detach()).cpu().numpy(), f(ones.detach()).cpu().numpy()
    assert m1.max() == 2 and not np.array_equal(m1, m2)  # (a fresh mask each call)


COMPLEX_MATH = ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                "sigmoid", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
                "log2", "log10", "exp2", "reciprocal", "sgn")


@pytest.mark.parametrize("dtype", [jitgrad.complex64, jitgrad.complex128])
def test_complex_math_values_and_gradients_equal_the_cpu(dtype):
    """The math functions on complex values (cmath and closed forms on the device), values
    and the gradients of a real loss through them, against the CPU (NumPy)."""
    a = _complex((2, 3))
    a[0, 0] = 1e-4 + 2e-4j  # (expm1, log1p near 0: no cancellation)
    c = _complex((2, 3))
    tol = dict(rtol=2e-5, atol=2e-6) if dtype is jitgrad.complex64 else \
        dict(rtol=1e-11, atol=1e-13)
    for name in COMPLEX_MATH:
        results = []
        for device in ("cpu", "cuda"):
            z = jitgrad.tensor(a, dtype=dtype, device=device, requires_grad=True)
            out = getattr(jitgrad, name)(z)
            (out * jitgrad.tensor(c, dtype=dtype, device=device)).real.sum().backward()
            results.append((out.detach(), z.grad))
        (want, want_g), (got, got_g) = results
        assert got.is_cuda and got.dtype is want.dtype is dtype, name
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), err_msg=name, **tol)
        assert got_g.is_cuda and got_g.dtype is dtype
        np.testing.assert_allclose(got_g.cpu().numpy(), want_g.numpy(), err_msg=name, **tol)


def test_complex_powers_predicates_and_fused_math_equal_the_cpu():
    a = _complex((2, 3), np.complex64)
    a[1, 2] = complex(np.inf, 1)
    calls = {
        "pow": lambda z: z ** (z * 0.5), "pow_scalar": lambda z: z ** 2.5,
        "square": lambda z: z.square(), "cube": lambda z: z ** 3, "rpow": lambda z: 2.0 ** z,
        "isfinite": lambda z: z.isfinite(), "isinf": lambda z: z.isinf(),
        "isnan": lambda z: z.isnan(), "addcmul": lambda z: jitgrad.addcmul(z, z, z, value=0.5),
        "jit": jitgrad.jit(lambda z: (z.exp() * z.sin() + z.sqrt()).sum(1)),
    }
    finite = a.copy()
    finite[1, 2] = 1 + 1j
    for name, fn in calls.items():
        src = a if name.startswith("is") else finite
        want = fn(jitgrad.tensor(src))
        got = fn(jitgrad.tensor(src, device="cuda"))
        assert got.is_cuda and got.dtype is want.dtype, name
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2e-5, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("dtype", [jitgrad.complex64, jitgrad.complex128])
def test_complex_matmul_and_its_gradients_equal_the_cpu(dtype):
    a, b, v = _complex((5, 6)), _complex((6, 3)), _complex((6,))
    results = []
    for device in ("cpu", "cuda"):
        x, y, w = (jitgrad.tensor(t, dtype=dtype, device=device, requires_grad=True)
                   for t in (a, b, v))
        outs = (x @ y, jitgrad.mv(x, w), jitgrad.dot(w, w.conj()),
                jitgrad.bmm(x[None], y[None]))
        sum(o.abs().sum() for o in outs).backward()
        results.append([o.detach() for o in outs] + [x.grad, y.grad, w.grad])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is jitgrad.complex64 else dict(rtol=1e-12)
    for want, got in zip(*results):
        assert got.is_cuda and got.dtype is want.dtype is dtype
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **tol)


def test_bool_matmul_is_refused_as_torch():
    # (torch has no bool matrix product on either device; the CPU's kernel name is given)
    a, b = RNG.standard_normal((4, 5)) > 0, RNG.standard_normal((5, 3)) > 0
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for "
                                                  "'Bool'"):
        jitgrad.tensor(a, device="cuda") @ jitgrad.tensor(b, device="cuda")


# ---------------------------------------------------------------- CUDA generators
def test_cuda_generator_seeds_states_and_draws():
    g = jitgrad.Generator(device="cuda")
    assert g.device == jitgrad.device("cuda", 0) and g.device.type == "cuda"
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    draws = lambda: (jitgrad.rand(6, generator=g, device="cuda"),  # noqa: E731
                     jitgrad.randn(2, 3, generator=g, device="cuda"),
                     jitgrad.randint(0, 9, (5,), generator=g, device="cuda"),
                     jitgrad.normal(1.0, 2.0, size=(4,), generator=g, device="cuda"),
                     jitgrad.zeros(5, device="cuda").uniform_(-1, 1, generator=g),
                     jitgrad.zeros(5, device="cuda").normal_(3, 0.5, generator=g))
    first = [t.cpu().numpy() for t in draws()]
    assert all(t.is_cuda for t in draws())
    assert 0 <= first[0].min() and first[0].max() < 1 and first[2].max() < 9
    assert -1 <= first[4].min() and first[4].max() < 1
    g.manual_seed(7)
    again = [t.cpu().numpy() for t in draws()]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)  # the same seed, the same draws
    state = g.get_state()
    assert state.dtype is jitgrad.uint8 and not state.is_cuda
    after = [t.cpu().numpy() for t in draws()]
    assert not np.array_equal(after[0], first[0])  # the generators moved on
    g.set_state(state)
    for x, y in zip(after, [t.cpu().numpy() for t in draws()]):
        np.testing.assert_array_equal(x, y)  # set_state rewinds them
    other = jitgrad.Generator(device="cuda").manual_seed(8)
    assert not np.array_equal(jitgrad.rand(6, generator=other, device="cuda").cpu().numpy(),
                              first[0])
    s = g.seed()
    assert s == g.initial_seed()
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(state[:-1])


def test_cuda_generator_is_its_own_stream_and_device_checked():
    g = jitgrad.Generator(device="cuda").manual_seed(0)
    jitgrad.manual_seed(0)
    default = jitgrad.rand(8, device="cuda").cpu().numpy()
    own = jitgrad.rand(8, generator=g, device="cuda").cpu().numpy()
    jitgrad.manual_seed(5)  # (the default generator's reseed leaves g alone)
    g.manual_seed(0)
    np.testing.assert_array_equal(jitgrad.rand(8, generator=g, device="cuda").cpu().numpy(), own)
    np.testing.assert_array_equal(default, own)  # (seed 0 both: the same device stream)
    cpu = jitgrad.Generator().manual_seed(0)
    assert not np.allclose(jitgrad.rand(8, generator=cpu).numpy(), own)  # another stream
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but "
                                           "found 'cuda'"):
        jitgrad.rand(3, generator=g)
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but "
                                           "found 'cpu'"):
        jitgrad.rand(3, generator=cpu, device="cuda")
