"""What ``jitgrad.profiler`` costs: nothing while no profiler records, and how much while one does.

Three loops, each timed in rounds (the figure is the median round): ``a + b`` on two 4-element
float32 tensors (the eager dispatcher's hot path), ``(x * y).sum().backward()`` on 16-element
tensors that require grad (an op, a reduction and the backward engine), and a call of a small
jit function. Each loop runs without a profiler and inside ``jitgrad.profiler.profile()``.

The eager path has no hook at all (a profiler swaps the ops' implementations while it
records); the backward engine reads one slot per ``backward()`` and a jit function one per
call. To compare against a checkout without the profiler, run this file with that checkout
first on ``sys.path`` (``--root``); the "idle" figures are the ones to compare.

Run ``python benchmarks/profiler_overhead.py [--quick] [--root DIR]`` from the repository root.
A benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable


def _rounds(fn: Callable[[], None], n: int, rounds: int) -> float:
    """Median over ``rounds`` of the nanoseconds per call of ``fn`` (``n`` calls a round)."""
    per_call = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        per_call.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(per_call)


def run(quick: bool = False) -> dict[str, float]:
    """Nanoseconds per call of each loop, idle and profiled."""
    import jitgrad

    a, b = jitgrad.ones(4), jitgrad.ones(4)
    x = jitgrad.randn(16, requires_grad=True)
    y = jitgrad.randn(16, requires_grad=True)

    @jitgrad.jit
    def f(u, v):
        return u * v + u

    loops = {
        "a + b": (lambda: a + b, 100_000),
        "mul-sum-backward": (lambda: (x * y).sum().backward(), 5_000),
        "jit call": (lambda: f(a, b), 20_000),
    }
    if quick:
        loops = {k: (fn, n // 10) for k, (fn, n) in loops.items()}
    rounds = 3 if quick else 7
    out: dict[str, float] = {}
    has_profiler = _importable("jitgrad.profiler")
    for name, (fn, n) in loops.items():
        for _ in range(min(n, 1000)):  # warm up (the jit compiles, rule programs are built)
            fn()
        out[f"{name} idle"] = _rounds(fn, n, rounds)
        if has_profiler:
            from jitgrad.profiler import profile

            with profile():
                out[f"{name} profiled"] = _rounds(fn, max(n // 10, 1), rounds)
    return out


def _importable(name: str) -> bool:
    import importlib

    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    parser.add_argument("--root", default=".", help="the checkout whose jitgrad to time")
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    import jitgrad

    print(f"jitgrad from {jitgrad.__file__}")
    for name, ns in run(args.quick).items():
        print(f"{name:28s} {ns / 1e3:9.3f} us/call")


if __name__ == "__main__":
    main()
