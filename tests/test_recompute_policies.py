"""The recompute pass's two policies (``jit/passes/recompute.py``): the min-cut never saves more
bytes than the greedy rule, beats it where the greedy's one-value-at-a-time moves get stuck, and
both give the same gradients as eager mode on seeded random pointwise programs."""

from __future__ import annotations

import random

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import grad
from jitgrad.backends import interpreter, numba_cpu
from jitgrad.jit import jit
import importlib

rc = importlib.import_module("jitgrad.jit.passes.recompute")

BINARY = ("mul", "add", "sub")
UNARY = ("neg", "square", "tanh", "exp", "sin")


def _random_program(seed: int):
    rng = random.Random(seed)
    n_in = rng.randint(1, 3)
    steps = []
    for k in range(rng.randint(3, 12)):
        avail = n_in + k
        if rng.random() < 0.6:
            steps.append((rng.choice(BINARY), rng.randrange(avail), rng.randrange(avail)))
        else:
            steps.append((rng.choice(UNARY), rng.randrange(avail), None))
    n_terms = rng.randint(1, 3)

    def f(*xs):
        vals = list(xs)
        for op, a, b in steps:
            u = vals[a]
            if op == "mul":
                vals.append(u * vals[b])
            elif op == "add":
                vals.append(u + vals[b])
            elif op == "sub":
                vals.append(u - vals[b])
            elif op == "neg":
                vals.append(-u)
            elif op == "square":
                vals.append(u * u)
            else:
                vals.append(getattr(u, op)())
        loss = vals[-1].sum()
        for v in vals[-1 - n_terms:-1]:
            loss = loss + (v * vals[-1]).sum()
        return loss

    g = np.random.default_rng(seed)
    xs = [jitgrad.tensor(g.uniform(-1, 1, 8), dtype=jitgrad.float64, requires_grad=True)
          for _ in range(n_in)]
    return f, xs


def _saved_bytes(fn, xs) -> int:
    g = fn.lower(*xs).forward_graph
    saved = g.outvars[len(g.outvars) - g.n_saved:]
    return sum(int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize for v in saved)


@pytest.fixture
def recomputing_interpreter(monkeypatch):
    # the interpreter runs the graphs (no Numba compile per program), recomputing what the
    # Numba backend would recompute
    monkeypatch.setattr(interpreter, "recomputable", numba_cpu.recomputable, raising=False)
    yield
    rc.POLICY = "mincut"


@pytest.mark.parametrize("block", range(4))
def test_mincut_saves_no_more_than_greedy_and_both_give_eager_gradients(block,
                                                                        recomputing_interpreter):
    for seed in range(block * 15, block * 15 + 15):
        f, xs = _random_program(seed)
        expected = grad(f(*xs), xs, allow_unused=True, materialize_grads=True)
        nbytes = {}
        for policy in rc.POLICIES:
            rc.POLICY = policy
            fn = jit(f, backend="interpreter")
            nbytes[policy] = _saved_bytes(fn, xs)
            got = grad(fn(*xs), xs, allow_unused=True, materialize_grads=True)
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12,
                                           err_msg=f"seed {seed}, policy {policy}")
        assert nbytes["mincut"] <= nbytes["greedy"], (seed, nbytes)


def test_mincut_saves_two_inputs_where_greedy_keeps_three_sums(recomputing_interpreter):
    # sin's VJP reads its input: x+y, x-y and 2x+y are saved. Replacing any one of them by x
    # and y adds a value, so the greedy rule keeps all three; the cut saves x and y and
    # recomputes the three sums in the backward.
    def f(x, y):
        return ((x + y).sin() + (x - y).sin() + (x * 2 + y).sin()).sum()

    x = jitgrad.randn(64, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(64, dtype=jitgrad.float64, requires_grad=True)
    nbytes = {}
    for policy in rc.POLICIES:
        rc.POLICY = policy
        fn = jit(f, backend="interpreter")
        nbytes[policy] = _saved_bytes(fn, [x, y])
        gx, gy = grad(fn(x, y), [x, y])
        ex, ey = grad(f(x, y), [x, y])
        np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gy.numpy(), ey.numpy(), rtol=1e-12)
    assert nbytes["mincut"] == 2 * 64 * 8
    assert nbytes["greedy"] > nbytes["mincut"]


def test_a_recomputed_value_may_read_a_constant_made_inside_the_function(
        recomputing_interpreter):
    # ``1 - c`` is cheap: the backward recomputes it and must read the forward's constant c
    def f(x):
        c = jitgrad.tensor([[0.25], [0.75]], dtype=jitgrad.float64)
        return (x * (1 - c)).tanh().sum()

    x = jitgrad.randn(2, 3, dtype=jitgrad.float64, requires_grad=True)
    (expected,) = grad(f(x), [x])
    for policy in rc.POLICIES:
        rc.POLICY = policy
        (got,) = grad(jit(f, backend="interpreter")(x), [x])
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_unknown_policy_is_an_error():
    with pytest.raises(ValueError, match="recompute policy must be one of"):
        rc.recompute(None, None, lambda e: True, policy="best")
