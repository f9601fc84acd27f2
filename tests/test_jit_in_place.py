"""Kernels that write a program's in-place updates straight into the tensors' buffers
(``backends.in_place``): the values are those of eager mode (and of the same program without
the in-place writes), and every case where a write in place would change a value falls back to
the output-and-copy path."""

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import numba_cpu


def _entry(fn):
    (entry,) = fn._fast.values()
    return entry


def _both(fn, make_inputs, monkeypatch, calls=3):
    """Runs ``fn`` jitted with and without in-place writes, and eagerly, on equal fresh
    inputs ``calls`` times; checks that both jitted runs leave the same inputs and results
    (bit for bit) and that they are close to eager mode's (kernels contract into FMAs).
    Returns the jitted function that writes in place."""
    runs = []
    for mode in ("eager", False, True):
        inputs = make_inputs()
        run = fn
        if mode != "eager":
            monkeypatch.setattr(numba_cpu, "donates_inputs", mode)
            run = jitgrad.jit(fn)
        for _ in range(calls):
            out = run(*inputs)
        runs.append((inputs, out, run))
    (eager_in, eager_out, _), (copy_in, copy_out, _), (in_place_in, in_place_out, compiled) = runs
    for a, b, c in zip(eager_in + (eager_out,), copy_in + (copy_out,),
                       in_place_in + (in_place_out,)):
        b, c = b.detach().numpy(), c.detach().numpy()
        np.testing.assert_array_equal(b, c)
        np.testing.assert_allclose(b, a.detach().numpy(), rtol=1e-5, atol=1e-5)
    return compiled


def _adam_params(make_param):
    jitgrad.manual_seed(0)
    params = [make_param() for _ in range(3)]
    return params, jitgrad.optim.Adam(params, lr=1e-2, weight_decay=0.1)


def _adam_steps(make_param, donate: bool, monkeypatch) -> list:
    monkeypatch.setattr(numba_cpu, "donates_inputs", donate)
    params, opt = _adam_params(make_param)
    step = jitgrad.jit(lambda: opt.step())
    rng = np.random.default_rng(1)
    for _ in range(4):
        for p in params:
            p.grad = jitgrad.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        step()
    state = [opt.state[p][k] for p in params for k in ("exp_avg", "exp_avg_sq")]
    return [p.detach().numpy().copy() for p in params + state], _entry(step)


def test_adam_step_writes_parameters_and_state_in_place(monkeypatch):
    def make():
        return jitgrad.nn.Parameter(jitgrad.randn(64, 48))

    copied, entry_off = _adam_steps(make, False, monkeypatch)
    in_place, entry_on = _adam_steps(make, True, monkeypatch)
    assert entry_off.donated == []
    # each parameter, exp_avg and exp_avg_sq (not the 0-d step counters: size 1 kernels)
    assert len(entry_on.donated) == 9 and len(entry_on.mutations) == 12
    for a, b in zip(copied, in_place):
        np.testing.assert_array_equal(a, b)


def test_parameters_sharing_one_buffer_fall_back_to_a_copy(monkeypatch):
    flat = jitgrad.zeros(3 * 64 * 48)
    views = iter(flat.view(3, 64, 48).unbind(0))

    def make():  # three parameters that are views of one flat buffer
        p = jitgrad.nn.Parameter(next(views).detach())
        p.data.copy_(jitgrad.randn(64, 48))
        return p

    in_place, entry = _adam_steps(make, True, monkeypatch)
    assert len(entry.donated) == 9
    flat2 = jitgrad.zeros(3 * 64 * 48)
    views = iter(flat2.view(3, 64, 48).unbind(0))
    copied, _ = _adam_steps(make, False, monkeypatch)
    for a, b in zip(copied, in_place):
        np.testing.assert_array_equal(a, b)


def test_a_transposed_parameter_falls_back_to_a_copy(monkeypatch):
    def make():
        return jitgrad.nn.Parameter(jitgrad.randn(48, 64).t())

    in_place, entry = _adam_steps(make, True, monkeypatch)
    copied, _ = _adam_steps(make, False, monkeypatch)
    for a, b in zip(copied, in_place):
        np.testing.assert_array_equal(a, b)


def test_old_value_read_after_the_update_by_an_opaque_op(monkeypatch):
    def f(x, w):
        old = x @ w  # computed before the update, from x's old value
        x.mul_(3.0).add_(1.0)
        return old + x @ w  # the product reads the old and the new value

    def make():
        g = np.random.default_rng(2)
        return (jitgrad.tensor(g.standard_normal((32, 32)).astype(np.float32)),
                jitgrad.tensor(g.standard_normal((32, 32)).astype(np.float32)))

    compiled = _both(f, make, monkeypatch)
    assert _entry(compiled).donated == []  # an opaque op reads x: the update is copied


def test_update_read_through_a_transposed_view_is_not_written_in_place(monkeypatch):
    def f(x):
        x.add_(x.t() * 2.0)  # reads x at other indices: out of place, then copied
        return x.sum()

    def make():
        return (jitgrad.tensor(np.arange(64, dtype=np.float32).reshape(8, 8) / 64),)

    compiled = _both(f, make, monkeypatch, calls=2)
    assert _entry(compiled).donated == []


def test_old_value_saved_for_the_backward_survives_the_update(monkeypatch):
    grads = []

    def f(x, w):
        y = (w * x.clone()).sum()  # the backward of w needs x's old value
        x.mul_(2.0)
        return y

    def make():
        g = np.random.default_rng(3)
        w = jitgrad.tensor(g.standard_normal(1000).astype(np.float32), requires_grad=True)
        grads.append(w)
        return jitgrad.tensor(g.standard_normal(1000).astype(np.float32)), w

    compiled = _both(f, make, monkeypatch, calls=1)
    outs = [compiled(*make())]  # one more call of each, then their backward
    monkeypatch.setattr(numba_cpu, "donates_inputs", False)
    outs.append(jitgrad.jit(f)(*make()))
    eager = f(*make())
    for out in outs + [eager]:
        out.backward()
    np.testing.assert_array_equal(grads[-3].grad.numpy(), grads[-2].grad.numpy())
    np.testing.assert_allclose(grads[-3].grad.numpy(), grads[-1].grad.numpy(), rtol=1e-6)


def test_update_with_a_broadcast_operand_and_a_reduction(monkeypatch):
    def f(x, row):
        s = x.sum()  # a full reduction over x in the kernel that updates it
        x.mul_(row).add_(1.0)
        row.add_(x.mean(0))  # row: broadcast in the first kernel, updated after
        return s

    def make():
        g = np.random.default_rng(5)
        return (jitgrad.tensor(g.standard_normal((50, 40)).astype(np.float32)),
                jitgrad.tensor(g.standard_normal(40).astype(np.float32)))

    compiled = _both(f, make, monkeypatch)
    assert _entry(compiled).donated == [(0, 1), (1, 2)]  # both, each by its last reader


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_step_in_place(momentum, monkeypatch):
    def run(donate):
        jitgrad.manual_seed(4)
        params = [jitgrad.nn.Parameter(jitgrad.randn(100, 30)) for _ in range(2)]
        opt = jitgrad.optim.SGD(params, lr=0.1, momentum=momentum)
        monkeypatch.setattr(numba_cpu, "donates_inputs", donate)
        step = jitgrad.jit(lambda: opt.step()) if donate is not None else opt.step
        for _ in range(3):
            for p in params:
                p.grad = jitgrad.randn(100, 30)
            step()
        return [p.detach().numpy() for p in params], step

    (eager, _), (copied, _), (in_place, step) = run(None), run(False), run(True)
    for a, b, c in zip(eager, copied, in_place):
        np.testing.assert_array_equal(b, c)
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    assert len(_entry(step).donated) == (2 if momentum == 0 else 4)


def test_a_kernel_over_too_many_arrays_is_split_into_independent_parts():
    from jitgrad.backends import kernel_split
    from jitgrad.jit.passes.fuse import KERNEL_OP

    def f(*xs):  # ten independent updates of one shape: one kernel after horizontal fusion
        return tuple(x * 2.0 + 1.0 for x in xs)

    xs = [jitgrad.randn(64, 32) for _ in range(10)]
    compiled = jitgrad.jit(f, backend="numba")
    outs = compiled(*xs)
    for x, y in zip(xs, outs):
        np.testing.assert_array_equal(y.numpy(), x.numpy() * np.float32(2) + np.float32(1))
    graph = compiled.lower(*xs).forward_graph
    assert [e.op for e in graph.eqns] == [KERNEL_OP]  # fused as one kernel of 20 arrays
    fused, kernels = numba_cpu.lower(graph)
    assert len(kernels) == 2
    for k in kernels:
        assert len(k.ks.inputs) + len(k.ks.outputs) <= kernel_split.MAX_LOOP_ARRAYS
    # every value is computed once, by the part that holds its chain
    assert [v for e in fused.eqns for v in e.outputs] == graph.eqns[0].outputs
