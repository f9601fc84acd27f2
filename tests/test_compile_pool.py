"""Kernels compiled in a helper process (``backends.compile_pool``): the argument types it is
told to compile for are the ones the kernels get; a cold first call with the helper gives the
same bits as without it; a helper that dies or cannot start leaves every kernel to the calling
process. The test session runs without a helper (conftest); these cases start their own, in
fresh processes with empty caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

import jitgrad  # noqa: E402
import jitgrad.nn.functional as F  # noqa: E402
from jitgrad.backends import compile_pool, numba_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _mlp(x, labels, w1, b1, w2, b2):
    return F.cross_entropy(jitgrad.relu(x @ w1 + b1) @ w2 + b2, labels)


def _mlp_args(rng):
    return [jitgrad.tensor(rng.standard_normal((16, 20)).astype(np.float32)),
            jitgrad.tensor(rng.integers(0, 8, 16)),
            *(jitgrad.tensor(rng.standard_normal(s).astype(np.float32) * 0.3)
              for s in ((20, 32), (32,), (32, 8), (8,)))]


def _attention(q, k, v, w):
    scores = (q @ k.transpose(1, 2)) / 4.0
    out = jitgrad.softmax(scores, dim=-1) @ v
    return (jitgrad.tanh(out.reshape(-1, 16) @ w.t()) ** 2).mean()


def _attention_args(rng):
    return [jitgrad.tensor(rng.standard_normal(s).astype(np.float32))
            for s in ((2, 6, 16), (2, 6, 16), (2, 6, 16), (12, 16))]


def _layer_norm_gelu(x, gamma, beta, w):
    h = F.layer_norm(x, (24,), gamma, beta)
    return (F.gelu(h, approximate="tanh") @ w).pow(2).mean()


def _layer_norm_args(rng):
    return [jitgrad.tensor(rng.standard_normal(s).astype(np.float64))
            for s in ((10, 24), (24,), (24,), (24, 24))]


def _transposed(a, b, c):
    return (jitgrad.tanh((a @ b).t()) * c).sum()


def _transposed_args(rng):
    return [jitgrad.tensor(rng.standard_normal(s)) for s in ((6, 5), (5, 7), (7, 6))]


def _run_graph(graph, arrays: list) -> list:
    return numba_cpu.compile(graph)(list(arrays))


@pytest.mark.parametrize("fn, make_args", [(_mlp, _mlp_args), (_attention, _attention_args),
                                           (_layer_norm_gelu, _layer_norm_args),
                                           (_transposed, _transposed_args)],
                         ids=["mlp", "attention", "layer_norm_gelu", "transposed"])
def test_predicted_argument_types_are_the_ones_the_kernels_get(fn, make_args):
    args = make_args(np.random.default_rng(0))
    wrt = [i for i, a in enumerate(args) if a.dtype.is_floating_point]
    for i in wrt:
        args[i].requires_grad_(True)
    low = jitgrad.jit(fn, backend="numba").lower(*args)
    fwd, bwd = low.forward_graph, low.backward_graph
    outs = _run_graph(fwd, low._arrays)
    residuals = outs[len(outs) - fwd.n_saved:]
    tangents = [np.ones(v.shape, v.dtype.np) for v in bwd.invars[fwd.n_saved:]]
    checked = 0
    for graph, arrays in ((fwd, low._arrays), (bwd, list(residuals) + tangents)):
        fused, kernels = numba_cpu.lower(graph)
        predicted = compile_pool.predicted_types(fused, kernels)
        _run_graph(graph, arrays)
        assert len(predicted) == len(kernels)
        for k, sig in zip(kernels, predicted):
            assert sig is not None, k.described
            assert sig in [tuple(s) for s in k.dispatcher.signatures], (k.described, sig)
            checked += 1
    assert checked >= 2


# A cold first call of the MLP's value and gradient in a fresh process with an empty cache;
# MODE says what the helper does. Prints the results' bytes and the counts as JSON.
PROGRAM = """
import json, os, sys, time
import numpy as np
import jitgrad
import jitgrad.nn.functional as F
from jitgrad.backends import compile_pool, kernel_cache

MODE = sys.argv[1]
CHAIN = MODE.startswith("chain-")  # elementwise graphs run as chains of C callbacks
if CHAIN:
    from jitgrad.backends import numba_chain, numba_cpu
    numba_cpu.PROGRAM_MAX_OPS = 0
    MODE = MODE[len("chain-"):]
if MODE == "retire":
    compile_pool.IDLE_S = 1.0
if MODE == "no-start":
    sys.executable = os.path.join(os.sep, "nonexistent", "python")
seen = []
real_handed = compile_pool.handed

def handed(key):
    if not seen:  # this process's first kernel: let the helper get ahead of it
        seen.append(key)
        start = time.monotonic()
        if MODE == "helper-first":
            while compile_pool.compiled_by_helper() < 1 and time.monotonic() - start < 120:
                time.sleep(0.01)
        elif MODE == "killed":  # once the helper has claimed a kernel, it dies
            helper = compile_pool._helper
            while not os.listdir(helper.claims) and time.monotonic() - start < 120:
                time.sleep(0.01)
            helper.process.kill()
            helper.process.wait()
    return real_handed(key)

compile_pool.handed = handed

def mlp(x, labels, w1, b1, w2, b2):
    h = jitgrad.relu(x @ w1 + b1)
    h = jitgrad.tanh(h @ w2 + b2)
    return F.cross_entropy(h * 2.0, labels)

def elementwise(x, y):
    a = jitgrad.tanh(x) * y
    b = (x * a.sum(0)).exp().sum(1, keepdim=True)
    return ((b * x + y).amax(1) ** 2).sum() + (a * a).mean()

rng = np.random.default_rng(0)
if CHAIN:
    fn, wrt = elementwise, (0, 1)
    args = [jitgrad.tensor(rng.standard_normal((16, 8)).astype(np.float32) * 0.3)
            for _ in range(2)]
else:
    fn, wrt = mlp, (0, 2, 3, 4, 5)
    args = [jitgrad.tensor(rng.standard_normal((16, 20)).astype(np.float32)),
            jitgrad.tensor(rng.integers(0, 8, 16)),
            *(jitgrad.tensor(rng.standard_normal(s).astype(np.float32) * 0.3)
              for s in ((20, 32), (32,), (32, 8), (8,)))]
f = jitgrad.jit(jitgrad.func.value_and_grad(fn, argnums=wrt))
value, grads = f(*args)
ref_value, ref_grads = jitgrad.func.value_and_grad(fn, argnums=wrt)(*args)
close = bool(np.allclose(value.numpy(), ref_value.numpy(), rtol=1e-5)) and all(
    np.allclose(g.numpy(), r.numpy(), rtol=1e-4, atol=1e-6) for g, r in zip(grads, ref_grads))
retired = restarted = False
if MODE == "retire":  # the idle helper exits; the next cold graph starts another
    first = compile_pool._helper.process
    start = time.monotonic()
    while compile_pool._helper is not None and time.monotonic() - start < 60:
        time.sleep(0.05)
    retired = compile_pool._helper is None and first.poll() == 0 and not compile_pool._failed

    def other(x, labels, w1, b1, w2, b2):
        h = jitgrad.sigmoid(x @ w1 + b1)
        return F.cross_entropy(jitgrad.exp(-(h @ w2 + b2) ** 2), labels)

    jitgrad.jit(jitgrad.func.value_and_grad(other, argnums=(0, 2, 3, 4, 5)))(*args)
    restarted = compile_pool._helper is not None and compile_pool._helper.process is not first
print(json.dumps({
    "retired": retired, "restarted": restarted,
    "chained": len(numba_chain._CFUNCS) if CHAIN else 0,
    "bits": [value.numpy().tobytes().hex()] + [g.numpy().tobytes().hex() for g in grads],
    "close": close, "helper": compile_pool.compiled_by_helper(),
    "started": compile_pool._helper is not None,
    "compiled": kernel_cache.STATE.compiled, "fast": kernel_cache.STATE.fast}))
"""


def _cold_run(mode: str, tmp_path: Path, workers: str | None = None) -> dict:
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = str(tmp_path / "cache")
    env["JITGRAD_COMPILE_WORKERS"] = workers or ("0" if mode.endswith("off") else "1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], env=env, cwd=str(ROOT),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def without_helper(tmp_path_factory) -> dict:
    r = _cold_run("off", tmp_path_factory.mktemp("pool"))
    assert r["close"] and not r["started"] and r["helper"] == 0
    assert r["compiled"] >= compile_pool.MIN_COLD_KERNELS
    return r


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the helper needs two CPUs")
def test_kernels_the_helper_compiled_are_loaded_and_give_the_same_bits(without_helper,
                                                                       tmp_path):
    r = _cold_run("helper-first", tmp_path)
    assert r["started"] and r["helper"] >= 1
    assert r["fast"] >= r["helper"]  # this process loaded them from the cache
    assert r["compiled"] == without_helper["compiled"]  # no kernel was compiled twice
    assert r["bits"] == without_helper["bits"] and r["close"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the helper needs two CPUs")
def test_a_helper_that_dies_with_a_kernel_leaves_it_to_the_caller(without_helper, tmp_path):
    r = _cold_run("killed", tmp_path)
    assert r["started"] and r["helper"] == 0
    assert r["bits"] == without_helper["bits"] and r["close"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the helper needs two CPUs")
def test_an_idle_helper_exits_and_the_next_cold_graph_starts_another(without_helper, tmp_path):
    r = _cold_run("retire", tmp_path)
    assert r["retired"] and r["restarted"]
    assert r["bits"] == without_helper["bits"] and r["close"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the helper needs two CPUs")
def test_a_chains_c_callbacks_the_helper_compiled_are_loaded(tmp_path):
    off = _cold_run("chain-off", tmp_path / "off")
    r = _cold_run("chain-helper-first", tmp_path / "on")
    assert off["chained"] >= compile_pool.MIN_COLD_KERNELS and not off["started"]
    assert r["started"] and r["helper"] >= 1 and r["fast"] >= r["helper"]
    assert r["compiled"] == off["compiled"]
    assert r["bits"] == off["bits"] and r["close"] and off["close"]


def test_a_warm_cache_starts_no_helper(tmp_path):
    cold = _cold_run("off", tmp_path)
    warm = _cold_run("plain", tmp_path, workers="1")  # (the same cache directory)
    assert not warm["started"] and warm["compiled"] == 0 and warm["fast"] >= cold["compiled"]
    assert warm["bits"] == cold["bits"]


def test_a_helper_that_cannot_start_leaves_every_kernel_to_the_caller(without_helper,
                                                                      tmp_path):
    r = _cold_run("no-start", tmp_path)
    assert not r["started"] and r["helper"] == 0
    assert r["compiled"] == without_helper["compiled"]
    assert r["bits"] == without_helper["bits"] and r["close"]


def test_messages_and_claims(tmp_path):
    import io

    stream = io.BytesIO()
    compile_pool.send(stream, ("k1", True))
    compile_pool.send(stream, {"a": [1, 2]})
    stream.seek(0)
    assert compile_pool.receive(stream) == ("k1", True)
    assert compile_pool.receive(stream) == {"a": [1, 2]}
    assert compile_pool.receive(stream) is None
    assert compile_pool.claim(str(tmp_path), "k1") is True
    assert compile_pool.claim(str(tmp_path), "k1") is False
    assert compile_pool.claim(str(tmp_path), "k2") is True
    assert compile_pool.claim(str(tmp_path / "gone"), "k1") is True  # (the caller compiles)
