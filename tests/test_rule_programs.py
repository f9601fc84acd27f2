"""The eager engine's array lane: UniformNode records, traced rule programs, the static
newest-first order, and torch's semantics through all of them (errors, hooks, None grads)."""

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import rule_programs
from jitgrad.autograd.rule_programs import PROGRAMS
from jitgrad.autograd.op_node import UniformNode
from jitgrad import _pycode as pycode
from jitgrad.backends import interpreter
from jitgrad.ops import registry
from jitgrad.ops.registry import POINTWISE, defop

from torch_compare import arr, both, same_error

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
torch_only = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch (the test oracle)")


def _uniform_ops() -> list:
    """Every differentiable pointwise op that takes one or two tensors and no params (not an
    op whose node is torch's ``NotImplemented``: floor_divide's backward raises by design)."""
    found = []
    for op in registry.OPS.values():
        if not (op.by_category and op.differentiable and op.n_outputs == 1) or \
                op.node_name == "NotImplemented":
            continue
        for arity in (1, 2):
            try:
                with jitgrad.no_grad():
                    registry.apply(op, *[jitgrad.ones(2, dtype=jitgrad.float64)] * arity)
            except TypeError:
                continue
            found.append((op.name, arity))
            break
    return found


UNIFORM_OPS = _uniform_ops()


def _run(op, arity: int, mask: int, dtype, seed: int) -> list:
    rng = np.random.default_rng(seed)
    values = [rng.uniform(0.2, 0.9, (3, 4)) for _ in range(arity)]
    if dtype.is_complex:
        values = [v + 1j * rng.uniform(0.1, 0.4, (3, 4)) for v in values]
    xs = [jitgrad.tensor(v, dtype=dtype, requires_grad=bool(mask >> i & 1))
          for i, v in enumerate(values)]
    # an intermediate in front, so the op's inputs are non-leaves with their own nodes
    ins = [x * 1.0 if x.requires_grad else x for x in xs]
    y = registry.apply(op, *ins)
    assert isinstance(y.grad_fn, UniformNode)
    seed_grad = jitgrad.tensor(rng.uniform(-1, 1, (3, 4)), dtype=y.dtype)
    y.backward(seed_grad)
    return [arr(x.grad) if x.requires_grad else None for x in xs]


def test_the_sweep_covers_the_hot_ops():
    names = {name for name, _ in UNIFORM_OPS}
    assert {"mul", "add", "sub", "div", "tanh", "exp", "sigmoid", "sin", "log"} <= names


@pytest.mark.parametrize("dtype", [jitgrad.float64, jitgrad.complex128], ids=str)
@pytest.mark.parametrize("name,arity", UNIFORM_OPS, ids=[n for n, _ in UNIFORM_OPS])
def test_rule_program_equals_the_rule_run_on_tensors(name, arity, dtype):
    op = registry.OPS[name]
    for mask in ((1,) if arity == 1 else (3, 1, 2)):
        PROGRAMS[op].clear()
        try:
            first = _run(op, arity, mask, dtype, seed=mask)  # first sight: rule on tensors
        except (TypeError, RuntimeError, NotImplementedError):
            assert dtype.is_complex  # (an op without complex support)
            return
        second = _run(op, arity, mask, dtype, seed=mask)  # second: the traced program
        program = PROGRAMS[op][(mask, dtype, (3, 4))]
        assert callable(program), f"{name}: no rule program was built"
        for a, b in zip(first, second):
            if a is None:
                assert b is None
            else:
                np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-15, equal_nan=True)


def _warm(fn, times: int = 2) -> None:
    """Runs ``fn(jitgrad)`` so that its ops' rule programs exist before the checked run."""
    for _ in range(times):
        fn(jitgrad)


@torch_only
def test_rule_program_gradients_match_torch_over_repeated_steps():
    def step(lib):
        x = lib.tensor([0.3, -0.2, 0.5, 0.9], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([1.1, 0.7, -0.4, 0.2], dtype=lib.float64, requires_grad=True)
        grads = []
        for _ in range(3):  # the second and third backward run the programs
            x.grad = w.grad = None
            h = x
            for i in range(12):
                h = h * w if i % 3 == 0 else h + w if i % 3 == 1 else lib.tanh(h)
            (lib.sigmoid(h) / (w + 2.0)).sum().backward()
            grads.append((arr(x.grad), arr(w.grad)))
        return grads

    t, j = both(step)
    for (tx, tw), (jx, jw) in zip(t, j):
        np.testing.assert_allclose(jx, tx, rtol=1e-12)
        np.testing.assert_allclose(jw, tw, rtol=1e-12)


@torch_only
def test_modified_saved_input_raises_torchs_error_through_a_program():
    def fn(lib):
        x = lib.ones(5, dtype=lib.float64, requires_grad=True)
        a = x * 2
        b = a * a
        a.add_(1)
        b.sum().backward()

    _warm(lambda lib: (lib.ones(5, dtype=lib.float64, requires_grad=True) * 2).pow(1)
          .mul(lib.ones(5, dtype=lib.float64)).sum().backward())
    for _ in range(2):  # the second time through the program
        try:
            fn(jitgrad)
        except RuntimeError:
            pass
    assert callable(PROGRAMS[registry.OPS["mul"]].get((3, jitgrad.float64, (5,))))
    same_error(fn)


@torch_only
def test_modified_saved_result_raises_torchs_error_through_a_program():
    def fn(lib):
        x = lib.ones(4, dtype=lib.float64, requires_grad=True)
        y = (x * 1.0).exp()
        y.mul_(2)
        y.sum().backward()

    _warm(lambda lib: (lib.ones(4, dtype=lib.float64, requires_grad=True) * 1.0).exp().sum()
          .backward())
    assert callable(PROGRAMS[registry.OPS["exp"]].get((1, jitgrad.float64, (4,))))
    same_error(fn)


@torch_only
def test_second_backward_raises_and_retain_graph_allows_it_through_a_program():
    def twice(lib, retain):
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        y = lib.tanh(x * x)
        y.sum().backward(retain_graph=retain)
        y.sum().backward()
        return x.grad

    for _ in range(2):
        twice(jitgrad, True)
    same_error(lambda lib: twice(lib, False))
    t, j = both(lambda lib: twice(lib, True))
    np.testing.assert_allclose(arr(j), arr(t), rtol=1e-13)


@torch_only
def test_inference_tensor_saved_by_a_uniform_op_raises_torchs_error():
    def fn(lib):
        with lib.inference_mode():
            t = lib.ones(3)
        x = lib.ones(3, requires_grad=True)
        (x * t).sum().backward()

    same_error(fn)


@torch_only
def test_hooks_on_uniform_nodes_and_leaves_run_in_torchs_order():
    def fn(lib):
        calls = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([0.5, -1.0], requires_grad=True)
        x.register_hook(lambda g: calls.append("x"))
        w.register_post_accumulate_grad_hook(lambda p: calls.append(("w.grad", arr(p.grad))))
        h = x * w
        h.register_hook(lambda g: calls.append(("h", arr(g))))
        h.grad_fn.register_prehook(lambda gs: calls.append("mul pre"))
        k = lib.tanh(h) + w
        k.grad_fn.register_hook(lambda gi, go: calls.append("add post"))
        (k * k).sum().backward()
        return calls, arr(x.grad), arr(w.grad)

    t, j = both(fn)
    assert [c if isinstance(c, str) else c[0] for c in j[0]] == \
        [c if isinstance(c, str) else c[0] for c in t[0]]
    for a, b in zip(j[0], t[0]):
        if not isinstance(a, str):
            np.testing.assert_allclose(a[1], b[1], rtol=1e-6)
    np.testing.assert_allclose(j[1], t[1], rtol=1e-6)
    np.testing.assert_allclose(j[2], t[2], rtol=1e-6)


def _drop_branch(lib):
    """A Function whose backward returns None, added to the branch it drops: x.grad is 2."""

    class Drop(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return None

    x = lib.ones(3, requires_grad=True)
    y = x * 2
    (Drop.apply(y) + y).sum().backward()
    return x.grad


def test_a_none_gradient_from_a_function_does_not_stall_the_other_branch():
    np.testing.assert_allclose(arr(_drop_branch(jitgrad)), [2.0, 2.0, 2.0])


@torch_only
def test_a_none_gradient_from_a_function_matches_torch():
    t, j = both(_drop_branch)
    np.testing.assert_allclose(arr(j), arr(t))


UNTRACEABLE = registry.OPS.get("test_untraceable_double") or defop(
    "test_untraceable_double", lambda x: x * 2, kind=POINTWISE, save=(0,), jvp=registry.LINEAR,
    vjp=(lambda g, ans, x: g * float(x.sum().item() * 0.0 + 2.0),), template="2 * {0}")


def test_a_rule_that_reads_values_is_not_traced_and_still_runs():
    PROGRAMS[UNTRACEABLE].clear()
    for _ in range(3):
        x = jitgrad.tensor([1.0, -3.0], dtype=jitgrad.float64, requires_grad=True)
        registry.apply(UNTRACEABLE, x * 1.0).sum().backward()
        np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])
    assert PROGRAMS[UNTRACEABLE][(1, jitgrad.float64, (2,))] is False


def test_program_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(rule_programs, "MAX_PROGRAMS_PER_OP", 3)
    op = registry.OPS["exp"]
    PROGRAMS[op].clear()
    for n in range(1, 8):
        for _ in range(2):
            x = jitgrad.ones(n, dtype=jitgrad.float64, requires_grad=True)
            (x * 1.0).exp().sum().backward()
            np.testing.assert_allclose(arr(x.grad), np.full(n, np.e))
        assert len(PROGRAMS[op]) <= 3


def test_broadcasting_and_scalar_operands_take_the_general_record():
    x = jitgrad.ones(2, 3, requires_grad=True)
    b = jitgrad.ones(3, requires_grad=True)
    assert not isinstance((x + b).grad_fn, UniformNode)
    assert not isinstance((x * 2.0).grad_fn, UniformNode)
    assert isinstance((x * x).grad_fn, UniformNode)


def test_pycode_program_equals_the_interpreter_on_a_jit_graph():
    def f(x, w):
        return (jitgrad.tanh(x @ w) * 2.0 + x.sum(dim=1, keepdim=True)).exp().mean()

    x = jitgrad.randn(4, 3, dtype=jitgrad.float64, requires_grad=True)
    w = jitgrad.randn(3, 3, dtype=jitgrad.float64, requires_grad=True)
    lowered = jitgrad.jit(f).lower(x, w)
    for graph in (lowered.forward_graph, lowered.backward_graph):
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(v.shape).astype(v.dtype.np) for v in graph.invars]
        expected = interpreter.compile(graph)(list(inputs))
        got = pycode.compile_function(graph)(*inputs)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-14)


def test_zero_dim_gradients_summed_in_the_engine_stay_arrays():
    for _ in range(3):  # (the later runs through the rule programs)
        x = jitgrad.tensor(1.5, dtype=jitgrad.float64, requires_grad=True)
        y = x * 1.0
        (y * y + jitgrad.tanh(y) + y).backward()
        assert type(x.grad._data) is np.ndarray and x.grad.shape == ()
        np.testing.assert_allclose(arr(x.grad), 2 * 1.5 + (1 - np.tanh(1.5) ** 2) + 1)
