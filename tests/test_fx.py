"""jitgrad.fx: graphs, symbolic tracing, GraphModule code, Interpreter/Transformer, ShapeProp,
replace_pattern; printed output and error texts against torch.fx."""

from __future__ import annotations

import copy
import io
import math
import operator
import pickle

import numpy as np
import pytest

import jitgrad
import jitgrad.fx as fx
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.fx.passes.shape_prop import ShapeProp
from jitgrad.nn.functional import relu as imported_relu  # (a global of this module: patched)


def _np(t):
    return t.detach().numpy()


def _torch():
    """(torch, torch.fx, torch.nn, torch.nn.functional) or a skip."""
    torch = pytest.importorskip("torch")
    import torch.fx as tfx
    import torch.nn.functional as TF

    return torch, tfx, torch.nn, TF


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


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = jitgrad.tanh(h) + h.sigmoid() * 0.5
        return F.log_softmax(self.fc2(h), dim=-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 5 * 5, 2)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.max_pool2d(x, 2)
        x = jitgrad.flatten(x, 1)
        return self.head(x.view(x.shape[0], -1))


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


# ---------------------------------------------------------------- copies


def test_deepcopy_copy_and_pickle():
    m = MLP()
    gm = fx.symbolic_trace(m)
    x = jitgrad.randn(2, 6)
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        np.testing.assert_allclose(_np(other(x)), _np(gm(x)), rtol=1e-6)
        assert other.code == gm.code
        assert other.fc1.weight is not gm.fc1.weight
        assert type(other) is not type(gm) and type(other).__name__ == "MLP"
    buf = io.BytesIO()
    jitgrad.save(gm, buf)
    buf.seek(0)
    loaded = jitgrad.load(buf, weights_only=False)
    np.testing.assert_allclose(_np(loaded(x)), _np(gm(x)), rtol=1e-6)
    shallow = copy.copy(gm)
    assert shallow.fc1 is gm.fc1
    # recompiling one GraphModule leaves another's forward alone
    other = copy.deepcopy(gm)
    out_node = next(n for n in other.graph.nodes if n.op == "output")
    out_node.args = (out_node.args[0].args[0],)
    other.graph.eliminate_dead_code()
    other.recompile()
    assert tuple(other(x).shape) == (2, 3) and "log_softmax" not in other.code
    assert "log_softmax" in gm.code


def test_to_folder_writes_an_importable_module(tmp_path, monkeypatch):
    import importlib
    import warnings

    monkeypatch.syspath_prepend(str(tmp_path))
    m = ConvNet().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (Conv2d, BatchNorm2d, Linear: written as reprs)
        fx.symbolic_trace(m).to_folder(tmp_path / "fxconv", "MyNet")
    src = (tmp_path / "fxconv" / "module.py").read_text()
    assert "setattr(self, 'conv', Conv2d(2, 4, kernel_size=(3, 3)" in src
    net = importlib.import_module("fxconv").MyNet().eval()
    x = jitgrad.randn(2, 2, 10, 10)
    np.testing.assert_allclose(_np(net(x)), _np(m(x)), rtol=1e-6)
    seq = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    with pytest.warns(UserWarning, match=r"saved as pickled files instead: \['1'\]"):
        fx.symbolic_trace(seq).to_folder(tmp_path / "fxseq", "Seq")
    x = jitgrad.randn(2, 3)
    np.testing.assert_allclose(_np(importlib.import_module("fxseq").Seq()(x)), _np(seq(x)),
                               rtol=1e-6)


# ---------------------------------------------------------------- Interpreter, Transformer


def test_interpreter_subclass_swaps_ops_as_in_the_docs():
    class NegSigmSwap(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is jitgrad.sigmoid:
                return jitgrad.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)

    def fn(x):
        return jitgrad.sigmoid(x).neg()

    gm = fx.symbolic_trace(fn)
    x = jitgrad.randn(3, 4)
    np.testing.assert_allclose(_np(NegSigmSwap(gm).run(x)), _np(jitgrad.neg(x).sigmoid()))
    np.testing.assert_allclose(_np(fx.Interpreter(gm).run(x)), _np(fn(x)))
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        fx.Interpreter(gm).run()
    with pytest.raises(TypeError) as e:
        fx.Interpreter(gm).run("not a tensor")
    assert "\n\nWhile executing %sigmoid : [num_users=1] = call_function[target=jitgrad.sigmoid]" \
        "(args = (%x,), kwargs = {})\nOriginal traceback:\nNone" in str(e.value)


def test_interpreter_runs_modules_and_defaults():
    m = ConvNet().eval()
    gm = fx.symbolic_trace(m)
    x = jitgrad.randn(2, 2, 10, 10)
    np.testing.assert_allclose(_np(fx.Interpreter(gm).run(x)), _np(m(x)), rtol=1e-6)
    gd = fx.symbolic_trace(lambda x, k=3: x * k)
    assert fx.Interpreter(gd).run(jitgrad.tensor([2.0])).item() == 6.0


def test_transformer_rewrites_into_a_new_graph_module():
    class ReluToGelu(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == F.relu:  # (== as torch's docs: F.relu stands in for itself here)
                target = F.gelu
            return super().call_function(target, args, kwargs)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return F.relu(self.lin(x)).sum(dim=0)

    m = M()
    gm = fx.symbolic_trace(m)
    new = ReluToGelu(gm).transform()
    x = jitgrad.randn(4, 3)
    np.testing.assert_allclose(_np(new(x)), _np(F.gelu(m.lin(x)).sum(dim=0)), rtol=1e-6)
    assert "jitgrad.nn.functional.gelu" in new.code and "self.lin(x)" in new.code
    assert str(fx.Transformer(gm).transform().graph) == str(gm.graph)

    class NegSigmSwap(fx.Transformer):  # (the torch.fx docs' example: calls on proxies)
        def call_function(self, target, args, kwargs):
            if target == jitgrad.sigmoid:
                return jitgrad.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)

    swapped = NegSigmSwap(fx.symbolic_trace(lambda x: jitgrad.sigmoid(x).neg())).transform()
    np.testing.assert_allclose(_np(swapped(x)), _np(jitgrad.neg(x).sigmoid()))
    assert "jitgrad.neg(x)" in swapped.code and not hasattr(jitgrad.neg, "__fx_original__")


def test_decomposition_with_proxies_on_a_graph_appending_tracer():
    """The torch.fx docs' Proxy/retracing example: F.relu nodes become (x > 0) * x."""
    from jitgrad.fx.proxy import GraphAppendingTracer

    rules = {F.relu: lambda x: (x > 0) * x}

    def decompose(model):
        graph = fx.Tracer().trace(model)
        new_graph = fx.Graph()
        env = {}
        tracer = GraphAppendingTracer(new_graph)
        for node in graph.nodes:
            if node.op == "call_function" and node.target in rules:
                proxy_args = [fx.Proxy(env[x.name], tracer) if isinstance(x, fx.Node) else x
                              for x in node.args]
                env[node.name] = rules[node.target](*proxy_args).node
            else:
                env[node.name] = new_graph.node_copy(node, lambda x: env[x.name])
        return fx.GraphModule(model, new_graph)

    m = ConvNet().eval()
    dm = decompose(m)
    assert "relu" not in dm.code and "gt = bn > 0" in dm.code
    x = jitgrad.randn(2, 2, 10, 10)
    np.testing.assert_allclose(_np(dm(x)), _np(m(x)), rtol=1e-6)


def test_shape_prop_records_tensor_meta():
    gm = fx.symbolic_trace(ConvNet())
    ShapeProp(gm).propagate(jitgrad.randn(3, 2, 10, 10))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes
              if "tensor_meta" in n.meta}
    assert shapes["conv"] == (3, 4, 10, 10) and shapes["max_pool2d"] == (3, 4, 5, 5)
    assert shapes["head"] == (3, 2)
    meta = next(n for n in gm.graph.nodes if n.name == "head").meta["tensor_meta"]
    assert meta.dtype == jitgrad.float32 and meta.requires_grad
    assert next(n for n in gm.graph.nodes if n.name == "getitem").meta["type"] is int
    assert 'head: "f32[3, 2]" = self.head(' in gm.print_readable(print_output=False)


# ---------------------------------------------------------------- the conv-bn fusion recipe


def _fuse_conv_bn_eval(conv, bn):
    """A conv whose output equals ``bn(conv(x))`` in eval mode (the fx tutorial's recipe)."""
    fused = copy.deepcopy(conv)
    w, b = fused.weight, fused.bias
    if b is None:
        b = jitgrad.zeros_like(bn.running_mean)
    scale = bn.weight * jitgrad.rsqrt(bn.running_var + bn.eps)
    fused.weight = nn.Parameter((w * scale.reshape([-1] + [1] * (w.dim() - 1))).detach())
    fused.bias = nn.Parameter(((b - bn.running_mean) * scale + bn.bias).detach())
    return fused


def _fuse(model):
    model = copy.deepcopy(model).eval()
    gm = fx.symbolic_trace(model)
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(node.args[0], fx.Node) \
                or node.args[0].op != "call_module":
            continue
        if type(modules[node.target]) is nn.BatchNorm2d \
                and type(modules[node.args[0].target]) is nn.Conv2d:
            if len(node.args[0].users) > 1:
                continue
            conv_node = node.args[0]
            fused = _fuse_conv_bn_eval(modules[conv_node.target], modules[node.target])
            *parent, name = conv_node.target.rsplit(".", 1)
            setattr(modules[parent[0] if parent else ""], name, fused)
            node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_conv_bn_fusion_recipe():
    class WrappedBatchNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.mod = nn.BatchNorm2d(2)

        def forward(self, x):
            return self.mod(x)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3)
            self.bn1 = nn.BatchNorm2d(2)
            self.conv2 = nn.Conv2d(2, 2, 1)
            self.nested = nn.Sequential(nn.BatchNorm2d(2), nn.Conv2d(2, 2, 1))
            self.wrapped = WrappedBatchNorm()

        def forward(self, x):
            return self.wrapped(self.nested(self.conv2(self.bn1(self.conv1(x)))))

    jitgrad.manual_seed(0)
    model = M()
    model.train()
    for _ in range(3):  # (non-trivial running statistics)
        model(jitgrad.randn(4, 1, 6, 6) * 3 + 1)
    model.eval()
    fused = _fuse(model)
    bns = [n for n in fused.graph.nodes if n.op == "call_module"
           and isinstance(fused.get_submodule(n.target), nn.BatchNorm2d)]
    # conv1+bn1 and nested.1 (no bn after) ... bn1 is folded; nested.0 follows conv2: folded;
    # the wrapped bn follows nested.1: folded
    assert bns == []
    assert "bn1" not in fused.code and "self.conv1(x)" in fused.code
    inp = jitgrad.randn(5, 1, 6, 6)
    np.testing.assert_allclose(_np(fused(inp)), _np(model(inp)), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- replace_pattern


def _rewrite_cases(lib, fxm):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)

    def pattern(w1, w2):
        return lib.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return lib.stack([w1, w2])

    def chained(a):  # (the second match's input is the first match's result)
        b = a.relu().neg()
        return b.relu().neg() + b

    out = []
    for root, pat, rep in [(M(), pattern, replacement),
                           (chained, lambda x: x.relu().neg(), lambda x: lib.sigmoid(x))]:
        gm = fxm.symbolic_trace(root)
        matches = fxm.replace_pattern(gm, pat, rep)
        gm.graph.lint()
        out.append((gm, [(m.anchor.name, sorted((k.name, v.name) for k, v in
                                                  m.nodes_map.items())) for m in matches]))
    return out


def test_replace_pattern_as_torch():
    torch, tfx, _, _ = _torch()
    for (gm, matches), (tgm, tmatches) in zip(_rewrite_cases(jitgrad, fx),
                                              _rewrite_cases(torch, tfx)):
        assert gm.code == tgm.code.replace("torch.", "jitgrad.")
        assert matches == tmatches
    (gm, _), (chained, _) = _rewrite_cases(jitgrad, fx)
    x, w1, w2 = jitgrad.tensor(1.0), jitgrad.tensor([1.0, 5.0]), jitgrad.tensor([2.0, 3.0])
    assert gm(x, w1, w2).item() == 11.0
    a = jitgrad.tensor([-1.0, 2.0])
    s = a.sigmoid()
    np.testing.assert_allclose(_np(chained(a)), _np(s.sigmoid() + s))
