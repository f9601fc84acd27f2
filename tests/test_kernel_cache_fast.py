"""The kernel cache's fast warm path (``kernel_cache.load_overload`` / ``load_cfunc``): a second
process loads every kernel's machine code from Numba's cache files without refreshing Numba's
target context, and computes exactly what the first process computed -- launched kernels,
whole programs, parallel kernels and chained C callbacks -- and a cache file it cannot load
falls back to Numba's own path with a warning. Each case runs fresh Python processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parent.parent

# Launched kernels (the first calls), whole programs (calls after PROGRAM_AFTER_CALLS), a
# parallel kernel (JITGRAD_PARALLEL_MIN=1 makes every kernel parallel when two threads run) and
# a chain of C callbacks (PROGRAM_MAX_OPS = 0). Prints values, gradients, counters, warnings.
PROGRAM = """
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import numpy as np
    import jitgrad
    from jitgrad.backends import kernel_cache, numba_cpu

    if sys.argv[1] == "chain":
        numba_cpu.PROGRAM_MAX_OPS = 0

    def loss(x, w):
        h = (x * w).tanh()
        return (h * h + (1 - x).exp()).sum() / x.shape[0]

    f = jitgrad.jit(jitgrad.func.value_and_grad(loss, argnums=(0, 1)))
    rng = np.random.default_rng(0)
    x = jitgrad.tensor(rng.standard_normal(257))
    w = jitgrad.tensor(rng.standard_normal(257))
    out = []
    for _ in range(5):
        value, (gx, gw) = f(x, w)
        out.append([value.item(), gx.tolist(), gw.tolist()])
    g = jitgrad.jit(lambda t: (t * t).mean(0).sqrt())
    out.append(g(x.reshape(1, 257)).tolist())
print(json.dumps({"out": out, "loaded": kernel_cache.STATE.loaded,
                  "fast": kernel_cache.STATE.fast, "compiled": kernel_cache.STATE.compiled,
                  "warnings": [str(w.message) for w in caught
                               if issubclass(w.category, RuntimeWarning)]}))
"""


def _run(cache: Path, mode: str, parallel: bool = False) -> dict:
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("NUMBA_CACHE_DIR", None)
    if parallel:
        env["JITGRAD_PARALLEL_MIN"] = "1"
        env["NUMBA_NUM_THREADS"] = "2"
    proc = subprocess.run([sys.executable, "-c", PROGRAM, mode], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode,parallel", [("programs", False), ("programs", True),
                                           ("chain", False)])
def test_second_process_loads_every_kernel_fast(tmp_path, mode, parallel):
    first = _run(tmp_path, mode, parallel)
    assert first["loaded"] == first["fast"] == 0 and first["compiled"] >= 3
    assert first["warnings"] == []
    second = _run(tmp_path, mode, parallel)
    assert second["compiled"] == 0
    assert second["fast"] == second["loaded"] == first["compiled"]
    assert second["out"] == first["out"]  # the same machine code: the same bits
    assert second["warnings"] == []
    from jitgrad.backends import kernel_cache

    stats = kernel_cache.info(tmp_path)
    assert stats["fast"] == first["compiled"] and stats["loaded"] == first["compiled"]


@pytest.mark.parametrize("mode", ["programs", "chain"])
def test_unloadable_data_file_falls_back_with_a_warning(tmp_path, mode):
    first = _run(tmp_path, mode)
    data = sorted((tmp_path / "kernels" / "__pycache__").glob("*.nbc"))
    assert len(data) == first["compiled"]
    data[0].write_bytes(data[0].read_bytes()[:40])  # truncated machine code, index intact
    second = _run(tmp_path, mode)
    assert second["out"] == first["out"]
    assert second["compiled"] == 1 and second["fast"] == first["compiled"] - 1
    assert len(second["warnings"]) == 1 and "could not be loaded" in second["warnings"][0]
    third = _run(tmp_path, mode)  # compiled again and stored: every kernel fast again
    assert third["compiled"] == 0 and third["fast"] == first["compiled"]
    assert third["out"] == first["out"] and third["warnings"] == []


EAGER_LOOP_KERNEL = """
import sys
import numpy as np
import jitgrad
import jitgrad.nn.functional as F

x = jitgrad.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), requires_grad=True)
loss = F.cross_entropy(x, jitgrad.tensor([0, 2, 1, 2]))  # the nll_loss loop kernel (nn_kernels)
loss.backward()
print(repr(loss.item()), "numba.np.arraymath" in sys.modules)
"""


def test_an_eager_loop_kernel_loads_without_numbas_refresh(tmp_path):
    # Numba's refresh imports numba.np.arraymath (and SciPy): a warm process never gets there
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    runs = [subprocess.run([sys.executable, "-c", EAGER_LOOP_KERNEL], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    (cold_loss, cold_refreshed), (warm_loss, warm_refreshed) = \
        (run.stdout.split() for run in runs)
    assert cold_refreshed == "True" and warm_refreshed == "False"
    assert cold_loss == warm_loss
