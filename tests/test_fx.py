"""jitgrad.fx: graphs, symbolic tracing, GraphModule code and graph surgery; printed output and
error texts against torch.fx (tests/test_fx_transforms.py: Interpreter, Transformer, passes)."""

from __future__ import annotations

import copy
import math
import operator

import numpy as np
import pytest
from fx_models import MLP, ConvNet
from fx_models import as_np as _np
from fx_models import torch_fx as _torch

import jitgrad
import jitgrad.fx as fx
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.nn.functional import relu as imported_relu  # (a global of this module: patched)


def _model_source(lib):
    """The same module written against ``lib`` (jitgrad or torch): parameters, buffers,
    a leaf module, method calls, free functions, shape access and a nested output."""
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(4, 3)
            self.param = lib.nn.Parameter(lib.rand(3, 4))
            self.register_buffer("buf", lib.ones(3))

        def forward(self, x, y=2):
            a = self.lin(x + self.param).relu()
            b = lib.sum(a, dim=-1, keepdim=True)
            c = lib.sigmoid(b) * y + self.buf
            d = x.shape[0]
            return {"out": c.clamp(min=0.0, max=1.0), "n": d, "t": (a, [b])}

    return M()


# ---------------------------------------------------------------- printing vs torch


def test_graph_and_code_print_as_torch():
    torch, tfx, _, _ = _torch()
    gm = fx.symbolic_trace(_model_source(jitgrad))
    tgm = tfx.symbolic_trace(_model_source(torch))
    assert str(gm.graph) == str(tgm.graph).replace("torch.", "jitgrad.")
    assert gm.code == tgm.code.replace("torch.", "jitgrad.")
    readable = gm.print_readable(print_output=False)
    treadable = tgm.print_readable(print_output=False)
    assert readable == treadable.replace("torch.", "jitgrad.")
    assert repr(gm) == repr(tgm)
    assert str(gm).startswith(repr(gm) + "\n" + gm.code)
    assert [(n.op, n.name, [u.name for u in n.users]) for n in gm.graph.nodes] == \
        [(n.op, n.name, [u.name for u in n.users]) for n in tgm.graph.nodes]


def test_nested_graph_modules_print_readable_as_torch():
    torch, tfx, _, _ = _torch()

    def build(lib, fxm):
        class N(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = fxm.symbolic_trace(lambda x: x.relu())
                self.lin = lib.nn.Linear(2, 2)

            def forward(self, x):
                return self.inner(self.lin(x))

        class KeepGraphModules(fxm.Tracer):
            def is_leaf_module(self, m, q):
                return isinstance(m, fxm.GraphModule) or super().is_leaf_module(m, q)

        root = N()
        gm = fxm.GraphModule(root, KeepGraphModules().trace(root), "N")
        return gm.print_readable(print_output=False), str(gm)

    assert build(jitgrad, fx) == tuple(s.replace("torch.", "jitgrad.")
                                       for s in build(torch, tfx))


def test_sequential_names_and_copied_submodules_as_torch():
    torch, tfx, _, _ = _torch()

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(),
                                 lib.nn.Sequential(lib.nn.Linear(3, 1)))

    gm, tgm = fx.symbolic_trace(build(jitgrad)), tfx.symbolic_trace(build(torch))
    assert str(gm.graph) == str(tgm.graph)
    assert gm.code == tgm.code
    assert repr(gm) == repr(tgm)  # ((2) is a plain Module holding only what the graph uses)
    assert type(gm).__name__ == "Sequential"


def test_hand_built_graph_prints_as_torch():
    torch, tfx, _, _ = _torch()

    def build(lib, fxm):
        g = fxm.Graph()
        x = g.placeholder("x")
        d = g.placeholder("d", default_value=3)
        y = g.call_function(lib.relu, (x,))
        z = g.call_method("sum", (y,), {"dim": 0})
        w = g.call_function(operator.getitem, (z, slice(None, 2)))
        g.output((w, d))
        return g

    g, tg = build(jitgrad, fx), build(torch, tfx)
    assert str(g) == str(tg).replace("torch.", "jitgrad.")
    assert g.python_code("self").src == tg.python_code("self").src.replace("torch.", "jitgrad.")
    with pytest.raises(RuntimeError) as te:
        tg.erase_node(next(n for n in tg.nodes if n.name == "relu"))
    with pytest.raises(RuntimeError) as e:
        g.erase_node(next(n for n in g.nodes if n.name == "relu"))
    assert str(e.value) == str(te.value)
    assert str(e.value) == "Tried to erase Node relu but it still had 1 users in the graph: " \
        "{sum_1: None}!"


def test_graph_errors_match_torch():
    torch, tfx, _, _ = _torch()

    def errors(lib, fxm):
        g = fxm.Graph()
        x = g.placeholder("x")
        out = []
        for bad in (lambda: g.create_node("bogus", "x"),
                    lambda: g.call_function("notcallable"),
                    lambda: g.call_method(len),
                    lambda: fxm.Graph().erase_node(x),
                    lambda: g.create_node("call_method", "sum", [x])):
            with pytest.raises(Exception) as e:
                bad()
            out.append((type(e.value).__name__, str(e.value)))
        return out

    assert errors(jitgrad, fx) == errors(torch, tfx)


def test_trace_errors_match_torch():
    torch, tfx, _, _ = _torch()

    def control(x):
        if x.sum() > 0:
            return x
        return -x

    tensor_add, getattr_ = jitgrad.Tensor.__dict__["add"], nn.Module.__getattr__
    cases = [control, lambda x: len(x), lambda x: [a for a in x], lambda x: int(x)]
    for fn in cases:
        with pytest.raises(Exception) as e:
            fx.symbolic_trace(fn)
        with pytest.raises(Exception) as te:
            tfx.symbolic_trace(fn)
        assert type(e.value).__name__ == type(te.value).__name__
        assert str(e.value) == str(te.value)
    with pytest.raises(fx.TraceError, match="cannot be used as inputs to control flow"):
        fx.symbolic_trace(control)
    assert issubclass(fx.TraceError, ValueError)
    # a failed trace restores what it patched
    assert not hasattr(jitgrad.sum, "__fx_original__")
    assert not hasattr(F.relu, "__fx_original__")
    assert nn.Module.__call__.__qualname__ == "Module.__call__"
    assert jitgrad.Tensor.__dict__["add"] is tensor_add and nn.Module.__getattr__ is getattr_


def test_print_tabular_needs_tabulate_as_torch():
    g = fx.symbolic_trace(lambda x: x + 1).graph
    try:
        import tabulate  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            g.print_tabular()
    else:
        g.print_tabular()


# ---------------------------------------------------------------- tracing models


@pytest.mark.parametrize("make, shape", [
    (MLP, (5, 6)),
    (ConvNet, (3, 2, 10, 10)),
    (lambda: nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)), (7, 4)),
])
def test_traced_module_matches_outputs_and_gradients(make, shape):
    jitgrad.manual_seed(0)
    m = make()
    gm = fx.symbolic_trace(m)
    x = jitgrad.randn(*shape)
    out, gout = m(x), gm(x)
    np.testing.assert_allclose(_np(gout), _np(out), rtol=1e-6, atol=1e-6)
    # the GraphModule shares the parameters: loss.backward() through it fills their .grad
    loss = (m(x) ** 2).sum()
    grads = jitgrad.autograd.grad(loss, list(m.parameters()))
    m.zero_grad()
    (gm(x) ** 2).sum().backward()
    for p, g in zip(m.parameters(), grads):
        np.testing.assert_allclose(_np(p.grad), _np(g), rtol=1e-5, atol=1e-6)
    assert [k for k, _ in gm.named_parameters()] == [k for k, _ in m.named_parameters()]
    assert list(gm.state_dict()) == list(m.state_dict())


def test_an_error_in_generated_code_shows_the_line(capsys):
    gm = fx.symbolic_trace(lambda x: x.relu().matmul(x) + 1)
    with pytest.raises(Exception) as e:
        gm(jitgrad.ones(2, 3))
    err = capsys.readouterr().err
    assert "Call using an FX-traced Module, line 6 of the traced Module's generated forward" \
        in err
    assert "    matmul = relu.matmul(x)" in err and "~~~ <--- HERE" in err
    assert str(e.value) in err


def test_gradcheck_through_graph_module():
    m = MLP().double()
    gm = fx.symbolic_trace(m)
    x = jitgrad.randn(3, 6, dtype=jitgrad.float64, requires_grad=True)
    assert jitgrad.autograd.gradcheck(gm, (x,))


def test_leaf_modules_and_custom_leaf():
    class Inner(nn.Module):
        def forward(self, x):
            return x * 2

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.inner(x))

    ops = [(n.op, n.target) for n in fx.symbolic_trace(Outer()).graph.nodes]
    assert ops[1] == ("call_function", operator.mul) and ops[2] == ("call_module", "act")

    class KeepInner(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Inner) or super().is_leaf_module(m, qualname)

    graph = KeepInner().trace(Outer())
    assert [(n.op, n.target) for n in graph.nodes][1] == ("call_module", "inner")


def test_free_functions_from_imports_and_tensor_operators():
    const = jitgrad.tensor([1.0, 2.0])

    def f(x):
        return imported_relu(const + x) + jitgrad.cat([x, x]).sum()

    gm = fx.symbolic_trace(f)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert F.relu in targets and jitgrad.cat in targets
    assert any(n.op == "get_attr" and n.target == "_tensor_constant0" for n in gm.graph.nodes)
    x = jitgrad.tensor([-3.0, 1.0])
    np.testing.assert_allclose(_np(gm(x)), _np(f(x)))
    # the patches are gone after tracing
    assert jitgrad.sum.__module__ == "jitgrad.ops.reduce" and not hasattr(jitgrad.cat,
                                                                          "__fx_original__")
    assert imported_relu is F.relu


def test_real_tensor_methods_operators_and_indexing_with_proxies_as_torch():
    torch, tfx, _, _ = _torch()

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("buf", lib.arange(5.0))

            def forward(self, x, i):
                return self.buf.add(x) + self.buf[i] + self.buf * x - 2 ** x

        return M()

    gm, tgm = fx.symbolic_trace(build(jitgrad)), tfx.symbolic_trace(build(torch))
    assert gm.code == tgm.code
    x, i = jitgrad.ones(5), jitgrad.tensor(1)
    np.testing.assert_allclose(_np(gm(x, i)), _np(build(jitgrad)(x, i)))
    assert fx.symbolic_trace(gm).code == gm.code  # (retracing a GraphModule)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                "matmul", "and_", "or_", "xor", "lshift", "rshift", "eq", "ne",
                                "lt", "le", "gt", "ge"])
def test_operators_between_a_tensor_and_a_proxy_record_as_torch(op):
    torch, tfx, _, _ = _torch()
    f = getattr(operator, op)

    def recorded(lib, fxm, reflected):
        t = lib.ones(2)
        g = fxm.symbolic_trace((lambda x: f(x, t)) if reflected else (lambda x: f(t, x))).graph
        n = next(n for n in g.nodes if n.op.startswith("call"))
        return n.op, getattr(n.target, "__name__", n.target), n.name, str(n.args)

    for reflected in (False, True):
        assert recorded(jitgrad, fx, reflected) == recorded(torch, tfx, reflected)


def test_factory_made_functions_and_math_are_named_as_torch():
    torch, tfx, _, _ = _torch()

    def build(lib):
        def f(x):
            return lib.zeros_like(x) + math.sqrt(x.shape[-1]) + lib.remainder(x, 2) \
                + lib.max_pool1d(x, 1)
        return f

    code = fx.symbolic_trace(build(jitgrad)).code
    assert code == tfx.symbolic_trace(build(torch)).code.replace("torch.", "jitgrad.")
    assert "zeros_like = jitgrad.zeros_like(x)" in code and "math_sqrt(getitem)" in code
    assert "jitgrad.max_pool1d(x, 1)" in code and "max_pool1d" not in jitgrad.__dict__


def _my_helper(x):
    return x.sum() if x.dim() > 1 else x


fx.wrap("_my_helper")


def test_a_trace_inside_a_trace():
    def outer(x):
        inner = fx.symbolic_trace(lambda y: jitgrad.relu(y) * 2)
        assert [n.target for n in inner.graph.nodes][1] is jitgrad.relu.__fx_original__
        return jitgrad.sigmoid(x) + 1

    g = fx.symbolic_trace(outer)
    assert [n.target for n in g.graph.nodes if n.op == "call_function"] == \
        [jitgrad.sigmoid, operator.add]
    assert not hasattr(jitgrad.relu, "__fx_original__")


def test_wrap_records_a_call_and_code_rewraps():
    def f(x):
        return _my_helper(x) + 1

    gm = fx.symbolic_trace(f)
    node = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target is _my_helper)
    assert node.meta["is_wrapped"]
    # (as torch: the global is named after the qualified name, ``test_fx__my_helper``)
    assert gm.code.startswith('\njitgrad.fx._symbolic_trace.wrap("')
    assert '__my_helper")\n' in gm.code
    x = jitgrad.ones(2, 2)
    assert gm(x).item() == 5.0
    with pytest.raises(NotImplementedError, match="top level of a module"):
        fx.wrap("len")


def test_concrete_args():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    assert "flag_1" in gm.code
    x = jitgrad.ones(2)
    np.testing.assert_allclose(_np(gm(x, True)), [2.0, 2.0])
    with pytest.raises(AssertionError,
                       match="flag has been specialized to have value True but got another"):
        gm(x, False)
    gm2 = fx.symbolic_trace(lambda x, y: x * y, concrete_args={"y": fx.PH})
    assert [n.target for n in gm2.graph.nodes if n.op == "placeholder"] == ["x", "y_1"]
    assert gm2(x, 3.0).tolist() == [3.0, 3.0]


def test_unpacking_a_proxy_and_varargs():
    def f(x, *rest):
        a, b = x.chunk(2)
        return a * b + rest[0]

    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "*rest"]
    x = jitgrad.arange(4.0)
    np.testing.assert_allclose(_np(gm(x, 1.0)), _np(f(x, 1.0)))


# ---------------------------------------------------------------- graph surgery


def test_replace_add_with_mul_as_in_the_docs():
    class M(nn.Module):
        def forward(self, x, y):
            return x + y, jitgrad.add(x, y), x.add(y)

    gm = fx.symbolic_trace(M())
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (operator.add, jitgrad.add):
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(jitgrad.mul, node.args, node.kwargs)
                node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
        elif node.op == "call_method" and node.target == "add":
            node.target = "mul"
    gm.graph.lint()
    gm.recompile()
    x, y = jitgrad.tensor([2.0]), jitgrad.tensor([3.0])
    assert [t.item() for t in gm(x, y)] == [6.0, 6.0, 6.0]
    assert "jitgrad.mul(x, y)" in gm.code and "x.mul(y)" in gm.code


def test_node_api():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(jitgrad.neg, (x,))
    b = g.call_function(operator.add, (a, x))
    out = g.output(b)
    assert a.all_input_nodes == [x] and list(x.users) == [a, b] and b.all_input_nodes == [a, x]
    assert (a.prev, a.next) == (x, b)
    with g.inserting_before(b):
        c = g.call_function(jitgrad.exp, (x,))
    assert list(g.nodes) == [x, a, c, b, out]
    b.replace_input_with(a, c)
    assert b.args == (c, x) and a.users == {}
    assert g.eliminate_dead_code() and a not in list(g.nodes)
    c.meta["tag"] = 1
    b.append(c)  # (moves c after b: now out of order)
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        g.lint()
    b.prepend(c)
    g.lint()
    g2 = fx.Graph()
    val_map = {}
    ret = g2.graph_copy(g, val_map)
    g2.output(ret)
    assert str(g2) == str(g) and val_map[c].meta == {"tag": 1}
    assert str(copy.deepcopy(g)) == str(g)
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        g2.node_copy(b)
        g2.lint()
    assert len(g.nodes) == 4 and [n.name for n in reversed(g.nodes)][0] == "output"


def test_graph_module_from_dict_and_missing_target():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(operator.mul, (x, w)))
    gm = fx.GraphModule({"sub.w": jitgrad.tensor([3.0])}, g)
    assert gm(jitgrad.tensor([2.0])).item() == 6.0
    assert "sub.w" in dict(gm.named_buffers())
    with pytest.raises(RuntimeError, match="referenced target sub.w but that target"):
        fx.GraphModule({}, g)
