"""``jit(fn, check=True)``: compiled values and gradients compared with eager mode on every call;
a disagreement names the output (or input gradient) and the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.jit import JitCheckError, jit
from jitgrad.ops.registry import OPS, POINTWISE, apply, defop

pytest.importorskip("numba")

@pytest.fixture(scope="module")
def bad():
    """Ops whose kernel template disagrees with their NumPy impl: a stand-in for a compiler
    bug. (Removed from the registry afterwards: the registry-wide tests must not see them.)"""
    twice = defop("test_check_twice", lambda x: 2 * x, kind=POINTWISE, template="3.0 * {0}")
    ops = {
        "fwd": defop("test_check_bad_fwd", np.exp, kind=POINTWISE, template="exp({0}) * 1.01",
                     save_output=True, vjp=(lambda g, ans, x: g * ans,)),
        "square": defop("test_check_square", np.square, kind=POINTWISE, template="{0} * {0}",
                        save=(0,), vjp=(lambda g, ans, x: g * apply(twice, x),)),
        "twice": twice,
    }
    yield ops
    for op in ops.values():
        del OPS[op.name]


def test_a_correct_function_passes_and_keeps_its_graph():
    w = jitgrad.randn(4, 3, dtype=jitgrad.float64, requires_grad=True)
    x = jitgrad.randn(5, 4, dtype=jitgrad.float64)
    f = jit(lambda w, x: ((x @ w).tanh() * 2).sum(), check=True)
    out = f(w, x)
    out.backward()  # the check's own gradient pass retained the graph
    xe = w.detach().clone().requires_grad_()
    ((x @ xe).tanh() * 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), xe.grad.numpy(), rtol=1e-12)


def test_a_wrong_forward_kernel_is_named(bad):
    f = jit(lambda x: apply(bad["fwd"], x * 2).sum(), backend="numba", check=True)
    with pytest.raises(JitCheckError, match=r"output 0 .*first kernel.*k0 \(ops mul, "
                                            r"test_check_bad_fwd"):
        f(jitgrad.randn(6, dtype=jitgrad.float64))


def test_a_wrong_backward_kernel_is_named(bad):
    x = jitgrad.randn(6, dtype=jitgrad.float64, requires_grad=True)
    f = jit(lambda x: apply(bad["square"], x).sum(), backend="numba", check=True)
    with pytest.raises(JitCheckError, match=r"gradient of argument 0 .*test_check_twice"):
        f(x)


def test_without_check_the_same_bug_goes_unnoticed(bad):
    # (what check=True is for: the compiled result is silently different)
    x = jitgrad.randn(6, dtype=jitgrad.float64)
    out = jit(lambda x: apply(bad["fwd"], x).sum(), backend="numba")(x)
    assert not np.isclose(out.item(), x.exp().sum().item())


def test_random_functions_warn_instead():
    f = jit(lambda x: x * jitgrad.rand(3), check=True)
    with pytest.warns(UserWarning, match="draws random numbers"):
        f(jitgrad.ones(3))
