"""Whole programs (``backends/numba_program.py``): a run of consecutive kernels is called as one
``@njit`` function. Its structure, its values and gradients against the interpreter, a second
shape reusing the compiled program, and a second process loading it from the kernel cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jitgrad
from jitgrad.jit import jit

pytest.importorskip("numba")

from jitgrad.backends import numba_cpu, numba_program  # noqa: E402
from jitgrad.jit.passes.fuse import KERNEL_OP  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
D = jitgrad.float64


@pytest.fixture(autouse=True)
def programs_from_the_first_call(monkeypatch):
    monkeypatch.setattr(numba_cpu, "PROGRAM_AFTER_CALLS", 0)


def softmax_mlp(x, w):
    p = x.exp() / x.exp().sum(1, keepdim=True)
    z = (p * 2 - 1).tanh() @ w
    return (z - z.mean()).pow(2).sum()


def _inputs(rows=6):
    g = jitgrad.Generator().manual_seed(rows)
    x = jitgrad.randn(rows, 5, dtype=D, generator=g)
    w = jitgrad.randn(5, 4, dtype=D, generator=g)
    return x, w


def _kernel_names(graph):
    return [e.params["name"] if e.op is KERNEL_OP else e.op.name for e in graph.eqns]


def test_runs_of_kernels_become_one_program_and_a_matmul_splits_them():
    x, w = _inputs()
    low = jit(softmax_mlp, backend="numba").lower(x.requires_grad_(), w.requires_grad_())
    fused, kernels = numba_cpu.lower(low.forward_graph)
    assert [e.op.name for e in fused.eqns] == ["kernel", "kernel", "mm", "kernel", "kernel"]
    grouped, impls = numba_program.group(fused, kernels, numba_cpu._options(False),
                                         numba_cpu._first_call)
    assert _kernel_names(grouped) == ["k0+k1", "mm", "k2+k3"]
    assert set(impls) == {id(e) for e in grouped.eqns if e.op is KERNEL_OP}
    # every value the graph reads after a run is an output of the run, and nothing else is
    first = grouped.eqns[0]
    read_later = {v for e in grouped.eqns[1:] for v in e.in_vars()} | set(grouped.outvars)
    assert first.outputs == first.params["body"].outvars
    assert first.outputs and set(first.outputs) <= read_later
    inner = {v for e in first.params["body"].eqns for v in e.outputs}
    assert read_later & inner == set(first.outputs)


def test_a_value_read_only_inside_the_run_is_not_returned():
    def f(x):
        s = x.exp().sum(1, keepdim=True)  # a reduction, then a kernel that reads it
        return (x / s).tanh().sum()

    x = jitgrad.randn(4, 3, dtype=D)
    fused, kernels = numba_cpu.lower(jit(f, backend="numba").lower(x).forward_graph)
    grouped, _ = numba_program.group(fused, kernels, numba_cpu._options(False),
                                     numba_cpu._first_call)
    assert sum(e.op is KERNEL_OP for e in fused.eqns) >= 2
    assert [e.op for e in grouped.eqns] == [KERNEL_OP]
    assert grouped.eqns[0].outputs == list(grouped.outvars)


@pytest.mark.parametrize("rows", [6, 1, 0])
def test_values_and_gradients_equal_the_interpreter(rows):
    x, w = _inputs(rows)
    outs = {}
    for backend in ("interpreter", "numba"):
        xb, wb = x.clone().requires_grad_(), w.clone().requires_grad_()
        loss = jit(softmax_mlp, backend=backend)(xb, wb)
        loss.backward()
        outs[backend] = (loss.item(), xb.grad.numpy(), wb.grad.numpy())
    ref, got = outs["interpreter"], outs["numba"]
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-10, atol=1e-12)


def test_strided_inputs_feed_a_program():
    x, w = _inputs(8)
    xt = x.t().contiguous().t()  # the same values, column-major
    a = jit(softmax_mlp, backend="numba")(xt, w)
    b = jit(softmax_mlp, backend="interpreter")(x, w)
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)


def test_a_second_shape_reuses_the_compiled_program():
    f = jit(softmax_mlp, backend="numba")
    f(*_inputs(6))
    programs = dict(numba_program._PROGRAMS)
    compiled = {k: len(fn.overloads) for k, fn in programs.items()}
    x, w = _inputs(9)
    np.testing.assert_allclose(f(x, w).item(),
                               jit(softmax_mlp, backend="interpreter")(x, w).item(), rtol=1e-12)
    assert numba_program._PROGRAMS.keys() == programs.keys()
    assert {k: len(fn.overloads) for k, fn in programs.items()} == compiled


def test_the_first_calls_launch_each_kernel_and_later_calls_the_program(monkeypatch):
    monkeypatch.setattr(numba_cpu, "PROGRAM_AFTER_CALLS", 2)

    def g(x, w):  # (ops no other test of this file compiles)
        return (x.sin() / x.cos().sum(1, keepdim=True) + 3).abs().sqrt().sum()

    f = jit(g, backend="numba")
    x, w = _inputs(3)
    ref = jit(g, backend="interpreter")(x, w).item()
    before = set(numba_program._PROGRAMS)
    for _ in range(2):
        np.testing.assert_allclose(f(x, w).item(), ref, rtol=1e-12)
    assert set(numba_program._PROGRAMS) == before  # rendered, never compiled
    np.testing.assert_allclose(f(x, w).item(), ref, rtol=1e-12)
    new = [numba_program._PROGRAMS[k] for k in set(numba_program._PROGRAMS) - before]
    assert new and all(len(p.overloads) == 1 for p in new)


@pytest.mark.parametrize("limit", ["size", "kernels"])
def test_large_graphs_and_kernels_are_launched_one_by_one_for_good(limit, monkeypatch):
    # (above PROGRAM_MAX_MEAN_SIZE elements per kernel, or PROGRAM_MAX_KERNELS kernels, a
    # program saves little and costs seconds of compile at its first call)
    monkeypatch.setattr(numba_cpu, "PROGRAM_AFTER_CALLS", 1)
    if limit == "size":
        monkeypatch.setattr(numba_cpu, "PROGRAM_MAX_MEAN_SIZE", 32)
    made = []
    real_group = numba_program.group
    monkeypatch.setattr(numba_program, "group", lambda *a: made.append(1) or real_group(*a))

    def g(x, w):  # (ops no other test of this file compiles)
        return (x.cos() * 2).sinh().sum() + (x.exp() @ w).atan().sum()

    x, w = _inputs(2)  # (2 x 5 = 10 elements a kernel)
    f = jit(g, backend="numba")
    kernels = len(numba_cpu.lower(f.lower(x, w).forward_graph)[1])
    if limit == "kernels":
        monkeypatch.setattr(numba_cpu, "PROGRAM_MAX_KERNELS", kernels)
    cases = ((2, True), (40, False)) if limit == "size" else ((2, True), (None, False))
    for rows, programs in cases:  # (40 x 5 = 200 elements a kernel)
        if rows is None:
            monkeypatch.setattr(numba_cpu, "PROGRAM_MAX_KERNELS", kernels - 1)
        else:
            x, w = _inputs(rows)
        made.clear()
        f = jit(g, backend="numba")
        ref = jit(g, backend="interpreter")(x, w).item()
        for _ in range(3):
            np.testing.assert_allclose(f(x, w).item(), ref, rtol=1e-12)
        assert bool(made) is programs, (limit, rows)


def test_a_long_chain_is_split_into_programs_of_bounded_length(monkeypatch):
    monkeypatch.setattr(numba_program, "MAX_PROGRAM_KERNELS", 2)

    def chain(x):
        for i in range(60):
            x = x * x * 0.5 if i % 2 == 0 else x.tanh() * 1.01 + 0.1
        return x.sum()

    x = jitgrad.randn(4, dtype=D)
    low = jit(jitgrad.func.value_and_grad(chain), backend="numba").lower(x)
    fused, kernels = numba_cpu.lower(low.forward_graph)
    grouped, _ = numba_program.group(fused, kernels, numba_cpu._options(False),
                                     numba_cpu._first_call)
    per_program = [sum(m.op is KERNEL_OP for m in e.params["body"].eqns)
                   for e in grouped.eqns if e.op is KERNEL_OP and "body" in e.params
                   and any(m.op is KERNEL_OP for m in e.params["body"].eqns)]
    assert len(kernels) > numba_program.MAX_PROGRAM_KERNELS
    assert max(per_program) <= numba_program.MAX_PROGRAM_KERNELS
    value, grad = jit(jitgrad.func.value_and_grad(chain), backend="numba")(x)
    ref_value, ref_grad = jitgrad.func.value_and_grad(chain)(x)
    np.testing.assert_allclose(value.item(), ref_value.item(), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), ref_grad.numpy(), rtol=1e-12)


def test_without_whole_programs_each_kernel_is_launched(monkeypatch):
    monkeypatch.setattr(numba_cpu, "WHOLE_PROGRAMS", False)
    x, w = _inputs(7)
    a = jit(softmax_mlp, backend="numba")(x, w)
    b = jit(softmax_mlp, backend="interpreter")(x, w)
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)


PROGRAM = """
import json, sys
sys.path.insert(0, "tests")
import jitgrad
from jitgrad.backends import kernel_cache, numba_cpu
from test_numba_program import _inputs, softmax_mlp
numba_cpu.PROGRAM_AFTER_CALLS = 0
x, w = (t.requires_grad_() for t in _inputs(5))
loss = jitgrad.jit(softmax_mlp, backend="numba")(x, w)
loss.backward()
print(json.dumps({"loss": loss.item(), "grad": x.grad.tolist(),
                  "loaded": kernel_cache.STATE.loaded, "compiled": kernel_cache.STATE.compiled}))
"""


def test_a_second_process_loads_the_programs_from_the_cache(tmp_path):
    env = dict(os.environ, JITGRAD_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_CACHE_DIR", None)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=str(ROOT),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["loaded"] == 0 and first["compiled"] >= 2
    assert second["compiled"] == 0 and second["loaded"] == first["compiled"]
    assert second["loss"] == first["loss"] and second["grad"] == first["grad"]


def rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def test_movement_ops_between_kernels_run_inside_the_program():
    x = jitgrad.tensor([0.5, 1.5, -0.25], dtype=D)
    low = jit(jitgrad.func.value_and_grad(rosen), backend="numba").lower(x)
    fused, kernels = numba_cpu.lower(low.forward_graph)
    assert {"slice", "slice_backward", "view"} <= {e.op.name for e in fused.eqns}
    grouped, _ = numba_program.group(fused, kernels, numba_cpu._options(False),
                                     numba_cpu._first_call)
    assert [e.op for e in grouped.eqns] == [KERNEL_OP]  # the whole value-and-grad: one call
    value, grad = jit(jitgrad.func.value_and_grad(rosen), backend="numba")(x)
    ref_value, ref_grad = jitgrad.func.value_and_grad(rosen)(x)
    np.testing.assert_allclose(value.item(), ref_value.item(), rtol=1e-14)
    np.testing.assert_allclose(grad.numpy(), ref_grad.numpy(), rtol=1e-14)


def test_a_view_the_graph_returns_or_saves_stays_outside_the_program():
    x = jitgrad.tensor([0.5, 1.5, -0.25, 2.0], dtype=D, requires_grad=True)
    low = jit(rosen, backend="numba").lower(x)
    fused, kernels = numba_cpu.lower(low.forward_graph)
    member = numba_program._members(fused)
    saved = set(fused.outvars[1:])
    for e in fused.eqns:
        if e.op.name == "slice":  # a saved slice is a view of x: its version is checked
            assert member[id(e)] == (not saved.intersection(e.outputs))
    loss = jit(rosen, backend="numba")(x)
    with jitgrad.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def movements(x, w):
    a = x.t().unsqueeze(0).exp()  # permute-like reads of an input, inside the program
    b = (a.squeeze(0).reshape(-1, 2) * 2).tanh()
    c = b.expand(3, *b.shape).sum(0) + x.reshape(-1, 2)[1:].sum()
    d = (c[:, 1:] - c[:, :1]).transpose(0, 1) @ w
    return (d.sin() + d.view(-1)[:1]).sum()


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_every_movement_program_matches_the_interpreter(layout):
    g = jitgrad.Generator().manual_seed(3)
    x = jitgrad.randn(4, 3, dtype=D, generator=g)
    w = jitgrad.randn(6, 2, dtype=D, generator=g)
    if layout == "strided":
        x = jitgrad.randn(3, 4, dtype=D, generator=g).t()
    results = {}
    for backend in ("interpreter", "numba"):
        xb, wb = x.detach().requires_grad_(), w.clone().requires_grad_()
        loss = jit(movements, backend=backend)(xb, wb)
        gx, gw = jitgrad.autograd.grad(loss, [xb, wb])
        results[backend] = (loss.item(), gx.numpy(), gw.numpy())
    for a, b in zip(results["numba"], results["interpreter"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_view_read_by_a_later_run_leaves_the_program_as_a_copy():
    def f(x, w):
        y = x.exp()
        s = y @ w  # an opaque op reads the run: what reads it starts a new run
        u = y.t()
        return (u * s.sum()).sum() + u.sum()

    x, w = _inputs(4)
    w = jitgrad.randn(5, 5, dtype=D)
    xi, xn = x.clone().requires_grad_(), x.clone().requires_grad_()
    a = jit(f, backend="interpreter")(xi, w)
    b = jit(f, backend="numba")(xn, w)
    a.backward()
    b.backward()
    np.testing.assert_allclose(b.item(), a.item(), rtol=1e-12)
    np.testing.assert_allclose(xn.grad.numpy(), xi.grad.numpy(), rtol=1e-12)
