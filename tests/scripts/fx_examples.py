"""Graph surgery with torch.fx, written for these tests in the way the pytorch/examples fx/
scripts commonly write it (modelled on the API usage of those examples, not a copy of them).
Seven small transformations, each recording (generated code, output) in ``fx_results``:

- graph_from_proxies: a Graph built by hand from ``Proxy`` objects over raw placeholder nodes
  (``GraphAppendingTracer``), ops recorded through ``Proxy.__torch_function__``, then wrapped in
  a ``GraphModule``;
- append_activation: a traced activation module called on a ``Proxy`` of a graph's result, so
  its trace is inlined (``inserting_after``, editing the output node's ``args``);
- inline_submodule: a ``call_module`` node replaced by the trace of the submodule (``map_arg``,
  ``inserting_before``, ``replace_all_uses_with``, ``erase_node``);
- invert: a new Graph built by walking a traced function backwards through an inverse table;
- replace_add: every kind of addition (``+``, ``torch.add``, ``Tensor.add``) swapped for
  ``torch.bitwise_and``;
- rewrite_pattern: ``replace_pattern`` with a pattern and replacement function;
- composite_ops: ``torch.fx.wrap``'d low-precision helpers kept as leaf calls, inlined after
  tracing and, by a custom ``Tracer.create_node``, during tracing.
"""
import operator
from enum import Enum

import jitgrad as torch
import jitgrad.fx as fx
from jitgrad.fx import Graph, GraphModule, Node, Proxy, replace_pattern, symbolic_trace
from jitgrad.fx.node import map_arg
from jitgrad.fx.proxy import GraphAppendingTracer

fx_results = {}


def proxies_for(node_or_args, tracer):
    """Every Node inside ``node_or_args`` (nested tuples/dicts too) wrapped in a Proxy that
    records into ``tracer``'s graph."""
    return map_arg(node_or_args, lambda n: Proxy(n, tracer))


def splice(node, fn):
    """Replace ``node`` by the ops ``fn`` performs on its arguments, traced in place."""
    tracer = GraphAppendingTracer(node.graph)
    with node.graph.inserting_before(node):
        result = fn(*proxies_for(node.args, tracer), **proxies_for(node.kwargs, tracer))
    node.replace_all_uses_with(result.node)
    node.graph.erase_node(node)


# ----------------------------------------------------------------------------- graph_from_proxies
def graph_from_proxies():
    g = Graph()
    rec = GraphAppendingTracer(g)  # (one tracer for all proxies: n-ary ops need a shared one)
    left, right = (Proxy(g.placeholder(name), rec) for name in ("x", "y"))
    joined = torch.cat([left, right])
    squashed = torch.tanh(joined)
    g.output(torch.neg(squashed).node)
    gm = GraphModule(torch.nn.Module(), g)
    return gm.code, gm(torch.ones(2, 2), torch.full((1, 2), 2.0))


fx_results["graph_from_proxies"] = graph_from_proxies()


# ----------------------------------------------------------------------------- append_activation
class Act(Enum):
    RELU = "relu"
    LEAKY = "leaky_relu"
    PRELU = "prelu"


ACTIVATIONS = {Act.RELU: torch.nn.ReLU(), Act.LEAKY: torch.nn.LeakyReLU(),
               Act.PRELU: torch.nn.PReLU()}


class Concat(torch.nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b])


def append_activation(gm: GraphModule, which: Act) -> None:
    """Feed the graph's result through the chosen activation (its trace is inlined)."""
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    (result,) = out_node.all_input_nodes
    activation = symbolic_trace(ACTIVATIONS[which])
    with gm.graph.inserting_after(result):
        activated = activation(Proxy(result))  # (a Proxy with the graph's own tracer)
        out_node.args = (activated.node,)
    gm.recompile()


cat_mod = symbolic_trace(Concat())
p, q = torch.randn(5, 3), torch.randn(5, 3)
before = cat_mod(p, q)
append_activation(cat_mod, Act.LEAKY)
after = cat_mod(p, q)
torch.testing.assert_close(after, torch.nn.LeakyReLU()(before))
fx_results["append_activation"] = (cat_mod.code, after)


# ----------------------------------------------------------------------------- inline_submodule
class ShiftedRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(x) + 1.0


shifted = symbolic_trace(ShiftedRelu())  # (self.relu is a call_module node)
for node in list(shifted.graph.nodes):
    if node.op == "call_module" and node.target == "relu":
        splice(node, shifted.relu)
shifted.recompile()
fx_results["inline_submodule"] = (shifted.code, shifted(torch.linspace(-2, 2, 5)))

# ----------------------------------------------------------------------------- invert
INVERSE = {}
for fwd, back in ((torch.sin, torch.arcsin), (torch.cos, torch.arccos),
                  (torch.tan, torch.arctan), (torch.exp, torch.log)):
    INVERSE[fwd], INVERSE[back] = back, fwd


def invert(fn) -> torch.nn.Module:
    """g with fn(g(y)) == y, for fn a chain of one-argument functions in INVERSE: the traced
    graph walked from its output back to its input, each call replaced by its inverse."""
    traced = fx.symbolic_trace(fn)
    g = fx.Graph()
    value_of = {}  # an old node's name -> the new node that computes its input's value
    for node in reversed(traced.graph.nodes):
        if node.op == "output":
            value_of[node.args[0].name] = g.placeholder(node.name)
        elif node.op == "call_function":
            value_of[node.args[0].name] = g.call_function(INVERSE[node.target],
                                                          (value_of[node.name],))
        elif node.op == "placeholder":
            g.output(value_of[node.name])
        else:
            raise RuntimeError(f"cannot invert a {node.op} node")
    g.lint()
    return fx.GraphModule(traced, g)


def exp_tan(v):
    return torch.exp(torch.tan(v))


undo = invert(exp_tan)
print(undo.code)
targets = torch.arange(5) + 1
print(exp_tan(undo(targets)))  # (back to 1..5)
fx_results["invert"] = (undo.code, exp_tan(undo(targets)))


# ----------------------------------------------------------------------------- replace_add
class ThreeAdds(torch.nn.Module):
    def forward(self, x, y):
        return x + y, torch.add(x, y), x.add(y)


ands = symbolic_trace(ThreeAdds())
ADDITIONS = {operator.add, torch.add, "add"}  # (x + y, torch.add, the Tensor.add method name)
for node in list(ands.graph.nodes):
    if node.target in ADDITIONS:
        with ands.graph.inserting_after(node):
            swapped = ands.graph.call_function(torch.bitwise_and, node.args, node.kwargs)
        node.replace_all_uses_with(swapped)
        ands.graph.erase_node(node)
ands.recompile()
fx_results["replace_add"] = (ands.code, ands(torch.tensor([3, 5, 6]), torch.tensor([1, 4, 2])))


# ----------------------------------------------------------------------------- rewrite_pattern
class TwoMaxes(torch.nn.Module):
    def forward(self, x, w1, w2):
        first = torch.cat([torch.neg(w1), w2]).sum()
        second = torch.cat([torch.neg(w1), w2]).sum()
        return x + torch.max(first) + torch.max(second)


def neg_cat_sum(u, v):  # (matched by data flow: the argument names need not match)
    return torch.cat([torch.neg(u), v]).sum()


def stacked(w1, w2):
    return torch.stack([w1, w2])


rewritten = symbolic_trace(TwoMaxes())
replace_pattern(rewritten, neg_cat_sum, stacked)
fx_results["rewrite_pattern"] = (
    rewritten.code, rewritten(torch.ones(2), torch.arange(3.0), torch.full((3,), 5.0)))


# ----------------------------------------------------------------------------- composite_ops
def sigmoid_lowp(x: torch.Tensor):
    return x.float().sigmoid().half()


def add_lowp(a: torch.Tensor, b: torch.Tensor):
    total = a.float() + b.float()
    return total.half()


fx.wrap(sigmoid_lowp)  # (traced as leaf call_function nodes, not traced through)
fx.wrap(add_lowp)


class LowpNet(torch.nn.Module):
    def forward(self, x, y):
        return add_lowp(sigmoid_lowp(x), sigmoid_lowp(y))


lowp = fx.symbolic_trace(LowpNet())
print(lowp.code)
for node in list(lowp.graph.nodes):
    if node.op == "call_function" and node.target is sigmoid_lowp:
        splice(node, node.target)  # (inline the sigmoid helper after tracing)
lowp.recompile()
print(lowp.code)


class InlineWhileTracing(fx.Tracer):
    """Records calls to the functions in ``inline`` as the ops they perform."""
    inline = (add_lowp,)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        if kind != "call_function" or target not in self.inline:
            return super().create_node(kind, target, args, kwargs, name, type_expr)
        rec = GraphAppendingTracer(self.graph)
        return target(*proxies_for(args, rec), **proxies_for(kwargs, rec)).node


net = LowpNet()
inlined = fx.GraphModule(net, InlineWhileTracing().trace(net))
print(inlined.code)
fx_results["composite_ops"] = (lowp.code, inlined.code,
                               inlined(torch.zeros(2), torch.ones(2)).dtype)
