"""Chains (``backends/numba_chain.py``): a long fused graph runs as one LLVM function calling
its kernels through pointers. Here every graph that qualifies runs as a chain
(``PROGRAM_MAX_OPS = 0``): values and gradients against the interpreter for reductions of every
kind, broadcasting, non-contiguous inputs, constants, reshapes between kernels and integer
dtypes; what does not qualify; and the kernels in the persistent cache."""

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

from jitgrad.backends import numba_chain, numba_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
D = jitgrad.float64


@pytest.fixture(autouse=True)
def chains_for_every_graph(monkeypatch):
    monkeypatch.setattr(numba_cpu, "PROGRAM_MAX_OPS", 0)


def _chain_of(fn, *args):
    low = jit(fn, backend="numba").lower(*args)
    fused, kernels = numba_cpu.lower(low.forward_graph)
    return numba_chain.plan(fused, kernels)


def _same(fn, *args, grad=True, rtol=1e-12):
    """``fn`` jitted on numba (as a chain) equals the interpreter, values and gradients."""
    assert _chain_of(fn, *args) is not None
    got = jit(fn, backend="numba")(*args)
    want = jit(fn, backend="interpreter")(*args)
    got, want = (r if isinstance(r, tuple) else (r,) for r in (got, want))
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol)
    if grad:
        leaves = [a for a in args if isinstance(a, jitgrad.Tensor) and a.requires_grad]
        gs = jitgrad.autograd.grad(sum(r.sum() for r in got), leaves)
        ws = jitgrad.autograd.grad(sum(r.sum() for r in want), leaves)
        for a, b in zip(gs, ws):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol)


def _x(*shape, dtype=D, seed=0, grad=True):
    g = jitgrad.Generator().manual_seed(seed)
    return jitgrad.randn(*shape, dtype=dtype, generator=g).requires_grad_(grad)


def test_reductions_full_partial_keepdim_and_mean():
    def f(x, y):
        z = jitgrad.tanh(x) * y + x
        return z.sum(), (z * z).mean(dim=0, keepdim=True), z.sum(dim=1), z.amax(dim=1)

    _same(f, _x(4, 5), _x(5, seed=1))


def test_float32_accumulates_in_float64_and_is_cast_back():
    def f(x):
        return (x * 3).mean(), (x.exp() - 1).sum(dim=0)

    _same(f, _x(64, 3, dtype=jitgrad.float32), rtol=1e-6)


def test_non_contiguous_and_broadcast_inputs():
    x = _x(6, 4)
    col = _x(6, 1, seed=2)

    def f(a, b):
        return (a.sigmoid() * b - a).sum(dim=0)

    _same(f, x.t(), _x(1, 6, seed=3))  # x.t() is a transposed view
    _same(lambda a, b: (a * b).exp(), x, col)


def test_reshape_between_kernels_and_a_captured_constant():
    w = jitgrad.tensor(np.linspace(-1, 1, 12), dtype=D)

    def f(x):
        h = (x * w).tanh().reshape(3, 4)
        return (h.sum(dim=1, keepdim=True) * h).sum()

    _same(f, _x(12))
    f_jit = jit(f, backend="numba")
    x = _x(12, grad=False)
    before = f_jit(x).item()
    with jitgrad.no_grad():
        w.mul_(2)  # the constant's data is read on every call
    after = f_jit(x).item()
    assert after != before
    np.testing.assert_allclose(after, f(x).item(), rtol=1e-12)


def test_integer_and_bool_values():
    def f(i, m):
        return (i * 3 + 1).sum(), (i > 0) & m, jitgrad.where(m, i, -i)

    i = jitgrad.tensor(np.arange(-5, 7).reshape(3, 4), dtype=jitgrad.int64)
    m = jitgrad.tensor(np.arange(12).reshape(3, 4) % 3 == 0)
    _same(f, i, m, grad=False)


def test_a_long_chain_value_and_gradient():
    def chain(x):
        h = x
        for i in range(300):
            h = h * h * 0.5 if i % 2 == 0 else jitgrad.tanh(h) * 1.01 + 0.1
        return h.sum()

    x = jitgrad.tensor(np.linspace(-1, 1, 16), dtype=D)
    numba_cpu.PROGRAM_MAX_OPS = 512  # (as by default: the long graph alone becomes a chain)
    vg = jit(jitgrad.func.value_and_grad(chain), backend="numba")
    value, grad = vg(x)
    ref_value, ref_grad = jitgrad.func.value_and_grad(chain)(x)
    np.testing.assert_allclose(value.item(), ref_value.item(), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), ref_grad.numpy(), rtol=1e-12)
    assert vg(x)[1] is not grad  # fresh outputs on every call
    y = x.detach().requires_grad_()
    chain_jit = jit(chain, backend="numba")
    chain_jit(y).backward()  # the forward and the backward graphs each a chain
    np.testing.assert_allclose(y.grad.numpy(), ref_grad.numpy(), rtol=1e-12)


def test_what_does_not_qualify():
    x, w = _x(4, 5), _x(5, 3, seed=1)
    assert _chain_of(lambda a, b: (a.tanh() @ b).exp(), x, w) is None  # matmul: opaque
    assert _chain_of(lambda a: a.exp()[1:3].t().sin(), x) is None  # a transposed view
    assert _chain_of(lambda a: a * 1, x) is not None


def test_outputs_that_are_inputs_repeated_or_reshaped():
    x = _x(4, 5)

    def f(a):
        b = a.exp()
        return a, b, b, b.reshape(20), (b * 2).reshape(2, 10)

    _same(f, x)
    out = jit(f, backend="numba")(x)
    assert not np.shares_memory(out[0].detach().numpy(), x.detach().numpy())


def test_the_workspace_reuses_dead_values():
    def f(x):
        for _ in range(40):
            x = jitgrad.tanh(x * 1.5).exp() * x
        return x

    x = _x(256, grad=False)
    low = jit(f, backend="numba").lower(x)
    fused, kernels = numba_cpu.lower(low.forward_graph)
    chain = numba_chain.plan(fused, kernels)
    assert len(kernels) >= 3
    in_workspace = [p for p in chain.place.values() if p[0] == "ws"]
    # kernels in a row, each reading only its predecessor's values: their blocks are reused
    assert len(set(in_workspace)) < len(in_workspace)
    assert chain.size < len(in_workspace) * x.numel() * 8
    _same(f, x, grad=False)


PROGRAM = """
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import jitgrad
    from jitgrad.backends import kernel_cache, numba_cpu
    numba_cpu.PROGRAM_MAX_OPS = 0
    f = jitgrad.jit(jitgrad.func.value_and_grad(lambda x: (x.tanh() * x).exp().mean()))
    value, grad = f(jitgrad.tensor([0.5, 1.5, -0.25], dtype=jitgrad.float64))
print(json.dumps({"value": value.item(), "grad": grad.tolist(),
                  "loaded": kernel_cache.STATE.loaded, "compiled": kernel_cache.STATE.compiled,
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, RuntimeWarning)]}))
"""


def _run(cache: Path) -> dict:
    env = dict(os.environ, JITGRAD_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_chain_kernels_and_a_broken_file_is_recompiled(tmp_path):
    first = _run(tmp_path)
    assert first["loaded"] == 0 and first["compiled"] >= 1 and first["warnings"] == []
    second = _run(tmp_path)
    assert second["compiled"] == 0 and second["loaded"] == first["compiled"]
    assert (second["value"], second["grad"]) == (first["value"], first["grad"])
    for index in (tmp_path / "kernels" / "__pycache__").glob("*.nbi"):
        index.write_bytes(index.read_bytes()[:20])  # a truncated Numba index
    third = _run(tmp_path)
    assert third["compiled"] == first["compiled"] and third["loaded"] == 0
    assert len(third["warnings"]) == first["compiled"]
    assert all("could not be loaded" in w for w in third["warnings"])
    assert (third["value"], third["grad"]) == (first["value"], first["grad"])
    fourth = _run(tmp_path)  # stored again
    assert fourth["compiled"] == 0 and fourth["warnings"] == []


def test_a_long_graph_gets_kernels_half_as_long_that_still_repeat(monkeypatch):
    fuse = sys.modules["jitgrad.jit.passes.fuse"]  # (the package's ``fuse`` is the pass)

    def chain(x):
        h = x
        for i in range(120):
            h = h * h * 0.5 if i % 2 == 0 else jitgrad.tanh(h) * 1.01 + 0.1
        return h.sum()

    x = jitgrad.linspace(-1, 1, 16, dtype=D)
    sizes = {}
    for long_graph in (10 ** 6, 100):  # (the 300-equation chain: short, then long)
        monkeypatch.setattr(fuse, "LONG_GRAPH", long_graph)
        low = jit(chain, backend="numba").lower(x)
        _, kernels = numba_cpu.lower(low.forward_graph)
        sizes[long_graph] = [k.ks.n_ops for k in kernels]
        assert len({k.ks.source for k in kernels[1:-1]}) == 1
        np.testing.assert_allclose(jit(chain, backend="numba")(x).item(), chain(x).item(),
                                   rtol=1e-12)
    assert max(sizes[10 ** 6]) <= fuse.MAX_KERNEL_OPS < max(sizes[10 ** 6]) * 2
    assert max(sizes[100]) <= fuse.MAX_KERNEL_OPS // 2 and len(sizes[100]) > len(sizes[10 ** 6])
