"""jitgrad.fx beyond tracing: GraphModule copies and to_folder, Interpreter/Transformer,
ShapeProp, our own conv-bn folding pass, replace_pattern (against torch.fx)."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
from fx_models import MLP, ConvNet
from fx_models import as_np as _np
from fx_models import torch_fx as _torch

import jitgrad
import jitgrad.fx as fx
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.fx.passes.shape_prop import ShapeProp

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


# ---------------------------------------------------------------- folding batch norms into convs
# (our own pass, written in the way the fx conv-bn fusion tutorial uses the API, not a copy of it)


def _folded_conv(conv, bn):
    """A copy of ``conv`` that computes ``bn(conv(x))`` of an eval-mode ``bn`` on its own."""
    out = copy.deepcopy(conv)
    gain = bn.weight * jitgrad.rsqrt(bn.running_var + bn.eps)  # per output channel
    shift = out.bias if out.bias is not None else jitgrad.zeros_like(bn.running_mean)
    per_channel = [out.weight.shape[0]] + [1] * (out.weight.dim() - 1)
    out.weight = nn.Parameter((out.weight * gain.reshape(per_channel)).detach())
    out.bias = nn.Parameter((bn.bias + gain * (shift - bn.running_mean)).detach())
    return out


def _conv_feeding(node, mods):
    """The conv node whose output only ``node`` (a BatchNorm2d call) reads, else None."""
    if node.op != "call_module" or type(mods[node.target]) is not nn.BatchNorm2d:
        return None
    src = node.args[0]
    if not isinstance(src, fx.Node) or src.op != "call_module":
        return None
    if type(mods[src.target]) is not nn.Conv2d or len(src.users) > 1:
        return None  # (another reader still needs the un-normalised conv output)
    return src


def _fold_batch_norms(model):
    gm = fx.symbolic_trace(copy.deepcopy(model).eval())
    mods = dict(gm.named_modules())
    for bn_node in list(gm.graph.nodes):
        conv_node = _conv_feeding(bn_node, mods)
        if conv_node is None:
            continue
        owner, _, attr = conv_node.target.rpartition(".")
        setattr(mods[owner], attr, _folded_conv(mods[conv_node.target], mods[bn_node.target]))
        bn_node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(bn_node)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_batch_norm_folding_pass():
    class Tail(nn.Module):  # the norm sits one module down: its target is "tail.norm"
        def __init__(self):
            super().__init__()
            self.norm = nn.BatchNorm2d(3)

        def forward(self, h):
            return self.norm(h)

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.entry = nn.Conv2d(2, 3, 3, bias=False)  # folding must create the bias
            self.entry_bn = nn.BatchNorm2d(3)
            self.mix = nn.Conv2d(3, 3, 1)
            self.block = nn.Sequential(nn.BatchNorm2d(3), nn.Conv2d(3, 3, 1))
            self.tail = Tail()  # folds into block.1, a conv inside a Sequential
            self.probe = nn.Conv2d(3, 3, 1)
            self.probe_bn = nn.BatchNorm2d(3)

        def forward(self, img):
            h = self.tail(self.block(self.mix(self.entry_bn(self.entry(img)))))
            side = self.probe(h)
            return self.probe_bn(side) + side  # probe has two readers: probe_bn stays

    jitgrad.manual_seed(3)
    model = Stack().train()
    for _ in range(4):  # running statistics away from (0, 1)
        model(jitgrad.randn(5, 2, 7, 7) * 2 - 0.5)
    model.eval()
    folded = _fold_batch_norms(model)
    left = [n.target for n in folded.graph.nodes if n.op == "call_module"
            and isinstance(folded.get_submodule(n.target), nn.BatchNorm2d)]
    assert left == ["probe_bn"]
    assert "entry_bn" not in folded.code and "self.entry(img)" in folded.code
    assert folded.entry.bias is not None and model.entry.bias is None
    probe = jitgrad.randn(3, 2, 7, 7)
    np.testing.assert_allclose(_np(folded(probe)), _np(model(probe)), rtol=1e-4, atol=1e-5)


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


# ------------------------------------------- proxies made from raw nodes (GraphAppendingTracer)


def _raw_proxy_graph(lib, fx_mod, F_mod):
    """pytorch/examples fx/proxy_based_graph_creation.py, plus nn.functional calls: proxies
    around placeholders, outside any symbolic_trace, record what is called on them."""
    graph = fx_mod.Graph()
    tracer = fx_mod.proxy.GraphAppendingTracer(graph)
    x = fx_mod.Proxy(graph.placeholder("x"), tracer)
    y = fx_mod.Proxy(graph.placeholder("y"), tracer)
    a = lib.cat([x, y])  # (the proxies inside a list)
    b = F_mod.leaky_relu(lib.tanh(a), 0.2, False)
    c = F_mod.softmax(lib.neg(b), dim=1).sum(0)
    graph.output(c.node)
    targets = [(n.op, getattr(n.target, "__name__", n.target)) for n in graph.nodes]
    return targets, fx_mod.GraphModule(lib.nn.Module(), graph)


def test_raw_proxies_record_functions_as_torch_fx():
    torch, tfx, _, TF = _torch()
    ours, gm = _raw_proxy_graph(jitgrad, fx, F)
    theirs, tgm = _raw_proxy_graph(torch, tfx, TF)
    assert ours == theirs
    assert ("call_function", "leaky_relu") in ours and ("call_method", "sum") in ours
    x, y = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(gm(jitgrad.tensor(x), jitgrad.tensor(y)).numpy(),
                               tgm(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-6)


def test_traced_module_called_with_a_proxy_inlines_into_the_graph():
    # (pytorch/examples fx/wrap_output_dynamically.py: a traced activation, called with a
    # proxy of another graph's last node, inserts its nodes there)
    class M(nn.Module):
        def forward(self, x, y):
            return jitgrad.cat([x, y])

    traced = fx.symbolic_trace(M())
    output_node = next(n for n in reversed(traced.graph.nodes) if n.op == "output")
    wrap_node = output_node.all_input_nodes[0]
    act = fx.symbolic_trace(nn.LeakyReLU())
    with traced.graph.inserting_after(wrap_node):
        output_node.args = (act(fx.Proxy(wrap_node)).node,)
    traced.recompile()
    assert "leaky_relu" in traced.code
    x, y = jitgrad.randn(5, 3), jitgrad.randn(5, 3)
    jitgrad.testing.assert_close(traced(x, y), F.leaky_relu(jitgrad.cat([x, y])))
