"""The pass pipeline: one named list of stages over typed programs, and the schedule stage."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad import jit
from jitgrad.backends import interpreter
from jitgrad.jit import passes
from jitgrad.jit.passes import PIPELINE, Program, Target
from jitgrad.jit.passes.schedule import peak_bytes, schedule

F64 = jitgrad.float64


def test_the_pipeline_names_every_stage_in_order():
    assert [s.name for s in PIPELINE] == [
        "dce", "cse", "simplify", "dce", "vjp", "partition", "recompute", "backward cse",
        "backward simplify", "backward dce", "index_maps", "fuse", "schedule"]


def _stages_dumped(err: str) -> list[str]:
    return [line[len("--- jitgrad.jit: after "):-len(" ---")] for line in err.splitlines()
            if line.startswith("--- jitgrad.jit: after ")]


@pytest.mark.parametrize("backend,grad,expected", [
    ("numba", True, ["trace", "dce", "cse", "simplify", "dce", "vjp", "partition", "recompute",
                     "backward cse", "backward simplify", "backward dce", "index_maps", "fuse",
                     "schedule"]),
    ("numba", False, ["trace", "dce", "cse", "simplify", "dce", "index_maps", "fuse",
                      "schedule"]),
    ("interpreter", True, ["trace", "dce", "cse", "simplify", "dce", "vjp", "partition",
                           "backward cse", "backward simplify", "backward dce"]),
])
def test_debug_dumps_each_stage_that_applies(monkeypatch, capfd, backend, grad, expected):
    monkeypatch.setenv("JITGRAD_DEBUG", "1")
    x = jitgrad.randn(5, dtype=F64, requires_grad=grad)
    out = jit(lambda x: (x.exp() * 2).sum(), backend=backend)(x)
    err = capfd.readouterr().err
    assert _stages_dumped(err) == expected
    if grad:
        assert "def backward(" in err.split("after vjp ---")[-1] or "def joint(" in err
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()))


def test_programs_are_typed_and_stages_are_pure():
    x = jitgrad.randn(4, dtype=F64)  # (no grad: the lowered forward has no residuals)
    traced = jit(lambda x: (x.sin() * x).sum(), backend="interpreter").lower(x).forward_graph
    target = Target(wrt=(True,), recomputable=None, fusible=None)
    before = traced.format()
    program = passes.run(Program(traced), target)
    assert traced.format() == before  # the input program is not changed
    assert program.joint is None and program.backward is not None
    assert program.tangent_slots == (0,)
    assert program.backward.name == "backward" and program.forward.name == "forward"


def _three_products(x, w):
    a = x @ w
    b = a @ w
    c = b @ w
    return a.sum() + b.sum() + c.sum()


def test_schedule_lowers_the_peak_and_keeps_the_values():
    x = jitgrad.randn(64, 64, dtype=F64)
    w = jitgrad.randn(64, 64, dtype=F64) / 8
    graph = jit(_three_products, backend="interpreter").lower(x, w).forward_graph
    scheduled = schedule(graph)
    assert peak_bytes(scheduled) < peak_bytes(graph)
    assert peak_bytes(scheduled) <= 2 * 64 * 64 * 8 + 64  # two products live at once, not three
    assert sorted(map(id, scheduled.eqns)) == sorted(map(id, graph.eqns))
    scheduled.verify()
    arrays = [x.numpy(), w.numpy()]
    want = interpreter.compile(graph)(arrays)
    got = interpreter.compile(scheduled)(arrays)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


def test_schedule_through_jit_equals_eager():
    x = jitgrad.randn(32, 32, dtype=F64, requires_grad=True)
    w = jitgrad.randn(32, 32, dtype=F64, requires_grad=True)
    got = jit(_three_products, backend="numba")(x, w)
    (gx, gw) = jitgrad.autograd.grad(got, (x, w))
    xe, we = x.detach().requires_grad_(), w.detach().requires_grad_()
    want = _three_products(xe, we)
    ex, ew = jitgrad.autograd.grad(want, (xe, we))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-10)


def test_schedule_keeps_random_draws_in_order():
    def f(x):
        a = jitgrad.rand(50, 50, dtype=F64) @ x
        b = jitgrad.rand(50, 50, dtype=F64) @ x
        return (a * 2).sum() + b.sum()

    x = jitgrad.randn(50, 50, dtype=F64)
    graph = jit(f, backend="interpreter").lower(x).forward_graph
    draws = [e for e in schedule(graph).eqns if e.op.nondeterministic]
    assert draws == [e for e in graph.eqns if e.op.nondeterministic] and len(draws) == 2
    jitgrad.manual_seed(0)
    got = jit(f, backend="numba")(x)
    jitgrad.manual_seed(0)
    want = f(x)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def test_schedule_never_raises_the_peak():
    # a chain: the trace order is already the best one; the pass leaves it as it is
    def f(x):
        for _ in range(4):
            x = (x @ x).tanh()
        return x.sum()

    x = jitgrad.randn(16, 16, dtype=F64)
    graph = jit(f, backend="interpreter").lower(x).forward_graph
    assert peak_bytes(schedule(graph)) <= peak_bytes(graph)
