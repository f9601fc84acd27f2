"""``jitgrad.autograd.graph``: Node, GradientEdge, get_gradient_edge, saved-tensor hooks."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd.graph import (GradientEdge, Node, disable_saved_tensors_hooks,
                                    get_gradient_edge, saved_tensors_hooks)


def _leaf(values):
    return jitgrad.tensor(np.array(values, dtype=np.float64), requires_grad=True)


# ---------------------------------------------------------------- GradientEdge


def test_get_gradient_edge():
    x = _leaf([1.0, 2.0])
    e = get_gradient_edge(x)
    assert isinstance(e, GradientEdge) and isinstance(e, tuple)
    assert e.node.name() == "AccumulateGrad" and e.output_nr == 0 and e.ownership_token is None
    assert e.node is get_gradient_edge(x).node  # one accumulator per leaf
    y = x * 3
    ey = get_gradient_edge(y)
    assert ey.node is y.grad_fn and ey.output_nr == 0
    a, b = x.split(1)
    assert get_gradient_edge(b).node is b.grad_fn and get_gradient_edge(b).output_nr == 1
    assert isinstance(y.grad_fn, Node) and isinstance(e.node, Node)
    with pytest.raises(RuntimeError, match="^It is not possible to get the gradient edge for a "
                                           "Tensor that does not require gradients$"):
        get_gradient_edge(jitgrad.tensor([1.0]))


def test_grad_with_edge_inputs():
    x = _leaf([1.0, 2.0])
    y = x * 3
    z = y.exp().sum()
    (gy,) = jitgrad.autograd.grad(z, get_gradient_edge(y))
    np.testing.assert_allclose(gy.numpy(), np.exp([3.0, 6.0]))
    a, b = _leaf([3.0, 4.0]).split(1)
    w = (a * 2 + b * 5).sum()
    gb, ga = jitgrad.autograd.grad(w, [get_gradient_edge(b), get_gradient_edge(a)])
    assert gb.tolist() == [5.0] and ga.tolist() == [2.0]
    # the gradient w.r.t. an edge of a tensor the output does not use
    unused = get_gradient_edge(_leaf([1.0]))
    assert jitgrad.autograd.grad((x * 2).sum(), [unused], allow_unused=True) == (None,)
    with pytest.raises(RuntimeError, match="^materialize_grads cannot be used when the given "
                                           "input is a GradientEdge$"):
        jitgrad.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)


def test_grad_and_backward_with_edge_outputs():
    x = _leaf([1.0, 2.0])
    z = (x * 3).exp().sum()
    (g,) = jitgrad.autograd.grad(get_gradient_edge(z), x, jitgrad.tensor(1.0,
                                                                          dtype=jitgrad.float64))
    np.testing.assert_allclose(g.numpy(), 3 * np.exp([3.0, 6.0]))
    y = x * 3
    jitgrad.autograd.backward(get_gradient_edge((y * y).sum()),
                              jitgrad.tensor(1.0, dtype=jitgrad.float64))
    assert x.grad.tolist() == [18.0, 36.0]
    # an edge in the middle of the graph, with its cotangent
    x.grad = None
    y = x * 3
    out = y.sin()
    jitgrad.autograd.backward([get_gradient_edge(y)], [jitgrad.ones(2, dtype=jitgrad.float64)])
    assert x.grad.tolist() == [3.0, 3.0]
    del out


def test_backward_with_edge_inputs():
    x = _leaf([1.0, 2.0])
    y = x * 3
    jitgrad.autograd.backward((y * y).sum(), inputs=[get_gradient_edge(x)])
    assert x.grad.tolist() == [18.0, 36.0]
    w = _leaf([1.0, 1.0])
    v = w * 2
    (v * v).sum().backward(inputs=[get_gradient_edge(v)])
    assert w.grad is None  # stops at the edge


def test_edges_vs_torch():
    torch = pytest.importorskip("torch")
    from torch.autograd.graph import get_gradient_edge as t_edge

    def run(lib, edge):
        x = lib.tensor([0.5, -1.5, 2.0], dtype=lib.float64, requires_grad=True)
        h = x.tanh() * x
        out = (h * h).sum()
        g1 = lib.autograd.grad(out, [edge(h), x], retain_graph=True)
        g2 = lib.autograd.grad(edge(out), edge(h), lib.tensor(2.0, dtype=lib.float64))
        return [g.detach().numpy() for g in g1 + g2]

    for a, b in zip(run(jitgrad, get_gradient_edge), run(torch, t_edge)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ---------------------------------------------------------------- saved_tensors_hooks


def _packed_shapes(lib, f, shapes, hooks_module):
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    r = np.random.default_rng(0)
    xs = [lib.tensor(r.standard_normal(s), requires_grad=True) for s in shapes]
    with hooks_module.saved_tensors_hooks(pack, lambda t: t):
        f(*xs)
    return sorted(packed)


GRAPHS = [
    ("mul", lambda a, b: a * b, [(3,), (3,)], 2),
    ("exp", lambda a: a.exp(), [(3,)], 1),
    ("sin_cos", lambda a: a.sin().cos(), [(3,)], 2),
    ("add_sum", lambda a, b: (a + b).sum(), [(3,), (3,)], 0),
    ("div", lambda a, b: a / b, [(3,), (3,)], 2),
    ("mm", lambda a, b: a.mm(b), [(2, 3), (3, 4)], 2),
    ("softmax", lambda a: a.softmax(0), [(3,)], 1),
    ("logsumexp", lambda a: a.logsumexp(0), [(3,)], 2),
    ("tanh_relu_sigmoid", lambda a: a.tanh().relu().sigmoid(), [(3,)], 3),
    ("views", lambda a: a.view(3, 1).t()[0, 1:], [(3,)], 0),
    ("mean_var", lambda a: a.mean() + a.var(), [(3,)], 1),
    ("abs_sgn", lambda a: a.abs() + a.sgn(), [(3,)], 3),
]


@pytest.mark.parametrize("f,shapes,n", [g[1:] for g in GRAPHS], ids=[g[0] for g in GRAPHS])
def test_pack_counts(f, shapes, n):
    import jitgrad.autograd.graph as jg_graph

    assert len(_packed_shapes(jitgrad, f, shapes, jg_graph)) == n


@pytest.mark.parametrize("f,shapes,n", [g[1:] for g in GRAPHS], ids=[g[0] for g in GRAPHS])
def test_pack_counts_vs_torch(f, shapes, n):
    torch = pytest.importorskip("torch")
    import jitgrad.autograd.graph as jg_graph

    ours = _packed_shapes(jitgrad, f, shapes, jg_graph)
    theirs = _packed_shapes(torch, f, shapes, torch.autograd.graph)
    assert ours == theirs


def test_pack_unpack_round_trip():
    x = _leaf([1.0, 2.0, 3.0])
    unpacked = []

    def pack(t):
        return t.detach().numpy().copy()  # anything may stand for the value

    def unpack(a):
        unpacked.append(a.shape)
        return jitgrad.tensor(a)

    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward()
    assert len(unpacked) == 2
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_unpack_value_is_used():
    x = _leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: ("packed", t), lambda p: p[1] * 0 + 7):
        y = x.exp()
    assert y.grad_fn._saved_result.tolist() == [7.0, 7.0]
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]  # ExpBackward0 uses its (unpacked) result


def test_hooks_on_saved_output_see_a_detached_tensor():
    x = _leaf([1.0, 2.0])
    seen = []
    with saved_tensors_hooks(lambda t: (seen.append(t), t)[1], lambda t: t):
        y = x.exp()
    assert seen[0].grad_fn is None and not seen[0].requires_grad
    np.testing.assert_array_equal(seen[0].numpy(), y.detach().numpy())


def test_nesting_inner_hooks_win():
    x = _leaf([1.0, 2.0])
    log = []
    with saved_tensors_hooks(lambda t: (log.append("outer"), t)[1], lambda t: t):
        with saved_tensors_hooks(lambda t: (log.append("inner"), t)[1], lambda t: t):
            x * x
        x.sin()
    x.cos()  # no hooks any more
    assert log == ["inner", "inner", "outer"]


def test_hooks_apply_to_custom_functions():
    class Square(jitgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = _leaf([1.0, 3.0])
    packed = []
    with saved_tensors_hooks(lambda t: (packed.append(t), t * 0 + 1)[1], lambda t: t):
        y = Square.apply(x)
    y.sum().backward()
    assert len(packed) == 1
    assert x.grad.tolist() == [2.0, 2.0]  # the unpacked value (ones) is what backward saw


def test_disable_saved_tensors_hooks():
    x = _leaf([1.0, 2.0])
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        (x * x).sum().backward()  # saving without hooks still works
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="^inner$"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again
        with pytest.raises(RuntimeError, match="^off$"):
            with disable_saved_tensors_hooks("off"):
                pass
    assert x.grad.tolist() == [2.0, 4.0]

    @disable_saved_tensors_hooks("decorated")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="^decorated$"):
        f()


def test_version_check_through_hooks():
    x = _leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x * 1
        z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation "
                                           "has been modified by an inplace operation"):
        z.sum().backward()
