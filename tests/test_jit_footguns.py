"""A catalogue of tracing footguns: each one is either handled correctly or raises a helpful
error naming the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.jit import ConcretizationError, JitTraceError, jit

# ---------------------------------------------------------------- reading traced values


@pytest.mark.parametrize("what,fn", [
    ("bool()", lambda x: x if x.sum() > 0 else -x),
    ("bool()", lambda x: [x for _ in range(3) if (x > 0).all()]),
    (r"\.item\(\)", lambda x: x * x.sum().item()),
    (r"float\(\)", lambda x: x * float(x.sum())),
    (r"int\(\)", lambda x: x * int(x.sum())),
    (r"\.tolist\(\)", lambda x: x.tolist()),
    (r"\.numpy\(\)", lambda x: x.numpy()),
    ("NumPy array", lambda x: np.asarray(x)),
    ("Python index", lambda x: [1, 2, 3][x.argmax()]),
])
def test_value_dependent_python_raises_naming_the_line(what, fn):
    f = jit(fn)
    with pytest.raises(ConcretizationError, match=what) as info:
        f(jitgrad.randn(3))
    msg = str(info.value)
    assert "test_jit_footguns.py:" in msg  # the user's file and line
    assert "jitgrad.where" in msg and "static" in msg  # suggested fixes
    assert isinstance(info.value, RuntimeError)


def test_branch_on_a_static_argument_is_the_fix():
    @jit
    def f(x, positive: bool):
        return x if positive else -x

    x = jitgrad.randn(3)
    np.testing.assert_allclose(f(x, True).numpy(), x.numpy())
    np.testing.assert_allclose(f(x, False).numpy(), -x.numpy())


def test_where_is_the_fix_for_elementwise_branches():
    x = jitgrad.tensor([-1.0, 2.0], requires_grad=True)
    out = jit(lambda x: jitgrad.where(x > 0, x * x, -x))(x)
    np.testing.assert_allclose(out.detach().numpy(), [1.0, 4.0])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 4.0])


# ---------------------------------------------------------------- in-place mutation


def test_inplace_on_an_input_is_written_back():
    @jit
    def f(acc, x):
        acc.add_(x)
        acc.mul_(2)
        return acc.sum()

    acc, x = jitgrad.zeros(3), jitgrad.ones(3)
    v0 = acc._version
    s = f(acc, x)
    np.testing.assert_allclose(acc.numpy(), [2, 2, 2])
    assert acc._version > v0 and s.item() == 6
    f(acc, x)  # replays the write-back, no retrace
    np.testing.assert_allclose(acc.numpy(), [6, 6, 6])
    assert f.cache_info().misses == 1


def test_inplace_on_a_leaf_that_requires_grad_raises_like_eager():
    w = jitgrad.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        jit(lambda w: w.mul_(2))(w)


def test_inplace_update_under_no_grad_like_an_optimizer_step():
    w = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    w.grad = jitgrad.tensor([0.5, 0.5])

    @jit
    def sgd(w, g, lr):
        with jitgrad.no_grad():
            w.sub_(g * lr)

    sgd(w, w.grad, 0.1)
    np.testing.assert_allclose(w.detach().numpy(), [0.95, 1.95])
    assert w.is_leaf and w.requires_grad


def test_inplace_on_a_non_leaf_input_rebases_its_grad_fn():
    x = jitgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1.0

    @jit
    def f(h):
        h.mul_(h)
        return h.sum()

    f(h).backward()
    assert h.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(h.detach().numpy(), [1, 4, 9])
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])


def test_inplace_on_a_view_of_a_traced_tensor_raises():
    @jit
    def f(x):
        row = x[0]
        row.add_(1)
        return x

    with pytest.raises(JitTraceError, match="in-place op on a view"):
        f(jitgrad.zeros(2, 2))


def test_setitem_on_a_fresh_buffer_does_not_accumulate_across_calls():
    @jit
    def f(x):
        buf = jitgrad.zeros(3)
        buf.add_(x)
        buf[0] = x[1]
        return buf

    x = jitgrad.tensor([1.0, 2.0, 3.0])
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), [2, 2, 3])


# ---------------------------------------------------------------- captured tensors, globals

SCALE = 2.0
W = jitgrad.tensor([1.0, 2.0])
CONFIG = {"shift": 1.0}


def test_captured_tensor_mutated_in_place_between_calls_is_never_stale():
    w = jitgrad.tensor([1.0, 2.0])
    f = jit(lambda x: x * w)
    x = jitgrad.ones(2)
    np.testing.assert_allclose(f(x).numpy(), [1, 2])
    w.mul_(10)
    np.testing.assert_allclose(f(x).numpy(), [10, 20])
    w.data = jitgrad.tensor([3.0, 4.0])
    np.testing.assert_allclose(f(x).numpy(), [3, 4])
    assert f.cache_info().misses == 1  # captured values are inputs: no retrace needed


def test_rebinding_a_captured_global_retraces():
    global W
    f = jit(lambda x: x * W)
    x = jitgrad.ones(2)
    np.testing.assert_allclose(f(x).numpy(), [1, 2])
    old = W
    W = W + 1
    try:
        np.testing.assert_allclose(f(x).numpy(), [2, 3])
        W = jitgrad.tensor([1.0, 2.0, 3.0])  # new shape too
        np.testing.assert_allclose(f(jitgrad.ones(3)).numpy(), [1, 2, 3])
    finally:
        W = old


def test_captured_tensor_changing_shape_retraces():
    w = jitgrad.tensor([1.0, 2.0])
    f = jit(lambda x: (x * w).sum())
    assert f(jitgrad.ones(1)).item() == 3
    w.data = jitgrad.tensor([1.0, 2.0, 3.0])
    assert f(jitgrad.ones(1)).item() == 6


def test_global_python_state_read_at_trace_time_retraces_when_it_changes(capsys, monkeypatch):
    global SCALE
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")
    f = jit(lambda x: x * SCALE + CONFIG["shift"])
    x = jitgrad.ones(2)
    np.testing.assert_allclose(f(x).numpy(), [3, 3])
    SCALE = 5.0
    try:
        np.testing.assert_allclose(f(x).numpy(), [6, 6])
        CONFIG["shift"] = 0.0
        np.testing.assert_allclose(f(x).numpy(), [5, 5])
    finally:
        SCALE = 2.0
        CONFIG["shift"] = 1.0
    err = capsys.readouterr().err
    assert "'SCALE' changed: 2.0 -> 5.0" in err and "'CONFIG" in err


def test_closure_scalar_changes_retrace():
    k = 2

    def f(x):
        return x * k

    jf = jit(f)
    assert jf(jitgrad.ones(1)).item() == 2
    k = 3  # noqa: F841 - read through the closure cell
    assert jf(jitgrad.ones(1)).item() == 3


def test_leaked_tracer_raises():
    leaked = []

    @jit
    def f(x):
        leaked.append(x * 2)
        return x

    f(jitgrad.ones(2))
    with pytest.raises(JitTraceError, match="escaped"):
        leaked[0] + 1
    g = jit(lambda x: x + leaked[0])
    with pytest.raises(JitTraceError, match="escaped"):
        g(jitgrad.ones(2))


def test_backward_inside_jit_raises_and_points_to_func_grad():
    @jit
    def f(x):
        y = (x * x).sum()
        y.backward()
        return y

    with pytest.raises(JitTraceError, match="jitgrad.func.grad"):
        f(jitgrad.ones(2, requires_grad=True))


# ---------------------------------------------------------------- outputs


def test_list_dict_and_nested_outputs_keep_their_structure():
    @jit
    def f(x):
        return {"a": [x, x * 2], "b": (x.sum(), "tag", None)}

    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    out = f(x)
    assert set(out) == {"a", "b"} and isinstance(out["a"], list)
    assert out["b"][1] == "tag" and out["b"][2] is None
    np.testing.assert_allclose(out["a"][1].detach().numpy(), [2, 4])
    (out["a"][1].sum() + out["b"][0]).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3])


def test_returning_an_input_and_a_duplicate():
    x = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    a, b, c = jit(lambda x: (x, x * 3, x * 3))(x)
    (a.sum() + b.sum() + 2 * c.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [10, 10])
    assert a is not x and a.grad_fn is not None


# ---------------------------------------------------------------- randomness


def test_random_numbers_are_drawn_on_every_call_like_eager():
    def dropout(x):
        keep = jitgrad.rand(tuple(x.shape)) > 0.5
        return jitgrad.where(keep, x * 2, 0.0) + jitgrad.randn(tuple(x.shape)) * 0

    f = jit(dropout)
    x = jitgrad.ones(64)
    jitgrad.manual_seed(3)
    eager = [dropout(x).numpy().copy() for _ in range(3)]
    jitgrad.manual_seed(3)
    jitted = [f(x).numpy().copy() for _ in range(3)]
    for a, b in zip(eager, jitted):
        np.testing.assert_array_equal(a, b)  # same generator, same draws
    assert not np.array_equal(jitted[0], jitted[1])
    assert f.cache_info().misses == 1
    ints = jit(lambda x: x + jitgrad.randint(0, 1000, (8,)))
    assert not np.array_equal(ints(jitgrad.zeros(8)).numpy(), ints(jitgrad.zeros(8)).numpy())


def test_random_mask_is_reused_by_create_graph_recomputation():
    x = jitgrad.randn(32, dtype=jitgrad.float64, requires_grad=True)
    f = jit(lambda x: ((jitgrad.rand(32, dtype=jitgrad.float64) > 0.5) * x.pow(3)).sum())
    out = f(x)
    g, = jitgrad.autograd.grad(out, x, create_graph=True)
    mask = g.detach().numpy() != 0
    np.testing.assert_allclose(g.detach().numpy(), mask * 3 * x.detach().numpy() ** 2)
    h, = jitgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), mask * 6 * x.detach().numpy())


def test_static_argnums_makes_a_tensor_argument_concrete():
    calls = []

    @jitgrad.jit(static_argnums=1)
    def f(x, n):
        calls.append(1)
        return x * n if n.item() > 0 else -x

    x = jitgrad.ones(2)
    np.testing.assert_allclose(f(x, jitgrad.tensor(3.0)).numpy(), [3, 3])
    np.testing.assert_allclose(f(x, jitgrad.tensor(3.0)).numpy(), [3, 3])  # equal value: hit
    np.testing.assert_allclose(f(x, jitgrad.tensor(-1.0)).numpy(), [-1, -1])
    assert len(calls) == 2
    n = jitgrad.tensor(5.0)
    np.testing.assert_allclose(f(x, n).numpy(), [5, 5])
    n.fill_(7.0)  # a new value of the same tensor: retraced, never stale
    np.testing.assert_allclose(f(x, n).numpy(), [7, 7])


def test_value_of_a_captured_tensor_read_in_python_is_guarded(capsys, monkeypatch):
    monkeypatch.setenv("JITGRAD_LOG", "recompiles")
    scale = jitgrad.tensor(2.0)
    table = jitgrad.tensor([1.0, 0.0])
    f = jit(lambda x: x * scale.item() + table.tolist()[0])
    x = jitgrad.ones(2)
    np.testing.assert_allclose(f(x).numpy(), [3, 3])
    np.testing.assert_allclose(f(x).numpy(), [3, 3])
    assert f.cache_info().misses == 1
    scale.fill_(5.0)  # the baked-in value changed: retrace instead of a stale result
    np.testing.assert_allclose(f(x).numpy(), [6, 6])
    table[0] = 0.0
    np.testing.assert_allclose(f(x).numpy(), [5, 5])
    assert f.cache_info().misses == 3
    assert "value of a captured tensor read at trace time changed" in capsys.readouterr().err

    def g(x):
        n = jitgrad.tensor(3.0)  # created inside: a constant, no guard needed
        return x * n.item()

    jg = jit(g)
    jg(x)
    jg(x)
    assert jg.cache_info().misses == 1


def test_reading_a_captured_tensor_written_earlier_in_the_trace_raises():
    # (an optimizer step traced by torch.compile: it bumps the step counter in place, then reads
    # it with item(); the traced write has no value until the compiled program runs)
    count = jitgrad.tensor(0.0)
    w = jitgrad.ones(2)

    def step(x):
        count.add_(1)
        return x * w / count.item()

    with pytest.raises(ConcretizationError, match=r"tensor that this trace wrote in place .*"
                                                  r"count\.item\(\)"):
        jit(step)(jitgrad.ones(2))
    assert count.item() == 0.0  # the failed trace wrote nothing
    with pytest.warns(UserWarning, match="cannot be traced"):
        compiled = jitgrad.compile(step)
        out = compiled(jitgrad.ones(2))
    np.testing.assert_allclose(out.numpy(), [1, 1])  # it ran eagerly, once
    np.testing.assert_allclose(compiled(jitgrad.ones(2)).numpy(), [0.5, 0.5])
    assert count.item() == 2.0
    # reading a captured tensor that the trace does not write stays a guarded constant
    np.testing.assert_allclose(jit(lambda x: x * w.tolist()[0])(jitgrad.ones(2)).numpy(), [1, 1])


def test_compiled_adam_step_equals_eager():
    jitgrad.manual_seed(0)
    a, b = jitgrad.nn.Linear(3, 2), jitgrad.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    for m in (a, b):
        m(jitgrad.ones(4, 3)).sum().backward()
    opt_a, opt_b = jitgrad.optim.Adam(a.parameters(), lr=0.1), jitgrad.optim.Adam(b.parameters(),
                                                                                   lr=0.1)
    step = jitgrad.compile(lambda: opt_a.step(), fullgraph=True)  # (compiles: no fallback)
    for _ in range(3):
        step()
        opt_b.step()
    assert step._jitted.cache_info()[:2] == (2, 1)
    for p, q in zip(a.parameters(), b.parameters()):  # (the fused kernels may contract to FMA)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert float(opt_a.state[a.weight]["step"]) == 3.0
