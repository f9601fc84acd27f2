"""jitgrad.viz.make_dot: the DOT text's structure (nodes, labels, edges) and rendering."""

import re
import shutil
from collections import Counter

import pytest

import jitgrad
from jitgrad import nn, viz
from jitgrad.nn import functional as F

NODE = re.compile(r'^\tn(\d+) \[label="((?:[^"\\]|\\.)*)"(?: fillcolor=(\w+))?\]$')
EDGE = re.compile(r"^\tn(\d+) -> n(\d+)( \[dir=none\])?$")


def parse(dot):
    """{id: (label, colour)} and [(src, dst, dotted)] of make_dot's output."""
    assert dot.startswith("digraph {\n") and dot.endswith("}\n")
    nodes, edges = {}, []
    for line in dot.splitlines()[3:-1]:
        m = NODE.match(line)
        if m:
            assert m.group(1) not in nodes, f"node declared twice: {line}"
            nodes[m.group(1)] = (m.group(2).replace("\\n", "\n"), m.group(3))
            continue
        m = EDGE.match(line)
        assert m, f"unexpected line {line!r}"
        edges.append((m.group(1), m.group(2), bool(m.group(3))))
    for a, b, _ in edges:
        assert a in nodes and b in nodes
    return nodes, edges


def names(nodes, colour=None):
    return Counter(label.split("\n")[0] for label, c in nodes.values() if c == colour)


def mlp_loss():
    jitgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    loss = F.cross_entropy(m(jitgrad.randn(5, 4)), jitgrad.tensor([0, 1, 0, 1, 1]))
    return m, loss


def test_mlp_graph_nodes_edges_and_leaves():
    m, loss = mlp_loss()
    nodes, edges = parse(viz.make_dot(loss, params=dict(m.named_parameters())))
    assert names(nodes) == Counter({"NllLossBackward0": 1, "LogSoftmaxBackward0": 1,
                                    "AddmmBackward0": 2, "TBackward0": 2, "TanhBackward0": 1,
                                    "AccumulateGrad": 4})
    leaves = {label for label, c in nodes.values() if c == "lightblue"}
    assert leaves == {"0.weight\n (3, 4)", "0.bias\n (3)", "2.weight\n (2, 3)", "2.bias\n (2)"}
    out = [k for k, (label, c) in nodes.items() if c == "darkolivegreen1"]
    assert len(out) == 1 and nodes[out[0]][0] == "output\n ()"
    by_label = {v[0].split("\n")[0]: k for k, v in nodes.items()}
    assert (by_label["NllLossBackward0"], out[0], False) in edges
    assert (by_label["LogSoftmaxBackward0"], by_label["NllLossBackward0"], False) in edges
    assert len(edges) == 15  # 10 non-None next_functions + 4 leaves + 1 output
    # Each leaf feeds exactly its AccumulateGrad node, which feeds an Addmm or a T node.
    for k, (_, c) in nodes.items():
        if c == "lightblue":
            (dst,) = [b for a, b, _ in edges if a == k]
            assert nodes[dst][0] == "AccumulateGrad"
            (user,) = [b for a, b, _ in edges if a == dst]
            assert nodes[user][0].split("\n")[0] in ("AddmmBackward0", "TBackward0")


def test_graph_matches_torch_backward_graph():
    torch = pytest.importorskip("torch")
    _, loss = mlp_loss()
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    tloss = torch.nn.functional.cross_entropy(tm(torch.randn(5, 4)),
                                              torch.tensor([0, 1, 0, 1, 1]))
    seen, stack, theirs = set(), [tloss.grad_fn], Counter()
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        theirs[fn.name().replace("torch::autograd::", "")] += 1
        stack.extend(f for f, _ in fn.next_functions if f is not None)
    nodes, _ = parse(viz.make_dot(loss))
    assert names(nodes) == theirs


def test_saved_shapes_attrs_and_show_saved():
    x = jitgrad.randn(2, 3, requires_grad=True)
    w = jitgrad.randn(3, 4, requires_grad=True)
    y = (x.mm(w) * 2).log_softmax(1).sum()
    nodes, _ = parse(viz.make_dot(y))
    labels = {v[0].split("\n")[0]: v[0] for v in nodes.values()}
    assert labels["MmBackward0"] == "MmBackward0\narg0: (2, 3)\narg1: (3, 4)"
    assert labels["LogSoftmaxBackward0"] == "LogSoftmaxBackward0\nresult: (2, 4)"
    assert "dim" not in labels["LogSoftmaxBackward0"]
    nodes, _ = parse(viz.make_dot(y, show_attrs=True))
    labels = {v[0].split("\n")[0]: v[0] for v in nodes.values()}
    assert "\ndim: 1" in labels["LogSoftmaxBackward0"]
    nodes, edges = parse(viz.make_dot(y, show_saved=True))
    saved = sorted(label for label, c in nodes.values() if c == "orange")
    # (``* 2`` saves nothing: like torch's MulBackward0, only what a needed gradient uses)
    assert saved == ["arg0\n(2, 3) jitgrad.float32",
                     "arg1\n(3, 4) jitgrad.float32", "result\n(2, 4) jitgrad.float32"]
    assert sum(dotted for *_, dotted in edges) == 3
    mm = [k for k, v in nodes.items() if v[0] == "MmBackward0"][0]
    assert sum(1 for a, b, d in edges if b == mm and d) == 2


def test_graph_after_backward_and_multiple_outputs():
    x = jitgrad.randn(3, requires_grad=True)
    a, b = x.exp(), x.sin()
    dot = viz.make_dot((a, b), params={"x": x})
    (a.sum() + b.sum()).backward()  # frees saved values; drawing still works
    dot_after = viz.make_dot((a, b), params={"x": x})
    assert "ExpBackward0\\nresult: (3)" in dot and "ExpBackward0\\nresult: (freed)" in dot_after
    for d in (dot, dot_after):
        nodes, edges = parse(d)
        outs = sorted(label for label, c in nodes.values() if c == "darkolivegreen1")
        assert outs == ["output 0\n (3)", "output 1\n (3)"]
        assert names(nodes)["AccumulateGrad"] == 1  # shared leaf drawn once
        assert [label for label, c in nodes.values() if c == "lightblue"] == ["x\n (3)"]
        assert len(edges) == 5  # Exp and Sin to outputs, to AccumulateGrad, leaf to it


def test_leaf_output_and_custom_function():
    x = jitgrad.ones(2, requires_grad=True)
    nodes, edges = parse(viz.make_dot(x))
    assert list(nodes.values()) == [("output\n (2)", "darkolivegreen1")] and edges == []

    class Double(jitgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    nodes, _ = parse(viz.make_dot(Double.apply(x)))
    assert "DoubleBackward" in names(nodes)
    with pytest.raises(TypeError, match="make_dot expects Tensors"):
        viz.make_dot([x, 3])
    with pytest.raises(TypeError, match="params must be a dict"):
        viz.make_dot(x, params={"a": 1})


def test_dotgraph_is_text_and_dot_format_renders_without_graphviz(tmp_path):
    _, loss = mlp_loss()
    g = viz.make_dot(loss)
    assert isinstance(g, str) and g.source == str(g)
    out = g.render(tmp_path / "graph.dot", format="dot")
    assert out.read_text() == str(g)
    with pytest.raises(ValueError, match="unknown format 'bmpx'"):
        g.render(tmp_path / "g.bmpx", format="bmpx")


def test_render_without_dot_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="Graphviz 'dot' program, which was not found"):
        viz.make_dot(mlp_loss()[1]).render(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_render_with_dot(tmp_path, fmt):
    path = viz.render(viz.make_dot(mlp_loss()[1]), tmp_path / f"graph.{fmt}", format=fmt)
    data = path.read_bytes()
    if fmt == "svg":
        assert b"<svg" in data and b"NllLossBackward0" in data
    else:
        assert data.startswith(b"\x89PNG")
