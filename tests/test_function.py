"""Custom autograd.Function against torch: the ctx API (save_for_backward, saved_tensors,
needs_input_grad, mark_dirty, mark_non_differentiable, set_materialize_grads), the
setup_context style, once_differentiable, double backward, node names and torch's errors."""

import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

from torch_compare import arr, both, same_error  # noqa: E402


def make(lib):
    """The same Functions, defined on ``lib`` (torch or jitgrad)."""
    F = lib.autograd.Function
    from importlib import import_module
    once = import_module(lib.__name__ + ".autograd.function").once_differentiable

    class Square(F):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x * x * k
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

    class Split(F):
        @staticmethod
        def forward(x):
            return x * 2, x.exp()
        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x, output[1])
        @staticmethod
        def backward(ctx, ga, gb):
            x, e = ctx.saved_tensors
            return ga * 2 + gb * e

    class Once(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x
        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    class WrongCount(F):
        @staticmethod
        def forward(ctx, x, y):
            return x * y
        @staticmethod
        def backward(ctx, g):
            return g

    class TooMany(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2
        @staticmethod
        def backward(ctx, g):
            return g, g

    class Dirty(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x
        @staticmethod
        def backward(ctx, g):
            return g * 2

    class ArgMax(F):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 3, idx
        @staticmethod
        def backward(ctx, g, gidx):
            return g * 3

    class NoMaterialize(F):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2
        @staticmethod
        def backward(ctx, ga, gb):
            ctx.seen = (ga is None, gb is None)
            out = ga * 1 if ga is not None else None
            if gb is not None:
                out = gb * 2 if out is None else out + gb * 2
            return out

    class Materialize(F):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2
        @staticmethod
        def backward(ctx, ga, gb):
            return ga + gb * 2

    class Needs(F):
        @staticmethod
        def forward(ctx, x, y):
            ctx.flags = ctx.needs_input_grad
            return x * y
        @staticmethod
        def backward(ctx, g):
            return g, g

    return dict(Square=Square, Split=Split, Once=Once, WrongCount=WrongCount, TooMany=TooMany,
                Dirty=Dirty, ArgMax=ArgMax, NoMaterialize=NoMaterialize, Materialize=Materialize,
                Needs=Needs)


FUNCS = {"torch": None, "jitgrad": None}


def fns(lib):
    if FUNCS[lib.__name__] is None:
        FUNCS[lib.__name__] = make(lib)
    return FUNCS[lib.__name__]



def leaf(lib, values=(1.0, 2.0)):
    return lib.tensor(list(values), dtype=lib.float64, requires_grad=True)




def test_save_for_backward_and_non_tensor_ctx_attributes():
    def fn(lib):
        x = leaf(lib)
        s = fns(lib)["Square"].apply(x, 3.0)
        assert s.grad_fn.name() == "SquareBackward"
        assert len(s.grad_fn.next_functions) == 1
        (saved,) = s.grad_fn.saved_tensors
        assert saved is x
        s.sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))
    np.testing.assert_allclose(arr(j), [6.0, 12.0])


def test_gradient_against_finite_differences():
    x0 = np.array([0.3, -1.1])
    x = jitgrad.tensor(x0, requires_grad=True)
    out = fns(jitgrad)["Split"].apply(x)
    (out[0].sin() * out[1]).sum().backward()

    def f(v):
        return float(np.sum(np.sin(v * 2) * np.exp(v)))

    eps = 1e-6
    fd = [(f(x0 + eps * e) - f(x0 - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7)


def test_setup_context_style_matches_torch():
    def fn(lib):
        x = leaf(lib)
        a, b = fns(lib)["Split"].apply(x)
        assert a.grad_fn is b.grad_fn and a.grad_fn.name() == "SplitBackward"
        assert (a.output_nr, b.output_nr) == (0, 1)
        (a * b).sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))


def test_needs_input_grad():
    def fn(lib):
        x = leaf(lib)
        out = fns(lib)["Needs"].apply(x, lib.ones(2, dtype=lib.float64))
        return out.grad_fn.flags

    assert both(fn) == ((True, False), (True, False))


def test_no_node_when_nothing_requires_grad_or_under_no_grad():
    for lib in (torch, jitgrad):
        out = fns(lib)["Square"].apply(lib.ones(2, dtype=lib.float64), 2.0)
        assert out.grad_fn is None and not out.requires_grad
        with lib.no_grad():
            out = fns(lib)["Square"].apply(leaf(lib), 2.0)
        assert out.grad_fn is None and not out.requires_grad


def test_mark_dirty_on_a_non_leaf():
    def fn(lib):
        x = leaf(lib)
        b = x * 1
        r = fns(lib)["Dirty"].apply(b)
        assert r is b and b._version == 2
        assert r.grad_fn.name() == "DirtyBackward"
        (r * r).sum().backward()
        return x.grad, b.detach()

    (tg, tb), (jg, jb) = both(fn)
    np.testing.assert_allclose(arr(jg), arr(tg))
    np.testing.assert_allclose(arr(jb), arr(tb))


def test_mark_non_differentiable():
    def fn(lib):
        x = leaf(lib, (1.0, 5.0, 2.0))
        out, idx = fns(lib)["ArgMax"].apply(x)
        assert not idx.requires_grad and idx.grad_fn is None
        assert out.grad_fn.name() == "ArgMaxBackward"
        out.sum().backward()
        return x.grad, int(idx)

    (tg, ti), (jg, ji) = both(fn)
    np.testing.assert_allclose(arr(jg), arr(tg))
    assert ji == ti == 1


def test_set_materialize_grads_false_passes_none():
    def fn(lib):
        x = leaf(lib)
        a, _ = fns(lib)["NoMaterialize"].apply(x)
        a.sum().backward()
        return a.grad_fn.seen, x.grad

    (ts, tg), (js, jg) = both(fn)
    assert js == ts == (False, True)
    np.testing.assert_allclose(arr(jg), arr(tg))


def test_materialized_grads_are_zeros_by_default():
    def fn(lib):
        x = leaf(lib)
        a, _ = fns(lib)["Materialize"].apply(x)
        a.sum().backward()
        return x.grad

    t, j = both(fn)
    np.testing.assert_allclose(arr(j), arr(t))


def test_double_backward_through_a_function():
    def fn(lib):
        x = leaf(lib)
        s = fns(lib)["Square"].apply(x, 3.0)
        (g,) = lib.autograd.grad(s.sum(), x, create_graph=True)
        assert g.grad_fn.name() == "MulBackward0"
        g2 = lib.autograd.grad((g * g).sum(), x)[0]
        return g, g2

    (tg, tg2), (jg, jg2) = both(fn)
    np.testing.assert_allclose(arr(jg), arr(tg))
    np.testing.assert_allclose(arr(jg2), arr(tg2))


def test_once_differentiable_first_derivative_and_double_backward_error():
    def fn(lib):
        x = leaf(lib)
        v = leaf(lib, (1.0, 1.0))
        y = fns(lib)["Once"].apply(x)
        (g,) = lib.autograd.grad(y, x, v, create_graph=True)
        assert g.requires_grad
        return g, g.grad_fn.name().replace("torch::autograd::", "")

    (tg, tn), (jg, jn) = both(fn)
    np.testing.assert_allclose(arr(jg), arr(tg))
    assert jn == tn

    def twice(lib):
        x = leaf(lib)
        v = leaf(lib, (1.0, 1.0))
        (g,) = lib.autograd.grad(fns(lib)["Once"].apply(x), x, v, create_graph=True)
        g.sum().backward()

    same_error(twice)


def test_once_differentiable_without_grad_outputs_requiring_grad_is_plain():
    for lib in (torch, jitgrad):
        x = leaf(lib)
        (g,) = lib.autograd.grad(fns(lib)["Once"].apply(x).sum(), x, create_graph=True)
        assert g.grad_fn is None


def _error_cases():
    def too_few(lib):
        x = leaf(lib)
        fns(lib)["WrongCount"].apply(x, x * 1).sum().backward()

    def too_many(lib):
        fns(lib)["TooMany"].apply(leaf(lib)).sum().backward()

    def dirty_leaf(lib):
        fns(lib)["Dirty"].apply(leaf(lib))

    def saved_after_backward(lib):
        s = fns(lib)["Square"].apply(leaf(lib), 3.0)
        s.sum().backward()
        return s.grad_fn.saved_tensors

    def saved_modified_in_place(lib):
        v = leaf(lib) * 1
        s = fns(lib)["Square"].apply(v, 1.0)
        v.add_(1)
        s.sum().backward()

    def no_backward(lib):
        class NoBack(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        NoBack.apply(leaf(lib)).sum().backward()

    return [too_few, too_many, dirty_leaf, saved_after_backward, saved_modified_in_place,
            no_backward]


@pytest.mark.parametrize("case", _error_cases(), ids=lambda f: f.__name__)
def test_function_errors_match_torch(case):
    same_error(case)


def test_instantiating_a_function_warns():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fns(jitgrad)["Square"]()


def test_backward_names_and_repr():
    x = leaf(jitgrad)
    out = fns(jitgrad)["Square"].apply(x, 1.0)
    assert type(out.grad_fn).__name__ == "SquareBackward"
    assert "grad_fn=<SquareBackward>" in repr(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert out.grad_fn.next_functions[0][0] is x._get_accumulator()
