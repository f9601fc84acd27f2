"""The jit call path: the lean path for positional tensors keeps every guarantee of the general
one (guards, outputs that never alias inputs, version checks), ``jit(jit(f))``, shapes as
kernel arguments, ``cache_info`` and the bounded cache."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad import jit

F64 = jitgrad.float64
SCALE = 2.0


def test_jit_of_jit_inlines_the_inner_function():
    def f(x):
        return (x.tanh() * SCALE).sum()

    inner = jit(f)
    outer = jit(inner)
    assert outer.py_func is f
    x = jitgrad.randn(4, dtype=F64, requires_grad=True)
    out = outer(x)
    out.backward()
    np.testing.assert_allclose(out.item(), float(np.tanh(x.detach().numpy()).sum() * 2))
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(x.detach().numpy()) ** 2))
    assert inner.cache_info().misses == 0 and outer.cache_info().misses == 1
    # the outer one guards what the inner function reads
    global SCALE
    SCALE = 3.0
    try:
        np.testing.assert_allclose(outer(x).item(), float(np.tanh(x.detach().numpy()).sum() * 3))
        assert outer.cache_info().misses == 2
    finally:
        SCALE = 2.0


def test_jit_of_jit_keeps_the_inner_static_argnums():
    def f(x, n):
        return x * int(n.item())

    outer = jit(jit(f, static_argnums=1))
    assert outer.static_argnums == (1,)
    np.testing.assert_allclose(outer(jitgrad.ones(2), jitgrad.tensor(3)).numpy(), [3.0, 3.0])


def test_lean_path_retraces_when_a_global_or_closure_value_changes():
    scale = [1.0]

    def make(k):
        return jit(lambda x: x * k + SCALE)

    g = make(2.0)
    x = jitgrad.ones(3)
    np.testing.assert_allclose(g(x).numpy(), [4.0] * 3)
    global SCALE
    SCALE = 5.0
    try:
        np.testing.assert_allclose(g(x).numpy(), [7.0] * 3)
        assert g.cache_info().misses == 2
    finally:
        SCALE = 2.0
    w = jitgrad.ones(3)
    h = jit(lambda x: x * w * scale[0])
    np.testing.assert_allclose(h(x).numpy(), [1.0] * 3)
    scale[0] = 4.0  # a closure's value
    np.testing.assert_allclose(h(x).numpy(), [4.0] * 3)
    with jitgrad.no_grad():
        w.mul_(2)  # captured tensor updated in place: seen, no retrace
    np.testing.assert_allclose(h(x).numpy(), [8.0] * 3)
    assert h.cache_info().misses == 2
    w = jitgrad.full((3,), 10.0)  # rebound closure variable
    np.testing.assert_allclose(h(x).numpy(), [40.0] * 3)
    assert h.cache_info().misses == 3


@pytest.mark.parametrize("backend", ["numba", "interpreter"])
def test_lean_path_outputs_never_alias_inputs(backend):
    x = jitgrad.arange(6, dtype=F64)
    for fn in (lambda x: x, lambda x: x.view(2, 3), lambda x: x[1:],
               lambda x: (x, x), lambda x: (x[:3], x.reshape(6) * 1),
               lambda x: (x * 2, x * 2), lambda x: ((x * 2).view(2, 3), x * 2)):
        f = jit(fn, backend=backend)
        for _ in range(6):  # the first calls, then the lean path (and its runner)
            out = f(x)
            outs = out if isinstance(out, tuple) else (out,)
            for o in outs:
                assert o is not x
                assert not np.may_share_memory(o.numpy(), x.numpy())
            if len(outs) == 2:
                assert not np.may_share_memory(outs[0].numpy(), outs[1].numpy())
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))


def _lean_entries(f):
    return [e.lean for e in f._cache.values()]


def test_lean_runner_skips_alias_checks_only_for_fresh_kernel_outputs():
    x = jitgrad.arange(6, dtype=F64)
    fresh = jit(lambda x: ((x * 2).sum(), {"y": x + 1}))
    for _ in range(6):
        s, d = fresh(x)
    assert _lean_entries(fresh) != [None] and d["y"].numpy()[0] == 1.0 and s.item() == 30.0
    for fn in (lambda x: x, lambda x: x[1:] * 1, lambda x: (x * 2, x * 2),
               lambda x: (x * 2).view(2, 3)):
        f = jit(fn)
        for _ in range(6):
            f(x)
        assert _lean_entries(f) == [None]  # an input, a view or one array twice: checked


def test_lean_path_backward_checks_versions_of_saved_inputs():
    f = jit(lambda x: (x * x).sum())
    x = jitgrad.randn(3, dtype=F64, requires_grad=True)
    for _ in range(6):
        out = f(x)
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 12 * x.detach().numpy())
    assert _lean_entries(f) != [None]  # x itself is the residual: checked statically
    out = f(x)
    with jitgrad.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    y = jitgrad.randn(3, dtype=F64)
    g = jit(lambda w, y: (w[1:] * y[1:]).sum())
    w = jitgrad.randn(3, dtype=F64, requires_grad=True)
    for _ in range(5):
        g(w, y)
    out = g(w, y)
    with jitgrad.no_grad():
        y.add_(1)  # y is saved by the backward (a view of it is a residual)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_backward_of_a_jit_call_matches_value_and_grad():
    def rosen(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    f = jit(rosen)
    vg = jit(jitgrad.func.value_and_grad(rosen))
    x = jitgrad.tensor([-1.2, 1.0, 0.3], dtype=F64, requires_grad=True)
    for _ in range(3):
        (g,) = jitgrad.autograd.grad(f(x), [x])
        value, g2 = vg(x.detach())
    np.testing.assert_allclose(g.numpy(), g2.numpy(), rtol=1e-13)
    assert f.cache_info().misses == 1 and f.cache_info().hits == 2


def test_new_shape_retraces_but_reuses_kernels():
    pytest.importorskip("numba")
    from jitgrad.backends import kernel_cache, numba_cpu

    f = jit(lambda x: (x.tanh() * x).sum(), backend="numba")
    f(jitgrad.randn(5, dtype=F64, requires_grad=True)).backward()
    kernels, compiled = len(numba_cpu._DISPATCHERS), kernel_cache.STATE.compiled
    loaded = kernel_cache.STATE.loaded
    x = jitgrad.randn(7, dtype=F64, requires_grad=True)
    f(x).backward()
    info = f.cache_info()
    assert (info.misses, info.entries) == (2, 2)
    assert len(numba_cpu._DISPATCHERS) == kernels  # no new kernel source
    assert (kernel_cache.STATE.compiled, kernel_cache.STATE.loaded) == (compiled, loaded)
    np.testing.assert_allclose(x.grad.numpy(), np.tanh(x.detach().numpy()) + x.detach().numpy()
                               * (1 - np.tanh(x.detach().numpy()) ** 2), rtol=1e-12)
    assert info.trace_seconds > 0 and info.compile_seconds >= 0


def test_requires_grad_is_not_part_of_the_key_under_no_grad():
    f = jit(lambda x: x * 2)
    with jitgrad.no_grad():
        f(jitgrad.ones(2))
        out = f(jitgrad.ones(2, requires_grad=True))
    assert not out.requires_grad
    assert f.cache_info()[:3] == (1, 1, 1)
    f(jitgrad.ones(2, requires_grad=True))  # grad mode on: a new key
    assert f.cache_info().misses == 2


def test_cache_is_bounded_and_the_warning_names_the_changing_part(monkeypatch):
    monkeypatch.setenv("JITGRAD_CACHE_SIZE_LIMIT", "3")
    f = jit(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 7):
            f(jitgrad.ones(n))
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1
    assert "limit" in msgs[0] and "The key keeps changing: shapes: ((" in msgs[0]
    assert "-> ((4,),)" in msgs[0]
    assert f.cache_info().entries == 3
    np.testing.assert_allclose(f(jitgrad.ones(6)).numpy(), [2.0] * 6)
    assert f.cache_info().misses == 6  # the newest ones are kept
    f(jitgrad.ones(1))  # evicted: traced again
    assert f.cache_info().misses == 7 and f.cache_info().entries == 3
