"""The backward engine against torch.autograd: ordering, accumulation, retain_graph,
create_graph, inputs=, several roots, autograd.grad's options, and torch's errors."""

import re
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd.graph import get_gradient_edge

torch = pytest.importorskip("torch")


def outcome(fn, lib):
    """(result, (error type, message) or None, [(warning category, message)]) of ``fn(lib)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, err = fn(lib), None
        except Exception as e:  # noqa: BLE001 - compared with torch's below
            result, err = None, (type(e).__name__, str(e))
    msgs = [(w.category.__name__, re.sub(r" \(Triggered internally at .*\)$", "",
                                         str(w.message), flags=re.S)) for w in caught]
    return result, err, msgs


def jg_text(s):
    return re.sub(r"\btorch\b", "jitgrad", s)


def assert_same_error(fn):
    """``fn`` raises in torch, and jitgrad raises the same type with the same message."""
    _, terr, _ = outcome(fn, torch)
    _, jerr, _ = outcome(fn, jitgrad)
    assert terr is not None, "torch did not raise"
    assert jerr == (terr[0], jg_text(terr[1]))


def assert_same_warnings(fn):
    _, terr, twarn = outcome(fn, torch)
    _, jerr, jwarn = outcome(fn, jitgrad)
    assert terr is None and jerr is None
    assert twarn, "torch did not warn"
    assert jwarn == [(c, jg_text(m)) for c, m in twarn]


def arr(t):
    return None if t is None else np.asarray(t.detach().numpy())


def close(a, b, **kw):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_allclose(arr(a), arr(b), rtol=kw.get("rtol", 1e-10),
                               atol=kw.get("atol", 1e-12))


VALUES = {"x": [0.3, -1.2, 2.0], "y": [1.5, 0.7, -0.4]}


def leaves(lib, names="xy", dtype="float64"):
    return [lib.tensor(VALUES[n], dtype=getattr(lib, dtype), requires_grad=True) for n in names]


# ---------------------------------------------------------------- ordering and accumulation


def _diamond(lib):
    x, y = leaves(lib)
    a = x * 2
    b = a.exp()
    c = a * y
    d = (b + c).sin() * a
    shared = d * b
    return (x, y), shared.sum()


def test_diamond_gradients_match_torch():
    (tx, ty), tl = _diamond(torch)
    (jx, jy), jl = _diamond(jitgrad)
    tl.backward()
    jl.backward()
    close(jx.grad, tx.grad)
    close(jy.grad, ty.grad)


def test_nodes_run_after_all_their_consumers_in_torch_order():
    def run(lib):
        (x, y), loss = _diamond(lib)
        order = []
        seen = set()
        stack = [loss.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            node.register_prehook(
                lambda g, n=node: order.append(n.name().replace("torch::autograd::", "")))
            stack.extend(f for f, _ in node.next_functions)
        loss.backward()
        return order

    assert run(jitgrad) == run(torch)


def test_accumulates_into_leaves_over_two_backwards():
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        (x * y).sum().backward()
        first = arr(x.grad).copy()
        (x * y * 3).sum().backward()
        np.testing.assert_allclose(arr(x.grad), first * 4)
    jx, _ = leaves(jitgrad)
    (jx * 2).sum().backward()
    g = jx.grad
    (jx * 2).sum().backward()
    assert jx.grad is g  # accumulated in place, like torch
    np.testing.assert_allclose(arr(g), [4.0, 4.0, 4.0])


def test_grad_is_a_fresh_tensor_not_an_alias_of_the_incoming_gradient():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    g = jitgrad.tensor([1.0, 1.0])
    x.backward(g)
    x.grad.add_(1)
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0])


# ---------------------------------------------------------------- retain_graph


def test_second_backward_without_retain_graph_raises_torchs_error():
    def fn(lib):
        x, y = leaves(lib)
        loss = (x * y).sum()
        loss.backward()
        loss.backward()

    assert_same_error(fn)


def test_second_backward_through_saved_output_raises():
    def fn(lib):
        x, _ = leaves(lib)
        loss = x.exp().sum()
        loss.backward()
        lib.autograd.grad(loss, x)

    assert_same_error(fn)


def test_nodes_that_saved_nothing_run_again_like_torch():
    for lib in (torch, jitgrad):
        x, _ = leaves(lib)
        loss = (x + 1).expand(2, 3).sum() - x.view(3, 1).sum() - x.neg().sum()
        loss.backward()
        loss.backward()
        np.testing.assert_allclose(arr(x.grad), [4.0, 4.0, 4.0])


def test_retain_graph_allows_a_second_backward():
    grads = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        loss = (x * y.tanh()).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        grads.append((x.grad, y.grad))
    close(grads[1][0], grads[0][0])
    close(grads[1][1], grads[0][1])


# ---------------------------------------------------------------- create_graph


def _f(lib, x, y):
    return (x ** 3 * y.sin() + (x * y).exp()).sum()


@pytest.mark.parametrize("order", [2, 3])
def test_higher_derivatives_match_torch(order):
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        out = _f(lib, x, y)
        derivs = []
        for _ in range(order):
            gx, gy = lib.autograd.grad(out, (x, y), create_graph=True)
            derivs.append((gx, gy))
            out = (gx * gy).sum()
        res.append(derivs)
    for (tx, ty), (jx, jy) in zip(*res):
        close(jx, tx, rtol=1e-9)
        close(jy, ty, rtol=1e-9)
        assert jx.requires_grad


@pytest.mark.filterwarnings("ignore:Using backward")
def test_backward_create_graph_gives_grad_with_graph():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        _f(lib, x, y).backward(create_graph=True)
        assert x.grad.requires_grad and x.grad.grad_fn is not None
        gx = x.grad
        x.grad = None
        y.grad = None
        (gx ** 2).sum().backward()
        res.append((x.grad, y.grad))
    close(res[1][0], res[0][0], rtol=1e-9)
    close(res[1][1], res[0][1], rtol=1e-9)


def test_hessian_vector_product_against_finite_differences():
    x = jitgrad.tensor([0.4, -0.9], dtype=jitgrad.float64, requires_grad=True)
    v = np.array([0.3, -0.2])

    def grad_at(p):
        t = jitgrad.tensor(p, dtype=jitgrad.float64, requires_grad=True)
        (g,) = jitgrad.autograd.grad((t.tanh() * t.exp()).sum() * t.prod(), t)
        return g.numpy()

    (g,) = jitgrad.autograd.grad((x.tanh() * x.exp()).sum() * x.prod(), x, create_graph=True)
    (hv,) = jitgrad.autograd.grad(g, x, jitgrad.tensor(v))
    eps = 1e-6
    p = x.detach().numpy()
    fd = (grad_at(p + eps * v) - grad_at(p - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- inputs=


def test_backward_inputs_leaf_only_accumulates_there():
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        (x * y).sum().backward(inputs=[y])
        assert x.grad is None
        np.testing.assert_allclose(arr(y.grad), VALUES["x"])


def test_backward_inputs_non_leaf_fills_its_grad():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        h = x * y
        (h.sin()).sum().backward(inputs=[h, y])
        assert x.grad is None
        res.append((h.grad, y.grad))
    close(res[1][0], res[0][0])
    close(res[1][1], res[0][1])


def test_backward_inputs_single_tensor_and_empty():
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        (x * y).sum().backward(inputs=x)
        assert y.grad is None and x.grad is not None

    def fn(lib):
        x, y = leaves(lib)
        (x * y).sum().backward(inputs=[])

    assert_same_error(fn)


def test_several_roots_with_grad_tensors():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        a = x * y
        b = (x + y).exp()
        lib.autograd.backward([a, b], [lib.ones_like(a) * 2, lib.tensor([1.0, 0.0, -1.0],
                                                                         dtype=lib.float64)])
        res.append((x.grad, y.grad))
    close(res[1][0], res[0][0])
    close(res[1][1], res[0][1])


def test_tensor_backward_with_gradient_argument():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        (x * y).backward(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64))
        res.append(x.grad)
    close(res[1], res[0])


# ---------------------------------------------------------------- autograd.grad options


def test_grad_does_not_touch_dot_grad():
    x, y = leaves(jitgrad)
    gx, gy = jitgrad.autograd.grad((x * y).sum(), [x, y])
    assert x.grad is None and y.grad is None
    np.testing.assert_allclose(gx.numpy(), VALUES["y"])
    np.testing.assert_allclose(gy.numpy(), VALUES["x"])


def test_grad_allow_unused_and_materialize_grads():
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        gx, gy = lib.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
        assert gy is None
        np.testing.assert_allclose(arr(gx), [2.0] * 3)
        gx, gy = lib.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
        np.testing.assert_allclose(arr(gy), [0.0] * 3)

    def unused(lib):
        x, y = leaves(lib)
        lib.autograd.grad((x * 2).sum(), [x, y])

    def contradicting(lib):
        x, y = leaves(lib)
        lib.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True, allow_unused=False)

    assert_same_error(unused)
    assert_same_error(contradicting)


def test_grad_is_grads_batched():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        out = x * y
        (g,) = lib.autograd.grad(out, x, lib.eye(3, dtype=lib.float64) * 2,
                                 is_grads_batched=True)
        res.append(g)
    close(res[1], res[0])
    assert tuple(res[1].shape) == (3, 3)

    def bad(lib):
        x, y = leaves(lib)
        lib.autograd.grad(x * y, x, lib.ones(2, 4, dtype=lib.float64), is_grads_batched=True)

    assert_same_error(bad)


def test_grad_deprecated_only_inputs_warns():
    def fn(lib):
        x, _ = leaves(lib)
        return lib.autograd.grad((x * 2).sum(), x, only_inputs=False)

    assert_same_warnings(fn)


def test_backward_deprecated_grad_variables_warns_and_is_used():
    def fn(lib):
        x, _ = leaves(lib)
        lib.autograd.backward(x * 2, grad_variables=lib.tensor([1.0, 2.0, 3.0],
                                                                dtype=lib.float64))
        return x.grad

    assert_same_warnings(fn)
    np.testing.assert_allclose(arr(outcome(fn, jitgrad)[0]), [2.0, 4.0, 6.0])


def test_grad_inputs_as_dict_like_torch_mapping_rules():
    x, y = leaves(jitgrad)
    out = jitgrad.autograd.grad((x * y).sum(), {"a": x, "b": y})
    assert set(out) == {"a", "b"}
    np.testing.assert_allclose(out["a"].numpy(), VALUES["y"])


def test_gradient_edges_as_inputs_and_outputs():
    res = []
    for lib in (torch, jitgrad):
        x, y = leaves(lib)
        h = x * y
        loss = h.exp().sum()
        (gh,) = lib.autograd.grad(loss, lib.autograd.graph.get_gradient_edge(h),
                                  retain_graph=True)
        (gx,) = lib.autograd.grad(lib.autograd.graph.get_gradient_edge(h), x,
                                  grad_outputs=lib.ones_like(h))
        res.append((gh, gx))
    close(res[1][0], res[0][0])
    close(res[1][1], res[0][1])
    x, _ = leaves(jitgrad)
    edge = get_gradient_edge(x)
    assert edge.node.name() == "AccumulateGrad" and edge.output_nr == 0


# ---------------------------------------------------------------- bad input


def _err_cases():
    def grad_tensors_list(lib):
        x, _ = leaves(lib)
        lib.autograd.backward([(x * 2).sum()], [[1.0]])

    def grad_tensors_float(lib):
        x, _ = leaves(lib)
        lib.autograd.backward((x * 2).sum(), [1.0])

    def no_grad_root(lib):
        lib.tensor([1.0, 2.0]).sum().backward()

    def second_root_no_grad(lib):
        x, _ = leaves(lib)
        lib.autograd.backward([(x * 2).sum(), lib.tensor(1.0)])

    def implicit_non_scalar(lib):
        x, _ = leaves(lib)
        (x * 2).backward()

    def shape_mismatch(lib):
        x, _ = leaves(lib)
        (x * 2).backward(lib.ones(4, dtype=lib.float64))

    def shape_mismatch_grad(lib):
        x, _ = leaves(lib)
        lib.autograd.grad(x * 2, x, lib.ones(2, 2, dtype=lib.float64))

    def complex_grad_for_real_output(lib):
        x, _ = leaves(lib)
        (x * 2).backward(lib.ones(3, dtype=lib.complex128))

    def int_requires_grad_(lib):
        lib.tensor([1, 2]).requires_grad_()

    def int_factory_requires_grad(lib):
        lib.tensor([1, 2], requires_grad=True)

    def int_setter(lib):
        t = lib.tensor([1, 2])
        t.requires_grad = True

    def non_leaf_requires_grad_false(lib):
        x, _ = leaves(lib)
        (x * 2).requires_grad_(False)

    def non_leaf_setter(lib):
        x, _ = leaves(lib)
        (x * 2).requires_grad = False

    def grad_input_no_grad(lib):
        x, _ = leaves(lib)
        lib.autograd.grad((x * 2).sum(), lib.tensor([1.0]))

    def grad_empty_inputs(lib):
        x, _ = leaves(lib)
        lib.autograd.grad((x * 2).sum(), [])

    def grad_of_no_grad_output(lib):
        x, _ = leaves(lib)
        lib.autograd.grad(lib.tensor(1.0), x)

    return [grad_tensors_list, grad_tensors_float, no_grad_root, second_root_no_grad,
            implicit_non_scalar, shape_mismatch, shape_mismatch_grad,
            complex_grad_for_real_output, int_requires_grad_, int_factory_requires_grad,
            int_setter, non_leaf_requires_grad_false, non_leaf_setter, grad_input_no_grad,
            grad_empty_inputs, grad_of_no_grad_output]


@pytest.mark.parametrize("case", _err_cases(), ids=lambda f: f.__name__)
def test_bad_input_raises_torchs_error(case):
    assert_same_error(case)


def test_requires_grad_true_on_non_leaf_is_a_no_op_like_torch():
    for lib in (torch, jitgrad):
        x, _ = leaves(lib)
        h = x * 2
        assert h.requires_grad_(True) is h
        assert h.requires_grad and not h.is_leaf


def test_requires_grad_on_complex_leaf_is_allowed():
    z = jitgrad.tensor([1 + 2j], requires_grad=True)
    assert z.requires_grad and z.is_leaf


def test_backward_create_graph_warns_once_like_torch(monkeypatch):
    import jitgrad.autograd as ag

    monkeypatch.setattr(ag, "_warned_create_graph", False)
    x, _ = leaves(jitgrad)
    with pytest.warns(UserWarning, match="create a reference cycle between the parameter"):
        (x * x).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * x).sum().backward(create_graph=True)
        (x * x).sum().backward(create_graph=True, inputs=[x])
