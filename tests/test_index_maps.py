"""Index-map ops (transpose, permute, (un)squeeze, select, slice) move up through pointwise
ops to the inputs of kernels (``jit/passes/index_maps.py``): a chain with a transpose in the
middle is one kernel reading a strided view, with values and gradients equal to eager mode."""

from __future__ import annotations

import random

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import grad
from jitgrad.backends import numba_cpu
from jitgrad.jit import jit
from jitgrad.jit.passes.fuse import KERNEL_OP, kernel_bodies


def _fused(fn, *args):
    low = fn.lower(*args)
    return numba_cpu.lower(low.forward_graph)[0], numba_cpu.lower(low.backward_graph)[0]


def _check_against_eager(f, xs, rtol=1e-10):
    fn = jit(f, backend="numba")
    got = fn(*xs)
    want = f(*xs)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol)
    g_got = grad(got, xs)
    g_want = grad(want, xs)
    for a, b in zip(g_got, g_want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=1e-12)
    return fn


def test_a_transpose_between_pointwise_ops_leaves_one_kernel():
    def f(x, y):
        a = (x * 2 + 1) * x
        return (a.t() * y + 1).sum()

    x = jitgrad.randn(30, 40, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(40, 30, dtype=jitgrad.float64, requires_grad=True)
    fn = _check_against_eager(f, [x, y])
    fwd, _ = _fused(fn, x, y)
    assert sum(e.op is KERNEL_OP for e in fwd.eqns) == 1
    (t_eqn,) = [e for e in fwd.eqns if e.op.name == "t"]
    assert t_eqn.inputs[0] in fwd.invars  # the transpose is a view of the input


def test_a_transcendental_value_read_twice_is_not_computed_twice():
    def f(x, y):
        a = x.tanh()
        return (a.t() * y).sum() + a.sum()

    # 24 KiB: between numba_cpu's RECOMPUTE_SMALL_BYTES (below it a tiny value is recomputed,
    # cheaper than a saved array) and RECOMPUTE_MATH_BYTES (above it memory traffic dominates)
    x = jitgrad.randn(64, 48, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(48, 64, dtype=jitgrad.float64, requires_grad=True)
    fn = _check_against_eager(f, [x, y])
    fwd, _ = _fused(fn, x, y)
    tanhs = [q for body in kernel_bodies(fwd) for q in body.eqns if q.op.name == "tanh"]
    assert len(tanhs) == 1


def test_an_expand_read_by_a_transpose_stays_a_view():
    # the backward of sum(0) broadcasts the cotangent; the transposed copy of that broadcast
    # is read through strides instead of being written out by a kernel
    def f(x, y):
        return ((x * y.t()).sum(0) ** 2).sum()

    x = jitgrad.randn(7, 5, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.randn(5, 7, dtype=jitgrad.float64, requires_grad=True)
    fn = _check_against_eager(f, [x, y])
    _, bwd = _fused(fn, x, y)
    for body in kernel_bodies(bwd):
        for v in body.outvars:
            producer = {w: q for q in body.eqns for w in q.outputs}[v]
            assert not producer.op.broadcast, "a kernel writes out a broadcast array"


MOVES = ("t", "permute", "transpose", "select", "slice", "unsqueeze", "squeeze")


def _random_program(seed: int):
    rng = random.Random(seed)
    steps = []
    for _ in range(rng.randint(4, 9)):
        steps.append((rng.choice(MOVES + ("mul", "add", "square", "sin", "scale")),
                      rng.random()))

    def f(x, y):
        vals = [x, y, x * y]
        for op, r1 in steps:
            h = vals[-1]
            if op in ("mul", "add"):
                partners = [v for v in vals[:-1] if tuple(v.shape) == tuple(h.shape)]
                other = partners[int(r1 * len(partners))] if partners else h.sum(-1, keepdim=True)
                h = h * other if op == "mul" else h + other
            elif op == "square":
                h = h * h
            elif op == "sin":
                h = h.sin()
            elif op == "scale":
                h = h * 0.5 + 0.25
            elif h.ndim < 2 and op not in ("unsqueeze",):
                h = h.unsqueeze(0)
            elif op == "t":
                h = h.transpose(0, 1) if h.ndim > 2 else h.t()
            elif op == "permute":
                h = h.permute(*reversed(range(h.ndim)))
            elif op == "transpose":
                h = h.transpose(0, h.ndim - 1)
            elif op == "select":
                h = h[int(r1 * h.shape[0])]
            elif op == "slice":
                h = h[:, ::2] if h.shape[1] > 1 else h[1:]
            elif op == "unsqueeze":
                h = h.unsqueeze(int(r1 * (h.ndim + 1)))
            elif op == "squeeze":
                h = h.unsqueeze(0).squeeze(0)
            vals.append(h)
        loss = vals[-1].sum()
        for v in vals[3:-1]:
            loss = loss + 0.5 * (v * v).sum()
        return loss

    g = np.random.default_rng(seed)
    x = jitgrad.tensor(g.uniform(-1, 1, (3, 4, 5)), requires_grad=True)
    y = jitgrad.tensor(g.uniform(-1, 1, (3, 4, 5)), requires_grad=True)
    return f, [x, y]


@pytest.mark.parametrize("seed", range(10))
def test_random_chains_of_moves_and_pointwise_ops_match_eager(seed):
    f, xs = _random_program(seed)
    _check_against_eager(f, xs)


def test_a_transpose_read_only_by_mm_stays_a_view_of_the_kernel_result():
    # moved into the kernel, the transpose would make it iterate in the transposed order and
    # read its inputs strided; BLAS takes the transposed view of the natural result for free
    def f(x, w):
        h = (x * 2).tanh() + x
        return (h.t() @ w).sum()

    x = jitgrad.randn(64, 48, dtype=jitgrad.float64, requires_grad=True)
    w = jitgrad.randn(64, 32, dtype=jitgrad.float64, requires_grad=True)
    fn = _check_against_eager(f, [x, w])
    fwd, _ = _fused(fn, x, w)
    (k,) = [e for e in fwd.eqns if e.op is KERNEL_OP and e.outputs[0].shape == (64, 48)]
    (t_eqn,) = [e for e in fwd.eqns if e.op.name == "t"]
    assert t_eqn.inputs[0] in k.outputs
