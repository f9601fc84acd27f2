"""Speed and compile time of the Numba math helpers (jitgrad/backends/numba_math.py).

``python -m benchmarks.numba_math [--n N] [--repeat R] [--no-compile]`` times, for each helper
and dtype, a kernel loop ``out[i] = helper(x[i])`` (compiled with ``KERNEL_FASTMATH``) against
NumPy's ufunc (or the eager formula where NumPy has none) on N elements, and prints

- ``ms``: best-of-R time of the loop, and NumPy's;
- ``vs numpy``: loop time / NumPy time (below 1: the loop is faster);
- ``copy bw``: time of a plain copy of the same array / loop time, i.e. the fraction of the
  copy bandwidth the loop reaches (1.0: as fast as copying, memory-bound);
- ``Gelem/s``: elements per second.

Then, unless ``--no-compile``, the compile time of a loop using one helper, in fresh processes
with an empty Numba cache: ``cold`` (the helper itself is compiled too), ``warm`` (a second
kernel with the same helper in that process), ``cached`` (a new process that loads the helper
from the cache the first one wrote), next to a loop with no helper (``x[i] * 2 + 1``), Numba's
import time and the first kernel of a process (Numba's one-off start-up).
Numbers are measurements, never asserted; run on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent


def _numpy_refs():
    from jitgrad.ops._special import erf

    def sigmoid(x):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def gelu_tanh(x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    def gelu_none(x):
        return 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))

    return {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
            "tanh": np.tanh, "sigmoid": sigmoid, "erf": erf, "gelu_tanh": gelu_tanh,
            "gelu_none": gelu_none}


def _inputs(name: str, n: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    if name in ("log",):
        return rng.uniform(1e-3, 100, n).astype(dtype)
    if name == "log1p":
        return rng.uniform(-0.9, 100, n).astype(dtype)
    return rng.uniform(-8, 8, n).astype(dtype)


def _best(fn, repeat: int) -> float:
    fn()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _loop(helper):
    import numba

    from jitgrad.backends.numba_math import KERNEL_FASTMATH

    @numba.njit(fastmath=set(KERNEL_FASTMATH), error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = helper(x[i])

    return loop


def speed(n: int, repeat: int) -> list[dict]:
    """Times every helper loop, NumPy's version and a copy; returns one row per helper/dtype."""
    from jitgrad.backends import numba_math as nm
    from jitgrad.backends.asm_stats import loop_asm_stats

    refs = _numpy_refs()
    rows = []
    for dtype in (np.float32, np.float64):
        for name in nm.HELPERS:
            x = _inputs(name, n, dtype)
            out = np.empty_like(x)
            loop = _loop(getattr(nm, name))
            t_loop = _best(lambda loop=loop, x=x, out=out: loop(x, out), repeat)
            with np.errstate(all="ignore"):
                t_np = _best(lambda f=refs[name], x=x: f(x), max(3, repeat // 4))
            t_copy = _best(lambda x=x, out=out: np.copyto(out, x), repeat)
            rows.append({"helper": name, "dtype": np.dtype(dtype).name, "ms": t_loop * 1e3,
                         "numpy_ms": t_np * 1e3, "vs_numpy": t_loop / t_np,
                         "copy_bw": t_copy / t_loop, "gelem_s": n / t_loop / 1e9,
                         "widest_bits": loop_asm_stats(loop).widest})
    return rows


_PROBE = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import numba
t_import = time.perf_counter() - t0
from jitgrad.backends import numba_math as nm
name, dtype = sys.argv[1], np.dtype(sys.argv[2]).type
x = np.ones(16, dtype); out = np.empty_like(x)
flags = set(nm.KERNEL_FASTMATH)

def make(body):
    if body == "plain":
        @numba.njit(fastmath=flags, error_model="numpy")
        def loop(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * 2 + 1
    else:
        h = getattr(nm, body)
        @numba.njit(fastmath=flags, error_model="numpy")
        def loop(x, out):
            for i in range(x.shape[0]):
                out[i] = h(x[i]) + 1
    return loop

def timed(loop):
    t0 = time.perf_counter(); loop(x, out); return time.perf_counter() - t0

first_plain = timed(make("plain"))      # numba's one-off start-up lands here
plain = timed(make("plain"))
cold = timed(make(name))
warm = timed(make(name))
print(json.dumps({"import_numba_s": t_import, "first_plain_s": first_plain, "plain_s": plain,
                  "cold_s": cold, "warm_s": warm}))
"""


def compile_times(names, dtypes=("float32", "float64")) -> list[dict]:
    """Per helper and dtype: compile time of a loop using it, in a fresh process with an empty
    Numba cache directory (``cold``: the helper is compiled too; ``warm``: a second kernel in
    that process), then in another fresh process on the cache the first one left
    (``cached``: the helper is loaded from disk, the kernel compiled)."""
    rows = []
    for dtype in dtypes:
        for name in names:
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "NUMBA_CACHE_DIR": cache}
                first, second = (
                    json.loads(subprocess.run(
                        [sys.executable, "-c", _PROBE, name, dtype], cwd=_ROOT, env=env,
                        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
                    for _ in range(2))
            rows.append({"helper": name, "dtype": dtype, **first, "cached_s": second["cold_s"]})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args(argv)

    print(f"helper loops vs NumPy, n={args.n:.0e}, best of {args.repeat}")
    print(f"{'helper':10s} {'dtype':8s} {'ms':>8s} {'numpy ms':>9s} {'vs numpy':>9s} "
          f"{'copy bw':>8s} {'Gelem/s':>8s} {'simd':>5s}")
    for r in speed(args.n, args.repeat):
        print(f"{r['helper']:10s} {r['dtype']:8s} {r['ms']:8.3f} {r['numpy_ms']:9.3f} "
              f"{r['vs_numpy']:9.2f} {r['copy_bw']:8.2f} {r['gelem_s']:8.2f} "
              f"{r['widest_bits']:5d}")
    if not args.no_compile:
        from jitgrad.backends.numba_math import HELPERS

        print("\ncompile time of one kernel loop (fresh processes per row), seconds")
        print(f"{'helper':10s} {'dtype':8s} {'cold':>6s} {'warm':>6s} {'cached':>6s} "
              f"{'no-helper':>9s} {'numba import':>12s} {'first kernel':>12s}")
        for r in compile_times(HELPERS):
            print(f"{r['helper']:10s} {r['dtype']:8s} {r['cold_s']:6.3f} {r['warm_s']:6.3f} "
                  f"{r['cached_s']:6.3f} {r['plain_s']:9.3f} {r['import_numba_s']:12.3f} "
                  f"{r['first_plain_s']:12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
