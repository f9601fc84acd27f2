"""The Numba CPU backend: every opdb record under ``jit(backend="numba")`` against the
interpreter (values, compiled gradients, second derivatives), fusion and recompute structure,
NaN/inf, integer and bool dtypes, broadcasting, strided and empty inputs, and compile errors."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from opdb import OP_DB
from test_jit import DATA_DEPENDENT_SHAPES, _prepare

import jitgrad
from jitgrad.autograd import grad as agrad
from jitgrad.jit import ConcretizationError, jit

pytest.importorskip("numba")

from jitgrad.backends import numba_cpu  # noqa: E402
from jitgrad.jit.passes.fuse import KERNEL_OP  # noqa: E402


def _cases(dtype, first_only=False):
    out = []
    for rec in OP_DB:
        if dtype not in rec.dtypes:
            continue
        samples = rec.samples(np.random.default_rng(zlib.crc32(rec.name.encode())))
        samples = [(i, s) for i, s in enumerate(samples) if s.name != "mask"]
        for i, s in samples[:1] if first_only else samples:
            out.append(pytest.param(rec, s, id=f"{rec.name}-{s.name or i}"))
    return out


def _close(a, b, rtol, atol):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def _sweep(rec, sample, dtype, second):
    dt = getattr(jitgrad, dtype)
    fn, inputs = _prepare(rec, sample, dt)
    rtol, atol = rec.rtol[dtype], rec.atol[dtype]
    if dtype == "float32":  # kernels round each op as eager does, but exp/tanh may differ by
        rtol, atol = max(rtol, 2e-5), max(atol, 1e-5)  # an ulp and sums in another order
    if rec.name in DATA_DEPENDENT_SHAPES:  # the output shape depends on values: never guessed
        with pytest.raises(ConcretizationError, match="shape depends on the tensor's values"):
            jit(fn, backend="numba")(*inputs)
        return
    rg = rec.differentiable
    xi = [x.detach().clone().requires_grad_(rg) for x in inputs]
    xn = [x.detach().clone().requires_grad_(rg) for x in inputs]
    oi = jit(fn, backend="interpreter")(*xi)
    on = jit(fn, backend="numba")(*xn)
    for a, b in zip(oi, on):
        _close(a, b, rtol, atol)
        assert a.requires_grad == b.requires_grad
    if not rg:
        return
    pairs = [(a, b) for a, b in zip(oi, on) if a.dtype.is_floating_point and a.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(1)
    cts = [jitgrad.tensor(rng.standard_normal(tuple(a.shape)), dtype=a.dtype) for a, _ in pairs]
    # the compiled backward programs (no create_graph)
    gi = agrad([a for a, _ in pairs], xi, cts, retain_graph=True, allow_unused=True)
    gn = agrad([b for _, b in pairs], xn, cts, retain_graph=True, allow_unused=True)
    for a, b in zip(gi, gn):
        _close(a, b, rtol, atol)
    if not (second and rec.gradgrad):
        return
    gi = agrad([a for a, _ in pairs], xi, cts, create_graph=True, allow_unused=True)
    gn = agrad([b for _, b in pairs], xn, cts, create_graph=True, allow_unused=True)
    used = [i for i, g in enumerate(gi) if g is not None and g.requires_grad]
    if not used:
        return
    si = sum((gi[i] * gi[i]).sum() for i in used)
    sn = sum((gn[i] * gn[i]).sum() for i in used)
    for a, b in zip(agrad(si, xi, allow_unused=True), agrad(sn, xn, allow_unused=True)):
        _close(a, b, rtol, atol)


@pytest.mark.parametrize("rec,sample", _cases("float64"))
def test_opdb_float64_matches_interpreter(rec, sample):
    _sweep(rec, sample, "float64", second=True)


# float32 runs each record's first sample: what float32 changes in a kernel (its math helpers,
# casts and accumulators) is in every sample, while the other samples vary shapes, broadcasting
# and strides, which the kernels index the same way in every dtype (float64 runs them all, with
# second derivatives). All samples in float32 cost about 400 s of Numba compiles in CI.
@pytest.mark.parametrize("rec,sample", _cases("float32", first_only=True))
def test_opdb_float32_matches_interpreter(rec, sample):
    _sweep(rec, sample, "float32", second=False)


def w1(x, y):
    return (x.tanh() * y.sigmoid() + x * y ** 2 - (-x * x).exp()).sum()


def test_w1_is_one_kernel_each_way_and_saves_only_its_inputs(monkeypatch):
    monkeypatch.setattr(numba_cpu, "RECOMPUTE_MATH_BYTES", 0)  # (as for large inputs)
    x = jitgrad.randn(1000, requires_grad=True)
    y = jitgrad.randn(1000, requires_grad=True)
    f = jit(w1, backend="numba")
    low = f.lower(x, y)
    fwd, _ = numba_cpu.lower(low.forward_graph)
    bwd, _ = numba_cpu.lower(low.backward_graph)
    assert [e.op for e in fwd.eqns] == [KERNEL_OP]
    assert sum(e.op is KERNEL_OP for e in bwd.eqns) == 1
    assert low.forward_ir.endswith("saved: (primals_1, primals_2)")
    assert "kernel[k0]" in low.forward_ir and "# k0: 11 ops" in low.kernels["forward"]
    out = f(x, y)
    out.backward()
    xe, ye = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    w1(xe, ye).backward()
    np.testing.assert_allclose(out.item(), w1(xe, ye).item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), ye.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_tiny_inputs_recompute_every_cheap_value():
    # below RECOMPUTE_SMALL_BYTES a saved array costs more per call than recomputing it
    x = jitgrad.randn(1000, requires_grad=True)
    y = jitgrad.randn(1000, requires_grad=True)
    low = jit(w1, backend="numba").lower(x, y)
    assert low.forward_ir.rsplit("saved: ", 1)[1].strip() == "(primals_1, primals_2)"


def test_small_inputs_save_transcendental_values_instead_of_recomputing_them():
    # in cache, reading tanh(x) back is cheaper than its polynomial; x*x is still recomputed
    x = jitgrad.randn(8192, requires_grad=True)
    y = jitgrad.randn(8192, requires_grad=True)
    low = jit(w1, backend="numba").lower(x, y)
    saved = low.forward_ir.rsplit("saved: ", 1)[1]
    assert saved.count("saved_") == 3 and "primals_1" in saved and "primals_2" in saved
    fwd, _ = numba_cpu.lower(low.forward_graph)
    g = low.forward_graph
    saved_vars = set(g.outvars[len(g.outvars) - g.n_saved:])
    ops = {q.op.name for q in fwd.eqns[0].params["body"].eqns if q.outputs[0] in saved_vars}
    assert ops == {"tanh", "sigmoid", "exp"}


def test_second_derivative_through_a_numba_function():
    x = jitgrad.randn(5, dtype=jitgrad.float64, requires_grad=True)
    f = jit(lambda t: (t.tanh() * t.exp()).sum(), backend="numba")
    (g,) = agrad(f(x), [x], create_graph=True)
    (h,) = agrad(g.sum(), [x])
    xe = x.detach().clone().requires_grad_()
    (ge,) = agrad((xe.tanh() * xe.exp()).sum(), [xe], create_graph=True)
    (he,) = agrad(ge.sum(), [xe])
    np.testing.assert_allclose(g.detach().numpy(), ge.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), he.numpy(), rtol=1e-12)
    assert jitgrad.autograd.gradcheck(f, (x,))
    assert jitgrad.autograd.gradgradcheck(f, (x,))


NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize("fn", [
    lambda x, y: x.relu(), lambda x, y: jitgrad.maximum(x, y), lambda x, y: jitgrad.minimum(x, y),
    lambda x, y: jitgrad.where(x > y, x, y), lambda x, y: x.clamp(-1.0, 1.0),
    lambda x, y: x.clamp(min=0.5), lambda x, y: x.clamp(max=0.5), lambda x, y: x.isnan(),
    lambda x, y: x.exp(), lambda x, y: x.log(), lambda x, y: x.tanh(), lambda x, y: x.sigmoid(),
    lambda x, y: x / y, lambda x, y: x.sqrt(), lambda x, y: x.sign(), lambda x, y: x.abs(),
    lambda x, y: x.amax(), lambda x, y: x.amin(), lambda x, y: x.sum(), lambda x, y: x.log1p(),
    lambda x, y: x == y, lambda x, y: x ** 2, lambda x, y: x * 0.5 + y,
], ids=["relu", "maximum", "minimum", "where", "clamp", "clamp_min", "clamp_max", "isnan", "exp",
        "log", "tanh", "sigmoid", "div", "sqrt", "sign", "abs", "amax", "amin", "sum", "log1p",
        "eq", "square", "axpy"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_inf_behave_as_in_eager_mode(fn, dtype):
    dt = getattr(jitgrad, dtype)
    x = jitgrad.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, 1e30, -1e-30, 3.0], dtype=dt)
    y = jitgrad.tensor([1.0, NAN, INF, -INF, 0.0, 0.0, -1.0, 2.0, 5.0, NAN], dtype=dt)
    with np.errstate(all="ignore"):
        e = fn(x, y)
        n = jit(fn, backend="numba")(x, y)
    assert n.dtype is e.dtype and tuple(n.shape) == tuple(e.shape)
    np.testing.assert_allclose(n.numpy(), e.numpy(), rtol=2e-6 if dtype == "float32" else 1e-14,
                               equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda x, y: x ** 2.5, lambda x, y: x / 2, lambda x, y: x + True, lambda x, y: x * y,
    lambda x, y: (x > 1.5) & (y < 1), lambda x, y: x.to(jitgrad.float64) - y,
    lambda x, y: jitgrad.where(x > 1, x, 0.5), lambda x, y: x.exp() + y.sqrt(),
    lambda x, y: jitgrad.maximum(x, y), lambda x, y: x.sum() * y, lambda x, y: x.amax() + x,
    lambda x, y: x.sum(), lambda x, y: (x > 1).sum(), lambda x, y: x ** 2, lambda x, y: -x * 3,
    lambda x, y: x.amin(), lambda x, y: (x * 7).to(jitgrad.int32) * 1000000000,
], ids=["int_pow_float", "int_div", "int_add_bool", "int_mul_f32", "bool_and", "f64_sub_f32",
        "where_scalar", "int_exp", "maximum_mixed", "int_sum_mul", "int_amax", "int_sum",
        "bool_sum", "int_square", "int_neg_mul", "int_amin", "int32_wraps"])
def test_integer_and_bool_promotion_matches_eager(fn):
    x = jitgrad.tensor([1, 2, 3])
    y = jitgrad.tensor([0.5, 1.5, 2.5])
    e, n = fn(x, y), jit(fn, backend="numba")(x, y)
    assert n.dtype is e.dtype and tuple(n.shape) == tuple(e.shape)
    if e.dtype.is_floating_point:  # libm's exp may differ from NumPy's by an ulp
        np.testing.assert_allclose(n.numpy(), e.numpy(), rtol=3e-7)
    else:
        np.testing.assert_array_equal(n.numpy(), e.numpy())


def _check(fn, *inputs, rtol=1e-12):
    xs = [t.detach().clone().requires_grad_(t.dtype.is_floating_point) for t in inputs]
    xn = [t.detach().clone().requires_grad_(t.dtype.is_floating_point) for t in inputs]
    e, n = fn(*xs), jit(fn, backend="numba")(*xn)
    np.testing.assert_allclose(n.detach().numpy(), e.detach().numpy(), rtol=rtol, atol=1e-12)
    wrt = [i for i, t in enumerate(inputs) if t.dtype.is_floating_point]
    if wrt and e.requires_grad:
        ct = jitgrad.ones(tuple(e.shape), dtype=e.dtype) * 0.5
        ge = agrad(e, [xs[i] for i in wrt], ct, allow_unused=True)
        gn = agrad(n, [xn[i] for i in wrt], ct, allow_unused=True)
        for a, b in zip(ge, gn):
            _close(a, b, rtol, 1e-12)


D = jitgrad.float64


def test_broadcasting_reductions_and_keepdim():
    x = jitgrad.randn(4, 5, dtype=D)
    b = jitgrad.randn(5, dtype=D)
    c = jitgrad.randn(4, 1, dtype=D)
    _check(lambda x, b, c: ((x + b) * c).tanh(), x, b, c)
    _check(lambda x, b: (x * b).sum(0), x, b)
    _check(lambda x, b: (x * b).sum(1, keepdim=True) + x.mean(1, keepdim=True), x, b)
    _check(lambda x: x.amax(0) - x.amin(1).sum(), x)
    _check(lambda x, b: (x.exp() + b).mean(), x, b)
    _check(lambda x: jitgrad.softmax(x, 1), x)
    _check(lambda x: jitgrad.log_softmax(x, 0), x)
    y = jitgrad.randn(2, 3, 4, dtype=D)
    _check(lambda y: y.sum((0, 2)) * 2, y)
    _check(lambda y: (y * y).sum((1,), keepdim=True) / y.sum(), y)


def test_non_contiguous_and_zero_size_inputs():
    x = jitgrad.randn(6, 4, dtype=D)
    _check(lambda x: (x.t() * 2).exp(), x)
    _check(lambda x: (x[::2] + 1).sum(0), x)
    _check(lambda x, y: x.t() * y, x, jitgrad.randn(4, 6, dtype=D))
    z = jitgrad.randn(0, 3, dtype=D)
    _check(lambda z: (z * 2).exp(), z)
    _check(lambda z: (z * 2).sum(0), z)
    _check(lambda z: (z + 1).sum(), z)


def test_mlp_step_with_matmuls_between_kernels():
    x = jitgrad.randn(8, 6, dtype=D)
    w1, b1 = jitgrad.randn(6, 5, dtype=D), jitgrad.randn(5, dtype=D)
    w2 = jitgrad.randn(5, 3, dtype=D)
    labels = jitgrad.tensor([0, 1, 2, 1, 0, 2, 2, 1])

    def loss(x, w1, b1, w2, labels):
        h = (x @ w1 + b1).relu()
        return jitgrad.nn.functional.cross_entropy(h @ w2, labels)

    _check(loss, x, w1, b1, w2, labels)


def test_new_sizes_reuse_compiled_kernels():
    f = jit(lambda x: (x.tanh() * 2).sum(0), backend="numba")
    f(jitgrad.randn(5, 3))
    n = len(numba_cpu._DISPATCHERS)
    out = f(jitgrad.randn(7, 3))
    assert len(numba_cpu._DISPATCHERS) == n
    assert tuple(out.shape) == (3,)


def test_a_kernel_numba_cannot_compile_names_the_op_and_line():
    from jitgrad.ops.registry import OPS, POINTWISE, apply, defop

    op = defop("test_bad_template", np.negative, kind=POINTWISE,
               template="{0}.no_such_attribute")

    def f(x):
        return apply(op, x * 2)

    try:
        with pytest.raises(numba_cpu.KernelCompileError, match=r"test_bad_template.*test_numba"):
            jit(f, backend="numba")(jitgrad.randn(3))
    finally:
        del OPS[op.name]  # (the registry-wide tests must not see it)


def test_float16_and_complex_stay_outside_kernels():
    h = jitgrad.randn(4).to(jitgrad.float16)
    f = jit(lambda h: (h * 2).exp(), backend="numba")
    np.testing.assert_allclose(f(h).numpy(), (h * 2).exp().numpy())
    fused, kernels = numba_cpu.lower(f.lower(h).forward_graph)
    ir = f.lower(h).forward_ir
    assert not kernels and "mul" in ir and "kernel" not in ir


def _template_cases():
    import re

    from jitgrad.ops.registry import OPS, POINTWISE

    out = []
    for name, op in sorted(OPS.items()):
        if op.kind != POINTWISE or not isinstance(op.template, str):
            continue
        arity = 1 + max(int(k) for k in re.findall(r"\{(\d+)\}", op.template))
        if re.search(r"\{p\[", op.template):
            continue
        for dtype in ("bool", "int32", "int64", "float32", "float64"):
            out.append(pytest.param(op, arity, dtype, id=f"{name}-{dtype}"))
    return out


_VALUES = {"float": [NAN, INF, -INF, 0.0, -0.0, 0.5, -1.5, 2.0, 1e30, -3.0, 1.0, 7.25],
           "int": [0, 1, -1, 2, -7, 3, 100, -100, 5, 2, 4, 9],
           "bool": [True, False, True, True, False, False, True, False, True, False, True, True]}


@pytest.mark.parametrize("op,arity,dtype", _template_cases())
def test_every_template_matches_its_impl(op, arity, dtype):
    """Each op's kernel template, rendered and compiled alone, against its NumPy impl: on
    bool and integer dtypes too, and on NaN and inf."""
    from jitgrad.ops.registry import apply

    dt = getattr(jitgrad, dtype)
    kind = "float" if dtype.startswith("float") else "int" if dtype.startswith("int") else "bool"
    vals = _VALUES[kind]
    args = [jitgrad.tensor(np.roll(np.array(vals), 3 * k).reshape(3, 4), dtype=dt)
            for k in range(arity)]
    if op.nonpromoted:  # where's condition
        args[0] = args[0] != 0 if kind != "bool" else args[0]
    try:
        with np.errstate(all="ignore"):
            apply(op, *args)
            expected = jit(lambda *a: apply(op, *a), backend="interpreter")(*args)
    except (RuntimeError, TypeError, ValueError):
        pytest.skip(f"{op.name} does not take {dtype}")
    with np.errstate(all="ignore"):
        got = jit(lambda *a: apply(op, *a), backend="numba")(*args)
    assert got.dtype is expected.dtype
    e, g = expected.numpy(), got.numpy()
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=2e-6 if e.dtype == np.float32 else 1e-14,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_templated_reductions_and_parametrized_ops_on_every_dtype(dtype):
    dt = getattr(jitgrad, dtype)
    x = jitgrad.tensor([[3, -7, 2, 9], [-1, 4, 0, 5], [8, 8, -2, 1]], dtype=dt)
    fns = [lambda x: x.amax(), lambda x: x.amin(1), lambda x: x.amax(0, keepdim=True),
           lambda x: x.sum(1), lambda x: x.prod(0), lambda x: x.clamp(min=0),
           lambda x: x.clamp(max=3), lambda x: x.clamp(-2, 4), lambda x: x ** 2,
           lambda x: x ** 3, lambda x: 2 ** x.abs() if dtype.startswith("float") else x]
    if dtype.startswith("float"):
        fns += [lambda x: x.mean(1), lambda x: x ** 0.5, lambda x: x ** -1.5,
                lambda x: 1.5 ** x]
    for fn in fns:
        with np.errstate(all="ignore"):
            e, g = fn(x), jit(fn, backend="numba")(x)
        assert g.dtype is e.dtype
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, equal_nan=True)


def test_lower_reports_each_kernels_share_of_the_roofline(monkeypatch):
    monkeypatch.setattr(numba_cpu, "RECOMPUTE_MATH_BYTES", 0)  # (as for large inputs)
    x = jitgrad.randn(4096, requires_grad=True)
    y = jitgrad.randn(4096, requires_grad=True)
    low = jit(w1, backend="numba").lower(x, y)
    assert "reads 32768 B, writes 4 B" in low.kernels["forward"]
    text = low.roofline()
    lines = text.splitlines()
    assert lines[0] == "# forward" and "copy bandwidth" in lines[1]
    assert lines[2].startswith("k0: 11 ops over [4096], ") and "32772 B moved" in lines[2]
    assert "% of copy bandwidth" in lines[2] and "# backward" in lines
    assert jit(w1, backend="interpreter").lower(x, y).roofline() == \
        "(this backend compiles no kernels)"


def test_a_repeated_pattern_is_cut_into_kernels_of_equal_source():
    # an unrolled loop longer than a kernel: cut where the content says, every repetition
    # compiles to the same source (at fixed cuts of MAX_KERNEL_OPS its 5-op period gives a
    # new source for each phase)
    def chain(x):
        h = x
        for i in range(120):
            h = h * h * 0.5 if i % 2 == 0 else jitgrad.tanh(h) * 1.01 + 0.1
        return h.sum()

    x = jitgrad.linspace(-1, 1, 16, dtype=D)
    low = jit(chain, backend="numba").lower(x)
    _, kernels = numba_cpu.lower(low.forward_graph)
    assert len(kernels) >= 4
    middle = {k.ks.source for k in kernels[1:-1]}
    assert len(middle) == 1, [k.ks.n_ops for k in kernels]
    _check(chain, x)


def test_kernels_recompute_values_of_earlier_kernels_instead_of_reading_them():
    # layer norm + gelu + matmul: the backward kernel after the matmul recomputes the gelu
    # chain from the saved centered input rather than reading it back from memory
    x = jitgrad.randn(16, 8, dtype=D, requires_grad=True)
    g, b = jitgrad.randn(8, dtype=D, requires_grad=True), jitgrad.randn(8, dtype=D)
    w = jitgrad.randn(8, 8, dtype=D, requires_grad=True)
    nnf = jitgrad.nn.functional

    def f(x, g, b, w):
        return ((nnf.gelu(nnf.layer_norm(x, (8,), g, b), approximate="tanh") @ w) ** 2).mean()

    low = jit(f, backend="numba").lower(x, g, b, w)
    fused, _ = numba_cpu.lower(low.backward_graph)
    full = [sum(tuple(v.shape) == (16, 8) for v in e.outputs) for e in fused.eqns
            if e.op is KERNEL_OP]
    assert max(full) <= 2, fused.format()
    _check(f, x, g, b, w)


def test_parallel_kernels_above_the_threshold(monkeypatch, all_threads):
    monkeypatch.setattr(numba_cpu, "PARALLEL_MIN", 2000)
    monkeypatch.setattr(numba_cpu, "_threads", lambda: 2)
    x = jitgrad.randn(40, 8, dtype=D, requires_grad=True)
    y = jitgrad.randn(40, 8, dtype=D, requires_grad=True)
    f = jit(lambda x, y: (x.tanh() * y).sum() + (x * y).sum(1).exp().sum(), backend="numba")
    low = f.lower(x, y)
    assert "prange(n0)" in low.kernels["forward"] and "prange(n0)" in low.kernels["backward"]
    _check(lambda x, y: (x.tanh() * y).sum() + (x * y).sum(1).exp().sum(), x, y)
    # a reduction over dim 0 that keeps dim 1 runs its rows in chunks, in parallel, each chunk
    # into its own partial row (a prange over the rows would race on the column sums)
    g = jit(lambda x: (x.tanh() * 2).amax(0), backend="numba")
    big = jit(lambda x: (x.tanh() * 2).amax(1), backend="numba")
    assert "prange(nc)" in g.lower(x).kernels["forward"]
    assert "prange(n0)" in big.lower(x).kernels["forward"]
    np.testing.assert_allclose(g(x).detach().numpy(), (x.tanh() * 2).amax(0).detach().numpy(),
                               rtol=1e-15)
    # a full max has no parallel reduction variable: serial
    full = jit(lambda x: (x.tanh() * 2).amax(), backend="numba")
    assert "prange" not in full.lower(x).kernels["forward"]
    small = jit(lambda x: x * 2, backend="numba").lower(jitgrad.randn(4, dtype=D))
    assert "prange" not in small.kernels["forward"]


def test_an_expanded_input_is_read_in_place_not_as_a_strided_array(monkeypatch):
    monkeypatch.setattr(numba_cpu, "RECOMPUTE_MATH_BYTES", 0)  # (as for large inputs)
    # the backward's cotangent is expanded from a scalar: the kernel loads it once (no
    # zero-stride array in the loop, which would stop vectorization)
    x = jitgrad.randn(64, requires_grad=True)
    y = jitgrad.randn(64, requires_grad=True)
    low = jit(w1, backend="numba").lower(x, y)
    text = low.kernels["backward"]
    assert "expand" not in text.split("# k0")[0].split("kernel[k0]")[0]
    assert "def kernel(n0, a0, a1, a2, o0, o1):\n    x2 = a2[0]\n" in text
    _check(lambda x, y: (x * y).sum() * 3, x.detach().double(), y.detach().double())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_mean_of_nothing_is_nan_on_every_tier():
    # the first calls launch kernel by kernel (their full reductions finish in Python), later
    # calls run one program: both give eager's nan (a ZeroDivisionError once)
    x = jitgrad.randn(0, 4, dtype=jitgrad.float64)
    f = jit(lambda t: ((t.exp() * 2).mean(), t.sum(), (t * t).mean(0)), backend="numba")
    for _ in range(numba_cpu.PROGRAM_AFTER_CALLS + 2):
        mean, total, per_column = f(x)
        assert np.isnan(mean.item()) and total.item() == 0.0
        assert per_column.shape == (4,) and np.isnan(per_column.numpy()).all()


@pytest.mark.parametrize("parallel_min", [0, 1])
@pytest.mark.parametrize("rows", [1, 127, 128, 300])
def test_reductions_over_rows_run_in_chunks(monkeypatch, parallel_min, rows, all_threads):
    # column sums, maxima and a (0, 2) reduction of a 3-d domain go through per-chunk partials
    # (render.CHUNK_ROWS rows each), serial and parallel, with eager's values; float32 sums add
    # float32 within a chunk and float64 across chunks
    monkeypatch.setattr(numba_cpu, "PARALLEL_MIN", parallel_min)
    monkeypatch.setattr(numba_cpu, "_threads", lambda: 2)
    rng = np.random.default_rng(rows)
    for dt, rtol in ((jitgrad.float64, 1e-13), (jitgrad.float32, 2e-6)):
        x = jitgrad.tensor(rng.standard_normal((rows, 5, 3)), dtype=dt)

        def f(x):
            t = x.tanh() * 3
            return t.sum(0), t.amax(0), t.amin((0, 2)), (t * t).sum((0, 2), keepdim=True)

        low = jit(f, backend="numba").lower(x)
        assert "for ch in" in low.kernels["forward"] and "p3[ch, i1, 0]" in low.kernels["forward"]
        assert ("prange(nc)" in low.kernels["forward"]) == (parallel_min == 1)
        for got, want in zip(jit(f, backend="numba")(x), f(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=1e-5)


def test_bias_gradient_column_sums_match_eager_in_float32():
    # a linear layer's bias gradient: a column sum over the batch, run in row chunks
    x = jitgrad.randn(1000, 64, requires_grad=True)
    b = jitgrad.randn(64, requires_grad=True)
    f = jit(lambda x, b: ((x + b).tanh() * 2).sum(), backend="numba")
    (gb,) = jitgrad.autograd.grad(f(x, b), [b])
    x64, b64 = x.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    (want,) = jitgrad.autograd.grad(((x64 + b64).tanh() * 2).sum(), [b64])
    np.testing.assert_allclose(gb.numpy(), want.numpy(), rtol=2e-5)
