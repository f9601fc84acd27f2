"""``jitgrad.cond`` and ``jitgrad.while_loop``: eager values, gradients and errors against
torch; under ``jit`` (interpreter and numba backends) one staged equation holding sub-graphs,
differentiable for ``cond`` (first and second order), forward-only for ``while_loop``; the IR
printout; ``vmap``."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.errors import ConcretizationError
from jitgrad.func import vmap
from jitgrad.jit import jit

F64 = jitgrad.float64
BACKENDS = ["interpreter", "numba"]


def _t(a, requires_grad=False):
    return jitgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _branches(w):
    def true_fn(x):
        return (x.sin() * w).exp()

    def false_fn(x):
        return x.cos() * x + w
    return true_fn, false_fn


# ---------------------------------------------------------------- eager, against torch


@pytest.mark.parametrize("pred", [True, False])
@pytest.mark.parametrize("kind", ["bool", "int", "float", "tensor", "tensor1", "ftensor"])
def test_eager_values_and_grads_match_torch(pred, kind):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    xa, wa = rng.standard_normal(4), rng.standard_normal(4)
    preds = {"bool": (pred, pred), "int": (int(pred), int(pred)),
             "float": (float(pred), float(pred)),
             "tensor": (jitgrad.tensor(pred), torch.tensor(pred)),
             "tensor1": (jitgrad.tensor([pred]), torch.tensor([pred])),
             "ftensor": (jitgrad.tensor(float(pred)), torch.tensor(float(pred)))}
    pj, pt = preds[kind]
    x, w = _t(xa, True), _t(wa, True)
    xt = torch.tensor(xa, requires_grad=True)
    wt = torch.tensor(wa, requires_grad=True)
    y = jitgrad.cond(pj, *_branches(w), (x,))
    yt = torch.cond(pt, lambda x: (x.sin() * wt).exp(), lambda x: x.cos() * x + wt, (xt,))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    (y * _t([1.0, 2.0, 3.0, 4.0])).sum().backward()
    (yt * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12)


def test_eager_pytree_operands_and_outputs():
    x, y = _t([1.0, 2.0], True), _t([3.0, -1.0], True)

    def true_fn(d, lst):
        return {"s": d["a"] * lst[0], "t": [d["a"] + 1.0]}

    def false_fn(d, lst):
        return {"s": d["a"] - lst[0], "t": [d["a"] * 2.0]}
    out = jitgrad.cond(jitgrad.tensor(False), true_fn, false_fn, ({"a": x}, [y]))
    assert set(out) == {"s", "t"} and isinstance(out["t"], list)
    np.testing.assert_allclose(out["s"].detach().numpy(), [-2.0, 3.0])
    (out["s"].sum() + out["t"][0].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(y.grad.numpy(), [-1.0, -1.0])


@pytest.mark.parametrize("pred", [True, False])
def test_eager_gradcheck(pred):
    w = _t([0.3, -0.7, 1.1])
    x = _t([0.5, -1.5, 2.0], True)
    p = jitgrad.tensor(pred)
    assert gradcheck(lambda x: jitgrad.cond(p, *_branches(w), (x,)), (x,))
    assert gradgradcheck(lambda x: jitgrad.cond(p, *_branches(w), (x,)), (x,))


def test_eager_errors_match_torch():
    torch = pytest.importorskip("torch")
    x, xt = _t([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64)

    def both(fn_j, fn_t):
        with pytest.raises(Exception) as ej:
            fn_j()
        with pytest.raises(Exception) as et:
            fn_t()
        assert type(ej.value) is RuntimeError
        return str(ej.value), str(et.value)

    j, t = both(lambda: jitgrad.cond(jitgrad.tensor([True, False]), abs, abs, (x,)),
                lambda: torch.cond(torch.tensor([True, False]), abs, abs, (xt,)))
    assert j == t == ("Expected pred to be bool or single-element tensor, but got "
                      "tensor([ True, False]).")
    j, t = both(lambda: jitgrad.cond("a", abs, abs, (x,)),
                lambda: torch.cond("a", abs, abs, (xt,)))
    assert j == t
    j, t = both(lambda: jitgrad.cond(jitgrad.tensor(True), 1, abs, (x,)),
                lambda: torch.cond(torch.tensor(True), 1, abs, (xt,)))
    assert j == t == "Expect both branches to be callable."
    with pytest.raises(RuntimeError, match="Expect operands to be a tuple of possibly nested"):
        jitgrad.cond(jitgrad.tensor(True), abs, abs, (x, 2))
    with pytest.raises(RuntimeError, match="Expect operands to be a tuple"):
        jitgrad.cond(jitgrad.tensor(True), abs, abs, x)


@pytest.mark.parametrize("jitted", [False, True])
def test_mismatched_branches(jitted):
    x = _t([1.0, 2.0])
    wrap = jit(backend="interpreter") if jitted else (lambda f: f)

    @wrap
    def shape(x):
        return jitgrad.cond(x.sum() > 0, lambda x: x.sum(), lambda x: x * 2, (x,))

    @wrap
    def dtype(x):
        return jitgrad.cond(x.sum() > 0, lambda x: x.float(), lambda x: x * 2, (x,))

    @wrap
    def structure(x):
        return jitgrad.cond(x.sum() > 0, lambda x: (x, x * 2), lambda x: x * 3, (x,))

    with pytest.raises(RuntimeError, match="expected same dim but got 0 and 1"):
        shape(x)
    with pytest.raises(RuntimeError, match="expected same dtype but got jitgrad.float32 and "
                                           "jitgrad.float64"):
        dtype(x)
    with pytest.raises(RuntimeError, match=r"Unmatched output spec from torch.cond branches: "
                                           r"true branch tree_spec \(\*, \*\) vs false"):
        structure(x)
    with pytest.raises(RuntimeError, match="Expected pred to be bool or single-element "
                                           "tensor, but got"):
        wrap(lambda x: jitgrad.cond(x > 0, lambda x: x, lambda x: x * 2, (x,)))(x)
    with pytest.raises(RuntimeError, match="expected same shape but got"):
        wrap(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x[:1], lambda x: x[1:] * 2,
                                    (jitgrad.cat([x, x]),)))(x)


def test_eager_while_loop_values_grads_and_torch():
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops import while_loop as torch_while

    x = _t([0.5, -1.0, 2.0], True)
    xt = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    i, y = jitgrad.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y.sin() * 1.5),
                              (jitgrad.tensor(0), x))
    it, yt = torch_while(lambda i, y: i < 3, lambda i, y: (i + 1, y.sin() * 1.5),
                         (torch.tensor(0), xt))
    assert i.item() == it.item() == 3
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    # a list carry keeps its type; ints are carried as they are eagerly
    out = jitgrad.while_loop(lambda n, d: n < 4, lambda n, d: [n + 2, {"a": d["a"] * 2}],
                             [0, {"a": _t([1.0])}])
    assert out[0] == 4 and out[1]["a"].item() == 4.0


def test_while_loop_errors():
    x = _t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable."):
        jitgrad.while_loop(1, abs, (x,))
    with pytest.raises(RuntimeError, match="carried_inputs must be a tuple or list"):
        jitgrad.while_loop(lambda x: x.sum() < 3, lambda x: x + 1, x)
    with pytest.raises(RuntimeError, match="consists of tensor or int leaves"):
        jitgrad.while_loop(lambda x: True, lambda x: x, ("a",))
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor or a "
                                           "boolean but got"):
        jitgrad.while_loop(lambda x: x < 3, lambda x: (x + 1,), (x,))
    for jitted in (False, True):
        run = jit(jitgrad.while_loop, backend="interpreter") if jitted \
            else jitgrad.while_loop
        with pytest.raises(RuntimeError, match=r"pair\[0\] differ in 'shape: "):
            run(lambda x: x.sum() < 100, lambda x: (x.sum(),), (x,))
        with pytest.raises(RuntimeError, match=r"pair\[0\] differ in 'dtype: "):
            run(lambda x: x.sum() < 100, lambda x: (x.float(),), (x,))
        with pytest.raises(RuntimeError, match="same number of outputs"):
            run(lambda x: x.sum() < 100, lambda x: (x, x), (x,))


# ---------------------------------------------------------------- under jit


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pred", [True, False])
def test_jit_cond_values_grads_and_gradcheck(backend, pred):
    w = _t([0.3, -0.7, 1.1])

    def f(x, p):
        return jitgrad.cond(p > 0, *_branches(w), (x,))
    jf = jit(f, backend=backend)
    p = jitgrad.tensor(1.0 if pred else -1.0)
    x = _t([0.5, -1.5, 2.0], True)
    y, ye = jf(x, p), f(x, p)
    np.testing.assert_allclose(y.detach().numpy(), ye.detach().numpy(), rtol=1e-12)
    g = jitgrad.autograd.grad(y.sum(), x)[0]
    ge = jitgrad.autograd.grad(ye.sum(), x)[0]
    np.testing.assert_allclose(g.numpy(), ge.numpy(), rtol=1e-12)
    assert gradcheck(lambda x: jf(x, p), (x,))
    assert gradgradcheck(lambda x: jf(x, p), (x,))
    # create_graph: a double backward through the jitted function
    g2 = jitgrad.autograd.grad(jf(x, p).sum(), x, create_graph=True)[0]
    gg = jitgrad.autograd.grad((g2 * g2).sum(), x)[0]
    g2e = jitgrad.autograd.grad(f(x, p).sum(), x, create_graph=True)[0]
    gge = jitgrad.autograd.grad((g2e * g2e).sum(), x)[0]
    np.testing.assert_allclose(gg.numpy(), gge.numpy(), rtol=1e-10)
    assert jf.cache_info().entries >= 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_cond_one_trace_serves_both_branches(backend):
    jf = jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, (x,)),
             backend=backend)
    np.testing.assert_allclose(jf(_t([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(jf(_t([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert jf.cache_info().misses == 1


def test_python_if_on_tracer_names_cond_and_while_loop():
    @jit
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(ConcretizationError, match=r"jitgrad\.cond\(pred, true_fn, false_fn"):
        f(_t([1.0]))
    with pytest.raises(ConcretizationError, match=r"jitgrad\.while_loop\(cond_fn, body_fn"):
        f(_t([1.0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_closures_become_operands_and_track_new_values(backend):
    w = _t([1.0, 2.0], True)
    scale = _t(3.0)

    @jit(backend=backend)
    def f(x):
        y = x * 2  # a value of the enclosing trace, read by a branch
        return jitgrad.cond(x.sum() > 0, lambda x: x * w + y, lambda x: x * scale, (x,))
    x = _t([1.0, 1.0], True)
    out = f(x)
    np.testing.assert_allclose(out.detach().numpy(), [3.0, 4.0])
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])  # w + 2
    with jitgrad.no_grad():
        w.mul_(10)
    np.testing.assert_allclose(f(x).detach().numpy(), [12.0, 22.0])
    (graph,) = [e for e in f.lower(x).forward_graph.eqns if e.op.name == "cond"]
    assert len(graph.inputs) == 1 + 1 + 2 + 1  # pred, x, w, y, scale


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_nested_cond_inside_while_loop(backend):
    def body(i, y):
        inner = lambda y: jitgrad.cond(y.sum() < -1, lambda y: y * 0.25,  # noqa: E731
                                       lambda y: y * 2 + 0.1, (y,))
        return i + 1, jitgrad.cond(y.sum() > 1, lambda y: y * 0.5, inner, (y,))

    def f(x, n):
        return jitgrad.while_loop(lambda i, y: i < n, body, (jitgrad.tensor(0), x))
    jf = jit(f, backend=backend)
    x = _t([0.2, -0.3, 0.1])
    for n in (0, 1, 6):
        (i, y), (ie, ye) = jf(x, jitgrad.tensor(n)), f(x, jitgrad.tensor(n))
        assert i.item() == ie.item() == n
        np.testing.assert_allclose(y.numpy(), ye.numpy(), rtol=1e-12)
    assert jf.cache_info().misses == 1
    text = jf.lower(x, jitgrad.tensor(2)).forward_ir
    assert "= while_loop " in text and "def body_fn(" in text and "def cond_fn(" in text
    assert text.count("= cond ") == 2  # the nested cond shows inside the outer branch


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_nested_cond_gradcheck(backend):
    def f(x):
        def outer_true(x):
            return jitgrad.cond(x[0] > 0, lambda x: x.exp(), lambda x: x * x, (x,))
        return jitgrad.cond(x.sum() > 0, outer_true, lambda x: x.tanh(), (x,))
    jf = jit(f, backend=backend)
    for xs in ([1.0, 0.5], [-0.5, 2.0], [-1.0, -2.0]):
        x = _t(xs, True)
        np.testing.assert_allclose(jf(x).detach().numpy(), f(x).detach().numpy())
        assert gradcheck(jf, (x,))
        assert gradgradcheck(jf, (x,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_pytree_operands_and_outputs(backend):
    @jit(backend=backend)
    def f(d, p):
        return jitgrad.cond(p, lambda d: {"u": d["a"] * d["b"][0], "v": (d["a"] + 1,)},
                            lambda d: {"u": d["a"] - d["b"][0], "v": (d["a"] * 3,)}, (d,))
    a, b = _t([1.0, 2.0], True), _t([4.0, 5.0], True)
    out = f({"a": a, "b": [b]}, jitgrad.tensor(True))
    np.testing.assert_allclose(out["u"].detach().numpy(), [4.0, 10.0])
    (out["u"].sum() + out["v"][0].sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [5.0, 6.0])
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 2.0])


def test_jit_residuals_and_lower_printout():
    w = _t([0.3, -0.7, 1.1])
    jf = jit(lambda x, p: jitgrad.cond(p, *_branches(w), (x,)), backend="interpreter")
    x = _t([0.5, -1.5, 2.0], True)
    low = jf.lower(x, jitgrad.tensor(True))
    fwd, bwd = low.forward_ir, low.backward_ir
    # the forward cond returns the residuals its backward saves (zeros from the other branch)
    assert "branches=(false_fn, true_fn)" in fwd
    assert "      def false_fn(" in fwd and "      def true_fn(" in fwd
    assert "= const" in fwd and "saved:" in fwd
    # the backward is a cond of backward branches reading them, with no forward recompute of
    # the exp the true branch saved
    assert "branches=(false_fn_bwd, true_fn_bwd)" in bwd
    true_bwd = bwd[bwd.index("def true_fn_bwd"):]
    assert " exp " not in true_bwd
    (e,) = [q for q in low.forward_graph.eqns if q.op.name == "cond"]
    assert len(e.outputs) > 1  # the value, then residuals
    saved = low.forward_graph.outvars[len(low.forward_graph.outvars)
                                      - low.forward_graph.n_saved:]
    assert set(e.outputs[1:]) <= set(saved)  # every residual it still returns is saved
    # (staged for differentiation, the traced cond held its backward branches: ``bwd``)
    traced = [q for q in low.backward_graph.eqns if q.op.name == "cond"]
    for g in e.params["branches"] + traced[0].params["branches"]:
        g.verify()


def test_verify_checks_subgraphs():
    from jitgrad._ir import IRError

    jf = jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, (x,)),
             backend="interpreter")
    fwd = jf.lower(_t([1.0])).forward_graph
    (e,) = [q for q in fwd.eqns if q.op.name == "cond"]
    branch = e.params["branches"][1]
    branch.outvars = [branch.invars[0], branch.invars[0]]  # a branch with a wrong arity
    with pytest.raises((IRError, RuntimeError)):
        fwd.verify()


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_while_loop_forward_only(backend):
    def f(x, n):
        return jitgrad.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 0.5 + x),
                                  (0, x))
    jf = jit(f, backend=backend)
    x = _t([1.0, 2.0], True)
    with jitgrad.no_grad():
        i, y = jf(x, jitgrad.tensor(3))
    assert i.dtype is jitgrad.int64 and i.item() == 3  # an int carry is an int64 tensor
    np.testing.assert_allclose(y.numpy(), f(x.detach(), jitgrad.tensor(3))[1].numpy())
    i, y = jf(x.detach(), jitgrad.tensor(0))
    np.testing.assert_allclose(y.numpy(), x.detach().numpy())
    with pytest.raises(RuntimeError, match="not reverse-differentiable.*Python `for` loop"):
        jf(x, jitgrad.tensor(3))
    w = _t([1.0], True)  # a closed-over tensor that requires grad counts too
    with pytest.raises(RuntimeError, match="not reverse-differentiable"):
        jit(lambda x: jitgrad.while_loop(lambda y: y.sum() < 9, lambda y: (y * w + 1,),
                                         (x,)))(x.detach())


def test_jit_while_loop_carry_must_be_invariant():
    @jit(backend="interpreter")
    def f(x):
        return jitgrad.while_loop(lambda y: y.sum() < 10, lambda y: (jitgrad.cat([y, y]),),
                                  (x,))
    with pytest.raises(RuntimeError, match=r"pair\[0\] differ in 'shape"):
        f(_t([1.0]))


def test_inplace_write_to_outer_value_in_branch_raises():
    from jitgrad.errors import JitTraceError

    @jit(backend="interpreter")
    def f(x):
        y = x * 1

        def true_fn(x):
            y.add_(1)
            return x
        return jitgrad.cond(x.sum() > 0, true_fn, lambda x: x * 2, (x,))
    with pytest.raises(JitTraceError, match="in-place write, inside a jitgrad.cond branch"):
        f(_t([1.0]))


def test_numba_compiles_each_subgraph_once():
    from jitgrad.backends import numba_cpu

    compiled = []
    original = numba_cpu.compile_subgraph

    def spy(g):
        compiled.append(g.name)
        return original(g)
    numba_cpu.compile_subgraph = spy
    try:
        jf = jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: x.exp() * 2,
                                        lambda x: x.sin() + 1, (x,)), backend="numba")
        for xs in ([1.0, 2.0], [3.0, 1.0], [-1.0, -2.0], [-3.0, 1.0]):
            x = _t(xs)
            np.testing.assert_allclose(jf(x).numpy(), (x.exp() * 2 if sum(xs) > 0
                                                       else x.sin() + 1).numpy())
    finally:
        numba_cpu.compile_subgraph = original
    assert sorted(compiled) == ["false_fn", "true_fn"]
    low = jf.lower(_t([1.0, 2.0]))
    (e,) = [q for q in low.forward_graph.eqns if q.op.name == "cond"]
    assert e.op.kind != "kernel"  # a partition boundary, never inside a kernel


# ---------------------------------------------------------------- vmap


@pytest.mark.parametrize("jitted", [False, True])
def test_vmap_batched_pred_selects_per_sample(jitted):
    x = _t(np.random.default_rng(0).standard_normal((5, 3)))

    def f(r):
        return jitgrad.cond(r.sum() > 0, lambda r: r.sin(), lambda r: r.cos() * 2, (r,))
    vf = vmap(f)
    if jitted:
        vf = jit(vf, backend="interpreter")
    expect = np.stack([f(r).numpy() for r in x])
    np.testing.assert_allclose(vf(x).numpy(), expect, rtol=1e-12)


def test_vmap_unbatched_pred_runs_one_branch():
    calls = []

    def true_fn(r):
        calls.append("t")
        return r.sin()

    def false_fn(r):
        calls.append("f")
        return r.cos()
    x = _t(np.ones((4, 2)))
    out = vmap(lambda r: jitgrad.cond(jitgrad.tensor(True), true_fn, false_fn, (r,)))(x)
    np.testing.assert_allclose(out.numpy(), np.sin(np.ones((4, 2))))
    assert calls == ["t"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_identity_and_constant_branches_never_alias(backend):
    w = _t([5.0, 6.0])

    @jit(backend=backend)
    def f(x, p):
        a = jitgrad.cond(p, lambda x: x, lambda x: x * 2, (x,))
        b = jitgrad.cond(p, lambda x: w, lambda x: jitgrad.zeros(2, dtype=F64) + 1, (x,))
        return a, b
    x = _t([1.0, 2.0])
    a, b = f(x, jitgrad.tensor(True))
    np.testing.assert_allclose(b.numpy(), [5.0, 6.0])
    x.add_(100)
    w.add_(100)
    np.testing.assert_allclose(a.numpy(), [1.0, 2.0])  # a copy, not the input
    np.testing.assert_allclose(b.numpy(), [5.0, 6.0])
    a, b = f(x, jitgrad.tensor(False))
    np.testing.assert_allclose(a.numpy(), [202.0, 204.0])
    np.testing.assert_allclose(b.numpy(), [1.0, 1.0])


def test_jit_python_pred_calls_the_branch_and_captured_pred_is_staged():
    flag = jitgrad.tensor(True)

    @jit(backend="interpreter")
    def f(x, static):
        y = jitgrad.cond(static, lambda x: x + 1, lambda x: x - 1, (x,))
        return jitgrad.cond(flag, lambda y: y * 10, lambda y: y * -10, (y,))
    x = _t([1.0])
    assert f(x, True).item() == 20.0
    flag.fill_(False)  # a captured tensor predicate is read on every call: no retrace
    assert f(x, True).item() == -20.0
    assert f.cache_info().misses == 1
    ops = [e.op.name for e in f.lower(x, True).forward_graph.eqns]
    assert ops.count("cond") == 1  # the Python predicate staged nothing


def test_jit_check_mode_and_custom_function_in_a_branch():
    class Square(jitgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    def f(x):
        return jitgrad.cond(x.sum() > 0, lambda x: Square.apply(x) + 1, lambda x: -x, (x,))
    jf = jit(f, backend="numba", check=True)
    x = _t([1.0, 2.0], True)
    np.testing.assert_allclose(jf(x).detach().numpy(), [2.0, 5.0])
    (g,) = jitgrad.autograd.grad(jf(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_numba_subgraph_kernels_render_and_persist(tmp_path, monkeypatch):
    from jitgrad.backends import kernel_cache

    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))
    kernel_cache.reset()
    try:
        jf = jit(lambda x: jitgrad.cond(x.sum() > 0, lambda x: (x.exp() * 2).tanh(),
                                        lambda x: x.sin() * x + 1, (x,)), backend="numba")
        for xs in ([1.0, 2.0], [-1.0, -2.0]):
            x = _t(xs)
            ref = (x.exp() * 2).tanh() if sum(xs) > 0 else x.sin() * x + 1
            np.testing.assert_allclose(jf(x).numpy(), ref.numpy(), rtol=1e-12)
        text = str(jf.lower(_t([1.0, 2.0])))
        assert "# ---- cond sub-graph true_fn ----" in text
        assert "# ---- cond sub-graph false_fn ----" in text
        assert kernel_cache.info(tmp_path)["entries"] >= 2  # the branches' kernels persisted
    finally:
        kernel_cache.reset()


def test_dce_prunes_unused_cond_outputs_and_operands():
    @jit(backend="interpreter")
    def f(x, y, p):
        a, b = jitgrad.cond(p, lambda x, y: (x * 2, y.exp()), lambda x, y: (x * 3, y), (x, y))
        return a
    x, y = _t([1.0, 2.0]), _t([3.0, 4.0])
    np.testing.assert_allclose(f(x, y, jitgrad.tensor(False)).numpy(), [3.0, 6.0])
    (e,) = [q for q in f.lower(x, y, jitgrad.tensor(True)).forward_graph.eqns
            if q.op.name == "cond"]
    assert len(e.outputs) == 1 and len(e.inputs) == 2  # pred and x: y is read by no branch
    assert all(" exp " not in g.format() for g in e.params["branches"])
